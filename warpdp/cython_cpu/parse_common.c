/* What the three text scanners share (the rest is inline, in parse_scan.h). */
#include "parse_scan.h"

int64_t parse_count_lines(const uint8_t *text, int64_t size) {
    int64_t lines = 0;
    for (int64_t i = 0; i < size; i++)
        lines += text[i] == '\n';
    return lines;
}
