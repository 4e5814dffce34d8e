/* Shared by the families' GPU launchers (<family>.cu here, compiled by nvcc into libwarpdp when it is
   built with WARPDP_WITH_CUDA): the device of a GPU handle, CUDA errors as warpdp statuses, and
   owners of device memory, pinned host memory and streams that free them on every return path.
   Each launcher includes its family's kernels from warpdp/kernels (one source with the Python
   package's GPU backend) and launches them with the runtime API. */
#ifndef WARPDP_GPU_H
#define WARPDP_GPU_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <exception>
#include <new>
#include "../internal.h"

struct wd_gpu {
    int device;
    int sm_count;
    int max_shared_per_block_optin; /* bytes of shared memory a block may opt in to */
    size_t total_memory;
    char name[256];
};

/* A CUDA error as a status with a message naming the family and the step: out of device memory
   (cudaErrorMemoryAllocation) -> WARPDP_ERR_OUT_OF_MEMORY, anything else -> WARPDP_ERR_INTERNAL. */
int wd_cuda_fail(const char *family, const char *step, cudaError_t error);

#define WD_CUDA_TRY(family, step, call)                       \
    do {                                                      \
        const cudaError_t wd_cuda_error_ = (call);            \
        if (wd_cuda_error_ != cudaSuccess)                    \
            return wd_cuda_fail((family), (step), wd_cuda_error_); \
    } while (0)

/* Makes the handle's device current on the calling thread (every call begins with it). */
int wd_gpu_enter(const wd_gpu *gpu, const char *family);

/* Bytes of device memory one call may plan to use now: a share of what is free, so that calls on
   several threads (and other programs) fit beside each other. */
size_t wd_gpu_budget(const wd_gpu *gpu);

/* Owns an array of n T's in device memory (PINNED false: cudaMalloc) or in pinned, page-locked
   host memory (PINNED true: cudaMallocHost; copies from it run asynchronously). */
template <typename T, bool PINNED> class CudaArray {
  public:
    CudaArray() = default;
    CudaArray(const CudaArray &) = delete;
    CudaArray &operator=(const CudaArray &) = delete;
    ~CudaArray() { release(); }
    /* Frees what it held and allocates n (n == 0 holds nothing). */
    int allocate(size_t n, const char *family, const char *what)
    {
        release();
        if (n == 0)
            return WARPDP_OK;
        void *p = nullptr;
        WD_CUDA_TRY(family, what, PINNED ? cudaMallocHost(&p, n * sizeof(T)) : cudaMalloc(&p, n * sizeof(T)));
        ptr_ = static_cast<T *>(p);
        n_ = n;
        return WARPDP_OK;
    }
    void release()
    {
        if (ptr_ != nullptr)
            PINNED ? cudaFreeHost(ptr_) : cudaFree(ptr_);
        ptr_ = nullptr;
        n_ = 0;
    }
    T *get() const { return ptr_; }
    size_t size() const { return n_; }

  private:
    T *ptr_ = nullptr;
    size_t n_ = 0;
};

template <typename T> using DeviceArray = CudaArray<T, false>;
template <typename T> using PinnedArray = CudaArray<T, true>;

/* Owns an event without timing: a point of one stream that others wait for. */
class Event {
  public:
    Event() = default;
    Event(const Event &) = delete;
    Event &operator=(const Event &) = delete;
    ~Event()
    {
        if (event_ != nullptr)
            cudaEventDestroy(event_);
    }
    int create(const char *family)
    {
        WD_CUDA_TRY(family, "creating an event", cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
        return WARPDP_OK;
    }
    cudaEvent_t get() const { return event_; }

  private:
    cudaEvent_t event_ = nullptr;
};

/* Owns a non-blocking stream: a call's work runs on its own stream, beside other threads' calls. */
class Stream {
  public:
    Stream() = default;
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;
    ~Stream()
    {
        if (stream_ != nullptr) {
            cudaStreamSynchronize(stream_);
            cudaStreamDestroy(stream_);
        }
    }
    int create(const char *family)
    {
        WD_CUDA_TRY(family, "creating a stream", cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        return WARPDP_OK;
    }
    cudaStream_t get() const { return stream_; }
    /* Waits for the stream's work; a kernel's failure comes back here. */
    int wait(const char *family, const char *step) const
    {
        WD_CUDA_TRY(family, step, cudaStreamSynchronize(stream_));
        return WARPDP_OK;
    }

  private:
    cudaStream_t stream_ = nullptr;
};

/* Runs a family's GPU call: a C++ exception (host memory exhausted while planning, say) becomes a
   status, as none may reach the C caller. */
template <typename Body> int wd_gpu_call(const char *family, Body body)
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp %s (GPU): out of host memory", family);
    } catch (const std::exception &error) {
        return wd_fail(WARPDP_ERR_INTERNAL, "warpdp %s (GPU): %s", family, error.what());
    }
}

/* The launch just enqueued (cudaGetLastError), as a status naming the kernel. */
int wd_cuda_launched(const char *family, const char *kernel);

#endif
