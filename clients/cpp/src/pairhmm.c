/* warpdp_pairhmm: the Pair-HMM forward algorithm over packed batches (pairhmm_driver.c). */
#include "internal.h"
#include "pairhmm_kernel.h"

/* pairhmm_forward_batches' field codes (PAIRHMM_BAD_* in pairhmm_kernel.h), in order. */
static const char *const FIELDS[] = {"threads", "batches->read_offsets", "batches->hap_offsets",
                                     "batches->batch_reads", "batches->batch_haps",
                                     "n_out (the batches' reads x haplotypes)"};
static const char *const ITEMS[] = {"", "read", "haplotype", "batch", "batch", ""};

static int check_batches(const warpdp_pairhmm_batches *b)
{
    WD_TRY(wd_check_pointer(b, "batches", 1));
    WD_TRY(wd_check_count(b->n_read_bases, "batches->n_read_bases", WD_MAX_BYTES));
    WD_TRY(wd_check_count(b->n_hap_bases, "batches->n_hap_bases", WD_MAX_BYTES));
    WD_TRY(wd_check_count(b->n_reads, "batches->n_reads", WD_MAX_ITEMS));
    WD_TRY(wd_check_count(b->n_haps, "batches->n_haps", WD_MAX_ITEMS));
    WD_TRY(wd_check_count(b->n_batches, "batches->n_batches", WD_MAX_ITEMS));
    const int reads = b->n_read_bases > 0;
    WD_TRY(wd_check_pointer(b->read_bases, "batches->read_bases", reads));
    WD_TRY(wd_check_pointer(b->read_quals, "batches->read_quals", reads));
    WD_TRY(wd_check_pointer(b->read_ins, "batches->read_ins", reads));
    WD_TRY(wd_check_pointer(b->read_del, "batches->read_del", reads));
    WD_TRY(wd_check_pointer(b->read_gcp, "batches->read_gcp", reads));
    WD_TRY(wd_check_pointer(b->hap_bases, "batches->hap_bases", b->n_hap_bases > 0));
    WD_TRY(wd_check_pointer(b->read_offsets, "batches->read_offsets", 1));
    WD_TRY(wd_check_pointer(b->hap_offsets, "batches->hap_offsets", 1));
    WD_TRY(wd_check_pointer(b->batch_reads, "batches->batch_reads", 1));
    return wd_check_pointer(b->batch_haps, "batches->batch_haps", 1);
}

/* The batch offsets must be checked (by the driver's rules) before they are read here. */
static int count_pairs(const warpdp_pairhmm_batches *b, int64_t *n_results)
{
    int64_t at;
    if (!warpdp_offsets_ok(b->batch_reads, b->n_batches, b->n_reads, 0, INT64_MAX, &at))
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp pairhmm: batches->batch_reads is out of range (batch %lld)",
                       (long long)at);
    if (!warpdp_offsets_ok(b->batch_haps, b->n_batches, b->n_haps, 0, INT64_MAX, &at))
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp pairhmm: batches->batch_haps is out of range (batch %lld)",
                       (long long)at);
    int64_t total = 0;
    for (int64_t k = 0; k < b->n_batches; k++) {
        int64_t pairs;
        if (__builtin_mul_overflow(b->batch_reads[k + 1] - b->batch_reads[k], b->batch_haps[k + 1] - b->batch_haps[k],
                                   &pairs) || __builtin_add_overflow(total, pairs, &total) || total > WD_MAX_ITEMS)
            return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp pairhmm: the batches hold too many pairs (batch %lld)",
                           (long long)k);
    }
    *n_results = total;
    return WARPDP_OK;
}

int warpdp_pairhmm_count(const warpdp_pairhmm_batches *batches, int64_t *n_results)
{
    WD_TRY(wd_check_pointer(n_results, "n_results", 1));
    WD_TRY(check_batches(batches));
    WD_TRY(count_pairs(batches, n_results));
    return wd_ok();
}

int warpdp_pairhmm(warpdp_handle *handle, const warpdp_pairhmm_batches *batches, int use_double, double *out,
                   int64_t n_out)
{
    WD_TRY(wd_check_pointer(handle, "handle", 1));
    WD_TRY(check_batches(batches));
    WD_TRY(wd_check_count(n_out, "n_out", WD_MAX_ITEMS));
    WD_TRY(wd_check_pointer(out, "out", n_out > 0));
    if (use_double != 0 && use_double != 1)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp pairhmm: use_double must be 0 or 1, not %d", use_double);
#ifdef WARPDP_WITH_GRPC
    if (handle->client != NULL) {
        int64_t count;
        WD_TRY(count_pairs(batches, &count));
        if (count != n_out)
            return wd_fail(WARPDP_ERR_INVALID_ARGUMENT,
                           "warpdp pairhmm: n_out is %lld but the batches hold %lld pairs", (long long)n_out,
                           (long long)count);
        return wd_client_pairhmm(handle->client, batches, use_double, out, n_out);
    }
#endif
    const pairhmm_batches b = {batches->read_bases, batches->read_quals, batches->read_ins, batches->read_del,
                               batches->read_gcp, batches->read_offsets, batches->hap_bases, batches->hap_offsets,
                               batches->batch_reads, batches->batch_haps, batches->n_batches,
                               batches->n_read_bases, batches->n_hap_bases, batches->n_reads, batches->n_haps};
    warpdp_bad_argument bad = {0, -1};
#ifdef WARPDP_WITH_CUDA
    if (handle->gpu != NULL) { /* the driver's checks first: the GPU refuses what the CPU refuses */
        const int checked = pairhmm_check_arguments(&b, out, n_out, handle->threads, &bad);
        WD_TRY(wd_driver_status("pairhmm", checked, FIELDS, ITEMS, (int)(sizeof FIELDS / sizeof *FIELDS), bad));
        return wd_gpu_pairhmm(handle->gpu, batches, use_double, out, n_out);
    }
#endif
    int isa;
    WD_TRY(wd_family_isa(handle, "pairhmm", 7u, &isa));
    const int status = pairhmm_forward_batches(&b, out, n_out, use_double, handle->threads, isa, &bad);
    WD_TRY(wd_driver_status("pairhmm", status, FIELDS, ITEMS, (int)(sizeof FIELDS / sizeof *FIELDS), bad));
    return wd_ok();
}
