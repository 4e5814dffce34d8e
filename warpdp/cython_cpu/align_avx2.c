/* AVX2 variant, int16 cells: 16 pairs per batch, one per lane (align_lanes_body.h). Its score lookup
   holds the matrix in bytes, so the driver sends it only matrices within -128..127. */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx2")
#include <immintrin.h>
#include <string.h>
#include "align_kernel.h"

/* Entries 0-15 and 16-31 of the matrix plus 128 (so unsigned bytes), each table in both halves
   for vpshufb; entry 31 stays 0 (see score_avx2). */
typedef struct {
    __m256i lo, hi;
} score_table;

static inline score_table make_score_table(const align_params *p)
{
    uint8_t bytes[32] = {0};
    for (int k = 0; k < 25; k++)
        bytes[k] = (uint8_t)(p->matrix[k] + 128);
    const score_table t = {_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)bytes)),
                           _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(bytes + 16)))};
    return t;
}

/* matrix[idx] per int16 lane, index = 0x8000 + idx (QV_BIAS), idx 0..24. vpshufb gives 0 where
   an index byte has bit 7 set: with the high byte 0x80, the low table answers idx < 16 (idx + 0x70
   below 0x80) and the high table idx >= 16 (idx - 16); idx < 16 turns the high table's high byte
   into index 0x7F, entry 31, which is 0. */
static inline __m256i score_avx2(score_table t, __m256i index)
{
    const __m256i lo = _mm256_shuffle_epi8(t.lo, _mm256_adds_epu8(index, _mm256_set1_epi16(0x0070)));
    const __m256i hi = _mm256_shuffle_epi8(t.hi, _mm256_add_epi16(index, _mm256_set1_epi16(-16)));
    return _mm256_sub_epi16(_mm256_or_si256(lo, hi), _mm256_set1_epi16(128));
}

static inline __m256i ge_avx2(__m256i a, __m256i b)
{
    return _mm256_cmpeq_epi16(_mm256_max_epi16(a, b), a);
}

static inline uint32_t bits_avx2(__m256i m)
{
    return (uint32_t)_mm_movemask_epi8(_mm_packs_epi16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1)));
}

static inline void store_plane_avx2(uint8_t *p, __m256i m)
{
    /* asm: one scalar store per plane (see align_avx512.c) */
    __asm__("movl %1, %0" : "=m"(*(uint32_t *)p) : "r"((uint32_t)_mm256_movemask_epi8(m)));
}

static inline __m128i low_bytes_avx2(__m256i v)
{
    return _mm_packus_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

/* Lanes 2k and 2k + 1 (values 0..15) into byte k: each 32-bit pair's low byte, gathered from the
   two 128-bit halves into the low 8 bytes. */
static inline void store_nibbles_avx2(uint8_t *p, __m256i v)
{
    const __m256i pairs = _mm256_or_si256(v, _mm256_srli_epi32(v, 12));
    const __m256i gather = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, /* to 0-3 */
                                            -1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1); /* 4-7 */
    const __m256i low = _mm256_shuffle_epi8(pairs, gather);
    _mm_storel_epi64((__m128i *)p, _mm_or_si128(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1)));
}

#define LANES 16
#define CELL int16_t
#define CELL_NEG INT16_MIN
#define VEC __m256i
#define MASK __m256i
#define SCORE_TABLE score_table
#define V_SET1(x) _mm256_set1_epi16(x)
#define V_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#define V_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), (v))
#define V_ADDS(a, b) _mm256_adds_epi16((a), (b))
#define V_SUBS(a, b) _mm256_subs_epi16((a), (b))
#define V_MAX(a, b) _mm256_max_epi16((a), (b))
#define V_BLEND(m, a, b) _mm256_blendv_epi8((a), (b), (m))
#define V_ADD_WHERE(m, a, b) _mm256_add_epi16((a), _mm256_and_si256((m), (b)))
#define M_GT(a, b) _mm256_cmpgt_epi16((a), (b))
#define M_EQ(a, b) _mm256_cmpeq_epi16((a), (b))
#define M_GE(a, b) ge_avx2((a), (b))
#define M_AND(a, b) _mm256_and_si256((a), (b))
#define M_BITS(m) bits_avx2(m)
#define M_GT_WHERE(w, a, b) _mm256_and_si256((w), _mm256_cmpgt_epi16((a), (b)))
#define M_GT_UNLESS(u, a, b) _mm256_andnot_si256((u), _mm256_cmpgt_epi16((a), (b)))
/* masks are -1: 2 + is_e is 1 or 2, cleared where is_d */
#define V_SOURCE(d, e) _mm256_andnot_si256((d), _mm256_add_epi16(_mm256_set1_epi16(2), (e)))
#define MAKE_SCORE_TABLE(p) make_score_table(p)
#define V_SCORE(t, idx) score_avx2((t), (idx))
#define V_STORE_BYTES(p, v) _mm_storeu_si128((__m128i *)(p), low_bytes_avx2(v))
/* vpmovmskb: both bytes of a lane, so lane l at bits 2l and 2l + 1 */
#define PLANE_BYTES 4
#define LANE_BITS 2
#define M_STORE_PLANE(p, m) store_plane_avx2((p), (m))
#define QV_BIAS INT16_MIN
#define LANES_ENTRY align_lanes_avx2
#include "align_lanes_body.h"
#define V_STORE_NIBBLES(p, v) store_nibbles_avx2((p), (v))
#define DIAG_ENTRY align_diag_avx2
#include "align_diag_body.h"
#endif /* WARPDP_X86_SIMD */
