/* warpdp_xdrop on a GPU handle: PLACEHOLDER, to be replaced by the launcher of warpdp/kernels/xdrop.cu. */
#include "gpu.h"

int wd_gpu_xdrop(wd_gpu *gpu, const warpdp_xdrop_pairs *pairs, const warpdp_xdrop_params *params, const warpdp_xdrop_results *results)
{
    return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp xdrop: the GPU launcher is not written yet");
}
