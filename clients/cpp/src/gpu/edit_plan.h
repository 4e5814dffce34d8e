/* One chunk of warpdp_edit on a GPU handle: its launches and memory layout, as warpdp/kernels/edit.py's
   ChunkPlan makes them (host work only; edit.cu fills the kernels' Params and launches them). */
#ifndef WARPDP_GPU_EDIT_PLAN_H
#define WARPDP_GPU_EDIT_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <vector>
#include "../internal.h"

namespace wd_edit {

// The constants of edit.py (the launcher the Python package runs), for the same launches.
constexpr int THREADS = 128;                              // per block (the kernels' __launch_bounds__)
constexpr int N_TIERS = 3;
constexpr int WINDOW_TIERS[N_TIERS] = {8, 24, 64};        // edits per window each windowed tier keeps
constexpr int64_t TIER_SLOTS[N_TIERS] = {1 << 16, 1 << 14, 1 << 12};
constexpr int64_t WARP_MIN_QUERY = 512;                   // longer queries: a warp per pair
constexpr int64_t MAX_EXACT_SLOTS = 1 << 16;              // threads of one exact launch
constexpr int64_t SCRATCH_BUDGET = (int64_t)2 << 30;      // bytes of scratch of one exact launch (at most)
constexpr int64_t GPU_MAX_BLOCK_CELLS = (int64_t)1 << 27; // beyond (x32 for a warp): the CPU's per-pair body
constexpr int64_t MAX_SLOT_BYTES = (int64_t)64 << 20;     // one exact slot's scratch beyond: the CPU's
constexpr int OUT_COLUMNS = 5;                            // distance, t_begin, t_end, n_locations, n_cigar
constexpr int RESUME_VALUES = 5;                          // int64s of a windowed pair's resume record
constexpr int64_t CHUNK_PAIRS = 1 << 18;
constexpr int64_t CHUNK_BASES = (int64_t)128 << 20;

enum Kernel { WINDOWED_8, WINDOWED_24, WINDOWED_64, EXACT, EXACT_WARP };

// Byte offsets of a chunk's sections in its device buffer (the first eight are uploaded).
enum Section {
    S_PARAMS, S_COUNTS, S_SYMBOLS, S_QUERY, S_TARGET, S_QOFF, S_TOFF, S_ORDER,
    S_OUT, S_LOC_BEGIN, S_LOC_END, S_CIGAR, S_LIST1, S_LIST2, S_RESUME, S_WORDS, S_INTS, S_BYTES, N_SECTIONS
};

struct Launch {
    Kernel kernel;
    int grid;
    int64_t slots;          // threads (warps for EXACT_WARP)
    Section order;          // section holding its pair list
    int64_t order_from;     // first entry of that list
    int count;              // counter index
    Section overflow;       // S_PARAMS: none (the last tier, exact launches)
    int64_t words_per_slot, ints_per_slot, bytes_per_slot, words_per_lane;
    int trace_rows, resume_in;
};

struct ChunkPlan {
    int64_t start, stop, n;         // pairs start..stop-1
    int64_t q0, q1, t0, t1;         // their bases
    std::vector<int64_t> skip;      // chunk indices left to the CPU (exact pairs too large)
    std::vector<int32_t> order, counts;
    std::vector<Launch> launches;
    uint16_t symbols[256];
    int alphabet;
    bool windowed, want_locations, want_cigar, one_location;
    int64_t loc_room, cigar_room;
    size_t at[N_SECTIONS];
    size_t blob_bytes, device_bytes, head_bytes;  // upload; whole device buffer; columns + locations
};

/* The plan of pairs start..stop-1 (params already checked); scratch_budget caps an exact launch's
   scratch (SCRATCH_BUDGET, or less where the device has less); params_bytes: sizeof the kernels' Params. */
void plan_chunk(ChunkPlan &plan, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params, int64_t start,
                int64_t stop, int64_t scratch_budget, size_t params_bytes);

/* True for an exact pair the GPU leaves to the CPU (edit.py's cpu_fallback_pairs). */
bool cpu_fallback(int64_t m, int64_t n);

/* The end of the chunk from `start`: at most CHUNK_PAIRS pairs and about CHUNK_BASES bases (one at least). */
int64_t chunk_stop(const warpdp_seq_pairs *pairs, int64_t start);

}  // namespace wd_edit

#endif
