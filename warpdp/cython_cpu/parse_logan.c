/* LOGAN text: one pair per line, `seqV posV seqH posH strand` (warpdp/plugin/xdrop_io.py
   describes the format; its Python reader is the reference this scanner matches). */
#include "parse_scan.h"

/* Copies n bases; 0 when one is not A, C, G, T or N (either case). Written without branches so
   that the compiler vectorises it. */
static int copy_bases(uint8_t *out, const uint8_t *in, int64_t n) {
    uint8_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint8_t c = in[i], lower = c | 0x20; /* only 'A' and 'a' become 'a', and so on */
        bad |= !((lower == 'a') | (lower == 'c') | (lower == 'g') | (lower == 't') | (lower == 'n'));
        out[i] = c;
    }
    return bad == 0;
}

/* A <-> T, C <-> G, N kept, case kept (the bases are already checked). */
static void complement(uint8_t *bases, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint8_t c = bases[i], upper = c & 0xdf;
        uint8_t swapped = upper == 'A' ? 'T' : upper == 'T' ? 'A' : upper == 'C' ? 'G' : upper == 'G' ? 'C' : upper;
        bases[i] = swapped | (c & 0x20);
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
