# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU backend of the align family (C kernels: scalar, AVX2 and AVX-512 variants).

Inputs are the packed arrays of :class:`warpdp.plugin.align.AlignPairs` and the checked
:class:`warpdp.plugin.align.AlignParams`; this module hands their buffers to C with the GIL released,
and the C driver checks offsets, lengths and parameters again before reading through them.
"""
import numpy as np

include "cpu_common.pxi"

# align_run's field codes (ALIGN_BAD_* in align_kernel.h), in order.
ALIGN_FIELDS = ("threads", "mode", "matrix", "gap_open", "gap_extend", "overhang", "match", "mismatch",
                "query_offsets", "target_offsets", "length", "max_traceback_cells", "out")
ITEMS = ("", "", "entry", "", "", "", "", "", "pair", "pair", "pair", "pair", "")
MODE_CODES = {"global": 0, "semiglobal": 1, "local": 2, "extension": 3, "gatk": 4}
OVERHANG_CODES = {"SOFTCLIP": 0, "INDEL": 1, "LEADING_INDEL": 2, "IGNORE": 3}


# Test hook: > 0, every generic-mode pair whose longer sequence has at least this many bases takes
# the SIMD variants' intra-pair kernel, whatever the output; 0: the C driver's choice.
_diag_min_length = 0


def set_diag_min_length(length: int) -> int:
    """Set the test hook above (tests reach the intra-pair kernel with short pairs; 0: the driver's
    choice); returns the previous setting."""
    global _diag_min_length
    if not isinstance(length, int) or not 0 <= length <= 2**31:
        raise ValueError(f"length must be an int in 0..2**31, got {length!r}")
    previous, _diag_min_length = _diag_min_length, length
    return previous


def family_isas() -> list[str]:
    """The variants of this family's kernel this CPU runs, slowest first."""
    return available_isas()


def run(pairs, params, out, *, threads=0, str isa=None):
    """Fill ``out``'s five int64 columns for every pair (AlignPairs) with ``params`` (AlignParams).
    Returns ``(ops, counts)``: the CIGAR ops of every pair (uint32, pair after pair) and their
    number per pair (int64) when ``params.cigar``, else None."""
    cdef int code = isa_code(isa)
    cdef int n_threads = threads_arg(threads)
    cdef const uint8_t[::1] q_bases = pairs.query_bases
    cdef const uint8_t[::1] t_bases = pairs.target_bases
    cdef const int64_t[::1] q_offsets = pairs.query_offsets
    cdef const int64_t[::1] t_offsets = pairs.target_offsets
    cdef int64_t n = q_offsets.shape[0] - 1
    if n < 0 or t_offsets.shape[0] != n + 1:
        raise ValueError(f"query_offsets ({q_offsets.shape[0]}) and target_offsets ({t_offsets.shape[0]}) "
                         "must both hold n_pairs + 1 entries")
    cdef int64_t[::1] score = out.score
    cdef int64_t[::1] qb = out.query_begin
    cdef int64_t[::1] qe = out.query_end
    cdef int64_t[::1] tb = out.target_begin
    cdef int64_t[::1] te = out.target_end
    for name, view in (("score", score), ("query_begin", qb), ("query_end", qe), ("target_begin", tb),
                       ("target_end", te)):
        if view.shape[0] != n:
            raise ValueError(f"out.{name} has {view.shape[0]} entries but there are {n} pairs")
    cdef align_pairs c_pairs
    c_pairs.q_bases = bytes_ptr(q_bases)
    c_pairs.t_bases = bytes_ptr(t_bases)
    c_pairs.q_offsets = &q_offsets[0]
    c_pairs.t_offsets = &t_offsets[0]
    c_pairs.n_pairs = n
    c_pairs.q_total = q_bases.shape[0]
    c_pairs.t_total = t_bases.shape[0]
    cdef align_params c_params
    c_params.mode = MODE_CODES[params.mode]
    matrix = params.score_matrix()
    for k in range(25):
        c_params.matrix[k] = matrix[k // 5][k % 5]
    first, ext = params.gap_costs()
    c_params.gap_first = first
    c_params.gap_ext = ext
    c_params.zdrop = -1 if params.zdrop is None else params.zdrop
    c_params.overhang = OVERHANG_CODES.get(params.overhang, 0)
    c_params.match = params.match
    c_params.mismatch = params.mismatch
    c_params.gap_open = params.gap_open  # GATK mode: GATK's signs, added
    c_params.gap_extend = params.gap_extend
    c_params.cigar = 1 if params.cigar else 0
    c_params.max_traceback_cells = params.max_traceback_cells
    c_params.diag_min_length = _diag_min_length
    cdef uint32_t[::1] ops
    cdef int64_t[::1] counts
    cdef align_outputs c_out
    c_out.score = int64_ptr(score)
    c_out.query_begin = int64_ptr(qb)
    c_out.query_end = int64_ptr(qe)
    c_out.target_begin = int64_ptr(tb)
    c_out.target_end = int64_ptr(te)
    c_out.ops = NULL
    c_out.ops_capacity = 0
    c_out.ops_count = NULL
    if params.cigar:
        ops = np.zeros(q_bases.shape[0] + t_bases.shape[0] + 2 * n + 1, dtype=np.uint32)
        counts = np.zeros(n + 1, dtype=np.int64)
        c_out.ops = &ops[0]
        c_out.ops_capacity = ops.shape[0]
        c_out.ops_count = &counts[0]
    cdef int status
    cdef warpdp_bad_argument bad
    with nogil:
        status = align_run(&c_pairs, &c_params, &c_out, n_threads, code, &bad)
    if status == WARPDP_BAD_ARGUMENT:
        raise bad_argument_error(ALIGN_FIELDS, ITEMS, bad)
    if status == -1:
        raise MemoryError("warpdp: out of memory during alignment")
    if status == -2:
        raise ValueError(f"warpdp: the {ISA_NAMES[code]!r} CPU variant cannot run on this CPU "
                         f"(available: {', '.join(available_isas())})")
    if status != 0:
        raise RuntimeError(f"warpdp: align_run failed ({status})")
    if not params.cigar:
        return None
    counts_np = np.asarray(counts)[:n]
    ops_np = np.asarray(ops)
    # pair i's ops start at q_offsets[i] + t_offsets[i] + 2*i; keep the first counts[i] of each
    starts = np.asarray(q_offsets)[:n] + np.asarray(t_offsets)[:n] + 2 * np.arange(n, dtype=np.int64)
    total = int(counts_np.sum())
    if total == 0:
        return np.zeros(0, dtype=np.uint32), counts_np.copy()
    index = np.repeat(starts - (np.cumsum(counts_np) - counts_np), counts_np) + np.arange(total)
    return ops_np[index].copy(), counts_np.copy()
