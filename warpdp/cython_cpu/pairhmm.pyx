# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU backend of the Pair-HMM forward algorithm (C kernels with AVX-512 / AVX2 / scalar variants).

Inputs are the packed arrays of :class:`warpdp.plugin.pairhmm.PairHmmBatches`, already validated
by the plugin layer; this module only hands their buffers to C with the GIL released.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t

cnp.import_array()

include "cpu_common.pxi"

cdef extern from "pairhmm_kernel.h":
    ctypedef struct pairhmm_batches:
        const uint8_t *read_bases
        const uint8_t *read_quals
        const uint8_t *read_ins
        const uint8_t *read_del
        const uint8_t *read_gcp
        const int64_t *read_offsets
        const uint8_t *hap_bases
        const int64_t *hap_offsets
        const int64_t *batch_reads
        const int64_t *batch_haps
        int64_t n_batches
    int pairhmm_forward_batches(const pairhmm_batches *batches, double *out, int use_double,
                                int threads, int isa) nogil

def forward(batches, double[::1] out not None, *, bint use_double=False, int threads=0,
            str isa=None) -> None:
    """Fill ``out`` with the log10 likelihood of every pair of ``batches`` (GKL numerics)."""
    cdef int code = isa_code(isa)
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
    cdef int status
    with nogil:
        status = pairhmm_forward_batches(&c_batches, &out[0] if out.shape[0] > 0 else NULL,
                                         use_double, threads, code)
    if status == -1:
        raise MemoryError("warpdp: out of memory while scoring Pair-HMM batches")
    if status == -2:
        raise ValueError(f"warpdp: the {ISA_NAMES[code]!r} CPU variant cannot run on this CPU "
                         f"(available: {', '.join(available_isas())})")


cdef extern from "pairhmm_tables.h":
    float pairhmm_ph2pr_f[128]
    double pairhmm_ph2pr_d[128]
    float pairhmm_mm_f[8256]
    double pairhmm_mm_d[8256]
    float pairhmm_initial_f
    float pairhmm_log10_initial_f
    double pairhmm_initial_d
    double pairhmm_log10_initial_d
    void pairhmm_tables_init()


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
