/* Body of the align family's intra-pair SIMD kernel for long pairs (generic modes), included once per
   (instruction set, cell type) after align_lanes_body.h, whose macros (LANES, CELL, VEC, V_*, M_*,
   SCORE_TABLE, QV_BIAS) and helpers (round64, border) it uses. The includer defines DIAG_ENTRY and
   V_STORE_NIBBLES(p, v): the low 4 bits of the LANES lanes, two to a byte (lane 2k low), to p.

   One pair, anti-diagonal by anti-diagonal: diagonal d holds the cells (i, d - i), and every cell of
   it depends only on diagonals d - 1 (up, left) and d - 2 (diagonal), so LANES consecutive rows i are
   one vector with no dependency between them. Arrays are indexed by the row i ("slot"); each cell is
   the scalar kernel's (align_body.h: the same recurrences, traceback bits and best cell), so the
   result is the scalar variant's bit for bit.

   Traceback in linear memory: the pass keeps no traceback bits, only every K-th pair of diagonals
   (a checkpoint). align_trace_back asks for cells along its path, diagonal after diagonal downwards
   and never to a higher row; for a cell before the block of diagonals computed last, the block
   holding it (K diagonals from a checkpoint) is computed again with traceback bits, in a window of
   rows: a path entering the block in row i1 at diagonal d1 stays in rows >= i1 - (d1 - d) at
   diagonal d, and a cell in row i of diagonal d0 + t is right once its window's rows start at or
   below i - t (each diagonal depends on the row above), so rows i1 - K - 1 .. i1 suffice: about
   2 K (m + n) cells again in all, a few per cent of the pass.

   A diagonal's vectors start at a multiple of LANES (aligned stores) at or below its first row lo,
   and the last may run past its last row hi: the slots outside lo..hi hold values of no cell and
   are overwritten (a border written after the diagonal, the next diagonal's traceback bits) or
   never read; the best-cell statistics leave them out. Slot arrays have LANES slots of room below
   slot 0. */

typedef struct {
    int64_t m, n;
    CELL *h[3], *e[2], *f[2]; /* by slot: H of three diagonals, E and F of two (rotating) */
    CELL *qv;                 /* qv[i] = 5 * code(q[i - 1]) + QV_BIAS */
    CELL *tv;                 /* tv[k] = code(t[n - 1 - k]): cell (i, d - i)'s target code is tv[n - d + i];
                                 LANES entries of room below 0, as the slot arrays */
    CELL *row_max, *row_j;    /* local, extension: each row's highest cell so far and its first column */
    CELL *last_row;           /* semi-global: H(m, j) */
    CELL *tops;               /* local, extension with checkpoints: each diagonal's highest cell */
    uint8_t *qc, *tc;         /* codes in order, for the traceback */
    int64_t slot_cells;       /* cells of a slot array, with its room below slot 0 */
    int64_t block;            /* K: diagonals per checkpoint */
    CELL *checkpoints;        /* checkpoint c: H of diagonals cK and cK + 1, E and F of cK + 1 */
    const align_params *p;
    int64_t block_first;      /* the block computed last: its first diagonal (0: none yet) */
    int64_t *offset;          /* that block: diagonal d's row i in nibble offset[d] + i of bits */
    uint8_t *bits;
} diag_work;

#define DIAG_MIN_BLOCK 128
#define DIAG_CHECKPOINT_BYTES ((size_t)1 << 24) /* K doubles until the checkpoints fit, */
#define DIAG_MAX_BLOCK 4096                     /* up to this (a block's bits: K^2 / 2 bytes) */

static int diag_reserve(diag_work *w, int keep, warpdp_workspace *ws)
{
    const size_t slots = round64(((size_t)w->m + 3 * LANES) * sizeof(CELL));
    const size_t targets = round64(((size_t)w->n + 3 * LANES) * sizeof(CELL));
    const size_t last = round64(((size_t)(w->m + w->n) + 1) * sizeof(CELL));
    const size_t codes = round64((size_t)w->m) + round64((size_t)w->n);
    const size_t offsets = round64(((size_t)(w->m + w->n) + 1) * sizeof(int64_t));
    char *mem = warpdp_workspace_reserve(ws, slots * 10 + targets + 2 * last + codes + offsets);
    if (mem == NULL)
        return -1;
    CELL *s[10];
    for (int k = 0; k < 10; k++)
        s[k] = (CELL *)(mem + k * slots) + LANES;
    w->h[0] = s[0], w->h[1] = s[1], w->h[2] = s[2], w->e[0] = s[3], w->e[1] = s[4];
    w->f[0] = s[5], w->f[1] = s[6], w->qv = s[7], w->row_max = s[8], w->row_j = s[9];
    w->tv = (CELL *)(mem + 10 * slots) + LANES;
    w->last_row = (CELL *)(mem + 10 * slots + targets);
    w->tops = (CELL *)(mem + 10 * slots + targets + last);
    w->qc = (uint8_t *)(mem + 10 * slots + targets + 2 * last);
    w->tc = w->qc + round64((size_t)w->m);
    w->offset = (int64_t *)(mem + 10 * slots + targets + 2 * last + codes);
    w->slot_cells = (int64_t)(slots / sizeof(CELL));
    w->bits = NULL;
    w->checkpoints = NULL;
    w->block_first = 0;
    if (keep) {
        w->block = DIAG_MIN_BLOCK;
        while ((size_t)((w->m + w->n) / w->block + 1) * 4 * slots > DIAG_CHECKPOINT_BYTES &&
               w->block < DIAG_MAX_BLOCK)
            w->block *= 2;
        const size_t kept = (size_t)((w->m + w->n) / w->block + 1) * 4 * slots;
        /* a block's bits: K diagonals of K + 2 rows, LANES more each (vector ends), one vector's overrun */
        const size_t block_bits = round64((size_t)w->block * (size_t)(w->block + 2 + 2 * LANES) / 2 + LANES);
        char *more = warpdp_workspace_reserve(ws + 1, kept + block_bits);
        if (more == NULL)
            return -1;
        w->checkpoints = (CELL *)more;
        w->bits = (uint8_t *)(more + kept);
    }
    return 0;
}

/* Codes, borders of diagonals 0 and 1, the row statistics' starts. */
static void diag_start(diag_work *w, const uint8_t *q, const uint8_t *t, const align_params *p)
{
    const int64_t m = w->m, n = w->n;
    const int local = p->mode == ALIGN_LOCAL, free_row0 = p->mode == ALIGN_SEMIGLOBAL || local;
    for (int64_t k = -LANES; k < m + 2 * LANES; k++) {
        const uint8_t c = k >= 1 && k <= m ? align_base_code(q[k - 1]) : 4;
        if (k >= 1 && k <= m)
            w->qc[k - 1] = c;
        w->qv[k] = (CELL)(5 * c + QV_BIAS);
        w->h[0][k] = w->h[1][k] = w->h[2][k] = w->e[0][k] = w->e[1][k] = w->f[0][k] = w->f[1][k] = CELL_NEG;
        w->row_max[k] = (CELL)(local || k == 0 || k > m ? 0 : border(p->gap_first, p->gap_ext, k));
        w->row_j[k] = 0;
    }
    for (int64_t k = -LANES; k < n + 2 * LANES; k++) {
        const uint8_t c = k >= 0 && k < n ? align_base_code(t[n - 1 - k]) : 4;
        if (k >= 0 && k < n)
            w->tc[n - 1 - k] = c;
        w->tv[k] = c;
    }
    /* diagonal 0 (in h[0]): cell (0, 0); diagonal 1 (in h[1], e[1], f[1]): cells (0, 1) and (1, 0) */
    w->h[0][0] = 0;
    w->h[1][0] = (CELL)(free_row0 ? 0 : border(p->gap_first, p->gap_ext, 1));
    w->h[1][1] = (CELL)(local ? 0 : border(p->gap_first, p->gap_ext, 1));
    w->last_row[0] = (CELL)(local ? 0 : border(p->gap_first, p->gap_ext, m)); /* H(m, 0) */
}

/* Checkpoint c (save) or back (restore, slots from..to only): the arrays of diagonals d - 1 and
   d = cK + 1. */
static void diag_checkpoint(diag_work *w, int64_t c, int64_t d, int restore, int64_t from, int64_t to)
{
    CELL *arrays[4] = {w->h[(d - 1) % 3], w->h[d % 3], w->e[d & 1], w->f[d & 1]};
    const CELL *kept = w->checkpoints + c * 4 * w->slot_cells;
    from = from > -LANES ? from : -LANES;
    to = to < w->slot_cells - LANES - 1 ? to : w->slot_cells - LANES - 1;
    for (int k = 0; k < 4; k++) {
        CELL *live = arrays[k] + from, *copy = (CELL *)kept + k * w->slot_cells + LANES + from;
        if (restore)
            memcpy(live, copy, (size_t)(to - from + 1) * sizeof(CELL));
        else
            memcpy(copy, live, (size_t)(to - from + 1) * sizeof(CELL));
    }
}

/* One diagonal's rows i .. i + LANES - 1 (diag_cells). edge: a vector with slots outside the
   diagonal's rows lo..hi (left out of the statistics). stats: 1 each row's
   highest cell (extension with z-drop), 2 the diagonal's highest cell, in *top (local, extension). */
/* Diagonal d's arrays, taken out of diag_work once per diagonal (stores through CELL pointers could
   alias it, so the compiler would load them again for every vector). */
typedef struct {
    const CELL *h2, *h1, *e1, *f1, *tv, *qv;
    CELL *h0, *e0, *f0, *row_max, *row_j;
    uint8_t *bits; /* nibble offset[d] + i: bits[(offset[d] + i) / 2] */
    int64_t offset;
} diag_rows;

static inline __attribute__((always_inline)) void diag_vector(diag_rows r, int64_t d, int64_t i, int64_t lo,
                                                              int64_t hi, SCORE_TABLE table, VEC first, VEC ext,
                                                              VEC iota, int local, int trace, int stats, int edge,
                                                              VEC *top)
{
    const CELL *h2 = r.h2, *h1 = r.h1, *e1 = r.e1, *f1 = r.f1, *tv = r.tv, *qv = r.qv;
    CELL *h0 = r.h0, *e0 = r.e0, *f0 = r.f0;
    const VEC zero = V_SET1(0);
    {
        const VEC up = V_LOAD(h1 + i - 1), left = V_LOAD(h1 + i);
        const VEC f_open = V_SUBS(up, first), f = V_MAX(f_open, V_SUBS(V_LOAD(f1 + i - 1), ext));
        const VEC e_open = V_SUBS(left, first), e = V_MAX(e_open, V_SUBS(V_LOAD(e1 + i), ext));
        const VEC s = V_ADDS(V_LOAD(h2 + i - 1), V_SCORE(table, V_ADDS(V_LOAD(qv + i), V_LOAD(tv + i))));
        const VEC h_raw = V_MAX(V_MAX(s, f), e);
        const VEC h = local ? V_MAX(h_raw, zero) : h_raw;
        V_STORE(h0 + i, h);
        V_STORE(e0 + i, e);
        V_STORE(f0 + i, f);
        if (trace) { /* as the lanes: opened <=> the max is the open candidate; stop <=> h floored to 0 */
            VEC b = V_SOURCE(M_EQ(h_raw, s), M_EQ(h_raw, e));
            if (local)
                b = V_BLEND(M_EQ(h, zero), b, V_SET1(3));
            b = V_ADD_WHERE(M_EQ(e, e_open), b, V_SET1(4));
            b = V_ADD_WHERE(M_EQ(f, f_open), b, V_SET1(8));
            V_STORE_NIBBLES(r.bits + ((r.offset + i) >> 1), b);
        }
        MASK valid;
        if (edge && stats) /* slots lo - i .. hi - i */
            valid = M_AND(M_GT(V_SET1((CELL)(hi - i + 1)), iota), M_GT(iota, V_SET1((CELL)(lo - i - 1))));
        if (stats == 1) { /* j ascends along a row, so '>' keeps the first column */
            const VEC row_max = V_LOAD(r.row_max + i);
            const MASK higher = edge ? M_GT_WHERE(valid, h, row_max) : M_GT(h, row_max);
            const VEC j = V_SUBS(V_SET1((CELL)(d - i)), iota);
            V_STORE(r.row_max + i, V_BLEND(higher, row_max, h));
            V_STORE(r.row_j + i, V_BLEND(higher, V_LOAD(r.row_j + i), j));
        } else if (stats == 2) {
            *top = V_MAX(*top, edge ? V_BLEND(valid, V_SET1(CELL_NEG), h) : h);
        }
    }
}

/* Diagonal d's rows within from..to, from d - 1 and d - 2 (h[(d - 1) % 3], h[(d - 2) % 3],
   e[(d - 1) & 1], f[(d - 1) & 1]). Flags are constants where the callers call it: local (floor at 0),
   trace (traceback bits), stats (diag_vector). Returns the diagonal's highest cell (stats 2). */
static inline __attribute__((always_inline)) CELL diag_cells(diag_work *w, int64_t d, int64_t from, int64_t to,
                                                             SCORE_TABLE table, VEC first, VEC ext, VEC iota,
                                                             int local, int trace, int stats)
{
    int64_t lo = d - w->n > 1 ? d - w->n : 1, hi = d - 1 < w->m ? d - 1 : w->m;
    lo = lo > from ? lo : from;
    hi = hi < to ? hi : to;
    VEC top = V_SET1(CELL_NEG);
    if (lo > hi)
        return CELL_NEG;
    const int r1 = (int)((d - 1) % 3), r0 = r1 == 2 ? 0 : r1 + 1, r2 = r0 == 2 ? 0 : r0 + 1;
    const diag_rows r = {w->h[r2], w->h[r1], w->e[(d - 1) & 1], w->f[(d - 1) & 1], w->tv + (w->n - d), w->qv,
                         w->h[r0], w->e[d & 1], w->f[d & 1], w->row_max, w->row_j, w->bits,
                         trace ? w->offset[d] : 0};
    int64_t i = lo & ~(int64_t)(LANES - 1);
    if (i < lo || i + LANES - 1 > hi) {
        diag_vector(r, d, i, lo, hi, table, first, ext, iota, local, trace, stats, 1, &top);
        i += LANES;
    }
    for (; i + LANES - 1 <= hi; i += LANES)
        diag_vector(r, d, i, lo, hi, table, first, ext, iota, local, trace, stats, 0, &top);
    if (i <= hi)
        diag_vector(r, d, i, lo, hi, table, first, ext, iota, local, trace, stats, 1, &top);
    if (stats != 2)
        return 0;
    CELL lanes[LANES], highest = CELL_NEG;
    V_STORE(lanes, top);
    for (int l = 0; l < LANES; l++)
        highest = lanes[l] > highest ? lanes[l] : highest;
    return highest;
}

/* Local and extension without z-drop: the scalar kernel's best cell (highest, smallest i, then
   smallest j) from each diagonal's highest value `top`: the diagonal's cell of that value with the
   smallest i beats the best so far if higher, or equal with a smaller i (with the same i, the
   earlier diagonal's column is smaller). */
static void diag_best(const diag_work *w, int64_t d, CELL top, int32_t *best, int64_t *bi, int64_t *bj)
{
    if (top < *best)
        return;
    const int64_t lo = d - w->n > 1 ? d - w->n : 1, hi = d - 1 < w->m ? d - 1 : w->m;
    const CELL *h = w->h[d % 3];
    const VEC want = V_SET1(top);
    for (int64_t i = lo; i <= hi && (top > *best || i < *bi); i += LANES) {
        const uint32_t equal = M_BITS(M_EQ(V_LOAD(h + i), want));
        if (equal == 0)
            continue;
        const int64_t at = i + __builtin_ctz(equal);
        if (at <= hi && (top > *best || at < *bi)) {
            *best = top;
            *bi = at;
            *bj = d - at;
        }
        return;
    }
}

/* Extension with z-drop: the scalar kernel's best-cell rule and z-drop over complete rows, one row
   at a time; 1 when the z-drop ends the DP after row i. */
static inline int diag_row_done(const diag_work *w, const align_params *p, int64_t i, int32_t *best, int64_t *bi,
                                int64_t *bj)
{
    const int32_t row_max = w->row_max[i];
    const int64_t row_j = w->row_j[i];
    if (row_max > *best) {
        *best = row_max;
        *bi = i;
        *bj = row_j;
    }
    const int64_t off = (i - *bi) - (row_j - *bj);
    return (int64_t)*best - row_max > (int64_t)p->zdrop + (int64_t)p->gap_ext * (off < 0 ? -off : off);
}

/* The borders of diagonal d, written after it: cells (0, d) and (d, 0). */
static inline void diag_borders(diag_work *w, const align_params *p, int64_t d)
{
    const int local = p->mode == ALIGN_LOCAL, free_row0 = p->mode == ALIGN_SEMIGLOBAL || local;
    CELL *h0 = w->h[d % 3];
    if (d <= w->n) {
        h0[0] = (CELL)(free_row0 ? 0 : border(p->gap_first, p->gap_ext, d));
        w->f[d & 1][0] = CELL_NEG;
    }
    if (d <= w->m) {
        h0[d] = (CELL)(local ? 0 : border(p->gap_first, p->gap_ext, d));
        w->e[d & 1][d] = CELL_NEG;
    }
}

static inline VEC diag_iota(void)
{
    CELL lanes[LANES];
    for (int l = 0; l < LANES; l++)
        lanes[l] = (CELL)l;
    return V_LOAD(lanes);
}

/* Local and extension (no z-drop) with checkpoints: the scalar kernel's best cell from each diagonal's
   highest value (the pass keeps only these): the highest value's diagonals are computed again from
   their checkpoints (usually one block), and the cell of that value with the smallest i wins, the
   earlier diagonal among equal i (its column is smaller). */
static void diag_best_of_tops(diag_work *w, int32_t *best, int64_t *bi, int64_t *bj)
{
    const align_params *p = w->p;
    const int64_t m = w->m, n = w->n;
    CELL top = 0; /* (0, 0) counts, and ties with it lose (its i is smallest) */
    for (int64_t d = 2; d <= m + n; d++)
        top = w->tops[d] > top ? w->tops[d] : top;
    if (top <= 0)
        return;
    const SCORE_TABLE table = MAKE_SCORE_TABLE(p);
    const VEC first = V_SET1((CELL)p->gap_first), ext = V_SET1((CELL)p->gap_ext), iota = diag_iota();
    int64_t block = -1, computed = 0, found_i = m + 1, found_d = 0;
    for (int64_t d = 2; d <= m + n; d++) {
        if (w->tops[d] != top)
            continue;
        const int64_t c = (d - 2) / w->block;
        if (c != block) {
            diag_checkpoint(w, c, c * w->block + 1, 1, -LANES, m + 2 * LANES);
            block = c;
            computed = c * w->block + 1;
        }
        for (int64_t k = computed + 1; k <= d; k++) {
            if (p->mode == ALIGN_LOCAL)
                diag_cells(w, k, 1, m, table, first, ext, iota, 1, 0, 0);
            else
                diag_cells(w, k, 1, m, table, first, ext, iota, 0, 0, 0);
            diag_borders(w, p, k);
        }
        computed = d;
        const CELL *h = w->h[d % 3];
        const int64_t lo = d - n > 1 ? d - n : 1, hi = d - 1 < m ? d - 1 : m;
        for (int64_t i = lo; i <= hi && i < found_i; i++)
            if (h[i] == top) {
                found_i = i;
                found_d = d;
                break;
            }
    }
    *best = top;
    *bi = found_i;
    *bj = found_d - found_i;
}

/* Every diagonal, with its borders and (keep) the checkpoints; fills score and end cell. */
static inline __attribute__((always_inline)) void diag_pass(diag_work *w, const align_params *p, int local,
                                                            int stats, int keep, align_result *res)
{
    const int64_t m = w->m, n = w->n;
    const SCORE_TABLE table = MAKE_SCORE_TABLE(p);
    const VEC first = V_SET1((CELL)p->gap_first), ext = V_SET1((CELL)p->gap_ext), iota = diag_iota();
    int32_t best = 0; /* local and extension: (0, 0) counts */
    int64_t bi = 0, bj = 0;
    if (keep)
        diag_checkpoint(w, 0, 1, 0, -LANES, m + 2 * LANES);
    for (int64_t d = 2; d <= m + n; d++) {
        const CELL top = diag_cells(w, d, 1, m, table, first, ext, iota, local, 0, stats);
        if (stats == 2 && keep)
            w->tops[d] = top;
        else if (stats == 2)
            diag_best(w, d, top, &best, &bi, &bj);
        diag_borders(w, p, d);
        if (keep && (d - 1) % w->block == 0)
            diag_checkpoint(w, (d - 1) / w->block, d, 0, -LANES, m + 2 * LANES);
        if (d > m && p->mode == ALIGN_SEMIGLOBAL)
            w->last_row[d - m] = w->h[d % 3][m];
        if (stats == 1 && d > n && diag_row_done(w, p, d - n, &best, &bi, &bj)) /* row d - n is complete */
            break;
    }
    if (stats == 2 && keep) {
        diag_best_of_tops(w, &best, &bi, &bj);
    } else if (p->mode == ALIGN_GLOBAL) {
        best = w->h[(m + n) % 3][m];
        bi = m;
        bj = n;
    } else if (p->mode == ALIGN_SEMIGLOBAL) { /* the last row's highest, smallest j among equals */
        bi = m;
        best = w->last_row[0];
        for (int64_t j = 1; j <= n; j++)
            if (w->last_row[j] > best) {
                best = w->last_row[j];
                bj = j;
            }
    }
    res->score = best;
    res->q_end = bi;
    res->t_end = bj;
}

/* The block holding diagonal d again, up to d, with traceback bits, in rows row - (d - d0) - 1 ..
   row (module doc). */
static void diag_block(diag_work *w, int64_t d, int64_t row)
{
    const align_params *p = w->p;
    const int64_t c = (d - 2) / w->block, d0 = c * w->block + 2, from = row - (d - d0) - 1;
    /* the rows the window's vectors read: from its first vector's start - 1 to its last's end */
    diag_checkpoint(w, c, d0 - 1, 1, (from & ~(int64_t)(LANES - 1)) - LANES, row + 2 * LANES);
    int64_t at = 0;
    for (int64_t k = d0; k <= d; k++) {
        int64_t lo = k - w->n > 1 ? k - w->n : 1, hi = k - 1 < w->m ? k - 1 : w->m;
        lo = lo > from ? lo : from;
        hi = hi < row ? hi : row;
        const int64_t start = lo & ~(int64_t)(LANES - 1);
        w->offset[k] = at - start;
        at += lo > hi ? 0 : (hi - start + 2) & ~(int64_t)1;
    }
    const SCORE_TABLE table = MAKE_SCORE_TABLE(p);
    const VEC first = V_SET1((CELL)p->gap_first), ext = V_SET1((CELL)p->gap_ext), iota = diag_iota();
    for (int64_t k = d0; k <= d; k++) {
        if (p->mode == ALIGN_LOCAL)
            diag_cells(w, k, from, row, table, first, ext, iota, 1, 1, 0);
        else
            diag_cells(w, k, from, row, table, first, ext, iota, 0, 1, 0);
        diag_borders(w, p, k);
    }
    w->block_first = d0;
}

/* align_trace's fetch: cell (i, j)'s traceback bits. */
static uint8_t diag_fetch(void *context, int64_t i, int64_t j)
{
    diag_work *w = context;
    const int64_t d = i + j;
    if (w->block_first == 0 || d < w->block_first)
        diag_block(w, d, i);
    const int64_t k = w->offset[d] + i;
    return (uint8_t)((w->bits[k >> 1] >> ((k & 1) << 2)) & 0xF);
}

int DIAG_ENTRY(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const align_params *p, align_result *res,
               uint32_t *ops, warpdp_workspace *ws)
{
    const int mode = p->mode, local = mode == ALIGN_LOCAL;
    /* score-only begins of local and semi-global pairs are traced back too */
    const int keep = p->cigar || local || mode == ALIGN_SEMIGLOBAL;
    diag_work w;
    w.m = m;
    w.n = n;
    w.p = p;
    if (diag_reserve(&w, keep, ws) != 0)
        return -1;
    diag_start(&w, q, t, p);
    if (local)
        diag_pass(&w, p, 1, 2, 1, res);
    else if (mode == ALIGN_EXTENSION && p->zdrop >= 0)
        diag_pass(&w, p, 0, 1, keep, res);
    else if (mode == ALIGN_EXTENSION)
        diag_pass(&w, p, 0, 2, keep, res);
    else
        diag_pass(&w, p, 0, 0, keep, res);
    res->n_ops = 0;
    res->q_begin = res->t_begin = 0;
    if (local && res->score == 0) { /* nothing scores above 0: the empty alignment */
        res->q_end = res->t_end = 0;
        return 0;
    }
    if (keep) {
        const align_trace tr = {NULL, w.qc, w.tc, 0, 1, 1, diag_fetch, &w};
        align_trace_back(&tr, mode, res->q_end, res->t_end, p->cigar ? ops : NULL, res);
    }
    return 0;
}
