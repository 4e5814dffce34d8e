/* Shared by every algorithm's CPU kernels: run-time choice of the SIMD variant, and
   per-thread scratch memory. */
#ifndef WARPDP_CPU_COMMON_H
#define WARPDP_CPU_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* The AVX2 and AVX-512 variants exist on x86 only. Elsewhere (or built with -DWARPDP_NO_X86_SIMD,
   as a test does) the variants' files compile to nothing, the drivers know the scalar variant
   alone, and warpdp_cpu_supports says no to the others. */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(WARPDP_NO_X86_SIMD)
#define WARPDP_X86_SIMD 1
#else
#define WARPDP_X86_SIMD 0
#endif

enum warpdp_isa {
    WARPDP_ISA_SCALAR = 0,
    WARPDP_ISA_AVX2 = 1,
    WARPDP_ISA_AVX512 = 2,
};

/* 1 when this CPU (and the OS) can run the given variant. */
int warpdp_cpu_supports(int isa);

/* The fastest variant this CPU can run. */
int warpdp_cpu_best_isa(void);

/* Per-thread scratch memory, grown on demand and reused across pairs. */
typedef struct {
    void *memory;
    size_t capacity;
} warpdp_workspace;

/* Returns a 64-byte aligned buffer of at least `bytes` (previous contents are not kept),
   or NULL when out of memory. */
void *warpdp_workspace_reserve(warpdp_workspace *ws, size_t bytes);
void warpdp_workspace_free(warpdp_workspace *ws);

/* Arguments out of range: every driver checks what it is handed before reading through it
   (O(pairs) work up front, so a caller's bug is an error code, never a wild read). A driver
   then returns WARPDP_BAD_ARGUMENT and fills a warpdp_bad_argument: which argument (a code
   of that driver's own list of fields) and the item (pair, read, batch) at fault, or -1. */
#define WARPDP_BAD_ARGUMENT (-4)
typedef struct {
    int field;
    int64_t index;
} warpdp_bad_argument;

/* Most threads a driver starts (0 = all cores); OpenMP aborts when it cannot start them. */
#define WARPDP_MAX_THREADS 1024

/* 1 when offsets[0..n] start at 0, end at total and every step offsets[i+1] - offsets[i] lies
   within min_step..max_step (min_step >= 0); else 0 with *bad_index = the first item at fault
   (n when only the last offset is wrong). Never computes a difference that could overflow. */
int warpdp_offsets_ok(const int64_t *offsets, int64_t n, int64_t total, int64_t min_step, int64_t max_step,
                      int64_t *bad_index);

/* Records a bad argument; returns WARPDP_BAD_ARGUMENT. */
int warpdp_bad(warpdp_bad_argument *bad, int field, int64_t index);

#endif
