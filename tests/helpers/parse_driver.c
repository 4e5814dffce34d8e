/* Runs the three text scanners (warpdp/cython_cpu/parse_*.c) over each file named on the command
   line, with buffers of exactly the sizes parse.pyx gives them, and prints per file and scanner
   whether it accepted the input and a hash of what it wrote: test_text_scanners compares a build
   without the x86 SIMD paths against one with them. */
#include <stdio.h>
#include <stdlib.h>

#include "parse_scan.h"

static uint64_t hash_bytes(uint64_t hash, const void *data, int64_t n) {
    const uint8_t *bytes = data;
    for (int64_t i = 0; i < n; i++)
        hash = (hash ^ bytes[i]) * 1099511628211ull; /* FNV-1a */
    return hash;
}

/* Exactly n bytes (AddressSanitizer then sees a byte past them), never NULL. */
static void *alloc(int64_t n) {
    void *memory = malloc(n > 0 ? (size_t)n : 1);
    if (memory == NULL)
        exit(2);
    return memory;
}

static uint8_t *read_file(const char *path, int64_t *size) {
    FILE *file = fopen(path, "rb");
    if (file == NULL || fseek(file, 0, SEEK_END) != 0)
        exit(2);
    *size = ftell(file);
    rewind(file);
    uint8_t *data = malloc(*size > 0 ? (size_t)*size : 1);
    if (data == NULL || fread(data, 1, (size_t)*size, file) != (size_t)*size)
        exit(2);
    fclose(file);
    return data;
}

static void logan(const uint8_t *text, int64_t size, int64_t lines) {
    parse_logan_out o = {.v_bases = alloc(size), .h_bases = alloc(size), .max_pairs = lines,
                         .v_offsets = alloc(8 * (lines + 1)), .h_offsets = alloc(8 * (lines + 1)),
                         .v_pos = alloc(8 * lines), .h_pos = alloc(8 * lines)};
    for (int64_t k = 1; k <= 3; k++) {
        int status = parse_logan(text, size, k, &o);
        uint64_t h = 14695981039346656037ull;
        if (status == PARSE_OK) {
            h = hash_bytes(hash_bytes(h, o.v_bases, o.v_total), o.h_bases, o.h_total);
            h = hash_bytes(hash_bytes(h, o.v_offsets, 8 * (o.n_pairs + 1)), o.h_offsets, 8 * (o.n_pairs + 1));
            h = hash_bytes(hash_bytes(h, o.v_pos, 8 * o.n_pairs), o.h_pos, 8 * o.n_pairs);
        }
        printf(" logan(k=%d) %d %016llx", (int)k, status, (unsigned long long)h);
    }
    free(o.v_bases), free(o.h_bases), free(o.v_offsets), free(o.h_offsets), free(o.v_pos), free(o.h_pos);
}

static void seedext(const uint8_t *text, int64_t size, int64_t lines) {
    parse_seedext_out o = {.query = alloc(size), .target = alloc(size), .max_pairs = lines,
                           .query_offsets = alloc(8 * (lines + 1)), .target_offsets = alloc(8 * (lines + 1)),
                           .h0 = alloc(8 * lines)};
    int status = parse_seedext(text, size, 1 << 30, &o);
    uint64_t h = 14695981039346656037ull;
    if (status == PARSE_OK) {
        h = hash_bytes(hash_bytes(h, o.query, o.query_total), o.target, o.target_total);
        h = hash_bytes(hash_bytes(h, o.query_offsets, 8 * (o.n_pairs + 1)), o.target_offsets, 8 * (o.n_pairs + 1));
        h = hash_bytes(h, o.h0, 8 * o.n_pairs);
    }
    printf(" seedext %d %016llx", status, (unsigned long long)h);
    free(o.query), free(o.target), free(o.query_offsets), free(o.target_offsets), free(o.h0);
}

static void pairhmm(const uint8_t *text, int64_t size, int64_t lines) {
    int64_t capacity = size / 5 + 1;
    parse_pairhmm_out o = {.read_bases = alloc(capacity), .read_quals = alloc(capacity),
                           .read_ins = alloc(capacity), .read_del = alloc(capacity), .read_gcp = alloc(capacity),
                           .hap_bases = alloc(size), .read_capacity = capacity, .max_lines = lines,
                           .read_offsets = alloc(8 * (lines + 1)), .hap_offsets = alloc(8 * (lines + 1)),
                           .batch_reads = alloc(8 * (lines + 1)), .batch_haps = alloc(8 * (lines + 1))};
    int status = parse_pairhmm(text, size, 6, &o);
    uint64_t h = 14695981039346656037ull;
    if (status == PARSE_OK) {
        int64_t bases = o.read_offsets[o.n_reads];
        uint8_t *reads[] = {o.read_bases, o.read_quals, o.read_ins, o.read_del, o.read_gcp};
        for (int i = 0; i < 5; i++)
            h = hash_bytes(h, reads[i], bases);
        h = hash_bytes(hash_bytes(h, o.hap_bases, o.hap_offsets[o.n_haps]), o.read_offsets, 8 * (o.n_reads + 1));
        h = hash_bytes(hash_bytes(h, o.hap_offsets, 8 * (o.n_haps + 1)), o.batch_reads, 8 * (o.n_batches + 1));
        h = hash_bytes(h, o.batch_haps, 8 * (o.n_batches + 1));
    }
    printf(" pairhmm %d %016llx", status, (unsigned long long)h);
    free(o.read_bases), free(o.read_quals), free(o.read_ins), free(o.read_del), free(o.read_gcp);
    free(o.hap_bases), free(o.read_offsets), free(o.hap_offsets), free(o.batch_reads), free(o.batch_haps);
}

int main(int argc, char **argv) {
    for (int a = 1; a < argc; a++) {
        int64_t size;
        uint8_t *text = read_file(argv[a], &size);
        int64_t lines = parse_count_lines(text, size) + 1;
        printf("%s lines %lld", argv[a], (long long)lines);
        logan(text, size, lines);
        seedext(text, size, lines);
        pairhmm(text, size, lines);
        printf("\n");
        free(text);
    }
    return 0;
}
