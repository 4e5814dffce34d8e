/* Checks of warpdp_seq_pairs (align, edit) and the in-place packing of ragged driver outputs. */
#include <string.h>
#include "internal.h"
#include "seq_pairs.h"

int wd_check_sequences(int64_t n_pairs, const wd_sequences *a, const wd_sequences *b)
{
    WD_TRY(wd_check_count(n_pairs, "pairs->n_pairs", WD_MAX_ITEMS));
    WD_TRY(wd_check_count(a->total, a->total_name, WD_MAX_BYTES));
    WD_TRY(wd_check_count(b->total, b->total_name, WD_MAX_BYTES));
    WD_TRY(wd_check_pointer(a->bases, a->bases_name, a->total > 0));
    WD_TRY(wd_check_pointer(b->bases, b->bases_name, b->total > 0));
    WD_TRY(wd_check_pointer(a->offsets, a->offsets_name, 1));
    return wd_check_pointer(b->offsets, b->offsets_name, 1);
}

int wd_check_seq_pairs(const warpdp_seq_pairs *pairs)
{
    WD_TRY(wd_check_pointer(pairs, "pairs", 1));
    const wd_sequences query = {pairs->query_bases, pairs->query_total, pairs->query_offsets,
                                "pairs->query_bases", "pairs->query_total", "pairs->query_offsets"};
    const wd_sequences target = {pairs->target_bases, pairs->target_total, pairs->target_offsets,
                                 "pairs->target_bases", "pairs->target_total", "pairs->target_offsets"};
    return wd_check_sequences(pairs->n_pairs, &query, &target);
}

/* The counts are bounded by wd_check_seq_pairs' limits, so these sums cannot overflow. */
static int counts_ok(const warpdp_seq_pairs *pairs)
{
    return pairs != NULL && pairs->n_pairs >= 0 && pairs->n_pairs <= WD_MAX_ITEMS && pairs->query_total >= 0 &&
           pairs->query_total <= WD_MAX_BYTES && pairs->target_total >= 0 && pairs->target_total <= WD_MAX_BYTES;
}

int64_t warpdp_align_cigar_capacity(const warpdp_seq_pairs *pairs)
{
    return counts_ok(pairs) ? pairs->query_total + pairs->target_total + 2 * pairs->n_pairs : -1;
}

int64_t warpdp_edit_locations_capacity(const warpdp_seq_pairs *pairs)
{
    return counts_ok(pairs) ? pairs->target_total + pairs->n_pairs : -1;
}

int64_t warpdp_edit_cigar_capacity(const warpdp_seq_pairs *pairs)
{
    return counts_ok(pairs) ? pairs->query_total + pairs->target_total : -1;
}

int wd_check_ragged(const void *values, int64_t capacity, const int64_t *offsets, int64_t needed, const char *name)
{
    if (values == NULL || offsets == NULL)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: results->%s and its offsets must not be NULL for this task",
                       name);
    if (capacity < needed)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: results->%s has room for %lld entries, needs %lld", name,
                       (long long)capacity, (long long)needed);
    return WARPDP_OK;
}

void wd_pack_ragged(void *values, void *values2, size_t item_size, int64_t *offsets, int64_t n_pairs,
                    const int64_t *starts_a, const int64_t *starts_b, int64_t per_pair)
{
    /* Slot i starts at starts_a[i] + starts_b[i] + per_pair * i, at or after the packed position, so
       copying slots in order never overwrites one not yet moved. */
    uint8_t *bytes = values, *bytes2 = values2;
    int64_t packed = 0;
    offsets[0] = 0;
    for (int64_t i = 0; i < n_pairs; i++) {
        const int64_t count = offsets[i + 1];
        const int64_t from = starts_a[i] + (starts_b != NULL ? starts_b[i] : 0) + per_pair * i;
        if (count > 0 && from != packed) {
            memmove(bytes + packed * item_size, bytes + from * item_size, (size_t)count * item_size);
            if (bytes2 != NULL)
                memmove(bytes2 + packed * item_size, bytes2 + from * item_size, (size_t)count * item_size);
        }
        packed += count;
        offsets[i + 1] = packed;
    }
}
