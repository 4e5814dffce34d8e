/* Edit distance (unit costs) over packed pairs: exact (edlib's NW / SHW / HW, bit-parallel) and
   Scrooge's windowed GenASM. One body (edit_body.h) per ISA; only the scalar build exists yet. */
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
typedef int (*edit_pair_kernel)(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const edit_params *p,
                                int64_t *distance, int64_t *t_begin, int64_t *t_end, int64_t *loc_begin,
                                int64_t *loc_end, int64_t *n_locations, uint32_t *cigar, int64_t *n_cigar);

int edit_pair_scalar(const uint8_t *q, int64_t m, const uint8_t *t, int64_t n, const edit_params *p,
                     int64_t *distance, int64_t *t_begin, int64_t *t_end, int64_t *loc_begin, int64_t *loc_end,
                     int64_t *n_locations, uint32_t *cigar, int64_t *n_cigar);

int edit_run(const edit_pairs *pairs, const edit_params *p, edit_outputs *out, int threads, int isa,
             int64_t *bad_pair, warpdp_bad_argument *bad);

#endif
