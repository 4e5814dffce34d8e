/* warpdp_align: pairwise alignment and GATK's Smith-Waterman over packed pairs (align_driver.c). */
#include "align_call.h"
#include "seq_pairs.h"

/* align_run's field codes (ALIGN_BAD_* in align_kernel.h), in order. */
static const char *const FIELDS[] = {"threads", "mode", "matrix", "gap_open", "gap_extend", "overhang", "match",
                                     "mismatch", "pairs->query_offsets", "pairs->target_offsets",
                                     "the query and target lengths", "max_traceback_cells", "results"};
static const char *const ITEMS[] = {"", "", "entry", "", "", "", "", "", "pair", "pair", "pair", "pair", ""};

#define MAX_PARAMETER ALIGN_MAX_PARAMETER

warpdp_align_params warpdp_align_params_default(void)
{
    const warpdp_align_params p = {WARPDP_ALIGN_GLOBAL, 2, -3, NULL, WARPDP_GAPS_AFFINE, 5, 2,
                                   WARPDP_GAP_CONVENTION_L_MINUS_1, -1, WARPDP_OVERHANG_SOFTCLIP, 0,
                                   (int64_t)1 << 28};
    return p;
}

static int check_range(int64_t value, const char *name, int64_t low, int64_t high)
{
    if (value < low || value > high)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp align: %s must be within %lld..%lld, not %lld", name,
                       (long long)low, (long long)high, (long long)value);
    return WARPDP_OK;
}

/* The checks of Python's AlignParams.validate, in its order. */
static int check_params(const warpdp_align_params *p)
{
    WD_TRY(check_range(p->mode, "mode", WARPDP_ALIGN_GLOBAL, WARPDP_ALIGN_GATK));
    WD_TRY(check_range(p->gaps, "gaps", WARPDP_GAPS_AFFINE, WARPDP_GAPS_LINEAR));
    WD_TRY(check_range(p->gap_convention, "gap_convention", WARPDP_GAP_CONVENTION_L_MINUS_1, WARPDP_GAP_CONVENTION_L));
    WD_TRY(check_range(p->overhang, "overhang", WARPDP_OVERHANG_SOFTCLIP, WARPDP_OVERHANG_IGNORE));
    WD_TRY(check_range(p->cigar, "cigar", 0, 1));
    WD_TRY(check_range(p->match, "match", -MAX_PARAMETER, MAX_PARAMETER));
    WD_TRY(check_range(p->mismatch, "mismatch", -MAX_PARAMETER, MAX_PARAMETER));
    WD_TRY(check_range(p->gap_open, "gap_open", -MAX_PARAMETER, MAX_PARAMETER));
    WD_TRY(check_range(p->gap_extend, "gap_extend", -MAX_PARAMETER, MAX_PARAMETER));
    WD_TRY(check_range(p->max_traceback_cells, "max_traceback_cells", 1, (int64_t)1 << 62));
    if (p->mode == WARPDP_ALIGN_GATK) {
        WD_TRY(check_range(p->match, "match (mode gatk)", 1, MAX_PARAMETER));
        WD_TRY(check_range(p->mismatch, "mismatch (mode gatk: added, so <= 0)", -MAX_PARAMETER, 0));
        WD_TRY(check_range(p->gap_open, "gap_open (mode gatk: added, so <= 0)", -MAX_PARAMETER, 0));
        WD_TRY(check_range(p->gap_extend, "gap_extend (mode gatk: added, so <= 0)", -MAX_PARAMETER, 0));
    } else {
        if (p->matrix == NULL) {
            WD_TRY(check_range(p->match, "match", 1, MAX_PARAMETER));
            WD_TRY(check_range(p->mismatch, "mismatch", -MAX_PARAMETER, -1));
        }
        WD_TRY(check_range(p->gap_open, "gap_open (a penalty, subtracted)", 0, MAX_PARAMETER));
        WD_TRY(check_range(p->gap_extend, "gap_extend (a penalty, subtracted)", 0, MAX_PARAMETER));
        if (p->gaps == WARPDP_GAPS_AFFINE && p->gap_convention == WARPDP_GAP_CONVENTION_L_MINUS_1 &&
            p->gap_open < p->gap_extend)
            return wd_fail(WARPDP_ERR_INVALID_ARGUMENT,
                           "warpdp align: gap_open (%d) must be at least gap_extend (%d) with gap_convention L-1",
                           p->gap_open, p->gap_extend);
    }
    if (p->zdrop != -1) {
        WD_TRY(check_range(p->zdrop, "zdrop (-1: none)", 0, INT32_MAX));
        if (p->mode != WARPDP_ALIGN_EXTENSION)
            return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp align: zdrop applies to mode extension only");
    }
    if (p->matrix != NULL)
        for (int k = 0; k < 25; k++)
            WD_TRY(check_range(p->matrix[k], "matrix entries", -MAX_PARAMETER, MAX_PARAMETER));
    return WARPDP_OK;
}

align_params wd_align_driver_params(const warpdp_align_params *p)
{
    align_params c = {0};
    c.mode = p->mode;
    for (int k = 0; k < 25; k++) {
        const int a = k / 5, b = k % 5;
        c.matrix[k] = p->matrix != NULL ? p->matrix[k] : (a == b && a < 4 ? p->match : p->mismatch);
    }
    if (p->gaps == WARPDP_GAPS_LINEAR) {
        c.gap_first = c.gap_ext = p->gap_extend;
    } else {
        c.gap_first = p->gap_open + (p->gap_convention == WARPDP_GAP_CONVENTION_L ? p->gap_extend : 0);
        c.gap_ext = p->gap_extend;
    }
    c.zdrop = (int32_t)p->zdrop;
    c.overhang = p->overhang;
    c.match = p->match;
    c.mismatch = p->mismatch;
    c.gap_open = p->gap_open;
    c.gap_extend = p->gap_extend;
    c.cigar = p->cigar;
    c.max_traceback_cells = p->max_traceback_cells;
    return c;
}

static int check_results(const warpdp_align_results *r, const warpdp_seq_pairs *pairs, int cigar)
{
    WD_TRY(wd_check_pointer(r, "results", 1));
    const int any = pairs->n_pairs > 0;
    WD_TRY(wd_check_pointer(r->score, "results->score", any));
    WD_TRY(wd_check_pointer(r->query_begin, "results->query_begin", any));
    WD_TRY(wd_check_pointer(r->query_end, "results->query_end", any));
    WD_TRY(wd_check_pointer(r->target_begin, "results->target_begin", any));
    WD_TRY(wd_check_pointer(r->target_end, "results->target_end", any));
    if (!cigar)
        return WARPDP_OK;
    return wd_check_ragged(r->cigar_ops, r->cigar_capacity, r->cigar_offsets, warpdp_align_cigar_capacity(pairs),
                           "cigar_ops");
}

align_pairs wd_align_driver_pairs(const warpdp_seq_pairs *pairs)
{
    const align_pairs c = {pairs->query_bases, pairs->target_bases, pairs->query_offsets, pairs->target_offsets,
                           pairs->n_pairs, pairs->query_total, pairs->target_total};
    return c;
}

align_outputs wd_align_driver_outputs(const warpdp_align_results *results, int cigar)
{
    align_outputs out = {results->score, results->query_begin, results->query_end, results->target_begin,
                         results->target_end, NULL, 0, NULL};
    if (cigar) {
        out.ops = results->cigar_ops;
        out.ops_capacity = results->cigar_capacity;
        out.ops_count = results->cigar_offsets + 1;
    }
    return out;
}

int wd_align_driver_status(int status, warpdp_bad_argument bad, const warpdp_align_params *params)
{
    if (status == WARPDP_BAD_ARGUMENT && bad.field == ALIGN_BAD_TRACEBACK)
        return wd_fail(WARPDP_ERR_RESOURCE_EXHAUSTED,
                       "warpdp align: pair %lld: its traceback needs more than max_traceback_cells = %lld cells; "
                       "align it without a CIGAR (score only) or raise the limit",
                       (long long)bad.index, (long long)params->max_traceback_cells);
    return wd_driver_status("align", status, FIELDS, ITEMS, (int)(sizeof FIELDS / sizeof *FIELDS), bad);
}

int warpdp_align(warpdp_handle *handle, const warpdp_seq_pairs *pairs, const warpdp_align_params *params,
                 const warpdp_align_results *results)
{
    WD_TRY(wd_check_pointer(handle, "handle", 1));
    WD_TRY(wd_check_seq_pairs(pairs));
    WD_TRY(wd_check_pointer(params, "params", 1));
    WD_TRY(check_params(params));
    WD_TRY(check_results(results, pairs, params->cigar));
#ifdef WARPDP_WITH_GRPC
    if (handle->client != NULL)
        return wd_client_align(handle->client, pairs, params, results);
#endif
#ifdef WARPDP_WITH_CUDA
    if (handle->gpu != NULL)
        return wd_gpu_align(handle->gpu, pairs, params, results);
#endif
    int isa;
    WD_TRY(wd_family_isa(handle, "align", 7u, &isa));
    const align_pairs c_pairs = wd_align_driver_pairs(pairs);
    const align_params c_params = wd_align_driver_params(params);
    align_outputs out = wd_align_driver_outputs(results, params->cigar);
    warpdp_bad_argument bad = {0, -1};
    WD_TRY(wd_align_driver_status(align_run(&c_pairs, &c_params, &out, handle->threads, isa, &bad), bad, params));
    if (params->cigar)
        wd_pack_ragged(results->cigar_ops, NULL, sizeof(uint32_t), results->cigar_offsets, pairs->n_pairs,
                       pairs->query_offsets, pairs->target_offsets, 2);
    return wd_ok();
}
