# The C interface of the align CPU backend (align_kernel.h); align.pyx's run() is its one entry.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

include "cpu_common_c.pxi"

cdef extern from "align_kernel.h":
    ctypedef struct align_params:
        int mode
        int32_t matrix[25]
        int32_t gap_first, gap_ext, zdrop
        int overhang
        int32_t match, mismatch, gap_open, gap_extend
        int cigar
        int64_t max_traceback_cells
        int64_t diag_min_length
    ctypedef struct align_pairs:
        const uint8_t *q_bases
        const uint8_t *t_bases
        const int64_t *q_offsets
        const int64_t *t_offsets
        int64_t n_pairs, q_total, t_total
    ctypedef struct align_outputs:
        int64_t *score
        int64_t *query_begin
        int64_t *query_end
        int64_t *target_begin
        int64_t *target_end
        uint32_t *ops
        int64_t ops_capacity
        int64_t *ops_count
    int align_run(const align_pairs *pairs, const align_params *p, align_outputs *out, int threads, int isa,
                  warpdp_bad_argument *bad) nogil
