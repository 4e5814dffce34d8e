/* Runs edit distance over packed pairs: checks every argument, picks the variant, then spreads
   pairs over OpenMP threads (edit_lanes.c: the SIMD variants' lanes, the per-pair body for the
   rest and for the scalar variant). Each pair writes only its own slices of the ragged outputs
   (see edit_kernel.h). */
#include <stdint.h>
#include <omp.h>
#include "cpu_common.h"
#include "edit_kernel.h"

/* A CIGAR run length is 28 bits (len << 4 | op), so no sequence may be longer. */
#define EDIT_MAX_LENGTH (((int64_t)1 << 28) - 1)

int edit_check_arguments(const edit_pairs *pairs, const edit_params *p, int threads, warpdp_bad_argument *bad)
{
    if (threads < 0 || threads > WARPDP_MAX_THREADS)
        return warpdp_bad(bad, EDIT_BAD_THREADS, -1);
    if (p->mode < EDIT_NW || p->mode > EDIT_HW)
        return warpdp_bad(bad, EDIT_BAD_MODE, -1);
    if (p->k < -1)
        return warpdp_bad(bad, EDIT_BAD_K, -1);
    if (p->task < EDIT_DISTANCE || p->task > EDIT_PATH)
        return warpdp_bad(bad, EDIT_BAD_TASK, -1);
    if (p->method != EDIT_EXACT && p->method != EDIT_WINDOWED)
        return warpdp_bad(bad, EDIT_BAD_METHOD, -1);
    if (p->method == EDIT_WINDOWED) {
        if (p->mode != EDIT_SHW)
            return warpdp_bad(bad, EDIT_BAD_MODE, -1); /* GenASM solves the prefix problem only */
        if (p->window < 2 || p->window > EDIT_MAX_WINDOW)
            return warpdp_bad(bad, EDIT_BAD_WINDOW, -1);
        if (p->overlap < 0 || p->overlap >= p->window)
            return warpdp_bad(bad, EDIT_BAD_OVERLAP, -1);
    }
    const int64_t n = pairs->n_pairs;
    int64_t at;
    if (n < 0 || !warpdp_offsets_ok(pairs->query_offsets, n, pairs->query_total, 1, EDIT_MAX_LENGTH, &at))
        return warpdp_bad(bad, EDIT_BAD_QUERY_OFFSETS, n < 0 ? -1 : at);
    if (!warpdp_offsets_ok(pairs->target_offsets, n, pairs->target_total, 1, EDIT_MAX_LENGTH, &at))
        return warpdp_bad(bad, EDIT_BAD_TARGET_OFFSETS, at);
    return 0;
}

int edit_run(const edit_pairs *pairs, const edit_params *p, edit_outputs *out, int threads, int isa,
             int64_t *bad_pair, warpdp_bad_argument *bad)
{
    edit_lanes_kernel lanes_kernel = NULL;
    int lanes = 1;
    switch (isa) {
    case WARPDP_ISA_SCALAR:
        break;
#if WARPDP_X86_SIMD
    case WARPDP_ISA_AVX2:
        lanes_kernel = edit_lanes_avx2;
        lanes = EDIT_LANES_AVX2;
        break;
    case WARPDP_ISA_AVX512:
        lanes_kernel = edit_lanes_avx512;
        lanes = EDIT_LANES_AVX512;
        break;
#endif
    default:
        return -2;
    }
    if (!warpdp_cpu_supports(isa))
        return -2;
    *bad_pair = -1;
    if (edit_check_arguments(pairs, p, threads, bad) != 0)
        return WARPDP_BAD_ARGUMENT;
    if (pairs->n_pairs == 0)
        return 0;
    int64_t first_bad = INT64_MAX;
    if (threads < 1)
        threads = omp_get_max_threads();
    if (edit_run_lanes(pairs, p, out, threads, lanes_kernel, lanes, &first_bad) != 0)
        return -1;
    if (first_bad != INT64_MAX)
        *bad_pair = first_bad;
    return 0;
}
