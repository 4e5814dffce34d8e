/* Copies of a call's input arrays into a launcher's pinned buffers, shared out over threads: one
   thread copies host memory well below the pinned-to-device rate, several come close (as the
   Python launchers' warpdp/kernels/host_copy.py). */
#ifndef WARPDP_GPU_HOST_COPY_H
#define WARPDP_GPU_HOST_COPY_H

#include <stddef.h>
#include <vector>

struct wd_copy {
    void *dst;
    const void *src;
    size_t bytes;
};

/* Does every copy (the ranges must not overlap); large totals on several threads, the calling
   thread taking a share too. */
void wd_copy_parallel(const std::vector<wd_copy> &copies);

#endif
