/* The Pair-HMM GPU launcher's host-side plan: warpdp/kernels/pairhmm_plan.py's split_work,
   item_limits and _ChunkPlan, step for step, so that a GPU handle cuts and lays out its input
   as the Python package's GPU backend does. Host code only (no kernels here). */
#include <math.h>
#include <string.h>
#include <algorithm>
#include "pairhmm_plan.h"
#include "host_copy.h"

namespace wd_pairhmm {

constexpr size_t ALIGN = 256;              /* device sections start on this boundary */
constexpr double FIRST_CHUNK_DIVISOR = 4;  /* the first chunk is smaller: the GPU starts sooner */
constexpr double CHUNK_GROWTH = 1.5;       /* and the next ones grow */
constexpr int64_t ITEMS_PER_SM = 512;      /* target work items per SM before runs of haplotypes are split */
constexpr int64_t MAX_ITEM_STREAM = 16384; /* columns of one item (bounds the MULTI scratch per subwarp) */
/* The item latency model of pairhmm_plan.py (constants fitted on an H200). */
constexpr double SECONDS_PER_COLUMN = 0.3e-6;
constexpr double EXPECTED_CELLS_PER_SECOND = 2e12;
constexpr double ITEM_SHARE_OF_TIME = 4.0;

static size_t round_up(size_t value, size_t step) { return (value + step - 1) / step * step; }

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* np.searchsorted(values, x, side="right"): how many of the (non-decreasing) values are <= x. */
template <typename T> static int64_t count_at_most(const std::vector<T> &values, T x)
{
    return std::upper_bound(values.begin(), values.end(), x) - values.begin();
}

InputStats input_stats(const warpdp_pairhmm_batches *b)
{
    InputStats s = {0.0, 1, 1.0};
    const int64_t *ro = b->read_offsets, *ho = b->hap_offsets;
    for (int64_t k = 0; k < b->n_batches; k++)
        s.total_cells += (double)(ro[b->batch_reads[k + 1]] - ro[b->batch_reads[k]]) *
                         (double)(ho[b->batch_haps[k + 1]] - ho[b->batch_haps[k]]);
    if (b->n_haps == 0)
        return s;
    int64_t longest = 0;
    for (int64_t h = 0; h < b->n_haps; h++)
        longest = std::max(longest, ho[h + 1] - ho[h]);
    s.longest_hap = longest;
    s.mean_hap = (double)(ho[b->n_haps] - ho[0]) / (double)b->n_haps;
    return s;
}

/* The cell limit of the next chunk: a quarter of chunk_cells first, growing by CHUNK_GROWTH. */
static int64_t cell_limit(int64_t chunk_cells, size_t n_chunks)
{
    const double grown = (double)chunk_cells / FIRST_CHUNK_DIVISOR * pow(CHUNK_GROWTH, (double)n_chunks);
    return grown >= (double)chunk_cells ? chunk_cells : std::max<int64_t>(1, (int64_t)grown);
}

/* Batch k alone is over a limit: runs of its reads. */
static void split_batch(const warpdp_pairhmm_batches *b, int64_t k, int64_t out_base, int64_t hap_bytes,
                        int64_t chunk_bytes, int64_t chunk_cells, std::vector<Chunk> &chunks)
{
    const int64_t r0 = b->batch_reads[k], r1 = b->batch_reads[k + 1];
    const int64_t h = b->batch_haps[k + 1] - b->batch_haps[k];
    std::vector<int64_t> read_cost((size_t)(r1 - r0));
    std::vector<double> read_cells((size_t)(r1 - r0));
    int64_t cost = 0;
    double cells = 0;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t len = b->read_offsets[r + 1] - b->read_offsets[r];
        read_cost[(size_t)(r - r0)] = cost += 5 * len + 72 * h + 36;
        read_cells[(size_t)(r - r0)] = cells += (double)len * (double)hap_bytes;
    }
    const int64_t room = std::max<int64_t>(1, chunk_bytes - hap_bytes - 4 * h - 256);
    for (int64_t r = 0; r < r1 - r0;) {
        const int64_t cb = r ? read_cost[(size_t)r - 1] : 0;
        const double cc = r ? read_cells[(size_t)r - 1] : 0;
        const double limit = (double)cell_limit(chunk_cells, chunks.size());
        int64_t stop = std::min(count_at_most(read_cost, cb + room), count_at_most(read_cells, cc + limit));
        stop = std::max(stop, r + 1);
        chunks.push_back({k, k + 1, false, r0 + r, r0 + stop, out_base + r * h, (stop - r) * h});
        r = stop;
    }
}

std::vector<Chunk> split_work(const warpdp_pairhmm_batches *b, int64_t chunk_bytes, int64_t chunk_cells)
{
    const int64_t n = b->n_batches;
    const int64_t *br = b->batch_reads, *bh = b->batch_haps, *ro = b->read_offsets, *ho = b->hap_offsets;
    std::vector<int64_t> cum_bytes((size_t)n), hap_bytes((size_t)n), out_base((size_t)n + 1);
    std::vector<double> cum_cells((size_t)n); /* in double: cell sums may pass int64 on absurd input */
    int64_t bytes = 0;
    double cells = 0;
    out_base[0] = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t nr = br[k + 1] - br[k], nh = bh[k + 1] - bh[k];
        const int64_t read_bytes = ro[br[k + 1]] - ro[br[k]];
        hap_bytes[(size_t)k] = ho[bh[k + 1]] - ho[bh[k]];
        cum_bytes[(size_t)k] = bytes += 5 * read_bytes + 4 * nr + hap_bytes[(size_t)k] + 4 * nh + 72 * nr * nh + 256;
        cum_cells[(size_t)k] = cells += (double)read_bytes * (double)hap_bytes[(size_t)k];
        out_base[(size_t)k + 1] = out_base[(size_t)k] + nr * nh;
    }
    std::vector<Chunk> chunks;
    for (int64_t k = 0; k < n;) {
        const double limit = (double)cell_limit(chunk_cells, chunks.size());
        const int64_t base_b = k ? cum_bytes[(size_t)k - 1] : 0;
        const double base_c = k ? cum_cells[(size_t)k - 1] : 0;
        const int64_t stop =
            std::min(count_at_most(cum_bytes, base_b + chunk_bytes), count_at_most(cum_cells, base_c + limit));
        if (stop > k) {
            chunks.push_back({k, stop, true, 0, 0, out_base[(size_t)k], out_base[(size_t)stop] - out_base[(size_t)k]});
            k = stop;
            continue;
        }
        split_batch(b, k, out_base[(size_t)k], hap_bytes[(size_t)k], chunk_bytes, chunk_cells, chunks);
        k++;
    }
    chunks.erase(std::remove_if(chunks.begin(), chunks.end(), [](const Chunk &c) { return c.n_out <= 0; }),
                 chunks.end());
    return chunks;
}

/* item_limits of pairhmm_plan.py: haplotypes per work item, and column steps an item should take. */
static void item_limits(ChunkPlan &p, int64_t n_pairs, int64_t longest_hap, double total_cells, int sm_count)
{
    const int64_t by_count = std::max<int64_t>(1, ceil_div(n_pairs, std::max<int64_t>(1, sm_count * ITEMS_PER_SM)));
    const int64_t by_length = std::max<int64_t>(1, MAX_ITEM_STREAM / std::max<int64_t>(1, longest_hap));
    const double columns = total_cells / EXPECTED_CELLS_PER_SECOND / SECONDS_PER_COLUMN / ITEM_SHARE_OF_TIME;
    p.cap = std::min(by_count, by_length);
    p.columns = std::max(columns, (double)longest_hap);
}

/* Reads per bin: bin b takes lengths up to its max_read_len (over the bin before's), the last the rest. */
static std::vector<int64_t> reads_per_bin(const warpdp_pairhmm_batches *b, const ChunkPlan &p)
{
    std::vector<int64_t> per_bin((size_t)p.n_configs, 0);
    for (int64_t r = p.r_lo; r < p.r_hi; r++) {
        const int64_t len = b->read_offsets[r + 1] - b->read_offsets[r];
        int bin = p.n_configs - 1;
        while (bin > 0 && len <= p.config(bin - 1).max_read_len)
            bin--;
        per_bin[(size_t)bin]++;
    }
    return per_bin;
}

/* Grid of a launch: no more blocks than the bin's items fill (each read gives at most
   `most_items` items), nor than the device holds at once. */
static int launch_grid(int64_t items_bound, const KernelConfig &c, int64_t resident)
{
    const double blocks = ceil((double)items_bound / (double)c.subwarps_per_block());
    return (int)std::max<double>(1, std::min(blocks, (double)resident));
}

static void plan_launches(ChunkPlan &p, const warpdp_pairhmm_batches *b, const InputStats &stats,
                          const Occupancy &occ, int64_t max_haps, size_t &scratch_f, size_t &scratch_d)
{
    const std::vector<int64_t> per_bin = reads_per_bin(b, p);
    const int64_t most_items = std::max<int64_t>(1, max_haps);
    for (int bin = 0; bin < p.n_configs; bin++) {
        const int64_t reads = per_bin[(size_t)bin];
        if (reads == 0)
            continue;
        const KernelConfig &c = p.config(bin);
        const int grid = launch_grid(reads * most_items, c, p.use_double ? occ.double_blocks : occ.float_blocks[bin]);
        if (c.multi) {
            const int64_t stride = (int64_t)round_up((size_t)(std::min(p.cap, max_haps) * stats.longest_hap + c.lanes + 16), 4);
            const size_t size = (size_t)grid * (size_t)c.subwarps_per_block() * (size_t)stride * (size_t)c.cell_bytes();
            (c.is_double ? p.stride_d : p.stride_f) = stride;
            (c.is_double ? scratch_d : scratch_f) = size;
        }
        p.launches.push_back({c, bin, grid, reads});
    }
    /* Small bins first, the biggest last (it fills the rest of the GPU): pairhmm_plan.py's order. */
    std::stable_sort(p.launches.begin(), p.launches.end(),
                     [](const Launch &x, const Launch &y) { return x.reads < y.reads; });
    p.has_fallback = !p.use_double;
    if (p.has_fallback) {
        /* The queue's size is known only on the device: size the pass for all of it. */
        const int grid = launch_grid(p.chunk.n_out, DOUBLE_CONFIG, occ.double_blocks);
        p.stride_d = (int64_t)round_up((size_t)(stats.longest_hap + DOUBLE_CONFIG.lanes + 16), 4);
        scratch_d = (size_t)grid * (size_t)DOUBLE_CONFIG.subwarps_per_block() * (size_t)p.stride_d *
                    (size_t)DOUBLE_CONFIG.cell_bytes();
        p.fallback = {DOUBLE_CONFIG, p.n_configs, grid, 0};
    }
}

/* The sections one after another from `start`, each on an ALIGN boundary; returns the end. */
static size_t lay_out(size_t start, std::initializer_list<std::pair<size_t *, size_t>> sections)
{
    size_t off = start;
    for (const auto &s : sections) {
        *s.first = off;
        off = round_up(off + s.second, ALIGN);
    }
    return off;
}

static void lay_out_chunk(ChunkPlan &p, size_t params_bytes, size_t plan_params_bytes, size_t scratch_f,
                          size_t scratch_d)
{
    Layout &at = p.at;
    const size_t nb = (size_t)p.n_batches + 1;
    p.read_plane = (int64_t)round_up((size_t)std::max<int64_t>(p.read_bytes, 1), 16);
    at.blob_bytes = lay_out(0, {{&at.params, (size_t)p.n_params() * params_bytes},
                                {&at.plan, plan_params_bytes},
                                {&at.counters, (size_t)N_COUNTERS * 4},
                                {&at.read_offsets, ((size_t)p.n_reads + 1) * 4},
                                {&at.batch_reads, nb * 4},
                                {&at.batch_haps, nb * 4},
                                {&at.pair_base, nb * 4},
                                {&at.hap_starts, ((size_t)p.n_haps + 2) * 4},
                                {&at.reads, 5 * (size_t)p.read_plane},
                                {&at.codes, (size_t)p.code_bytes + CODE_PAD}});
    const size_t n_out = (size_t)p.chunk.n_out;
    at.device_bytes = lay_out(at.blob_bytes, {{&at.items, n_out * ITEM_BYTES},
                                              {&at.out, n_out * 8},
                                              {&at.fb_items, (p.use_double ? 0 : n_out) * ITEM_BYTES},
                                              {&at.scratch_f, scratch_f},
                                              {&at.scratch_d, scratch_d}});
}

ChunkPlan plan_chunk(const warpdp_pairhmm_batches *b, const Chunk &chunk, bool use_double, const InputStats &stats,
                     const Occupancy &occ, size_t params_bytes, size_t plan_params_bytes)
{
    const int64_t *br = b->batch_reads, *bh = b->batch_haps, *ro = b->read_offsets, *ho = b->hap_offsets;
    ChunkPlan p = {};
    p.chunk = chunk;
    p.use_double = use_double;
    p.r_lo = chunk.whole ? br[chunk.b0] : chunk.r_lo;
    p.r_hi = chunk.whole ? br[chunk.b1] : chunk.r_hi;
    p.h_lo = bh[chunk.b0];
    p.h_hi = bh[chunk.b1];
    p.n_reads = p.r_hi - p.r_lo;
    p.n_haps = p.h_hi - p.h_lo;
    p.n_batches = chunk.b1 - chunk.b0;
    p.read_bytes = ro[p.r_hi] - ro[p.r_lo];
    p.code_bytes = ho[p.h_hi] - ho[p.h_lo];
    int64_t max_haps = 0;
    double chunk_cells = 0;
    for (int64_t k = chunk.b0; k < chunk.b1; k++) {
        max_haps = std::max(max_haps, bh[k + 1] - bh[k]);
        chunk_cells += (double)(ro[br[k + 1]] - ro[br[k]]) * (double)(ho[bh[k + 1]] - ho[bh[k]]);
    }
    if (!chunk.whole)
        chunk_cells = (double)p.read_bytes * (double)p.code_bytes;
    /* The item budget follows this chunk's expected time (what an item's latency competes with). */
    item_limits(p, chunk.n_out, stats.longest_hap, std::min(stats.total_cells, chunk_cells), occ.sm_count);
    p.mean_hap = stats.mean_hap;
    p.n_configs = use_double ? 1 : N_FLOAT_BINS;
    p.longest_item = std::min(p.cap, max_haps) * stats.longest_hap;
    size_t scratch_f = 0, scratch_d = 0;
    plan_launches(p, b, stats, occ, max_haps, scratch_f, scratch_d);
    lay_out_chunk(p, params_bytes, plan_params_bytes, scratch_f, scratch_d);
    return p;
}

void fill_inputs(const ChunkPlan &p, const warpdp_pairhmm_batches *b, uint8_t *blob)
{
    const Layout &at = p.at;
    const int64_t *br = b->batch_reads, *bh = b->batch_haps, *ro = b->read_offsets, *ho = b->hap_offsets;
    memset(blob + at.counters, 0, (size_t)N_COUNTERS * 4);
    int32_t *read_offsets = (int32_t *)(blob + at.read_offsets);
    for (int64_t r = 0; r <= p.n_reads; r++)
        read_offsets[r] = (int32_t)(ro[p.r_lo + r] - ro[p.r_lo]);
    int32_t *starts = (int32_t *)(blob + at.hap_starts);
    for (int64_t h = 0; h <= p.n_haps; h++)
        starts[h] = (int32_t)(ho[p.h_lo + h] - ho[p.h_lo]);
    starts[p.n_haps + 1] = starts[p.n_haps];
    int32_t *batch_reads = (int32_t *)(blob + at.batch_reads), *batch_haps = (int32_t *)(blob + at.batch_haps);
    int32_t *pair_base = (int32_t *)(blob + at.pair_base);
    if (p.chunk.whole) {
        const int64_t b0 = p.chunk.b0;
        pair_base[0] = 0;
        for (int64_t k = 0; k <= p.n_batches; k++) {
            batch_reads[k] = (int32_t)(br[b0 + k] - br[b0]);
            batch_haps[k] = (int32_t)(bh[b0 + k] - bh[b0]);
            if (k > 0)
                pair_base[k] = pair_base[k - 1] + (batch_reads[k] - batch_reads[k - 1]) * (batch_haps[k] - batch_haps[k - 1]);
        }
    } else {
        batch_reads[0] = batch_haps[0] = pair_base[0] = 0;
        batch_reads[1] = (int32_t)p.n_reads;
        batch_haps[1] = (int32_t)p.n_haps;
        pair_base[1] = (int32_t)p.chunk.n_out;
    }
    const uint8_t *planes[5] = {b->read_bases, b->read_quals, b->read_ins, b->read_del, b->read_gcp};
    const int64_t r0 = ro[p.r_lo];
    std::vector<wd_copy> copies;
    for (int k = 0; k < 5; k++)
        copies.push_back({blob + at.reads + (size_t)k * (size_t)p.read_plane, planes[k] + r0, (size_t)p.read_bytes});
    copies.push_back({blob + at.codes, b->hap_bases + ho[p.h_lo], (size_t)p.code_bytes});
    wd_copy_parallel(copies);
    memset(blob + at.codes + p.code_bytes, CODE_NONE, CODE_PAD);
}

} // namespace wd_pairhmm
