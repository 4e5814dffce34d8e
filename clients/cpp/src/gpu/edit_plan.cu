/* The chunk plans of warpdp_edit on a GPU handle (edit_plan.h): edit.py's ChunkPlan in C++. */
#include <algorithm>
#include <string.h>
#include "edit_plan.h"

namespace wd_edit {

namespace {

constexpr size_t ALIGN = 256;  // sections start on this boundary (runtime/slots.py)

size_t round_up(size_t value)
{
    return (value + ALIGN - 1) / ALIGN * ALIGN;
}

int64_t blocks_of(int64_t m)
{
    return (m + 63) / 64;
}

// Scratch words of one exact thread: the match masks of each symbol (and 0), pv, mv, bottom.
int64_t slot_words(int64_t m, int alphabet)
{
    return (alphabet + 4) * blocks_of(m);
}

// Scratch words of one lane of the warp kernel: its blocks' match masks, pv and mv.
int64_t lane_words(int64_t m, int alphabet)
{
    return (alphabet + 3) * ((blocks_of(m) + 31) / 32);
}

// Scratch bytes of one exact thread or warp: words, two rows of int32, reversed copies.
int64_t slot_bytes(int64_t m, int64_t n, int alphabet)
{
    return 8 * std::max(slot_words(m, alphabet), 32 * lane_words(m, alphabet)) + 8 * (n + 1) + (m + n + 8);
}

// Indices of size sorted longest first, ties in index order (a counting sort: sizes are lengths).
std::vector<int32_t> longest_first(const std::vector<int64_t> &size)
{
    std::vector<int32_t> order(size.size());
    int64_t top = 0;
    for (int64_t s : size)
        top = std::max(top, s);
    if (top < (int64_t)1 << 20) {
        std::vector<int64_t> first(top + 2, 0);  // by key top - size
        for (int64_t s : size)
            first[top - s + 1]++;
        for (int64_t key = 1; key <= top + 1; key++)
            first[key] += first[key - 1];
        for (size_t i = 0; i < size.size(); i++)
            order[first[top - size[i]]++] = (int32_t)i;
        return order;
    }
    for (size_t i = 0; i < size.size(); i++)
        order[i] = (int32_t)i;
    std::stable_sort(order.begin(), order.end(), [&size](int32_t a, int32_t b) { return size[a] > size[b]; });
    return order;
}

// Lays out the sections given as (section, bytes) from `start`, each at least 1 byte; returns the end.
size_t lay_out(size_t *at, const std::vector<std::pair<Section, size_t>> &sizes, size_t start)
{
    size_t offset = start;
    for (const auto &section : sizes) {
        at[section.first] = offset;
        offset = round_up(offset + std::max<size_t>(section.second, 1));
    }
    return offset;
}

void plan_windowed(ChunkPlan &plan, const int64_t *m, const warpdp_edit_params *params)
{
    plan.order = longest_first(std::vector<int64_t>(m, m + plan.n));
    const int rows = params->window - params->overlap + 1;
    const int64_t threads_needed = (plan.n + THREADS - 1) / THREADS * THREADS;
    for (int tier = 0; tier < N_TIERS; tier++) {
        const int64_t slots = std::min(TIER_SLOTS[tier], threads_needed);
        const bool last = tier == N_TIERS - 1;
        const Launch launch = {(Kernel)(WINDOWED_8 + tier), (int)(slots / THREADS), slots,
                               tier == 0 ? S_ORDER : tier == 1 ? S_LIST1 : S_LIST2, 0, tier,
                               last ? S_PARAMS : tier == 0 ? S_LIST1 : S_LIST2,
                               (int64_t)rows * (WINDOW_TIERS[tier] + 1), 0, 0, 0, rows, tier > 0};
        plan.launches.push_back(launch);
    }
    plan.counts = {(int32_t)plan.n, 0, 0};
}

// The launch of order[a:b]: a warp per pair when the longest query passes WARP_MIN_QUERY, else a
// thread; as many as the scratch budget holds, up to MAX_EXACT_SLOTS threads.
Launch exact_launch(const ChunkPlan &plan, const int64_t *m, const int64_t *n, int64_t a, int64_t b, int counter,
                    int64_t scratch_budget)
{
    int64_t mmax = 0, nmax = 0;
    for (int64_t i = a; i < b; i++) {
        mmax = std::max(mmax, m[plan.order[i]]);
        nmax = std::max(nmax, n[plan.order[i]]);
    }
    const int64_t per_slot = slot_bytes(mmax, nmax, plan.alphabet);
    const bool warp = mmax > WARP_MIN_QUERY;
    const int64_t lanes = warp ? 32 : 1;
    const int64_t fit = std::max<int64_t>(THREADS, scratch_budget / per_slot * lanes / THREADS * THREADS);
    const int64_t threads = std::min({((b - a) * lanes + THREADS - 1) / THREADS * THREADS, MAX_EXACT_SLOTS, fit});
    const int64_t words = lane_words(mmax, plan.alphabet);
    const Launch launch = {warp ? EXACT_WARP : EXACT, (int)(threads / THREADS), threads / lanes, S_ORDER, a, counter,
                           S_PARAMS, warp ? 32 * words : slot_words(mmax, plan.alphabet), 2 * (nmax + 1),
                           (mmax + nmax + 8) / 8 * 8, warp ? words : 0, 0, 0};
    return launch;
}

void plan_exact(ChunkPlan &plan, const warpdp_seq_pairs *pairs, const int64_t *m, const int64_t *n,
                int64_t scratch_budget)
{
    std::vector<bool> present(256, false);
    for (int64_t i = plan.q0; i < plan.q1; i++)
        present[pairs->query_bases[i]] = true;
    for (int byte = 0; byte < 256; byte++)
        if (present[byte])
            plan.symbols[byte] = (uint16_t)++plan.alphabet;
    std::vector<int64_t> gpu, size;
    for (int64_t i = 0, s = 0; i < plan.n; i++) {
        if (s < (int64_t)plan.skip.size() && plan.skip[s] == i) {
            s++;
            continue;
        }
        gpu.push_back(i);
        size.push_back(m[i] + n[i]);
    }
    const std::vector<int32_t> sorted_here = longest_first(size);
    plan.order.resize(gpu.size());
    std::vector<int64_t> sorted_size(gpu.size());
    for (size_t i = 0; i < gpu.size(); i++) {
        plan.order[i] = (int32_t)gpu[sorted_here[i]];
        sorted_size[i] = size[sorted_here[i]];
    }
    // Groups of lengths within a factor of two: runs whose sizes are above half the run's first.
    for (int64_t a = 0; a < (int64_t)gpu.size();) {
        int64_t b = a + 1;
        while (b < (int64_t)gpu.size() && sorted_size[b] > sorted_size[a] / 2)
            b++;
        plan.launches.push_back(exact_launch(plan, m, n, a, b, (int)plan.counts.size(), scratch_budget));
        plan.counts.push_back((int32_t)(b - a));
        a = b;
    }
    if (plan.counts.empty())
        plan.counts.push_back(0);
}

void lay_out_chunk(ChunkPlan &plan, size_t params_bytes)
{
    plan.blob_bytes = lay_out(plan.at, {{S_PARAMS, params_bytes * std::max<size_t>(1, plan.launches.size())},
                                        {S_COUNTS, 4 * plan.counts.size()}, {S_SYMBOLS, 512},
                                        {S_QUERY, (size_t)(plan.q1 - plan.q0)}, {S_TARGET, (size_t)(plan.t1 - plan.t0)},
                                        {S_QOFF, 8 * (size_t)(plan.n + 1)}, {S_TOFF, 8 * (size_t)(plan.n + 1)},
                                        {S_ORDER, 4 * plan.order.size()}}, 0);
    int64_t words = 0, ints = 0, bytes = 0;
    for (const Launch &launch : plan.launches) {
        words = std::max(words, launch.slots * launch.words_per_slot);
        ints = std::max(ints, launch.slots * launch.ints_per_slot);
        bytes = std::max(bytes, launch.slots * launch.bytes_per_slot);
    }
    const size_t n = (size_t)plan.n;
    std::vector<std::pair<Section, size_t>> sizes = {
        {S_OUT, 8 * OUT_COLUMNS * n}, {S_LOC_BEGIN, 8 * (size_t)plan.loc_room}, {S_LOC_END, 8 * (size_t)plan.loc_room},
        {S_CIGAR, 4 * (size_t)plan.cigar_room}};
    if (plan.windowed)  // the tiers' overflow lists and the pairs' resume records
        sizes.insert(sizes.end(), {{S_LIST1, 4 * n}, {S_LIST2, 4 * n}, {S_RESUME, 8 * RESUME_VALUES * n}});
    sizes.insert(sizes.end(), {{S_WORDS, 8 * (size_t)words}, {S_INTS, 4 * (size_t)ints}, {S_BYTES, (size_t)bytes}});
    plan.device_bytes = lay_out(plan.at, sizes, plan.blob_bytes);
    plan.head_bytes = plan.at[S_CIGAR] - plan.at[S_OUT];
}

}  // namespace

bool cpu_fallback(int64_t m, int64_t n)
{
    const int64_t most = m > WARP_MIN_QUERY ? 32 * GPU_MAX_BLOCK_CELLS : GPU_MAX_BLOCK_CELLS;
    return blocks_of(m) * n > most || slot_bytes(m, n, 256) > MAX_SLOT_BYTES;
}

int64_t chunk_stop(const warpdp_seq_pairs *pairs, int64_t start)
{
    const int64_t *qo = pairs->query_offsets, *to = pairs->target_offsets;
    const int64_t limit = qo[start] + to[start] + CHUNK_BASES;
    int64_t low = start, high = pairs->n_pairs;  // the last pair index i with bases before it <= limit
    while (low < high) {
        const int64_t mid = high - (high - low) / 2;
        if (qo[mid] + to[mid] <= limit)
            low = mid;
        else
            high = mid - 1;
    }
    return std::max(start + 1, std::min({low, start + CHUNK_PAIRS, pairs->n_pairs}));
}

void plan_chunk(ChunkPlan &plan, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params, int64_t start,
                int64_t stop, int64_t scratch_budget, size_t params_bytes)
{
    const int64_t *qo = pairs->query_offsets, *to = pairs->target_offsets;
    plan.start = start, plan.stop = stop, plan.n = stop - start;
    plan.q0 = qo[start], plan.q1 = qo[stop], plan.t0 = to[start], plan.t1 = to[stop];
    plan.windowed = params->method == WARPDP_EDIT_WINDOWED;
    plan.want_locations = params->task != WARPDP_EDIT_DISTANCE;
    plan.want_cigar = params->task == WARPDP_EDIT_PATH;
    plan.one_location = plan.windowed || params->mode == WARPDP_EDIT_NW;
    plan.alphabet = 0;
    memset(plan.symbols, 0, sizeof plan.symbols);
    plan.skip.clear(), plan.order.clear(), plan.counts.clear(), plan.launches.clear();
    std::vector<int64_t> m(plan.n), n(plan.n);
    for (int64_t i = 0; i < plan.n; i++) {
        m[i] = qo[start + i + 1] - qo[start + i];
        n[i] = to[start + i + 1] - to[start + i];
        if (!plan.windowed && cpu_fallback(m[i], n[i]))
            plan.skip.push_back(i);
    }
    if (plan.windowed)
        plan_windowed(plan, m.data(), params);
    else
        plan_exact(plan, pairs, m.data(), n.data(), scratch_budget);
    plan.loc_room = !plan.want_locations ? 0 : plan.one_location ? plan.n : plan.t1 - plan.t0 + plan.n;
    plan.cigar_room = plan.want_cigar ? plan.q1 - plan.q0 + plan.t1 - plan.t0 : 0;
    lay_out_chunk(plan, params_bytes);
}

}  // namespace wd_edit
