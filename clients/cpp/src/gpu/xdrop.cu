/* warpdp_xdrop on a GPU handle: the kernels of warpdp/kernels/xdrop.cu (the Python package's GPU
   backend, included as they are) launched as warpdp/kernels/xdrop.py launches them. Each pair is
   two work items (its left and right extensions); per chunk of pairs, xdrop_plan.cu bins the
   items by kernel and flank length, and here the chunk is copied into a pinned upload buffer
   (sequences, offsets, seeds, the order of the items, a Params row per launch), uploaded and
   checked for bytes other than ACGTN on the GPU, extended by one launch per bin, and its results
   copied back. Two chunks are in flight on two streams, so the host prepares one while the GPU
   computes the other. A call's buffers (two slots: a stream, pinned and device memory) are kept
   for the next call on the same device, as the Python launcher's runners keep theirs. */
#include <string.h>
#include <map>
#include <memory>
#include <mutex>
#include <new>

#include "gpu.h"
#include "host_copy.h"
#include "xdrop_plan.h"

/* warpdp/kernels/xdrop.cu (angle brackets: not this file), in a namespace of its own: its
   namespace warpdp_xdrop would clash with the function warpdp_xdrop of warpdp.h. */
namespace wd_kernels {
#include <xdrop.cu>
}

using namespace wd_xdrop;
namespace kernels = wd_kernels::warpdp_xdrop;
using kernels::Params;

static_assert(sizeof(Params) <= PARAMS_STRIDE, "a Params row must fit its stride");

namespace {

const char *const FAMILY = "xdrop";
const int SLOTS = 2; // chunks in flight

/* One chunk in flight: its stream, buffers and plan. Buffers only grow, by a quarter more than
   asked, so that steady work allocates nothing. */
struct Slot {
    int device = -1;
    PinnedArray<uint8_t> upload, out;
    DeviceArray<uint8_t> memory;
    Stream stream; // after the buffers: destroyed first, it waits for their work
    ChunkPlan plan;
    bool busy = false; // a chunk is enqueued and not collected yet

    int grow(const Layout &at)
    {
        const auto headroom = [](size_t n) { return n + n / 4; };
        if (upload.size() < at.upload_bytes)
            WD_TRY(upload.allocate(headroom(at.upload_bytes), FAMILY, "allocating pinned input"));
        if (out.size() < at.out_bytes)
            WD_TRY(out.allocate(headroom(at.out_bytes), FAMILY, "allocating pinned output"));
        if (memory.size() < at.device_bytes) {
            memory.release(); // first, so that the device can reuse the memory
            WD_TRY(memory.allocate(headroom(at.device_bytes), FAMILY, "allocating device memory"));
        }
        return WARPDP_OK;
    }
};

/* Idle slots per device, kept between calls (never freed: the process's end frees them). */
class SlotPool {
  public:
    /* An idle slot of the current device, else a new one. */
    int take(int device, std::unique_ptr<Slot> &slot)
    {
        {
            std::lock_guard<std::mutex> hold(lock_);
            for (auto it = idle_.begin(); it != idle_.end(); ++it) {
                if ((*it)->device == device) {
                    slot = std::move(*it);
                    idle_.erase(it);
                    return WARPDP_OK;
                }
            }
        }
        slot.reset(new Slot);
        slot->device = device;
        return slot->stream.create(FAMILY);
    }
    /* Keeps an idle slot (SLOTS per device at most; others are freed). */
    void give(std::unique_ptr<Slot> slot)
    {
        std::lock_guard<std::mutex> hold(lock_);
        int kept = 0;
        for (const auto &s : idle_)
            kept += s->device == slot->device;
        if (kept < SLOTS)
            idle_.push_back(std::move(slot));
    }

  private:
    std::mutex lock_;
    std::vector<std::unique_ptr<Slot>> idle_;
};

SlotPool &slot_pool()
{
    static SlotPool *const pool = new SlotPool; // not destroyed at exit, after CUDA's own teardown
    return *pool;
}

/* Blocks of each kernel the device holds at once (xdrop.py's _resident_blocks). */
int residency(const wd_gpu *gpu, Residency &r, std::map<size_t, int64_t> &shared_cache)
{
    WD_CUDA_TRY(FAMILY, "allowing extend_shared_kernel its shared memory",
                cudaFuncSetAttribute(kernels::extend_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(shared_bytes_max())));
    int blocks = 0;
    WD_CUDA_TRY(FAMILY, "querying occupancy",
                cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernels::extend_kernel<int>,
                                                              THREADS_PER_BLOCK, 0));
    r.narrow_warps = int64_t(std::max(blocks, 1)) * gpu->sm_count * WARPS_PER_BLOCK;
    const void *const wide[N_WIDE] = {(const void *)kernels::extend_wide_kernel<2, 16, 8>,
                                      (const void *)kernels::extend_wide_kernel<4, 16, 4>,
                                      (const void *)kernels::extend_wide_kernel<8, 16, 2>};
    for (int row = 0; row < N_WIDE; row++) {
        WD_CUDA_TRY(FAMILY, "querying occupancy",
                    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, wide[row], 32 * WIDE_CONFIGS[row].w, 0));
        r.wide_blocks[row] = int64_t(std::max(blocks, 1)) * gpu->sm_count;
    }
    const int sm_count = gpu->sm_count;
    r.shared_blocks = [&shared_cache, sm_count](size_t bytes) {
        auto found = shared_cache.find(bytes);
        if (found != shared_cache.end())
            return found->second;
        int per_sm = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernels::extend_shared_kernel, 32, bytes) !=
            cudaSuccess) {
            (void)cudaGetLastError(); // not left for the next launch's check
            per_sm = 1;               // an estimate only sizes the grid
        }
        const int64_t resident = int64_t(std::max(per_sm, 1)) * sm_count;
        shared_cache[bytes] = resident;
        return resident;
    };
    return WARPDP_OK;
}

/* Writes the chunk's upload into the slot's pinned buffer, its addresses those of `base` on the device. */
void fill(Slot &slot, const warpdp_xdrop_pairs &pairs, const Scores &scores)
{
    const ChunkPlan &plan = slot.plan;
    const Layout &at = plan.at;
    uint8_t *const blob = slot.upload.get(), *const base = slot.memory.get();
    const size_t n = size_t(plan.n), s = size_t(plan.start);
    memset(blob + at.counters, 0, 4 * std::max<size_t>(1, plan.launches.size()));
    wd_copy_parallel({{blob + at.h_bases, pairs.h_bases + plan.h0, size_t(plan.h1 - plan.h0)},
                      {blob + at.v_bases, pairs.v_bases + plan.v0, size_t(plan.v1 - plan.v0)},
                      {blob + at.h_pos, pairs.h_pos + s, 8 * n},
                      {blob + at.v_pos, pairs.v_pos + s, 8 * n},
                      {blob + at.order, plan.order.data(), 4 * 2 * n}});
    int64_t *const h_offsets = reinterpret_cast<int64_t *>(blob + at.h_offsets);
    int64_t *const v_offsets = reinterpret_cast<int64_t *>(blob + at.v_offsets);
    for (size_t i = 0; i <= n; i++) {
        h_offsets[i] = pairs.h_offsets[s + i] - plan.h0;
        v_offsets[i] = pairs.v_offsets[s + i] - plan.v0;
    }
    for (const Launch &launch : plan.launches) {
        Params p;
        memset(&p, 0, sizeof p);
        p.h_bases = base + at.h_bases;
        p.v_bases = base + at.v_bases;
        p.h_offsets = reinterpret_cast<const long long *>(base + at.h_offsets);
        p.v_offsets = reinterpret_cast<const long long *>(base + at.v_offsets);
        p.h_pos = reinterpret_cast<const long long *>(base + at.h_pos);
        p.v_pos = reinterpret_cast<const long long *>(base + at.v_pos);
        p.order = reinterpret_cast<const int *>(base + at.order) + launch.first;
        p.counter = reinterpret_cast<int *>(base + at.counters) + launch.index;
        p.out = reinterpret_cast<long long *>(base + at.out + ALIGN); // after the bad-base flag
        p.scratch = base + at.scratch;
        p.stride = launch.stride;
        p.k = scores.k;
        p.match = scores.match;
        p.mismatch = scores.mismatch;
        p.gap = scores.gap;
        p.x = scores.x;
        p.n_items = int(launch.count);
        p.best_mode = scores.best;
        memcpy(blob + at.params + PARAMS_STRIDE * size_t(launch.index), &p, sizeof p);
    }
}

int launch_one(const Launch &launch, const Params *params, cudaStream_t stream)
{
    const unsigned grid = unsigned(launch.grid), threads = unsigned(launch.threads);
    switch (launch.kernel) {
    case Kernel::narrow_int32:
        kernels::extend_kernel<int><<<grid, threads, 0, stream>>>(params);
        return wd_cuda_launched(FAMILY, "extend_kernel<int>");
    case Kernel::narrow_int64:
        kernels::extend_kernel<long long><<<grid, threads, 0, stream>>>(params);
        return wd_cuda_launched(FAMILY, "extend_kernel<long long>");
    case Kernel::shared:
        kernels::extend_shared_kernel<<<grid, threads, launch.shared_bytes, stream>>>(params);
        return wd_cuda_launched(FAMILY, "extend_shared_kernel");
    case Kernel::wide:
        break;
    }
    switch (launch.wide_row) { // WIDE_CONFIGS
    case 0:
        kernels::extend_wide_kernel<2, 16, 8><<<grid, threads, 0, stream>>>(params);
        break;
    case 1:
        kernels::extend_wide_kernel<4, 16, 4><<<grid, threads, 0, stream>>>(params);
        break;
    default:
        kernels::extend_wide_kernel<8, 16, 2><<<grid, threads, 0, stream>>>(params);
        break;
    }
    return wd_cuda_launched(FAMILY, "extend_wide_kernel");
}

/* Upload, base check, the launches and the copy back, on the slot's stream. */
int enqueue(Slot &slot, const wd_gpu *gpu)
{
    const Layout &at = slot.plan.at;
    const cudaStream_t stream = slot.stream.get();
    uint8_t *const base = slot.memory.get();
    WD_CUDA_TRY(FAMILY, "uploading a chunk",
                cudaMemcpyAsync(base, slot.upload.get(), at.upload_bytes, cudaMemcpyHostToDevice, stream));
    WD_CUDA_TRY(FAMILY, "clearing the bad-base flag", cudaMemsetAsync(base + at.out, 0, 4, stream));
    int *const flag = reinterpret_cast<int *>(base + at.out);
    const std::pair<size_t, int64_t> sequences[2] = {{at.h_bases, slot.plan.h1 - slot.plan.h0},
                                                     {at.v_bases, slot.plan.v1 - slot.plan.v0}};
    for (const auto &sequence : sequences) {
        if (sequence.second == 0)
            continue;
        const int64_t blocks = (sequence.second + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK;
        const unsigned grid = unsigned(std::min<int64_t>(4 * int64_t(gpu->sm_count), blocks));
        kernels::check_bases<<<grid, THREADS_PER_BLOCK, 0, stream>>>(base + sequence.first, sequence.second, flag);
        WD_TRY(wd_cuda_launched(FAMILY, "check_bases"));
    }
    for (const Launch &launch : slot.plan.launches) {
        const Params *params =
            reinterpret_cast<const Params *>(base + at.params + PARAMS_STRIDE * size_t(launch.index));
        WD_TRY(launch_one(launch, params, stream));
    }
    WD_CUDA_TRY(FAMILY, "copying results back",
                cudaMemcpyAsync(slot.out.get(), base + at.out, at.out_bytes, cudaMemcpyDeviceToHost, stream));
    slot.busy = true;
    return WARPDP_OK;
}

/* Waits for the slot's chunk and combines each pair's two extensions into the results; *bad is
   set when the chunk has a byte other than ACGTN (its results are then left as they are). */
int collect(Slot &slot, const warpdp_xdrop_pairs &pairs, const Scores &scores, const warpdp_xdrop_results &results,
            bool *bad)
{
    slot.busy = false;
    WD_TRY(slot.stream.wait(FAMILY, "extending a chunk"));
    const ChunkPlan &plan = slot.plan;
    int flag;
    memcpy(&flag, slot.out.get(), sizeof flag);
    if (flag != 0) {
        *bad = true;
        return WARPDP_OK;
    }
    const int64_t *const table = reinterpret_cast<const int64_t *>(slot.out.get() + ALIGN);
    for (int64_t i = 0; i < plan.n; i++) {
        const int64_t *left = table + 8 * i, *right = left + 4; // score, ext_v, ext_h, cells
        const int64_t pair = plan.start + i, h_pos = pairs.h_pos[pair], v_pos = pairs.v_pos[pair];
        results.score[pair] = left[0] + right[0] + scores.k * scores.match;
        results.begin_h[pair] = h_pos - left[2];
        results.end_h[pair] = h_pos + scores.k + right[2];
        results.begin_v[pair] = v_pos - left[1];
        results.end_v[pair] = v_pos + scores.k + right[1];
        if (results.cells != NULL)
            results.cells[pair] = left[3] + right[3];
    }
    return WARPDP_OK;
}

/* The chunk limits for this call: xdrop.py's, or less where the device's budget is smaller (each
   slot plans on half of it: a quarter each for sequences, per-pair arrays and scratch). */
void chunk_limits(const wd_gpu *gpu, int64_t *chunk_pairs, int64_t *chunk_bytes, int64_t *scratch_limit)
{
    const int64_t quarter = int64_t(wd_gpu_budget(gpu) / (2 * 4));
    *chunk_bytes = std::max<int64_t>(1 << 20, std::min(CHUNK_BYTES, quarter));
    *chunk_pairs = std::max<int64_t>(1 << 10, std::min(CHUNK_PAIRS, quarter / 128)); // ~112 bytes per pair
    *scratch_limit = std::max<int64_t>(1 << 20, std::min(SCRATCH_BYTES, quarter));
}

/* Every chunk through the two slots; *bad_chunk: the first chunk found with a non-base byte (its
   first pair), after which no further chunk is started. */
int run_chunks(const wd_gpu *gpu, Slot *const *slots, const warpdp_xdrop_pairs &pairs, const Scores &scores,
               const warpdp_xdrop_results &results, int64_t *bad_from, int64_t *bad_to)
{
    std::map<size_t, int64_t> shared_cache;
    Residency resident;
    WD_TRY(residency(gpu, resident, shared_cache));
    int64_t chunk_pairs, chunk_bytes, scratch_limit;
    chunk_limits(gpu, &chunk_pairs, &chunk_bytes, &scratch_limit);
    const auto chunks = split_chunks(pairs, chunk_pairs, chunk_bytes);
    bool bad = false;
    const auto finish = [&](Slot &slot) -> int {
        bool this_bad = false;
        WD_TRY(collect(slot, pairs, scores, results, &this_bad));
        if (this_bad && (!bad || slot.plan.start < *bad_from)) {
            *bad_from = slot.plan.start;
            *bad_to = slot.plan.stop;
        }
        bad = bad || this_bad;
        return WARPDP_OK;
    };
    for (size_t c = 0; c < chunks.size() && !bad; c++) {
        ChunkPlan plan; // planned while the GPU still works on the slot's previous chunk
        plan_chunk(pairs, chunks[c].first, chunks[c].second, scores, resident, scratch_limit, plan);
        Slot &slot = *slots[c % SLOTS];
        if (slot.busy)
            WD_TRY(finish(slot));
        if (bad)
            break;
        slot.plan = std::move(plan);
        WD_TRY(slot.grow(slot.plan.at));
        fill(slot, pairs, scores);
        WD_TRY(enqueue(slot, gpu));
    }
    for (size_t c = chunks.size(); c < chunks.size() + SLOTS; c++) // the older chunk first
        if (slots[c % SLOTS]->busy)
            WD_TRY(finish(*slots[c % SLOTS]));
    return WARPDP_OK;
}

} // namespace

static int xdrop_on_gpu(wd_gpu *gpu, const warpdp_xdrop_pairs *pairs, const warpdp_xdrop_params *params,
                        const warpdp_xdrop_results *results)
{
    if (pairs->n_pairs == 0)
        return wd_ok();
    WD_TRY(wd_gpu_enter(gpu, FAMILY));
    const Scores scores = {params->k, params->match, params->mismatch, params->gap, params->x,
                           params->report == WARPDP_XDROP_REPORT_BEST};
    std::unique_ptr<Slot> slots[SLOTS];
    int status = WARPDP_OK;
    int64_t bad_from = -1, bad_to = -1;
    try {
        for (int i = 0; i < SLOTS && status == WARPDP_OK; i++)
            status = slot_pool().take(gpu->device, slots[i]);
        if (status == WARPDP_OK) {
            Slot *const raw[SLOTS] = {slots[0].get(), slots[1].get()};
            status = run_chunks(gpu, raw, *pairs, scores, *results, &bad_from, &bad_to);
        }
    } catch (const std::bad_alloc &) {
        status = wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp xdrop (GPU): out of host memory planning a chunk");
    }
    for (std::unique_ptr<Slot> &slot : slots) {
        if (slot == nullptr)
            continue;
        // After a failure the slot's stream may hold work (or an error): it is freed, not kept.
        if (status == WARPDP_OK && !slot->busy)
            slot_pool().give(std::move(slot));
        slot.reset();
    }
    if (status != WARPDP_OK)
        return status;
    if (bad_from >= 0) {
        const int64_t pair = first_bad_pair(*pairs, bad_from, bad_to);
        if (pair < 0)
            return wd_fail(WARPDP_ERR_INTERNAL,
                           "warpdp xdrop (GPU): the GPU found a byte other than ACGTN in pairs %lld..%lld, the host none",
                           (long long)bad_from, (long long)bad_to - 1);
        return wd_xdrop_bad_base(pair);
    }
    return wd_ok();
}

int wd_gpu_xdrop(wd_gpu *gpu, const warpdp_xdrop_pairs *pairs, const warpdp_xdrop_params *params,
                 const warpdp_xdrop_results *results)
{
    return wd_gpu_call(FAMILY, [&] { return xdrop_on_gpu(gpu, pairs, params, results); });
}
