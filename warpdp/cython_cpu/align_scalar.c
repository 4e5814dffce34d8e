/* The readable reference variant of the align kernels: one cell at a time. The only variant so far
   (SIMD variants with pairs in lanes come later and must give identical results). */
#include "align_kernel.h"

#define ALIGN_PAIR align_pair_scalar
#include "align_body.h"
