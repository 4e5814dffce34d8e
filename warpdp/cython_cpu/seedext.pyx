# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU backend of seed extension with BWA's ksw_extend2 semantics (C kernels: scalar, and
inter-task AVX2 / AVX-512 with one pair per lane, int16 where scores fit, int32 otherwise).

Inputs are the packed arrays of :class:`warpdp.plugin.seedext.SeedExtPairs` and the already
validated parameters; this module hands their buffers to C with the GIL released, and the C
driver checks offsets, h0 and the parameters again before it reads through them.
"""
import numpy as np
cimport numpy as cnp

cnp.import_array()

include "cpu_common.pxi"

# The drivers' field codes (SEEDEXT_BAD_* in seedext_kernel.h), in order.
SEEDEXT_FIELDS = ("threads", "a", "b", "o_del", "e_del", "o_ins", "e_ins", "w", "end_bonus", "zdrop",
                  "query_offsets", "target_offsets", "h0")

# Scores (h0 + a * min(query length, target length)) up to this run in 16-bit lanes.
INT16_LIMIT = SEEDEXT_INT16_LIMIT


cdef class _Packed:
    """Keeps the buffers of one call alive and their C view (seedext_batch, seedext_params)."""
    cdef const uint8_t[::1] query, target
    cdef const int64_t[::1] query_offsets, target_offsets
    cdef const int32_t[::1] h0
    cdef seedext_batch batch
    cdef seedext_params params

    def __init__(self, pairs, params):
        self.query = pairs.query
        self.target = pairs.target
        self.query_offsets = pairs.query_offsets
        self.target_offsets = pairs.target_offsets
        self.h0 = pairs.h0
        n = self.h0.shape[0]
        if self.query_offsets.shape[0] != n + 1 or self.target_offsets.shape[0] != n + 1:
            raise ValueError(f"query_offsets and target_offsets ({self.query_offsets.shape[0]}, "
                             f"{self.target_offsets.shape[0]} entries) do not match h0 ({n} pairs)")
        self.batch.query = bytes_ptr(self.query)
        self.batch.target = bytes_ptr(self.target)
        self.batch.query_offsets = &self.query_offsets[0]
        self.batch.target_offsets = &self.target_offsets[0]
        self.batch.h0 = &self.h0[0] if self.h0.shape[0] > 0 else NULL
        self.batch.n_pairs = n
        self.batch.query_total = self.query.shape[0]
        self.batch.target_total = self.target.shape[0]
        # Through _int32, so a value beyond int32 is a ValueError naming it (the driver checks the ranges).
        self.params.a, self.params.b = _int32(params.a, "a"), _int32(params.b, "b")
        self.params.o_del, self.params.e_del = _int32(params.o_del, "o_del"), _int32(params.e_del, "e_del")
        self.params.o_ins, self.params.e_ins = _int32(params.o_ins, "o_ins"), _int32(params.e_ins, "e_ins")
        self.params.w = _int32(params.w, "w")
        self.params.end_bonus, self.params.zdrop = _int32(params.end_bonus, "end_bonus"), _int32(params.zdrop, "zdrop")


cdef int32_t _int32(object value, str name) except? -1:
    value = int(value)
    if not -2**31 <= value < 2**31:
        raise ValueError(f"{name} must fit int32, not {value}")
    return value


cdef seedext_result* _rows(int32_t[:, ::1] out, int64_t n_pairs) except? NULL:
    if out.shape[0] != n_pairs or out.shape[1] != 6:
        raise ValueError(f"out must have shape ({n_pairs}, 6), not ({out.shape[0]}, {out.shape[1]})")
    return <seedext_result *> &out[0, 0] if n_pairs > 0 else NULL


def run(pairs, params, out, *, threads=0, str isa=None) -> None:
    """Fill ``out`` (a SeedExtResults: its n_pairs x 6 int32 table of score, qle, tle, gtle,
    gscore, max_off) for every pair of ``pairs`` (SeedExtPairs) with ``params``
    (SeedExtParams), both validated by the plugin layer; the C driver checks offsets, h0 and the
    parameters again (ValueError naming the field).
    """
    cdef int code = isa_code(isa)
    cdef int n_threads = threads_arg(threads)
    cdef _Packed packed = _Packed(pairs, params)
    cdef seedext_result *rows = _rows(out.table, packed.batch.n_pairs)
    cdef int status
    cdef warpdp_bad_argument bad
    with nogil:
        status = seedext_extend_batch(&packed.batch, &packed.params, rows, n_threads, code, &bad)
    if status == WARPDP_BAD_ARGUMENT:
        raise bad_argument_error(SEEDEXT_FIELDS, "pair", bad)
    if status == -1:
        raise MemoryError("warpdp: out of memory during seed extension")
    if status == -2:
        raise ValueError(f"warpdp: the {ISA_NAMES[code]!r} CPU variant cannot run on this CPU "
                         f"(available: {', '.join(available_isas())})")


def count_cells(pairs, params, *, threads=0) -> np.ndarray:
    """The DP cells ksw_extend2 computes for each pair (int64), i.e. the work GCUPS counts."""
    cdef int n_threads = threads_arg(threads)
    cdef _Packed packed = _Packed(pairs, params)
    cdef cnp.ndarray out_array = np.empty((packed.batch.n_pairs, 6), dtype=np.int32)
    cdef cnp.ndarray cells_array = np.zeros(packed.batch.n_pairs, dtype=np.int64)
    cdef seedext_result *rows = _rows(out_array, packed.batch.n_pairs)
    cdef int64_t[::1] cells = cells_array
    cdef int64_t *cells_ptr = &cells[0] if packed.batch.n_pairs > 0 else NULL
    cdef int status
    cdef warpdp_bad_argument bad
    with nogil:
        status = seedext_count_cells(&packed.batch, &packed.params, rows, cells_ptr, n_threads, &bad)
    if status == WARPDP_BAD_ARGUMENT:
        raise bad_argument_error(SEEDEXT_FIELDS, "pair", bad)
    if status != 0:
        raise MemoryError("warpdp: out of memory during seed extension")
    return cells_array
