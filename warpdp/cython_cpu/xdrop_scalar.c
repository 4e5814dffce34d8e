/* The readable reference variant: int64 cells, one cell at a time. It handles every input
   (any scores, any x, any length); the vector variants fall back to it when a pair's values
   might not fit their int32 lanes. */
#include "xdrop_kernel.h"

typedef struct {
    int64_t match, mismatch, gap;
} scalar_consts;

static inline scalar_consts make_scalar_consts(const xdrop_params *p)
{
    scalar_consts k = {p->match, p->mismatch, p->gap};
    return k;
}

static inline int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Undefined cells are very negative (XDROP_UNDEF64), so adding a score to them cannot
   overflow and the result stays below any threshold best - x >= -2^62: they simply lose. */
static inline int64_t compute_diagonal_scalar(int64_t *a3, const int64_t *a2, const int64_t *a1,
                                              const uint8_t *q, const uint8_t *t_rev, int64_t t_shift,
                                              int64_t lo, int64_t hi, int64_t thr, int64_t lo_edge,
                                              int64_t hi_edge, scalar_consts k, int64_t *next_min,
                                              int64_t *next_max)
{
    int64_t dmax = XDROP_UNDEF64;
    a3[lo] = lo_edge;
    a3[hi] = hi_edge;
    for (int64_t c = lo + 1; c < hi; c++) {
        const int64_t s = q[c - 1] == t_rev[t_shift + c] ? k.match : k.mismatch;
        const int64_t v = max64(max64(a2[c - 1], a2[c]) + k.gap, a1[c - 1] + s);
        if (v < thr) {
            a3[c] = XDROP_UNDEF64;
        } else {
            a3[c] = v;
            dmax = max64(dmax, v);
        }
    }
    /* SeqAn's loops: move the window's ends inwards past cells whose successors on the next
       anti-diagonal (which depend on a3[c-1], a3[c] and a2[c-1]) are all undefined. */
    int64_t c = lo + 1;
    while (c <= hi && a3[c] == XDROP_UNDEF64 && a2[c - 1] == XDROP_UNDEF64)
        c++;
    *next_min = c;
    c = hi;
    while (c > lo && a3[c - 1] == XDROP_UNDEF64 && a2[c - 1] == XDROP_UNDEF64)
        c--;
    *next_max = c + 1;
    return dmax;
}

#define KERNEL_NAME xdrop_extend_scalar
#define CELL int64_t
#define UNDEF XDROP_UNDEF64
#define CONSTS scalar_consts
#define MAKE_CONSTS(p) make_scalar_consts(p)
#define COMPUTE_DIAGONAL compute_diagonal_scalar
#include "xdrop_body.h"

int xdrop_extend2_scalar(const uint8_t *q0, int64_t m0, const uint8_t *t_rev0, int64_t n0,
                         const uint8_t *q1, int64_t m1, const uint8_t *t_rev1, int64_t n1,
                         const xdrop_params *p, xdrop_result *res0, xdrop_result *res1, warpdp_workspace *ws)
{
    return xdrop_extend_scalar_two(q0, m0, t_rev0, n0, q1, m1, t_rev1, n1, p, res0, res1, ws);
}
