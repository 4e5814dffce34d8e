/* AVX-512 inter-pair lanes of the exact edit distance: 8 pairs per vector.
   Only called after a run-time check (warpdp_cpu_supports). */
#include "cpu_common.h"
#if WARPDP_X86_SIMD /* the whole file: x86 only (cpu_common.h) */
#pragma GCC target("avx512f,avx512bw")
#include <immintrin.h>
#define LANES EDIT_LANES_AVX512
#define LANES_KERNEL edit_lanes_avx512
#define V_GATHER(base, index) \
    ((vu)_mm512_i32gather_epi64(_mm256_loadu_si256((const __m256i *)(index)), (const void *)(base), 8))
#define V_EQ_MASK64(bytes, b) \
    ((uint64_t)_mm512_cmpeq_epi8_mask(_mm512_loadu_si512((const void *)(bytes)), _mm512_set1_epi8((char)(b))))
#include "edit_lanes_body.h"
#endif /* WARPDP_X86_SIMD */
