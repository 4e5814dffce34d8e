/* Runs seed extension over packed pairs: picks the variant, groups pairs of similar lengths
   into SIMD lanes, and spreads the groups over OpenMP threads. */
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "cpu_common.h"
#include "seedext_kernel.h"

/* Work items for the threads: a group of pairs for the int16 or int32 SIMD kernel, or a few
   pairs for the scalar kernel (empty or very long sequences). */
enum { ITEM_NARROW, ITEM_WIDE, ITEM_SCALAR };
#define SCALAR_ITEM_PAIRS 16
typedef struct {
    int64_t first;      /* into the sorted index list */
    int32_t count;      /* pairs in this item */
    int32_t kind;       /* ITEM_* */
} work_item;

/* Sort keys above this share the last bucket (still correct, just grouped less tightly). */
#define SEEDEXT_SORT_BUCKETS 8192

/* Stable counting sort of idx[0..n) by key[idx] (0 <= key < SEEDEXT_SORT_BUCKETS), descending. */
static int sort_by_key_desc(int64_t *idx, int64_t n, const int32_t *key, int64_t *scratch)
{
    int64_t *count = calloc(SEEDEXT_SORT_BUCKETS + 1, sizeof(int64_t));
    if (count == NULL)
        return -1;
    for (int64_t k = 0; k < n; k++)
        count[SEEDEXT_SORT_BUCKETS - 1 - key[idx[k]] + 1]++;
    for (int b = 0; b < SEEDEXT_SORT_BUCKETS; b++)
        count[b + 1] += count[b];
    for (int64_t k = 0; k < n; k++)
        scratch[count[SEEDEXT_SORT_BUCKETS - 1 - key[idx[k]]]++] = idx[k];
    memcpy(idx, scratch, sizeof(int64_t) * (size_t)n);
    free(count);
    return 0;
}

static inline int32_t bucket(int64_t length)
{
    return length < SEEDEXT_SORT_BUCKETS ? (int32_t)length : SEEDEXT_SORT_BUCKETS - 1;
}

static inline seedext_pair pair_at(const seedext_batch *b, int64_t k)
{
    seedext_pair pair = {
        b->query + b->query_offsets[k], b->target + b->target_offsets[k],
        (int32_t)(b->query_offsets[k + 1] - b->query_offsets[k]),
        (int32_t)(b->target_offsets[k + 1] - b->target_offsets[k]), b->h0[k],
    };
    return pair;
}

static int run_scalar(const seedext_batch *b, const seedext_params *p, seedext_result *out, int64_t *cells,
                      int threads)
{
    int failed = 0;
    #pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        warpdp_workspace ws = {NULL, 0};
        #pragma omp for schedule(dynamic, 16)
        for (int64_t k = 0; k < b->n_pairs; k++) {
            const seedext_pair pair = pair_at(b, k);
            if (seedext_extend_scalar(&pair, p, &out[k], &ws, cells == NULL ? NULL : &cells[k]) != 0)
                failed = 1;
        }
        warpdp_workspace_free(&ws);
    }
    return failed ? -1 : 0;
}

/* The checks of the drivers' arguments (the C API's GPU handles make them too). */
int seedext_check_arguments(const seedext_batch *b, const seedext_params *p, int threads, warpdp_bad_argument *bad)
{
    if (threads < 0 || threads > WARPDP_MAX_THREADS)
        return warpdp_bad(bad, SEEDEXT_BAD_THREADS, -1);
    const struct {
        int32_t value, low, high;
    } limits[] = {
        {p->a, 0, 127}, {p->b, 0, 127}, {p->o_del, 0, 16383}, {p->e_del, 1, 16383}, {p->o_ins, 0, 16383},
        {p->e_ins, 1, 16383}, {p->w, 0, INT32_MAX}, {p->end_bonus, 0, SEEDEXT_MAX_SCORE},
        {p->zdrop, 0, SEEDEXT_MAX_SCORE},
    };
    for (int f = 0; f < (int)(sizeof limits / sizeof limits[0]); f++)
        if (limits[f].value < limits[f].low || limits[f].value > limits[f].high)
            return warpdp_bad(bad, SEEDEXT_BAD_A + f, -1);
    const int64_t n = b->n_pairs;
    int64_t at;
    if (n < 0 || !warpdp_offsets_ok(b->query_offsets, n, b->query_total, 0, INT32_MAX, &at))
        return warpdp_bad(bad, SEEDEXT_BAD_QUERY_OFFSETS, n < 0 ? -1 : at);
    if (!warpdp_offsets_ok(b->target_offsets, n, b->target_total, 0, INT32_MAX, &at))
        return warpdp_bad(bad, SEEDEXT_BAD_TARGET_OFFSETS, at);
    for (int64_t k = 0; k < n; k++) {
        const int64_t qlen = b->query_offsets[k + 1] - b->query_offsets[k];
        const int64_t tlen = b->target_offsets[k + 1] - b->target_offsets[k];
        if (b->h0[k] < 0 || (int64_t)b->h0[k] + (int64_t)p->a * (qlen < tlen ? qlen : tlen) > SEEDEXT_MAX_SCORE)
            return warpdp_bad(bad, SEEDEXT_BAD_H0, k);
    }
    return 0;
}

int seedext_count_cells(const seedext_batch *b, const seedext_params *p, seedext_result *out,
                        int64_t *cells, int threads, warpdp_bad_argument *bad)
{
    if (seedext_check_arguments(b, p, threads, bad) != 0)
        return WARPDP_BAD_ARGUMENT;
    return run_scalar(b, p, out, cells, threads < 1 ? omp_get_max_threads() : threads);
}

int seedext_extend_batch(const seedext_batch *b, const seedext_params *p, seedext_result *out,
                         int threads, int isa, warpdp_bad_argument *bad)
{
    seedext_group_kernel narrow, wide;
    int narrow_lanes, wide_lanes;
    switch (isa) {
    case WARPDP_ISA_SCALAR:
        narrow = wide = NULL;
        narrow_lanes = wide_lanes = 1;
        break;
#if WARPDP_X86_SIMD
    case WARPDP_ISA_AVX2:
        narrow = seedext_group_avx2_i16;
        wide = seedext_group_avx2_i32;
        narrow_lanes = SEEDEXT_LANES_AVX2_I16;
        wide_lanes = SEEDEXT_LANES_AVX2_I32;
        break;
    case WARPDP_ISA_AVX512:
        narrow = seedext_group_avx512_i16;
        wide = seedext_group_avx512_i32;
        narrow_lanes = SEEDEXT_LANES_AVX512_I16;
        wide_lanes = SEEDEXT_LANES_AVX512_I32;
        break;
#endif
    default:
        return -2;
    }
    if (!warpdp_cpu_supports(isa))
        return -2;
    if (seedext_check_arguments(b, p, threads, bad) != 0)
        return WARPDP_BAD_ARGUMENT;
    if (threads < 1)
        threads = omp_get_max_threads();
    const int64_t n = b->n_pairs;
    if (n == 0)
        return 0;
    if (narrow == NULL)
        return run_scalar(b, p, out, NULL, threads);

    /* Classify: empty (nothing to vectorise) or huge sequences -> scalar, scores and lengths
       that fit -> int16 lanes, the rest -> int32 lanes. */
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)n * 2);
    int32_t *qkey = malloc(sizeof(int32_t) * (size_t)n), *tkey = malloc(sizeof(int32_t) * (size_t)n);
    work_item *items = malloc(sizeof(work_item) * (size_t)(n + 3));
    if (idx == NULL || qkey == NULL || tkey == NULL || items == NULL) {
        free(idx);
        free(qkey);
        free(tkey);
        free(items);
        return -1;
    }
    int64_t *scratch = idx + n;
    int64_t n_narrow = 0, n_wide = 0, n_trivial = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t qlen = b->query_offsets[k + 1] - b->query_offsets[k];
        const int64_t tlen = b->target_offsets[k + 1] - b->target_offsets[k];
        qkey[k] = bucket(qlen);
        tkey[k] = bucket(tlen);
        const int64_t reach = (int64_t)b->h0[k] + (int64_t)p->a * (qlen < tlen ? qlen : tlen);
        if (qlen == 0 || tlen == 0 || qlen > SEEDEXT_SIMD_MAX_LENGTH || tlen > SEEDEXT_SIMD_MAX_LENGTH)
            scratch[k] = 2;
        else
            scratch[k] = reach <= SEEDEXT_INT16_LIMIT && qlen <= SEEDEXT_INT16_LIMIT ? 0 : 1;
    }
    for (int64_t k = 0; k < n; k++)
        if (scratch[k] == 0)
            idx[n_narrow++] = k;
    for (int64_t k = 0; k < n; k++)
        if (scratch[k] == 1)
            idx[n_narrow + n_wide++] = k;
    for (int64_t k = 0; k < n; k++)
        if (scratch[k] == 2)
            idx[n_narrow + n_wide + n_trivial++] = k;
    /* Lanes of a group sweep the widest window and the longest target among them, so group
       pairs of similar query length, then similar target length; longest first, which also
       balances the threads' loads. */
    int status = 0;
    for (int pass = 0; pass < 2 && status == 0; pass++) {
        int64_t *list = pass == 0 ? idx : idx + n_narrow;
        const int64_t count = pass == 0 ? n_narrow : n_wide;
        status = sort_by_key_desc(list, count, tkey, scratch);
        if (status == 0)
            status = sort_by_key_desc(list, count, qkey, scratch);
    }
    free(qkey);
    free(tkey);
    if (status != 0) {
        free(idx);
        free(items);
        return -1;
    }
    int64_t n_items = 0;
    for (int64_t k = 0; k < n_narrow; k += narrow_lanes)
        items[n_items++] = (work_item){k, (int32_t)(n_narrow - k < narrow_lanes ? n_narrow - k : narrow_lanes),
                                       ITEM_NARROW};
    for (int64_t k = n_narrow; k < n_narrow + n_wide; k += wide_lanes)
        items[n_items++] = (work_item){k, (int32_t)(n_narrow + n_wide - k < wide_lanes ? n_narrow + n_wide - k : wide_lanes),
                                       ITEM_WIDE};
    for (int64_t k = n_narrow + n_wide; k < n; k += SCALAR_ITEM_PAIRS)
        items[n_items++] = (work_item){k, (int32_t)(n - k < SCALAR_ITEM_PAIRS ? n - k : SCALAR_ITEM_PAIRS), ITEM_SCALAR};

    int failed = 0;
    #pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        warpdp_workspace ws = {NULL, 0};
        seedext_pair pairs[SEEDEXT_LANES_AVX512_I16];
        seedext_result *results[SEEDEXT_LANES_AVX512_I16];
        #pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < n_items; t++) {
            const work_item item = items[t];
            if (item.kind == ITEM_SCALAR) {
                for (int32_t k = 0; k < item.count; k++) {
                    const int64_t pk = idx[item.first + k];
                    const seedext_pair pair = pair_at(b, pk);
                    if (seedext_extend_scalar(&pair, p, &out[pk], &ws, NULL) != 0)
                        failed = 1;
                }
                continue;
            }
            for (int32_t k = 0; k < item.count; k++) {
                const int64_t pk = idx[item.first + k];
                pairs[k] = pair_at(b, pk);
                results[k] = &out[pk];
            }
            if ((item.kind == ITEM_WIDE ? wide : narrow)(pairs, item.count, p, results, &ws) != 0)
                failed = 1;
        }
        warpdp_workspace_free(&ws);
    }
    free(idx);
    free(items);
    return failed ? -1 : 0;
}
