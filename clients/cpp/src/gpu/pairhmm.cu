/* warpdp_pairhmm on a GPU handle: PLACEHOLDER, to be replaced by the launcher of warpdp/kernels/pairhmm.cu. */
#include "gpu.h"

int wd_gpu_pairhmm(wd_gpu *gpu, const warpdp_pairhmm_batches *batches, int use_double, double *out, int64_t n_out)
{
    return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp pairhmm: the GPU launcher is not written yet");
}
