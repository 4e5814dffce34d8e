/* Scalar seed extension: the readable reference for the SIMD variants.
 *
 * The DP runs row by row over the target (i) and, inside a row, over a window [beg, end) of
 * query columns (j). One row of state is kept, as ksw_extend2 keeps it:
 *   eh_h[j] = H(i-1, j-1) on entry to cell (i, j), replaced by H(i, j-1) for the next row;
 *   eh_e[j] = E(i, j)    on entry, replaced by E(i+1, j).
 * Cells outside the window are never written, so a column that re-enters the window reads
 * whatever it last held; the answers depend on that, so every variant keeps the same rule.
 *   M(i,j) = H(i-1,j-1) + S(t_i, q_j), or 0 when H(i-1,j-1) is 0 (no fresh local start)
 *   H(i,j) = max(M, E(i,j), F(i,j))
 *   E(i+1,j) = max(E(i,j) - e_del, max(M - o_del - e_del, 0))
 *   F(i,j+1) = max(F(i,j) - e_ins, max(M - o_ins - e_ins, 0))
 */
#include <stdlib.h>
#include "seedext_kernel.h"

const uint8_t seedext_base_code[256] = {
    /* A/C/G/T and a/c/g/t -> 0..3 (rows 4 and 6), everything else -> 4 */
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 0, 4, 1, 4, 4, 4, 2, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 0, 4, 1, 4, 4, 4, 2, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
};

int32_t seedext_band(int32_t qlen, const seedext_params *p)
{
    /* The largest matrix entry, counting from 0 as BWA does. */
    const int64_t best = p->a > 0 ? p->a : 0;
    int64_t w = p->w;
    const int32_t opens[2] = {p->o_ins, p->o_del}, extends[2] = {p->e_ins, p->e_del};
    for (int k = 0; k < 2; k++) {
        /* (int)(x / e + 1.0) with C's truncation toward zero; non-positive results become 1. */
        const int64_t x = (int64_t)qlen * best + p->end_bonus - opens[k] + extends[k];
        const int64_t longest = x > 0 ? x / extends[k] : 0;
        const int64_t cap = longest > 1 ? longest : 1;
        if (w > cap)
            w = cap;
    }
    return (int32_t)w;
}

static inline int32_t max32(int32_t x, int32_t y) { return x > y ? x : y; }

int seedext_extend_scalar(const seedext_pair *pair, const seedext_params *p, seedext_result *result,
                          warpdp_workspace *ws, int64_t *cells)
{
    const int32_t qlen = pair->qlen, tlen = pair->tlen, h0 = pair->h0;
    const int32_t oe_del = p->o_del + p->e_del, oe_ins = p->o_ins + p->e_ins;
    const int32_t e_del = p->e_del, e_ins = p->e_ins;

    /* eh_h and eh_e have qlen + 2 entries (column qlen is written when a row ends there);
       the query profile holds S(c, q_j) for each target base code c. */
    const size_t n_eh = (size_t)qlen + 2;
    char *memory = warpdp_workspace_reserve(ws, 2 * n_eh * sizeof(int32_t) + 5 * (size_t)qlen + 64);
    if (memory == NULL)
        return -1;
    int32_t *eh_h = (int32_t *)memory, *eh_e = eh_h + n_eh;
    int8_t *profile = (int8_t *)(eh_e + n_eh);
    for (int c = 0; c < 5; c++)
        for (int32_t j = 0; j < qlen; j++) {
            const int qc = seedext_base_code[pair->query[j]];
            profile[(size_t)c * qlen + j] = (int8_t)(c == 4 || qc == 4 ? -1 : c == qc ? p->a : -p->b);
        }

    /* Row -1: the seed score, then an insertion run along the query. */
    eh_h[0] = h0;
    eh_e[0] = 0;
    for (int32_t j = 1; j < (int32_t)n_eh; j++) {
        const int64_t run = (int64_t)h0 - p->o_ins - (int64_t)e_ins * j;
        eh_h[j] = j <= qlen && run > 0 ? (int32_t)run : 0;
        eh_e[j] = 0;
    }
    const int32_t w = seedext_band(qlen, p);

    int32_t best = h0, best_i = -1, best_j = -1, gscore = -1, gscore_i = -1, max_off = 0;
    int32_t beg = 0, end = qlen;
    for (int32_t i = 0; i < tlen; i++) {
        if ((int64_t)beg < (int64_t)i - w)
            beg = i - w;
        if ((int64_t)end > (int64_t)i + w + 1)
            end = i + w + 1;
        if (end > qlen)
            end = qlen;
        /* H(i, beg-1): the first column is a deletion run from the seed; elsewhere 0. */
        int32_t h_left = 0;
        if (beg == 0) {
            const int64_t run = (int64_t)h0 - p->o_del - (int64_t)e_del * (i + 1);
            h_left = run > 0 ? (int32_t)run : 0;
        }
        const int8_t *score = profile + (size_t)seedext_base_code[pair->target[i]] * qlen;
        int32_t f = 0, row_max = 0, row_max_j = -1;
        if (cells != NULL && beg < end)
            *cells += end - beg;
        for (int32_t j = beg; j < end; j++) {
            const int32_t diag = eh_h[j], e = eh_e[j];
            eh_h[j] = h_left;
            const int32_t m = diag ? diag + score[j] : 0;
            const int32_t h = max32(max32(m, e), f);
            h_left = h;
            /* Ties go to the later column (selects rather than a branch: unpredictable). */
            row_max_j = h >= row_max ? j : row_max_j;
            row_max = h >= row_max ? h : row_max;
            eh_e[j] = max32(e - e_del, max32(m - oe_del, 0));
            f = max32(f - e_ins, max32(m - oe_ins, 0));
        }
        eh_h[end] = h_left;
        eh_e[end] = 0;
        /* The loop's exit column: end, or beg when the window was empty. */
        if ((beg < end ? end : beg) == qlen && h_left >= gscore) {
            gscore = h_left;
            gscore_i = i;
        }
        if (row_max == 0)
            break;
        if (row_max > best) {
            best = row_max;
            best_i = i;
            best_j = row_max_j;
            const int32_t off = abs(row_max_j - i);
            if (off > max_off)
                max_off = off;
        } else if (p->zdrop > 0) {
            /* Z-drop: the fall from the best score, less what a gap as long as the diagonal
               offset between the two cells would cost. */
            const int64_t di = (int64_t)i - best_i, dj = (int64_t)row_max_j - best_j;
            const int64_t drop = (int64_t)best - row_max;
            if (di > dj ? drop - (di - dj) * e_del > p->zdrop : drop - (dj - di) * e_ins > p->zdrop)
                break;
        }
        /* Trim columns whose H and E are both 0 off both ends of the next row's window. */
        int32_t j = beg;
        while (j < end && eh_h[j] == 0 && eh_e[j] == 0)
            j++;
        beg = j;
        j = end;
        while (j >= beg && eh_h[j] == 0 && eh_e[j] == 0)
            j--;
        end = j + 2 < qlen ? j + 2 : qlen;
    }
    result->score = best;
    result->qle = best_j + 1;
    result->tle = best_i + 1;
    result->gtle = gscore_i + 1;
    result->gscore = gscore;
    result->max_off = max_off;
    return 0;
}
