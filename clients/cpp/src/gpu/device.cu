/* The GPU of a GPU handle (warpdp_open_gpu) and the helpers every family's launcher shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu.h"

// Share of the free device memory one call plans for (several threads may call at once).
static const double CALL_MEMORY_SHARE = 0.5;

int wd_cuda_fail(const char *family, const char *step, cudaError_t error)
{
    /* Clears the thread's last error (this library's own runtime, linked statically), or the next
       launch's check would report this failure again. */
    (void)cudaGetLastError();
    const int status = error == cudaErrorMemoryAllocation ? WARPDP_ERR_OUT_OF_MEMORY : WARPDP_ERR_INTERNAL;
    return wd_fail(status, "warpdp %s (GPU): %s: %s", family, step, cudaGetErrorString(error));
}

int wd_cuda_launched(const char *family, const char *kernel)
{
    const cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess)
        return wd_cuda_fail(family, kernel, error);
    return WARPDP_OK;
}

int wd_gpu_enter(const wd_gpu *gpu, const char *family)
{
    (void)cudaGetLastError(); /* whatever an earlier call on this thread left behind */
    WD_CUDA_TRY(family, "selecting the device", cudaSetDevice(gpu->device));
    return WARPDP_OK;
}

size_t wd_gpu_budget(const wd_gpu *gpu)
{
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        free_bytes = gpu->total_memory / 4;
    }
    return (size_t)((double)free_bytes * CALL_MEMORY_SHARE);
}

int wd_gpu_open(int device, wd_gpu **gpu)
{
    *gpu = NULL;
    int count = 0;
    const cudaError_t found = cudaGetDeviceCount(&count);
    if (found != cudaSuccess || count == 0)
        return wd_fail(WARPDP_ERR_UNAVAILABLE, "warpdp: no usable GPU: %s",
                       found != cudaSuccess ? cudaGetErrorString(found) : "no CUDA device is visible");
    if (device >= count)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: options->device must be within 0..%d, not %d", count - 1,
                       device);
    cudaDeviceProp props;
    cudaError_t error = cudaGetDeviceProperties(&props, device);
    if (error == cudaSuccess)
        error = cudaSetDevice(device);
    if (error == cudaSuccess)
        error = cudaFree(0); /* creates the context now, not in the first call */
    if (error != cudaSuccess)
        return wd_fail(WARPDP_ERR_UNAVAILABLE, "warpdp: GPU %d cannot be used: %s", device, cudaGetErrorString(error));
    wd_gpu *made = (wd_gpu *)calloc(1, sizeof *made);
    if (made == NULL)
        return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp: out of memory opening a GPU handle");
    made->device = device;
    made->sm_count = props.multiProcessorCount;
    made->max_shared_per_block_optin = (int)props.sharedMemPerBlockOptin;
    made->total_memory = props.totalGlobalMem;
    snprintf(made->name, sizeof made->name, "%s", props.name);
    *gpu = made;
    return WARPDP_OK;
}

void wd_gpu_free(wd_gpu *gpu)
{
    free(gpu);
}
