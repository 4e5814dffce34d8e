# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU backend of edit distance (exact bit-parallel and Scrooge's windowed GenASM; scalar, AVX2 and
AVX-512 variants, the SIMD ones with inter-pair lanes for short exact pairs).

Inputs are the packed arrays of :class:`warpdp.plugin.edit.EditPairs`, validated by the plugin
layer; the C driver checks offsets and every parameter again before it reads through them.
"""
import numpy as np

include "cpu_common.pxi"

# edit_run's field codes (EDIT_BAD_* in edit_kernel.h), in order.
EDIT_FIELDS = ("threads", "mode", "k", "task", "method", "window", "overlap", "query_offsets", "target_offsets")
MODES = ("nw", "shw", "hw")
TASKS = ("distance", "locations", "path")
METHODS = ("exact", "windowed")


def edit_isas() -> list[str]:
    """The variants this CPU can run, slowest first."""
    return available_isas()


def _compact(values, starts, counts):
    """Each pair's first counts[i] values from starts[i], concatenated, and their offsets."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    # No negative index here: this module is compiled with wraparound=False, which hands -1 to
    # the array as it is (numpy 2.5 then refuses it).
    total = offsets[len(counts)]
    index = np.repeat(starts - offsets[:len(counts)], counts) + np.arange(total, dtype=np.int64)
    return values[index], offsets


def run(pairs, params, out, *, threads=0, str isa=None):
    """Fill ``out.distance``, ``out.t_begin``, ``out.t_end`` (int64, one per pair) for ``pairs``
    (EditPairs) with ``params`` (EditParams). Returns (bad_pair, locations, cigar): bad_pair is
    -1 or the first pair the windowed method refused (a byte other than ACGT); locations is
    (begin, end, offsets) and cigar (ops, offsets), or None when the task does not ask for them.
    """
    cdef int code = isa_code(isa)
    cdef int n_threads = threads_arg(threads)
    cdef const uint8_t[::1] q_bases = pairs.query_bases
    cdef const uint8_t[::1] t_bases = pairs.target_bases
    cdef const int64_t[::1] q_offsets = pairs.query_offsets
    cdef const int64_t[::1] t_offsets = pairs.target_offsets
    cdef int64_t n = q_offsets.shape[0] - 1
    if n < 0 or t_offsets.shape[0] != n + 1:
        raise ValueError(f"query_offsets ({q_offsets.shape[0]}) and target_offsets ({t_offsets.shape[0]} "
                         "entries) must both hold n_pairs + 1 offsets")
    cdef int64_t[::1] distance = out.distance
    cdef int64_t[::1] t_begin = out.t_begin
    cdef int64_t[::1] t_end = out.t_end
    for name, view in (("distance", distance), ("t_begin", t_begin), ("t_end", t_end)):
        if view.shape[0] != n:
            raise ValueError(f"{name} has {view.shape[0]} entries but there are {n} pairs")
    cdef edit_params c_params
    c_params.mode = MODES.index(params.mode) if params.mode in MODES else -1
    c_params.task = TASKS.index(params.task) if params.task in TASKS else -1
    c_params.method = METHODS.index(params.method) if params.method in METHODS else -1
    c_params.k = params.k
    c_params.window = params.window
    c_params.overlap = params.overlap
    want_locations = params.task in ("locations", "path")
    want_cigar = params.task == "path"
    n_locations = np.zeros(n, dtype=np.int64)
    n_cigar = np.zeros(n, dtype=np.int64)
    loc_begin = np.empty(t_bases.shape[0] + n if want_locations else 0, dtype=np.int64)
    loc_end = np.empty_like(loc_begin)
    # The windowed traceback writes its ops whatever the task; only the path keeps them.
    cigar_room = q_bases.shape[0] + t_bases.shape[0] if (want_cigar or params.method == "windowed") else 0
    cigar_ops = np.empty(cigar_room, dtype=np.uint32)
    cdef int64_t[::1] n_loc_view = n_locations
    cdef int64_t[::1] n_cig_view = n_cigar
    cdef int64_t[::1] loc_begin_view = loc_begin
    cdef int64_t[::1] loc_end_view = loc_end
    cdef uint32_t[::1] ops_view = cigar_ops
    cdef edit_pairs c_pairs
    c_pairs.query_bases = bytes_ptr(q_bases)
    c_pairs.target_bases = bytes_ptr(t_bases)
    c_pairs.query_offsets = &q_offsets[0]
    c_pairs.target_offsets = &t_offsets[0]
    c_pairs.n_pairs = n
    c_pairs.query_total = q_bases.shape[0]
    c_pairs.target_total = t_bases.shape[0]
    cdef edit_outputs c_out
    c_out.distance = int64_ptr(distance)
    c_out.t_begin = int64_ptr(t_begin)
    c_out.t_end = int64_ptr(t_end)
    c_out.n_locations = int64_ptr(n_loc_view)
    c_out.n_cigar = int64_ptr(n_cig_view)
    c_out.loc_begin = int64_ptr(loc_begin_view) if want_locations else NULL
    c_out.loc_end = int64_ptr(loc_end_view) if want_locations else NULL
    c_out.cigar_ops = &ops_view[0] if cigar_room > 0 else NULL
    cdef int status
    cdef int64_t bad_pair = -1
    cdef warpdp_bad_argument bad
    with nogil:
        status = edit_run(&c_pairs, &c_params, &c_out, n_threads, code, &bad_pair, &bad)
    if status == WARPDP_BAD_ARGUMENT:
        raise bad_argument_error(EDIT_FIELDS, "pair", bad)
    if status == -1:
        raise MemoryError("warpdp: out of memory during edit distance")
    if status == -2:
        raise ValueError(f"warpdp: the {ISA_NAMES[code]!r} CPU variant cannot run on this CPU "
                         f"(available: {', '.join(available_isas())})")
    locations = cigar = None
    if want_locations:
        starts = np.asarray(t_offsets[:n], dtype=np.int64) + np.arange(n, dtype=np.int64)
        begin, offsets = _compact(loc_begin, starts, n_locations)
        end, _ = _compact(loc_end, starts, n_locations)
        locations = (begin, end, offsets)
    if want_cigar:
        starts = np.asarray(q_offsets[:n], dtype=np.int64) + np.asarray(t_offsets[:n], dtype=np.int64)
        cigar = _compact(cigar_ops, starts, n_cigar)
    return bad_pair, locations, cigar
