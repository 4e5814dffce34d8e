/* The host side of the X-drop launcher (xdrop.cu here), as warpdp/kernels/xdrop.py plans it: the
   chunks of a batch, and per chunk which kernel runs each work item (a pair's left or right
   extension), in which order, with which grid and scratch, and where everything lies in the
   chunk's upload and device buffers. No CUDA calls here; xdrop.py documents the rules. */
#ifndef WARPDP_GPU_XDROP_PLAN_H
#define WARPDP_GPU_XDROP_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <functional>
#include <utility>
#include <vector>
#include "warpdp.h"

extern "C" int wd_xdrop_bad_base(int64_t pair); /* xdrop.c: the error naming a pair with a non-base byte */

namespace wd_xdrop {

const size_t ALIGN = 256;        // device sections start on this boundary (runtime/slots.py)
const size_t PARAMS_STRIDE = 256; // a launch's Params row in the upload
const int THREADS_PER_BLOCK = 256; // extend_kernel's __launch_bounds__
const int WARPS_PER_BLOCK = THREADS_PER_BLOCK / 32;
const int64_t CHUNK_PAIRS = 1 << 19;
const int64_t CHUNK_BYTES = 512 << 20;   // sequence bytes per chunk
const int64_t SCRATCH_BYTES = 2LL << 30; // device scratch per chunk (bounds warps for very long flanks)

struct Scores {
    int64_t k, match, mismatch, gap, x;
    bool best;
};

/* extend_wide_kernel<W, T, B>: frame = 32 * W * T columns (xdrop.py's WIDE_CONFIGS). */
struct WideConfig {
    int frame, w, t, blocks;
};
const int N_WIDE = 3;
extern const WideConfig WIDE_CONFIGS[N_WIDE];

/* Dynamic shared memory of one extend_shared_kernel block for a stride. */
size_t shared_bytes(int64_t stride);
/* The most any launch asks for (the kernel's attribute). */
size_t shared_bytes_max();

enum class Kernel { narrow_int32, narrow_int64, wide, shared };

struct Launch {
    Kernel kernel;
    int wide_row;        // Kernel::wide: the row of WIDE_CONFIGS
    int64_t first, count; // its items: order[first .. first + count)
    int64_t stride;      // cells per anti-diagonal buffer (wide: the frame)
    int64_t grid;
    int threads;         // per block
    int index;           // its Params row and counter
    size_t shared_bytes; // dynamic shared memory per block
};

/* What the plans need of the device: how many blocks of each kernel it holds at once. */
struct Residency {
    int64_t narrow_warps;            // extend_kernel<int>, in warps
    int64_t wide_blocks[N_WIDE];     // per row of WIDE_CONFIGS
    std::function<int64_t(size_t)> shared_blocks; // extend_shared_kernel with that much shared memory
};

/* Byte offsets of a chunk's sections: the upload (params .. order), then on the device only the
   bad-base flag and the results (out) and the kernels' scratch. */
struct Layout {
    size_t params, counters, h_bases, v_bases, h_offsets, v_offsets, h_pos, v_pos, order;
    size_t upload_bytes, out, out_bytes, scratch, device_bytes;
};

struct ChunkPlan {
    int64_t start = 0, stop = 0, n = 0; // pairs [start, stop)
    int64_t h0 = 0, h1 = 0, v0 = 0, v1 = 0; // their bytes of h_bases and v_bases
    std::vector<int32_t> order;         // work item 2i: pair start + i's left extension, 2i + 1: its right one
    std::vector<Launch> launches;
    Layout at{};
};

/* Consecutive pair ranges of at most chunk_pairs pairs and about chunk_bytes of sequence (one pair
   at least). */
std::vector<std::pair<int64_t, int64_t>> split_chunks(const warpdp_xdrop_pairs &pairs, int64_t chunk_pairs,
                                                      int64_t chunk_bytes);

/* The plan of pairs [start, stop) (may throw std::bad_alloc). */
void plan_chunk(const warpdp_xdrop_pairs &pairs, int64_t start, int64_t stop, const Scores &scores,
                const Residency &residency, int64_t scratch_limit, ChunkPlan &plan);

/* The first pair of [start, stop) with a byte other than A, C, G, T, N (either case), or -1. */
int64_t first_bad_pair(const warpdp_xdrop_pairs &pairs, int64_t start, int64_t stop);

} // namespace wd_xdrop

#endif
