/* The Pair-HMM GPU launcher's host-side plan (pairhmm_plan.cu), as warpdp/kernels/pairhmm_plan.py
   makes it for the Python package's GPU backend: the kernel configurations and their read-length
   bins, how the input is cut into chunks, and how each chunk is laid out in its pinned blob and
   device buffer. The launch structs themselves are filled by pairhmm.cu, which includes the
   kernels. */
#ifndef WARPDP_GPU_PAIRHMM_PLAN_H
#define WARPDP_GPU_PAIRHMM_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <vector>
#include "gpu.h"

namespace wd_pairhmm {

/* One template instantiation of warpdp_pairhmm::forward_kernel<Real, G, T, MULTI>. */
struct KernelConfig {
    bool is_double;
    int lanes;        /* G: lanes of a subwarp (one work item per subwarp) */
    int rows;         /* T: read rows per lane */
    bool multi;       /* reads longer than G*T are computed strip after strip */
    int max_read_len; /* longest read this bin takes (0: no limit) */
    int warps;        /* warps per block */

    int threads() const { return 32 * warps; }
    int real_bytes() const { return is_double ? 8 : 4; }
    /* Two tables (e*MM, e*GapM) x 5 hap codes x T rows x 32 lanes, per warp. */
    int shared_bytes() const { return warps * 2 * 5 * rows * 32 * real_bytes(); }
    int subwarps_per_block() const { return warps * (32 / lanes); }
    int strip_rows() const { return lanes * rows; }
    int cell_bytes() const { return 4 * real_bytes(); } /* one MULTI scratch cell: M, X, Y, unused */
};

/* FLOAT_BINS and DOUBLE_CONFIG of pairhmm_plan.py, in its order (a Python test compares them). */
constexpr int N_FLOAT_BINS = 9;
constexpr KernelConfig FLOAT_BINS[N_FLOAT_BINS] = {
    {false, 4, 8, false, 32, 4},   {false, 8, 8, false, 64, 4},   {false, 8, 12, false, 96, 4},
    {false, 8, 16, false, 128, 2}, {false, 8, 20, false, 160, 4}, {false, 16, 12, false, 192, 2},
    {false, 16, 16, false, 256, 2}, {false, 32, 16, false, 512, 2}, {false, 8, 16, true, 0, 2},
};
constexpr KernelConfig DOUBLE_CONFIG = {true, 8, 4, true, 0, 4};

constexpr int64_t MAX_HAP_LEN = (1 << 24) - 1; /* a haplotype length travels in 24 bits */
constexpr int MAX_BINS = 16;
constexpr int PLAN_BUCKETS = 64;
constexpr int ITEM_BYTES = 32;      /* struct Item */
constexpr int CODE_PAD = 128;       /* lane 0 reads the stream up to G + 12 bytes past an item's end */
constexpr uint8_t CODE_NONE = 0x84; /* "no column" code, pads the stream */

/* Counters block (int32) of a chunk; the layout of pairhmm_plan.py. */
constexpr int C_WORK = 0;      /* +bin: items handed out by the bin's launch */
constexpr int C_FB_COUNT = 16; /* pairs queued for the double pass */
constexpr int C_FB_WORK = 17;  /* items of the queue handed out */
constexpr int C_BIN_COUNT = 32;
constexpr int C_BIN_START = 48;
constexpr int C_BUCKET_COUNT = 64;
constexpr int C_BUCKET_CURSOR = C_BUCKET_COUNT + 16 * PLAN_BUCKETS;
constexpr int C_BUCKET_START = C_BUCKET_CURSOR + 16 * PLAN_BUCKETS;
constexpr int N_COUNTERS = C_BUCKET_START + 16 * PLAN_BUCKETS;

/* Whole-input numbers every chunk plans with. */
struct InputStats {
    double total_cells; /* a double: absurd inputs' products and sums cannot overflow */
    int64_t longest_hap;
    double mean_hap;
};

/* Batches b0..b1-1, or (whole == false) reads r_lo..r_hi-1 of the single batch b0. */
struct Chunk {
    int64_t b0, b1;
    bool whole;
    int64_t r_lo, r_hi;
    int64_t out_lo, n_out;
};

struct Launch {
    KernelConfig config;
    int bin;     /* index among the chunk's configurations (its launch struct's row) */
    int grid;
    int64_t reads;
};

/* Device offsets of a chunk's sections. The blob (pinned, uploaded whole) holds the first ten;
   the device buffer continues with the rest. */
struct Layout {
    size_t params, plan, counters, read_offsets, batch_reads, batch_haps, pair_base, hap_starts, reads, codes;
    size_t blob_bytes;
    size_t items, out, fb_items, scratch_f, scratch_d;
    size_t device_bytes;
};

/* One chunk: its launches and the layout of its blob and device buffer. */
struct ChunkPlan {
    Chunk chunk;
    bool use_double;
    int64_t r_lo, r_hi, h_lo, h_hi, n_reads, n_haps, n_batches;
    int64_t read_bytes, code_bytes, read_plane;
    int64_t cap;
    double columns, mean_hap;
    int64_t longest_item;
    int n_configs; /* the bins: FLOAT_BINS, or DOUBLE_CONFIG alone */
    std::vector<Launch> launches;
    bool has_fallback;
    Launch fallback;
    int64_t stride_f, stride_d;
    Layout at;

    const KernelConfig &config(int bin) const { return use_double ? DOUBLE_CONFIG : FLOAT_BINS[bin]; }
    int n_params() const { return n_configs + 1; }
};

/* Resident blocks of each configuration on the whole device (occupancy x SMs), as pairhmm.cu
   measures them: float bins 0..N_FLOAT_BINS-1, then the double configuration. */
struct Occupancy {
    int sm_count;
    int64_t float_blocks[N_FLOAT_BINS];
    int64_t double_blocks;
};

InputStats input_stats(const warpdp_pairhmm_batches *b);

/* split_work of pairhmm_plan.py: consecutive pieces under the byte and cell limits, the first
   smaller and growing. */
std::vector<Chunk> split_work(const warpdp_pairhmm_batches *b, int64_t chunk_bytes, int64_t chunk_cells);

/* The plan of one chunk (launches, grids, layout); sizes in the plan's `params` section need
   the launch struct's size, which pairhmm.cu passes. */
ChunkPlan plan_chunk(const warpdp_pairhmm_batches *b, const Chunk &chunk, bool use_double, const InputStats &stats,
                     const Occupancy &occupancy, size_t params_bytes, size_t plan_params_bytes);

/* Writes the chunk's counters (zeroed), offsets (rebased, int32), read planes and haplotype bytes
   (padded with CODE_NONE) into the pinned blob. */
void fill_inputs(const ChunkPlan &plan, const warpdp_pairhmm_batches *b, uint8_t *blob);

} // namespace wd_pairhmm

#endif
