/* The readable reference variant of the align kernels: one cell at a time. The SIMD variants
   (align_lanes_body.h) give identical results and send it the pairs their lanes do not take. */
#include "align_kernel.h"

#define ALIGN_PAIR align_pair_scalar
#include "align_body.h"
