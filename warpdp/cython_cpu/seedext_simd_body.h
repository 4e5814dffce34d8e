/* Body of an inter-task SIMD seed-extension kernel, included once per (instruction set, width).
 *
 * Up to LANES pairs run together, one per lane, in lockstep over target rows i: every lane
 * keeps its own ksw_extend2 state (window [beg, end), best cell, z-drop) and the lanes share
 * only the column index j of the sweep. A row sweeps the union of the lanes' windows; a lane
 * outside its own window neither computes nor writes, so each lane performs exactly the
 * operations of the scalar kernel (seedext_scalar.c) and gives the same answers.
 * The sweep also records, per lane, the first and last column whose new H and E are not both
 * zero, which is all the window trimming of the scalar kernel looks for; the per-row lane
 * logic (band, best cell, z-drop, trimming) is then branch-free over arrays of lanes, which
 * the compiler vectorises.
 *
 * Layout: column j of every lane is one vector: qcode[j*LANES + l], eh_h[...], eh_e[...].
 * Query codes are A,C,G,T = 0..3 and N = 8, target codes 0..3 and N = 12, so that q ^ t is
 * 0 for a match, 1..3 for a mismatch, 4 for N against N and 8..15 for N against a base:
 * one XOR and a 16-entry table give the score.
 *
 * The includer defines:
 *   KERNEL_NAME, LANES, ELEM (int16_t or int32_t), VEC, MASK,
 *   V_LOAD(p), V_STORE(p, v), V_SET1(x), V_ZERO(), V_XOR(a,b), V_ADD(a,b), V_MAX(a,b),
 *   V_GAP_SOURCE(mm)             mm, or max(mm, 0) where V_SUB0 needs a non-negative input,
 *   V_SUB0(a, b)                 max(a - b, 0) for a from V_GAP_SOURCE and b >= 0,
 *   V_SUB_LOW(a, b)              a - b for a, b >= 0, where any result <= 0 may come out as
 *                                any value <= 0 (it then loses to a non-negative opening),
 *   K_LT(a, b)                   lanes with a < b,
 *   V_SCORE_SETUP(entries)       declares what V_SCORE needs from the 32-entry table
 *                                entries[x] = score for x = q ^ t,
 *   V_SCORE(x)                   the score for x = q ^ t,
 *   K_IN(j, beg, end)            lanes with beg <= j < end,
 *   V_ADD_NONZERO(h, s)          (h != 0) ? h + s : 0, per lane,
 *   V_BLEND(k, a, b)             k ? b : a, per lane,
 *   V_MASKZ(k, v)                k ? v : 0,
 *   K_AND_GE(k, a, b)            k and a >= b,
 *   V_STORE_MASKED(p, k, v)      store v to the lanes of k, keep the others,
 *   V_OR(a,b), V_MIN(a,b),
 *   K_AND_NONZERO(k, v)          k and v != 0,
 *   SEEDEXT_FAR                  a column beyond any query (fits ELEM).
 * and may define K_ALL(k) (whether every lane of k is set) and K_ZERO(v) (lanes with v == 0)
 * for a sweep without masks while every lane is inside its window (worth it where masking
 * costs instructions, as with AVX2's blends), and SEEDEXT_Q_CODE(c) / SEEDEXT_T_CODE(c), how
 * a query / target code c (as above) is stored in an ELEM (default: c itself), for a V_SCORE
 * that wants its x = q ^ t elsewhere.
 */

#ifndef SEEDEXT_Q_CODE
#define SEEDEXT_Q_CODE(c) (c)
#define SEEDEXT_T_CODE(c) (c)
#endif



int KERNEL_NAME(const seedext_pair *pairs, int n, const seedext_params *p, seedext_result *const *results,
                warpdp_workspace *ws)
{
    /* Lane state, one array per field so the per-row logic vectorises. Unused lanes stay
       inactive with empty windows. */
    int32_t qlen[LANES], tlen[LANES], w[LANES], beg[LANES], end[LANES], first_col[LANES];
    int32_t best[LANES], best_i[LANES], best_j[LANES], gscore[LANES], gscore_i[LANES], max_off[LANES];
    int32_t active[LANES], finished[LANES], h0[LANES], ins_run[LANES];
    const uint8_t *query[LANES], *target[LANES];
    int32_t qmax = 0, tmax = 0;
    for (int l = 0; l < LANES; l++) {
        if (l >= n) {
            /* Unused lanes: empty sequences, h0 = 0, never active. */
            query[l] = target[l] = NULL;
            qlen[l] = tlen[l] = h0[l] = w[l] = beg[l] = end[l] = first_col[l] = ins_run[l] = 0;
            best[l] = best_i[l] = best_j[l] = gscore[l] = gscore_i[l] = max_off[l] = 0;
            active[l] = 0;
            continue;
        }
        const seedext_pair *pair = &pairs[l];
        query[l] = pair->query;
        target[l] = pair->target;
        qlen[l] = pair->qlen;
        tlen[l] = pair->tlen;
        h0[l] = pair->h0;
        qmax = pair->qlen > qmax ? pair->qlen : qmax;
        tmax = pair->tlen > tmax ? pair->tlen : tmax;
        /* Wider than both sequences, the band changes nothing: the driver only gives this
           kernel lengths up to SEEDEXT_SIMD_MAX_LENGTH, so i + w + 1 stays in range. */
        const int32_t band = seedext_band(pair->qlen, p), longest = pair->qlen > pair->tlen ? pair->qlen : pair->tlen;
        w[l] = band < longest ? band : longest;
        beg[l] = 0;
        end[l] = pair->qlen;
        /* Runs of H that lose e per step (column -1 down the rows, row -1 along the query),
           kept at -1 once spent so they never overflow: values as in the scalar kernel. */
        const int32_t down = pair->h0 - p->o_del - p->e_del, along = pair->h0 - p->o_ins - p->e_ins;
        first_col[l] = down > -1 ? down : -1;
        ins_run[l] = along > -1 ? along : -1;
        best[l] = pair->h0;
        best_i[l] = best_j[l] = -1;
        gscore[l] = gscore_i[l] = -1;
        max_off[l] = 0;
        active[l] = 1;
    }
    /* Columns 0..qmax+1 (column qlen is written when a row ends there), the target codes of
       every row, and the per-row lane vectors: beg, end, first H of the row, five outputs. */
    const size_t stride = (size_t)qmax + 2;
    const size_t lane_bytes = sizeof(ELEM) * LANES;
    ELEM *memory = warpdp_workspace_reserve(ws, lane_bytes * (3 * stride + (size_t)tmax + 8));
    if (memory == NULL)
        return -1;
    ELEM *qcode = memory, *eh_h = qcode + stride * LANES, *eh_e = eh_h + stride * LANES;
    ELEM *tcode = eh_e + stride * LANES, *row_beg = tcode + (size_t)tmax * LANES, *row_end = row_beg + LANES;
    ELEM *row_h1 = row_end + LANES, *out_h1 = row_h1 + LANES, *out_m = out_h1 + LANES, *out_mj = out_m + LANES;
    ELEM *out_first = out_mj + LANES, *out_last = out_first + LANES;

    /* Column by column, so that stores are contiguous: query codes, and row -1 as in the
       scalar kernel (h0, then an insertion run along the query); E starts at 0. */
    memset(eh_e, 0, lane_bytes * stride);
    for (size_t j = 0; j < stride; j++) {
        const int32_t jj = (int32_t)j;
        ELEM *qc = qcode + j * LANES, *hh = eh_h + j * LANES;
        for (int l = 0; l < LANES; l++) {
            const int c = jj < qlen[l] ? seedext_base_code[query[l][jj]] : 4;
            qc[l] = (ELEM)SEEDEXT_Q_CODE(c == 4 ? 8 : c);
        }
        for (int l = 0; l < LANES; l++) {
            hh[l] = (ELEM)(jj == 0 ? h0[l] : (jj <= qlen[l]) & (ins_run[l] > 0) ? ins_run[l] : 0);
            const int32_t next = ins_run[l] - p->e_ins > -1 ? ins_run[l] - p->e_ins : -1;
            ins_run[l] = jj == 0 ? ins_run[l] : next;
        }
    }
    for (int32_t i = 0; i < tmax; i++) {
        ELEM *tc = tcode + (size_t)i * LANES;
        for (int l = 0; l < LANES; l++) {
            const int c = i < tlen[l] ? seedext_base_code[target[l][i]] : 4;
            tc[l] = (ELEM)SEEDEXT_T_CODE(c == 4 ? 12 : c);
        }
    }

    const VEC oe_del = V_SET1((ELEM)(p->o_del + p->e_del)), e_del = V_SET1((ELEM)p->e_del);
    const VEC oe_ins = V_SET1((ELEM)(p->o_ins + p->e_ins)), e_ins = V_SET1((ELEM)p->e_ins);
    const VEC zero = V_ZERO(), one = V_SET1(1), none = V_SET1(-1), far = V_SET1(SEEDEXT_FAR);
    /* Score by q ^ t: 0 match, 1..3 mismatch, everything else involves an N. */
    ELEM score_entries[32];
    for (int x = 0; x < 32; x++)
        score_entries[x] = (ELEM)(x == 0 ? p->a : x < 4 ? -p->b : -1);
    V_SCORE_SETUP(score_entries);
    const int32_t zdrop = p->zdrop, pe_del = p->e_del, pe_ins = p->e_ins;
    /* Z-drop compares best - row_max - gap * e with zdrop; no gap longer than these can pass
       the test (best <= 2^30 < gap * e), so clamping gaps keeps 32-bit products exact. */
    const int32_t gap_del = (1 << 30) / pe_del + 1, gap_ins = (1 << 30) / pe_ins + 1;

    int n_active = n;
    for (int32_t i = 0; n_active > 0; i++) {
        /* This row's window for every lane: the band, then the query end; and the H of
           column beg-1 (the first column only exists at beg == 0). */
        int32_t jlo = SEEDEXT_FAR, jhi = 0, ilo = 0, ihi = SEEDEXT_FAR;
        for (int l = 0; l < LANES; l++) {
            const int32_t b = beg[l] > i - w[l] ? beg[l] : i - w[l];
            int32_t e = end[l] < i + w[l] + 1 ? end[l] : i + w[l] + 1;
            e = e < qlen[l] ? e : qlen[l];
            beg[l] = b;
            end[l] = e;
            /* Past the query end (the band can push beg there) the window is empty. */
            const int32_t b_in = b < qlen[l] ? b : qlen[l];
            const int32_t act = active[l], live = act & (b_in < e);
            row_beg[l] = (ELEM)(act ? b_in : 0);
            row_end[l] = (ELEM)(act ? e : 0);
            row_h1[l] = (ELEM)((b == 0) & (first_col[l] > 0) ? first_col[l] : 0);
            const int32_t lo = live ? b_in : SEEDEXT_FAR, hi = live ? e : 0;
            const int32_t inner_lo = live ? b_in : 0, inner_hi = live ? e : SEEDEXT_FAR;
            jlo = lo < jlo ? lo : jlo;
            jhi = hi > jhi ? hi : jhi;
            ilo = inner_lo > ilo ? inner_lo : ilo;
            ihi = inner_hi < ihi ? inner_hi : ihi;
        }

        const VEC beg_v = V_LOAD(row_beg), end_v = V_LOAD(row_end), t_v = V_LOAD(tcode + (size_t)i * LANES);
        VEC h1 = V_LOAD(row_h1), f = zero, m = zero, mj = none, first = far, last = none;
        if (jlo > jhi)
            jlo = jhi; /* no live lane: nothing to sweep */
        /* Columns inside every live lane's window need no per-column range test: sweep
           [jlo, ilo) and [ihi, jhi) testing each lane, and [ilo, ihi) with the live lanes. */
        ilo = ilo > jlo ? ilo : jlo;
        ihi = ihi < jhi ? ihi : jhi;
        if (ilo > ihi)
            ilo = ihi = jhi;
        VEC j_v = V_SET1((ELEM)jlo);
        ELEM *hp = eh_h + (size_t)jlo * LANES, *ep = eh_e + (size_t)jlo * LANES;
        const ELEM *qp = qcode + (size_t)jlo * LANES;
        const MASK live_lanes = K_LT(beg_v, end_v);
        int32_t j = jlo;
#define SEEDEXT_COLUMN(in)                                                                    \
        do {                                                                                  \
            const VEC diag = V_LOAD(hp), e = V_LOAD(ep);                                      \
            const VEC mm = V_ADD_NONZERO(diag, V_SCORE(V_XOR(V_LOAD(qp), t_v)));             \
            const VEC h = V_MAX(V_MAX(mm, e), f);                                             \
            V_STORE_MASKED(hp, (in), h1);                                                     \
            /* Row maximum; ties go to the later column. */                                   \
            const MASK ge = K_AND_GE((in), h, m);                                             \
            mj = V_BLEND(ge, mj, j_v);                                                        \
            m = V_BLEND((in), m, V_MAX(m, h));                                                \
            /* max(x - y, 0) for the gap openings; E and F are >= 0, so an extension that     \
               goes negative loses to the opening anyway. */                                  \
            const VEC gap_from = V_GAP_SOURCE(mm);                                            \
            const VEC e_next = V_MAX(V_SUB_LOW(e, e_del), V_SUB0(gap_from, oe_del));          \
            V_STORE_MASKED(ep, (in), e_next);                                                 \
            /* Columns left with H(i, j-1) or E(i+1, j) non-zero bound the next window. */    \
            const MASK alive = K_AND_NONZERO((in), V_OR(h1, e_next));                         \
            first = V_BLEND(alive, first, V_MIN(first, j_v));                                 \
            last = V_BLEND(alive, last, j_v);                                                 \
            h1 = V_BLEND((in), h1, h);                                                        \
            f = V_MASKZ((in), V_MAX(V_SUB_LOW(f, e_ins), V_SUB0(gap_from, oe_ins)));          \
            j_v = V_ADD(j_v, one);                                                            \
            hp += LANES, ep += LANES, qp += LANES;                                            \
        } while (0)
        /* The same column with every lane inside its window: no lane needs masking. */
#define SEEDEXT_COLUMN_ALL_LIVE()                                                             \
        do {                                                                                  \
            const VEC diag = V_LOAD(hp), e = V_LOAD(ep);                                      \
            const VEC mm = V_ADD_NONZERO(diag, V_SCORE(V_XOR(V_LOAD(qp), t_v)));             \
            const VEC h = V_MAX(V_MAX(mm, e), f);                                             \
            V_STORE(hp, h1);                                                                  \
            mj = V_BLEND(K_LT(h, m), j_v, mj);                                                \
            m = V_MAX(m, h);                                                                  \
            const VEC gap_from = V_GAP_SOURCE(mm);                                            \
            const VEC e_next = V_MAX(V_SUB_LOW(e, e_del), V_SUB0(gap_from, oe_del));          \
            V_STORE(ep, e_next);                                                              \
            const MASK dead = K_ZERO(V_OR(h1, e_next));                                       \
            first = V_BLEND(dead, V_MIN(first, j_v), first);                                  \
            last = V_BLEND(dead, j_v, last);                                                  \
            h1 = h;                                                                           \
            f = V_MAX(V_SUB_LOW(f, e_ins), V_SUB0(gap_from, oe_ins));                         \
            j_v = V_ADD(j_v, one);                                                            \
            hp += LANES, ep += LANES, qp += LANES;                                            \
        } while (0)
        for (; j < ilo; j++)
            SEEDEXT_COLUMN(K_IN(j_v, beg_v, end_v));
#ifdef K_ALL
        if (K_ALL(live_lanes))
            for (; j < ihi; j++)
                SEEDEXT_COLUMN_ALL_LIVE();
#endif
        for (; j < ihi; j++)
            SEEDEXT_COLUMN(live_lanes);
        for (; j < jhi; j++)
            SEEDEXT_COLUMN(K_IN(j_v, beg_v, end_v));
#undef SEEDEXT_COLUMN
#undef SEEDEXT_COLUMN_ALL_LIVE
        V_STORE(out_h1, h1);
        V_STORE(out_m, m);
        V_STORE(out_mj, mj);
        V_STORE(out_first, first);
        V_STORE(out_last, last);

        /* Column `end` as the row leaves it: H(i, end-1) and E = 0. */
        for (int l = 0; l < n; l++)
            if (active[l]) {
                eh_h[(size_t)end[l] * LANES + l] = out_h1[l];
                eh_e[(size_t)end[l] * LANES + l] = 0;
            }
        /* End the row for every lane as the scalar kernel does, without branches. */
        for (int l = 0; l < LANES; l++) {
            const int32_t act = active[l];
            const int32_t h_last = out_h1[l], row_max = out_m[l], row_max_j = out_mj[l];
            const int32_t b = beg[l], e = end[l];
            const int32_t reach = act & ((b < e ? e : b) == qlen[l]) & (h_last >= gscore[l]);
            gscore[l] = reach ? h_last : gscore[l];
            gscore_i[l] = reach ? i : gscore_i[l];
            const int32_t better = row_max > best[l];
            const int32_t di = i - best_i[l], dj = row_max_j - best_j[l], drop = best[l] - row_max;
            const int32_t gap = di > dj ? di - dj : dj - di, limit = di > dj ? gap_del : gap_ins;
            const int32_t cost = (gap < limit ? gap : limit) * (di > dj ? pe_del : pe_ins);
            const int32_t dropped = (better ^ 1) & (zdrop > 0) & (drop - cost > zdrop);
            const int32_t off = row_max_j > i ? row_max_j - i : i - row_max_j;
            const int32_t improve = act & better;
            best[l] = improve ? row_max : best[l];
            best_i[l] = improve ? i : best_i[l];
            best_j[l] = improve ? row_max_j : best_j[l];
            max_off[l] = improve & (off > max_off[l]) ? off : max_off[l];
            /* Trimming: the first live column of [beg, end), else end; then the last live
               column of [new beg, end], where column end holds (H(i, end-1), 0). */
            const int32_t first = out_first[l], last = out_last[l];
            const int32_t new_beg = first < e ? first : e;
            const int32_t top = h_last != 0 ? e : last >= new_beg ? last : new_beg - 1;
            const int32_t new_end = top + 2 < qlen[l] ? top + 2 : qlen[l];
            const int32_t done = (row_max == 0) | dropped | (i + 1 >= tlen[l]);
            const int32_t go_on = act & (done ^ 1);
            finished[l] = act & done;
            active[l] = go_on;
            beg[l] = go_on ? new_beg : b;
            end[l] = go_on ? new_end : e;
            first_col[l] = first_col[l] - pe_del > -1 ? first_col[l] - pe_del : -1;
        }
        for (int l = 0; l < n; l++) {
            if (finished[l]) {
                seedext_result *r = results[l];
                r->score = best[l];
                r->qle = best_j[l] + 1;
                r->tle = best_i[l] + 1;
                r->gtle = gscore_i[l] + 1;
                r->gscore = gscore[l];
                r->max_off = max_off[l];
                n_active--;
            }
        }
    }
    return 0;
}
