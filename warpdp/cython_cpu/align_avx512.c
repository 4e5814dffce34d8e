/* AVX-512 variant (AVX-512BW), int16 cells: 32 pairs per batch, one per lane (align_lanes_body.h). */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx512f,avx512bw")
#include <immintrin.h>
#include <string.h>
#include "align_kernel.h"

/* The 5x5 matrix in the first 25 of 32 int16 entries, looked up with one vpermw. */
static inline __m512i make_score_table(const align_params *p)
{
    int16_t entries[32] = {0};
    for (int k = 0; k < 25; k++)
        entries[k] = (int16_t)p->matrix[k];
    return _mm512_loadu_si512(entries);
}

/* One kmovd store from the mask register (asm: the compiler would otherwise gather the four planes
   of a cell through general and vector registers into one store, costing vector uops). */
static inline void store_plane_avx512(uint8_t *p, __mmask32 m)
{
    __asm__("kmovd %1, %0" : "=m"(*(uint32_t *)p) : "k"(m));
}

#define LANES 32
#define CELL int16_t
#define CELL_NEG INT16_MIN
#define VEC __m512i
#define MASK __mmask32
#define SCORE_TABLE __m512i
#define V_SET1(x) _mm512_set1_epi16(x)
#define V_LOAD(p) _mm512_loadu_si512(p)
#define V_STORE(p, v) _mm512_storeu_si512((p), (v))
#define V_ADDS(a, b) _mm512_adds_epi16((a), (b))
#define V_SUBS(a, b) _mm512_subs_epi16((a), (b))
#define V_MAX(a, b) _mm512_max_epi16((a), (b))
#define V_BLEND(m, a, b) _mm512_mask_blend_epi16((m), (a), (b))
#define V_ADD_WHERE(m, a, b) _mm512_mask_add_epi16((a), (m), (a), (b))
#define M_GT(a, b) _mm512_cmpgt_epi16_mask((a), (b))
#define M_EQ(a, b) _mm512_cmpeq_epi16_mask((a), (b))
#define M_GE(a, b) _mm512_cmpge_epi16_mask((a), (b))
#define M_AND(a, b) ((MASK)((a) & (b)))
#define M_BITS(m) ((uint32_t)(m))
#define M_GT_WHERE(w, a, b) _mm512_mask_cmpgt_epi16_mask((w), (a), (b))
#define M_GT_UNLESS(u, a, b) _mm512_mask_cmpgt_epi16_mask((MASK)~(u), (a), (b))
#define V_SOURCE(d, e) _mm512_maskz_mov_epi16((MASK)~(d), _mm512_mask_blend_epi16((e), _mm512_set1_epi16(2), _mm512_set1_epi16(1)))
#define MAKE_SCORE_TABLE(p) make_score_table(p)
#define V_SCORE(t, idx) _mm512_permutexvar_epi16((idx), (t))
#define V_STORE_BYTES(p, v) _mm256_storeu_si256((__m256i *)(p), _mm512_cvtepi16_epi8(v))
#define PLANE_BYTES 4
#define LANE_BITS 1
#define M_STORE_PLANE(p, m) store_plane_avx512((p), (m))
#define LANES_ENTRY align_lanes_avx512
#include "align_lanes_body.h"
#define V_STORE_NIBBLES(p, v) \
    _mm_storeu_si128((__m128i *)(p), _mm512_cvtepi32_epi8(_mm512_or_si512((v), _mm512_srli_epi32((v), 12))))
#define DIAG_ENTRY align_diag_avx512
#include "align_diag_body.h"
#endif /* WARPDP_X86_SIMD */
