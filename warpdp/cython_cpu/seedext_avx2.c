/* AVX2 seed-extension kernels: 16 lanes of int16 and 8 lanes of int32.
   Only called after a run-time check (warpdp_cpu_supports). */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx2")
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "seedext_kernel.h"

/* Masks are vectors of all-ones / all-zeros lanes (compare results). */
#define V_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#define V_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), (v))
#define V_ZERO() _mm256_setzero_si256()
#define V_XOR(a, b) _mm256_xor_si256((a), (b))
#define V_BLEND(k, a, b) _mm256_blendv_epi8((a), (b), (k))
#define V_MASKZ(k, v) _mm256_and_si256((k), (v))
#define V_STORE_MASKED(p, k, v) V_STORE((p), V_BLEND((k), V_LOAD(p), (v)))
#define V_OR(a, b) _mm256_or_si256((a), (b))
#define K_ALL(k) (_mm256_movemask_epi8(k) == -1)

/* ---- int16, 16 lanes ---- */
#define KERNEL_NAME seedext_group_avx2_i16
#define SEEDEXT_LANE_T seedext_lane_avx2_i16
#define LANES SEEDEXT_LANES_AVX2_I16
#define ELEM int16_t
#define VEC __m256i
#define MASK __m256i
#define V_SET1(x) _mm256_set1_epi16((short)(x))
#define V_ADD(a, b) _mm256_add_epi16((a), (b))
#define V_GAP_SOURCE(mm) _mm256_max_epi16((mm), V_ZERO())
#define V_SUB0(a, b) _mm256_subs_epu16((a), (b))
#define V_SUB_LOW(a, b) _mm256_subs_epu16((a), (b))
#define K_LT(a, b) _mm256_cmpgt_epi16((b), (a))
#define V_MAX(a, b) _mm256_max_epi16((a), (b))
/* Codes sit in the high byte (query codes with 0x80 in the low byte), so the high byte of
   q ^ t is x and its low byte 0x80: a byte shuffle of the 16-entry table (|scores| <= 127,
   see MAX_MATCH_SCORE) puts score[x] in the high byte and 0 in the low one; an arithmetic
   shift right by 8 sign-extends it. */
#define SEEDEXT_Q_CODE(c) (((c) << 8) | 0x80)
#define SEEDEXT_T_CODE(c) ((c) << 8)
#define V_SCORE_SETUP(entries)                                                          \
    int8_t score_bytes[16];                                                             \
    for (int x = 0; x < 16; x++)                                                        \
        score_bytes[x] = (int8_t)(entries)[x];                                          \
    const VEC score_table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)score_bytes))
#define V_SCORE(x) _mm256_srai_epi16(_mm256_shuffle_epi8(score_table, (x)), 8)
#define K_IN(j, beg, end) _mm256_andnot_si256(_mm256_cmpgt_epi16((beg), (j)), _mm256_cmpgt_epi16((end), (j)))
#define V_ADD_NONZERO(h, s) _mm256_andnot_si256(_mm256_cmpeq_epi16((h), V_ZERO()), _mm256_add_epi16((h), (s)))
#define K_AND_GE(k, a, b) _mm256_andnot_si256(_mm256_cmpgt_epi16((b), (a)), (k))
#define V_MIN(a, b) _mm256_min_epi16((a), (b))
#define K_AND_NONZERO(k, v) _mm256_andnot_si256(_mm256_cmpeq_epi16((v), V_ZERO()), (k))
#define K_ZERO(v) _mm256_cmpeq_epi16((v), V_ZERO())
#define SEEDEXT_FAR 0x7fff
#include "seedext_simd_body.h"
#undef KERNEL_NAME
#undef SEEDEXT_LANE_T
#undef LANES
#undef ELEM
#undef VEC
#undef MASK
#undef V_SET1
#undef V_ADD
#undef V_GAP_SOURCE
#undef V_SUB0
#undef V_SUB_LOW
#undef K_LT
#undef V_MAX
#undef V_SCORE_SETUP
#undef V_SCORE
#undef K_IN
#undef V_ADD_NONZERO
#undef K_AND_GE
#undef V_MIN
#undef K_AND_NONZERO
#undef K_ZERO
#undef SEEDEXT_Q_CODE
#undef SEEDEXT_T_CODE
#undef SEEDEXT_FAR

/* ---- int32, 8 lanes ---- */
#define KERNEL_NAME seedext_group_avx2_i32
#define SEEDEXT_LANE_T seedext_lane_avx2_i32
#define LANES SEEDEXT_LANES_AVX2_I32
#define ELEM int32_t
#define VEC __m256i
#define MASK __m256i
#define V_SET1(x) _mm256_set1_epi32((int)(x))
#define V_ADD(a, b) _mm256_add_epi32((a), (b))
#define V_GAP_SOURCE(mm) (mm)
#define V_SUB0(a, b) _mm256_max_epi32(_mm256_sub_epi32((a), (b)), V_ZERO())
#define V_SUB_LOW(a, b) _mm256_sub_epi32((a), (b))
#define K_LT(a, b) _mm256_cmpgt_epi32((b), (a))
#define V_MAX(a, b) _mm256_max_epi32((a), (b))
/* An 8-entry permute covers x = 0..7; x >= 8 (N against a base) is -1: OR with all-ones. */
#define V_SCORE_SETUP(entries) const VEC score_table = V_LOAD(entries), score_seven = V_SET1(7)
#define V_SCORE(x) \
    _mm256_or_si256(_mm256_permutevar8x32_epi32(score_table, (x)), _mm256_cmpgt_epi32((x), score_seven))
#define K_IN(j, beg, end) _mm256_andnot_si256(_mm256_cmpgt_epi32((beg), (j)), _mm256_cmpgt_epi32((end), (j)))
#define V_ADD_NONZERO(h, s) _mm256_andnot_si256(_mm256_cmpeq_epi32((h), V_ZERO()), _mm256_add_epi32((h), (s)))
#define K_AND_GE(k, a, b) _mm256_andnot_si256(_mm256_cmpgt_epi32((b), (a)), (k))
#define V_MIN(a, b) _mm256_min_epi32((a), (b))
#define K_AND_NONZERO(k, v) _mm256_andnot_si256(_mm256_cmpeq_epi32((v), V_ZERO()), (k))
#define K_ZERO(v) _mm256_cmpeq_epi32((v), V_ZERO())
#define SEEDEXT_FAR 0x3fffffff
#include "seedext_simd_body.h"
#endif /* WARPDP_X86_SIMD */
