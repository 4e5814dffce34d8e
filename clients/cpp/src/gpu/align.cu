/* warpdp_align on a GPU handle: PLACEHOLDER, to be replaced by the launcher of warpdp/kernels/align.cu. */
#include "gpu.h"

int wd_gpu_align(wd_gpu *gpu, const warpdp_seq_pairs *pairs, const warpdp_align_params *params, const warpdp_align_results *results)
{
    return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp align: the GPU launcher is not written yet");
}
