/* Edit distance (unit costs) over packed pairs: exact (edlib's NW / SHW / HW, bit-parallel) and
   Scrooge's windowed GenASM. The per-pair body (edit_body.h) has one scalar build; the AVX2 and
   AVX-512 variants add inter-pair lanes for short exact pairs (edit_lanes_body.h, edit_lanes.c)
   and send every other pair to the per-pair body. */
#ifndef WARPDP_EDIT_KERNEL_H
#define WARPDP_EDIT_KERNEL_H

#include <stdint.h>
#include "cpu_common.h"

enum edit_mode { EDIT_NW = 0, EDIT_SHW = 1, EDIT_HW = 2 };
enum edit_task { EDIT_DISTANCE = 0, EDIT_LOCATIONS = 1, EDIT_PATH = 2 };
enum edit_method { EDIT_EXACT = 0, EDIT_WINDOWED = 1 };

/* Field codes of WARPDP_BAD_ARGUMENT, in the order of edit.pyx's EDIT_FIELDS. */
enum {
    EDIT_BAD_THREADS = 0,
    EDIT_BAD_MODE,
    EDIT_BAD_K,
    EDIT_BAD_TASK,
    EDIT_BAD_METHOD,
    EDIT_BAD_WINDOW,
    EDIT_BAD_OVERLAP,
    EDIT_BAD_QUERY_OFFSETS,
    EDIT_BAD_TARGET_OFFSETS,
};

#define EDIT_MAX_WINDOW 64

typedef struct {
    int mode, task, method;
    int64_t k; /* -1: no bound */
    int window, overlap;
} edit_params;

typedef struct {
    const uint8_t *query_bases, *target_bases;
    const int64_t *query_offsets, *target_offsets;
    int64_t n_pairs, query_total, target_total;
} edit_pairs;

/* Per pair: distance (-1 above k), the target span of the reported alignment [t_begin, t_end).
   Locations (task >= locations): pair i writes at most len(target_i) + 1 of them (SHW's and HW's may
   also end before the target) from target_offsets[i] + i into loc_begin/loc_end and their count into n_locations[i]. The CIGAR
   (task == path): at most len(query_i) + len(target_i) packed ops from
   query_offsets[i] + target_offsets[i] into cigar_ops, their count into n_cigar[i]. */
typedef struct {
    int64_t *distance, *t_begin, *t_end, *n_locations, *loc_begin, *loc_end, *n_cigar;
    uint32_t *cigar_ops;
} edit_outputs;

/* One pair; returns 0, -1 when out of memory, -3 when the windowed method meets a byte other
   than ACGT (either case). */
int edit_pair_scalar(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const edit_params *p,
                     int64_t *distance, int64_t *t_begin, int64_t *t_end, int64_t *loc_begin, int64_t *loc_end,
                     int64_t *n_locations, uint32_t *cigar, int64_t *n_cigar);

/* The Hirschberg path of the per-pair body: the global alignment of q[0..m) with t[0..n) whose
   distance is cost, its ops into cigar (room m + n), their count into *n_cigar; 0 or -1 (out of
   memory). */
int edit_path_scalar(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, int64_t cost, uint32_t *cigar,
                     int64_t *n_cigar);

/* ---- Inter-pair lanes (short exact pairs, one pair per 64-bit lane) ---- */

/* Queries of up to this many 64-bit words and targets of up to EDIT_LANE_MAX_TARGET bases go
   to the lanes (a longer target would only grow the per-column rows kept for locations). */
#define EDIT_LANE_WORDS 4
#define EDIT_LANE_MAX_TARGET 16384
#define EDIT_LANES_AVX2 4
#define EDIT_LANES_AVX512 8
#define EDIT_MAX_LANES EDIT_LANES_AVX512

/* One lane: the query q[0..m) (1 <= m, (m + 63) / 64 == the sweep's words) against t[0..n). */
typedef struct {
    const uint8_t *q, *t;
    int64_t m, n;
    int64_t limit; /* EDIT_LAST_WITHIN: the value to stay within */
} edit_lane;

/* What a sweep reports per lane (value, column), over the last DP row D[m][0..n]:
   EDIT_FIRST_MIN: the minimum over columns [nw ? n : 0, n] and its first column;
   EDIT_LAST_WITHIN: (unused, the last column j in [1, n] with D[m][j] <= limit, else 1). */
enum { EDIT_FIRST_MIN = 0, EDIT_LAST_WITHIN = 1 };

typedef struct {
    int kind, words;
    int free_start; /* D[0][j] = 0 (HW's forward sweep) instead of j */
    int nw;         /* only column n counts */
    int reverse;    /* both sequences read backward (the reversed problem of a start) */
    int64_t *rows;  /* NULL, or room for (max n + 1) * lanes values: rows[j * lanes + lane] = D[m][j] */
} edit_sweep;

/* Sweeps count (<= its lanes) pairs side by side; 0 or -1 (out of memory). */
typedef int (*edit_lanes_kernel)(const edit_lane *lanes, int count, const edit_sweep *s, int64_t *value,
                                 int64_t *column, warpdp_workspace *ws);
int edit_lanes_avx2(const edit_lane *lanes, int count, const edit_sweep *s, int64_t *value, int64_t *column,
                    warpdp_workspace *ws);
int edit_lanes_avx512(const edit_lane *lanes, int count, const edit_sweep *s, int64_t *value, int64_t *column,
                      warpdp_workspace *ws);

/* The path of one lane pair (edit_lanes_path): its span, its distance and where its ops go
   (cigar NULL: no path for this pair). */
typedef struct {
    int64_t t_begin, t_end, cost;
    uint32_t *cigar;
    int64_t *n_cigar;
} edit_path_job;

/* The per-pair body's paths of count lane pairs (each query within EDIT_LANE_WORDS words),
   Hirschberg's recursion breadth first with its halves' rows swept in the lanes; 0 or -1. */
int edit_lanes_path(const edit_lane *lane, const edit_path_job *path, int count, edit_lanes_kernel kernel,
                    int lanes, warpdp_workspace *ws, warpdp_workspace *row_ws);

/* Runs the pairs with the lane kernel (lanes wide; NULL: none, the scalar variant) where they
   fit, the per-pair body elsewhere; arguments already checked. 0 or -1 (out of memory);
   *first_bad: the lowest pair the windowed method refused, else INT64_MAX. */
int edit_run_lanes(const edit_pairs *pairs, const edit_params *p, edit_outputs *out, int threads,
                   edit_lanes_kernel kernel, int lanes, int64_t *first_bad);

/* The arguments edit_run checks before anything runs (the GPU handle's launcher checks them too):
   0, or WARPDP_BAD_ARGUMENT with *bad filled. */
int edit_check_arguments(const edit_pairs *pairs, const edit_params *p, int threads, warpdp_bad_argument *bad);

int edit_run(const edit_pairs *pairs, const edit_params *p, edit_outputs *out, int threads, int isa,
             int64_t *bad_pair, warpdp_bad_argument *bad);

#endif
