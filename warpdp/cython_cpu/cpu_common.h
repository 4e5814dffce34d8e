/* Shared by every algorithm's CPU kernels: run-time choice of the SIMD variant, and
   per-thread scratch memory. */
#ifndef WARPDP_CPU_COMMON_H
#define WARPDP_CPU_COMMON_H

#include <stddef.h>

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

#endif
