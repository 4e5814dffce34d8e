/* warpdp_edit on a GPU handle: PLACEHOLDER, to be replaced by the launcher of warpdp/kernels/edit.cu. */
#include "gpu.h"

int wd_gpu_edit(wd_gpu *gpu, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params, const warpdp_edit_results *results)
{
    return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp edit: the GPU launcher is not written yet");
}
