/* AVX-512 variant, int32 cells: 16 pairs per batch, one per lane (align_lanes_body.h), for pairs
   whose values do not fit int16. */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx512f")
#include <immintrin.h>
#include <string.h>
#include "align_kernel.h"

/* The 5x5 matrix in the first 25 of 32 int32 entries, looked up with one vpermt2d. */
typedef struct {
    __m512i lo, hi;
} score_table;

static inline score_table make_score_table(const align_params *p)
{
    int32_t entries[32] = {0};
    for (int k = 0; k < 25; k++)
        entries[k] = p->matrix[k];
    const score_table t = {_mm512_loadu_si512(entries), _mm512_loadu_si512(entries + 16)};
    return t;
}

/* One kmovw store from the mask register (asm: see align_avx512.c). */
static inline void store_plane_avx512(uint8_t *p, __mmask16 m)
{
    __asm__("kmovw %1, %0" : "=m"(*(uint16_t *)p) : "k"(m));
}

#define LANES 16
#define CELL int32_t
#define CELL_NEG ALIGN_NEG
#define VEC __m512i
#define MASK __mmask16
#define SCORE_TABLE score_table
#define V_SET1(x) _mm512_set1_epi32(x)
#define V_LOAD(p) _mm512_loadu_si512(p)
#define V_STORE(p, v) _mm512_storeu_si512((p), (v))
#define V_ADDS(a, b) _mm512_add_epi32((a), (b))
#define V_SUBS(a, b) _mm512_sub_epi32((a), (b))
#define V_MAX(a, b) _mm512_max_epi32((a), (b))
#define V_BLEND(m, a, b) _mm512_mask_blend_epi32((m), (a), (b))
#define V_ADD_WHERE(m, a, b) _mm512_mask_add_epi32((a), (m), (a), (b))
#define M_GT(a, b) _mm512_cmpgt_epi32_mask((a), (b))
#define M_EQ(a, b) _mm512_cmpeq_epi32_mask((a), (b))
#define M_GE(a, b) _mm512_cmpge_epi32_mask((a), (b))
#define M_AND(a, b) ((MASK)((a) & (b)))
#define M_BITS(m) ((uint32_t)(m))
#define M_GT_WHERE(w, a, b) _mm512_mask_cmpgt_epi32_mask((w), (a), (b))
#define M_GT_UNLESS(u, a, b) _mm512_mask_cmpgt_epi32_mask((MASK)~(u), (a), (b))
#define V_SOURCE(d, e) _mm512_maskz_mov_epi32((MASK)~(d), _mm512_mask_blend_epi32((e), _mm512_set1_epi32(2), _mm512_set1_epi32(1)))
#define MAKE_SCORE_TABLE(p) make_score_table(p)
#define V_SCORE(t, idx) _mm512_permutex2var_epi32((t).lo, (idx), (t).hi)
#define V_STORE_BYTES(p, v) _mm_storeu_si128((__m128i *)(p), _mm512_cvtepi32_epi8(v))
#define PLANE_BYTES 2
#define LANE_BITS 1
#define M_STORE_PLANE(p, m) store_plane_avx512((p), (m))
#define LANES_ENTRY align_lanes_avx512_i32
#include "align_lanes_body.h"
#define V_STORE_NIBBLES(p, v) \
    _mm_storel_epi64((__m128i *)(p), _mm512_cvtepi64_epi8(_mm512_or_si512((v), _mm512_srli_epi64((v), 28))))
#define DIAG_ENTRY align_diag_avx512_i32
#include "align_diag_body.h"
#endif /* WARPDP_X86_SIMD */
