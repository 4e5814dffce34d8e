/* Body of one X-drop extension kernel, included once per (variant, cell type): scalar int64,
 * AVX2 int16/int32, AVX-512 int16/int32. Only the computation of the cells of one
 * anti-diagonal differs between them; the windows, the edges, the stopping rule and what is
 * reported are this one piece of code, so all of them agree exactly.
 *
 * The includer defines:
 *   KERNEL_NAME   the function to define (signature of xdrop_extend_scalar); KERNEL_NAME##_two
 *                 is defined too: two independent extensions advanced in turns (see below)
 *   CELL, UNDEF   the cell type and its "undefined" (dropped) value
 *   COMPUTE_DIAGONAL(a3, a2, a1, q, t_rev, t_shift, lo, hi, thr, lo_edge, hi_edge, consts,
 *                    &next_min, &next_max)
 *                 computes anti-diagonal d over its window of columns [lo, hi] into a3:
 *                   a3[lo] = lo_edge, a3[hi] = hi_edge, and for lo < c < hi
 *                   v = max(max(a2[c-1], a2[c]) + gap, a1[c-1] + (q[c-1] == t_rev[t_shift+c] ? match : mismatch))
 *                   a3[c] = v < thr ? UNDEF : v
 *                 and returns the largest v kept (UNDEF when none). It may also write UNDEF to
 *                 columns outside the window, within one block of it (never read afterwards).
 *                 It also shrinks the window for the next anti-diagonal as SeqAn does (a2's
 *                 window contains [lo, hi - 1]):
 *                   next_min = the first c in (lo, hi] with a3[c] or a2[c-1] defined, else hi + 1;
 *                   next_max = 2 + the last c in [lo, hi) with a3[c] or a2[c] defined, else lo + 1.
 *   CONSTS, MAKE_CONSTS(p)   whatever COMPUTE_DIAGONAL needs (broadcast scores).
 *   BLOCK_CELLS   (optional, default 16) the widest vector block in cells: buffers are aligned
 *                 to it and readable for one block before column 0.
 *   KERNEL_LINKAGE   (optional) e.g. static, for KERNEL_NAME.
 *
 * Semantics are those of SeqAn 2's _extendSeedGappedXDropOneDirection (see docs/semantics.md), with
 * columns indexing the arrays directly instead of SeqAn's per-diagonal offsets.
 */
#ifndef BLOCK_CELLS
#define BLOCK_CELLS 16
#endif
#ifndef KERNEL_LINKAGE
#define KERNEL_LINKAGE
#endif
#define XD_PASTE(a, b) a##b
#define XD_NAME(a, b) XD_PASTE(a, b)
#define STATE XD_NAME(KERNEL_NAME, _state)

/* One extension in progress. */
typedef struct {
    const uint8_t *q, *t_rev;
    int64_t m, n;
    CELL *a1, *a2, *a3;                    /* anti-diagonals d-2, d-1, d */
    int64_t lo1, hi1, lo2, hi2, lo3, hi3;  /* their windows */
    int64_t min_col, max_col;              /* columns to compute on the next one: [min, max) */
    int64_t d, best, cells;
    int64_t best_col, best_row;            /* best mode: the first cell reaching `best` */
} STATE;

/* Elements of DP buffer one extension with a query of m bases needs. */
static inline size_t XD_NAME(KERNEL_NAME, _cells)(int64_t m)
{
    const int64_t stride = (m + 2 + XDROP_PAD + BLOCK_CELLS - 1) & ~(int64_t)(BLOCK_CELLS - 1);
    return 3 * (size_t)stride + BLOCK_CELLS;
}

/* Starts an extension in `buffer` (of _cells(m) elements, aligned to a block). Returns 0 when
   there is nothing to extend into (an empty flank: SeqAn leaves that side of the seed as it is). */
static inline int XD_NAME(KERNEL_NAME, _start)(STATE *s, const uint8_t *q, int64_t m, const uint8_t *t_rev,
                                               int64_t n, const xdrop_params *p, CELL *buffer)
{
    *s = (STATE){.q = q, .t_rev = t_rev, .m = m, .n = n, .d = 1};
    if (m == 0 || n == 0)
        return 0;
    const int64_t stride = (m + 2 + XDROP_PAD + BLOCK_CELLS - 1) & ~(int64_t)(BLOCK_CELLS - 1);
    s->a1 = buffer + BLOCK_CELLS;
    s->a2 = s->a1 + stride;
    s->a3 = s->a2 + stride;
    /* Anti-diagonal 0 is the origin; anti-diagonal 1 the two gap cells, dropped when -gap > x. */
    s->lo1 = s->hi1 = s->lo2 = s->hi2 = s->lo3 = 0;
    s->hi3 = 1;
    s->a2[0] = 0;
    s->a3[0] = s->a3[1] = (-p->gap > p->x) ? UNDEF : (CELL)p->gap;
    s->min_col = 1;
    s->max_col = 2;
    return 1;
}

/* Computes the next anti-diagonal; returns whether the extension goes on. */
static inline int XD_NAME(KERNEL_NAME, _step)(STATE *s, const xdrop_params *p, const CONSTS *consts)
{
    const int64_t d = ++s->d, min_col = s->min_col, max_col = s->max_col;
    CELL *recycled = s->a1;
    s->a1 = s->a2;
    s->a2 = s->a3;
    s->a3 = recycled;
    s->lo1 = s->lo2;
    s->hi1 = s->hi2;
    s->lo2 = s->lo3;
    s->hi2 = s->hi3;
    const int64_t lo = s->lo3 = min_col - 1, hi = s->hi3 = max_col;

    /* Cells below best - x (best of the earlier anti-diagonals) are dropped. The window's
       edges are undefined, except on the first row/column while d * gap > best - x. */
    const int64_t thr = s->best - p->x;
    int64_t edge;
    const int edge_kept = !__builtin_mul_overflow(d, p->gap, &edge) && edge > thr;
    const CELL lo_edge = edge_kept && lo == 0 ? (CELL)edge : UNDEF;
    const CELL hi_edge = edge_kept && hi == d ? (CELL)edge : UNDEF;
    int64_t next_min, next_max;
    const CELL dmax = COMPUTE_DIAGONAL(s->a3, s->a2, s->a1, s->q, s->t_rev, s->n - d, lo, hi, (CELL)thr, lo_edge,
                                       hi_edge, *consts, &next_min, &next_max);
    s->cells += max_col - min_col;

    if (p->best_mode && (int64_t)dmax > s->best) {
        int64_t c = min_col;
        while (s->a3[c] != dmax)
            c++;
        s->best_col = c;
        s->best_row = d - c;
    }
    /* dmax > best is hard to predict: a max, not a branch. UNDEF < 0 <= best. */
    s->best = (int64_t)dmax > s->best ? (int64_t)dmax : s->best;

    /* The window shrinks past cells whose successors would all be dropped (next_min/max),
       and stays inside the matrix (rows r = d + 1 - c <= n, columns c <= m). */
    s->min_col = next_min < d + 1 - s->n ? d + 1 - s->n : next_min;
    s->max_col = next_max > s->m + 1 ? s->m + 1 : next_max;
    return s->min_col < s->max_col;
}

static inline void XD_NAME(KERNEL_NAME, _finish)(const STATE *s, const xdrop_params *p, xdrop_result *res)
{
    res->cells = s->cells;
    res->score = res->ext_v = res->ext_h = 0;
    if (s->m == 0 || s->n == 0)
        return;
    if (p->best_mode) {
        res->score = s->best;
        res->ext_v = s->best_col;
        res->ext_h = s->best_row;
        return;
    }
    /* SeqAn's "longest extension": the last cell of the last anti-diagonal (both ends reached),
       else the last or second-last cell of the one before (the end of q or of t reached), else
       the best cell of the anti-diagonal before that (first in column order). */
    const int64_t d = s->d;
    int64_t col = s->hi3 - 1, row = d - col;
    CELL score = s->a3[col];
    if (score == UNDEF) {
        if (s->a2[s->hi2 - 1] != UNDEF) {
            col = s->hi2 - 1;
            row = d - 1 - col;
            score = s->a2[col];
        } else if (s->hi2 - s->lo2 + 1 > 2 && s->a2[s->hi2 - 2] != UNDEF) {
            col = s->hi2 - 2;
            row = d - 1 - col;
            score = s->a2[col];
        }
    }
    if (score == UNDEF) {
        for (int64_t c = s->lo1; c <= s->hi1; c++) {
            if (s->a1[c] > score) {
                score = s->a1[c];
                col = c;
                row = d - 2 - c;
            }
        }
    }
    if (score == UNDEF) {
        /* Nothing defined where SeqAn looks (possible with mismatch < gap, e.g. 3/-6/-5: a lone
           cell reached diagonally past a dropped anti-diagonal). SeqAn then leaves the seed
           unchanged and returns its int32 "undefined" as the score; we leave it unchanged too
           and score the empty extension 0. */
        score = 0;
        col = row = 0;
    }
    res->score = score;
    res->ext_v = col;
    res->ext_h = row;
}

KERNEL_LINKAGE int KERNEL_NAME(const uint8_t *q, int64_t m, const uint8_t *t_rev, int64_t n,
                               const xdrop_params *p, xdrop_result *res, warpdp_workspace *ws)
{
    CELL *buffer = warpdp_workspace_reserve(ws, sizeof(CELL) * XD_NAME(KERNEL_NAME, _cells)(m));
    if (buffer == NULL)
        return -1;
    const CONSTS consts = MAKE_CONSTS(p);
    STATE s;
    if (XD_NAME(KERNEL_NAME, _start)(&s, q, m, t_rev, n, p, buffer))
        while (XD_NAME(KERNEL_NAME, _step)(&s, p, &consts))
            ;
    XD_NAME(KERNEL_NAME, _finish)(&s, p, res);
    return 0;
}

/* Two independent extensions (the two directions of a seed) advanced one anti-diagonal each in
   turn: each anti-diagonal depends on the one before through a chain of latencies (the best
   score, the window), and interleaving two chains lets the core overlap them. */
__attribute__((unused)) static int XD_NAME(KERNEL_NAME, _two)(const uint8_t *q0, int64_t m0, const uint8_t *t_rev0, int64_t n0,
                                      const uint8_t *q1, int64_t m1, const uint8_t *t_rev1, int64_t n1,
                                      const xdrop_params *p, xdrop_result *res0, xdrop_result *res1,
                                      warpdp_workspace *ws)
{
    const size_t cells0 = XD_NAME(KERNEL_NAME, _cells)(m0);
    CELL *buffer = warpdp_workspace_reserve(ws, sizeof(CELL) * (cells0 + XD_NAME(KERNEL_NAME, _cells)(m1)));
    if (buffer == NULL)
        return -1;
    const CONSTS consts = MAKE_CONSTS(p);
    STATE s0, s1;
    int live0 = XD_NAME(KERNEL_NAME, _start)(&s0, q0, m0, t_rev0, n0, p, buffer);
    int live1 = XD_NAME(KERNEL_NAME, _start)(&s1, q1, m1, t_rev1, n1, p, buffer + cells0);
    while (live0 && live1) {
        live0 = XD_NAME(KERNEL_NAME, _step)(&s0, p, &consts);
        live1 = XD_NAME(KERNEL_NAME, _step)(&s1, p, &consts);
    }
    while (live0)
        live0 = XD_NAME(KERNEL_NAME, _step)(&s0, p, &consts);
    while (live1)
        live1 = XD_NAME(KERNEL_NAME, _step)(&s1, p, &consts);
    XD_NAME(KERNEL_NAME, _finish)(&s0, p, res0);
    XD_NAME(KERNEL_NAME, _finish)(&s1, p, res1);
    return 0;
}

#undef STATE
#undef XD_NAME
#undef XD_PASTE
#undef KERNEL_LINKAGE
#undef BLOCK_CELLS
