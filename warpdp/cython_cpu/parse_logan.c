/* LOGAN text: one pair per line, `seqV posV seqH posH strand` (warpdp/plugin/xdrop_io.py
   describes the format; its Python reader is the reference this scanner matches). */
#include "parse_scan.h"

static inline int is_base(uint8_t c) {
    uint8_t lower = c | 0x20; /* only 'A' and 'a' become 'a', and so on */
    return lower == 'a' || lower == 'c' || lower == 'g' || lower == 't' || lower == 'n';
}

/* Copies n bases; 0 when one is not A, C, G, T or N (either case). */
static int copy_bases(uint8_t *out, const uint8_t *in, int64_t n) {
    int64_t i = 0;
#if PARSE_SSE2
    const __m128i case_bit = _mm_set1_epi8(0x20), a = _mm_set1_epi8('a'), c = _mm_set1_epi8('c'),
                  g = _mm_set1_epi8('g'), t = _mm_set1_epi8('t'), nn = _mm_set1_epi8('n');
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(in + i)), lower = _mm_or_si128(v, case_bit);
        __m128i ok = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(lower, a), _mm_cmpeq_epi8(lower, c)),
                                  _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(lower, g), _mm_cmpeq_epi8(lower, t)),
                                               _mm_cmpeq_epi8(lower, nn)));
        if (_mm_movemask_epi8(ok) != 0xffff)
            return 0;
        _mm_storeu_si128((__m128i *)(out + i), v);
    }
#endif
    for (; i < n; i++) {
        if (!is_base(in[i]))
            return 0;
        out[i] = in[i];
    }
    return 1;
}

/* A <-> T, C <-> G, N kept, case kept (the bases are already checked): A ^ T == 0x15 and
   C ^ G == 0x04, and neither touches the case bit. */
static void complement(uint8_t *bases, int64_t n) {
    int64_t i = 0;
#if PARSE_SSE2
    const __m128i upper_bits = _mm_set1_epi8((char)0xdf), a = _mm_set1_epi8('A'), c = _mm_set1_epi8('C'),
                  g = _mm_set1_epi8('G'), t = _mm_set1_epi8('T'), at = _mm_set1_epi8(0x15), cg = _mm_set1_epi8(0x04);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(bases + i)), upper = _mm_and_si128(v, upper_bits);
        __m128i is_at = _mm_or_si128(_mm_cmpeq_epi8(upper, a), _mm_cmpeq_epi8(upper, t));
        __m128i is_cg = _mm_or_si128(_mm_cmpeq_epi8(upper, c), _mm_cmpeq_epi8(upper, g));
        __m128i flip = _mm_or_si128(_mm_and_si128(is_at, at), _mm_and_si128(is_cg, cg));
        _mm_storeu_si128((__m128i *)(bases + i), _mm_xor_si128(v, flip));
    }
#endif
    for (; i < n; i++) {
        uint8_t upper = bases[i] & 0xdf;
        bases[i] ^= upper == 'A' || upper == 'T' ? 0x15 : upper == 'C' || upper == 'G' ? 0x04 : 0;
    }
}

int parse_logan(const uint8_t *text, int64_t size, int64_t k, parse_logan_out *out) {
    const uint8_t *p = text, *end = text + size, *start[5], *stop[5];
    int64_t n = 0, v_total = 0, h_total = 0;
    out->v_offsets[0] = out->h_offsets[0] = 0;
    for (;;) {
        int fields = parse_line(&p, end, start, stop, 5);
        if (fields == 0)
            break;
        if (fields != 5 || n == out->max_pairs)
            return PARSE_DECLINED;
        int64_t v_len = stop[0] - start[0], h_len = stop[2] - start[2];
        int64_t v_pos = parse_digits(start[1], stop[1]), h_pos = parse_digits(start[3], stop[3]);
        if (v_pos < 0 || h_pos < 0 || v_pos > v_len - k || h_pos > h_len - k)
            return PARSE_DECLINED;
        uint8_t strand = *start[4];
        if (stop[4] - start[4] != 1 || (strand != 'n' && strand != 'c'))
            return PARSE_DECLINED;
        uint8_t *h = out->h_bases + h_total;
        if (!copy_bases(out->v_bases + v_total, start[0], v_len) || !copy_bases(h, start[2], h_len))
            return PARSE_DECLINED;
        if (strand == 'c') { /* as LOGAN's demo: seqH complemented, not reversed */
            complement(h, h_len);
            h_pos = h_len - h_pos - k;
        }
        v_total += v_len;
        h_total += h_len;
        out->v_offsets[n + 1] = v_total;
        out->h_offsets[n + 1] = h_total;
        out->v_pos[n] = v_pos;
        out->h_pos[n] = h_pos;
        n++;
    }
    out->n_pairs = n;
    out->v_total = v_total;
    out->h_total = h_total;
    return PARSE_OK;
}
