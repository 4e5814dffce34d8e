/* Run-time choice of the SIMD variant of a CPU kernel, shared by every algorithm. */
#ifndef WARPDP_CPU_DISPATCH_H
#define WARPDP_CPU_DISPATCH_H

enum warpdp_isa {
    WARPDP_ISA_SCALAR = 0,
    WARPDP_ISA_AVX2 = 1,
    WARPDP_ISA_AVX512 = 2,
};

/* 1 when this CPU (and the OS) can run the given variant. */
int warpdp_cpu_supports(int isa);

/* The fastest variant this CPU can run. */
int warpdp_cpu_best_isa(void);

#endif
