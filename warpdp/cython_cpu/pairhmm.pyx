# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU backend of the Pair-HMM forward algorithm (C kernels with AVX-512 / AVX2 / scalar variants).

Inputs are the packed arrays of :class:`warpdp.plugin.pairhmm.PairHmmBatches`, already validated
by the plugin layer; this module hands their buffers to C with the GIL released, and the C
driver checks the offsets again before it reads through them.
"""
import numpy as np
cimport numpy as cnp

cnp.import_array()

include "cpu_common.pxi"

# pairhmm_forward_batches' field codes (PAIRHMM_BAD_* in pairhmm_kernel.h), in order (the last:
# out's length against the batches' pairs).
PAIRHMM_FIELDS = ("threads", "read_offsets", "hap_offsets", "batch_reads", "batch_haps",
                  "the output array's length")
_PAIRHMM_ITEMS = ("", "read", "haplotype", "batch", "batch", "")


def run(batches, params, double[::1] out not None, *, threads=0, str isa=None) -> None:
    """Fill ``out`` (float64, one per pair) with the log10 likelihood of every pair of
    ``batches`` (PairHmmBatches) with ``params`` (PairHmmParams), GKL's numerics.

    ``batches`` were validated by the plugin layer; the C driver checks the offsets and out's
    length again before it reads through them (ValueError naming the field)."""
    cdef int code = isa_code(isa)
    cdef int n_threads = threads_arg(threads)
    cdef bint use_double = params.double
    cdef const uint8_t[::1] read_bases = batches.read_bases
    cdef const uint8_t[::1] read_quals = batches.read_quals
    cdef const uint8_t[::1] read_ins = batches.read_ins
    cdef const uint8_t[::1] read_del = batches.read_del
    cdef const uint8_t[::1] read_gcp = batches.read_gcp
    cdef const int64_t[::1] read_offsets = batches.read_offsets
    cdef const uint8_t[::1] hap_bases = batches.hap_bases
    cdef const int64_t[::1] hap_offsets = batches.hap_offsets
    cdef const int64_t[::1] batch_reads = batches.batch_reads
    cdef const int64_t[::1] batch_haps = batches.batch_haps
    for name, view in (("read_quals", read_quals), ("read_ins", read_ins), ("read_del", read_del),
                       ("read_gcp", read_gcp)):
        if view.shape[0] != read_bases.shape[0]:
            raise ValueError(f"{name} has {view.shape[0]} values but read_bases has {read_bases.shape[0]}")
    for name, view in (("read_offsets", read_offsets), ("hap_offsets", hap_offsets), ("batch_reads", batch_reads),
                       ("batch_haps", batch_haps)):
        if view.shape[0] < 1:
            raise ValueError(f"{name} must have at least one entry (0)")
    if batch_haps.shape[0] != batch_reads.shape[0]:
        raise ValueError(f"batch_haps has {batch_haps.shape[0]} entries but batch_reads has {batch_reads.shape[0]}")
    cdef pairhmm_batches c_batches
    c_batches.read_bases = bytes_ptr(read_bases)
    c_batches.read_quals = bytes_ptr(read_quals)
    c_batches.read_ins = bytes_ptr(read_ins)
    c_batches.read_del = bytes_ptr(read_del)
    c_batches.read_gcp = bytes_ptr(read_gcp)
    c_batches.read_offsets = &read_offsets[0]
    c_batches.hap_bases = bytes_ptr(hap_bases)
    c_batches.hap_offsets = &hap_offsets[0]
    c_batches.batch_reads = &batch_reads[0]
    c_batches.batch_haps = &batch_haps[0]
    c_batches.n_batches = batch_reads.shape[0] - 1
    c_batches.n_read_bases = read_bases.shape[0]
    c_batches.n_hap_bases = hap_bases.shape[0]
    c_batches.n_reads = read_offsets.shape[0] - 1
    c_batches.n_haps = hap_offsets.shape[0] - 1
    cdef int status
    cdef warpdp_bad_argument bad
    with nogil:
        status = pairhmm_forward_batches(&c_batches, &out[0] if out.shape[0] > 0 else NULL, out.shape[0],
                                         use_double, n_threads, code, &bad)
    if status == WARPDP_BAD_ARGUMENT:
        raise bad_argument_error(PAIRHMM_FIELDS, _PAIRHMM_ITEMS, bad)
    if status == -1:
        raise MemoryError("warpdp: out of memory while scoring Pair-HMM batches")
    if status == -2:
        raise ValueError(f"warpdp: the {ISA_NAMES[code]!r} CPU variant cannot run on this CPU "
                         f"(available: {', '.join(available_isas())})")


def gkl_tables() -> dict:
    """GKL's probability tables and constants as numpy arrays, for other backends to share.

    ``ph2pr_*[q]`` = 10^(-q/10); ``mm_*[hi*(hi+1)//2 + lo]`` = match-to-match probability for
    the larger (hi) and smaller (lo) of the insertion and deletion quals (both & 127);
    ``initial_*`` = the scaling constant K; ``log10_initial_*`` = log10(K) as GKL computes it.
    """
    pairhmm_tables_init()
    return {
        "ph2pr_f": np.array(<float[:128]> pairhmm_ph2pr_f, dtype=np.float32),
        "ph2pr_d": np.array(<double[:128]> pairhmm_ph2pr_d, dtype=np.float64),
        "mm_f": np.array(<float[:8256]> pairhmm_mm_f, dtype=np.float32),
        "mm_d": np.array(<double[:8256]> pairhmm_mm_d, dtype=np.float64),
        "initial_f": np.float32(pairhmm_initial_f),
        "log10_initial_f": np.float32(pairhmm_log10_initial_f),
        "initial_d": np.float64(pairhmm_initial_d),
        "log10_initial_d": np.float64(pairhmm_log10_initial_d),
    }
