/* AVX-512 variant: 16 int32 cells per 512-bit vector along the anti-diagonal, or 16 int16 cells
   per 256-bit vector when the pair's values fit them (see xdrop_extend_avx512 below). Needs only
   AVX-512F (byte compares use SSE2). Pairs whose values might not fit int32 go to the scalar
   kernel. */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx512f")
#include <immintrin.h>
#include "xdrop_kernel.h"

typedef struct {
    __m512i match, mismatch, gap, undef, lane;
} avx512_consts;

static inline avx512_consts make_avx512_consts(const xdrop_params *p)
{
    avx512_consts k = {_mm512_set1_epi32((int32_t)p->match), _mm512_set1_epi32((int32_t)p->mismatch),
                       _mm512_set1_epi32((int32_t)p->gap), _mm512_set1_epi32(XDROP_UNDEF32),
                       _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)};
    return k;
}

/* Per-anti-diagonal values shared by its blocks. */
typedef struct {
    __m512i thr, lo, hi, lo_edge, hi_edge;
} diagonal_consts;

/* One block of 16 columns starting at g (a multiple of 16): computes and stores a3[g..g+16),
   updates vmax, and returns the lanes whose columns keep the next anti-diagonal alive from the
   left (a3[c] or a2[c-1] defined, lo < c <= hi) and from the right (a3[c] or a2[c] defined,
   lo <= c < hi). prev2/prev1 hold the blocks of a2/a1 before g and are advanced. */
static inline void block_avx512(int32_t *a3, const int32_t *a2, const int32_t *a1, const uint8_t *q,
                                const uint8_t *t, int64_t g, const avx512_consts *k, const diagonal_consts *dc,
                                __m512i *prev2, __m512i *prev1, __m512i *vmax, unsigned *from_left,
                                unsigned *from_right)
{
    const __m512i left = _mm512_load_si512(a2 + g);          /* a2[c]   */
    const __m512i up = _mm512_alignr_epi32(left, *prev2, 15); /* a2[c-1] */
    const __m512i cur1 = _mm512_load_si512(a1 + g);
    const __m512i diag = _mm512_alignr_epi32(cur1, *prev1, 15); /* a1[c-1] */
    *prev2 = left;
    *prev1 = cur1;
    const __m128i qb = _mm_loadu_si128((const __m128i *)(q + g - 1));
    const __m128i tb = _mm_loadu_si128((const __m128i *)(t + g));
    const __mmask16 eq = (__mmask16)_mm_movemask_epi8(_mm_cmpeq_epi8(qb, tb));
    const __m512i s = _mm512_mask_blend_epi32(eq, k->mismatch, k->match);
    const __m512i v = _mm512_max_epi32(_mm512_add_epi32(_mm512_max_epi32(up, left), k->gap),
                                       _mm512_add_epi32(diag, s));
    const __m512i cols = _mm512_add_epi32(_mm512_set1_epi32((int32_t)g), k->lane);
    const __mmask16 at_lo = _mm512_cmpeq_epi32_mask(cols, dc->lo), at_hi = _mm512_cmpeq_epi32_mask(cols, dc->hi);
    const __mmask16 inner = _mm512_cmpgt_epi32_mask(cols, dc->lo) & _mm512_cmplt_epi32_mask(cols, dc->hi);
    __m512i out = _mm512_mask_blend_epi32(_mm512_cmpge_epi32_mask(v, dc->thr) & inner, k->undef, v);
    *vmax = _mm512_max_epi32(*vmax, out);
    out = _mm512_mask_mov_epi32(out, at_lo, dc->lo_edge);
    out = _mm512_mask_mov_epi32(out, at_hi, dc->hi_edge);
    _mm512_store_si512(a3 + g, out);
    const __mmask16 defined = _mm512_cmpneq_epi32_mask(out, k->undef);
    *from_left = (defined | _mm512_cmpneq_epi32_mask(up, k->undef)) & (inner | at_hi);
    *from_right = (defined | _mm512_cmpneq_epi32_mask(left, k->undef)) & (inner | at_lo);
}

/* The anti-diagonal is processed in blocks of 16 columns aligned to multiples of 16, the same
   blocks on every anti-diagonal. Each block is loaded exactly where an earlier anti-diagonal
   stored it, so loads are aligned and served by store forwarding instead of waiting for a
   misaligned overlap with a recent store; the column-minus-one neighbours come from shifting
   the block in registers (valignd) rather than from a load one element lower. The window's
   edges and the next window come from lane masks. Windows within 32 columns (the usual case
   for small X) take a fixed two blocks without branches, so nothing is mispredicted as the
   window slides across block boundaries. */
static inline int32_t compute_diagonal_avx512(int32_t *a3, const int32_t *a2, const int32_t *a1,
                                              const uint8_t *q, const uint8_t *t_rev, int64_t t_shift,
                                              int64_t lo, int64_t hi, int32_t thr, int32_t lo_edge,
                                              int32_t hi_edge, avx512_consts k, int64_t *next_min,
                                              int64_t *next_max)
{
    const diagonal_consts dc = {_mm512_set1_epi32(thr), _mm512_set1_epi32((int32_t)lo),
                                _mm512_set1_epi32((int32_t)hi), _mm512_set1_epi32(lo_edge),
                                _mm512_set1_epi32(hi_edge)};
    const uint8_t *t = t_rev + t_shift;
    const int64_t g0 = lo & ~(int64_t)15;
    __m512i vmax = k.undef;
    __m512i prev2 = _mm512_load_si512(a2 + g0 - 16), prev1 = _mm512_load_si512(a1 + g0 - 16);
    unsigned left0, right0, left1, right1;
    if (hi < g0 + 32) {
        block_avx512(a3, a2, a1, q, t, g0, &k, &dc, &prev2, &prev1, &vmax, &left0, &right0);
        block_avx512(a3, a2, a1, q, t, g0 + 16, &k, &dc, &prev2, &prev1, &vmax, &left1, &right1);
        const unsigned from_left = left0 | left1 << 16, from_right = right0 | right1 << 16;
        *next_min = from_left ? g0 + __builtin_ctz(from_left) : hi + 1;
        *next_max = from_right ? g0 + 33 - __builtin_clz(from_right) : lo + 1;
    } else {
        int64_t first_live = -1, last_live = -1;
        for (int64_t g = g0; g <= hi; g += 16) {
            block_avx512(a3, a2, a1, q, t, g, &k, &dc, &prev2, &prev1, &vmax, &left0, &right0);
            if (first_live < 0 && left0)
                first_live = g + __builtin_ctz(left0);
            if (right0)
                last_live = g + 31 - __builtin_clz(right0);
        }
        *next_min = first_live >= 0 ? first_live : hi + 1;
        *next_max = last_live >= 0 ? last_live + 2 : lo + 1;
    }
    return _mm512_reduce_max_epi32(vmax);
}

#define KERNEL_NAME xdrop_extend_avx512_int32
#define CELL int32_t
#define UNDEF XDROP_UNDEF32
#define CONSTS avx512_consts
#define MAKE_CONSTS(p) make_avx512_consts(p)
#define COMPUTE_DIAGONAL compute_diagonal_avx512
#define KERNEL_LINKAGE static
#include "xdrop_body.h"
#undef KERNEL_NAME
#undef CELL
#undef UNDEF
#undef CONSTS
#undef MAKE_CONSTS
#undef COMPUTE_DIAGONAL

#include "xdrop_avx2_i16.h"
#define KERNEL_NAME xdrop_extend_avx512_int16
#define CELL int16_t
#define UNDEF XDROP_UNDEF16
#define CONSTS i16x16_consts
#define MAKE_CONSTS(p) make_i16x16_consts(p)
#define COMPUTE_DIAGONAL compute_diagonal_i16x16
#define KERNEL_LINKAGE static
#include "xdrop_body.h"

/* int16 cells when every value fits them, int32 cells when those fit, else the int64 scalar
   kernel. The two-extension form uses the smallest type both extensions fit. */
int xdrop_extend_avx512(const uint8_t *q, int64_t m, const uint8_t *t_rev, int64_t n,
                        const xdrop_params *p, xdrop_result *res, warpdp_workspace *ws)
{
    if (xdrop_fits(p, m, n, XDROP_INT16_LIMIT))
        return xdrop_extend_avx512_int16(q, m, t_rev, n, p, res, ws);
    if (xdrop_fits(p, m, n, XDROP_INT32_LIMIT))
        return xdrop_extend_avx512_int32(q, m, t_rev, n, p, res, ws);
    return xdrop_extend_scalar(q, m, t_rev, n, p, res, ws);
}

int xdrop_extend2_avx512(const uint8_t *q0, int64_t m0, const uint8_t *t_rev0, int64_t n0,
                         const uint8_t *q1, int64_t m1, const uint8_t *t_rev1, int64_t n1,
                         const xdrop_params *p, xdrop_result *res0, xdrop_result *res1, warpdp_workspace *ws)
{
    if (xdrop_fits(p, m0, n0, XDROP_INT16_LIMIT) && xdrop_fits(p, m1, n1, XDROP_INT16_LIMIT))
        return xdrop_extend_avx512_int16_two(q0, m0, t_rev0, n0, q1, m1, t_rev1, n1, p, res0, res1, ws);
    if (xdrop_fits(p, m0, n0, XDROP_INT32_LIMIT) && xdrop_fits(p, m1, n1, XDROP_INT32_LIMIT))
        return xdrop_extend_avx512_int32_two(q0, m0, t_rev0, n0, q1, m1, t_rev1, n1, p, res0, res1, ws);
    return xdrop_extend2_scalar(q0, m0, t_rev0, n0, q1, m1, t_rev1, n1, p, res0, res1, ws);
}
#endif /* WARPDP_X86_SIMD */
