/* The readable reference variant: row by row, one cell at a time. Every SIMD variant
   performs the same floating-point operations per cell in the same order, so all
   variants give bit-identical results. */
#include <string.h>
#include "pairhmm_kernel.h"
#include "pairhmm_tables.h"

#define DEFINE_SCALAR_KERNEL(NAME, REAL, PH2PR, MM_TABLE, INITIAL)                          \
REAL NAME(const pairhmm_pair *pair, warpdp_workspace *ws)                                  \
{                                                                                          \
    const int R = pair->read_len, H = pair->hap_len;                                       \
    REAL *rows = warpdp_workspace_reserve(ws, sizeof(REAL) * 6 * (size_t)(H + 1));        \
    if (rows == NULL)                                                                      \
        return (REAL)-1;                                                                   \
    REAL *prev_m = rows, *prev_x = rows + (H + 1), *prev_y = rows + 2 * (H + 1);           \
    REAL *cur_m = rows + 3 * (H + 1), *cur_x = rows + 4 * (H + 1), *cur_y = rows + 5 * (H + 1); \
    const REAL init_y = INITIAL / (REAL)H;                                                 \
    for (int j = 0; j <= H; j++) {                                                         \
        prev_m[j] = 0;                                                                     \
        prev_x[j] = 0;                                                                     \
        prev_y[j] = init_y;                                                                \
    }                                                                                      \
    for (int i = 1; i <= R; i++) {                                                         \
        const int q = pair->read_quals[i - 1] & 127, ins = pair->read_ins[i - 1] & 127;    \
        const int del = pair->read_del[i - 1] & 127, gcp = pair->read_gcp[i - 1] & 127;    \
        const REAL p_mm = MM_TABLE[pairhmm_mm_index(ins, del)];                            \
        const REAL p_gapm = (REAL)1 - PH2PR[gcp];                                          \
        const REAL p_mx = PH2PR[ins], p_xx = PH2PR[gcp];                                   \
        const REAL p_my = PH2PR[del], p_yy = PH2PR[gcp];                                   \
        const REAL e_match = (REAL)1 - PH2PR[q], e_mismatch = PH2PR[q] / (REAL)3;          \
        const uint8_t read_code = pairhmm_base_code[pair->read_bases[i - 1]];              \
        cur_m[0] = cur_x[0] = cur_y[0] = 0;                                                \
        for (int j = 1; j <= H; j++) {                                                     \
            const REAL e = (read_code & pairhmm_base_code[pair->hap_bases[j - 1]])         \
                               ? e_match : e_mismatch;                                     \
            cur_m[j] = ((prev_m[j - 1] * p_mm + prev_x[j - 1] * p_gapm)                   \
                        + prev_y[j - 1] * p_gapm) * e;                                     \
            cur_x[j] = prev_m[j] * p_mx + prev_x[j] * p_xx;                                \
            cur_y[j] = cur_m[j - 1] * p_my + cur_y[j - 1] * p_yy;                          \
        }                                                                                  \
        REAL *t;                                                                           \
        t = prev_m; prev_m = cur_m; cur_m = t;                                             \
        t = prev_x; prev_x = cur_x; cur_x = t;                                             \
        t = prev_y; prev_y = cur_y; cur_y = t;                                             \
    }                                                                                      \
    REAL sum_m = 0, sum_x = 0;                                                             \
    for (int j = 1; j <= H; j++) {                                                         \
        sum_m += prev_m[j];                                                                \
        sum_x += prev_x[j];                                                                \
    }                                                                                      \
    return sum_m + sum_x;                                                                  \
}

DEFINE_SCALAR_KERNEL(pairhmm_forward_float_scalar, float, pairhmm_ph2pr_f, pairhmm_mm_f,
                     pairhmm_initial_f)
DEFINE_SCALAR_KERNEL(pairhmm_forward_double_scalar, double, pairhmm_ph2pr_d, pairhmm_mm_d,
                     pairhmm_initial_d)
