#include <math.h>
#include <pthread.h>
#include "pairhmm_tables.h"

float pairhmm_ph2pr_f[PAIRHMM_QUAL_COUNT];
double pairhmm_ph2pr_d[PAIRHMM_QUAL_COUNT];
float pairhmm_mm_f[PAIRHMM_MM_TABLE_SIZE];
double pairhmm_mm_d[PAIRHMM_MM_TABLE_SIZE];
float pairhmm_initial_f;
float pairhmm_log10_initial_f;
double pairhmm_initial_d;
double pairhmm_log10_initial_d;
uint8_t pairhmm_base_code[256];

/* GKL's Jacobian-logarithm approximation of log10(10^a + 10^b): a table of
   log10(1 + 10^-x) with step 1e-4 up to a tolerance of 8, rounded lookup. */
#define JACOBIAN_STEP 0.0001
#define JACOBIAN_TOLERANCE 8.0
/* (int)(JACOBIAN_TOLERANCE / JACOBIAN_STEP) + 1, written out so it is a constant expression. */
#define JACOBIAN_SIZE 80001
/* GKL's truncated 1/ln(10); part of its numerics, so kept as is. */
#define GKL_INV_LN10 0.434294

static float jacobian_f[JACOBIAN_SIZE];
static double jacobian_d[JACOBIAN_SIZE];

static float approx_log10_sum_f(float a, float b)
{
    float lo = a < b ? a : b, hi = a < b ? b : a;
    if (isinf(lo) || isinf(hi))
        return hi;
    float diff = hi - lo;
    if (diff >= (float)JACOBIAN_TOLERANCE)
        return hi;
    float scaled = diff * (float)(1.0 / JACOBIAN_STEP);
    int index = scaled > 0.0f ? (int)(scaled + 0.5f) : (int)(scaled - 0.5f);
    return hi + jacobian_f[index];
}

static double approx_log10_sum_d(double a, double b)
{
    double lo = a < b ? a : b, hi = a < b ? b : a;
    if (isinf(lo) || isinf(hi))
        return hi;
    double diff = hi - lo;
    if (diff >= JACOBIAN_TOLERANCE)
        return hi;
    double scaled = diff * (1.0 / JACOBIAN_STEP);
    int index = scaled > 0.0 ? (int)(scaled + 0.5) : (int)(scaled - 0.5);
    return hi + jacobian_d[index];
}

/* 1 - 10^log10_sum, computed the way GKL does (through log1p and its 1/ln10). */
static double match_to_match(double log10_sum)
{
    double p = pow(10.0, log10_sum);
    return pow(10.0, log1p(-fmin(1.0, p)) * GKL_INV_LN10);
}

static void fill_tables(void)
{
    for (int k = 0; k < JACOBIAN_SIZE; k++) {
        double v = log10(1.0 + pow(10.0, -((double)k) * JACOBIAN_STEP));
        jacobian_d[k] = v;
        jacobian_f[k] = (float)v;
    }
    for (int hi = 0; hi < PAIRHMM_QUAL_COUNT; hi++) {
        for (int lo = 0; lo <= hi; lo++) {
            int idx = ((hi * (hi + 1)) >> 1) + lo;
            float sum_f = approx_log10_sum_f((float)-0.1 * (float)hi, (float)-0.1 * (float)lo);
            double sum_d = approx_log10_sum_d(-0.1 * (double)hi, -0.1 * (double)lo);
            pairhmm_mm_f[idx] = (float)match_to_match((double)sum_f);
            pairhmm_mm_d[idx] = match_to_match(sum_d);
        }
    }
    for (int q = 0; q < PAIRHMM_QUAL_COUNT; q++) {
        pairhmm_ph2pr_f[q] = powf(10.f, -((float)q) / 10.f);
        pairhmm_ph2pr_d[q] = pow(10.0, -((double)q) / 10.0);
    }
    pairhmm_initial_f = ldexpf(1.f, 120);
    pairhmm_log10_initial_f = log10f(pairhmm_initial_f);
    pairhmm_initial_d = ldexp(1.0, 1020);
    pairhmm_log10_initial_d = log10(pairhmm_initial_d);

    for (int c = 0; c < 256; c++)
        pairhmm_base_code[c] = 15;
    pairhmm_base_code['A'] = 1;
    pairhmm_base_code['C'] = 2;
    pairhmm_base_code['G'] = 4;
    pairhmm_base_code['T'] = 8;
}

static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

void pairhmm_tables_init(void)
{
    pthread_once(&tables_once, fill_tables);
}
