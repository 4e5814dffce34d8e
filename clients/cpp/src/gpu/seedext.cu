/* warpdp_seedext on a GPU handle: PLACEHOLDER, to be replaced by the launcher of warpdp/kernels/seedext.cu. */
#include "gpu.h"

int wd_gpu_seedext(wd_gpu *gpu, const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params, warpdp_seedext_result *results)
{
    return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp seedext: the GPU launcher is not written yet");
}
