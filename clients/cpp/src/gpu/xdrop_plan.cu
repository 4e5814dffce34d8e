/* The X-drop launcher's plans (xdrop_plan.h): host code only, the rules of warpdp/kernels/xdrop.py
   (fits_int32, fits_int16, shared_items, wide_frames, split_chunks, _ChunkPlan) with their
   default settings; its environment overrides (WARPDP_XDROP_WIDE*, WARPDP_XDROP_SHARED*), for
   experiments with the Python package, are not read here. */
#include "xdrop_plan.h"

#include <algorithm>
#include <numeric>

namespace wd_xdrop {

const WideConfig WIDE_CONFIGS[N_WIDE] = {{1024, 2, 16, 8}, {2048, 4, 16, 4}, {4096, 8, 16, 2}};

namespace {

// extend_kernel's bins by V flank (its scratch holds 3 x (flank + 34) cells per warp).
const int64_t FLANK_BINS[] = {1 << 11, 1 << 13, 1 << 15, 1 << 17, 1 << 19};
const int N_FLANK_BINS = 5;
const int NARROW_BINS = N_FLANK_BINS + 1; // the last: longer flanks
// extend_shared_kernel's bins by V flank (upper bounds).
const int64_t SHARED_FLANK_BINS[] = {256, 512, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 6144, 8192, 12288};
const int N_SHARED_BINS = 12;
const int64_t SHARED_PAD = 8;       // SHARED_PAD in xdrop.cu
const int64_t INT16_LIMIT = 16000;  // every value extend_shared_kernel handles lies in [-16000, 16000]
const int64_t INT32_LIMIT = 1 << 29; // xdrop_fits in warpdp/cython_cpu/xdrop_kernel.h
const int64_t WIDE_MAX_H = 1 << 30;  // the wide and shared kernels count anti-diagonals in int32
const int64_t SHARED_MIN_WINDOW = 128;
const int64_t WIDE_MIN_WINDOW = 1500;
// Bins of a chunk: extend_kernel int32 (NARROW_BINS), int64 (NARROW_BINS), wide rows, shared bins.
const int WIDE_FIRST = 2 * NARROW_BINS;
const int SHARED_FIRST = WIDE_FIRST + N_WIDE;
const int N_BINS = SHARED_FIRST + N_SHARED_BINS;

size_t round_up(size_t value, size_t step) { return (value + step - 1) / step * step; }

/* The index of the first bound >= value (numpy's searchsorted, side "left"). */
int bin_of(const int64_t *bounds, int n, int64_t value)
{
    return int(std::lower_bound(bounds, bounds + n, value) - bounds);
}

bool fits_int32(int64_t m, int64_t n, const Scores &s)
{
    const int64_t shorter = std::min(m, n);
    return s.x < INT32_LIMIT && -s.mismatch < INT32_LIMIT && -s.gap < INT32_LIMIT && s.match < INT32_LIMIT &&
           shorter < INT32_LIMIT && shorter * s.match < INT32_LIMIT;
}

bool fits_int16(int64_t m, int64_t n, const Scores &s)
{
    const int64_t penalty = std::max(-s.mismatch, -s.gap);
    if (!(s.x + s.match + penalty <= INT16_LIMIT))
        return false;
    return s.match * (std::min(m, n) + 1) + s.x + s.match + penalty <= INT16_LIMIT;
}

/* Columns the live window is expected to span (xdrop.py's expected_window): 2x / (match - 2 gap) + 1,
   in unsigned arithmetic (2x reaches 2^63). */
int64_t expected_window(const Scores &s)
{
    return int64_t(uint64_t(s.x) * 2 / uint64_t(s.match - 2 * s.gap)) + 1;
}

/* Whether an item that can run on a kernel goes there: its window is expected to span at least
   min_window columns (the "auto" rule of xdrop.py's _routed). */
bool wide_enough(int64_t m, int64_t n, int64_t window, int64_t min_window)
{
    return std::min(std::min(m, n) + 1, window) >= min_window;
}

/* The chunk's bin of one work item (V flank m, H flank n). */
int item_bin(int64_t m, int64_t n, const Scores &s, int64_t window)
{
    const int shared = bin_of(SHARED_FLANK_BINS, N_SHARED_BINS, m);
    if (shared < N_SHARED_BINS && n < WIDE_MAX_H && fits_int16(m, n, s) && wide_enough(m, n, window, SHARED_MIN_WINDOW))
        return SHARED_FIRST + shared;
    const bool int32 = fits_int32(m, n, s);
    int frame = 0;
    while (frame < N_WIDE && WIDE_CONFIGS[frame].frame < m + 2)
        frame++;
    if (frame < N_WIDE && n < WIDE_MAX_H && int32 && wide_enough(m, n, window, WIDE_MIN_WINDOW))
        return WIDE_FIRST + frame;
    return bin_of(FLANK_BINS, N_FLANK_BINS, m) + (int32 ? 0 : NARROW_BINS);
}

/* Offsets of named sections laid out one after another from `start`, each at least one byte and
   starting on an ALIGN boundary (runtime/layout.py's sections); returns the aligned end. */
size_t sections(std::initializer_list<std::pair<size_t *, size_t>> sizes, size_t start)
{
    size_t at = start;
    for (const auto &section : sizes) {
        *section.first = at;
        at = round_up(at + std::max<size_t>(section.second, 1), ALIGN);
    }
    return at;
}

/* The launch of bin b over order[first .. first + count), m: the items' V flanks. Returns the
   scratch bytes it needs. */
size_t add_launch(ChunkPlan &plan, int b, int64_t first, int64_t count, const std::vector<int64_t> &m,
                  const Residency &residency, int64_t scratch_limit)
{
    int64_t longest = 0;
    for (int64_t i = first; i < first + count; i++)
        longest = std::max(longest, m[size_t(plan.order[size_t(i)])]);
    Launch launch{Kernel::shared, 0, first, count, 0, 0, 32, int(plan.launches.size()), 0};
    size_t scratch = 0;
    if (b >= SHARED_FIRST) { // a warp per item, its cells in shared memory
        launch.stride = int64_t(round_up(size_t(longest + 16), 8));
        launch.shared_bytes = shared_bytes(launch.stride);
        launch.grid = std::max<int64_t>(1, std::min(count, residency.shared_blocks(launch.shared_bytes)));
    } else if (b >= WIDE_FIRST) { // a block per item, three frames of int32 scratch per block
        const WideConfig &config = WIDE_CONFIGS[b - WIDE_FIRST];
        launch.kernel = Kernel::wide;
        launch.wide_row = b - WIDE_FIRST;
        launch.stride = config.frame;
        launch.grid = std::max<int64_t>(1, std::min(count, residency.wide_blocks[b - WIDE_FIRST]));
        launch.threads = 32 * config.w;
        scratch = size_t(launch.grid) * 3 * size_t(config.frame) * 4;
    } else {
        const int64_t cell_bytes = b >= NARROW_BINS ? 8 : 4;
        launch.kernel = b >= NARROW_BINS ? Kernel::narrow_int64 : Kernel::narrow_int32;
        launch.stride = int64_t(round_up(size_t(longest + 34), 32));
        const int64_t per_warp = 3 * launch.stride * cell_bytes;
        const int64_t warps =
            std::max<int64_t>(1, std::min({count, residency.narrow_warps, scratch_limit / per_warp}));
        launch.grid = (warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
        launch.threads = THREADS_PER_BLOCK;
        scratch = size_t(launch.grid) * WARPS_PER_BLOCK * size_t(per_warp);
    }
    plan.launches.push_back(launch);
    return scratch;
}

void lay_out(ChunkPlan &plan, size_t scratch)
{
    Layout &at = plan.at;
    const size_t launches = std::max<size_t>(1, plan.launches.size()), n = size_t(plan.n);
    at.upload_bytes = sections({{&at.params, PARAMS_STRIDE * launches}, {&at.counters, 4 * launches},
                                {&at.h_bases, size_t(plan.h1 - plan.h0)}, {&at.v_bases, size_t(plan.v1 - plan.v0)},
                                {&at.h_offsets, 8 * (n + 1)}, {&at.v_offsets, 8 * (n + 1)}, {&at.h_pos, 8 * n},
                                {&at.v_pos, 8 * n}, {&at.order, 4 * 2 * n}},
                               0);
    at.out_bytes = ALIGN + 32 * 2 * n; // the bad-base flag, then 4 int64 per item
    at.scratch = sections({{&at.out, at.out_bytes}}, at.upload_bytes);
    at.device_bytes = at.scratch + std::max<size_t>(scratch, 1);
}

} // namespace

size_t shared_bytes(int64_t stride) { return size_t(3 * (stride + SHARED_PAD) * 2); }

size_t shared_bytes_max() { return shared_bytes(SHARED_FLANK_BINS[N_SHARED_BINS - 1] + 16); }

std::vector<std::pair<int64_t, int64_t>> split_chunks(const warpdp_xdrop_pairs &pairs, int64_t chunk_pairs,
                                                      int64_t chunk_bytes)
{
    const int64_t n = pairs.n_pairs;
    const int64_t *ho = pairs.h_offsets, *vo = pairs.v_offsets;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    int64_t start = 0;
    while (start < n) {
        // the last stop whose sequence bytes since start stay within chunk_bytes
        const int64_t limit = ho[start] + vo[start] + chunk_bytes;
        int64_t lo = start, hi = std::min(n, start + chunk_pairs);
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo + 1) / 2;
            if (ho[mid] + vo[mid] <= limit)
                lo = mid;
            else
                hi = mid - 1;
        }
        const int64_t stop = std::max(start + 1, lo);
        chunks.emplace_back(start, stop);
        start = stop;
    }
    return chunks;
}

void plan_chunk(const warpdp_xdrop_pairs &pairs, int64_t start, int64_t stop, const Scores &scores,
                const Residency &residency, int64_t scratch_limit, ChunkPlan &plan)
{
    const int64_t *ho = pairs.h_offsets, *vo = pairs.v_offsets;
    plan.start = start;
    plan.stop = stop;
    plan.n = stop - start;
    plan.h0 = ho[start];
    plan.h1 = ho[stop];
    plan.v0 = vo[start];
    plan.v1 = vo[stop];
    const size_t items = size_t(2 * plan.n);
    std::vector<int64_t> m(items), length(items);
    std::vector<int> bins(items);
    std::vector<int64_t> counts(N_BINS, 0);
    const int64_t window = expected_window(scores);
    for (int64_t i = 0; i < plan.n; i++) {
        const int64_t pair = start + i, h_pos = pairs.h_pos[pair], v_pos = pairs.v_pos[pair];
        const int64_t len_h = ho[pair + 1] - ho[pair], len_v = vo[pair + 1] - vo[pair];
        // item 2i: the left extension (flanks before the seed), 2i + 1: the right one
        const int64_t flanks[2][2] = {{v_pos, h_pos}, {len_v - v_pos - scores.k, len_h - h_pos - scores.k}};
        for (int side = 0; side < 2; side++) {
            const size_t item = size_t(2 * i + side);
            m[item] = flanks[side][0];
            length[item] = flanks[side][0] + flanks[side][1];
            bins[item] = item_bin(flanks[side][0], flanks[side][1], scores, window);
            counts[size_t(bins[item])]++;
        }
    }
    // By bin, and within a bin the longest extensions first, so that a launch does not end on one
    // (ties in item order: numpy's stable lexsort).
    plan.order.resize(items);
    std::iota(plan.order.begin(), plan.order.end(), 0);
    std::stable_sort(plan.order.begin(), plan.order.end(), [&](int32_t a, int32_t b) {
        return bins[size_t(a)] != bins[size_t(b)] ? bins[size_t(a)] < bins[size_t(b)]
                                                  : length[size_t(a)] > length[size_t(b)];
    });
    plan.launches.clear();
    size_t scratch = 0;
    int64_t first = 0;
    for (int b = 0; b < N_BINS; b++) {
        if (counts[size_t(b)] == 0)
            continue;
        scratch = std::max(scratch, add_launch(plan, b, first, counts[size_t(b)], m, residency, scratch_limit));
        first += counts[size_t(b)];
    }
    lay_out(plan, scratch);
}

int64_t first_bad_pair(const warpdp_xdrop_pairs &pairs, int64_t start, int64_t stop)
{
    const auto bad = [](const uint8_t *s, int64_t from, int64_t to) {
        for (int64_t i = from; i < to; i++) {
            const unsigned u = s[i] & 0xdfu;
            if (u != 'A' && u != 'C' && u != 'G' && u != 'T' && u != 'N')
                return true;
        }
        return false;
    };
    for (int64_t i = start; i < stop; i++)
        if (bad(pairs.h_bases, pairs.h_offsets[i], pairs.h_offsets[i + 1]) ||
            bad(pairs.v_bases, pairs.v_offsets[i], pairs.v_offsets[i + 1]))
            return i;
    return -1;
}

} // namespace wd_xdrop
