/* The host plan of the seed-extension GPU launcher (seedext.cu), as warpdp/kernels/seedext.py
   makes it: chunks of consecutive pairs, each chunk's pairs binned and ordered, one launch per bin,
   and the layout of the chunk's buffers. Keep the constants in step with seedext.py. */
#ifndef WARPDP_GPU_SEEDEXT_PLAN_H
#define WARPDP_GPU_SEEDEXT_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <utility>
#include <vector>
#include "gpu.h"

namespace seedext_gpu {

constexpr int THREADS_PER_BLOCK = 128; /* WARPDP_SEEDEXT_THREADS of the kernels */

/* One template instantiation of extend_kernel<lanes, cols, shared>. */
struct KernelConfig {
    int lanes;     /* lanes of a subwarp (one extension per subwarp) */
    int cols;      /* columns per lane per tile */
    bool shared;   /* row state in shared memory (else in global scratch) */
    int max_width; /* widest row window of the bin (0: no limit) */
    int subwarps_per_block() const { return THREADS_PER_BLOCK / lanes; }
};

/* The subwarp bins by row window width, min(query length, 2w + 1), and the configuration of
   bins whose row state does not fit shared memory (seedext.py's BINS and GLOBAL_CONFIG). */
constexpr int N_SUBWARP_BINS = 4;
constexpr KernelConfig CONFIGS[N_SUBWARP_BINS + 1] = {
    {4, 9, true, 32}, {4, 17, true, 64}, {8, 17, true, 128}, {16, 13, true, 0}, {16, 13, false, 0}};
constexpr int GLOBAL_CONFIG = N_SUBWARP_BINS; /* index into CONFIGS */
constexpr int LANE_KERNEL = -1;               /* Launch::config of the lane kernel */
constexpr size_t MAX_SHARED_BYTES = 96 * 1024;

/* The lane kernel: queries up to LANE_MAX_QUERY bases whose scores fit LANE_SCORE_BITS bits,
   when a <= LANE_MAX_MATCH; binned by query length. */
constexpr int LANE_MAX_QUERY = 256;
constexpr int LANE_SCORE_BITS = 14;
constexpr int LANE_MAX_MATCH = 15;
constexpr int N_LANE_BINS = 7;
constexpr int LANE_BOUNDS[N_LANE_BINS] = {64, 96, 128, 160, 192, 224, LANE_MAX_QUERY};
constexpr int N_BINS = N_LANE_BINS + N_SUBWARP_BINS;

constexpr int SLOTS = 3;       /* chunks in flight */
constexpr int N_COUNTERS = 32; /* one per launch of a chunk */
constexpr int64_t CHUNK_PAIRS = (int64_t)1 << 18;
constexpr int64_t CHUNK_BYTES = (int64_t)96 << 20;
constexpr int FIRST_CHUNK_DIVISOR = 8;
constexpr int CHUNK_GROWTH = 2;
constexpr size_t PARAMS_BYTES = 128; /* sizeof(warpdp_seedext::Params); seedext.cu checks it */
constexpr size_t RESULT_BYTES = 24;  /* score qle tle gtle gscore max_off */
constexpr size_t ALIGN = 256;        /* sections start on this boundary */

/* Ints of row state per subwarp: eh_h and eh_e (qmax + 2 each) and the query's codes. */
inline int64_t state_ints(int64_t qmax) { return 2 * (qmax + 2) + (qmax + 3) / 4 + 1; }

/* Shared memory of one lane-kernel block (a warp): a word per column 0..qmax per lane. */
inline size_t lane_shared_bytes(int64_t qmax) { return (size_t)(32 * 4 * (qmax + 1)); }

/* One kernel launch of a chunk: the bin's pairs order[first .. first + count). */
struct Launch {
    int config;          /* into CONFIGS, or LANE_KERNEL */
    int64_t first, count;
    int qmax;            /* longest query of the launch */
    size_t shared_bytes; /* dynamic shared memory of a block */
    int grid;
    int index;           /* its Params row and counter */
    size_t scratch;      /* byte offset of its global scratch (launches run concurrently) */
    int threads() const { return config == LANE_KERNEL ? 32 : THREADS_PER_BLOCK; }
    int64_t state() const { return config == LANE_KERNEL ? 0 : state_ints(qmax); }
};

/* Byte offsets of a chunk's sections: the upload (params .. order, blob_bytes long), then the
   device-only results and scratch (device_bytes in all). */
struct Layout {
    size_t params, counters, query, target, query_offsets, target_offsets, h0, order, blob_bytes;
    size_t out, scratch, device_bytes;
};

struct ChunkPlan {
    int64_t start, stop, n;
    int64_t q0, q1, t0, t1;     /* the chunk's sequence bytes */
    std::vector<int32_t> order; /* chunk-local pair indices, bin after bin */
    std::vector<Launch> launches; /* longest queries first */
    Layout at;
};

/* What a plan needs of the device: how many blocks of CONFIGS[config] with shared_bytes of
   dynamic shared memory an SM holds (the occupancy query: WARPDP_OK or a CUDA failure's status),
   the SM count, and the bytes of scratch one chunk may take. */
struct PlanDevice {
    int (*blocks_per_sm)(int config, size_t shared_bytes, int *blocks);
    int sm_count;
    size_t scratch_budget;
};

/* Consecutive pair ranges [start, stop) of at most chunk_pairs pairs and about chunk_bytes of
   sequence; the first FIRST_CHUNK_DIVISOR times smaller, the next growing by CHUNK_GROWTH. */
std::vector<std::pair<int64_t, int64_t>> split_chunks(const warpdp_seedext_pairs *pairs, int64_t chunk_pairs,
                                                      int64_t chunk_bytes);

/* Plans pairs start..stop-1 (checked already). WARPDP_OK or blocks_per_sm's failure. */
int plan_chunk(const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params, int64_t start, int64_t stop,
               const PlanDevice &device, ChunkPlan *plan);

} // namespace seedext_gpu

#endif
