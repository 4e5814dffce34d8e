/* Body of a SIMD Pair-HMM kernel, included once per (instruction set, precision).
 *
 * The includer defines:
 *   KERNEL_NAME, REAL, VEC, LANES, PH2PR, MM_TABLE, INITIAL,
 *   V_ZERO(), V_LOAD(real_ptr), V_ADD(a,b), V_MUL(a,b),
 *   V_SHIFT_IN(v, real_ptr)     lanes move up by one, lane 0 takes *real_ptr,
 *   V_STORE_LAST(real_ptr, v)   stores lane LANES-1 to *real_ptr; where ROWS_BACKWARDS is
 *                               defined it may also store lanes 0..LANES-2 to
 *                               real_ptr[-(LANES-1)..-1] (see the row buffers),
 *   V_CODES(uint8_ptr)          LANES base codes as an integer vector (CODES type),
 *   V_EMISSION(uint8_ptr, read_codes, e_match, e_mismatch)
 *                               per lane: e_match where (hap code & read code) != 0.
 *
 * Layout: the read is cut into stripes of LANES rows; lane k holds row (stripe*LANES + k + 1).
 * Inside a stripe the lanes sweep the haplotype along anti-diagonals: at step t lane k
 * computes column j = t - k + 1, so every cell's three inputs are either in the same lane
 * one step earlier (M, Y to the left) or one lane up (X, M above; M, X, Y on the diagonal,
 * which is the "above" vector of the previous step). Lane 0 takes the row above from a
 * row buffer that the last lane of the previous stripe filled. Per cell the operations
 * are exactly those of the scalar kernel, so results are bit-identical to it.
 */

REAL KERNEL_NAME(const pairhmm_pair *pair, warpdp_workspace *ws)
{
    const int R = pair->read_len, H = pair->hap_len;
    const int n_stripes = (R + LANES - 1) / LANES;
    const int rows_padded = n_stripes * LANES;
    /* The row buffers hold columns -2*LANES .. H+2*LANES-1, column j at COLUMN(j): backwards
       where the includer defines ROWS_BACKWARDS (its V_STORE_LAST stores whole vectors). */
#ifdef ROWS_BACKWARDS
#define ROW_ORIGIN 0
#define COLUMN(j) (H + 2 * LANES - 1 - (j))
#else
#define ROW_ORIGIN (2 * LANES)
#define COLUMN(j) (j)
#endif
    /* Row buffers and reversed hap codes carry 2*LANES of padding on each side. */
    const int row_stride = H + 4 * LANES;

    size_t bytes = sizeof(REAL) * (size_t)(8 * rows_padded + 3 * row_stride + LANES)
                   + (size_t)rows_padded + (size_t)row_stride + 256;
    char *memory = warpdp_workspace_reserve(ws, bytes);
    if (memory == NULL)
        return (REAL)-1;
    REAL *p_mm = (REAL *)memory;
    REAL *p_gapm = p_mm + rows_padded, *p_mx = p_gapm + rows_padded, *p_xx = p_mx + rows_padded;
    REAL *p_my = p_xx + rows_padded, *p_yy = p_my + rows_padded;
    REAL *e_match = p_yy + rows_padded, *e_mismatch = e_match + rows_padded;
    REAL *row_m = e_mismatch + rows_padded + ROW_ORIGIN;
    REAL *row_x = row_m + row_stride, *row_y = row_x + row_stride;
    REAL *lane_sums = row_y + row_stride - ROW_ORIGIN;
    uint8_t *read_codes = (uint8_t *)(lane_sums + LANES);
    uint8_t *hap_reversed = read_codes + rows_padded + 2 * LANES;

    /* Per-row transition and emission probabilities; padding rows are all zero. */
    for (int r = 0; r < rows_padded; r++) {
        if (r < R) {
            const int q = pair->read_quals[r] & 127, ins = pair->read_ins[r] & 127;
            const int del = pair->read_del[r] & 127, gcp = pair->read_gcp[r] & 127;
            p_mm[r] = MM_TABLE[pairhmm_mm_index(ins, del)];
            p_gapm[r] = (REAL)1 - PH2PR[gcp];
            p_mx[r] = PH2PR[ins];
            p_xx[r] = PH2PR[gcp];
            p_my[r] = PH2PR[del];
            p_yy[r] = PH2PR[gcp];
            e_match[r] = (REAL)1 - PH2PR[q];
            e_mismatch[r] = PH2PR[q] / (REAL)3;
            read_codes[r] = pairhmm_base_code[pair->read_bases[r]];
        } else {
            p_mm[r] = p_gapm[r] = p_mx[r] = p_xx[r] = p_my[r] = p_yy[r] = 0;
            e_match[r] = e_mismatch[r] = 0;
            read_codes[r] = 0;
        }
    }
    /* hap_reversed[m] = code of hap[H-1-m], so the LANES codes a step needs are contiguous. */
    memset(hap_reversed - 2 * LANES, 0, (size_t)row_stride);
    for (int m = 0; m < H; m++)
        hap_reversed[m] = pairhmm_base_code[pair->hap_bases[H - 1 - m]];
    /* Row 0: M = X = 0, Y = K / H. */
    const REAL init_y = INITIAL / (REAL)H;
    for (int j = -2 * LANES; j < H + 2 * LANES; j++) {
        row_m[COLUMN(j)] = 0;
        row_x[COLUMN(j)] = 0;
        row_y[COLUMN(j)] = (j >= 0 && j <= H) ? init_y : 0;
    }

    VEC sum_m = V_ZERO(), sum_x = V_ZERO();
    const int last_rows = R - (n_stripes - 1) * LANES;
    for (int s = 0; s < n_stripes; s++) {
        const int base = s * LANES;
        const VEC mm = V_LOAD(p_mm + base), gapm = V_LOAD(p_gapm + base);
        const VEC mx = V_LOAD(p_mx + base), xx = V_LOAD(p_xx + base);
        const VEC my = V_LOAD(p_my + base), yy = V_LOAD(p_yy + base);
        const VEC em = V_LOAD(e_match + base), emm = V_LOAD(e_mismatch + base);
        const CODES rc = V_CODES(read_codes + base);
        const int last = (s == n_stripes - 1);
        const int steps = last ? H + last_rows - 1 : H + LANES - 1;

        VEC m_left = V_ZERO(), x_left = V_ZERO(), y_left = V_ZERO();
        VEC m_diag = V_SHIFT_IN(V_ZERO(), row_m + COLUMN(0));
        VEC x_diag = V_SHIFT_IN(V_ZERO(), row_x + COLUMN(0));
        VEC y_diag = V_SHIFT_IN(V_ZERO(), row_y + COLUMN(0));
        for (int t = 0; t < steps; t++) {
            const VEC m_up = V_SHIFT_IN(m_left, row_m + COLUMN(t + 1));
            const VEC x_up = V_SHIFT_IN(x_left, row_x + COLUMN(t + 1));
            const VEC y_up = V_SHIFT_IN(y_left, row_y + COLUMN(t + 1));
            const VEC e = V_EMISSION(hap_reversed + H - 1 - t, rc, em, emm);

            const VEC m = V_MUL(V_ADD(V_ADD(V_MUL(m_diag, mm), V_MUL(x_diag, gapm)),
                                      V_MUL(y_diag, gapm)), e);
            const VEC x = V_ADD(V_MUL(m_up, mx), V_MUL(x_up, xx));
            const VEC y = V_ADD(V_MUL(m_left, my), V_MUL(y_left, yy));

            if (last) {
                sum_m = V_ADD(sum_m, m);
                sum_x = V_ADD(sum_x, x);
            } else {
                /* The last lane finished column t - LANES + 2 of the stripe's bottom row;
                   lane 0 already read that column, so the buffer is updated in place. With
                   ROWS_BACKWARDS, V_STORE_LAST may store the whole vector (no lane
                   extraction): the other lanes land on the next LANES - 1 columns, which
                   lane 0 has read already (up to t + 1) and the next LANES - 1 steps
                   overwrite with their final values. */
                const int column = t - LANES + 2;
                V_STORE_LAST(row_m + COLUMN(column), m);
                V_STORE_LAST(row_x + COLUMN(column), x);
                V_STORE_LAST(row_y + COLUMN(column), y);
            }
            m_diag = m_up;
            x_diag = x_up;
            y_diag = y_up;
            m_left = m;
            x_left = x;
            y_left = y;
        }
    }
    V_STORE(lane_sums, V_ADD(sum_m, sum_x));
    return lane_sums[last_rows - 1];
#undef COLUMN
#undef ROW_ORIGIN
}
