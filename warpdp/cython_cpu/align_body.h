/* The align kernels one pair at a time (included by align_scalar.c with ALIGN_PAIR defined as its
   entry point; the SIMD variants' lanes, align_lanes_body.h, do the same cell and share the
   traceback, align_traceback.c). Cells are int32 (see ALIGN_SCORE_LIMIT).

   Generic modes (Gotoh; rows i = query 0..m, columns j = target 0..n; a gap of length L costs
   first + (L-1)*ext; E = gap along the row (D, target bases), F = gap down the column (I, query bases)):
     F[i][j] = max(H[i-1][j] - first, F[i-1][j] - ext)      ties: open
     E[i][j] = max(H[i][j-1] - first, E[i][j-1] - ext)      ties: open
     H[i][j] = max(H[i-1][j-1] + s(q, t), E, F, local ? 0 : -inf)
   Traceback (the one tie rule, also followed by the score-only path's begin tracking): in H, a local
   alignment stops on a 0 cell, else diagonal, then E (D), then F (I); in E or F, opening the gap before
   extending it. Best cell: global (m, n); semiglobal the last row's highest, smallest j among equals;
   local and extension the highest, smallest i then smallest j among equals (extension counts (0, 0));
   extension's z-drop ends the DP after row i when best - rowmax > zdrop + ext * |(i - bi) - (j - bj)|
   (rowmax at (i, j), best at (bi, bj)).

   Traceback cells: one byte per cell, bits 0-1 H's source (0 diagonal, 1 E, 2 F, 3 local stop),
   bit 2 E opened here, bit 3 F opened here. GATK mode: bits 0-1 the move (0 diagonal, 1 horizontal,
   2 vertical), bit 2 the horizontal gap opened here, bit 3 the vertical one. */

static inline int32_t max32(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

#include "align_ops.h"

#define PACK_POS(i, j) (((int64_t)(i) << 32) | (int64_t)(j))

/* Generic modes. With trace == NULL the score-only path: begins are carried forward per cell
   (packed (i, j) of the cell the traceback would stop at) instead of being traced back. */
static int generic_pair(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const align_params *p,
                        align_result *res, uint32_t *ops, uint8_t *trace, warpdp_workspace *ws)
{
    const int32_t first = p->gap_first, ext = p->gap_ext;
    const int mode = p->mode, local = mode == ALIGN_LOCAL;
    const int track = trace == NULL && (mode == ALIGN_LOCAL || mode == ALIGN_SEMIGLOBAL);
    const size_t row = (size_t)(n + 1);
    /* The int64 rows start 8-byte aligned after the three int32 rows (row may be odd). */
    const size_t int32_bytes = (row * 3 * sizeof(int32_t) + 7) & ~(size_t)7;
    char *mem = warpdp_workspace_reserve(ws, int32_bytes + (track ? row * 3 * sizeof(int64_t) : 0));
    if (mem == NULL)
        return -1;
    int32_t *h_prev = (int32_t *)mem, *h_cur = h_prev + row, *f = h_cur + row;
    int64_t *o_prev = NULL, *o_cur = NULL, *o_f = NULL;
    if (track) {
        o_prev = (int64_t *)(mem + int32_bytes);
        o_cur = o_prev + row;
        o_f = o_cur + row;
    }
    const int free_row0 = mode == ALIGN_SEMIGLOBAL || local;
    h_prev[0] = 0;
    f[0] = ALIGN_NEG;
    for (int64_t j = 1; j <= n; j++) {
        h_prev[j] = free_row0 ? 0 : -(first + (int32_t)(j - 1) * ext);
        f[j] = ALIGN_NEG;
    }
    if (track)
        for (int64_t j = 0; j <= n; j++)
            o_prev[j] = free_row0 ? PACK_POS(0, j) : PACK_POS(0, 0);
    int32_t best = local ? 0 : (mode == ALIGN_EXTENSION ? 0 : ALIGN_NEG);
    int64_t bi = 0, bj = 0, b_origin = 0;
    for (int64_t i = 1; i <= m; i++) {
        const int32_t *srow = p->matrix + 5 * q[i - 1];
        uint8_t *tr = trace != NULL ? trace + (size_t)i * row : NULL;
        h_cur[0] = local ? 0 : -(first + (int32_t)(i - 1) * ext);
        if (track)
            o_cur[0] = local ? PACK_POS(i, 0) : PACK_POS(0, 0);
        int32_t e = ALIGN_NEG, row_max = h_cur[0];
        int64_t row_j = 0, e_origin = 0;
        for (int64_t j = 1; j <= n; j++) {
            const int32_t f_open = h_prev[j] - first, f_ext = f[j] - ext;
            const int f_opened = f_open >= f_ext;
            f[j] = f_opened ? f_open : f_ext;
            const int32_t e_open = h_cur[j - 1] - first, e_ext = e - ext;
            const int e_opened = e_open >= e_ext;
            e = e_opened ? e_open : e_ext;
            const int32_t diag = h_prev[j - 1] + srow[t[j - 1]];
            int32_t h = max32(max32(diag, e), f[j]);
            int source;
            if (local && h <= 0) {
                h = 0;
                source = 3;
            } else {
                source = h == diag ? 0 : (h == e ? 1 : 2);
            }
            if (track) {
                if (f_opened)
                    o_f[j] = o_prev[j];
                if (e_opened)
                    e_origin = o_cur[j - 1];
                o_cur[j] = source == 3 ? PACK_POS(i, j) : source == 0 ? o_prev[j - 1] : source == 1 ? e_origin : o_f[j];
            }
            if (tr != NULL)
                tr[j] = (uint8_t)(source | (e_opened << 2) | (f_opened << 3));
            h_cur[j] = h;
            if (h > row_max) {
                row_max = h;
                row_j = j;
            }
        }
        if (local) {
            /* the row's first highest cell from j = 1 (column 0 is 0, never above best) */
            if (row_max > best) {
                best = row_max;
                bi = i;
                bj = row_j;
                if (track)
                    b_origin = o_cur[row_j];
            }
        } else if (mode == ALIGN_EXTENSION) {
            if (row_max > best) {
                best = row_max;
                bi = i;
                bj = row_j;
            }
            const int64_t off = (i - bi) - (row_j - bj);
            if (p->zdrop >= 0 && (int64_t)best - row_max > (int64_t)p->zdrop + (int64_t)ext * (off < 0 ? -off : off))
                break;
        }
        int32_t *swap = h_prev;
        h_prev = h_cur;
        h_cur = swap;
        if (track) {
            int64_t *oswap = o_prev;
            o_prev = o_cur;
            o_cur = oswap;
        }
    }
    if (mode == ALIGN_GLOBAL) {
        best = h_prev[n];
        bi = m;
        bj = n;
    } else if (mode == ALIGN_SEMIGLOBAL) {
        /* h_prev is row m (the loop ran to the end) */
        bi = m;
        bj = 0;
        best = h_prev[0];
        for (int64_t j = 1; j <= n; j++)
            if (h_prev[j] > best) {
                best = h_prev[j];
                bj = j;
            }
        if (track)
            b_origin = o_prev[bj];
    }
    res->score = best;
    res->q_end = bi;
    res->t_end = bj;
    res->n_ops = 0;
    if (local && best == 0) { /* nothing scores above 0: the empty alignment */
        res->q_begin = res->q_end = res->t_begin = res->t_end = 0;
        return 0;
    }
    if (trace == NULL) {
        if (track) {
            res->q_begin = b_origin >> 32;
            res->t_begin = b_origin & 0xFFFFFFFF;
        } else {
            res->q_begin = res->t_begin = 0;
        }
        return 0;
    }
    const align_trace tr = {trace, q, t, row, 1, 1, NULL, NULL};
    align_trace_back(&tr, mode, bi, bj, ops, res);
    return 0;
}

/* GATK's Smith-Waterman (module doc of warpdp/plugin/align.py): rows = ref (t, n_ref), columns =
   alt (q, n_alt); parameters added to the score; no floor at 0; bytes compared as they are. */
static int gatk_pair(const uint8_t *alt, int64_t n_alt, const uint8_t *ref, int64_t n_ref, const align_params *p,
                     align_result *res, uint32_t *ops, uint8_t *trace, warpdp_workspace *ws)
{
    const int32_t match = p->match, mismatch = p->mismatch, open = p->gap_open, extend = p->gap_extend;
    const int ov = p->overhang, edges = ov == GATK_INDEL || ov == GATK_LEADING_INDEL;
    const size_t row = (size_t)(n_alt + 1);
    int32_t *mem = warpdp_workspace_reserve(ws, row * 3 * sizeof(int32_t));
    if (mem == NULL)
        return -1;
    int32_t *prev = mem, *cur = mem + row, *gap_v = cur + row;
    prev[0] = 0;
    for (int64_t j = 1; j <= n_alt; j++) {
        prev[j] = edges ? open + (int32_t)(j - 1) * extend : 0;
        gap_v[j] = ALIGN_NEG;
    }
    int32_t best = 0;
    int64_t p1 = 0, have_best = 0;
    for (int64_t i = 1; i <= n_ref; i++) {
        const uint8_t a = ref[i - 1];
        uint8_t *tr = trace + (size_t)i * row;
        cur[0] = edges ? open + (int32_t)(i - 1) * extend : 0;
        int32_t gap_h = ALIGN_NEG;
        for (int64_t j = 1; j <= n_alt; j++) {
            const int32_t diag = prev[j - 1] + (a == alt[j - 1] ? match : mismatch);
            int32_t opened = prev[j] + open;
            gap_v[j] += extend;
            const int v_opened = opened > gap_v[j];
            if (v_opened)
                gap_v[j] = opened;
            opened = cur[j - 1] + open;
            gap_h += extend;
            const int h_opened = opened > gap_h;
            if (h_opened)
                gap_h = opened;
            int move;
            if (diag >= gap_v[j] && diag >= gap_h) {
                cur[j] = diag;
                move = 0;
            } else if (gap_h >= gap_v[j]) {
                cur[j] = gap_h;
                move = 1;
            } else {
                cur[j] = gap_v[j];
                move = 2;
            }
            tr[j] = (uint8_t)(move | (h_opened << 2) | (v_opened << 3));
        }
        /* the last column's best, the last row among equals */
        if (!have_best || cur[n_alt] >= best) {
            best = cur[n_alt];
            p1 = i;
            have_best = 1;
        }
        int32_t *swap = prev;
        prev = cur;
        cur = swap;
    }
    /* prev is the bottom row */
    int64_t p2;
    align_gatk_end(prev, n_ref, n_alt, ov, &best, &p1, &p2);
    res->score = best;
    const gatk_trace tr = {trace, row, 0, 0};
    align_gatk_trace_back(&tr, ov, p1, p2, n_alt, ops, res);
    return 0;
}

int ALIGN_PAIR(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const align_params *p, align_result *res,
               uint32_t *ops, warpdp_workspace *ws)
{
    const int gatk = p->mode == ALIGN_GATK;
    uint8_t *trace = NULL;
    warpdp_workspace *dp_ws = ws;
    if (gatk || p->cigar) {
        /* the traceback matrix lives in the second workspace; the rows in the first */
        trace = warpdp_workspace_reserve(ws + 1, (size_t)(m + 1) * (size_t)(n + 1));
        if (trace == NULL)
            return -1;
    }
    if (gatk)
        return gatk_pair(q, m, t, n, p, res, ops, trace, dp_ws);
    return generic_pair(q, m, t, n, p, res, ops, trace, dp_ws);
}
