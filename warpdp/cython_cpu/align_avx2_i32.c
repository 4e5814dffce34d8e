/* AVX2 variant, int32 cells: 8 pairs per batch, one per lane (align_lanes_body.h), for pairs
   whose values do not fit int16 (or whose matrix does not fit the int16 variant's bytes). */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx2")
#include <immintrin.h>
#include <string.h>
#include "align_kernel.h"

static inline __m256i ge_avx2(__m256i a, __m256i b)
{
    return _mm256_cmpeq_epi32(_mm256_max_epi32(a, b), a);
}

static inline uint32_t bits_avx2(__m256i m)
{
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(m));
}

static inline __m128i low_bytes_avx2(__m256i v)
{
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_packus_epi16(words, words);
}

/* One scalar store per plane (asm: see align_avx512.c). */
static inline void store_plane_avx2(uint8_t *p, __m256i m)
{
    __asm__("movb %1, %0" : "=m"(*p) : "q"((uint8_t)_mm256_movemask_ps(_mm256_castsi256_ps(m))));
}

/* Lanes 2k and 2k + 1 (values 0..15) into byte k: each 64-bit pair's low byte, gathered from the
   two 128-bit halves into the low 4 bytes. */
static inline void store_nibbles_avx2(uint8_t *p, __m256i v)
{
    const __m256i pairs = _mm256_or_si256(v, _mm256_srli_epi64(v, 28));
    const __m256i gather = _mm256_setr_epi8(0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, /* to 0-1 */
                                            -1, -1, 0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1); /* 2-3 */
    const __m256i low = _mm256_shuffle_epi8(pairs, gather);
    const __m128i both = _mm_or_si128(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1));
    const int32_t bytes = _mm_cvtsi128_si32(both);
    memcpy(p, &bytes, sizeof bytes);
}

#define LANES 8
#define CELL int32_t
#define CELL_NEG ALIGN_NEG
#define VEC __m256i
#define MASK __m256i
#define SCORE_TABLE const int32_t *
#define V_SET1(x) _mm256_set1_epi32(x)
#define V_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#define V_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), (v))
#define V_ADDS(a, b) _mm256_add_epi32((a), (b))
#define V_SUBS(a, b) _mm256_sub_epi32((a), (b))
#define V_MAX(a, b) _mm256_max_epi32((a), (b))
#define V_BLEND(m, a, b) _mm256_blendv_epi8((a), (b), (m))
#define V_ADD_WHERE(m, a, b) _mm256_add_epi32((a), _mm256_and_si256((m), (b)))
#define M_GT(a, b) _mm256_cmpgt_epi32((a), (b))
#define M_EQ(a, b) _mm256_cmpeq_epi32((a), (b))
#define M_GE(a, b) ge_avx2((a), (b))
#define M_AND(a, b) _mm256_and_si256((a), (b))
#define M_BITS(m) bits_avx2(m)
#define M_GT_WHERE(w, a, b) _mm256_and_si256((w), _mm256_cmpgt_epi32((a), (b)))
#define M_GT_UNLESS(u, a, b) _mm256_andnot_si256((u), _mm256_cmpgt_epi32((a), (b)))
/* masks are -1: 2 + is_e is 1 or 2, cleared where is_d */
#define V_SOURCE(d, e) _mm256_andnot_si256((d), _mm256_add_epi32(_mm256_set1_epi32(2), (e)))
#define MAKE_SCORE_TABLE(p) ((p)->matrix)
#define V_SCORE(t, idx) _mm256_i32gather_epi32((const int *)(t), (idx), 4)
#define V_STORE_BYTES(p, v) _mm_storel_epi64((__m128i *)(p), low_bytes_avx2(v))
#define PLANE_BYTES 1
#define LANE_BITS 1
#define M_STORE_PLANE(p, m) store_plane_avx2((p), (m))
#define LANES_ENTRY align_lanes_avx2_i32
#include "align_lanes_body.h"
#define V_STORE_NIBBLES(p, v) store_nibbles_avx2((p), (v))
#define DIAG_ENTRY align_diag_avx2_i32
#include "align_diag_body.h"
#endif /* WARPDP_X86_SIMD */
