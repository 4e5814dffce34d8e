/* int16 anti-diagonal computation with 256-bit vectors (16 cells per block), shared by the AVX2
 * and AVX-512 variants (on CPUs that split 512-bit operations in two, such as AMD Zen 4, this
 * is also the fastest way through narrow windows). Used only when xdrop_fits(.., 2^13) holds:
 * then every value, and every window-relative column (the window is under 2^14 columns),
 * fits int16. Included after <immintrin.h> in a file compiled for AVX2 or better.
 */
#ifndef WARPDP_XDROP_AVX2_I16_H
#define WARPDP_XDROP_AVX2_I16_H

typedef struct {
    __m256i match, mismatch, gap, undef, lane;
} i16x16_consts;

static inline i16x16_consts make_i16x16_consts(const xdrop_params *p)
{
    i16x16_consts k = {_mm256_set1_epi16((int16_t)p->match), _mm256_set1_epi16((int16_t)p->mismatch),
                       _mm256_set1_epi16((int16_t)p->gap), _mm256_set1_epi16(XDROP_UNDEF16),
                       _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)};
    return k;
}

/* Lane i of the result is lane i-1 of cur, lane 0 is lane 15 of prev. */
static inline __m256i i16x16_shift_in(__m256i cur, __m256i prev)
{
    return _mm256_alignr_epi8(cur, _mm256_permute2x128_si256(prev, cur, 0x21), 14);
}

static inline int16_t i16x16_hmax(__m256i v)
{
    __m128i m = _mm_max_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    /* The largest signed value is the smallest of 0x7FFF - v, as unsigned: one phminposuw. */
    m = _mm_sub_epi16(_mm_set1_epi16(0x7FFF), m);
    return (int16_t)(0x7FFF - (_mm_cvtsi128_si32(_mm_minpos_epu16(m)) & 0xFFFF));
}

/* Per-anti-diagonal values: columns are relative to g0, the first block's column. */
typedef struct {
    __m256i thr, lo, hi, lo_edge, hi_edge;
    int edges; /* some edge is defined (only near the start of the matrix) */
} i16x16_diagonal;

/* One block of 16 columns starting at g = g0 + rel (a multiple of 16): computes and stores
   a3[g..g+16), updates vmax, and returns two bits per lane (movemask of 16-bit lanes) for the
   lanes that keep the next anti-diagonal alive from the left (a3[c] or a2[c-1] defined,
   lo < c <= hi) and from the right (a3[c] or a2[c] defined, lo <= c < hi). */
static inline void i16x16_block(int16_t *a3, const int16_t *a2, const int16_t *a1, const uint8_t *q,
                                const uint8_t *t, int64_t g, int16_t rel, const i16x16_consts *k,
                                const i16x16_diagonal *dc, __m256i *prev2, __m256i *prev1, __m256i *vmax,
                                unsigned *from_left, unsigned *from_right)
{
    const __m256i left = _mm256_load_si256((const __m256i *)(a2 + g)); /* a2[c]   */
    const __m256i up = i16x16_shift_in(left, *prev2);                     /* a2[c-1] */
    const __m256i cur1 = _mm256_load_si256((const __m256i *)(a1 + g));
    const __m256i diag = i16x16_shift_in(cur1, *prev1);                   /* a1[c-1] */
    *prev2 = left;
    *prev1 = cur1;
    /* Equal bytes become 0xFF, sign-extended to an all-ones lane. */
    const __m256i eq = _mm256_cvtepi8_epi16(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(q + g - 1)),
                                                           _mm_loadu_si128((const __m128i *)(t + g))));
    const __m256i s = _mm256_blendv_epi8(k->mismatch, k->match, eq);
    const __m256i v = _mm256_max_epi16(_mm256_add_epi16(_mm256_max_epi16(up, left), k->gap),
                                       _mm256_add_epi16(diag, s));
    const __m256i cols = _mm256_add_epi16(_mm256_set1_epi16(rel), k->lane);
    const __m256i after_lo = _mm256_cmpgt_epi16(cols, dc->lo), before_hi = _mm256_cmpgt_epi16(dc->hi, cols);
    const __m256i inner = _mm256_and_si256(after_lo, before_hi);
    /* Lanes at lo and hi come out undefined here; edges are blended in only when defined. */
    __m256i out = _mm256_blendv_epi8(k->undef, v, _mm256_and_si256(_mm256_cmpgt_epi16(v, dc->thr), inner));
    *vmax = _mm256_max_epi16(*vmax, out);
    const __m256i at_lo = _mm256_cmpeq_epi16(cols, dc->lo), at_hi = _mm256_cmpeq_epi16(cols, dc->hi);
    if (dc->edges) {
        out = _mm256_blendv_epi8(out, dc->lo_edge, at_lo);
        out = _mm256_blendv_epi8(out, dc->hi_edge, at_hi);
    }
    _mm256_store_si256((__m256i *)(a3 + g), out);
    const __m256i undefined = _mm256_cmpeq_epi16(out, k->undef);
    *from_left = (unsigned)_mm256_movemask_epi8(_mm256_andnot_si256(
        _mm256_and_si256(undefined, _mm256_cmpeq_epi16(up, k->undef)), _mm256_or_si256(inner, at_hi)));
    *from_right = (unsigned)_mm256_movemask_epi8(_mm256_andnot_si256(
        _mm256_and_si256(undefined, _mm256_cmpeq_epi16(left, k->undef)), _mm256_or_si256(inner, at_lo)));
}

/* COMPUTE_DIAGONAL for int16 cells in blocks of 16 columns aligned to multiples of 16 (the same
   on every anti-diagonal, so loads are aligned and served by store forwarding). */
static inline int16_t compute_diagonal_i16x16(int16_t *a3, const int16_t *a2, const int16_t *a1,
                                              const uint8_t *q, const uint8_t *t_rev, int64_t t_shift,
                                              int64_t lo, int64_t hi, int16_t thr, int16_t lo_edge,
                                              int16_t hi_edge, i16x16_consts k, int64_t *next_min,
                                              int64_t *next_max)
{
    const int64_t g0 = lo & ~(int64_t)15;
    const i16x16_diagonal dc = {_mm256_set1_epi16((int16_t)(thr - 1)), /* v >= thr <=> v > thr - 1 */
                                _mm256_set1_epi16((int16_t)(lo - g0)), _mm256_set1_epi16((int16_t)(hi - g0)),
                                _mm256_set1_epi16(lo_edge), _mm256_set1_epi16(hi_edge),
                                lo_edge != XDROP_UNDEF16 || hi_edge != XDROP_UNDEF16};
    const uint8_t *t = t_rev + t_shift;
    __m256i vmax = k.undef;
    __m256i prev2 = _mm256_load_si256((const __m256i *)(a2 + g0 - 16));
    __m256i prev1 = _mm256_load_si256((const __m256i *)(a1 + g0 - 16));
    int64_t first_live = -1, last_live = -1;
    unsigned from_left, from_right;
    for (int64_t g = g0; g <= hi; g += 16) {
        i16x16_block(a3, a2, a1, q, t, g, (int16_t)(g - g0), &k, &dc, &prev2, &prev1, &vmax, &from_left,
                     &from_right);
        if (first_live < 0 && from_left)
            first_live = g + (__builtin_ctz(from_left) >> 1);
        if (from_right)
            last_live = g + ((31 - __builtin_clz(from_right)) >> 1);
    }
    *next_min = first_live >= 0 ? first_live : hi + 1;
    *next_max = last_live >= 0 ? last_live + 2 : lo + 1;
    return i16x16_hmax(vmax);
}

#endif
