/* Body of the align family's inter-pair SIMD kernel, included once per (instruction set, cell
   type): LANES pairs at a time, pair l in lane l, every lane doing the scalar kernel's cell
   (align_body.h: the same recurrences, tie rule, best cell and traceback bits) over the batch's
   largest rows and columns. Cells outside a lane's own m x n cannot change its cells inside (a cell
   depends only on cells above and left of it); they are left out of its best cell and never traced.
   int16 cells (saturating adds) take only pairs whose values fit them (align_fits_int16), so no
   value inside a pair saturates; int32 cells take any pair the driver accepts: its values stay within
   +-2^29 ((m + n + 2) * largest), a batch's within +-2^30, so plain adds never overflow.
   GATK mode is the same DP with rows = ref, columns = alt, GATK's parameters negated as gap costs,
   bytes compared for match/mismatch, gaps opened only where strictly better (GKL's rule), no floor;
   int16 where align_gatk_fits_int16 says so. Its traceback is kept as mask planes (gatk_trace) and
   traced back, with its end cell, by the scalar kernel's functions (align_gatk_end/_trace_back).

   The includer defines LANES, CELL (int16_t or int32_t), CELL_NEG (below every value of a pair),
   VEC, MASK, SCORE_TABLE and:
     V_SET1(x) V_LOAD(p) V_STORE(p, v) V_ADDS(a, b) V_SUBS(a, b) V_MAX(a, b)
     V_BLEND(mask, a, b)        mask ? b : a, per lane
     V_ADD_WHERE(mask, a, b)    mask ? a + b : a, per lane
     M_GT(a, b) M_EQ(a, b) M_GE(a, b) M_AND(a, b) M_BITS(mask)  (M_BITS: bit l = lane l)
     M_GT_WHERE(where, a, b)    where & (a > b)
     M_GT_UNLESS(unless, a, b)  ~unless & (a > b)
     V_SOURCE(is_d, is_e)       per lane 0 where is_d, else 1 where is_e, else 2
     MAKE_SCORE_TABLE(p)        the 5x5 matrix as a SCORE_TABLE
     V_SCORE(table, idx)        matrix[idx] per lane (idx = 5 * query code + target code)
     V_STORE_BYTES(p, v)        the low bytes of the LANES lanes to p[0..LANES)
     PLANE_BYTES, LANE_BITS     GATK mode's traceback planes: a mask as PLANE_BYTES bytes, lane l at bit
                                l * LANE_BITS (align_kernel.h, gatk_trace)
     M_STORE_PLANE(p, mask)     the mask's lane bits to p[0..PLANE_BYTES), one store
     LANES_ENTRY                this variant's entry point
   and may define QV_BIAS, added to every 5 * query code (V_SCORE's idx). */

#ifndef QV_BIAS
#define QV_BIAS 0
#endif

typedef struct {
    int64_t max_m, max_n;
    CELL *qv, *tv;        /* 5 * query code by row, target code by column: [i * LANES + l] */
    uint8_t *qc, *tc;     /* codes for the traceback: [k * LANES + l] */
    VEC *h, *f;           /* H of the row (in place) and F, by column */
    VEC *oi, *oj, *ofi, *ofj; /* score-only begins: origins of H and F, by column */
    uint8_t *trace;       /* (max_m + 1) x (max_n + 1) cells of LANES bytes (GATK mode: 4 planes) */
} lane_work;

/* Per-lane state carried from row to row. */
typedef struct {
    VEC best, bi, bj, boi, boj, m, n;
    VEC live; /* -1 in lanes still taking rows (extension: until z-dropped), else 0 */
    int32_t last_best[LANES]; /* GATK mode: the last column's best so far, at row last_row */
    int64_t last_row[LANES];
} lane_state;

static inline size_t round64(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

/* Rows and columns of lane l: query and target, GATK mode ref (target) and alt (query). */
static inline int64_t lane_rows(const align_lane_batch *b, int gatk, int l)
{
    return gatk ? b->n[l] : b->m[l];
}

static inline int64_t lane_cols(const align_lane_batch *b, int gatk, int l)
{
    return gatk ? b->m[l] : b->n[l];
}

static void lane_extent(lane_work *w, const align_lane_batch *b, int gatk)
{
    w->max_m = w->max_n = 0;
    for (int l = 0; l < b->count; l++) {
        w->max_m = lane_rows(b, gatk, l) > w->max_m ? lane_rows(b, gatk, l) : w->max_m;
        w->max_n = lane_cols(b, gatk, l) > w->max_n ? lane_cols(b, gatk, l) : w->max_n;
    }
}

static int lane_reserve(lane_work *w, int track, int trace, int gatk, warpdp_workspace *ws)
{
    const size_t rows = (size_t)w->max_m + 1, cols = (size_t)w->max_n + 1;
    const size_t codes = round64(rows * LANES * sizeof(CELL)), tcodes = round64(cols * LANES * sizeof(CELL));
    const size_t bytes8 = round64(rows * LANES) + round64(cols * LANES), vecs = cols * sizeof(VEC);
    char *mem = warpdp_workspace_reserve(ws, codes + tcodes + bytes8 + vecs * (track ? 6 : 2));
    if (mem == NULL)
        return -1;
    w->qv = (CELL *)mem;
    w->tv = (CELL *)(mem + codes);
    w->qc = (uint8_t *)(mem + codes + tcodes);
    w->tc = w->qc + round64(rows * LANES);
    w->h = (VEC *)(mem + codes + tcodes + bytes8);
    w->f = w->h + cols;
    w->oi = w->ofi = w->oj = w->ofj = NULL;
    if (track) {
        w->oi = w->f + cols;
        w->ofi = w->oi + cols;
        w->oj = w->ofi + cols;
        w->ofj = w->oj + cols;
    }
    w->trace = NULL;
    if (trace) {
        w->trace = warpdp_workspace_reserve(ws + 1, rows * cols * (gatk ? 4 * PLANE_BYTES : LANES));
        if (w->trace == NULL)
            return -1;
    }
    return 0;
}

/* GATK mode: raw bytes interleaved by lane, rows = ref (b->t), columns = alt (b->q); past a lane's
   end, 0 (what it scores does not matter). No codes: its traceback writes M, not =/X. */
static void lane_gatk_bytes(lane_work *w, const align_lane_batch *b)
{
    for (int64_t k = 0; k < w->max_m; k++)
        for (int l = 0; l < LANES; l++)
            w->qv[(k + 1) * LANES + l] = (CELL)(l < b->count && k < b->n[l] ? b->t[l][k] : 0);
    for (int64_t k = 0; k < w->max_n; k++)
        for (int l = 0; l < LANES; l++)
            w->tv[(k + 1) * LANES + l] = (CELL)(l < b->count && k < b->m[l] ? b->q[l][k] : 0);
}

/* Codes interleaved by lane; past a lane's end, N (what it scores does not matter). */
static void lane_codes(lane_work *w, const align_lane_batch *b)
{
    for (int64_t k = 0; k < w->max_m; k++)
        for (int l = 0; l < LANES; l++) {
            const uint8_t c = l < b->count && k < b->m[l] ? align_base_code(b->q[l][k]) : 4;
            w->qc[k * LANES + l] = c;
            w->qv[(k + 1) * LANES + l] = (CELL)(5 * c + QV_BIAS);
        }
    for (int64_t k = 0; k < w->max_n; k++)
        for (int l = 0; l < LANES; l++) {
            const uint8_t c = l < b->count && k < b->n[l] ? align_base_code(b->t[l][k]) : 4;
            w->tc[k * LANES + l] = c;
            w->tv[(k + 1) * LANES + l] = c;
        }
}

/* GATK mode: INDEL and LEADING_INDEL start from gap borders, the others from 0. */
static inline int lane_gatk_edges(const align_params *p)
{
    return p->overhang == GATK_INDEL || p->overhang == GATK_LEADING_INDEL;
}

/* Gap costs as the generic recurrences subtract them (GATK mode: its added parameters, negated). */
static inline int32_t lane_first(const align_params *p)
{
    return p->mode == ALIGN_GATK ? -p->gap_open : p->gap_first;
}

static inline int32_t lane_ext(const align_params *p)
{
    return p->mode == ALIGN_GATK ? -p->gap_extend : p->gap_ext;
}

/* A border value -(first + (k-1) * ext), held at CELL_NEG past any pair's end. */
static inline CELL border(int32_t first, int32_t ext, int64_t k)
{
    const int64_t v = -((int64_t)first + (k - 1) * (int64_t)ext);
    return (CELL)(v < CELL_NEG ? CELL_NEG : v);
}

/* Row 0 and the per-lane state. */
static void lane_start(lane_work *w, lane_state *st, const align_lane_batch *b, const align_params *p, int track)
{
    const int gatk = p->mode == ALIGN_GATK;
    const int free_row0 = gatk ? !lane_gatk_edges(p) : p->mode == ALIGN_SEMIGLOBAL || p->mode == ALIGN_LOCAL;
    CELL ms[LANES], ns[LANES];
    for (int l = 0; l < LANES; l++) {
        ms[l] = (CELL)(l < b->count ? lane_rows(b, gatk, l) : 0);
        ns[l] = (CELL)(l < b->count ? lane_cols(b, gatk, l) : 0);
    }
    st->m = V_LOAD(ms);
    st->n = V_LOAD(ns);
    CELL live[LANES];
    for (int l = 0; l < LANES; l++)
        live[l] = (CELL)(l < b->count ? -1 : 0);
    st->live = V_LOAD(live);
    st->best = V_SET1(0);
    st->bi = st->bj = st->boi = st->boj = V_SET1(0);
    for (int l = 0; l < LANES; l++) {
        st->last_best[l] = ALIGN_NEG; /* the first row always takes it, as in the scalar kernel */
        st->last_row[l] = 0;
    }
    w->h[0] = V_SET1(0);
    w->f[0] = V_SET1(CELL_NEG);
    for (int64_t j = 1; j <= w->max_n; j++) {
        w->h[j] = V_SET1(free_row0 ? 0 : border(lane_first(p), lane_ext(p), j));
        w->f[j] = V_SET1(CELL_NEG);
    }
    if (track)
        for (int64_t j = 0; j <= w->max_n; j++) {
            w->oi[j] = w->ofi[j] = V_SET1(0);
            w->oj[j] = w->ofj[j] = V_SET1((CELL)(free_row0 ? j : 0));
        }
}

/* GATK mode's scores: match where the bytes are equal, else mismatch. */
typedef struct {
    VEC match, mismatch;
} gatk_scores;

/* One row i of every lane. Flags are constants where the entry points call it, so each
   combination compiles to its own loop: local (floor at 0), track (carry score-only begins),
   trace (write traceback bytes), rowmax (the row's highest cell within each lane's columns),
   gatk (GATK mode: bytes compared, gaps opened only where strictly better, as GKL). */
static inline __attribute__((always_inline)) void lane_row(lane_work *w, int64_t i, SCORE_TABLE table,
                                                           gatk_scores gs, VEC first, VEC ext, VEC h0, VEC n,
                                                           int local, int track, int trace, int rowmax, int gatk,
                                                           VEC *row_max, VEC *row_j)
{
    const VEC qv = V_LOAD(w->qv + i * LANES), zero = V_SET1(0), one = V_SET1(1), vi = V_SET1((CELL)i);
    VEC diag = w->h[0], left = h0, e = V_SET1(CELL_NEG), rmax = h0, rj = zero, vj = zero;
    VEC odi = zero, odj = zero, oli = zero, olj = zero, oei = zero, oej = zero;
    if (track) {
        odi = w->oi[0];
        odj = w->oj[0];
        oli = w->oi[0] = local ? vi : zero;
        olj = w->oj[0] = zero;
    }
    w->h[0] = h0;
    const size_t cell_bytes = gatk ? 4 * PLANE_BYTES : LANES;
    uint8_t *tr = trace ? w->trace + (size_t)i * (size_t)(w->max_n + 1) * cell_bytes : NULL;
    for (int64_t j = 1; j <= w->max_n; j++) {
        const VEC up = w->h[j], f_open = V_SUBS(up, first), f_ext = V_SUBS(w->f[j], ext);
        const VEC f = V_MAX(f_open, f_ext);
        const VEC e_open = V_SUBS(left, first), e_ext = V_SUBS(e, ext);
        e = V_MAX(e_open, e_ext);
        const VEC tv = V_LOAD(w->tv + j * LANES);
        const VEC s = gatk ? V_BLEND(M_EQ(qv, tv), gs.mismatch, gs.match) : V_SCORE(table, V_ADDS(qv, tv));
        const VEC d = V_ADDS(diag, s);
        /* the row's dependency chain runs through e: combine the rest first */
        const VEC df = V_MAX(d, f), h_raw = V_MAX(df, e);
        const VEC h = local ? V_MAX(V_MAX(df, zero), e) : h_raw;
        vj = V_ADDS(vj, one);
        if (track || trace) {
            /* one compare each on every variant: opened <=> the max is the open candidate (GATK: the
               open candidate is strictly higher); a local stop (h_raw <= 0) <=> h, floored at 0, is 0 */
            const MASK f_opened = gatk ? M_GT(f_open, f_ext) : M_EQ(f, f_open);
            const MASK e_opened = gatk ? M_GT(e_open, e_ext) : M_EQ(e, e_open);
            const MASK is_d = M_EQ(h_raw, d), is_e = M_EQ(h_raw, e), stop = M_EQ(h, zero);
            if (track) { /* semi-global begins are all in row 0: only the columns are carried */
                const VEC uj = w->oj[j];
                const VEC fj = w->ofj[j] = V_BLEND(f_opened, w->ofj[j], uj);
                oej = V_BLEND(e_opened, oej, olj);
                VEC oj = V_BLEND(is_d, V_BLEND(is_e, fj, oej), odj);
                if (local) {
                    const VEC ui = w->oi[j];
                    const VEC fi = w->ofi[j] = V_BLEND(f_opened, w->ofi[j], ui);
                    oei = V_BLEND(e_opened, oei, oli);
                    oli = w->oi[j] = V_BLEND(stop, V_BLEND(is_d, V_BLEND(is_e, fi, oei), odi), vi);
                    odi = ui;
                    oj = V_BLEND(stop, oj, vj);
                }
                odj = uj;
                olj = w->oj[j] = oj;
            }
            if (gatk) { /* the four masks as they are: no vector work for the bits */
                uint8_t *planes = tr + (size_t)j * cell_bytes;
                M_STORE_PLANE(planes, is_d);
                M_STORE_PLANE(planes + PLANE_BYTES, is_e);
                M_STORE_PLANE(planes + 2 * PLANE_BYTES, e_opened);
                M_STORE_PLANE(planes + 3 * PLANE_BYTES, f_opened);
            } else if (trace) {
                VEC bits = V_SOURCE(is_d, is_e);
                if (local)
                    bits = V_BLEND(stop, bits, V_SET1(3));
                bits = V_ADD_WHERE(e_opened, bits, V_SET1(4));
                bits = V_ADD_WHERE(f_opened, bits, V_SET1(8));
                V_STORE_BYTES(tr + (size_t)j * LANES, bits);
            }
        }
        if (rowmax) {
            const MASK higher = M_GT_UNLESS(M_GT(vj, n), h, rmax);
            rmax = V_BLEND(higher, rmax, h);
            rj = V_BLEND(higher, rj, vj);
        }
        diag = up;
        w->h[j] = left = h;
        w->f[j] = f;
    }
    *row_max = rmax;
    *row_j = rj;
}

/* Row i in the flags' combination that the mode and outputs ask for. */
static void lane_row_of(lane_work *w, int64_t i, SCORE_TABLE table, gatk_scores gs, VEC first, VEC ext, VEC h0,
                        VEC n, int mode, int track, int trace, VEC *row_max, VEC *row_j)
{
    if (mode == ALIGN_GATK) {
        lane_row(w, i, table, gs, first, ext, h0, n, 0, 0, 1, 0, 1, row_max, row_j);
    } else if (mode == ALIGN_LOCAL) {
        if (trace)
            lane_row(w, i, table, gs, first, ext, h0, n, 1, 0, 1, 1, 0, row_max, row_j);
        else
            lane_row(w, i, table, gs, first, ext, h0, n, 1, track, 0, 1, 0, row_max, row_j);
    } else if (mode == ALIGN_EXTENSION) {
        if (trace)
            lane_row(w, i, table, gs, first, ext, h0, n, 0, 0, 1, 1, 0, row_max, row_j);
        else
            lane_row(w, i, table, gs, first, ext, h0, n, 0, 0, 0, 1, 0, row_max, row_j);
    } else if (trace) {
        lane_row(w, i, table, gs, first, ext, h0, n, 0, 0, 1, 0, 0, row_max, row_j);
    } else if (track) {
        lane_row(w, i, table, gs, first, ext, h0, n, 0, 1, 0, 0, 0, row_max, row_j);
    } else {
        lane_row(w, i, table, gs, first, ext, h0, n, 0, 0, 0, 0, 0, row_max, row_j);
    }
}

/* GATK mode after row i: each lane's last-column best (the last row among equals), and for the
   lanes whose last row is i, the end cell from their bottom row (align_gatk_end). */
static void lane_gatk_row(const lane_work *w, lane_state *st, align_lane_batch *b, const align_params *p, int64_t i,
                          uint32_t in_row)
{
    const CELL *h = (const CELL *)w->h;
    for (; in_row; in_row &= in_row - 1) {
        const int l = __builtin_ctz(in_row);
        const int64_t n_ref = b->n[l], n_alt = b->m[l];
        const int32_t last = h[n_alt * LANES + l];
        if (last >= st->last_best[l]) {
            st->last_best[l] = last;
            st->last_row[l] = i;
        }
        if (i < n_ref)
            continue;
        int32_t bottom[ALIGN_GATK_LANE_SIDE + 1];
        for (int64_t j = 0; j <= n_alt; j++)
            bottom[j] = h[j * LANES + l];
        int64_t p1 = st->last_row[l], p2;
        int32_t best = st->last_best[l];
        align_gatk_end(bottom, n_ref, n_alt, p->overhang, &best, &p1, &p2);
        b->res[l].score = best;
        b->res[l].t_end = p1; /* lane_finish traces back from here */
        b->res[l].q_end = p2;
    }
}

/* Global and semi-global: the lanes whose last row is i take their end cell from it. */
static void lane_capture(const lane_work *w, align_lane_batch *b, int mode, int track, int64_t i, uint32_t ending)
{
    const CELL *h = (const CELL *)w->h, *oj = (const CELL *)w->oj;
    for (; ending; ending &= ending - 1) {
        const int l = __builtin_ctz(ending);
        int64_t bj = b->n[l];
        if (mode == ALIGN_SEMIGLOBAL) /* the row's highest, smallest j among equals */
            for (int64_t j = bj = 0; j <= b->n[l]; j++)
                if (h[j * LANES + l] > h[bj * LANES + l])
                    bj = j;
        align_result *r = &b->res[l];
        r->score = h[bj * LANES + l];
        r->q_end = i;
        r->t_end = bj;
        r->q_begin = 0;
        r->t_begin = track ? oj[bj * LANES + l] : 0;
    }
}

/* Local and extension: each live lane's best cell so far; extension's z-drop ends lanes. */
static void lane_best(const lane_work *w, lane_state *st, const align_params *p, int track, int64_t i, MASK in_row,
                      VEC rmax, VEC rj)
{
    const MASK higher = M_GT_WHERE(in_row, rmax, st->best);
    st->best = V_BLEND(higher, st->best, rmax);
    st->bi = V_BLEND(higher, st->bi, V_SET1((CELL)i));
    st->bj = V_BLEND(higher, st->bj, rj);
    uint32_t improved = M_BITS(higher);
    if (track && improved) { /* the begin of the new best cell, from the row's origins */
        CELL j_of[LANES], oi[LANES], oj[LANES];
        V_STORE(j_of, rj);
        V_STORE(oi, st->boi);
        V_STORE(oj, st->boj);
        for (; improved; improved &= improved - 1) {
            const int l = __builtin_ctz(improved);
            oi[l] = ((const CELL *)w->oi)[j_of[l] * LANES + l];
            oj[l] = ((const CELL *)w->oj)[j_of[l] * LANES + l];
        }
        st->boi = V_LOAD(oi);
        st->boj = V_LOAD(oj);
    }
    if (p->mode == ALIGN_EXTENSION && p->zdrop >= 0) {
        CELL best[LANES], bi[LANES], bj[LANES], mx[LANES], jx[LANES], live[LANES];
        V_STORE(best, st->best);
        V_STORE(bi, st->bi);
        V_STORE(bj, st->bj);
        V_STORE(mx, rmax);
        V_STORE(jx, rj);
        V_STORE(live, st->live);
        for (uint32_t lanes = M_BITS(in_row); lanes; lanes &= lanes - 1) {
            const int l = __builtin_ctz(lanes);
            const int64_t off = (i - bi[l]) - (jx[l] - bj[l]);
            if ((int64_t)best[l] - mx[l] > (int64_t)p->zdrop + (int64_t)p->gap_ext * (off < 0 ? -off : off))
                live[l] = 0;
        }
        st->live = V_LOAD(live);
    }
}

/* Local and extension results; then, with a CIGAR, every lane's traceback. */
static void lane_finish(const lane_work *w, const lane_state *st, align_lane_batch *b, const align_params *p,
                        int track)
{
    const int mode = p->mode;
    if (mode == ALIGN_LOCAL || mode == ALIGN_EXTENSION) {
        CELL best[LANES], bi[LANES], bj[LANES], oi[LANES], oj[LANES];
        V_STORE(best, st->best);
        V_STORE(bi, st->bi);
        V_STORE(bj, st->bj);
        V_STORE(oi, st->boi);
        V_STORE(oj, st->boj);
        for (int l = 0; l < b->count; l++) {
            align_result *r = &b->res[l];
            r->score = best[l];
            r->q_end = bi[l];
            r->t_end = bj[l];
            r->q_begin = track ? oi[l] : 0;
            r->t_begin = track ? oj[l] : 0;
            if (mode == ALIGN_LOCAL && best[l] == 0) /* nothing scores above 0: the empty alignment */
                r->q_end = r->t_end = 0;
        }
    }
    if (mode == ALIGN_GATK) {
        for (int l = 0; l < b->count; l++) {
            const gatk_trace tr = {w->trace, (size_t)w->max_n + 1, PLANE_BYTES, l * LANE_BITS};
            align_gatk_trace_back(&tr, p->overhang, b->res[l].t_end, b->res[l].q_end, b->m[l], b->ops[l], &b->res[l]);
        }
        return;
    }
    for (int l = 0; l < b->count; l++) {
        align_result *r = &b->res[l];
        r->n_ops = 0;
        if (w->trace == NULL || (mode == ALIGN_LOCAL && r->score == 0))
            continue;
        const align_trace tr = {w->trace + l, w->qc + l, w->tc + l, (size_t)w->max_n + 1, LANES, LANES,
                                NULL, NULL};
        align_trace_back(&tr, mode, r->q_end, r->t_end, p->cigar ? b->ops[l] : NULL, r);
    }
}

int LANES_ENTRY(align_lane_batch *b, const align_params *p, warpdp_workspace *ws)
{
    const int mode = p->mode, local = mode == ALIGN_LOCAL, gatk = mode == ALIGN_GATK;
    lane_work w;
    lane_state st;
    lane_extent(&w, b, gatk);
    /* Score-only begins: traced back where the batch's traceback fits the lanes' budget (faster
       than carrying them cell by cell), else carried. */
    const int begins = !p->cigar && (local || mode == ALIGN_SEMIGLOBAL);
    const int trace = gatk || p->cigar || (begins && (w.max_m + 1) * (w.max_n + 1) <= ALIGN_LANE_TRACE_CELLS);
    const int track = begins && !trace;
    if (lane_reserve(&w, track, trace, gatk, ws) != 0)
        return -1;
    if (gatk)
        lane_gatk_bytes(&w, b);
    else
        lane_codes(&w, b);
    lane_start(&w, &st, b, p, track);
    const SCORE_TABLE table = MAKE_SCORE_TABLE(p);
    const gatk_scores gs = {V_SET1((CELL)(gatk ? p->match : 0)), V_SET1((CELL)(gatk ? p->mismatch : 0))};
    const int32_t first_cost = lane_first(p), ext_cost = lane_ext(p);
    const int free_col0 = gatk ? !lane_gatk_edges(p) : local;
    const VEC first = V_SET1((CELL)first_cost), ext = V_SET1((CELL)ext_cost), minus1 = V_SET1(-1);
    for (int64_t i = 1; i <= w.max_m; i++) {
        const VEC vi = V_SET1((CELL)i);
        const MASK in_row = M_AND(M_EQ(st.live, minus1), M_GE(st.m, vi));
        if (M_BITS(in_row) == 0)
            break;
        VEC rmax, rj;
        lane_row_of(&w, i, table, gs, first, ext, V_SET1(free_col0 ? 0 : border(first_cost, ext_cost, i)), st.n, mode,
                    track, trace, &rmax, &rj);
        if (gatk)
            lane_gatk_row(&w, &st, b, p, i, M_BITS(in_row));
        else if (mode == ALIGN_LOCAL || mode == ALIGN_EXTENSION)
            lane_best(&w, &st, p, track, i, in_row, rmax, rj);
        else
            lane_capture(&w, b, mode, track, i, M_BITS(M_AND(in_row, M_EQ(st.m, vi))));
    }
    lane_finish(&w, &st, b, p, track);
    return 0;
}
