/* The edit-distance body, included once per ISA build with EDIT_PAIR naming its entry point.

   Exact: Myers' bit-vector algorithm in Hyyrö's block form (one 64-bit word per 64 query bases,
   a horizontal delta carried from block to block), which yields the last DP row D[m][0..n] in
   O(m n / 64). Locations are edlib's: every optimal end, each with the start of the longest
   optimal alignment ending there (the reversed query against the reversed target before the end,
   prefix mode, its farthest optimal end). The path is Hirschberg's recursion over the same row
   computation, so memory stays O(m + n) however long the pair.

   Tie-breaking rule of the path (the one rule of every backend): split the query at row
   floor(m/2) at the LEFTMOST target column minimising forward + backward cost; a one-base query
   aligns to its leftmost equal target base (else a substitution on the first target base), the
   other target bases are deletions; an empty query or target is all deletions or insertions.

   Windowed: Scrooge's GenASM (SENE: one bit-vector per entry; early termination: the distance
   calculation stops at the first d that reaches the window's corner). See tests/references/
   genasm.py for the rules stated step by step. */
#include <stdlib.h>
#include <string.h>
#include "edit_kernel.h"

#define OP_INS 1u
#define OP_DEL 2u
#define OP_EQ 7u
#define OP_MIS 8u

typedef struct {
    uint32_t *ops;
    int64_t n;
} cigar_buf;

/* Appends count ops, merging with the previous run of the same op. */
static inline void cigar_push(cigar_buf *c, uint32_t op, int64_t count)
{
    if (count <= 0 || c->ops == NULL) /* no CIGAR asked for: the windowed traceback still runs */
        return;
    if (c->n > 0 && (c->ops[c->n - 1] & 15u) == op)
        c->ops[c->n - 1] += (uint32_t)count << 4;
    else
        c->ops[c->n++] = (uint32_t)count << 4 | op;
}

/* row[j] = D[m][j] for j = 0..n, query q[0..m) (m >= 1) down the bits, target t[0..n) across:
   D[i][0] = i; D[0][j] = j, or 0 when free_start (HW's free target start). With k >= 0, only
   values up to k are exact (Ukkonen's cut-off: blocks whose cells all exceed k are skipped, so
   the work follows the band of cells <= k); larger ones come out as k + 1. Returns 0 or -1
   (out of memory). */
static int last_row(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, int free_start, int64_t k,
                    int64_t *row)
{
    const int64_t blocks = (m + 63) / 64;
    uint16_t map[256];
    memset(map, 0, sizeof map);
    int symbols = 0;
    for (int64_t i = 0; i < m; i++)
        if (map[q[i]] == 0)
            map[q[i]] = (uint16_t)++symbols;
    /* Symbol 0 (a target byte absent from the query) keeps an all-zero match mask. */
    const size_t words = (size_t)(symbols + 1) * (size_t)blocks + 3 * (size_t)blocks;
    uint64_t *mem = (uint64_t *)calloc(words, sizeof(uint64_t));
    if (mem == NULL)
        return -1;
    uint64_t *peq = mem, *pv = mem + (size_t)(symbols + 1) * (size_t)blocks, *mv = pv + blocks;
    int64_t *bottom = (int64_t *)(mv + blocks); /* D at each block's last row, this column */
    for (int64_t i = 0; i < m; i++)
        peq[(size_t)map[q[i]] * (size_t)blocks + (size_t)(i / 64)] |= 1ull << (i % 64);
    for (int64_t b = 0; b < blocks; b++) {
        pv[b] = ~0ull;
        bottom[b] = 64 * (b + 1) < m ? 64 * (b + 1) : m;
    }
    const int lastbit = (int)((m - 1) % 64);
    int64_t last = blocks - 1;
    if (k >= 0)
        for (last = 0; last < blocks - 1 && bottom[last] <= k;)
            last++;
    row[0] = k >= 0 && m > k ? k + 1 : m;
    for (int64_t j = 0; j < n; j++) {
        const uint64_t *eq = peq + (size_t)map[t[j]] * (size_t)blocks;
        int hin = free_start ? 0 : 1;
        for (int64_t b = 0; b <= last; b++) {
            uint64_t e = eq[b];
            const uint64_t p = pv[b], mm = mv[b];
            const uint64_t xv = e | mm;
            if (hin < 0) /* a -1 entering from above acts as a match in the block's first row */
                e |= 1ull;
            const uint64_t xh = (((e & p) + p) ^ p) | e;
            uint64_t ph = mm | ~(xh | p);
            uint64_t mh = p & xh;
            const int bit = b == blocks - 1 ? lastbit : 63;
            const int hout = (int)((ph >> bit) & 1) - (int)((mh >> bit) & 1);
            ph <<= 1;
            mh <<= 1;
            if (hin < 0)
                mh |= 1ull;
            else if (hin > 0)
                ph |= 1ull;
            pv[b] = mh | ~(xv | ph);
            mv[b] = ph & xv;
            bottom[b] += hout;
            hin = hout;
        }
        if (k >= 0) {
            /* A block whose bottom is k + 64 or more holds only cells above k. */
            while (last > 0 && bottom[last] >= k + 64)
                last--;
            /* A cell of the next block can reach k in the next column only from a bottom <= k
               (one row per column). Its values start as bottom + 1, + 2, ...: upper bounds. */
            if (last < blocks - 1 && bottom[last] <= k) {
                last++;
                pv[last] = ~0ull;
                mv[last] = 0;
                const int64_t height = last == blocks - 1 ? m - 64 * last : 64;
                bottom[last] = bottom[last - 1] + height;
            }
        }
        const int64_t value = last == blocks - 1 ? bottom[blocks - 1] : INT64_MAX;
        row[j + 1] = k >= 0 && value > k ? k + 1 : value;
    }
    free(mem);
    return 0;
}

static void reverse_copy(uint8_t *dst, const uint8_t *src, int64_t len)
{
    for (int64_t i = 0; i < len; i++)
        dst[i] = src[len - 1 - i];
}

/* Global alignment of q[0..m) with t[0..n) by Hirschberg's rule above. */
static int hirschberg(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, cigar_buf *c)
{
    if (n == 0) {
        cigar_push(c, OP_INS, m);
        return 0;
    }
    if (m == 0) {
        cigar_push(c, OP_DEL, n);
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
    int64_t *fwd = (int64_t *)malloc(sizeof(int64_t) * (size_t)(2 * (n + 1)));
    uint8_t *rev = (uint8_t *)malloc((size_t)(m - mid + n));
    if (fwd == NULL || rev == NULL) {
        free(fwd);
        free(rev);
        return -1;
    }
    int64_t *bwd = fwd + n + 1;
    reverse_copy(rev, q + mid, m - mid);
    reverse_copy(rev + (m - mid), t, n);
    int status = last_row(q, mid, t, n, 0, -1, fwd);
    if (status == 0)
        status = last_row(rev, m - mid, rev + (m - mid), n, 0, -1, bwd);
    int64_t split = 0;
    if (status == 0) {
        int64_t best = INT64_MAX;
        for (int64_t j = 0; j <= n; j++) {
            const int64_t cost = fwd[j] + bwd[n - j];
            if (cost < best) {
                best = cost;
                split = j;
            }
        }
    }
    free(fwd);
    free(rev);
    if (status != 0)
        return status;
    status = hirschberg(q, mid, t, split, c);
    if (status == 0)
        status = hirschberg(q + mid, m - mid, t + split, n - split, c);
    return status;
}

/* Start of the longest optimal alignment (distance best) of q ending at t[end]: an alignment
   with best edits spans at most m + best target bases, so only those are searched. */
static int64_t start_of(const uint8_t *rq, int64_t m, const uint8_t *t, int64_t end, int64_t best, uint8_t *rt,
                        int64_t *rrow)
{
    const int64_t span = end + 1 < m + best ? end + 1 : m + best;
    reverse_copy(rt, t + end + 1 - span, span);
    if (last_row(rq, m, rt, span, 0, best, rrow) != 0)
        return -2;
    int64_t last = 1;
    for (int64_t j = 1; j <= span; j++)
        if (rrow[j] == best)
            last = j;
    return end + 1 - last;
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
    /* SHW also counts the empty target prefix (end -1, as edlib reports it); HW's ends start at 0. */
    const int64_t first_end = p->mode == EDIT_NW ? n : (p->mode == EDIT_SHW ? 0 : 1);
    /* No distance exceeds this; without k, bounds doubling from 64 find the distance in work
       that follows it, not the full m x n. */
    const int64_t most = m > n ? m : n;
    int64_t bound = p->k >= 0 ? p->k : (most < 64 ? most : 64);
    int64_t best;
    int status;
    for (;;) {
        status = last_row(q, m, t, n, p->mode == EDIT_HW, bound >= most ? -1 : bound, row);
        if (status != 0)
            goto done;
        best = row[n];
        for (int64_t j = first_end; j <= n; j++)
            best = row[j] < best ? row[j] : best;
        if (best <= bound || p->k >= 0 || bound >= most)
            break;
        bound = 2 * bound < most ? 2 * bound : most;
    }
    if (p->k >= 0 && best > p->k)
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
        if (p->mode == EDIT_HW) {
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
        status = hirschberg(q, m, t + *t_begin, *t_end - *t_begin, &c);
        *n_cigar = c.n;
    }
done:
    free(row);
    free(rev);
    return status;
}

/* ACGT (either case) as 0..3; 4 for anything else (Scrooge takes nothing else). */
static inline int base_code(uint8_t b)
{
    switch (b & 0xDF) {
    case 'A': return 0;
    case 'C': return 1;
    case 'G': return 2;
    case 'T': return 3;
    default: return 4;
    }
}

static int windowed_pair(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const edit_params *p,
                         int64_t *distance, int64_t *t_begin, int64_t *t_end, int64_t *loc_begin, int64_t *loc_end,
                         int64_t *n_locations, uint32_t *cigar, int64_t *n_cigar)
{
    for (int64_t i = 0; i < m; i++)
        if (base_code(q[i]) == 4)
            return -3;
    for (int64_t i = 0; i < n; i++)
        if (base_code(t[i]) == 4)
            return -3;
    const int w = p->window, limit = p->window - p->overlap;
    const int stride = EDIT_MAX_WINDOW + 1;
    /* r[i * stride + d]: bit (wm-1-j) is 0 when pattern[j..wm) aligns to a prefix of text[i..wn)
       with at most d edits. */
    uint64_t r[(EDIT_MAX_WINDOW + 1) * (EDIT_MAX_WINDOW + 1)];
    cigar_buf c = {cigar, 0};
    int64_t t0 = 0, q0 = 0, total = 0;
    while (q0 < m) {
        const int wn = (int)(n - t0 < w ? n - t0 : w), wm = (int)(m - q0 < w ? m - q0 : w);
        const uint8_t *text = t + t0, *pattern = q + q0;
        uint64_t pm[4] = {~0ull, ~0ull, ~0ull, ~0ull};
        for (int j = 0; j < wm; j++)
            pm[base_code(pattern[j])] &= ~(1ull << (wm - 1 - j));
        int wed = wm; /* wm insertions always reach the corner */
        for (int d = 0; d <= wm; d++) {
            int reached = 0;
            for (int i = wn; i >= 0; i--) {
                uint64_t v;
                if (i == wn) {
                    v = d == 0 ? ~0ull : (d >= 64 ? 0ull : ~0ull << d);
                } else {
                    v = (r[(i + 1) * stride + d] << 1) | pm[base_code(text[i])];
                    if (d > 0) {
                        const uint64_t diag = r[(i + 1) * stride + d - 1];
                        v &= (diag << 1) & (r[i * stride + d - 1] << 1) & diag;
                    }
                }
                r[i * stride + d] = v;
                if (i == 0 && !((v >> (wm - 1)) & 1))
                    reached = 1;
            }
            if (reached) { /* early termination */
                wed = d;
                break;
            }
        }
        int i = 0, j = 0, d = wed;
#define ZERO_AT(I, D, J) (!((r[(I) * stride + (D)] >> (wm - 1 - (J))) & 1))
        while (j < wm && i < limit && j < limit) {
            int can_ins, can_del, can_sub;
            if (j < wm - 1) {
                can_ins = d > 0 && ZERO_AT(i, d - 1, j + 1);
                can_del = d > 0 && i < wn && ZERO_AT(i + 1, d - 1, j);
                can_sub = d > 0 && i < wn && ZERO_AT(i + 1, d - 1, j + 1);
            } else {
                can_ins = d > 0;
                can_del = 0;
                can_sub = d > 0 && i < wn;
            }
            if (can_ins) {
                cigar_push(&c, OP_INS, 1);
                j++;
                d--;
            } else if (can_del) {
                cigar_push(&c, OP_DEL, 1);
                i++;
                d--;
            } else if (can_sub) {
                cigar_push(&c, OP_MIS, 1);
                i++;
                j++;
                d--;
            } else {
                cigar_push(&c, OP_EQ, 1);
                i++;
                j++;
            }
        }
#undef ZERO_AT
        total += wed - d;
        t0 += i;
        q0 += j;
    }
    *n_locations = 0;
    *n_cigar = 0;
    if (p->k >= 0 && total > p->k) {
        *distance = *t_begin = *t_end = -1;
        return 0;
    }
    *distance = total;
    *t_begin = 0;
    *t_end = t0;
    if (p->task != EDIT_DISTANCE) {
        loc_begin[0] = 0;
        loc_end[0] = t0;
        *n_locations = 1;
    }
    if (p->task == EDIT_PATH)
        *n_cigar = c.n;
    return 0;
}

int EDIT_PAIR(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const edit_params *p, int64_t *distance,
              int64_t *t_begin, int64_t *t_end, int64_t *loc_begin, int64_t *loc_end, int64_t *n_locations,
              uint32_t *cigar, int64_t *n_cigar)
{
    if (p->method == EDIT_WINDOWED)
        return windowed_pair(q, m, t, n, p, distance, t_begin, t_end, loc_begin, loc_end, n_locations, cigar,
                             n_cigar);
    return exact_pair(q, m, t, n, p, distance, t_begin, t_end, loc_begin, loc_end, n_locations, cigar, n_cigar);
}
