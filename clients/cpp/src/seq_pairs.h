/* Shared by the families: checks of packed pairs; align's and edit's packing of ragged outputs. */
#ifndef WARPDP_SEQ_PAIRS_H
#define WARPDP_SEQ_PAIRS_H

#include <stddef.h>
#include <stdint.h>
#include "warpdp.h"

/* One of a pair set's two packed sequence arrays, with its fields' names for error messages. */
typedef struct {
    const void *bases;
    int64_t total; /* bytes in bases */
    const int64_t *offsets;
    const char *bases_name, *total_name, *offsets_name; /* "pairs->query_bases", ... */
} wd_sequences;

/* The checks every family's pairs share, pairs itself checked first: n_pairs and both totals
   within the limits, each bases pointer present unless its total is 0, both offsets present (the
   offsets' contents are the driver's to check). */
int wd_check_sequences(int64_t n_pairs, const wd_sequences *a, const wd_sequences *b);

/* wd_check_sequences for warpdp_seq_pairs (align, edit). */
int wd_check_seq_pairs(const warpdp_seq_pairs *pairs);

/* A caller's ragged output: values and offsets present, capacity >= needed. */
int wd_check_ragged(const void *values, int64_t capacity, const int64_t *offsets, int64_t needed, const char *name);

/* The drivers write pair i's items at slot starts_a[i] + starts_b[i] (+ per_pair * i) and their count
   into offsets[i + 1]; this moves them to be consecutive, pair after pair, and turns offsets into
   offsets (n_pairs + 1 entries). values2 (same layout) is moved alongside, or NULL. */
void wd_pack_ragged(void *values, void *values2, size_t item_size, int64_t *offsets, int64_t n_pairs,
                    const int64_t *starts_a, const int64_t *starts_b, int64_t per_pair);

#endif
