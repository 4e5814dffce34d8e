/* The exact method of the edit body (included by edit_body.h after cigar_push): distance
   passes, locations and Hirschberg's path over edit_rows.h's last rows. Without k, a first pass
   with a small bound either proves the distance or tells how far its band got, and the next
   bound extrapolates from that (a value of a band is also an alignment's cost, so a bound that
   surely proves the distance). */
#include "edit_rows.h"

/* Hirschberg's columns of short problems kept on the stack. */
#define EDIT_STACK_COLUMNS 256
/* Headroom of an extrapolated bound over the growth seen so far. */
#define GUESS_MARGIN 1.1

static void reverse_copy(uint8_t *dst, const uint8_t *src, int64_t len)
{
    for (int64_t i = 0; i < len; i++)
        dst[i] = src[len - 1 - i];
}

/* Global alignment of q[0..m) with t[0..n), whose distance is cost, by Hirschberg's rule (see
   edit_body.h). Each half's band uses cost as its bound: an optimal split's cells are exact
   and every other sum stays above cost, so the split is the unbanded one. */
static int hirschberg(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, int64_t cost, cigar_buf *c)
{
    if (n == 0) {
        cigar_push(c, OP_INS, m);
        return 0;
    }
    if (m == 0) {
        cigar_push(c, OP_DEL, n);
        return 0;
    }
    if (m == n && cost <= 1) {
        /* The one alignment of that cost (any other has an indel pair): matches, at most one
           substitution; the rule can only pick it. */
        int64_t at = 0;
        while (at < m && q[at] == t[at])
            at++;
        cigar_push(c, OP_EQ, at);
        if (at < m) {
            cigar_push(c, OP_MIS, 1);
            cigar_push(c, OP_EQ, m - at - 1);
        }
        return 0;
    }
    if (m == 1) {
        int64_t at = 0;
        while (at < n && t[at] != q[0])
            at++;
        if (at < n) {
            cigar_push(c, OP_DEL, at);
            cigar_push(c, OP_EQ, 1);
            cigar_push(c, OP_DEL, n - at - 1);
        } else {
            cigar_push(c, OP_MIS, 1);
            cigar_push(c, OP_DEL, n - 1);
        }
        return 0;
    }
    const int64_t mid = m / 2;
    int64_t small_rows[2 * (EDIT_STACK_COLUMNS + 1)];
    uint8_t small_bases[2 * EDIT_STACK_COLUMNS];
    const int on_stack = n <= EDIT_STACK_COLUMNS && m <= EDIT_STACK_COLUMNS;
    int64_t *fwd = on_stack ? small_rows : (int64_t *)malloc(sizeof(int64_t) * (size_t)(2 * (n + 1)));
    uint8_t *rev = on_stack ? small_bases : (uint8_t *)malloc((size_t)(m - mid + n));
    if (fwd == NULL || rev == NULL) {
        if (!on_stack) {
            free(fwd);
            free(rev);
        }
        return -1;
    }
    int64_t *bwd = fwd + n + 1;
    reverse_copy(rev, q + mid, m - mid);
    reverse_copy(rev + (m - mid), t, n);
    const band_rule forward = {cost, m - mid, 0, 0}, backward = {cost, mid, 0, 0};
    int status = last_row(q, mid, t, n, &forward, fwd) < 0 ? -1 : 0;
    if (status == 0)
        status = last_row(rev, m - mid, rev + (m - mid), n, &backward, bwd) < 0 ? -1 : 0;
    int64_t split = 0, best = INT64_MAX;
    if (status == 0)
        for (int64_t j = 0; j <= n; j++) {
            const int64_t sum = fwd[j] + bwd[n - j];
            if (sum < best) {
                best = sum;
                split = j;
            }
        }
    const int64_t upper = status == 0 ? fwd[split] : 0, lower = status == 0 ? bwd[n - split] : 0;
    if (!on_stack) {
        free(fwd);
        free(rev);
    }
    if (status != 0)
        return status;
    status = hirschberg(q, mid, t, split, upper, c);
    if (status == 0)
        status = hirschberg(q + mid, m - mid, t + split, n - split, lower, c);
    return status;
}

/* Start of the longest optimal alignment (distance best) of q ending at t[end]: an alignment
   with best edits spans at most m + best target bases, so only those are searched. */
static int64_t start_of(const uint8_t *rq, int64_t m, const uint8_t *t, int64_t end, int64_t best, uint8_t *rt,
                        int64_t *rrow)
{
    const int64_t span = end + 1 < m + best ? end + 1 : m + best;
    reverse_copy(rt, t + end + 1 - span, span);
    const band_rule prefix = {best, 0, 0, 1};
    if (last_row(rq, m, rt, span, &prefix, rrow) < 0)
        return -2;
    int64_t last = 1;
    for (int64_t j = 1; j <= span; j++)
        if (rrow[j] == best)
            last = j;
    return end + 1 - last;
}

/* The next bound after a pass with bound `bound` whose band emptied at column `emptied` (a
   guess: any bound is exact once it reaches the distance). The cost along the best alignment
   grows about linearly, so the guess extrapolates it to the last column with a margin: from the
   previous failed pass when there was one, else from the lower bound at the origin (the length
   difference's gaps may come first, so their columns do not count). */
static int64_t next_bound(int64_t bound, int64_t emptied, int64_t before, int64_t emptied_before, int64_t origin,
                          int64_t n)
{
    double rate;
    int64_t from = bound, at = emptied;
    if (before >= 0 && emptied > emptied_before) {
        rate = (double)(bound - before) / (double)(emptied - emptied_before);
    } else {
        const int64_t lag = emptied - origin > emptied / 2 ? emptied - origin : emptied / 2;
        rate = (double)(bound - origin) / (double)(lag > 0 ? lag : 1);
        from = origin;
        at = 0;
    }
    /* A band that emptied within the first eighth may have met a costly start (a flank)
       rather than a high rate: at most 4 times the bound then, and later passes tell. */
    const double guess = (double)from + rate * (double)(n - at) * GUESS_MARGIN + 32;
    const double most = emptied < n / 8 ? 4.0 * (double)bound : (double)INT64_MAX / 8;
    return guess > (double)(bound + 32) ? (int64_t)(guess < most ? guess : most) : bound + 32;
}

/* The distance passes of exact_pair: row gets the last row under a bound that proves the
   distance (k when given); *best is the distance, or above k. */
static int distance_passes(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const edit_params *p,
                           int64_t first_end, int64_t *row, int64_t *best)
{
    /* No distance exceeds most, so a bound of most always proves the distance. */
    const int64_t most = m > n ? m : n;
    band_rule rule = {0, 0, p->mode == EDIT_HW, p->mode != EDIT_NW};
    const int64_t origin = rest_cost(m - n, rule.free_end);
    /* The first bound: about 1.5% of the query over the lower bound, below long reads' usual
       error rates, so when it fails it fails early yet far enough in to extrapolate from. */
    const int64_t start = origin + (m / 64 > 64 ? m / 64 : 64);
    int64_t bound = p->k >= 0 ? (p->k < most ? p->k : most) : (start < most ? start : most);
    int64_t before = -1, emptied_before = 0;
    for (;;) {
        rule.k = bound;
        const int64_t emptied = last_row(q, m, t, n, &rule, row);
        if (emptied < 0)
            return -1;
        *best = row[n];
        for (int64_t j = first_end; j <= n; j++)
            *best = row[j] < *best ? row[j] : *best;
        if (*best <= bound || p->k >= 0 || unbanded(m)) /* every value exact */
            return 0;
        int64_t next = emptied <= n ? next_bound(bound, emptied, before, emptied_before, origin, n) : 2 * bound;
        /* A value in the band is an alignment's cost, a bound that surely proves the distance. */
        next = *best < next ? *best : next;
        before = bound;
        emptied_before = emptied;
        bound = next < most ? next : most;
    }
}

static int exact_pair(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const edit_params *p,
                      int64_t *distance, int64_t *t_begin, int64_t *t_end, int64_t *loc_begin, int64_t *loc_end,
                      int64_t *n_locations, uint32_t *cigar, int64_t *n_cigar)
{
    *n_locations = 0;
    *n_cigar = 0;
    *distance = -1;
    *t_begin = *t_end = -1;
    if (p->mode == EDIT_NW && p->k >= 0 && (m > n ? m - n : n - m) > p->k)
        return 0; /* the length difference alone exceeds k */
    int64_t *row = (int64_t *)malloc(sizeof(int64_t) * (size_t)(2 * (n + 1) + m));
    uint8_t *rev = (uint8_t *)malloc((size_t)(m + n + 1));
    if (row == NULL || rev == NULL) {
        free(row);
        free(rev);
        return -1;
    }
    int64_t *rrow = row + n + 1;
    uint8_t *rq = rev, *rt = rev + m;
    /* SHW and HW also count the empty target prefix (end -1, as edlib reports it: for HW only
       when the distance is m, all insertions, and its start is 0). */
    const int64_t first_end = p->mode == EDIT_NW ? n : 0;
    int64_t best;
    int status = distance_passes(q, m, t, n, p, first_end, row, &best);
    if (status != 0 || (p->k >= 0 && best > p->k))
        goto done;
    *distance = best;
    reverse_copy(rq, q, m);
    int64_t count = 0;
    /* Ends in increasing order; all of them only when asked for locations or a path. */
    for (int64_t j = first_end; j <= n; j++) {
        if (row[j] != best)
            continue;
        const int64_t end = j - 1;
        int64_t start = 0;
        if (p->mode == EDIT_HW && end >= 0) {
            start = start_of(rq, m, t, end, best, rt, rrow);
            if (start < -1) {
                status = -1;
                goto done;
            }
        }
        if (count == 0) {
            *t_begin = start;
            *t_end = end + 1;
        }
        if (p->task == EDIT_DISTANCE) {
            count = 1;
            break;
        }
        loc_begin[count] = start;
        loc_end[count] = end + 1;
        count++;
    }
    if (p->task != EDIT_DISTANCE)
        *n_locations = count;
    if (p->task == EDIT_PATH) {
        cigar_buf c = {cigar, 0};
        status = hirschberg(q, m, t + *t_begin, *t_end - *t_begin, best, &c);
        *n_cigar = c.n;
    }
done:
    free(row);
    free(rev);
    return status;
}
