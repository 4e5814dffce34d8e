/* The last row of the exact edit DP over a band (included by edit_exact.h).

   Band: with a bound k, a column computes only the blocks that may hold a cell of an alignment
   of cost <= k (Ukkonen's cut-off, tightened by a lower bound on the cost still to come from
   each cell, as in A*). Every value computed is an upper bound on the true D (a cell outside the
   band counts as EDIT_FAR; a block entering the band starts from values reachable by a gap), and
   every cell of an alignment of cost <= k is exact (a query of a few words: every cell), so a
   value <= k is exact and a minimum above k proves the distance above k. */

/* Row values of cells that no computed block holds. */
#define EDIT_FAR (INT64_MAX / 4)
/* last_row's words of short problems (most of Hirschberg's calls) kept on the stack. */
#define EDIT_STACK_WORDS 512

typedef struct {
    int64_t k;          /* -1: no band, every cell exact */
    int64_t extra_rows; /* query rows the whole alignment still consumes after row m (Hirschberg's halves) */
    int free_start;     /* D[0][j] = 0 (HW) instead of j */
    int free_end;       /* the alignment may end before the target's last column (SHW, HW) */
} band_rule;

/* Lower bound on the cost still to come from a cell whose remaining query rows exceed its
   remaining target columns by c. */
static inline int64_t rest_cost(int64_t c, int free_end)
{
    return c >= 0 ? c : (free_end ? 0 : -c);
}

/* Lower bound over a block's cells of value + cost to come, from the value at its bottom row
   (score) and c there: a cell x rows up has value >= score - x and c + x. */
static inline int64_t block_bound(int64_t score, int64_t c, int free_end)
{
    if (free_end)
        return score + (c > -63 ? c : -63);
    return score + (c >= -63 ? c : -c - 126);
}

/* One column of a 64-row block (Myers / Hyyrö): vertical deltas pv/mv (+1 / -1 bits), eq the
   rows equal to the target base; hp/hm the horizontal delta entering at the top (+1 / -1),
   replaced by the one leaving at row `bit`. */
static inline void block_step(uint64_t eq, uint64_t *pv, uint64_t *mv, uint64_t *hp, uint64_t *hm, int bit)
{
    const uint64_t p = *pv, mm = *mv;
    const uint64_t xv = eq | mm;
    eq |= *hm; /* a -1 entering from above acts as a match in the block's first row */
    const uint64_t xh = (((eq & p) + p) ^ p) | eq;
    uint64_t ph = mm | ~(xh | p);
    uint64_t mh = p & xh;
    const uint64_t out_p = (ph >> bit) & 1u, out_m = (mh >> bit) & 1u;
    ph = (ph << 1) | *hp;
    mh = (mh << 1) | *hm;
    *pv = mh | ~(xv | ph);
    *mv = ph & xv;
    *hp = out_p;
    *hm = out_m;
}

/* One pass's band: blocks [first, last] with the values at their bottom rows, and the rule. */
typedef struct {
    int64_t first, last, first_score, last_score, m, blocks, goal;
    uint64_t *pv, *mv;
    const band_rule *rule;
} band;

static inline int64_t block_rows(int64_t b, int64_t m)
{
    return 64 * (b + 1) < m ? 64 : m - 64 * b;
}

/* Whether block b of the band holds no cell of an alignment of cost <= k, now or later (score:
   its bottom value; col: the column). Block 0 is also where alignments through row 0 of later columns go
   on, so it goes only when those are above k too: with a free start, when the cost to come
   alone exceeds k at its bottom row; else when D[0][col] = col plus the cost to come does
   (neither falls as columns pass). */
static inline int block_dead(const band *s, int64_t b, int64_t score, int64_t col)
{
    const band_rule *r = s->rule;
    const int64_t c = s->goal + col - (64 * b + block_rows(b, s->m));
    if (b == 0 && r->free_start)
        return (c > 0 ? c : 0) > r->k;
    if (b == 0 && col + rest_cost(s->goal + col, r->free_end) <= r->k)
        return 0;
    return block_bound(score, c, r->free_end) > r->k;
}

/* Net vertical change over block b's rows (its bottom value minus the one above it). */
static inline int64_t block_rise(const uint64_t *pv, const uint64_t *mv, int64_t b, int64_t m)
{
    const int64_t rows = block_rows(b, m);
    const uint64_t mask = rows == 64 ? ~0ull : (1ull << rows) - 1;
    return (int64_t)__builtin_popcountll(pv[b] & mask) - (int64_t)__builtin_popcountll(mv[b] & mask);
}

/* Moves the band's edges after column col (only adds blocks unless full: a block kept longer
   than needed costs time, never exactness); returns 0 when no block is left. */
static int settle_band(band *s, int64_t col, int full)
{
    const band_rule *r = s->rule;
    while (full && block_dead(s, s->last, s->last_score, col)) {
        if (s->last == s->first)
            return 0;
        s->last_score -= block_rise(s->pv, s->mv, s->last, s->m);
        s->last--;
    }
    /* A cell below can join an alignment of cost <= k only through the bottom row (one row per
       column or a vertical gap): start the next block from that gap's values, upper bounds. */
    while (s->last < s->blocks - 1 &&
           s->last_score + rest_cost(s->goal + col - (64 * s->last + block_rows(s->last, s->m)), r->free_end) <=
               r->k) {
        s->last++;
        s->pv[s->last] = ~0ull;
        s->mv[s->last] = 0;
        s->last_score += block_rows(s->last, s->m);
    }
    while (full && s->first < s->last && block_dead(s, s->first, s->first_score, col)) {
        s->first++;
        s->first_score += block_rise(s->pv, s->mv, s->first, s->m);
    }
    return 1;
}

/* Columns j and j + 1 over blocks [from, to], software-pipelined: block b of column j beside
   block b - 1 of column j + 1, two independent carry chains. Column j + 1 is left done up to
   block to - 1, its carry into block `to` in *hp1, *hm1. delta[0], delta[1]: the change at
   block from's bottom in columns j and j + 1 (the latter only when to > from); delta[2]: at
   block to's bottom in column j. */
static inline void column_pair(const uint64_t *eq0, const uint64_t *eq1, band *s, int64_t from, int64_t to,
                               int lastbit, uint64_t top, uint64_t *hp1, uint64_t *hm1, int64_t delta[3])
{
    uint64_t *pv = s->pv, *mv = s->mv;
    const int64_t final = s->blocks - 1;
    uint64_t hp0 = top, hm0 = 0, p1 = top, m1 = 0; /* in registers through the loop */
    delta[1] = 0;
    block_step(eq0[from], &pv[from], &mv[from], &hp0, &hm0, from == final ? lastbit : 63);
    delta[0] = delta[2] = (int64_t)hp0 - (int64_t)hm0;
    if (to > from) {
        int64_t b = from + 1;
        block_step(eq0[b], &pv[b], &mv[b], &hp0, &hm0, b == final ? lastbit : 63);
        block_step(eq1[from], &pv[from], &mv[from], &p1, &m1, 63);
        delta[1] = (int64_t)p1 - (int64_t)m1;
        for (b++; b < to; b++) {
            block_step(eq0[b], &pv[b], &mv[b], &hp0, &hm0, 63);
            block_step(eq1[b - 1], &pv[b - 1], &mv[b - 1], &p1, &m1, 63);
        }
        if (b == to) {
            block_step(eq0[b], &pv[b], &mv[b], &hp0, &hm0, b == final ? lastbit : 63);
            block_step(eq1[b - 1], &pv[b - 1], &mv[b - 1], &p1, &m1, 63);
        }
        delta[2] = (int64_t)hp0 - (int64_t)hm0;
    }
    *hp1 = p1;
    *hm1 = m1;
}

/* Queries of up to this many words run without a band: following its edges would cost more
   than the few blocks it could skip. */
#define EDIT_UNBANDED_WORDS 4
static inline int unbanded(int64_t m)
{
    return m <= 64 * EDIT_UNBANDED_WORDS;
}

/* last_row of a query of `words` <= EDIT_UNBANDED_WORDS words (a constant where it is
   called, so the blocks stay in registers): every value exact. The match masks of the bytes
   that occur are set up without clearing a whole table. */
static inline void last_row_words(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, int free_start,
                                  int64_t *row, const int words)
{
    uint64_t eq[256][EDIT_UNBANDED_WORDS], pv[EDIT_UNBANDED_WORDS], mv[EDIT_UNBANDED_WORDS];
    for (int64_t j = 0; j < n; j++)
        for (int b = 0; b < words; b++)
            eq[t[j]][b] = 0;
    for (int64_t i = 0; i < m; i++)
        for (int b = 0; b < words; b++)
            eq[q[i]][b] = 0;
    for (int64_t i = 0; i < m; i++)
        eq[q[i]][i / 64] |= 1ull << (i % 64);
    for (int b = 0; b < words; b++) {
        pv[b] = ~0ull;
        mv[b] = 0;
    }
    const uint64_t top = free_start ? 0 : 1;
    const int lastbit = (int)((m - 1) % 64);
    int64_t score = m;
    row[0] = m;
    for (int64_t j = 0; j < n; j++) {
        const uint64_t *e = eq[t[j]];
        uint64_t hp = top, hm = 0;
        for (int b = 0; b < words - 1; b++)
            block_step(e[b], &pv[b], &mv[b], &hp, &hm, 63);
        block_step(e[words - 1], &pv[words - 1], &mv[words - 1], &hp, &hm, lastbit);
        score += (int64_t)hp - (int64_t)hm;
        row[j + 1] = score;
    }
}

static void last_row_short(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, int free_start, int64_t *row)
{
    switch ((m + 63) / 64) {
    case 1:
        last_row_words(q, m, t, n, free_start, row, 1);
        break;
    case 2:
        last_row_words(q, m, t, n, free_start, row, 2);
        break;
    case 3:
        last_row_words(q, m, t, n, free_start, row, 3);
        break;
    default:
        last_row_words(q, m, t, n, free_start, row, 4);
        break;
    }
}

/* map[byte] = its symbol, 1.. in order of first occurrence in q; 0 (a target byte absent from
   the query, whose match mask stays all zero) for the rest. Returns the symbols' count. */
static int symbol_map(const uint8_t *q, int64_t m, uint16_t map[256])
{
    memset(map, 0, 256 * sizeof(uint16_t));
    int symbols = 0;
    for (int64_t i = 0; i < m; i++)
        if (map[q[i]] == 0)
            map[q[i]] = (uint16_t)++symbols;
    return symbols;
}

/* row[j] for j = 0..n: an upper bound on D[m][j], exact where an alignment of cost <= k (under
   rule r) passes through it, EDIT_FAR outside the band; with k = -1, exactly D[m][j]. Query
   q[0..m) (m >= 1) down the bits, target t[0..n) across; D[i][0] = i, D[0][j] = j or 0 (free
   start). Returns the column where the band emptied (n + 1 when it never did) or -1 (out of
   memory). */
static int64_t last_row(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const band_rule *r, int64_t *row)
{
    if (unbanded(m)) {
        last_row_short(q, m, t, n, r->free_start, row);
        return n + 1;
    }
    const int64_t blocks = (m + 63) / 64;
    uint16_t map[256];
    const int symbols = symbol_map(q, m, map);
    const size_t words = (size_t)(symbols + 3) * (size_t)blocks;
    uint64_t small[EDIT_STACK_WORDS];
    uint64_t *mem = words <= EDIT_STACK_WORDS ? small : (uint64_t *)malloc(words * sizeof(uint64_t));
    if (mem == NULL)
        return -1;
    memset(mem, 0, words * sizeof(uint64_t));
    uint64_t *peq = mem;
    band s = {0, blocks - 1, block_rows(0, m), m, m, blocks, m + r->extra_rows - n,
              mem + (size_t)(symbols + 1) * (size_t)blocks, NULL, r};
    s.mv = s.pv + blocks;
    for (int64_t i = 0; i < m; i++)
        peq[(size_t)map[q[i]] * (size_t)blocks + (size_t)(i / 64)] |= 1ull << (i % 64);
    for (int64_t b = 0; b < blocks; b++)
        s.pv[b] = ~0ull; /* column 0: D[i][0] = i */
    const int lastbit = (int)((m - 1) % 64);
    const int banded = r->k >= 0;
    row[0] = m;
    int64_t j = 0;
    if (banded) {
        s.last = 0;
        s.last_score = block_rows(0, m);
        if (!settle_band(&s, 0, 1))
            goto empty;
    }
    while (j < n) {
        const uint64_t top = r->free_start && s.first == 0 ? 0 : 1;
        const uint64_t *eq0 = peq + (size_t)map[t[j]] * (size_t)blocks;
        uint64_t hp1 = top, hm1 = 0;
        const int64_t from = s.first, to = s.last;
        if (j + 1 == n) { /* the last column alone */
            for (int64_t b = from; b <= to; b++) {
                block_step(eq0[b], &s.pv[b], &s.mv[b], &hp1, &hm1, b == blocks - 1 ? lastbit : 63);
                if (b == from)
                    s.first_score += (int64_t)hp1 - (int64_t)hm1;
            }
        } else {
            const uint64_t *eq1 = peq + (size_t)map[t[j + 1]] * (size_t)blocks;
            int64_t delta[3];
            column_pair(eq0, eq1, &s, from, to, lastbit, top, &hp1, &hm1, delta);
            s.first_score += delta[0];
            s.last_score += delta[2];
            j++; /* column j (1-based) done */
            if (banded)
                settle_band(&s, j, 0);
            row[j] = s.last == blocks - 1 ? s.last_score : EDIT_FAR;
            for (int64_t b = to; b <= s.last; b++) { /* the rest of the next column, added blocks too */
                block_step(eq1[b], &s.pv[b], &s.mv[b], &hp1, &hm1, b == blocks - 1 ? lastbit : 63);
                if (b == from)
                    delta[1] = (int64_t)hp1 - (int64_t)hm1;
            }
            s.first_score += delta[1];
        }
        s.last_score += (int64_t)hp1 - (int64_t)hm1;
        j++;
        if (banded && !settle_band(&s, j, 1))
            goto empty;
        row[j] = s.last == blocks - 1 ? s.last_score : EDIT_FAR;
    }
    if (mem != small)
        free(mem);
    return n + 1;
empty:
    for (int64_t col = j; col <= n; col++)
        row[col] = EDIT_FAR;
    if (mem != small)
        free(mem);
    return j;
}
