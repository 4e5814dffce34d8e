/* AVX-512 seed-extension kernels: 32 lanes of int16 and 16 lanes of int32.
   Only called after a run-time check (warpdp_cpu_supports). */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx512f,avx512bw")
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "seedext_kernel.h"

/* ---- int16, 32 lanes: scores that fit (see SEEDEXT_INT16_LIMIT) ---- */
#define KERNEL_NAME seedext_group_avx512_i16
#define SEEDEXT_LANE_T seedext_lane_avx512_i16
#define LANES SEEDEXT_LANES_AVX512_I16
#define ELEM int16_t
#define VEC __m512i
#define MASK __mmask32
#define V_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define V_STORE(p, v) _mm512_storeu_si512((void *)(p), (v))
#define V_SET1(x) _mm512_set1_epi16((short)(x))
#define V_ZERO() _mm512_setzero_si512()
#define V_XOR(a, b) _mm512_xor_si512((a), (b))
#define V_ADD(a, b) _mm512_add_epi16((a), (b))
/* Values are 0..32767, so unsigned saturation gives max(a - b, 0) in one instruction. */
#define V_GAP_SOURCE(mm) _mm512_max_epi16((mm), _mm512_setzero_si512())
#define V_SUB0(a, b) _mm512_subs_epu16((a), (b))
#define V_SUB_LOW(a, b) _mm512_subs_epu16((a), (b))
#define K_LT(a, b) _mm512_cmplt_epi16_mask((a), (b))
#define V_MAX(a, b) _mm512_max_epi16((a), (b))
/* One word permute over a 32-entry table (entries 0..15 used). */
#define V_SCORE_SETUP(entries) const VEC score_table = _mm512_loadu_si512((const void *)(entries))
#define V_SCORE(x) _mm512_permutexvar_epi16((x), score_table)
#define K_IN(j, beg, end) _mm512_mask_cmplt_epi16_mask(_mm512_cmpge_epi16_mask((j), (beg)), (j), (end))
#define V_ADD_NONZERO(h, s) _mm512_maskz_add_epi16(_mm512_test_epi16_mask((h), (h)), (h), (s))
#define V_BLEND(k, a, b) _mm512_mask_blend_epi16((k), (a), (b))
#define V_MASKZ(k, v) _mm512_maskz_mov_epi16((k), (v))
#define K_AND_GE(k, a, b) _mm512_mask_cmpge_epi16_mask((k), (a), (b))
#define V_STORE_MASKED(p, k, v) _mm512_mask_storeu_epi16((void *)(p), (k), (v))
#define V_OR(a, b) _mm512_or_si512((a), (b))
#define V_MIN(a, b) _mm512_min_epi16((a), (b))
#define K_AND_NONZERO(k, v) _mm512_mask_test_epi16_mask((k), (v), (v))
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
#undef V_BLEND
#undef V_MASKZ
#undef K_AND_GE
#undef V_STORE_MASKED
#undef V_MIN
#undef K_AND_NONZERO
#undef SEEDEXT_FAR

/* ---- int32, 16 lanes: everything else ---- */
#define KERNEL_NAME seedext_group_avx512_i32
#define SEEDEXT_LANE_T seedext_lane_avx512_i32
#define LANES SEEDEXT_LANES_AVX512_I32
#define ELEM int32_t
#define VEC __m512i
#define MASK __mmask16
#define V_SET1(x) _mm512_set1_epi32((int)(x))
#define V_ADD(a, b) _mm512_add_epi32((a), (b))
/* No saturation needed: 32-bit values stay far from the limits (see seedext_kernel.h). */
#define V_GAP_SOURCE(mm) (mm)
#define V_SUB0(a, b) _mm512_max_epi32(_mm512_sub_epi32((a), (b)), _mm512_setzero_si512())
#define V_SUB_LOW(a, b) _mm512_sub_epi32((a), (b))
#define K_LT(a, b) _mm512_cmplt_epi32_mask((a), (b))
#define V_MAX(a, b) _mm512_max_epi32((a), (b))
#define V_SCORE_SETUP(entries) const VEC score_table = _mm512_loadu_si512((const void *)(entries))
#define V_SCORE(x) _mm512_permutexvar_epi32((x), score_table)
#define K_IN(j, beg, end) _mm512_mask_cmplt_epi32_mask(_mm512_cmpge_epi32_mask((j), (beg)), (j), (end))
#define V_ADD_NONZERO(h, s) _mm512_maskz_add_epi32(_mm512_test_epi32_mask((h), (h)), (h), (s))
#define V_BLEND(k, a, b) _mm512_mask_blend_epi32((k), (a), (b))
#define V_MASKZ(k, v) _mm512_maskz_mov_epi32((k), (v))
#define K_AND_GE(k, a, b) _mm512_mask_cmpge_epi32_mask((k), (a), (b))
#define V_STORE_MASKED(p, k, v) _mm512_mask_storeu_epi32((void *)(p), (k), (v))
#define V_MIN(a, b) _mm512_min_epi32((a), (b))
#define K_AND_NONZERO(k, v) _mm512_mask_test_epi32_mask((k), (v), (v))
#define SEEDEXT_FAR 0x3fffffff
#include "seedext_simd_body.h"
#endif /* WARPDP_X86_SIMD */
