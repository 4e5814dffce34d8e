/* GKL's Pair-HMM probability tables, in float (the fast path) and double (the fallback path). */
#ifndef WARPDP_PAIRHMM_TABLES_H
#define WARPDP_PAIRHMM_TABLES_H

#include <stdint.h>

/* Qualities are masked with & 127 before use, as GKL does, so tables stop at 127. */
#define PAIRHMM_QUAL_COUNT 128
#define PAIRHMM_MM_TABLE_SIZE ((PAIRHMM_QUAL_COUNT * (PAIRHMM_QUAL_COUNT + 1)) / 2)

/* GKL recomputes a pair in double when its scaled float result is below this. */
#define PAIRHMM_MIN_ACCEPTED 1e-28f

extern float pairhmm_ph2pr_f[PAIRHMM_QUAL_COUNT];
extern double pairhmm_ph2pr_d[PAIRHMM_QUAL_COUNT];
/* Match-to-match probability for (max, min) of the insertion and deletion quals. */
extern float pairhmm_mm_f[PAIRHMM_MM_TABLE_SIZE];
extern double pairhmm_mm_d[PAIRHMM_MM_TABLE_SIZE];

/* Scaling constants: results are computed times K to stay clear of underflow. */
extern float pairhmm_initial_f;       /* 2^120 */
extern float pairhmm_log10_initial_f;
extern double pairhmm_initial_d;      /* 2^1020 */
extern double pairhmm_log10_initial_d;

/* Fills the tables; idempotent and thread-safe. */
void pairhmm_tables_init(void);

static inline int pairhmm_mm_index(int ins_qual, int del_qual)
{
    int hi = ins_qual > del_qual ? ins_qual : del_qual;
    int lo = ins_qual > del_qual ? del_qual : ins_qual;
    return ((hi * (hi + 1)) >> 1) + lo;
}

/* Base codes: one bit per base, N (and anything not ACGT) matches everything,
   so "read base matches hap base" is (code_r & code_h) != 0. Padding is 0. */
extern uint8_t pairhmm_base_code[256];

#endif
