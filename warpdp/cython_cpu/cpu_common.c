#include <stdlib.h>
#include "cpu_common.h"

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
        /* The project's AVX-512 level: F and BW (16-bit lanes), on every AVX-512 CPU but
           the Xeon Phi. */
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
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

void *warpdp_workspace_reserve(warpdp_workspace *ws, size_t bytes)
{
    if (bytes <= ws->capacity)
        return ws->memory;
    size_t capacity = bytes + bytes / 2;
    void *memory = NULL;
    if (posix_memalign(&memory, 64, capacity) != 0)
        return NULL;
    free(ws->memory);
    ws->memory = memory;
    ws->capacity = capacity;
    return memory;
}

void warpdp_workspace_free(warpdp_workspace *ws)
{
    free(ws->memory);
    ws->memory = NULL;
    ws->capacity = 0;
}
