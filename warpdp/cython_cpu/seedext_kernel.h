/* Seed extension with the semantics of BWA's ksw_extend2: scalar kernel (one pair at a time)
   and inter-task SIMD kernels (one pair per vector lane), plus the batch driver. */
#ifndef WARPDP_SEEDEXT_KERNEL_H
#define WARPDP_SEEDEXT_KERNEL_H

#include <stdint.h>
#include "cpu_common.h"

/* Scoring: the 5x5 matrix has a on the diagonal, -b off it and -1 in the N row and column;
   a gap of length k costs o + k*e (deletions: o_del/e_del, insertions: o_ins/e_ins). The plugin
   layer validates the ranges (0 <= a, b <= 127; 1 <= e; o + e <= 32767; w, end_bonus, zdrop >= 0). */
typedef struct {
    int32_t a, b, o_del, e_del, o_ins, e_ins, w, end_bonus, zdrop;
} seedext_params;

/* One extension: ASCII sequences (A/C/G/T in either case, anything else is N) and the seed score. */
typedef struct {
    const uint8_t *query, *target;
    int32_t qlen, tlen, h0;
} seedext_pair;

/* What ksw_extend2 returns; the driver's output rows have this layout (6 x int32). */
typedef struct {
    int32_t score, qle, tle, gtle, gscore, max_off;
} seedext_result;

/* A/C/G/T (either case) -> 0..3, anything else -> 4. */
extern const uint8_t seedext_base_code[256];

/* BWA's band: w, narrowed to the longest insertion and deletion that could still pay off. */
int32_t seedext_band(int32_t qlen, const seedext_params *p);

/* Scores above this (h0 + a * min(qlen, tlen)) or lengths above it need 32-bit lanes. */
#define SEEDEXT_INT16_LIMIT 32000
/* Longer sequences go to the scalar kernel (bounds the SIMD kernels' per-lane buffers and
   keeps their lane arithmetic in 32 bits). */
#define SEEDEXT_SIMD_MAX_LENGTH (1 << 16)

/* The readable reference: returns 0, or -1 when the workspace could not be allocated.
   When cells is not NULL, the number of DP cells computed is added to it. */
int seedext_extend_scalar(const seedext_pair *pair, const seedext_params *p, seedext_result *result,
                          warpdp_workspace *ws, int64_t *cells);

/* Extend n <= LANES pairs together, one per lane; results[k] receives pair k's answer.
   The i16 kernels need every pair to satisfy h0 + a*min(qlen,tlen) <= SEEDEXT_INT16_LIMIT and
   qlen <= SEEDEXT_INT16_LIMIT; every pair must have 1 <= qlen, tlen <= SEEDEXT_SIMD_MAX_LENGTH. */
typedef int (*seedext_group_kernel)(const seedext_pair *pairs, int n, const seedext_params *p,
                                    seedext_result *const *results, warpdp_workspace *ws);
#define SEEDEXT_LANES_AVX2_I16 16
#define SEEDEXT_LANES_AVX2_I32 8
#define SEEDEXT_LANES_AVX512_I16 32
#define SEEDEXT_LANES_AVX512_I32 16
int seedext_group_avx2_i16(const seedext_pair *, int, const seedext_params *, seedext_result *const *,
                           warpdp_workspace *);
int seedext_group_avx2_i32(const seedext_pair *, int, const seedext_params *, seedext_result *const *,
                           warpdp_workspace *);
int seedext_group_avx512_i16(const seedext_pair *, int, const seedext_params *, seedext_result *const *,
                             warpdp_workspace *);
int seedext_group_avx512_i32(const seedext_pair *, int, const seedext_params *, seedext_result *const *,
                             warpdp_workspace *);

/* Packed pairs (the project's data model): pair k is query[query_offsets[k]:query_offsets[k+1]],
   target[target_offsets[k]:target_offsets[k+1]] and h0[k]. */
typedef struct {
    const uint8_t *query, *target;
    const int64_t *query_offsets, *target_offsets;
    const int32_t *h0;
    int64_t n_pairs;
    int64_t query_total, target_total; /* bytes in query and target */
} seedext_batch;

/* Arguments the drivers check (warpdp_bad_argument.field), in the order of SEEDEXT_FIELDS in
   seedext.pyx; ranges as the plugin layer's (SeedExtParams.validate, check_score_range). */
enum {
    SEEDEXT_BAD_THREADS, SEEDEXT_BAD_A, SEEDEXT_BAD_B, SEEDEXT_BAD_O_DEL, SEEDEXT_BAD_E_DEL, SEEDEXT_BAD_O_INS,
    SEEDEXT_BAD_E_INS, SEEDEXT_BAD_W, SEEDEXT_BAD_END_BONUS, SEEDEXT_BAD_ZDROP, SEEDEXT_BAD_QUERY_OFFSETS,
    SEEDEXT_BAD_TARGET_OFFSETS, SEEDEXT_BAD_H0,
};
/* Scores (h0, h0 + a * min(qlen, tlen), end_bonus, zdrop) stay at or below this. */
#define SEEDEXT_MAX_SCORE (1 << 30)

/* The drivers' checks of their arguments, before anything is read through them: 0, or
   WARPDP_BAD_ARGUMENT with *bad filled (threads, then the parameters, then the pairs). */
int seedext_check_arguments(const seedext_batch *batch, const seedext_params *p, int threads,
                            warpdp_bad_argument *bad);

/* Fills out[k] for every pair, in input order. Returns 0, -1 when memory ran out, -2 for an
   isa this CPU cannot run, WARPDP_BAD_ARGUMENT with *bad filled when an argument is out of
   range (checked before anything is read through it). */
int seedext_extend_batch(const seedext_batch *batch, const seedext_params *p, seedext_result *out,
                         int threads, int isa, warpdp_bad_argument *bad);

/* The DP cells ksw_extend2 computes for every pair (the work GCUPS figures count), added to
   cells[k]; out as for seedext_extend_batch. Scalar, multithreaded. Returns 0, -1, or
   WARPDP_BAD_ARGUMENT as seedext_extend_batch. */
int seedext_count_cells(const seedext_batch *batch, const seedext_params *p, seedext_result *out,
                        int64_t *cells, int threads, warpdp_bad_argument *bad);

#endif
