/* The align family's CPU interface: pairwise alignment (global, semi-global, local, extension;
   gaps as first + (L-1)*ext) with an optional CIGAR, and GATK's Smith-Waterman as GKL computes it.
   Rows of the DP are the query, columns the target (GATK mode: rows = ref = target, columns = alt =
   query, as GATK lays them out). Scores are int32; the driver refuses parameters and lengths that
   could overflow them. */
#ifndef WARPDP_ALIGN_KERNEL_H
#define WARPDP_ALIGN_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include "cpu_common.h"

enum { ALIGN_GLOBAL = 0, ALIGN_SEMIGLOBAL = 1, ALIGN_LOCAL = 2, ALIGN_EXTENSION = 3, ALIGN_GATK = 4 };
enum { GATK_SOFTCLIP = 0, GATK_INDEL = 1, GATK_LEADING_INDEL = 2, GATK_IGNORE = 3 };

/* SAM op codes as BAM stores them (core/cigar.py). */
enum { OP_M = 0, OP_I = 1, OP_D = 2, OP_S = 4, OP_EQ = 7, OP_X = 8 };

/* Largest |score parameter| and largest (len_q + len_t + 2) * |parameter|: every DP value then
   stays within +-2^30, so int32 sums of a value and a parameter never overflow. */
#define ALIGN_MAX_PARAMETER 65536
#define ALIGN_SCORE_LIMIT ((int64_t)1 << 30)
#define ALIGN_NEG (-(int32_t)(1 << 30)) /* "no value": below every reachable score */

typedef struct {
    int mode;
    int32_t matrix[25];       /* score of query code a against target code b: matrix[5*a + b] (A C G T N) */
    int32_t gap_first;        /* cost of a gap of length 1 (>= 0) */
    int32_t gap_ext;          /* cost of each further base (>= 0, <= gap_first) */
    int32_t zdrop;            /* extension only; < 0: none */
    int overhang;             /* GATK only: GATK_* */
    int32_t match, mismatch, gap_open, gap_extend; /* GATK only, as GATK's SWParameters (added to the score) */
    int cigar;                /* 1: write CIGARs (needs the traceback matrix) */
    int64_t max_traceback_cells; /* per pair; a pair needing more is refused */
    int64_t diag_min_length;  /* test hook; > 0: SIMD variants send every generic pair whose longer sequence
                                 has at least this many bases to the intra-pair kernel; <= 0: the
                                 driver's choice (align_diag_min_length) */
} align_params;

typedef struct {
    const uint8_t *q_bases, *t_bases;
    const int64_t *q_offsets, *t_offsets;
    int64_t n_pairs, q_total, t_total;
} align_pairs;

/* With CIGARs, pair i's ops go to ops[q_offsets[i] + t_offsets[i] + 2*i ..] (room for len_q + len_t + 2,
   more than any alignment has runs; ops_capacity >= q_total + t_total + 2*n_pairs) and their number to
   ops_count[i]. */
typedef struct {
    int64_t *score, *query_begin, *query_end, *target_begin, *target_end;
    uint32_t *ops;
    int64_t ops_capacity;
    int64_t *ops_count;
} align_outputs;

/* One pair's result. */
typedef struct {
    int32_t score;
    int64_t q_begin, q_end, t_begin, t_end;
    int64_t n_ops;
} align_result;

/* Fields align_run checks (warpdp_bad_argument.field), in the order of ALIGN_FIELDS in align.pyx. */
enum {
    ALIGN_BAD_THREADS, ALIGN_BAD_MODE, ALIGN_BAD_MATRIX, ALIGN_BAD_GAP_OPEN, ALIGN_BAD_GAP_EXTEND,
    ALIGN_BAD_OVERHANG, ALIGN_BAD_MATCH, ALIGN_BAD_MISMATCH, ALIGN_BAD_Q_OFFSETS, ALIGN_BAD_T_OFFSETS,
    ALIGN_BAD_LENGTH, ALIGN_BAD_TRACEBACK, ALIGN_BAD_OUTPUT,
};

/* A, C, G, T in either case -> 0..3; every other byte -> 4 (N), scored as the matrix says. */
static inline uint8_t align_base_code(uint8_t base)
{
    const uint8_t u = (uint8_t)(base & 0xDF);
    return u == 'A' ? 0 : u == 'C' ? 1 : u == 'G' ? 2 : u == 'T' ? 3 : 4;
}

/* A traceback matrix (generic modes; bits as align_body.h describes): cell (i, j) at
   bits[(i * row + j) * stride], base codes q[k * seq_stride], t[k * seq_stride]. The SIMD
   variants' lanes keep one pair per lane, interleaved: stride and seq_stride = their lane count.
   With fetch (the intra-pair kernel, align_diag_body.h), cells (i, j >= 1) come from
   fetch(context, i, j) instead, asked for along the path only, diagonal i + j never rising, row
   never rising. */
typedef struct {
    const uint8_t *bits, *q, *t;
    size_t row;
    ptrdiff_t stride, seq_stride;
    uint8_t (*fetch)(void *context, int64_t i, int64_t j);
    void *context;
} align_trace;

/* Traces back from (bi, bj): ops (room for bi + bj + 2) receives the CIGAR, res the begins and
   n_ops. One tie rule for every variant. */
void align_trace_back(const align_trace *tr, int mode, int64_t bi, int64_t bj, uint32_t *ops, align_result *res);

/* GATK mode's end cell, given the last column's best (*best at row *p1, the last row among equals)
   and the bottom row (bottom[0..n_alt]): *p1, *p2 and *best as GKL picks them for the overhang. */
void align_gatk_end(const int32_t *bottom, int64_t n_ref, int64_t n_alt, int overhang, int32_t *best, int64_t *p1,
                    int64_t *p2);

/* GATK mode's traceback matrix (rows = ref, columns = alt): with plane_bytes 0, one byte per cell (bits
   as align_body.h describes; the scalar kernel); else the SIMD lanes' four masks per cell, each of
   plane_bytes bytes, this lane's bit at `bit` of each: the diagonal is the cell's best, the horizontal
   gap is, the horizontal gap opened here, the vertical one opened here. */
typedef struct {
    const uint8_t *bits;
    size_t row;
    int plane_bytes, bit;
} gatk_trace;

/* GATK mode's traceback from (p1, p2): ops (room for
   n_ref + n_alt + 2) receives GKL's CIGAR, res the ends, begins (t_begin = GKL's alignment offset)
   and n_ops; res->score is the caller's. */
void align_gatk_trace_back(const gatk_trace *tr, int overhang, int64_t p1, int64_t p2, int64_t n_alt,
                           uint32_t *ops, align_result *res);

/* The SIMD variants' inter-pair paths: up to ALIGN_MAX_LANES pairs (generic modes and GATK's), one per lane,
   of int16 cells where align_fits_int16 says a pair's values fit them, else of int32 cells. With a
   CIGAR, only pairs of at most ALIGN_LANE_TRACE_SIDE bases each (so that a batch's traceback,
   sized by its longest query and longest target, has at most ALIGN_LANE_TRACE_CELLS cells per
   lane); the others take the intra-pair kernel (below; the scalar kernel past align_diag_fits), as
   do sequences over ALIGN_LANE_MAX_LENGTH (a batch's rows then stay within a few MiB). */
#define ALIGN_MAX_LANES 32
#define ALIGN_LANE_TRACE_SIDE 1023
#define ALIGN_LANE_MAX_LENGTH 65535
#define ALIGN_LANE_TRACE_CELLS ((int64_t)(ALIGN_LANE_TRACE_SIDE + 1) * (ALIGN_LANE_TRACE_SIDE + 1))
/* GATK mode keeps 4 bits per lane and cell (gatk_trace), so its int32 lanes take pairs of up to
   2,047 bases a side: a batch's planes then hold at most 2048^2 cells x 8 bytes (AVX-512) = 32 MiB. */
#define ALIGN_GATK_LANE_SIDE 2047
typedef struct {
    int count; /* lanes in use */
    const uint8_t *q[ALIGN_MAX_LANES], *t[ALIGN_MAX_LANES]; /* bases as given */
    int64_t m[ALIGN_MAX_LANES], n[ALIGN_MAX_LANES];
    uint32_t *ops[ALIGN_MAX_LANES]; /* with a CIGAR: room for m + n + 2 */
    align_result res[ALIGN_MAX_LANES];
} align_lane_batch;

/* 1 when every DP value of an m x n pair, plus or minus two parameters, fits int16: a cell is at
   most min(m, n) * top (top: the largest matrix entry; gaps only cost) and at least the all-gap
   path's -(2 * first + (m + n) * ext); E and F are at most two parameters below a cell. Rows and
   columns must fit too (the lanes count them in int16). */
static inline int align_fits_int16(int64_t m, int64_t n, int32_t top, int32_t first, int32_t ext, int32_t largest)
{
    const int64_t high = (m < n ? m : n) * (int64_t)(top > 0 ? top : 0);
    const int64_t low = 2 * (int64_t)first + (m + n) * (int64_t)ext;
    return m <= INT16_MAX && n <= INT16_MAX && high + largest <= INT16_MAX && low + 2 * (int64_t)largest <= INT16_MAX;
}

/* The same for GATK mode (GATK's signs: match > 0, the others <= 0, added): a cell is at most
   min(m, n) * match and at least a border (open + (max(m, n) - 1) * extend) plus min(m, n)
   mismatches along a diagonal. */
static inline int align_gatk_fits_int16(int64_t m, int64_t n, const align_params *p, int32_t largest)
{
    const int64_t shorter = m < n ? m : n, longer = m < n ? n : m;
    const int64_t high = shorter * (int64_t)p->match;
    const int64_t low = -(int64_t)p->gap_open - longer * (int64_t)p->gap_extend - shorter * (int64_t)p->mismatch;
    return longer <= INT16_MAX && high + largest <= INT16_MAX && low + 2 * (int64_t)largest <= INT16_MAX;
}

/* 0, or -1 out of memory. */
int align_lanes_avx2(align_lane_batch *b, const align_params *p, warpdp_workspace *ws);
int align_lanes_avx512(align_lane_batch *b, const align_params *p, warpdp_workspace *ws);
int align_lanes_avx2_i32(align_lane_batch *b, const align_params *p, warpdp_workspace *ws);
int align_lanes_avx512_i32(align_lane_batch *b, const align_params *p, warpdp_workspace *ws);

/* The SIMD variants' intra-pair path (align_diag_body.h), for long pairs (generic modes): one pair,
   bases as given, int16 cells where align_fits_int16 says the pair fits them (and, AVX2, the matrix
   fits bytes), else int32; memory linear in the lengths (traceback from checkpoints). ops (room for
   m + n + 2) receives the CIGAR when p->cigar. 0, or -1 out of memory. The driver sends it the pairs
   that need a traceback walk (a CIGAR, or score-only local begins, traced back too) whose longer
   sequence has at least align_diag_min_length(isa) bases (below, the lanes are faster; above, a
   batch's traceback, lanes x cells bytes, outgrows the caches: BENCHMARKS.md, "Alignment (issue
   26): CPU SIMD variants"), and the pairs over ALIGN_LANE_MAX_LENGTH. */
static inline int64_t align_diag_min_length(int isa)
{
    return isa == WARPDP_ISA_AVX512 ? 896 : ALIGN_LANE_TRACE_SIDE + 1;
}

/* 1 when the kernel's traceback checkpoints for an m x n pair (at most (m + n) / 4096 + 1 of them,
   each four rows of m + 96 int32 cells: align_diag_body.h) stay within 256 MiB. */
static inline int align_diag_fits(int64_t m, int64_t n)
{
    return ((m + n) / 4096 + 1) * 4 * (m + 96) * 4 <= ((int64_t)1 << 28);
}
typedef int (*align_diag_kernel)(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const align_params *p,
                                 align_result *res, uint32_t *ops, warpdp_workspace *ws);
int align_diag_avx2(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const align_params *p,
                    align_result *res, uint32_t *ops, warpdp_workspace *ws);
int align_diag_avx512(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const align_params *p,
                      align_result *res, uint32_t *ops, warpdp_workspace *ws);
int align_diag_avx2_i32(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const align_params *p,
                        align_result *res, uint32_t *ops, warpdp_workspace *ws);
int align_diag_avx512_i32(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const align_params *p,
                          align_result *res, uint32_t *ops, warpdp_workspace *ws);

/* One pair (scalar variant): q/t are codes 0..4 (generic modes) or raw bytes (GATK mode). ops
   (room for m + n + 2) receives the CIGAR when p->cigar or the mode is GATK. 0, or -1 out of memory. */
int align_pair_scalar(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const align_params *p,
                      align_result *res, uint32_t *ops, warpdp_workspace *ws);

/* Checks every argument as align_run does (the C API's GPU handle calls it too: the same refusals);
   *largest_out receives the largest |parameter| (at least 1). 0, or WARPDP_BAD_ARGUMENT with *bad filled. */
int align_check_arguments(const align_pairs *pairs, const align_params *p, const align_outputs *out, int threads,
                          int32_t *largest_out, warpdp_bad_argument *bad);

/* Aligns every pair. Returns 0; -1 out of memory; -2 for an isa this family has no variant of
   or this CPU cannot run; WARPDP_BAD_ARGUMENT with *bad filled (nothing computed). */
int align_run(const align_pairs *pairs, const align_params *p, align_outputs *out, int threads, int isa,
              warpdp_bad_argument *bad);

#endif
