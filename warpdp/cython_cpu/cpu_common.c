#include <stdlib.h>
#include "cpu_common.h"

int warpdp_cpu_supports(int isa)
{
#if !WARPDP_X86_SIMD
    return isa == WARPDP_ISA_SCALAR;
#else
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
#endif
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

int warpdp_offsets_ok(const int64_t *offsets, int64_t n, int64_t total, int64_t min_step, int64_t max_step,
                      int64_t *bad_index)
{
    if (offsets == NULL || n < 0 || offsets[0] != 0) {
        *bad_index = 0;
        return 0;
    }
    /* offsets[i] lies in 0..total here, so offsets[i + 1] - offsets[i] is computed only
       once offsets[i + 1] is known to lie in offsets[i]..total too. */
    for (int64_t i = 0; i < n; i++) {
        const int64_t from = offsets[i], to = offsets[i + 1];
        if (to < from || to > total || to - from < min_step || to - from > max_step) {
            *bad_index = i;
            return 0;
        }
    }
    if (offsets[n] != total) {
        *bad_index = n;
        return 0;
    }
    return 1;
}

int warpdp_bad(warpdp_bad_argument *bad, int field, int64_t index)
{
    if (bad != NULL) {
        bad->field = field;
        bad->index = index;
    }
    return WARPDP_BAD_ARGUMENT;
}
