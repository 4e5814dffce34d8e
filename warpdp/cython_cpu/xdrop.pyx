# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU backend of gapped X-drop seed extension (C kernels with AVX-512 / AVX2 / scalar variants).

Inputs are the packed arrays of :class:`warpdp.plugin.xdrop.XdropPairs`, already validated by the
plugin layer (seeds inside their sequences, bases ACGTN, scores checked); this module hands
their buffers to C with the GIL released, and the C driver checks offsets, seeds, k and scores
again before it reads through them (an error, never a wild read, for a caller that skipped them).
"""
include "cpu_common.pxi"

# xdrop_run's field codes (XDROP_BAD_* in xdrop_kernel.h), in order.
XDROP_FIELDS = ("threads", "k", "match", "mismatch", "gap", "x", "h_offsets", "v_offsets", "h_pos", "v_pos")

cdef int64_t* _out_ptr(int64_t[::1] view):
    return &view[0] if view.shape[0] > 0 else NULL


def run(pairs, params, out, *, threads=0, str isa=None) -> int:
    """Fill ``out`` (an XdropResults: six int64 columns of n_pairs) for every pair of ``pairs``
    (XdropPairs) with ``params`` (XdropParams), both validated by the plugin layer; the C driver
    checks offsets, seeds, k, scores and threads again (ValueError naming the field).

    Returns -1, or the first pair with a byte other than A, C, G, T, N (either case), whose
    outputs are then left as they were.
    """
    cdef int code = isa_code(isa)
    cdef int n_threads = threads_arg(threads)
    cdef int64_t[::1] score = out.score
    cdef int64_t[::1] begin_h = out.begin_h
    cdef int64_t[::1] end_h = out.end_h
    cdef int64_t[::1] begin_v = out.begin_v
    cdef int64_t[::1] end_v = out.end_v
    cdef int64_t[::1] cells = out.cells
    cdef int64_t k = params.k
    cdef const uint8_t[::1] h_bases = pairs.h_bases
    cdef const uint8_t[::1] v_bases = pairs.v_bases
    cdef const int64_t[::1] h_offsets = pairs.h_offsets
    cdef const int64_t[::1] v_offsets = pairs.v_offsets
    cdef const int64_t[::1] h_pos = pairs.h_pos
    cdef const int64_t[::1] v_pos = pairs.v_pos
    cdef int64_t n = h_pos.shape[0]
    if v_pos.shape[0] != n or h_offsets.shape[0] != n + 1 or v_offsets.shape[0] != n + 1:
        raise ValueError(f"h_offsets, v_offsets ({h_offsets.shape[0]}, {v_offsets.shape[0]} entries) and v_pos "
                         f"({v_pos.shape[0]}) do not match h_pos ({n} pairs)")
    for name, view in (("score", score), ("begin_h", begin_h), ("end_h", end_h), ("begin_v", begin_v),
                       ("end_v", end_v), ("cells", cells)):
        if view.shape[0] != n:
            raise ValueError(f"{name} has {view.shape[0]} entries but there are {n} pairs")
    cdef xdrop_pairs c_pairs
    c_pairs.h_bases = bytes_ptr(h_bases)
    c_pairs.v_bases = bytes_ptr(v_bases)
    c_pairs.h_offsets = &h_offsets[0]
    c_pairs.v_offsets = &v_offsets[0]
    c_pairs.h_pos = &h_pos[0] if n > 0 else NULL
    c_pairs.v_pos = &v_pos[0] if n > 0 else NULL
    c_pairs.n_pairs = n
    c_pairs.h_total = h_bases.shape[0]
    c_pairs.v_total = v_bases.shape[0]
    cdef xdrop_params c_params
    c_params.match = params.match
    c_params.mismatch = params.mismatch
    c_params.gap = params.gap
    c_params.x = params.x
    c_params.best_mode = params.report == "best"
    cdef xdrop_outputs c_out
    c_out.score = _out_ptr(score)
    c_out.begin_h = _out_ptr(begin_h)
    c_out.end_h = _out_ptr(end_h)
    c_out.begin_v = _out_ptr(begin_v)
    c_out.end_v = _out_ptr(end_v)
    c_out.cells = _out_ptr(cells)
    cdef int status
    cdef int64_t bad_pair = -1
    cdef warpdp_bad_argument bad
    with nogil:
        status = xdrop_run(&c_pairs, k, &c_params, &c_out, n_threads, code, &bad_pair, &bad)
    if status == WARPDP_BAD_ARGUMENT:
        raise bad_argument_error(XDROP_FIELDS, "pair", bad)
    if status == -1:
        raise MemoryError("warpdp: out of memory during X-drop extension")
    if status == -2:
        raise ValueError(f"warpdp: the {ISA_NAMES[code]!r} CPU variant cannot run on this CPU "
                         f"(available: {', '.join(available_isas())})")
    return bad_pair
