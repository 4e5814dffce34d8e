/* Fast scanners for the text inputs: LOGAN text (parse_logan.c), seed-extension TSV
   (parse_seedext.c) and Pair-HMM text (parse_pairhmm.c).

   Each reads the whole input once and writes the packed arrays its family takes, or declines
   (PARSE_DECLINED) on anything it does not handle: a malformed line, a byte outside printable
   ASCII within a field, a lone carriage return, a number other than plain digits. The caller then
   runs the Python reader, which either accepts the input or names the line at fault, so the
   scanners never need to say what is wrong.

   Lines end at '\n' (a '\r' just before it is dropped, as universal newlines do); fields are split
   on the ASCII whitespace of Python's str.split(). */
#ifndef WARPDP_PARSE_SCAN_H
#define WARPDP_PARSE_SCAN_H

#include <stdint.h>

#include "cpu_common.h"

#if WARPDP_X86_SIMD && defined(__SSE2__)
#include <emmintrin.h>
#define PARSE_SSE2 1
#else
#define PARSE_SSE2 0
#endif

enum { PARSE_OK = 0, PARSE_DECLINED = 1 };

/* The number of '\n' bytes: with one more, a bound on the number of lines. */
int64_t parse_count_lines(const uint8_t *text, int64_t size);

/* Asks the kernel for small pages in this (untouched) memory: the output arrays are written once,
   front to back, and a huge-page fault can stall in memory compaction for far longer than the
   small-page faults it saves (BENCHMARKS.md, "Text readers"). */
void parse_small_pages(void *memory, int64_t bytes);

/* LOGAN text; v_bases and h_bases hold `size` bytes, the offsets max_pairs + 1 entries, the
   positions max_pairs. */
typedef struct {
    uint8_t *v_bases, *h_bases;
    int64_t *v_offsets, *h_offsets, *v_pos, *h_pos;
    int64_t max_pairs;
    int64_t n_pairs, v_total, h_total; /* out */
} parse_logan_out;

int parse_logan(const uint8_t *text, int64_t size, int64_t k, parse_logan_out *out);

/* Seed-extension TSV; query and target hold `size` bytes, the offsets max_pairs + 1 entries,
   h0 max_pairs. */
typedef struct {
    uint8_t *query, *target;
    int64_t *query_offsets, *target_offsets, *h0;
    int64_t max_pairs;
    int64_t n_pairs, query_total, target_total; /* out */
} parse_seedext_out;

int parse_seedext(const uint8_t *text, int64_t size, int64_t max_h0, parse_seedext_out *out);

/* Pair-HMM text; the five read arrays hold read_capacity bytes, hap_bases `size` bytes, the four
   offset arrays max_lines + 1 entries. */
typedef struct {
    uint8_t *read_bases, *read_quals, *read_ins, *read_del, *read_gcp, *hap_bases;
    int64_t *read_offsets, *hap_offsets, *batch_reads, *batch_haps;
    int64_t read_capacity, max_lines;
    int64_t n_reads, n_haps, n_batches; /* out */
} parse_pairhmm_out;

int parse_pairhmm(const uint8_t *text, int64_t size, int min_base_qual, parse_pairhmm_out *out);

/* ---- shared by the three scanners ---- */

/* Python's str.isspace() within ASCII, '\n' and '\r' left out (they end lines). */
static inline int parse_is_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f);
}

/* The first byte at or after p that cannot be inside a field: one at or below ' ' (whitespace,
   a line end or a control character) or at or above 0x80; `end` when there is none. */
static inline const uint8_t *parse_field_end(const uint8_t *p, const uint8_t *end) {
#if PARSE_SSE2
    const __m128i first_printable = _mm_set1_epi8(0x21);
    while (end - p >= 32) {
        /* A signed compare: bytes at or above 0x80 are negative, so below 0x21 as well. */
        __m128i a = _mm_loadu_si128((const __m128i *)p), b = _mm_loadu_si128((const __m128i *)(p + 16));
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(a, first_printable))
                        | (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(b, first_printable)) << 16;
        if (mask)
            return p + __builtin_ctz(mask);
        p += 32;
    }
#endif
    while (p < end && (int8_t)*p >= 0x21)
        p++;
    return p;
}

/* Skips the spaces between fields: the next field's first byte, the '\n' or `end` that ends the
   line, or NULL for a byte to decline (a lone '\r', a control character, a byte >= 0x80). */
static inline const uint8_t *parse_skip_spaces(const uint8_t *p, const uint8_t *end) {
    while (p < end) {
        uint8_t c = *p;
        if ((c >= 0x21 && c < 0x80) || c == '\n')
            return p;
        if (!parse_is_space(c) && !(c == '\r' && p + 1 < end && p[1] == '\n'))
            return NULL;
        p++;
    }
    return p;
}

/* The fields of the next line that is not blank, at most `max` of them ([start[i], stop[i])),
   the cursor moved past its '\n'. Returns the number of fields, 0 at the end of the input, -1 to
   decline (more than `max` fields, or a byte to decline). */
static inline int parse_line(const uint8_t **cursor, const uint8_t *end, const uint8_t **start,
                             const uint8_t **stop, int max) {
    const uint8_t *p = *cursor;
    while (p < end) {
        int n = 0;
        for (;;) {
            p = parse_skip_spaces(p, end);
            if (p == NULL)
                return -1;
            if (p == end || *p == '\n')
                break;
            if (n == max)
                return -1;
            start[n] = p;
            p = parse_field_end(p, end);
            stop[n++] = p;
        }
        if (p < end)
            p++; /* the '\n' */
        if (n > 0) {
            *cursor = p;
            return n;
        }
    }
    *cursor = p;
    return 0;
}

/* A number of plain decimal digits (at most 18, so it fits), else -1. */
static inline int64_t parse_digits(const uint8_t *p, const uint8_t *end) {
    if (end - p < 1 || end - p > 18)
        return -1;
    int64_t value = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        value = value * 10 + (*p - '0');
    }
    return value;
}

#endif
