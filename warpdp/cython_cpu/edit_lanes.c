/* Runs edit distance with inter-pair lanes: exact pairs whose query fits EDIT_LANE_WORDS words
   are sorted by query words, then target length, and swept a vector of pairs at a time
   (edit_lanes_body.h); every other pair (long, windowed, all of them in the scalar variant) runs
   in the per-pair body, a few pairs per work item. The lanes' results are exactly the per-pair
   body's: the same distance, the same ends in the same order, the same starts (HW: a second sweep
   of the reversed problems, as edit_exact.h's start_of), and the path of the per-pair body's
   Hirschberg over the same span (edit_lanes_path.c). */
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "cpu_common.h"
#include "edit_kernel.h"

/* A work item of the per-pair body: up to this many pairs, fewer once they hold this many bases
   (a long pair is an item of its own, so the threads share long pairs evenly). */
#define SCALAR_ITEM_PAIRS 16
#define SCALAR_ITEM_BASES 4096
/* Sort keys: query words above the target length (EDIT_LANE_MAX_TARGET < 1 << KEY_LENGTH_BITS). */
#define KEY_LENGTH_BITS 15
#define RADIX_BITS 9

typedef struct {
    int64_t first; /* into the sorted pair list */
    int32_t count;
    int32_t words; /* 0: the per-pair body */
} work_item;

/* A start to find (HW): lane's alignment ending at column end, written to its location slot
   (-1: the distance task, which keeps only the span). */
typedef struct {
    int32_t lane;
    int64_t slot, end;
} start_job;

typedef struct {
    warpdp_workspace kernel, rows;
} lane_scratch;

/* The query words a pair takes in the lanes, or 0 when it runs in the per-pair body. */
static int32_t lane_words(const edit_pairs *pairs, const edit_params *p, int have_lanes, int64_t i)
{
    const int64_t m = pairs->query_offsets[i + 1] - pairs->query_offsets[i];
    const int64_t n = pairs->target_offsets[i + 1] - pairs->target_offsets[i];
    if (!have_lanes || p->method != EDIT_EXACT || m > 64 * EDIT_LANE_WORDS || n > EDIT_LANE_MAX_TARGET)
        return 0;
    return (int32_t)((m + 63) / 64);
}

static inline int64_t pair_bases(const edit_pairs *pairs, int64_t i)
{
    return pairs->query_offsets[i + 1] - pairs->query_offsets[i] + pairs->target_offsets[i + 1] -
           pairs->target_offsets[i];
}

/* Stable LSD radix sort of idx[0..n) by key[idx]. */
static int sort_by_key(int64_t *idx, int64_t n, const uint32_t *key, int key_bits)
{
    int64_t *tmp = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *count = malloc(sizeof(int64_t) * ((1u << RADIX_BITS) + 1));
    if (tmp == NULL || count == NULL) {
        free(tmp);
        free(count);
        return -1;
    }
    for (int shift = 0; shift < key_bits; shift += RADIX_BITS) {
        memset(count, 0, sizeof(int64_t) * ((1u << RADIX_BITS) + 1));
        for (int64_t k = 0; k < n; k++)
            count[((key[idx[k]] >> shift) & ((1u << RADIX_BITS) - 1)) + 1]++;
        for (int d = 0; d < (1 << RADIX_BITS); d++)
            count[d + 1] += count[d];
        for (int64_t k = 0; k < n; k++)
            tmp[count[(key[idx[k]] >> shift) & ((1u << RADIX_BITS) - 1)]++] = idx[k];
        memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
    }
    free(tmp);
    free(count);
    return 0;
}

/* The starts of a group's jobs, `lanes` at a time: the reversed query against the reversed
   target before each end (at most m + distance bases), the last column within the distance. */
static int find_starts(const edit_lane *lane, const int64_t *distance, const start_job *jobs, int64_t n_jobs,
                       int words, edit_lanes_kernel kernel, int lanes, warpdp_workspace *ws, int64_t *start)
{
    const edit_sweep s = {EDIT_LAST_WITHIN, words, 0, 0, 1, NULL};
    for (int64_t first = 0; first < n_jobs; first += lanes) {
        const int count = (int)(n_jobs - first < lanes ? n_jobs - first : lanes);
        edit_lane rev[EDIT_MAX_LANES];
        int64_t unused[EDIT_MAX_LANES], last[EDIT_MAX_LANES];
        for (int c = 0; c < count; c++) {
            const start_job *job = &jobs[first + c];
            const edit_lane *l = &lane[job->lane];
            const int64_t best = distance[job->lane];
            const int64_t span = job->end < l->m + best ? job->end : l->m + best;
            rev[c] = (edit_lane){l->q, l->t + job->end - span, l->m, span, best};
        }
        if (kernel(rev, count, &s, unused, last, ws) != 0)
            return -1;
        for (int c = 0; c < count; c++)
            start[first + c] = jobs[first + c].end - last[c];
    }
    return 0;
}

/* One group's results (see edit_kernel.h's edit_outputs) from its sweep. */
static int group_results(const edit_pairs *pairs, const edit_params *p, edit_outputs *out, const int64_t *idx,
                         int count, int words, const edit_lane *lane, const int64_t *best, const int64_t *column,
                         const int64_t *rows, edit_lanes_kernel kernel, int lanes, lane_scratch *ws)
{
    int64_t cols = 0;
    for (int k = 0; k < count; k++)
        cols = lane[k].n > cols ? lane[k].n : cols;
    const int hw = p->mode == EDIT_HW;
    int64_t n_jobs = 0, *start = NULL;
    start_job *jobs = NULL;
    if (hw) {
        const int64_t most = p->task == EDIT_DISTANCE ? count : (cols + 1) * count;
        jobs = malloc(sizeof(start_job) * (size_t)most);
        start = malloc(sizeof(int64_t) * (size_t)most);
        if (jobs == NULL || start == NULL) {
            free(jobs);
            free(start);
            return -1;
        }
    }
    for (int k = 0; k < count; k++) {
        const int64_t i = idx[k], at = pairs->target_offsets[i] + i;
        out->distance[i] = out->t_begin[i] = out->t_end[i] = -1;
        out->n_locations[i] = out->n_cigar[i] = 0;
        if (p->k >= 0 && best[k] > p->k)
            continue;
        out->distance[i] = best[k];
        out->t_begin[i] = 0;
        out->t_end[i] = column[k];
        if (p->task == EDIT_DISTANCE) {
            if (hw && column[k] > 0)
                jobs[n_jobs++] = (start_job){k, -1, column[k]};
            continue;
        }
        int64_t n_loc = 0;
        for (int64_t j = p->mode == EDIT_NW ? lane[k].n : 0; j <= lane[k].n; j++) {
            if (p->mode != EDIT_NW && rows[j * lanes + k] != best[k]) /* NW's one end: no rows */
                continue;
            out->loc_begin[at + n_loc] = 0;
            out->loc_end[at + n_loc] = j;
            if (hw && j > 0)
                jobs[n_jobs++] = (start_job){k, n_loc, j};
            n_loc++;
        }
        out->n_locations[i] = n_loc;
    }
    int status = 0;
    if (n_jobs > 0)
        status = find_starts(lane, best, jobs, n_jobs, words, kernel, lanes, &ws->kernel, start);
    for (int64_t c = 0; status == 0 && c < n_jobs; c++) {
        const int64_t i = idx[jobs[c].lane];
        if (jobs[c].slot >= 0)
            out->loc_begin[pairs->target_offsets[i] + i + jobs[c].slot] = start[c];
        if (jobs[c].slot <= 0)
            out->t_begin[i] = start[c];
    }
    free(jobs);
    free(start);
    if (status != 0 || p->task != EDIT_PATH)
        return status;
    edit_path_job path[EDIT_MAX_LANES];
    for (int k = 0; k < count; k++) {
        const int64_t i = idx[k];
        uint32_t *cigar = out->cigar_ops + pairs->query_offsets[i] + pairs->target_offsets[i];
        path[k] = (edit_path_job){out->t_begin[i], out->t_end[i], best[k], out->distance[i] < 0 ? NULL : cigar,
                                  &out->n_cigar[i]};
    }
    return edit_lanes_path(lane, path, count, kernel, lanes, &ws->kernel, &ws->rows);
}

/* Sweeps one group of `count` pairs (idx) whose queries take `words` words. */
static int run_group(const edit_pairs *pairs, const edit_params *p, edit_outputs *out, const int64_t *idx,
                     int count, int words, edit_lanes_kernel kernel, int lanes, lane_scratch *ws)
{
    edit_lane lane[EDIT_MAX_LANES];
    int64_t best[EDIT_MAX_LANES], column[EDIT_MAX_LANES], cols = 0;
    for (int k = 0; k < count; k++) {
        const int64_t i = idx[k], qo = pairs->query_offsets[i], to = pairs->target_offsets[i];
        lane[k] = (edit_lane){pairs->query_bases + qo, pairs->target_bases + to, pairs->query_offsets[i + 1] - qo,
                              pairs->target_offsets[i + 1] - to, 0};
        cols = lane[k].n > cols ? lane[k].n : cols;
    }
    int64_t *rows = NULL;
    if (p->task != EDIT_DISTANCE && p->mode != EDIT_NW) { /* every end of the minimum is a location */
        rows = warpdp_workspace_reserve(&ws->rows, sizeof(int64_t) * (size_t)(cols + 1) * (size_t)lanes);
        if (rows == NULL)
            return -1;
    }
    const edit_sweep s = {EDIT_FIRST_MIN, words, p->mode == EDIT_HW, p->mode == EDIT_NW, 0, rows};
    if (kernel(lane, count, &s, best, column, &ws->kernel) != 0)
        return -1;
    return group_results(pairs, p, out, idx, count, words, lane, best, column, rows, kernel, lanes, ws);
}

/* The per-pair body over idx[0..count); returns the status edit_run counts (-3: refused). */
static int run_pairs(const edit_pairs *pairs, const edit_params *p, edit_outputs *out, const int64_t *idx,
                     int count, int64_t *first_bad)
{
    int failed = 0;
    for (int k = 0; k < count; k++) {
        const int64_t i = idx[k], qo = pairs->query_offsets[i], to = pairs->target_offsets[i];
        const int status = edit_pair_scalar(
            pairs->query_bases + qo, pairs->query_offsets[i + 1] - qo, pairs->target_bases + to,
            pairs->target_offsets[i + 1] - to, p, &out->distance[i], &out->t_begin[i], &out->t_end[i],
            out->loc_begin == NULL ? NULL : out->loc_begin + to + i, out->loc_end == NULL ? NULL : out->loc_end + to + i,
            &out->n_locations[i], out->cigar_ops == NULL ? NULL : out->cigar_ops + qo + to, &out->n_cigar[i]);
        if (status == -3)
            *first_bad = i < *first_bad ? i : *first_bad;
        else if (status != 0)
            failed = 1;
    }
    return failed ? -1 : 0;
}

/* The sorted pair list and its work items; returns the items' count or -1. */
static int64_t plan(const edit_pairs *pairs, const edit_params *p, int have_lanes, int lanes, int64_t *idx,
                    work_item *items)
{
    const int64_t n = pairs->n_pairs;
    uint32_t *key = malloc(sizeof(uint32_t) * (size_t)n);
    if (key == NULL)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        const int32_t words = lane_words(pairs, p, have_lanes, i);
        const int64_t length = pairs->target_offsets[i + 1] - pairs->target_offsets[i];
        key[i] = (uint32_t)words << KEY_LENGTH_BITS | (uint32_t)(words == 0 ? 0 : length);
        idx[i] = i;
    }
    const int status = sort_by_key(idx, n, key, KEY_LENGTH_BITS + 3);
    int64_t n_items = 0;
    for (int64_t k = 0; status == 0 && k < n;) {
        const uint32_t words = key[idx[k]] >> KEY_LENGTH_BITS;
        const int most = words == 0 ? SCALAR_ITEM_PAIRS : lanes;
        int32_t count = 1;
        int64_t bases = pair_bases(pairs, idx[k]);
        while (count < most && k + count < n && key[idx[k + count]] >> KEY_LENGTH_BITS == words &&
               (words > 0 || bases < SCALAR_ITEM_BASES)) {
            bases += pair_bases(pairs, idx[k + count]);
            count++;
        }
        items[n_items++] = (work_item){k, count, (int32_t)words};
        k += count;
    }
    free(key);
    return status == 0 ? n_items : -1;
}

int edit_run_lanes(const edit_pairs *pairs, const edit_params *p, edit_outputs *out, int threads,
                   edit_lanes_kernel kernel, int lanes, int64_t *first_bad)
{
    const int64_t n = pairs->n_pairs;
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)n);
    work_item *items = malloc(sizeof(work_item) * (size_t)n);
    const int64_t n_items = idx == NULL || items == NULL ? -1 : plan(pairs, p, kernel != NULL, lanes, idx, items);
    if (n_items < 0) {
        free(idx);
        free(items);
        return -1;
    }
    int failed = 0;
    int64_t bad = INT64_MAX;
    #pragma omp parallel num_threads(threads) reduction(| : failed) reduction(min : bad)
    {
        lane_scratch ws = {{NULL, 0}, {NULL, 0}};
        #pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < n_items; t++) {
            const work_item item = items[t];
            const int64_t *list = idx + item.first;
            const int status = item.words == 0 ? run_pairs(pairs, p, out, list, item.count, &bad)
                                               : run_group(pairs, p, out, list, item.count, item.words, kernel,
                                                           lanes, &ws);
            if (status != 0)
                failed = 1;
        }
        warpdp_workspace_free(&ws.kernel);
        warpdp_workspace_free(&ws.rows);
    }
    free(idx);
    free(items);
    *first_bad = bad;
    return failed ? -1 : 0;
}
