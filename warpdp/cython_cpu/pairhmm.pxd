# The C interface of the Pair-HMM CPU backend (pairhmm_kernel.h, pairhmm_tables.h); pairhmm.pyx's
# run() is its one entry (gkl_tables() shares the tables with the GPU backend).
from libc.stdint cimport int64_t, uint8_t

include "cpu_common_c.pxi"

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
        int64_t n_read_bases, n_hap_bases, n_reads, n_haps
    int pairhmm_forward_batches(const pairhmm_batches *batches, double *out, int64_t n_out, int use_double,
                                int threads, int isa, warpdp_bad_argument *bad) nogil


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
