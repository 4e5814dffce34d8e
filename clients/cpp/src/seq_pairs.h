/* Shared by align and edit: checks of warpdp_seq_pairs and packing of ragged outputs. */
#ifndef WARPDP_SEQ_PAIRS_H
#define WARPDP_SEQ_PAIRS_H

#include <stddef.h>
#include <stdint.h>
#include "warpdp.h"

/* Pointers and counts (the offsets' contents are the driver's to check). */
int wd_check_seq_pairs(const warpdp_seq_pairs *pairs);

/* A caller's ragged output: values and offsets present, capacity >= needed. */
int wd_check_ragged(const void *values, int64_t capacity, const int64_t *offsets, int64_t needed, const char *name);

/* The drivers write pair i's items at slot starts_a[i] + starts_b[i] (+ per_pair * i) and their count
   into offsets[i + 1]; this moves them to be consecutive, pair after pair, and turns offsets into
   offsets (n_pairs + 1 entries). values2 (same layout) is moved alongside, or NULL. */
void wd_pack_ragged(void *values, void *values2, size_t item_size, int64_t *offsets, int64_t n_pairs,
                    const int64_t *starts_a, const int64_t *starts_b, int64_t per_pair);

#endif
