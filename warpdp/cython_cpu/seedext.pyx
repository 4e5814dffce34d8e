# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU backend of seed extension with BWA's ksw_extend2 semantics (C kernels: scalar, and
inter-task AVX2 / AVX-512 with one pair per lane, int16 where scores fit, int32 otherwise).

Inputs are the packed arrays of :class:`warpdp.plugin.seedext.SeedExtPairs` and the already
validated parameters; this module only hands their buffers to C with the GIL released.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t

cnp.import_array()

cdef extern from "seedext_kernel.h":
    ctypedef struct seedext_params:
        int32_t a, b, o_del, e_del, o_ins, e_ins, w, end_bonus, zdrop
    ctypedef struct seedext_result:
        int32_t score, qle, tle, gtle, gscore, max_off
    ctypedef struct seedext_batch:
        const uint8_t *query
        const uint8_t *target
        const int64_t *query_offsets
        const int64_t *target_offsets
        const int32_t *h0
        int64_t n_pairs
    int seedext_extend_batch(const seedext_batch *batch, const seedext_params *p, seedext_result *out,
                             int threads, int isa) nogil
    int seedext_count_cells(const seedext_batch *batch, const seedext_params *p, seedext_result *out,
                            int64_t *cells, int threads) nogil
    int SEEDEXT_INT16_LIMIT

include "cpu_common.pxi"

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
        self.batch.query = bytes_ptr(self.query)
        self.batch.target = bytes_ptr(self.target)
        self.batch.query_offsets = &self.query_offsets[0]
        self.batch.target_offsets = &self.target_offsets[0]
        self.batch.h0 = &self.h0[0] if self.h0.shape[0] > 0 else NULL
        self.batch.n_pairs = self.h0.shape[0]
        self.params.a, self.params.b = params.a, params.b
        self.params.o_del, self.params.e_del = params.o_del, params.e_del
        self.params.o_ins, self.params.e_ins = params.o_ins, params.e_ins
        self.params.w, self.params.end_bonus, self.params.zdrop = params.w, params.end_bonus, params.zdrop


cdef seedext_result* _rows(int32_t[:, ::1] out, int64_t n_pairs) except? NULL:
    if out.shape[0] != n_pairs or out.shape[1] != 6:
        raise ValueError(f"out must have shape ({n_pairs}, 6), not ({out.shape[0]}, {out.shape[1]})")
    return <seedext_result *> &out[0, 0] if n_pairs > 0 else NULL


def extend(pairs, params, int32_t[:, ::1] out not None, *, int threads=0, str isa=None) -> None:
    """Fill ``out`` (n_pairs x 6: score, qle, tle, gtle, gscore, max_off) for every pair.

    ``pairs`` has the packed arrays of SeedExtPairs; ``params`` the attributes a, b, o_del,
    e_del, o_ins, e_ins, w, end_bonus, zdrop (already validated).
    """
    cdef int code = isa_code(isa)
    cdef _Packed packed = _Packed(pairs, params)
    cdef seedext_result *rows = _rows(out, packed.batch.n_pairs)
    cdef int status
    with nogil:
        status = seedext_extend_batch(&packed.batch, &packed.params, rows, threads, code)
    if status == -1:
        raise MemoryError("warpdp: out of memory during seed extension")
    if status == -2:
        raise ValueError(f"warpdp: the {ISA_NAMES[code]!r} CPU variant cannot run on this CPU "
                         f"(available: {', '.join(available_isas())})")


def count_cells(pairs, params, *, int threads=0) -> np.ndarray:
    """The DP cells ksw_extend2 computes for each pair (int64), i.e. the work GCUPS counts."""
    cdef _Packed packed = _Packed(pairs, params)
    cdef cnp.ndarray out_array = np.empty((packed.batch.n_pairs, 6), dtype=np.int32)
    cdef cnp.ndarray cells_array = np.zeros(packed.batch.n_pairs, dtype=np.int64)
    cdef seedext_result *rows = _rows(out_array, packed.batch.n_pairs)
    cdef int64_t[::1] cells = cells_array
    cdef int64_t *cells_ptr = &cells[0] if packed.batch.n_pairs > 0 else NULL
    cdef int status
    with nogil:
        status = seedext_count_cells(&packed.batch, &packed.params, rows, cells_ptr, threads)
    if status != 0:
        raise MemoryError("warpdp: out of memory during seed extension")
    return cells_array
