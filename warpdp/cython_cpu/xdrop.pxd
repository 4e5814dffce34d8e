# The C interface of the X-drop CPU backend (xdrop_kernel.h); xdrop.pyx's run() is its one entry.
from libc.stdint cimport int64_t, uint8_t

include "cpu_common_c.pxi"

cdef extern from "xdrop_kernel.h":
    ctypedef struct xdrop_params:
        int64_t match, mismatch, gap, x
        int best_mode
    ctypedef struct xdrop_pairs:
        const uint8_t *h_bases
        const uint8_t *v_bases
        const int64_t *h_offsets
        const int64_t *v_offsets
        const int64_t *h_pos
        const int64_t *v_pos
        int64_t n_pairs
        int64_t h_total, v_total
    ctypedef struct xdrop_outputs:
        int64_t *score
        int64_t *begin_h
        int64_t *end_h
        int64_t *begin_v
        int64_t *end_v
        int64_t *cells
    int xdrop_run(const xdrop_pairs *pairs, int64_t k, const xdrop_params *p, xdrop_outputs *out,
                  int threads, int isa, int64_t *bad_pair, warpdp_bad_argument *bad) nogil
