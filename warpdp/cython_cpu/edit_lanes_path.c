/* The path of a group of lane pairs: Hirschberg's recursion of the per-pair body (edit_exact.h)
   run breadth first, so that the last rows of every pair's halves at one depth are swept side by
   side in the lanes (forward halves in one kind of sweep, reversed halves in another, each
   grouped by query words). A split is the per-pair body's (leftmost minimum of forward plus
   backward at query row floor(m/2); the sweeps' rows are exact, as the banded ones are on every
   optimal split), so every subproblem is the one the per-pair recursion meets, and a small one
   (or one of its base cases) is handed to edit_path_scalar whole: the same ops, merged at the
   seams as its own runs would be. */
#include <stdlib.h>
#include <string.h>
#include "cpu_common.h"
#include "edit_kernel.h"

/* Subproblems with queries up to this long go to edit_path_scalar (a row of one word). */
#define PATH_LEAF_QUERY 16

typedef struct {
    int32_t lane;
    int64_t q_at, m, t_at, n, cost;
} segment;

/* A subproblem the lanes split no further: a base case of the recursion or a short query. */
static int is_leaf(const segment *s)
{
    return s->n == 0 || s->m <= PATH_LEAF_QUERY || (s->m == s->n && s->cost <= 1);
}

/* The half-rows of one depth: job 2s is segment s's forward upper half, 2s + 1 its reversed
   lower half; rows[at[job] .. at[job] + n] their last rows. Swept `lanes` at a time, one kind
   and word count per sweep. */
static int sweep_halves(const edit_lane *lane, const segment *seg, int64_t n_seg, int64_t *at, int64_t *rows,
                        edit_lanes_kernel kernel, int lanes, warpdp_workspace *ws, warpdp_workspace *row_ws)
{
    for (int reverse = 0; reverse < 2; reverse++)
        for (int words = 1; words <= EDIT_LANE_WORDS; words++) {
            edit_lane half[EDIT_MAX_LANES];
            int64_t job[EDIT_MAX_LANES], value[EDIT_MAX_LANES], column[EDIT_MAX_LANES];
            int count = 0;
            for (int64_t s = 0; s <= n_seg; s++) {
                if (s < n_seg && !is_leaf(&seg[s])) {
                    const segment *g = &seg[s];
                    const int64_t mid = g->m / 2, m = reverse ? g->m - mid : mid;
                    if ((m + 63) / 64 == words) {
                        const uint8_t *q = lane[g->lane].q + g->q_at + (reverse ? mid : 0);
                        half[count] = (edit_lane){q, lane[g->lane].t + g->t_at, m, g->n, 0};
                        job[count++] = 2 * s + reverse;
                    }
                }
                if (count == 0 || (count < lanes && s < n_seg))
                    continue;
                int64_t cols = 0;
                for (int c = 0; c < count; c++)
                    cols = half[c].n > cols ? half[c].n : cols;
                int64_t *out = warpdp_workspace_reserve(row_ws, sizeof(int64_t) * (size_t)(cols + 1) * (size_t)lanes);
                const edit_sweep sweep = {EDIT_FIRST_MIN, words, 0, 1, reverse, out};
                if (out == NULL || kernel(half, count, &sweep, value, column, ws) != 0)
                    return -1;
                for (int c = 0; c < count; c++)
                    for (int64_t j = 0; j <= half[c].n; j++)
                        rows[at[job[c]] + j] = out[j * lanes + c];
                count = 0;
            }
        }
    return 0;
}

/* Replaces every segment that is no leaf by its two halves at the per-pair body's split;
   returns the new count (into next) or -1. */
static int64_t split_all(const edit_lane *lane, const segment *seg, int64_t n_seg, segment *next,
                         edit_lanes_kernel kernel, int lanes, warpdp_workspace *ws, warpdp_workspace *row_ws)
{
    int64_t *at = malloc(sizeof(int64_t) * (size_t)(2 * n_seg + 1));
    int64_t total = 0;
    for (int64_t s = 0; at != NULL && s < n_seg; s++) {
        at[2 * s] = total;
        total += is_leaf(&seg[s]) ? 0 : seg[s].n + 1;
        at[2 * s + 1] = total;
        total += is_leaf(&seg[s]) ? 0 : seg[s].n + 1;
    }
    int64_t *rows = at == NULL ? NULL : malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
    if (rows == NULL || sweep_halves(lane, seg, n_seg, at, rows, kernel, lanes, ws, row_ws) != 0) {
        free(at);
        free(rows);
        return -1;
    }
    int64_t n_next = 0;
    for (int64_t s = 0; s < n_seg; s++) {
        const segment *g = &seg[s];
        if (is_leaf(g)) {
            next[n_next++] = *g;
            continue;
        }
        const int64_t *fwd = rows + at[2 * s], *bwd = rows + at[2 * s + 1], mid = g->m / 2;
        int64_t split = 0, best = INT64_MAX;
        for (int64_t j = 0; j <= g->n; j++)
            if (fwd[j] + bwd[g->n - j] < best) {
                best = fwd[j] + bwd[g->n - j];
                split = j;
            }
        next[n_next++] = (segment){g->lane, g->q_at, mid, g->t_at, split, fwd[split]};
        next[n_next++] = (segment){g->lane, g->q_at + mid, g->m - mid, g->t_at + split, g->n - split,
                                   bwd[g->n - split]};
    }
    free(at);
    free(rows);
    return n_next;
}

/* Appends a leaf's ops to a pair's CIGAR, merging the seam's runs as one recursion would. */
static int append_leaf(const edit_lane *l, const segment *g, uint32_t *cigar, int64_t *n_cigar)
{
    int64_t added;
    if (edit_path_scalar(l->q + g->q_at, g->m, l->t + g->t_at, g->n, g->cost, cigar + *n_cigar, &added) != 0)
        return -1;
    if (*n_cigar > 0 && added > 0 && (cigar[*n_cigar - 1] & 15u) == (cigar[*n_cigar] & 15u)) {
        cigar[*n_cigar - 1] += cigar[*n_cigar] & ~15u;
        memmove(cigar + *n_cigar, cigar + *n_cigar + 1, sizeof(uint32_t) * (size_t)(added - 1));
        added--;
    }
    *n_cigar += added;
    return 0;
}

int edit_lanes_path(const edit_lane *lane, const edit_path_job *path, int count, edit_lanes_kernel kernel,
                    int lanes, warpdp_workspace *ws, warpdp_workspace *row_ws)
{
    int64_t n_seg = 0, room = 0;
    for (int k = 0; k < count; k++)
        if (path[k].cigar != NULL)
            room += lane[k].m + 1; /* a segment has a query base at least; a leaf may sit beside */
    segment *seg = malloc(sizeof(segment) * (size_t)(2 * room + 1));
    segment *next = malloc(sizeof(segment) * (size_t)(2 * room + 1));
    int status = seg == NULL || next == NULL ? -1 : 0;
    for (int k = 0; status == 0 && k < count; k++)
        if (path[k].cigar != NULL)
            seg[n_seg++] = (segment){k, 0, lane[k].m, path[k].t_begin, path[k].t_end - path[k].t_begin,
                                     path[k].cost};
    for (;;) {
        int64_t splits = 0;
        for (int64_t s = 0; status == 0 && s < n_seg; s++)
            splits += !is_leaf(&seg[s]);
        if (status != 0 || splits == 0)
            break;
        const int64_t n_next = split_all(lane, seg, n_seg, next, kernel, lanes, ws, row_ws);
        if (n_next < 0) {
            status = -1;
            break;
        }
        segment *swap = seg;
        seg = next;
        next = swap;
        n_seg = n_next;
    }
    for (int k = 0; k < count; k++)
        if (path[k].cigar != NULL)
            *path[k].n_cigar = 0;
    for (int64_t s = 0; status == 0 && s < n_seg; s++)
        status = append_leaf(&lane[seg[s].lane], &seg[s], path[seg[s].lane].cigar, path[seg[s].lane].n_cigar);
    free(seg);
    free(next);
    return status;
}
