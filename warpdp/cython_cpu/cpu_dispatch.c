#include "cpu_dispatch.h"

int warpdp_cpu_supports(int isa)
{
    /* __builtin_cpu_supports also checks that the OS saves the wide registers. */
    __builtin_cpu_init();
    switch (isa) {
    case WARPDP_ISA_SCALAR:
        return 1;
    case WARPDP_ISA_AVX2:
        return __builtin_cpu_supports("avx2") != 0;
    case WARPDP_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") != 0;
    default:
        return 0;
    }
}

int warpdp_cpu_best_isa(void)
{
    if (warpdp_cpu_supports(WARPDP_ISA_AVX512))
        return WARPDP_ISA_AVX512;
    if (warpdp_cpu_supports(WARPDP_ISA_AVX2))
        return WARPDP_ISA_AVX2;
    return WARPDP_ISA_SCALAR;
}
