/* Pair-HMM forward kernels: one (read, haplotype) pair at a time, in every SIMD variant. */
#ifndef WARPDP_PAIRHMM_KERNEL_H
#define WARPDP_PAIRHMM_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include "cpu_common.h"

/* One pair, pointing into the caller's packed arrays. Qualities are raw phred values. */
typedef struct {
    const uint8_t *read_bases, *read_quals, *read_ins, *read_del, *read_gcp;
    const uint8_t *hap_bases;
    int read_len, hap_len;
} pairhmm_pair;

/* Each kernel returns sum_j (M[R][j] + X[R][j]) scaled by the precision's initial constant,
   or a negative value when the workspace could not be allocated. */
float pairhmm_forward_float_scalar(const pairhmm_pair *pair, warpdp_workspace *ws);
double pairhmm_forward_double_scalar(const pairhmm_pair *pair, warpdp_workspace *ws);
float pairhmm_forward_float_avx2(const pairhmm_pair *pair, warpdp_workspace *ws);
double pairhmm_forward_double_avx2(const pairhmm_pair *pair, warpdp_workspace *ws);
float pairhmm_forward_float_avx512(const pairhmm_pair *pair, warpdp_workspace *ws);
double pairhmm_forward_double_avx512(const pairhmm_pair *pair, warpdp_workspace *ws);

/* Packed batches, the data model of the whole project (see docs/semantics.md):
   read r spans [read_offsets[r], read_offsets[r+1]) of the five read arrays,
   haplotype h spans [hap_offsets[h], hap_offsets[h+1]) of hap_bases,
   batch b holds reads [batch_reads[b], batch_reads[b+1]) and haplotypes
   [batch_haps[b], batch_haps[b+1]); all its reads are scored against all its haplotypes. */
typedef struct {
    const uint8_t *read_bases, *read_quals, *read_ins, *read_del, *read_gcp;
    const int64_t *read_offsets;
    const uint8_t *hap_bases;
    const int64_t *hap_offsets;
    const int64_t *batch_reads, *batch_haps;
    int64_t n_batches;
    int64_t n_read_bases;      /* bytes in each of the five read arrays */
    int64_t n_hap_bases;       /* bytes in hap_bases */
    int64_t n_reads, n_haps;   /* read_offsets and hap_offsets hold one more entry each */
} pairhmm_batches;

/* Arguments pairhmm_forward_batches checks (warpdp_bad_argument.field), in the order of
   PAIRHMM_FIELDS in pairhmm.pyx. */
enum {
    PAIRHMM_BAD_THREADS, PAIRHMM_BAD_READ_OFFSETS, PAIRHMM_BAD_HAP_OFFSETS, PAIRHMM_BAD_BATCH_READS,
    PAIRHMM_BAD_BATCH_HAPS, PAIRHMM_BAD_OUT,
};

/* Fills out[] (batch after batch, read-major inside a batch) with log10 likelihoods,
   following GKL: float first, double when the float result is below 1e-28, or double
   only when use_double. out has n_out entries, which must be the batches' pairs. Returns 0,
   or -1 when memory ran out, -2 for an unknown isa, WARPDP_BAD_ARGUMENT with *bad filled
   when an argument is out of range (checked before anything is read through it). */
int pairhmm_forward_batches(const pairhmm_batches *batches, double *out, int64_t n_out, int use_double,
                            int threads, int isa, warpdp_bad_argument *bad);

/* pairhmm_forward_batches' checks of its arguments alone (the C API's GPU handles run them
   too): 0, or WARPDP_BAD_ARGUMENT with *bad filled. */
int pairhmm_check_arguments(const pairhmm_batches *batches, const double *out, int64_t n_out, int threads,
                            warpdp_bad_argument *bad);

#endif
