/* warpdp_edit: edit distance (edlib's modes, Scrooge's windowed GenASM) over packed pairs (edit_driver.c). */
#include <stdlib.h>
#include "internal.h"
#include "edit_kernel.h"
#include "seq_pairs.h"

/* edit_run's field codes (EDIT_BAD_* in edit_kernel.h), in order. */
static const char *const FIELDS[] = {"threads", "mode", "k", "task", "method", "window", "overlap",
                                     "pairs->query_offsets", "pairs->target_offsets"};

warpdp_edit_params warpdp_edit_params_default(void)
{
    const warpdp_edit_params p = {WARPDP_EDIT_NW, WARPDP_EDIT_DISTANCE, WARPDP_EDIT_EXACT, -1, 64, 33};
    return p;
}

static int check_results(const warpdp_edit_results *r, const warpdp_seq_pairs *pairs, int task)
{
    WD_TRY(wd_check_pointer(r, "results", 1));
    const int any = pairs->n_pairs > 0;
    WD_TRY(wd_check_pointer(r->distance, "results->distance", any));
    WD_TRY(wd_check_pointer(r->target_begin, "results->target_begin", any));
    WD_TRY(wd_check_pointer(r->target_end, "results->target_end", any));
    if (task >= WARPDP_EDIT_LOCATIONS) {
        WD_TRY(wd_check_pointer(r->loc_end, "results->loc_end", 1));
        WD_TRY(wd_check_ragged(r->loc_begin, r->loc_capacity, r->loc_offsets, warpdp_edit_locations_capacity(pairs),
                               "loc_begin"));
    }
    if (task == WARPDP_EDIT_PATH)
        WD_TRY(wd_check_ragged(r->cigar_ops, r->cigar_capacity, r->cigar_offsets, warpdp_edit_cigar_capacity(pairs),
                               "cigar_ops"));
    return WARPDP_OK;
}

/* Scratch the driver writes whatever the task asks: counts per pair, and the windowed method's ops. */
typedef struct {
    int64_t *n_locations, *n_cigar;
    uint32_t *ops;
} scratch;

static int make_outputs(const warpdp_edit_results *r, const warpdp_seq_pairs *pairs, const warpdp_edit_params *p,
                        scratch *s, edit_outputs *out)
{
    const int64_t n = pairs->n_pairs;
    const int locations = p->task >= WARPDP_EDIT_LOCATIONS, path = p->task == WARPDP_EDIT_PATH;
    const int need_ops = !path && p->method == WARPDP_EDIT_WINDOWED;
    s->n_locations = locations ? NULL : calloc((size_t)n + 1, sizeof(int64_t));
    s->n_cigar = path ? NULL : calloc((size_t)n + 1, sizeof(int64_t));
    s->ops = need_ops ? malloc((size_t)warpdp_edit_cigar_capacity(pairs) * sizeof(uint32_t) + 1) : NULL;
    if ((!locations && s->n_locations == NULL) || (!path && s->n_cigar == NULL) || (need_ops && s->ops == NULL))
        return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp edit: out of memory");
    out->distance = r->distance;
    out->t_begin = r->target_begin;
    out->t_end = r->target_end;
    out->n_locations = locations ? r->loc_offsets + 1 : s->n_locations;
    out->loc_begin = locations ? r->loc_begin : NULL;
    out->loc_end = locations ? r->loc_end : NULL;
    out->n_cigar = path ? r->cigar_offsets + 1 : s->n_cigar;
    out->cigar_ops = path ? r->cigar_ops : s->ops;
    return WARPDP_OK;
}

int wd_edit_refuse_byte(int64_t pair)
{
    return wd_fail(WARPDP_ERR_INVALID_ARGUMENT,
                   "warpdp edit: pair %lld has a byte other than A, C, G, T (the windowed method takes only those)",
                   (long long)pair);
}

#ifdef WARPDP_WITH_CUDA
/* The driver's checks of what edit_run would refuse (the GPU path runs no driver), with its messages. */
static int check_driver_arguments(const warpdp_handle *handle, const warpdp_seq_pairs *pairs,
                                  const warpdp_edit_params *p)
{
    const edit_pairs c_pairs = {pairs->query_bases, pairs->target_bases, pairs->query_offsets,
                                pairs->target_offsets, pairs->n_pairs, pairs->query_total, pairs->target_total};
    const edit_params c_params = {p->mode, p->task, p->method, p->k, p->window, p->overlap};
    warpdp_bad_argument bad = {0, -1};
    const int status = edit_check_arguments(&c_pairs, &c_params, handle->threads, &bad);
    return wd_driver_status("edit", status, FIELDS, NULL, (int)(sizeof FIELDS / sizeof *FIELDS), bad);
}
#endif

static int run(warpdp_handle *handle, const warpdp_seq_pairs *pairs, const warpdp_edit_params *p,
               const warpdp_edit_results *results, edit_outputs *out)
{
    int isa;
    WD_TRY(wd_family_isa(handle, "edit", 7u, &isa));
    const edit_pairs c_pairs = {pairs->query_bases, pairs->target_bases, pairs->query_offsets,
                                pairs->target_offsets, pairs->n_pairs, pairs->query_total, pairs->target_total};
    const edit_params c_params = {p->mode, p->task, p->method, p->k, p->window, p->overlap};
    int64_t bad_pair = -1;
    warpdp_bad_argument bad = {0, -1};
    const int status = edit_run(&c_pairs, &c_params, out, handle->threads, isa, &bad_pair, &bad);
    WD_TRY(wd_driver_status("edit", status, FIELDS, NULL, (int)(sizeof FIELDS / sizeof *FIELDS), bad));
    if (bad_pair >= 0)
        return wd_edit_refuse_byte(bad_pair);
    const int64_t n = pairs->n_pairs;
    if (p->task >= WARPDP_EDIT_LOCATIONS)
        wd_pack_ragged(results->loc_begin, results->loc_end, sizeof(int64_t), results->loc_offsets, n,
                       pairs->target_offsets, NULL, 1);
    if (p->task == WARPDP_EDIT_PATH)
        wd_pack_ragged(results->cigar_ops, NULL, sizeof(uint32_t), results->cigar_offsets, n, pairs->query_offsets,
                       pairs->target_offsets, 0);
    return wd_ok();
}

int warpdp_edit(warpdp_handle *handle, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params,
                const warpdp_edit_results *results)
{
    WD_TRY(wd_check_pointer(handle, "handle", 1));
    WD_TRY(wd_check_seq_pairs(pairs));
    WD_TRY(wd_check_pointer(params, "params", 1));
    if (params->task < WARPDP_EDIT_DISTANCE || params->task > WARPDP_EDIT_PATH)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp edit: task must be 0 (distance), 1 (locations) or 2 (path), "
                       "not %d", params->task);
    if (params->method == WARPDP_EDIT_WINDOWED && params->mode != WARPDP_EDIT_SHW)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp edit: mode must be SHW with the windowed method "
                       "(GenASM solves the prefix problem)");
    WD_TRY(check_results(results, pairs, params->task));
#ifdef WARPDP_WITH_GRPC
    if (handle->client != NULL)
        return wd_client_edit(handle->client, pairs, params, results);
#endif
#ifdef WARPDP_WITH_CUDA
    if (handle->gpu != NULL) {
        WD_TRY(check_driver_arguments(handle, pairs, params));
        return wd_gpu_edit(handle->gpu, pairs, params, results);
    }
#endif
    scratch s;
    edit_outputs out;
    int status = make_outputs(results, pairs, params, &s, &out);
    if (status == WARPDP_OK)
        status = run(handle, pairs, params, results, &out);
    free(s.n_locations);
    free(s.n_cigar);
    free(s.ops);
    return status;
}
