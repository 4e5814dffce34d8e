# The C interface of the edit-distance CPU backend (edit_kernel.h); edit.pyx's run() is its one entry.
from libc.stdint cimport int64_t, uint8_t, uint32_t

include "cpu_common_c.pxi"

cdef extern from "edit_kernel.h":
    ctypedef struct edit_params:
        int mode, task, method
        int64_t k
        int window, overlap
    ctypedef struct edit_pairs:
        const uint8_t *query_bases
        const uint8_t *target_bases
        const int64_t *query_offsets
        const int64_t *target_offsets
        int64_t n_pairs, query_total, target_total
    ctypedef struct edit_outputs:
        int64_t *distance
        int64_t *t_begin
        int64_t *t_end
        int64_t *n_locations
        int64_t *loc_begin
        int64_t *loc_end
        int64_t *n_cigar
        uint32_t *cigar_ops
    int edit_run(const edit_pairs *pairs, const edit_params *p, edit_outputs *out, int threads, int isa,
                 int64_t *bad_pair, warpdp_bad_argument *bad) nogil
