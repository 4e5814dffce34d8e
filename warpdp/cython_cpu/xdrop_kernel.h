/* Gapped X-drop seed extension (SeqAn 2 extendSeed(..., GappedXDrop()) semantics), CPU kernels.
 *
 * One extension direction is a DP over a query q (the V flank, walking away from the seed) and
 * a database t (the H flank, walking away from the seed). Cell (c, r) aligns q[0..c) with
 * t[0..r); anti-diagonal d holds the cells with c + r = d. As in SeqAn, values are kept per
 * anti-diagonal for a window of columns [lo, hi]: the columns lo < c < hi are computed, lo and
 * hi are edge cells (undefined, or the first row/column while d*gap stays within X of the best).
 * See docs/semantics.md "X-drop seed extension" for the reporting modes.
 */
#ifndef WARPDP_XDROP_KERNEL_H
#define WARPDP_XDROP_KERNEL_H

#include <stdint.h>
#include "cpu_common.h"

/* Bytes every sequence buffer handed to a kernel must stay readable before its start and past
   its end, and elements every DP buffer has past column m + 1 (vector lanes run over the
   edges of the window). */
#define XDROP_PAD 64

/* Cell types of the kernels. The int16 and int32 kernels are used only when no value can
   leave (-2^14, 2^14) or (-2^30, 2^30): see xdrop_fits. The scalar kernel works in int64 for
   any input. */
#define XDROP_UNDEF64 (INT64_MIN + ((int64_t)1 << 40))
#define XDROP_UNDEF32 (-(INT32_C(1) << 30))
#define XDROP_UNDEF16 ((int16_t)-(1 << 14))
#define XDROP_INT32_LIMIT ((int64_t)1 << 29)
#define XDROP_INT16_LIMIT ((int64_t)1 << 13)

typedef struct {
    int64_t match, mismatch, gap; /* match > 0 > mismatch, gap; |score| < 2^31 */
    int64_t x;                    /* 0 <= x <= 2^62 */
    int best_mode;                /* 0: SeqAn's longest extension; 1: the best-scoring cell */
} xdrop_params;

typedef struct {
    int64_t score; /* score of the reported cell */
    int64_t ext_v; /* its column: bases of the V flank covered by the extension */
    int64_t ext_h; /* its row: bases of the H flank covered */
    int64_t cells; /* DP cells computed (for GCUPS) */
} xdrop_result;

/* One direction. q holds m codes and t_rev holds the n codes of t in reverse order
   (t_rev[j] = t[n-1-j]), so that along an anti-diagonal both are read forwards; both must be
   readable XDROP_PAD bytes before their start and past their end. Codes are compared for equality only.
   Returns 0, or -1 when the workspace could not be allocated. */
int xdrop_extend_scalar(const uint8_t *q, int64_t m, const uint8_t *t_rev, int64_t n,
                        const xdrop_params *p, xdrop_result *res, warpdp_workspace *ws);
int xdrop_extend_avx2(const uint8_t *q, int64_t m, const uint8_t *t_rev, int64_t n,
                      const xdrop_params *p, xdrop_result *res, warpdp_workspace *ws);
int xdrop_extend_avx512(const uint8_t *q, int64_t m, const uint8_t *t_rev, int64_t n,
                        const xdrop_params *p, xdrop_result *res, warpdp_workspace *ws);

/* Two independent extensions at once (the left and right ones of a seed), interleaved so that
   their per-anti-diagonal latency chains overlap; same results as two single calls. */
int xdrop_extend2_scalar(const uint8_t *q0, int64_t m0, const uint8_t *t_rev0, int64_t n0,
                         const uint8_t *q1, int64_t m1, const uint8_t *t_rev1, int64_t n1,
                         const xdrop_params *p, xdrop_result *res0, xdrop_result *res1, warpdp_workspace *ws);
int xdrop_extend2_avx2(const uint8_t *q0, int64_t m0, const uint8_t *t_rev0, int64_t n0,
                       const uint8_t *q1, int64_t m1, const uint8_t *t_rev1, int64_t n1,
                       const xdrop_params *p, xdrop_result *res0, xdrop_result *res1, warpdp_workspace *ws);
int xdrop_extend2_avx512(const uint8_t *q0, int64_t m0, const uint8_t *t_rev0, int64_t n0,
                         const uint8_t *q1, int64_t m1, const uint8_t *t_rev1, int64_t n1,
                         const xdrop_params *p, xdrop_result *res0, xdrop_result *res1, warpdp_workspace *ws);

/* 1 when every value the extension can produce fits a kernel whose undefined is -2*limit:
   defined cells lie in [-x, match * min(m, n)] (a cell scores at most min(c, r) matches), and
   adding one score to a defined or undefined cell stays inside (-4*limit, 4*limit).
   With limit 2^13 this also bounds the window to under 2^14 columns: a defined cell (c, r)
   needs |c - r| * -gap <= match * min(c, r) + x < 2^14. */
static inline int xdrop_fits(const xdrop_params *p, int64_t m, int64_t n, int64_t limit)
{
    const int64_t shorter = m < n ? m : n;
    return p->x < limit && -p->mismatch < limit && -p->gap < limit && p->match < limit && shorter < limit &&
           p->match * shorter < limit;
}

/* Packed pairs (the project's data model): pair i extends the seed of length k at
   (h_pos[i], v_pos[i]) of H = h_bases[h_offsets[i]..h_offsets[i+1]) and
   V = v_bases[v_offsets[i]..v_offsets[i+1]). Bases are A, C, G, T, N in either case. */
typedef struct {
    const uint8_t *h_bases, *v_bases;
    const int64_t *h_offsets, *v_offsets, *h_pos, *v_pos;
    int64_t n_pairs;
    int64_t h_total, v_total; /* bytes in h_bases and v_bases */
} xdrop_pairs;

/* Arguments xdrop_run checks (warpdp_bad_argument.field), in the order of XDROP_FIELDS in xdrop.pyx. */
enum {
    XDROP_BAD_THREADS, XDROP_BAD_K, XDROP_BAD_MATCH, XDROP_BAD_MISMATCH, XDROP_BAD_GAP, XDROP_BAD_X,
    XDROP_BAD_H_OFFSETS, XDROP_BAD_V_OFFSETS, XDROP_BAD_H_POS, XDROP_BAD_V_POS,
};

/* Per-pair outputs, any of them may be NULL except score and the four coordinates. */
typedef struct {
    int64_t *score, *begin_h, *end_h, *begin_v, *end_v, *cells;
} xdrop_outputs;

/* Extends every pair in both directions (left on the prefixes, right on the suffixes);
   score = left + right + k * match. Offsets, seeds, k, scores and threads are checked first;
   bases are checked during the copy the kernels need anyway.
   Returns 0; -1 when memory ran out; -2 for an isa this CPU cannot run; -3 when a byte is
   not a base, with *bad_pair = the first such pair (its outputs are left untouched);
   WARPDP_BAD_ARGUMENT with *bad filled when an argument is out of range (nothing computed). */
int xdrop_run(const xdrop_pairs *pairs, int64_t k, const xdrop_params *p, xdrop_outputs *out,
              int threads, int isa, int64_t *bad_pair, warpdp_bad_argument *bad);

/* The checks xdrop_run makes first (offsets, seeds, k, scores, threads; not the bases): 0, or
   WARPDP_BAD_ARGUMENT with *bad filled. The C API's GPU handles make them too (clients/cpp). */
int xdrop_check_arguments(const xdrop_pairs *pairs, int64_t k, const xdrop_params *p, int threads,
                          warpdp_bad_argument *bad);

#endif
