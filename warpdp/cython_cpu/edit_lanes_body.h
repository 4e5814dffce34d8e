/* The inter-pair lane body of the exact edit distance, included once per SIMD build with
   LANES (64-bit lanes of a vector), LANES_KERNEL (the entry point's name),
   V_GATHER(base, index) (the 64-bit words at base[index[lane]], index LANES int32 values) and
   V_EQ_MASK64(bytes, b) (bit i set where bytes[i] == b, i < 64).

   One pair per lane: Myers' bit-vector algorithm in Hyyrö's block form (as edit_rows.h's
   block_step), the words of every lane's query in registers, one target column per step for all
   lanes at once. A lane's match masks live in a 256-entry table of its own (only the entries of
   its query's bytes are written; a target byte absent from the query reads a zero entry), and the
   target is laid out column by column as indices into those tables, so each column fetches every
   lane's mask word with one gather. Lanes with shorter targets run on over zero masks and their
   extra columns are masked out of the reductions; a shorter query reads its last row's delta at
   its own bit of the last word (the rows below it never reach the rows above). */
#include <stdint.h>
#include <string.h>
#include "edit_kernel.h"

typedef uint64_t vu __attribute__((vector_size(8 * LANES)));
typedef int64_t vi __attribute__((vector_size(8 * LANES)));

/* The table entry every absent byte reads: past the lanes' tables. */
#define ZERO_ENTRY(words) (LANES * 256 * (words))

static inline vi lanes_select(vi mask, vi yes, vi no)
{
    return (mask & yes) | (~mask & no);
}

/* One column of one word for every lane (see edit_rows.h's block_step); the delta leaving the
   word is read at bit 63, or at each lane's own bit (shift) in its last word. */
static inline __attribute__((always_inline)) void lanes_step(vu eq, vu *pv, vu *mv, vu *hp, vu *hm, vu shift,
                                                             const int last)
{
    const vu p = *pv, mm = *mv;
    const vu xv = eq | mm;
    eq |= *hm;
    const vu xh = (((eq & p) + p) ^ p) | eq;
    vu ph = mm | ~(xh | p);
    vu mh = p & xh;
    const vu out_p = last ? (ph >> shift) & 1 : ph >> 63, out_m = last ? (mh >> shift) & 1 : mh >> 63;
    ph = (ph << 1) | *hp;
    mh = (mh << 1) | *hm;
    *pv = mh | ~(xv | ph);
    *mv = ph & xv;
    *hp = out_p;
    *hm = out_m;
}

/* Per-lane constants of a sweep. */
typedef struct {
    vu shift;        /* the bit of the last row in the last word */
    vi score, first, last, limit;
} lanes_setup;

/* The sweep over columns 1..cols (words and kind constants where it is called, so the words
   stay in registers). */
static inline __attribute__((always_inline)) void lanes_sweep(const uint64_t *peq, const int32_t *codes,
                                                              int64_t cols, const lanes_setup *c, uint64_t top,
                                                              int64_t *rows, vi *value, vi *column,
                                                              const int words, const int kind)
{
    vu pv[EDIT_LANE_WORDS], mv[EDIT_LANE_WORDS];
    for (int w = 0; w < words; w++) {
        pv[w] = (vu){0} - 1; /* column 0: D[i][0] = i */
        mv[w] = (vu){0};
    }
    const vi zero = {0};
    vi score = c->score, j = zero;
    /* Column 0 (the empty target prefix) counts where the range starts at 0. */
    vi best = lanes_select(c->first == zero, score, zero + INT64_MAX), at = kind == EDIT_FIRST_MIN ? zero : zero + 1;
    if (rows != NULL)
        memcpy(rows, &score, sizeof score);
    for (int64_t col = 0; col < cols; col++) {
        const int32_t *index = codes + col * LANES;
        vu hp = (vu){0} + top, hm = {0};
        for (int w = 0; w < words - 1; w++)
            lanes_step(V_GATHER(peq + w, index), &pv[w], &mv[w], &hp, &hm, c->shift, 0);
        lanes_step(V_GATHER(peq + words - 1, index), &pv[words - 1], &mv[words - 1], &hp, &hm, c->shift, 1);
        score += (vi)hp - (vi)hm;
        j += 1;
        if (kind == EDIT_FIRST_MIN) {
            const vi better = (j >= c->first) & (j <= c->last) & (score < best);
            best = lanes_select(better, score, best);
            at = lanes_select(better, j, at);
        } else {
            at = lanes_select((j <= c->last) & (score <= c->limit), j, at);
        }
        if (rows != NULL)
            memcpy(rows + (col + 1) * LANES, &score, sizeof score);
    }
    *value = best;
    *column = at;
}

/* Lane `lane`'s match masks and target indices (columns past its target read the zero entry).
   The masks come a byte value at a time, 64 query bases per compare (V_EQ_MASK64), for each
   value the query holds. */
static void lanes_fill(const edit_lane *l, int lane, int words, int reverse, int64_t cols, uint64_t *peq,
                       int32_t *codes)
{
    const int64_t m = l->m, n = l->n;
    const uint8_t *q = l->q, *t = l->t;
    uint8_t query[64 * EDIT_LANE_WORDS];
    uint64_t valid[EDIT_LANE_WORDS], left[EDIT_LANE_WORDS];
    int32_t code[256];
    if (reverse)
        for (int64_t i = 0; i < m; i++)
            query[i] = q[m - 1 - i];
    else
        memcpy(query, q, (size_t)m);
    memset(query + m, 0, (size_t)(64 * words - m));
    for (int w = 0; w < words; w++)
        left[w] = valid[w] = m >= 64 * (w + 1) ? ~0ull : (1ull << (m - 64 * w)) - 1;
    for (int b = 0; b < 256; b++)
        code[b] = ZERO_ENTRY(words);
    const int32_t base = lane * 256 * words;
    for (int w = 0; w < words; w++)
        while (left[w] != 0) {
            const uint8_t b = query[64 * w + __builtin_ctzll(left[w])];
            code[b] = base + b * words;
            for (int v = w; v < words; v++) {
                const uint64_t mask = V_EQ_MASK64(query + 64 * v, b) & valid[v];
                peq[code[b] + v] = mask;
                left[v] &= ~mask;
            }
            for (int v = 0; v < w; v++)
                peq[code[b] + v] = 0; /* b first occurs in word w */
        }
    int32_t *column = codes + lane;
    if (reverse)
        for (int64_t j = 0; j < n; j++)
            column[j * LANES] = code[t[n - 1 - j]];
    else
        for (int64_t j = 0; j < n; j++)
            column[j * LANES] = code[t[j]];
    for (int64_t j = n; j < cols; j++)
        column[j * LANES] = ZERO_ENTRY(words);
}

int LANES_KERNEL(const edit_lane *lanes, int count, const edit_sweep *s, int64_t *value, int64_t *column,
                 warpdp_workspace *ws)
{
    const int words = s->words;
    int64_t cols = 0;
    for (int k = 0; k < count; k++)
        cols = lanes[k].n > cols ? lanes[k].n : cols;
    const size_t table_words = (size_t)ZERO_ENTRY(words) + (size_t)words;
    uint64_t *peq = warpdp_workspace_reserve(ws, table_words * 8 + (size_t)cols * LANES * 4);
    if (peq == NULL)
        return -1;
    int32_t *codes = (int32_t *)(peq + table_words);
    int64_t shift[LANES], score[LANES], first[LANES], last[LANES], limit[LANES];
    for (int w = 0; w < words; w++)
        peq[ZERO_ENTRY(words) + w] = 0;
    for (int k = 0; k < LANES; k++) {
        const edit_lane idle = {NULL, NULL, 1, 0, 0}; /* past count: no column counts */
        const edit_lane *l = k < count ? &lanes[k] : &idle;
        if (k < count)
            lanes_fill(l, k, words, s->reverse, cols, peq, codes);
        else
            for (int64_t j = 0; j < cols; j++)
                codes[j * LANES + k] = ZERO_ENTRY(words);
        shift[k] = (l->m - 1) % 64;
        score[k] = l->m;
        first[k] = s->nw ? l->n : 0;
        last[k] = l->n;
        limit[k] = l->limit;
    }
    lanes_setup c;
    memcpy(&c.shift, shift, sizeof c.shift);
    memcpy(&c.score, score, sizeof c.score);
    memcpy(&c.first, first, sizeof c.first);
    memcpy(&c.last, last, sizeof c.last);
    memcpy(&c.limit, limit, sizeof c.limit);
    const uint64_t top = s->free_start ? 0 : 1;
    vi best, at;
#define SWEEP(W)                                                                                   \
    if (s->kind == EDIT_FIRST_MIN)                                                                 \
        lanes_sweep(peq, codes, cols, &c, top, s->rows, &best, &at, W, EDIT_FIRST_MIN);            \
    else                                                                                           \
        lanes_sweep(peq, codes, cols, &c, top, s->rows, &best, &at, W, EDIT_LAST_WITHIN);          \
    break;
    switch (words) {
    case 1: SWEEP(1)
    case 2: SWEEP(2)
    case 3: SWEEP(3)
    default: SWEEP(4)
    }
#undef SWEEP
    int64_t best_out[LANES], at_out[LANES];
    memcpy(best_out, &best, sizeof best);
    memcpy(at_out, &at, sizeof at);
    for (int k = 0; k < count; k++) {
        value[k] = best_out[k];
        column[k] = at_out[k];
    }
    return 0;
}

#undef ZERO_ENTRY
