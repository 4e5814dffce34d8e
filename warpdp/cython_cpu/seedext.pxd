# The C interface of the seed-extension CPU backend (seedext_kernel.h); seedext.pyx's run() is its
# one entry (count_cells() counts the work, for GCUPS figures).
from libc.stdint cimport int32_t, int64_t, uint8_t

include "cpu_common_c.pxi"

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
        int64_t query_total, target_total
    int seedext_extend_batch(const seedext_batch *batch, const seedext_params *p, seedext_result *out,
                             int threads, int isa, warpdp_bad_argument *bad) nogil
    int seedext_count_cells(const seedext_batch *batch, const seedext_params *p, seedext_result *out,
                            int64_t *cells, int threads, warpdp_bad_argument *bad) nogil
    int SEEDEXT_INT16_LIMIT
