/* AVX2 variant: 16 int16 or 8 int32 cells per vector along the anti-diagonal, whichever the
   pair's values fit; pairs whose values might not fit int32 go to the scalar kernel. */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx2")
#include <string.h>
#include <immintrin.h>
#include "xdrop_kernel.h"

typedef struct {
    __m256i match, mismatch, gap, undef, lane, eight;
} avx2_consts;

static inline avx2_consts make_avx2_consts(const xdrop_params *p)
{
    avx2_consts k = {_mm256_set1_epi32((int32_t)p->match), _mm256_set1_epi32((int32_t)p->mismatch),
                     _mm256_set1_epi32((int32_t)p->gap), _mm256_set1_epi32(XDROP_UNDEF32),
                     _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(8)};
    return k;
}

static inline __m128i load_8_bytes(const uint8_t *p)
{
    int64_t word;
    memcpy(&word, p, sizeof word);
    return _mm_cvtsi64_si128(word);
}

static inline int32_t hmax_avx2(__m256i v)
{
    __m128i m = _mm_max_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(m);
}

/* Lane i of the result is lane i-1 of cur, lane 0 is lane 7 of prev. */
static inline __m256i shift_in(__m256i cur, __m256i prev)
{
    return _mm256_alignr_epi8(cur, _mm256_permute2x128_si256(prev, cur, 0x21), 12);
}

/* One bit per int32 lane that is all-ones. */
static inline unsigned lane_bits(__m256i m)
{
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m));
}

/* Blocks of 8 columns aligned to multiples of 8, the same on every anti-diagonal, so loads are
   aligned and served by store forwarding (see the AVX-512 variant). */
static inline int32_t compute_diagonal_avx2(int32_t *a3, const int32_t *a2, const int32_t *a1,
                                            const uint8_t *q, const uint8_t *t_rev, int64_t t_shift,
                                            int64_t lo, int64_t hi, int32_t thr, int32_t lo_edge,
                                            int32_t hi_edge, avx2_consts k, int64_t *next_min,
                                            int64_t *next_max)
{
    const __m256i vthr = _mm256_set1_epi32(thr - 1); /* v >= thr  <=>  v > thr - 1 */
    const __m256i vlo = _mm256_set1_epi32((int32_t)lo), vhi = _mm256_set1_epi32((int32_t)hi);
    const __m256i vlo_edge = _mm256_set1_epi32(lo_edge), vhi_edge = _mm256_set1_epi32(hi_edge);
    __m256i vmax = k.undef;
    int64_t g = lo & ~(int64_t)7;
    __m256i cols = _mm256_add_epi32(_mm256_set1_epi32((int32_t)g), k.lane);
    __m256i prev2 = _mm256_load_si256((const __m256i *)(a2 + g - 8));
    __m256i prev1 = _mm256_load_si256((const __m256i *)(a1 + g - 8));
    int64_t first_live = -1, last_live = -1;
    for (; g <= hi; g += 8) {
        const __m256i left = _mm256_load_si256((const __m256i *)(a2 + g)); /* a2[c]   */
        const __m256i up = shift_in(left, prev2);                             /* a2[c-1] */
        const __m256i cur1 = _mm256_load_si256((const __m256i *)(a1 + g));
        const __m256i diag = shift_in(cur1, prev1);                           /* a1[c-1] */
        prev2 = left;
        prev1 = cur1;
        /* Equal bytes become 0xFF, sign-extended to an all-ones lane. */
        const __m256i eq = _mm256_cvtepi8_epi32(_mm_cmpeq_epi8(load_8_bytes(q + g - 1),
                                                               load_8_bytes(t_rev + t_shift + g)));
        const __m256i s = _mm256_blendv_epi8(k.mismatch, k.match, eq);
        const __m256i v = _mm256_max_epi32(_mm256_add_epi32(_mm256_max_epi32(up, left), k.gap),
                                           _mm256_add_epi32(diag, s));
        const __m256i at_lo = _mm256_cmpeq_epi32(cols, vlo), at_hi = _mm256_cmpeq_epi32(cols, vhi);
        const __m256i inner = _mm256_and_si256(_mm256_cmpgt_epi32(cols, vlo), _mm256_cmpgt_epi32(vhi, cols));
        __m256i out = _mm256_blendv_epi8(k.undef, v, _mm256_and_si256(_mm256_cmpgt_epi32(v, vthr), inner));
        vmax = _mm256_max_epi32(vmax, out);
        out = _mm256_blendv_epi8(out, vlo_edge, at_lo);
        out = _mm256_blendv_epi8(out, vhi_edge, at_hi);
        _mm256_store_si256((__m256i *)(a3 + g), out);
        /* Live columns for the next window, as in the AVX-512 variant. */
        const unsigned undefined = lane_bits(_mm256_cmpeq_epi32(out, k.undef));
        const unsigned from_left = ~(undefined & lane_bits(_mm256_cmpeq_epi32(up, k.undef))) &
                                   lane_bits(_mm256_or_si256(inner, at_hi));
        const unsigned from_right = ~(undefined & lane_bits(_mm256_cmpeq_epi32(left, k.undef))) &
                                    lane_bits(_mm256_or_si256(inner, at_lo));
        if (first_live < 0 && from_left)
            first_live = g + __builtin_ctz(from_left);
        if (from_right)
            last_live = g + 31 - __builtin_clz(from_right);
        cols = _mm256_add_epi32(cols, k.eight);
    }
    *next_min = first_live >= 0 ? first_live : hi + 1;
    *next_max = last_live >= 0 ? last_live + 2 : lo + 1;
    return hmax_avx2(vmax);
}

#define KERNEL_NAME xdrop_extend_avx2_int32
#define CELL int32_t
#define UNDEF XDROP_UNDEF32
#define CONSTS avx2_consts
#define MAKE_CONSTS(p) make_avx2_consts(p)
#define COMPUTE_DIAGONAL compute_diagonal_avx2
#define KERNEL_LINKAGE static
#include "xdrop_body.h"
#undef KERNEL_NAME
#undef CELL
#undef UNDEF
#undef CONSTS
#undef MAKE_CONSTS
#undef COMPUTE_DIAGONAL

#include "xdrop_avx2_i16.h"
#define KERNEL_NAME xdrop_extend_avx2_int16
#define CELL int16_t
#define UNDEF XDROP_UNDEF16
#define CONSTS i16x16_consts
#define MAKE_CONSTS(p) make_i16x16_consts(p)
#define COMPUTE_DIAGONAL compute_diagonal_i16x16
#define KERNEL_LINKAGE static
#include "xdrop_body.h"

/* int16 cells when every value fits them, int32 cells when those fit, else the int64 scalar
   kernel. The two-extension form uses the smallest type both extensions fit. */
int xdrop_extend_avx2(const uint8_t *q, int64_t m, const uint8_t *t_rev, int64_t n,
                      const xdrop_params *p, xdrop_result *res, warpdp_workspace *ws)
{
    if (xdrop_fits(p, m, n, XDROP_INT16_LIMIT))
        return xdrop_extend_avx2_int16(q, m, t_rev, n, p, res, ws);
    if (xdrop_fits(p, m, n, XDROP_INT32_LIMIT))
        return xdrop_extend_avx2_int32(q, m, t_rev, n, p, res, ws);
    return xdrop_extend_scalar(q, m, t_rev, n, p, res, ws);
}

int xdrop_extend2_avx2(const uint8_t *q0, int64_t m0, const uint8_t *t_rev0, int64_t n0,
                       const uint8_t *q1, int64_t m1, const uint8_t *t_rev1, int64_t n1,
                       const xdrop_params *p, xdrop_result *res0, xdrop_result *res1, warpdp_workspace *ws)
{
    if (xdrop_fits(p, m0, n0, XDROP_INT16_LIMIT) && xdrop_fits(p, m1, n1, XDROP_INT16_LIMIT))
        return xdrop_extend_avx2_int16_two(q0, m0, t_rev0, n0, q1, m1, t_rev1, n1, p, res0, res1, ws);
    if (xdrop_fits(p, m0, n0, XDROP_INT32_LIMIT) && xdrop_fits(p, m1, n1, XDROP_INT32_LIMIT))
        return xdrop_extend_avx2_int32_two(q0, m0, t_rev0, n0, q1, m1, t_rev1, n1, p, res0, res1, ws);
    return xdrop_extend2_scalar(q0, m0, t_rev0, n0, q1, m1, t_rev1, n1, p, res0, res1, ws);
}
#endif /* WARPDP_X86_SIMD */
