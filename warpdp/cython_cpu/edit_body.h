/* The edit-distance body, included once per ISA build with EDIT_PAIR and EDIT_PATH_ENTRY naming its
   entry points.

   Exact (edit_exact.h): Myers' bit-vector algorithm in Hyyrö's block form (one 64-bit word per
   64 query bases, a horizontal delta carried from block to block), which yields the last DP row
   D[m][0..n], computing only the blocks of a band that can hold an alignment within a bound (see
   edit_exact.h). Locations are edlib's: every optimal end, each with the start of the longest
   optimal alignment ending there (the reversed query against the reversed target before the end,
   prefix mode, its farthest optimal end). The path is Hirschberg's recursion over the same row
   computation, banded by each half's known cost, so memory stays O(m + n) however long the pair.

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

#include "edit_exact.h"

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

int EDIT_PATH_ENTRY(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, int64_t cost, uint32_t *cigar,
                    int64_t *n_cigar)
{
    cigar_buf c = {cigar, 0};
    const int status = hirschberg(q, m, t, n, cost, &c);
    *n_cigar = c.n;
    return status;
}
