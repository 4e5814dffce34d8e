/* Runs the align kernels over packed pairs: checks every argument first; with a SIMD variant, sends
   long pairs to its intra-pair kernel and sorts the pairs its lanes take by length into batches;
   spreads batches and the remaining pairs (intra-pair or scalar kernel, bases converted to codes for
   the scalar one in generic modes) over OpenMP threads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "cpu_common.h"
#include "align_kernel.h"

/* Bases to codes (align_base_code). */
static void to_codes(uint8_t *dst, const uint8_t *src, int64_t len)
{
    for (int64_t i = 0; i < len; i++)
        dst[i] = align_base_code(src[i]);
}

static int32_t abs32(int32_t v)
{
    return v < 0 ? -v : v;
}

int align_check_arguments(const align_pairs *pairs, const align_params *p, const align_outputs *out, int threads,
                          int32_t *largest_out, warpdp_bad_argument *bad)
{
    const int64_t max_length = INT32_MAX; /* the plugin's MAX_SEQUENCE_LENGTH */
    if (threads < 0 || threads > WARPDP_MAX_THREADS)
        return warpdp_bad(bad, ALIGN_BAD_THREADS, -1);
    if (p->mode < ALIGN_GLOBAL || p->mode > ALIGN_GATK)
        return warpdp_bad(bad, ALIGN_BAD_MODE, -1);
    int32_t largest; /* the largest |parameter|, for the overflow bound */
    if (p->mode == ALIGN_GATK) {
        if (p->overhang < GATK_SOFTCLIP || p->overhang > GATK_IGNORE)
            return warpdp_bad(bad, ALIGN_BAD_OVERHANG, -1);
        if (p->match < 0 || p->match > ALIGN_MAX_PARAMETER)
            return warpdp_bad(bad, ALIGN_BAD_MATCH, -1);
        if (p->mismatch > 0 || p->mismatch < -ALIGN_MAX_PARAMETER)
            return warpdp_bad(bad, ALIGN_BAD_MISMATCH, -1);
        if (p->gap_open > 0 || p->gap_open < -ALIGN_MAX_PARAMETER)
            return warpdp_bad(bad, ALIGN_BAD_GAP_OPEN, -1);
        if (p->gap_extend > 0 || p->gap_extend < -ALIGN_MAX_PARAMETER)
            return warpdp_bad(bad, ALIGN_BAD_GAP_EXTEND, -1);
        largest = p->match;
        if (-p->mismatch > largest)
            largest = -p->mismatch;
        if (-p->gap_open > largest)
            largest = -p->gap_open;
        if (-p->gap_extend > largest)
            largest = -p->gap_extend;
    } else {
        largest = 0;
        for (int k = 0; k < 25; k++) {
            if (p->matrix[k] > ALIGN_MAX_PARAMETER || p->matrix[k] < -ALIGN_MAX_PARAMETER)
                return warpdp_bad(bad, ALIGN_BAD_MATRIX, k);
            if (abs32(p->matrix[k]) > largest)
                largest = abs32(p->matrix[k]);
        }
        if (p->gap_first < 0 || p->gap_first > 2 * ALIGN_MAX_PARAMETER || p->gap_first < p->gap_ext)
            return warpdp_bad(bad, ALIGN_BAD_GAP_OPEN, -1);
        if (p->gap_ext < 0 || p->gap_ext > ALIGN_MAX_PARAMETER)
            return warpdp_bad(bad, ALIGN_BAD_GAP_EXTEND, -1);
        if (p->gap_first > largest)
            largest = p->gap_first;
    }
    if (largest < 1)
        largest = 1;
    *largest_out = largest;
    const int64_t n = pairs->n_pairs;
    int64_t at;
    if (n < 0 || !warpdp_offsets_ok(pairs->q_offsets, n, pairs->q_total, 1, max_length, &at))
        return warpdp_bad(bad, ALIGN_BAD_Q_OFFSETS, n < 0 ? -1 : at);
    if (!warpdp_offsets_ok(pairs->t_offsets, n, pairs->t_total, 1, max_length, &at))
        return warpdp_bad(bad, ALIGN_BAD_T_OFFSETS, at);
    const int traceback = p->cigar || p->mode == ALIGN_GATK;
    for (int64_t i = 0; i < n; i++) {
        const int64_t m = pairs->q_offsets[i + 1] - pairs->q_offsets[i];
        const int64_t len_t = pairs->t_offsets[i + 1] - pairs->t_offsets[i];
        if ((m + len_t + 2) > ALIGN_SCORE_LIMIT / 2 / largest)
            return warpdp_bad(bad, ALIGN_BAD_LENGTH, i);
        /* (m + 1) * (n + 1) <= limit, without overflow: both are below 2^31 */
        if (traceback && (m + 1) > p->max_traceback_cells / (len_t + 1))
            return warpdp_bad(bad, ALIGN_BAD_TRACEBACK, i);
    }
    if (traceback && (p->cigar || out->ops != NULL)) {
        if (out->ops == NULL || out->ops_count == NULL ||
            out->ops_capacity < pairs->q_total + pairs->t_total + 2 * n)
            return warpdp_bad(bad, ALIGN_BAD_OUTPUT, -1);
    }
    if (n > 0 && (out->score == NULL || out->query_begin == NULL || out->query_end == NULL ||
                  out->target_begin == NULL || out->target_end == NULL))
        return warpdp_bad(bad, ALIGN_BAD_OUTPUT, -1);
    return 0;
}

static void store_result(align_outputs *out, int64_t i, const align_result *res)
{
    out->score[i] = res->score;
    out->query_begin[i] = res->q_begin;
    out->query_end[i] = res->q_end;
    out->target_begin[i] = res->t_begin;
    out->target_end[i] = res->t_end;
    if (out->ops_count != NULL)
        out->ops_count[i] = out->ops != NULL ? res->n_ops : 0;
}

/* One pair with the scalar kernel, or with `diag` (an intra-pair kernel) where not NULL; 0, or -1
   out of memory. ws: rows, traceback, codes. */
static int run_pair(const align_pairs *pairs, const align_params *p, align_outputs *out, int64_t i,
                    align_diag_kernel diag, warpdp_workspace *ws)
{
    const int64_t m = pairs->q_offsets[i + 1] - pairs->q_offsets[i];
    const int64_t n = pairs->t_offsets[i + 1] - pairs->t_offsets[i];
    const uint8_t *q = pairs->q_bases + pairs->q_offsets[i], *t = pairs->t_bases + pairs->t_offsets[i];
    const int gatk = p->mode == ALIGN_GATK;
    if (diag != NULL) {
        align_result res;
        uint32_t *ops = out->ops != NULL ? out->ops + pairs->q_offsets[i] + pairs->t_offsets[i] + 2 * i : NULL;
        if (diag(q, m, t, n, p, &res, ops, ws) != 0)
            return -1;
        store_result(out, i, &res);
        return 0;
    }
    if (!gatk) {
        uint8_t *codes = warpdp_workspace_reserve(&ws[2], (size_t)(m + n));
        if (codes == NULL)
            return -1;
        to_codes(codes, q, m);
        to_codes(codes + m, t, n);
        q = codes;
        t = codes + m;
    }
    uint32_t scratch_ops[1]; /* unused when no CIGAR is written */
    uint32_t *ops = out->ops != NULL ? out->ops + pairs->q_offsets[i] + pairs->t_offsets[i] + 2 * i : scratch_ops;
    if (gatk && out->ops == NULL) {
        /* GATK mode always traces back; without a CIGAR output it goes to scratch */
        ops = warpdp_workspace_reserve(&ws[2], (size_t)(m + n + 2) * sizeof(uint32_t));
        if (ops == NULL)
            return -1;
    }
    align_result res;
    if (align_pair_scalar(q, m, t, n, p, &res, ops, ws) != 0)
        return -1;
    store_result(out, i, &res);
    return 0;
}

/* The SIMD variants' paths: which pairs take the intra-pair kernel, which the lanes (batched by
   similar lengths). */
typedef int (*lanes_kernel)(align_lane_batch *, const align_params *, warpdp_workspace *);
/* where a pair goes: scalar kernel, int16 or int32 lanes, int16 or int32 intra-pair kernel */
enum { CELLS_SCALAR = 0, CELLS_INT16 = 1, CELLS_INT32 = 2, CELLS_DIAG16 = 3, CELLS_DIAG32 = 4 };
typedef struct {
    lanes_kernel kernel[3];  /* by CELLS_*; NULL for the scalar variant */
    align_diag_kernel diag[2]; /* int16, int32 */
    int lanes[3];
    uint8_t *cells;          /* each pair's CELLS_* */
    int64_t *order;          /* int16 pairs by length, int32 pairs by length, then the pairs taken one by one */
    int64_t first[4];        /* order[first[c] .. first[c + 1]) holds class c's pairs (c = 1, 2) */
    int64_t batch_start[3];  /* work items: int16 batches from batch_start[1], int32 from [2] */
    int64_t n_batches;
} lane_plan;

/* 1 when the pair's values fit the variant's int16 cells. */
static int pair_fits_int16(const align_params *p, int64_t m, int64_t n, int32_t largest, int32_t top, int isa)
{
    if (!align_fits_int16(m, n, top, p->gap_first, p->gap_ext, largest))
        return 0;
    if (isa == WARPDP_ISA_AVX2) /* its int16 score lookup holds bytes */
        for (int k = 0; k < 25; k++)
            if (p->matrix[k] < -128 || p->matrix[k] > 127)
                return 0;
    return 1;
}

static int pair_cells(const align_pairs *pairs, const align_params *p, int32_t largest, int32_t top, int isa,
                      int64_t i)
{
    const int64_t m = pairs->q_offsets[i + 1] - pairs->q_offsets[i];
    const int64_t n = pairs->t_offsets[i + 1] - pairs->t_offsets[i];
    if (p->mode == ALIGN_GATK) {
        if (m > ALIGN_GATK_LANE_SIDE || n > ALIGN_GATK_LANE_SIDE)
            return CELLS_SCALAR;
        const int short_pair = m <= ALIGN_LANE_TRACE_SIDE && n <= ALIGN_LANE_TRACE_SIDE;
        return short_pair && align_gatk_fits_int16(m, n, p, largest) ? CELLS_INT16 : CELLS_INT32;
    }
    const int64_t longer = m > n ? m : n;
    /* a traceback walk: a CIGAR, or score-only local begins (the lanes carry semi-global ones, a column
       only, at about the intra-pair kernel's speed, faster past the caches: BENCHMARKS.md) */
    const int walk = p->cigar || p->mode == ALIGN_LOCAL;
    int diag;
    if (p->diag_min_length > 0) /* the test hook: every output */
        diag = longer >= p->diag_min_length;
    else /* with a walk from the ISA's threshold; without, where the lanes cannot go */
        diag = walk ? longer >= align_diag_min_length(isa) : longer > ALIGN_LANE_MAX_LENGTH;
    if (diag && (!walk || align_diag_fits(m, n)))
        return pair_fits_int16(p, m, n, largest, top, isa) ? CELLS_DIAG16 : CELLS_DIAG32;
    if (m > ALIGN_LANE_MAX_LENGTH || n > ALIGN_LANE_MAX_LENGTH ||
        (p->cigar && (m > ALIGN_LANE_TRACE_SIDE || n > ALIGN_LANE_TRACE_SIDE)))
        return CELLS_SCALAR;
    return pair_fits_int16(p, m, n, largest, top, isa) ? CELLS_INT16 : CELLS_INT32;
}

static int64_t pair_key(const align_pairs *pairs, int64_t i)
{
    return ((pairs->q_offsets[i + 1] - pairs->q_offsets[i]) << 32) | (pairs->t_offsets[i + 1] - pairs->t_offsets[i]);
}

static const align_pairs *sorting_pairs; /* qsort's comparison has no context argument */

static int by_length(const void *a, const void *b)
{
    const int64_t ka = pair_key(sorting_pairs, *(const int64_t *)a), kb = pair_key(sorting_pairs, *(const int64_t *)b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/* 0, or -1 out of memory. */
static int plan_lanes(lane_plan *plan, const align_pairs *pairs, const align_params *p, int32_t largest, int isa)
{
    const int64_t n = pairs->n_pairs;
    plan->order = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    uint8_t *cells = plan->cells = malloc((size_t)(n > 0 ? n : 1));
    if (plan->order == NULL || cells == NULL)
        return -1;
    int32_t top = p->matrix[0];
    for (int k = 1; k < 25; k++)
        top = p->matrix[k] > top ? p->matrix[k] : top;
    int64_t count[5] = {0, 0, 0, 0, 0};
    for (int64_t i = 0; i < n; i++)
        count[cells[i] = (uint8_t)pair_cells(pairs, p, largest, top, isa, i)]++;
    plan->first[1] = 0;
    plan->first[2] = count[CELLS_INT16];
    plan->first[3] = plan->first[2] + count[CELLS_INT32];
    /* the pairs taken one by one (intra-pair kernel first: they are the longest) */
    int64_t next[5] = {plan->first[3] + count[CELLS_DIAG16] + count[CELLS_DIAG32], plan->first[1], plan->first[2],
                       plan->first[3], plan->first[3] + count[CELLS_DIAG16]};
    for (int64_t i = 0; i < n; i++)
        plan->order[next[cells[i]]++] = i;
    #pragma omp critical(align_sorting)
    {
        sorting_pairs = pairs;
        for (int c = CELLS_INT16; c <= CELLS_INT32; c++)
            qsort(plan->order + plan->first[c], (size_t)count[c], sizeof(int64_t), by_length);
    }
    plan->batch_start[1] = 0;
    plan->batch_start[2] = (count[1] + plan->lanes[1] - 1) / plan->lanes[1];
    plan->n_batches = plan->batch_start[2] + (count[2] + plan->lanes[2] - 1) / plan->lanes[2];
    return 0;
}

/* Work item k (< plan->n_batches): a batch of int16 or int32 lanes; 0, or -1 out of memory. */
static int run_batch(const align_pairs *pairs, const align_params *p, align_outputs *out, const lane_plan *plan,
                     int64_t k, warpdp_workspace *ws)
{
    const int c = k >= plan->batch_start[2] ? CELLS_INT32 : CELLS_INT16;
    align_lane_batch b;
    const int64_t first = plan->first[c] + (k - plan->batch_start[c]) * plan->lanes[c];
    const int64_t end = first + plan->lanes[c] < plan->first[c + 1] ? first + plan->lanes[c] : plan->first[c + 1];
    b.count = (int)(end - first);
    for (int l = 0; l < b.count; l++) {
        const int64_t i = plan->order[first + l];
        b.q[l] = pairs->q_bases + pairs->q_offsets[i];
        b.t[l] = pairs->t_bases + pairs->t_offsets[i];
        b.m[l] = pairs->q_offsets[i + 1] - pairs->q_offsets[i];
        b.n[l] = pairs->t_offsets[i + 1] - pairs->t_offsets[i];
        b.ops[l] = out->ops != NULL ? out->ops + pairs->q_offsets[i] + pairs->t_offsets[i] + 2 * i : NULL;
    }
    if (plan->kernel[c](&b, p, ws) != 0)
        return -1;
    for (int l = 0; l < b.count; l++)
        store_result(out, plan->order[first + l], &b.res[l]);
    return 0;
}

int align_run(const align_pairs *pairs, const align_params *p, align_outputs *out, int threads, int isa,
              warpdp_bad_argument *bad)
{
    lane_plan plan = {{NULL, NULL, NULL}, {NULL, NULL}, {1, 1, 1}, NULL, NULL, {0, 0, 0, 0}, {0, 0, 0}, 0};
    switch (isa) {
    case WARPDP_ISA_SCALAR:
        break;
#if WARPDP_X86_SIMD
    case WARPDP_ISA_AVX2:
        plan.kernel[CELLS_INT16] = align_lanes_avx2;
        plan.kernel[CELLS_INT32] = align_lanes_avx2_i32;
        plan.lanes[CELLS_INT16] = 16;
        plan.lanes[CELLS_INT32] = 8;
        plan.diag[0] = align_diag_avx2;
        plan.diag[1] = align_diag_avx2_i32;
        break;
    case WARPDP_ISA_AVX512:
        plan.kernel[CELLS_INT16] = align_lanes_avx512;
        plan.kernel[CELLS_INT32] = align_lanes_avx512_i32;
        plan.lanes[CELLS_INT16] = 32;
        plan.lanes[CELLS_INT32] = 16;
        plan.diag[0] = align_diag_avx512;
        plan.diag[1] = align_diag_avx512_i32;
        break;
#endif
    default:
        return -2;
    }
    if (!warpdp_cpu_supports(isa))
        return -2;
    int32_t largest = 1;
    int status = align_check_arguments(pairs, p, out, threads, &largest, bad);
    if (status != 0)
        return status;
    if (pairs->n_pairs == 0)
        return 0;
    if (plan.kernel[CELLS_INT16] != NULL && plan_lanes(&plan, pairs, p, largest, isa) != 0) {
        free(plan.order);
        free(plan.cells);
        return -1;
    }
    /* Work items: the batches, then every pair outside them, one at a time. */
    const int64_t n_items = plan.n_batches + pairs->n_pairs - plan.first[3];
    int failed = 0;
    if (threads < 1)
        threads = omp_get_max_threads();
    #pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        warpdp_workspace ws[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}}; /* rows, traceback, codes */
        #pragma omp for schedule(dynamic, 1)
        for (int64_t k = 0; k < n_items; k++) {
            if (failed)
                continue;
            if (k < plan.n_batches) {
                failed = run_batch(pairs, p, out, &plan, k, ws) != 0;
            } else {
                const int64_t i = plan.order != NULL ? plan.order[plan.first[3] + k - plan.n_batches] : k;
                const int cells = plan.cells != NULL ? plan.cells[i] : CELLS_SCALAR;
                const align_diag_kernel diag = cells == CELLS_DIAG16   ? plan.diag[0]
                                               : cells == CELLS_DIAG32 ? plan.diag[1]
                                                                       : NULL;
                failed = run_pair(pairs, p, out, i, diag, ws) != 0;
            }
        }
        warpdp_workspace_free(&ws[0]);
        warpdp_workspace_free(&ws[1]);
        warpdp_workspace_free(&ws[2]);
    }
    free(plan.order);
    free(plan.cells);
    return failed ? -1 : 0;
}
