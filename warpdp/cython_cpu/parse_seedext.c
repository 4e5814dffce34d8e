/* Seed-extension TSV: one pair per line, `query <TAB> target <TAB> h0`, or the three fields
   separated by spaces on a line without a tab; blank lines and lines starting with '#' skipped
   (warpdp/plugin/seedext_io.py describes the format; its Python reader is the reference this
   scanner matches). Queries and targets are copied as they are, whatever their bytes. */
#include <string.h>

#include "parse_scan.h"

/* 0 when the line holds a byte to decline: >= 0x80, or a '\r' that universal newlines would
   have read as a line end. */
static int plain_line(const uint8_t *p, const uint8_t *end) {
    uint8_t bad = 0;
    for (int64_t i = 0; i < end - p; i++)
        bad |= (p[i] >= 0x80) | (p[i] == '\r');
    return bad == 0;
}

/* [*start, *stop) without the whitespace at either end (str.strip()). */
static void strip(const uint8_t **start, const uint8_t **stop) {
    while (*start < *stop && parse_is_space(**start))
        (*start)++;
    while (*stop > *start && parse_is_space((*stop)[-1]))
        (*stop)--;
}

/* The three fields of a line that has no tab: split at runs of whitespace (str.split()).
   0 unless there are exactly three. */
static int split_on_spaces(const uint8_t *p, const uint8_t *end, const uint8_t **start, const uint8_t **stop) {
    int n = 0;
    for (;;) {
        while (p < end && parse_is_space(*p))
            p++;
        if (p == end)
            return n == 3;
        if (n == 3)
            return 0;
        start[n] = p;
        while (p < end && !parse_is_space(*p))
            p++;
        stop[n++] = p;
    }
}

int parse_seedext(const uint8_t *text, int64_t size, int64_t max_h0, parse_seedext_out *out) {
    const uint8_t *p = text, *end = text + size, *start[3], *stop[3];
    int64_t n = 0, query_total = 0, target_total = 0;
    out->query_offsets[0] = out->target_offsets[0] = 0;
    while (p < end) {
        const uint8_t *line = p, *line_end = memchr(p, '\n', (size_t)(end - p));
        if (line_end == NULL)
            line_end = end;
        p = line_end < end ? line_end + 1 : end;
        if (line_end < end && line_end > line && line_end[-1] == '\r')
            line_end--; /* "\r\n" */
        if (!plain_line(line, line_end))
            return PARSE_DECLINED;
        const uint8_t *first = line, *last = line_end;
        strip(&first, &last);
        if (first == last || *line == '#')
            continue; /* blank, or a comment */
        const uint8_t *tab1 = memchr(line, '\t', (size_t)(line_end - line)), *tab2 = NULL;
        if (tab1 != NULL) { /* split at tabs: exactly two */
            tab2 = memchr(tab1 + 1, '\t', (size_t)(line_end - tab1 - 1));
            if (tab2 == NULL || memchr(tab2 + 1, '\t', (size_t)(line_end - tab2 - 1)) != NULL)
                return PARSE_DECLINED;
            start[0] = line, stop[0] = tab1;
            start[1] = tab1 + 1, stop[1] = tab2;
            start[2] = tab2 + 1, stop[2] = line_end;
            for (int f = 0; f < 3; f++)
                strip(&start[f], &stop[f]);
        } else if (!split_on_spaces(line, line_end, start, stop)) {
            return PARSE_DECLINED;
        }
        int64_t h0 = parse_digits(start[2], stop[2]);
        if (h0 < 0 || h0 > max_h0 || n == out->max_pairs)
            return PARSE_DECLINED;
        int64_t query_len = stop[0] - start[0], target_len = stop[1] - start[1];
        memcpy(out->query + query_total, start[0], (size_t)query_len);
        memcpy(out->target + target_total, start[1], (size_t)target_len);
        query_total += query_len;
        target_total += target_len;
        out->query_offsets[n + 1] = query_total;
        out->target_offsets[n + 1] = target_total;
        out->h0[n++] = h0;
    }
    out->n_pairs = n;
    out->query_total = query_total;
    out->target_total = target_total;
    return PARSE_OK;
}
