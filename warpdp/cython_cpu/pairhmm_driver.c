/* Runs the Pair-HMM over packed batches: picks the SIMD variant, spreads pairs over
   OpenMP threads and applies GKL's float-then-double rule. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <xmmintrin.h>
#include <omp.h>
#include "cpu_common.h"
#include "pairhmm_kernel.h"
#include "pairhmm_tables.h"

typedef float (*float_kernel)(const pairhmm_pair *, warpdp_workspace *);
typedef double (*double_kernel)(const pairhmm_pair *, warpdp_workspace *);

typedef struct {
    int64_t read, hap;
} pair_index;

#define PAIRHMM_CELLS_PER_THREAD (2 << 20)

/* GKL's rule: float result (scaled by 2^120); below 1e-28 redo in double (scaled by 2^1020).
   A negative kernel result means the workspace could not be allocated. */
static int score_pair(const pairhmm_pair *pair, warpdp_workspace *ws, int use_double,
                      float_kernel kf, double_kernel kd, double *result)
{
    if (!use_double) {
        float f = kf(pair, ws);
        if (f < 0.0f)
            return -1;
        if (f >= PAIRHMM_MIN_ACCEPTED) {
            *result = (double)(log10f(f) - pairhmm_log10_initial_f);
            return 0;
        }
    }
    double d = kd(pair, ws);
    if (d < 0.0)
        return -1;
    *result = log10(d) - pairhmm_log10_initial_d;
    return 0;
}

int pairhmm_check_arguments(const pairhmm_batches *b, const double *out, int64_t n_out, int threads,
                           warpdp_bad_argument *bad)
{
    if (threads < 0 || threads > WARPDP_MAX_THREADS)
        return warpdp_bad(bad, PAIRHMM_BAD_THREADS, -1);
    int64_t at;
    /* Reads and haplotypes hold 1..2^31-1 bases (the kernels index them with int). */
    if (b->n_reads < 0 || !warpdp_offsets_ok(b->read_offsets, b->n_reads, b->n_read_bases, 1, INT32_MAX, &at))
        return warpdp_bad(bad, PAIRHMM_BAD_READ_OFFSETS, b->n_reads < 0 ? -1 : at);
    if (b->n_haps < 0 || !warpdp_offsets_ok(b->hap_offsets, b->n_haps, b->n_hap_bases, 1, INT32_MAX, &at))
        return warpdp_bad(bad, PAIRHMM_BAD_HAP_OFFSETS, b->n_haps < 0 ? -1 : at);
    if (b->n_batches < 0 || !warpdp_offsets_ok(b->batch_reads, b->n_batches, b->n_reads, 0, INT64_MAX, &at))
        return warpdp_bad(bad, PAIRHMM_BAD_BATCH_READS, b->n_batches < 0 ? -1 : at);
    if (!warpdp_offsets_ok(b->batch_haps, b->n_batches, b->n_haps, 0, INT64_MAX, &at))
        return warpdp_bad(bad, PAIRHMM_BAD_BATCH_HAPS, at);
    /* Each batch's reads x haplotypes, summed with overflow checks: the pairs out must hold. */
    int64_t n_pairs = 0;
    for (int64_t k = 0; k < b->n_batches; k++) {
        int64_t pairs;
        if (__builtin_mul_overflow(b->batch_reads[k + 1] - b->batch_reads[k], b->batch_haps[k + 1] - b->batch_haps[k],
                                   &pairs) || __builtin_add_overflow(n_pairs, pairs, &n_pairs))
            return warpdp_bad(bad, PAIRHMM_BAD_OUT, -1);
    }
    if (n_pairs != n_out || (n_pairs > 0 && out == NULL))
        return warpdp_bad(bad, PAIRHMM_BAD_OUT, -1);
    return 0;
}

int pairhmm_forward_batches(const pairhmm_batches *b, double *out, int64_t n_out, int use_double,
                            int threads, int isa, warpdp_bad_argument *bad)
{
    float_kernel kf;
    double_kernel kd;
    switch (isa) {
    case WARPDP_ISA_SCALAR:
        kf = pairhmm_forward_float_scalar;
        kd = pairhmm_forward_double_scalar;
        break;
#if WARPDP_X86_SIMD
    case WARPDP_ISA_AVX2:
        kf = pairhmm_forward_float_avx2;
        kd = pairhmm_forward_double_avx2;
        break;
    case WARPDP_ISA_AVX512:
        kf = pairhmm_forward_float_avx512;
        kd = pairhmm_forward_double_avx512;
        break;
#endif
    default:
        return -2;
    }
    if (!warpdp_cpu_supports(isa))
        return -2;
    if (pairhmm_check_arguments(b, out, n_out, threads, bad) != 0)
        return WARPDP_BAD_ARGUMENT;
    pairhmm_tables_init();

    /* One flat list of pairs in output order, so threads can take them dynamically. */
    int64_t n_pairs = 0;
    for (int64_t k = 0; k < b->n_batches; k++)
        n_pairs += (b->batch_reads[k + 1] - b->batch_reads[k]) * (b->batch_haps[k + 1] - b->batch_haps[k]);
    if (n_pairs == 0)
        return 0;
    pair_index *pairs = malloc(sizeof(pair_index) * (size_t)n_pairs);
    if (pairs == NULL)
        return -1;
    int64_t p = 0, cells = 0;
    for (int64_t k = 0; k < b->n_batches; k++)
        for (int64_t r = b->batch_reads[k]; r < b->batch_reads[k + 1]; r++)
            for (int64_t h = b->batch_haps[k]; h < b->batch_haps[k + 1]; h++) {
                pairs[p].read = r;
                pairs[p].hap = h;
                cells += (b->read_offsets[r + 1] - b->read_offsets[r]) * (b->hap_offsets[h + 1] - b->hap_offsets[h]);
                p++;
            }

    int failed = 0;
    if (threads < 1)
        threads = omp_get_max_threads();
    /* Waking a thread costs about as much as a few million cells, so small jobs (one GATK
       active region, say) run on fewer threads than asked. */
    const int64_t useful_threads = cells / PAIRHMM_CELLS_PER_THREAD + 1;
    if (threads > useful_threads)
        threads = (int)useful_threads;
    #pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        /* Flush denormals to zero as GKL does; this thread's setting is restored after. */
        const unsigned int saved_csr = _mm_getcsr();
        _mm_setcsr(saved_csr | 0x8040);
        warpdp_workspace ws = {NULL, 0};
        #pragma omp for schedule(dynamic, 4)
        for (int64_t i = 0; i < n_pairs; i++) {
            const int64_t r = pairs[i].read, h = pairs[i].hap;
            const int64_t read_start = b->read_offsets[r], hap_start = b->hap_offsets[h];
            pairhmm_pair pair = {
                b->read_bases + read_start, b->read_quals + read_start, b->read_ins + read_start,
                b->read_del + read_start, b->read_gcp + read_start, b->hap_bases + hap_start,
                (int)(b->read_offsets[r + 1] - read_start), (int)(b->hap_offsets[h + 1] - hap_start),
            };
            if (score_pair(&pair, &ws, use_double, kf, kd, &out[i]) != 0)
                failed = 1;
        }
        warpdp_workspace_free(&ws);
        _mm_setcsr(saved_csr);
    }
    free(pairs);
    return failed ? -1 : 0;
}
