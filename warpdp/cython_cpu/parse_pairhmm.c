/* Pair-HMM text: records of a line `R H`, R read lines `bases quals insGOP delGOP GCP`
   (phred+33) and H haplotype lines; blank lines skipped anywhere (warpdp/plugin/pairhmm_text.py
   describes the format; its Python reader is the reference this scanner matches). */
#include "parse_scan.h"

/* Copies n bytes, lower case raised to upper case (str.upper() within ASCII). */
static void copy_upper(uint8_t *out, const uint8_t *in, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint8_t c = in[i];
        out[i] = (uint8_t)(c - ((uint8_t)(c - 'a') < 26 ? 0x20 : 0));
    }
}

/* Phred values from phred+33 text, raised to at least `floor`. Field bytes are at least '!'
   (parse_field_end), so none goes below 0. */
static void copy_phred(uint8_t *out, const uint8_t *in, int64_t n, uint8_t floor) {
    for (int64_t i = 0; i < n; i++) {
        uint8_t q = (uint8_t)(in[i] - 33);
        out[i] = q < floor ? floor : q;
    }
}

/* The R read lines of a record. */
static int read_lines(const uint8_t **p, const uint8_t *end, int64_t n_reads, uint8_t min_base_qual,
                      parse_pairhmm_out *out) {
    const uint8_t *start[5], *stop[5];
    int64_t total = out->read_offsets[out->n_reads];
    for (int64_t r = 0; r < n_reads; r++) {
        if (parse_line(p, end, start, stop, 5) != 5)
            return PARSE_DECLINED;
        int64_t len = stop[0] - start[0];
        for (int f = 1; f < 5; f++)
            if (stop[f] - start[f] != len)
                return PARSE_DECLINED;
        if (len > out->read_capacity - total)
            return PARSE_DECLINED;
        copy_upper(out->read_bases + total, start[0], len);
        copy_phred(out->read_quals + total, start[1], len, min_base_qual);
        copy_phred(out->read_ins + total, start[2], len, 0);
        copy_phred(out->read_del + total, start[3], len, 0);
        copy_phred(out->read_gcp + total, start[4], len, 0);
        total += len;
        out->read_offsets[++out->n_reads] = total;
    }
    return PARSE_OK;
}

/* The H haplotype lines of a record; hap_bases holds as many bytes as the input. */
static int hap_lines(const uint8_t **p, const uint8_t *end, int64_t n_haps, parse_pairhmm_out *out) {
    const uint8_t *start[1], *stop[1];
    int64_t total = out->hap_offsets[out->n_haps];
    for (int64_t h = 0; h < n_haps; h++) {
        if (parse_line(p, end, start, stop, 1) != 1)
            return PARSE_DECLINED;
        int64_t len = stop[0] - start[0];
        copy_upper(out->hap_bases + total, start[0], len);
        total += len;
        out->hap_offsets[++out->n_haps] = total;
    }
    return PARSE_OK;
}

int parse_pairhmm(const uint8_t *text, int64_t size, int min_base_qual, parse_pairhmm_out *out) {
    const uint8_t *p = text, *end = text + size, *start[2], *stop[2];
    if (min_base_qual < 0 || min_base_qual > 127)
        return PARSE_DECLINED;
    out->n_reads = out->n_haps = out->n_batches = 0;
    out->read_offsets[0] = out->hap_offsets[0] = out->batch_reads[0] = out->batch_haps[0] = 0;
    for (;;) {
        int fields = parse_line(&p, end, start, stop, 2);
        if (fields == 0)
            break;
        if (fields != 2)
            return PARSE_DECLINED;
        int64_t n_reads = parse_digits(start[0], stop[0]), n_haps = parse_digits(start[1], stop[1]);
        /* Every read and haplotype takes a line, so more than max_lines of them cannot follow. */
        if (n_reads < 1 || n_haps < 1 || n_reads > out->max_lines - out->n_reads
            || n_haps > out->max_lines - out->n_haps || out->n_batches == out->max_lines)
            return PARSE_DECLINED;
        if (read_lines(&p, end, n_reads, (uint8_t)min_base_qual, out) != PARSE_OK
            || hap_lines(&p, end, n_haps, out) != PARSE_OK)
            return PARSE_DECLINED;
        out->n_batches++;
        out->batch_reads[out->n_batches] = out->n_reads;
        out->batch_haps[out->n_batches] = out->n_haps;
    }
    return PARSE_OK;
}
