/* AVX-512 variants: 16 float lanes, 8 double lanes. Only called after a run-time check. */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx512f")
#include <immintrin.h>
#include <string.h>
#include "pairhmm_kernel.h"
#include "pairhmm_tables.h"

/* ---- float, 16 lanes ---- */
#define KERNEL_NAME pairhmm_forward_float_avx512
#define REAL float
#define VEC __m512
#define CODES __m512i
#define LANES 16
#define PH2PR pairhmm_ph2pr_f
#define MM_TABLE pairhmm_mm_f
#define INITIAL pairhmm_initial_f
#define V_ZERO() _mm512_setzero_ps()
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps((p), (v))
#define V_ADD(a, b) _mm512_add_ps((a), (b))
#define V_MUL(a, b) _mm512_mul_ps((a), (b))
#define V_SHIFT_IN(v, p) _mm512_castsi512_ps(_mm512_alignr_epi32(                 \
    _mm512_castps_si512(v), _mm512_castps_si512(_mm512_set1_ps(*(p))), 15))
#define V_STORE_LAST(p, v) _mm512_mask_storeu_ps((p) - 15, (__mmask16)0x8000, (v))
#define V_CODES(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p)))
#define V_EMISSION(p, rc, em, emm) _mm512_mask_blend_ps(                             \
    _mm512_test_epi32_mask(V_CODES(p), (rc)), (emm), (em))
#include "pairhmm_simd_body.h"
#undef KERNEL_NAME
#undef REAL
#undef VEC
#undef CODES
#undef LANES
#undef PH2PR
#undef MM_TABLE
#undef INITIAL
#undef V_ZERO
#undef V_LOAD
#undef V_STORE
#undef V_ADD
#undef V_MUL
#undef V_SHIFT_IN
#undef V_STORE_LAST
#undef V_CODES
#undef V_EMISSION

/* ---- double, 8 lanes ---- */
#define KERNEL_NAME pairhmm_forward_double_avx512
#define REAL double
#define VEC __m512d
#define CODES __m512i
#define LANES 8
#define PH2PR pairhmm_ph2pr_d
#define MM_TABLE pairhmm_mm_d
#define INITIAL pairhmm_initial_d
#define V_ZERO() _mm512_setzero_pd()
#define V_LOAD(p) _mm512_loadu_pd(p)
#define V_STORE(p, v) _mm512_storeu_pd((p), (v))
#define V_ADD(a, b) _mm512_add_pd((a), (b))
#define V_MUL(a, b) _mm512_mul_pd((a), (b))
#define V_SHIFT_IN(v, p) _mm512_castsi512_pd(_mm512_alignr_epi64(                 \
    _mm512_castpd_si512(v), _mm512_castpd_si512(_mm512_set1_pd(*(p))), 7))
#define V_STORE_LAST(p, v) _mm512_mask_storeu_pd((p) - 7, (__mmask8)0x80, (v))
#define V_CODES(p) _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(p)))
#define V_EMISSION(p, rc, em, emm) _mm512_mask_blend_pd(                             \
    _mm512_test_epi64_mask(V_CODES(p), (rc)), (emm), (em))
#include "pairhmm_simd_body.h"
#endif /* WARPDP_X86_SIMD */
