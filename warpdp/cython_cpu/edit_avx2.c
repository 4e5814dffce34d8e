/* AVX2 inter-pair lanes of the exact edit distance: 4 pairs per vector.
   Only called after a run-time check (warpdp_cpu_supports). */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx2")
#include <immintrin.h>
#define LANES EDIT_LANES_AVX2
#define LANES_KERNEL edit_lanes_avx2
#define V_GATHER(base, index) \
    ((vu)_mm256_i32gather_epi64((const long long *)(base), _mm_loadu_si128((const __m128i *)(index)), 8))
#define V_EQ_HALF(bytes, b) \
    (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(bytes)), _mm256_set1_epi8((char)(b))))
#define V_EQ_MASK64(bytes, b) ((uint64_t)V_EQ_HALF((bytes) + 32, b) << 32 | V_EQ_HALF(bytes, b))
#include "edit_lanes_body.h"
#endif /* WARPDP_X86_SIMD */
