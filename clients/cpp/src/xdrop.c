/* warpdp_xdrop: gapped X-drop seed extension over packed pairs (xdrop_driver.c). */
#include "internal.h"
#include "seq_pairs.h"
#include "xdrop_kernel.h"

/* xdrop_run's field codes (XDROP_BAD_* in xdrop_kernel.h), in order. */
static const char *const FIELDS[] = {"threads", "k", "match", "mismatch", "gap", "x",
                                     "h_offsets", "v_offsets", "h_pos", "v_pos"};

warpdp_xdrop_params warpdp_xdrop_params_default(int64_t k, int64_t x)
{
    const warpdp_xdrop_params p = {k, x, 1, -1, -1, WARPDP_XDROP_REPORT_LONGEST};
    return p;
}

/* The error for a byte other than ACGTN in pair `pair` (the first such pair), on every handle that
   runs in process (gpu/xdrop_plan.h declares it for the GPU launcher). */
int wd_xdrop_bad_base(int64_t pair);
int wd_xdrop_bad_base(int64_t pair)
{
    return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp xdrop: pair %lld has a byte other than A, C, G, T and N",
                   (long long)pair);
}

static int check_pairs(const warpdp_xdrop_pairs *pairs)
{
    WD_TRY(wd_check_pointer(pairs, "pairs", 1));
    const wd_sequences h = {pairs->h_bases, pairs->h_total, pairs->h_offsets,
                            "pairs->h_bases", "pairs->h_total", "pairs->h_offsets"};
    const wd_sequences v = {pairs->v_bases, pairs->v_total, pairs->v_offsets,
                            "pairs->v_bases", "pairs->v_total", "pairs->v_offsets"};
    WD_TRY(wd_check_sequences(pairs->n_pairs, &h, &v));
    const int any = pairs->n_pairs > 0;
    WD_TRY(wd_check_pointer(pairs->h_pos, "pairs->h_pos", any));
    return wd_check_pointer(pairs->v_pos, "pairs->v_pos", any);
}

static int check_results(const warpdp_xdrop_results *r, int64_t n_pairs)
{
    WD_TRY(wd_check_pointer(r, "results", 1));
    const int any = n_pairs > 0;
    WD_TRY(wd_check_pointer(r->score, "results->score", any));
    WD_TRY(wd_check_pointer(r->begin_h, "results->begin_h", any));
    WD_TRY(wd_check_pointer(r->end_h, "results->end_h", any));
    WD_TRY(wd_check_pointer(r->begin_v, "results->begin_v", any));
    return wd_check_pointer(r->end_v, "results->end_v", any);
}

int warpdp_xdrop(warpdp_handle *handle, const warpdp_xdrop_pairs *pairs, const warpdp_xdrop_params *params,
                 const warpdp_xdrop_results *results)
{
    WD_TRY(wd_check_pointer(handle, "handle", 1));
    WD_TRY(check_pairs(pairs));
    WD_TRY(wd_check_pointer(params, "params", 1));
    WD_TRY(check_results(results, pairs->n_pairs));
    if (params->report != WARPDP_XDROP_REPORT_LONGEST && params->report != WARPDP_XDROP_REPORT_BEST)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp xdrop: report must be %d (longest) or %d (best), not %d",
                       WARPDP_XDROP_REPORT_LONGEST, WARPDP_XDROP_REPORT_BEST, params->report);
#ifdef WARPDP_WITH_GRPC
    if (handle->client != NULL)
        return wd_client_xdrop(handle->client, pairs, params, results);
#endif
    const xdrop_pairs c_pairs = {pairs->h_bases, pairs->v_bases, pairs->h_offsets, pairs->v_offsets, pairs->h_pos,
                                 pairs->v_pos, pairs->n_pairs, pairs->h_total, pairs->v_total};
    const xdrop_params c_params = {params->match, params->mismatch, params->gap, params->x,
                                   params->report == WARPDP_XDROP_REPORT_BEST};
    warpdp_bad_argument bad = {0, -1};
#ifdef WARPDP_WITH_CUDA
    if (handle->gpu != NULL) { /* the driver's checks, then the GPU (which checks the bases) */
        const int checked = xdrop_check_arguments(&c_pairs, params->k, &c_params, handle->threads, &bad);
        WD_TRY(wd_driver_status("xdrop", checked, FIELDS, NULL, (int)(sizeof FIELDS / sizeof *FIELDS), bad));
        return wd_gpu_xdrop(handle->gpu, pairs, params, results);
    }
#endif
    int isa;
    WD_TRY(wd_family_isa(handle, "xdrop", 7u, &isa));
    xdrop_outputs out = {results->score, results->begin_h, results->end_h,
                         results->begin_v, results->end_v, results->cells};
    int64_t bad_pair = -1;
    const int status = xdrop_run(&c_pairs, params->k, &c_params, &out, handle->threads, isa, &bad_pair, &bad);
    if (status == -3)
        return wd_xdrop_bad_base(bad_pair);
    WD_TRY(wd_driver_status("xdrop", status, FIELDS, NULL, (int)(sizeof FIELDS / sizeof *FIELDS), bad));
    return wd_ok();
}
