/* The host plan of the seed-extension GPU launcher: chunks, bins, order and layout, as
   warpdp/kernels/seedext.py (_ChunkPlan, split_chunks) makes them. */
#include "seedext_plan.h"

namespace seedext_gpu {
namespace {

constexpr int KEY_VALUES = 1 << 16;
constexpr int SUBWARP_KEYS = 0xC000; /* sort keys of subwarp pairs start here, after every lane key */

/* The first sort key of bin b (lane keys are query length << 7 | target length / 8, subwarp
   keys SUBWARP_KEYS | bin << 11 | ...), and of b == N_BINS the end. */
int bin_key_edge(int b)
{
    if (b == 0)
        return 0;
    if (b <= N_LANE_BINS)
        return (LANE_BOUNDS[b - 1] + 1) << 7;
    return SUBWARP_KEYS | (b - N_LANE_BINS) << 11;
}

size_t round_up(size_t value)
{
    return (value + ALIGN - 1) / ALIGN * ALIGN;
}

/* Lays out a section of `size` bytes (at least 1) at *end; returns its offset. */
size_t section(size_t *end, size_t size)
{
    const size_t at = *end;
    *end = round_up(at + (size > 0 ? size : 1));
    return at;
}

/* The sort key of every pair of the chunk and its query length. Lane pairs: by query length,
   then target length in 8-row steps, so a warp's 32 lanes take about as long as each other;
   subwarp pairs: by bin of row width, then longest target first. */
void sort_keys(const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params, int64_t start, int64_t n,
               uint16_t *key, int32_t *qlen)
{
    const int64_t band = 2 * (int64_t)params->w + 1;
    const int64_t widest = CONFIGS[N_SUBWARP_BINS - 2].max_width + 1;
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = start + i;
        const int64_t q = pairs->query_offsets[k + 1] - pairs->query_offsets[k];
        const int64_t t = pairs->target_offsets[k + 1] - pairs->target_offsets[k];
        qlen[i] = (int32_t)q;
        if (params->a <= LANE_MAX_MATCH && q <= LANE_MAX_QUERY &&
            (int64_t)pairs->h0[k] + (int64_t)params->a * q < ((int64_t)1 << LANE_SCORE_BITS)) {
            key[i] = (uint16_t)(q << 7 | (t < (127 << 3) ? t : 127 << 3) >> 3);
            continue;
        }
        int64_t width = q < band ? q : band;
        width = width < widest ? width : widest;
        int bin = 0;
        while (bin < N_SUBWARP_BINS - 1 && width > CONFIGS[bin].max_width)
            bin++;
        const int64_t rank = (t >> 1) < 2047 ? (t >> 1) : 2047;
        key[i] = (uint16_t)(SUBWARP_KEYS | bin << 11 | (2047 - rank));
    }
}

/* The indices that sort key[0..n) (ties in index order) and how many keys each value has. */
void stable_order(const uint16_t *key, int64_t n, int32_t *order, std::vector<int64_t> &counts)
{
    counts.assign(KEY_VALUES, 0);
    for (int64_t i = 0; i < n; i++)
        counts[key[i]]++;
    std::vector<int64_t> next(KEY_VALUES);
    int64_t total = 0;
    for (int k = 0; k < KEY_VALUES; k++) {
        next[k] = total;
        total += counts[k];
    }
    for (int64_t i = 0; i < n; i++)
        order[next[key[i]]++] = (int32_t)i;
}

/* The subwarp launch of bin b (pairs order[first .. first + count)). */
int subwarp_launch(int b, int64_t first, int64_t count, int qmax, const PlanDevice &device, Launch *launch)
{
    int config = b - N_LANE_BINS;
    size_t need = (size_t)CONFIGS[config].subwarps_per_block() * (size_t)state_ints(qmax) * 4;
    if (need > MAX_SHARED_BYTES) {
        config = GLOBAL_CONFIG;
        need = 0;
    }
    const int subwarps = CONFIGS[config].subwarps_per_block();
    int per_sm = 0;
    WD_TRY(device.blocks_per_sm(config, need, &per_sm));
    int64_t grid = (count + subwarps - 1) / subwarps;
    const int64_t resident = (int64_t)(per_sm > 1 ? per_sm : 1) * device.sm_count;
    grid = grid < resident ? grid : resident;
    if (!CONFIGS[config].shared) { /* within the chunk's share of the memory budget, if that is less */
        const int64_t block_bytes = (int64_t)subwarps * state_ints(qmax) * 4;
        const int64_t fits = (int64_t)(device.scratch_budget / N_SUBWARP_BINS) / block_bytes;
        grid = grid < fits ? grid : fits;
    }
    *launch = Launch{config, first, count, qmax, need, (int)(grid > 1 ? grid : 1), 0, 0};
    return WARPDP_OK;
}

/* The chunk's launches, bin after bin (each a run of keys: the key counts give the bins' sizes). */
int plan_launches(const int32_t *qlen, const std::vector<int64_t> &counts, const PlanDevice &device, ChunkPlan *plan)
{
    std::vector<int64_t> below(KEY_VALUES + 1, 0); /* keys below each value */
    for (int k = 0; k < KEY_VALUES; k++)
        below[k + 1] = below[k] + counts[k];
    int64_t first = 0, scratch_ints = 0;
    for (int b = 0; b < N_BINS; b++) {
        const int64_t count = below[bin_key_edge(b + 1)] - below[bin_key_edge(b)];
        if (count == 0)
            continue;
        Launch launch;
        if (b < N_LANE_BINS) { /* sorted by query length: the bin's last is its longest */
            const int qmax = qlen[plan->order[first + count - 1]];
            launch = Launch{LANE_KERNEL, first, count, qmax, lane_shared_bytes(qmax), (int)((count + 31) / 32), 0, 0};
        } else {
            int qmax = 0;
            for (int64_t i = first; i < first + count; i++)
                qmax = qlen[plan->order[i]] > qmax ? qlen[plan->order[i]] : qmax;
            WD_TRY(subwarp_launch(b, first, count, qmax, device, &launch));
            launch.scratch = 4 * (size_t)scratch_ints;
            if (!CONFIGS[launch.config].shared)
                scratch_ints += (int64_t)launch.grid * CONFIGS[launch.config].subwarps_per_block() * launch.state();
        }
        launch.index = (int)plan->launches.size();
        plan->launches.push_back(launch);
        first += count;
    }
    /* Longest queries first: their warps take longest, so they start before the short ones. */
    std::vector<Launch> reversed(plan->launches.rbegin(), plan->launches.rend());
    plan->launches.swap(reversed);
    plan->at.scratch = 4 * (size_t)scratch_ints; /* the size, until plan_layout sets the offset */
    return WARPDP_OK;
}

void plan_layout(ChunkPlan *plan)
{
    Layout &at = plan->at;
    const size_t n = (size_t)plan->n, scratch_bytes = at.scratch;
    size_t end = 0;
    at.params = section(&end, PARAMS_BYTES * plan->launches.size());
    at.counters = section(&end, N_COUNTERS * 4);
    at.query = section(&end, (size_t)(plan->q1 - plan->q0));
    at.target = section(&end, (size_t)(plan->t1 - plan->t0));
    at.query_offsets = section(&end, 8 * (n + 1));
    at.target_offsets = section(&end, 8 * (n + 1));
    at.h0 = section(&end, 4 * n);
    at.order = section(&end, 4 * n);
    at.blob_bytes = end;
    at.out = section(&end, RESULT_BYTES * n);
    at.scratch = section(&end, scratch_bytes);
    at.device_bytes = end;
}

} // namespace

std::vector<std::pair<int64_t, int64_t>> split_chunks(const warpdp_seedext_pairs *pairs, int64_t chunk_pairs,
                                                      int64_t chunk_bytes)
{
    const int64_t n = pairs->n_pairs;
    const int64_t *qo = pairs->query_offsets, *to = pairs->target_offsets;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    double scale = 1.0 / FIRST_CHUNK_DIVISOR;
    for (int64_t start = 0; start < n;) {
        const int64_t pairs_now = (int64_t)((double)chunk_pairs * scale) > 1 ? (int64_t)((double)chunk_pairs * scale) : 1;
        const int64_t bytes_now = (int64_t)((double)chunk_bytes * scale) > 1 ? (int64_t)((double)chunk_bytes * scale) : 1;
        const int64_t last = start + pairs_now < n ? start + pairs_now : n;
        const int64_t limit = qo[start] + to[start] + bytes_now;
        /* The last stop in start+1..last whose pairs hold at most bytes_now bytes (at least one pair). */
        int64_t lo = start + 1, hi = last + 1; /* the first k in lo..last with more bytes, or last + 1 */
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (qo[mid] + to[mid] <= limit)
                lo = mid + 1;
            else
                hi = mid;
        }
        const int64_t stop = lo - 1 > start ? lo - 1 : start + 1;
        chunks.emplace_back(start, stop);
        start = stop;
        scale = scale * CHUNK_GROWTH < 1.0 ? scale * CHUNK_GROWTH : 1.0;
    }
    return chunks;
}

int plan_chunk(const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params, int64_t start, int64_t stop,
               const PlanDevice &device, ChunkPlan *plan)
{
    const int64_t n = stop - start;
    plan->start = start;
    plan->stop = stop;
    plan->n = n;
    plan->q0 = pairs->query_offsets[start];
    plan->q1 = pairs->query_offsets[stop];
    plan->t0 = pairs->target_offsets[start];
    plan->t1 = pairs->target_offsets[stop];
    std::vector<uint16_t> key((size_t)n);
    std::vector<int32_t> qlen((size_t)n);
    sort_keys(pairs, params, start, n, key.data(), qlen.data());
    plan->order.resize((size_t)n);
    std::vector<int64_t> counts;
    stable_order(key.data(), n, plan->order.data(), counts);
    plan->launches.clear();
    WD_TRY(plan_launches(qlen.data(), counts, device, plan));
    plan_layout(plan);
    return WARPDP_OK;
}

} // namespace seedext_gpu
