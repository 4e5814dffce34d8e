/* Runs the align kernels over packed pairs: checks every argument first, converts bases to codes
   (generic modes), spreads pairs over OpenMP threads. */
#include <stdint.h>
#include <string.h>
#include <omp.h>
#include "cpu_common.h"
#include "align_kernel.h"

typedef int (*pair_kernel)(const uint8_t *, int64_t, const uint8_t *, int64_t, const align_params *, align_result *,
                           uint32_t *, warpdp_workspace *);

/* A, C, G, T in either case -> 0..3; every other byte -> 4 (N), scored as the matrix says. */
static void to_codes(uint8_t *dst, const uint8_t *src, int64_t len)
{
    for (int64_t i = 0; i < len; i++) {
        const uint8_t u = (uint8_t)(src[i] & 0xDF);
        dst[i] = u == 'A' ? 0 : u == 'C' ? 1 : u == 'G' ? 2 : u == 'T' ? 3 : 4;
    }
}

static int32_t abs32(int32_t v)
{
    return v < 0 ? -v : v;
}

static int check_arguments(const align_pairs *pairs, const align_params *p, const align_outputs *out, int threads,
                           warpdp_bad_argument *bad)
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

int align_run(const align_pairs *pairs, const align_params *p, align_outputs *out, int threads, int isa,
              warpdp_bad_argument *bad)
{
    /* Only the scalar variant exists so far; align.pyx lists only it. */
    pair_kernel kernel;
    if (isa != WARPDP_ISA_SCALAR)
        return -2;
    kernel = align_pair_scalar;
    int status = check_arguments(pairs, p, out, threads, bad);
    if (status != 0)
        return status;
    if (pairs->n_pairs == 0)
        return 0;
    const int gatk = p->mode == ALIGN_GATK;
    int failed = 0;
    if (threads < 1)
        threads = omp_get_max_threads();
    #pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        /* rows, traceback, base codes */
        warpdp_workspace ws[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
        uint32_t scratch_ops[1]; /* unused when no CIGAR is written */
        #pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < pairs->n_pairs; i++) {
            if (failed)
                continue;
            const int64_t m = pairs->q_offsets[i + 1] - pairs->q_offsets[i];
            const int64_t n = pairs->t_offsets[i + 1] - pairs->t_offsets[i];
            const uint8_t *q = pairs->q_bases + pairs->q_offsets[i], *t = pairs->t_bases + pairs->t_offsets[i];
            if (!gatk) {
                uint8_t *codes = warpdp_workspace_reserve(&ws[2], (size_t)(m + n));
                if (codes == NULL) {
                    failed = 1;
                    continue;
                }
                to_codes(codes, q, m);
                to_codes(codes + m, t, n);
                q = codes;
                t = codes + m;
            }
            uint32_t *ops = out->ops != NULL ? out->ops + pairs->q_offsets[i] + pairs->t_offsets[i] + 2 * i : scratch_ops;
            align_result res;
            if (gatk && out->ops == NULL) {
                /* GATK mode always traces back; without a CIGAR output it goes to scratch */
                uint32_t *tmp = warpdp_workspace_reserve(&ws[2], (size_t)(m + n + 2) * sizeof(uint32_t));
                if (tmp == NULL) {
                    failed = 1;
                    continue;
                }
                ops = tmp;
            }
            if (kernel(q, m, t, n, p, &res, ops, ws) != 0) {
                failed = 1;
                continue;
            }
            out->score[i] = res.score;
            out->query_begin[i] = res.q_begin;
            out->query_end[i] = res.q_end;
            out->target_begin[i] = res.t_begin;
            out->target_end[i] = res.t_end;
            if (out->ops_count != NULL)
                out->ops_count[i] = out->ops != NULL ? res.n_ops : 0;
        }
        warpdp_workspace_free(&ws[0]);
        warpdp_workspace_free(&ws[1]);
        warpdp_workspace_free(&ws[2]);
    }
    return failed ? -1 : 0;
}
