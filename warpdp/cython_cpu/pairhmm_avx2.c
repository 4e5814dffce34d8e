/* AVX2 variants: 8 float lanes, 4 double lanes. Only called after a run-time check. */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx2")
#include <immintrin.h>
#include <string.h>
#include "pairhmm_kernel.h"
#include "pairhmm_tables.h"

static inline __m256i load_4_bytes(const uint8_t *p)
{
    int32_t word;
    memcpy(&word, p, sizeof word);
    return _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(word));
}

/* ---- float, 8 lanes ---- */
#define KERNEL_NAME pairhmm_forward_float_avx2
#define REAL float
#define VEC __m256
#define CODES __m256i
#define LANES 8
#define PH2PR pairhmm_ph2pr_f
#define MM_TABLE pairhmm_mm_f
#define INITIAL pairhmm_initial_f
#define V_ZERO() _mm256_setzero_ps()
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps((p), (v))
#define V_ADD(a, b) _mm256_add_ps((a), (b))
#define V_MUL(a, b) _mm256_mul_ps((a), (b))
#define V_SHIFT_IN(v, p) _mm256_blend_ps(                                              \
    _mm256_permutevar8x32_ps((v), _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6)),         \
    _mm256_broadcast_ss(p), 1)
/* Backward row buffers, so the whole vector is stored: one store, no lane extraction (the
   AVX-512 variant, whose masked store of one lane costs nothing extra, keeps them forward). */
#define ROWS_BACKWARDS
#define V_STORE_LAST(p, v) _mm256_storeu_ps((p) - 7, (v))
#define V_CODES(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
#define V_EMISSION(p, rc, em, emm) _mm256_blendv_ps((em), (emm), _mm256_castsi256_ps(      \
    _mm256_cmpeq_epi32(_mm256_and_si256(V_CODES(p), (rc)), _mm256_setzero_si256())))
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
#undef ROWS_BACKWARDS
#undef V_CODES
#undef V_EMISSION

/* ---- double, 4 lanes ---- */
#define KERNEL_NAME pairhmm_forward_double_avx2
#define REAL double
#define VEC __m256d
#define CODES __m256i
#define LANES 4
#define PH2PR pairhmm_ph2pr_d
#define MM_TABLE pairhmm_mm_d
#define INITIAL pairhmm_initial_d
#define V_ZERO() _mm256_setzero_pd()
#define V_LOAD(p) _mm256_loadu_pd(p)
#define V_STORE(p, v) _mm256_storeu_pd((p), (v))
#define V_ADD(a, b) _mm256_add_pd((a), (b))
#define V_MUL(a, b) _mm256_mul_pd((a), (b))
#define V_SHIFT_IN(v, p) _mm256_blend_pd(_mm256_permute4x64_pd((v), 0x93),              \
                                         _mm256_broadcast_sd(p), 1)
#define ROWS_BACKWARDS
#define V_STORE_LAST(p, v) _mm256_storeu_pd((p) - 3, (v))
#define V_CODES(p) load_4_bytes(p)
#define V_EMISSION(p, rc, em, emm) _mm256_blendv_pd((em), (emm), _mm256_castsi256_pd(      \
    _mm256_cmpeq_epi64(_mm256_and_si256(V_CODES(p), (rc)), _mm256_setzero_si256())))
#include "pairhmm_simd_body.h"
#endif /* WARPDP_X86_SIMD */
