/* warpdp_seedext: BWA's ksw_extend2 over packed pairs (seedext_driver.c). */
#include <stddef.h>
#include "internal.h"
#include "seq_pairs.h"
#include "seedext_kernel.h"

/* The driver's field codes (SEEDEXT_BAD_* in seedext_kernel.h), in order. */
static const char *const FIELDS[] = {"threads", "a",     "b", "o_del", "e_del", "o_ins", "e_ins",
                                     "w", "end_bonus", "zdrop", "query_offsets", "target_offsets", "h0"};

/* The caller's results are the driver's rows. */
_Static_assert(sizeof(warpdp_seedext_result) == sizeof(seedext_result) &&
                   offsetof(warpdp_seedext_result, max_off) == offsetof(seedext_result, max_off),
               "warpdp_seedext_result must have seedext_result's layout");

warpdp_seedext_params warpdp_seedext_params_default(void)
{
    const warpdp_seedext_params p = {1, 4, 6, 1, 6, 1, 100, 5, 100};
    return p;
}

static int check_pairs(const warpdp_seedext_pairs *pairs)
{
    WD_TRY(wd_check_pointer(pairs, "pairs", 1));
    const wd_sequences query = {pairs->query, pairs->query_total, pairs->query_offsets,
                                "pairs->query", "pairs->query_total", "pairs->query_offsets"};
    const wd_sequences target = {pairs->target, pairs->target_total, pairs->target_offsets,
                                 "pairs->target", "pairs->target_total", "pairs->target_offsets"};
    WD_TRY(wd_check_sequences(pairs->n_pairs, &query, &target));
    return wd_check_pointer(pairs->h0, "pairs->h0", pairs->n_pairs > 0);
}

int warpdp_seedext(warpdp_handle *handle, const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params,
                   warpdp_seedext_result *results)
{
    WD_TRY(wd_check_pointer(handle, "handle", 1));
    WD_TRY(check_pairs(pairs));
    WD_TRY(wd_check_pointer(params, "params", 1));
    WD_TRY(wd_check_pointer(results, "results", pairs->n_pairs > 0));
#ifdef WARPDP_WITH_GRPC
    if (handle->client != NULL)
        return wd_client_seedext(handle->client, pairs, params, results);
#endif
    const seedext_batch batch = {pairs->query, pairs->target, pairs->query_offsets, pairs->target_offsets,
                                 pairs->h0, pairs->n_pairs, pairs->query_total, pairs->target_total};
    const seedext_params p = {params->a, params->b, params->o_del, params->e_del, params->o_ins,
                              params->e_ins, params->w, params->end_bonus, params->zdrop};
    warpdp_bad_argument bad = {0, -1};
#ifdef WARPDP_WITH_CUDA
    if (handle->gpu != NULL) { /* the driver's checks, then the GPU: it refuses what the CPU refuses */
        const int checked = seedext_check_arguments(&batch, &p, handle->threads, &bad);
        WD_TRY(wd_driver_status("seedext", checked, FIELDS, NULL, (int)(sizeof FIELDS / sizeof *FIELDS), bad));
        WD_TRY(wd_gpu_seedext(handle->gpu, pairs, params, results));
        return wd_ok();
    }
#endif
    int isa;
    WD_TRY(wd_family_isa(handle, "seedext", 7u, &isa));
    const int status = seedext_extend_batch(&batch, &p, (seedext_result *)results, handle->threads, isa, &bad);
    WD_TRY(wd_driver_status("seedext", status, FIELDS, NULL, (int)(sizeof FIELDS / sizeof *FIELDS), bad));
    return wd_ok();
}
