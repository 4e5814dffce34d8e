/* What the three text scanners share (the rest is inline, in parse_scan.h). */
#include "parse_scan.h"

int64_t parse_count_lines(const uint8_t *text, int64_t size) {
    int64_t lines = 0, i = 0;
#if PARSE_SSE2
    const __m128i newline = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (size - i >= 16) {
        /* Per-byte counters (a match is -1, so subtracting adds 1), summed before they can wrap. */
        __m128i counts = zero;
        for (int block = 0; block < 255 && size - i >= 16; block++, i += 16)
            counts = _mm_sub_epi8(counts, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(text + i)), newline));
        __m128i sums = _mm_sad_epu8(counts, zero);
        lines += _mm_cvtsi128_si64(sums) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums));
    }
#endif
    for (; i < size; i++)
        lines += text[i] == '\n';
    return lines;
}

#ifdef __linux__
#include <sys/mman.h>
#endif

void parse_small_pages(void *memory, int64_t bytes) {
#if defined(__linux__) && defined(MADV_NOHUGEPAGE)
    const uintptr_t page = 4096;
    uintptr_t start = ((uintptr_t)memory + page - 1) & ~(page - 1);
    uintptr_t stop = ((uintptr_t)memory + (uintptr_t)bytes) & ~(page - 1);
    if (stop > start)
        madvise((void *)start, stop - start, MADV_NOHUGEPAGE); /* advice only: a failure changes nothing */
#else
    (void)memory;
    (void)bytes;
#endif
}
