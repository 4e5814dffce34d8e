/* warpdp_edit on a GPU handle: the kernels of warpdp/kernels/edit.cu (the Python package's GPU
   backend), launched as warpdp/kernels/edit.py launches them. Chunks of consecutive pairs (edit_plan.cu:
   launches and layout), each uploaded from a pinned buffer on its own stream, two in flight; the
   windowed tiers follow each other on the stream through their overflow lists; the CIGARs are packed
   on the device (compact_cigars) before they come back. Exact pairs too large for the GPU kernels run
   on the CPU's per-pair body (edit_pair_scalar), as the Python launcher leaves them to the CPU
   backend. Results are written packed, chunk after chunk, into the caller's arrays. */
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string.h>
#include <vector>
#include "gpu.h"
#include "edit_plan.h"
#include "host_copy.h"
extern "C" {
#include "edit_kernel.h"
}
/* The kernels' source (warpdp/kernels/edit.cu; a quoted "edit.cu" would name this file), in a
   namespace of its own: its namespace warpdp_edit would clash with the function warpdp_edit. */
namespace edit_kernels {
#include <edit.cu>
}

namespace {

using namespace wd_edit;
namespace kernel = edit_kernels::warpdp_edit;
using kernel::Params;
using i64 = kernel::i64;  // the kernels' int64 (long long, not int64_t's long)

const char *const FAMILY = "edit";
constexpr int64_t BAD_BASE = kernel::BAD_BASE;  // the windowed kernel's distance of a pair not ACGT
constexpr int SLOTS = 2;                        // chunks in flight

/* One chunk in flight: pinned upload and head buffers, the device buffer, the packed CIGARs, the
   stream (declared last: destroyed first, it waits for the chunk's work before the memory goes). */
struct Slot {
    PinnedArray<uint8_t> in, out;
    DeviceArray<uint8_t> device, packed;
    ChunkPlan plan;
    bool busy = false;
    Stream stream;
};

/* The slots kept between calls on a device, as the Python launcher keeps its runner's: a call
   allocates only when its chunks outgrow them. The call that holds `lock` uses them, a call beside
   it makes its own. Never freed (they live as long as the process). */
struct SlotPool {
    std::mutex lock;
    Slot slots[SLOTS];
};

SlotPool &device_pool(int device)
{
    static std::mutex pools_lock;
    static auto *pools = new std::map<int, std::unique_ptr<SlotPool>>();
    const std::lock_guard<std::mutex> held(pools_lock);
    std::unique_ptr<SlotPool> &pool = (*pools)[device];
    if (!pool)
        pool.reset(new SlotPool());
    return *pool;
}

/* Leaves a call's slots idle on every return: after an error, the chunks still in flight are waited
   for and dropped, so that the next call on these slots starts clean. */
struct SlotsDone {
    Slot *slots;
    ~SlotsDone()
    {
        for (int i = 0; i < SLOTS; i++) {
            if (slots[i].busy)
                cudaStreamSynchronize(slots[i].stream.get());
            slots[i].busy = false;
        }
    }
};

// Where the packed results stand: the next location and CIGAR run, the first pair refused.
struct Written {
    int64_t locations = 0, runs = 0, bad_pair = -1;
};

// An exact pair too large for the GPU, run on the CPU's per-pair body.
struct CpuPair {
    int64_t distance = -1, t_begin = -1, t_end = -1, n_locations = 0, n_cigar = 0;
    std::vector<int64_t> loc_begin, loc_end;
    std::vector<uint32_t> cigar;
};

template <typename T> int grow(T &buffer, size_t bytes, const char *what)
{
    if (buffer.size() >= bytes)
        return WARPDP_OK;
    return buffer.allocate(bytes + bytes / 4, FAMILY, what);
}

Params launch_params(const ChunkPlan &plan, const Launch &launch, const warpdp_edit_params *p, uint8_t *base)
{
    Params params;
    memset(&params, 0, sizeof params);
    const size_t *at = plan.at;
    params.query = base + at[S_QUERY];
    params.target = base + at[S_TARGET];
    params.query_offsets = (const i64 *)(base + at[S_QOFF]);
    params.target_offsets = (const i64 *)(base + at[S_TOFF]);
    params.order = (const int *)(base + at[launch.order]) + launch.order_from;
    params.count = (const int *)(base + at[S_COUNTS]) + launch.count;
    if (launch.overflow != S_PARAMS) {
        params.overflow = (int *)(base + at[launch.overflow]);
        params.overflow_count = (int *)(base + at[S_COUNTS]) + launch.count + 1;
    }
    params.symbols = (const unsigned short *)(base + at[S_SYMBOLS]);
    params.out = (i64 *)(base + at[S_OUT]);
    if (plan.want_locations) {
        params.loc_begin = (i64 *)(base + at[S_LOC_BEGIN]);
        params.loc_end = (i64 *)(base + at[S_LOC_END]);
    }
    if (plan.want_cigar)
        params.cigar = (uint32_t *)(base + at[S_CIGAR]);
    params.words = (unsigned long long *)(base + at[S_WORDS]);
    params.ints = (int *)(base + at[S_INTS]);
    params.bytes = base + at[S_BYTES];
    params.resume = plan.windowed ? (i64 *)(base + at[S_RESUME]) : nullptr;
    params.k = p->k;
    params.words_per_lane = launch.words_per_lane;
    params.ints_per_slot = launch.ints_per_slot;
    params.bytes_per_slot = launch.bytes_per_slot;
    params.n_chunk = (int)plan.n;
    params.slots = (int)launch.slots;
    params.alphabet = plan.alphabet;
    params.mode = p->mode;
    params.task = p->task;
    params.window = p->window;
    params.overlap = p->overlap;
    params.trace_rows = launch.trace_rows;
    params.resume_in = launch.resume_in;
    return params;
}

// The upload of the chunk into the slot's pinned buffer (its device copy at slot.device).
void fill(Slot &slot, const warpdp_seq_pairs *pairs, const warpdp_edit_params *p)
{
    const ChunkPlan &plan = slot.plan;
    uint8_t *blob = slot.in.get();
    const size_t *at = plan.at;
    memcpy(blob + at[S_COUNTS], plan.counts.data(), 4 * plan.counts.size());
    memcpy(blob + at[S_SYMBOLS], plan.symbols, sizeof plan.symbols);
    wd_copy_parallel({{blob + at[S_QUERY], pairs->query_bases + plan.q0, (size_t)(plan.q1 - plan.q0)},
                      {blob + at[S_TARGET], pairs->target_bases + plan.t0, (size_t)(plan.t1 - plan.t0)}});
    int64_t *qoff = (int64_t *)(blob + at[S_QOFF]), *toff = (int64_t *)(blob + at[S_TOFF]);
    for (int64_t i = 0; i <= plan.n; i++) {
        qoff[i] = pairs->query_offsets[plan.start + i] - plan.q0;
        toff[i] = pairs->target_offsets[plan.start + i] - plan.t0;
    }
    memcpy(blob + at[S_ORDER], plan.order.data(), 4 * plan.order.size());
    for (size_t i = 0; i < plan.launches.size(); i++) {
        const Params params = launch_params(plan, plan.launches[i], p, slot.device.get());
        memcpy(blob + at[S_PARAMS] + i * sizeof(Params), &params, sizeof params);
    }
}

int launch(const Launch &launch, const Params *params, cudaStream_t stream)
{
    switch (launch.kernel) {
    case WINDOWED_8:
        kernel::windowed_kernel<8><<<launch.grid, THREADS, 0, stream>>>(params);
        return wd_cuda_launched(FAMILY, "windowed_kernel<8>");
    case WINDOWED_24:
        kernel::windowed_kernel<24><<<launch.grid, THREADS, 0, stream>>>(params);
        return wd_cuda_launched(FAMILY, "windowed_kernel<24>");
    case WINDOWED_64:
        kernel::windowed_kernel<64><<<launch.grid, THREADS, 0, stream>>>(params);
        return wd_cuda_launched(FAMILY, "windowed_kernel<64>");
    case EXACT:
        kernel::exact_kernel<<<launch.grid, THREADS, 0, stream>>>(params);
        return wd_cuda_launched(FAMILY, "exact_kernel");
    case EXACT_WARP:
        kernel::exact_warp_kernel<<<launch.grid, THREADS, 0, stream>>>(params);
        return wd_cuda_launched(FAMILY, "exact_warp_kernel");
    }
    return wd_fail(WARPDP_ERR_INTERNAL, "warpdp edit (GPU): unknown kernel %d", (int)launch.kernel);
}

// Upload, kernels and the copy of the result columns and locations back, on the slot's stream.
int enqueue(Slot &slot, const warpdp_seq_pairs *pairs, const warpdp_edit_params *p)
{
    const ChunkPlan &plan = slot.plan;
    WD_TRY(grow(slot.in, plan.blob_bytes, "allocating pinned input"));
    WD_TRY(grow(slot.out, plan.head_bytes, "allocating pinned output"));
    WD_TRY(grow(slot.device, plan.device_bytes, "allocating device memory"));
    fill(slot, pairs, p);
    const cudaStream_t stream = slot.stream.get();
    uint8_t *base = slot.device.get();
    WD_CUDA_TRY(FAMILY, "uploading a chunk",
                cudaMemcpyAsync(base, slot.in.get(), plan.blob_bytes, cudaMemcpyHostToDevice, stream));
    for (size_t i = 0; i < plan.launches.size(); i++)
        WD_TRY(launch(plan.launches[i], (const Params *)(base + plan.at[S_PARAMS]) + i, stream));
    WD_CUDA_TRY(FAMILY, "copying results back",
                cudaMemcpyAsync(slot.out.get(), base + plan.at[S_OUT], plan.head_bytes, cudaMemcpyDeviceToHost,
                                stream));
    return WARPDP_OK;
}

// The chunk's pairs left to the CPU, each run on the per-pair body (in chunk order).
int run_on_cpu(const ChunkPlan &plan, const warpdp_seq_pairs *pairs, const warpdp_edit_params *p,
               std::vector<CpuPair> &done)
{
    const edit_params c_params = {p->mode, p->task, p->method, p->k, p->window, p->overlap};
    done.resize(plan.skip.size());
    for (size_t s = 0; s < plan.skip.size(); s++) {
        const int64_t i = plan.start + plan.skip[s];
        const int64_t qo = pairs->query_offsets[i], to = pairs->target_offsets[i];
        const int64_t m = pairs->query_offsets[i + 1] - qo, n = pairs->target_offsets[i + 1] - to;
        CpuPair &pair = done[s];
        pair.loc_begin.resize((size_t)n + 1);
        pair.loc_end.resize((size_t)n + 1);
        pair.cigar.resize(plan.want_cigar ? (size_t)(m + n) : 1);
        if (edit_pair_scalar(pairs->query_bases + qo, m, pairs->target_bases + to, n, &c_params, &pair.distance,
                             &pair.t_begin, &pair.t_end, pair.loc_begin.data(), pair.loc_end.data(),
                             &pair.n_locations, plan.want_cigar ? pair.cigar.data() : nullptr, &pair.n_cigar) != 0)
            return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp edit: out of memory");
    }
    return WARPDP_OK;
}

// A count the kernels reported that does not fit the room the layout gave it (a kernel bug): an
// error, not a write past the caller's buffers.
int check_count(int64_t count, int64_t room, int64_t pair, const char *what)
{
    if (count >= 0 && count <= room)
        return WARPDP_OK;
    return wd_fail(WARPDP_ERR_INTERNAL, "warpdp edit (GPU): pair %lld came back with %lld %s, room for %lld",
                   (long long)pair, (long long)count, what, (long long)room);
}

// The chunk's columns and locations (from the head that came back) into the caller's arrays.
int write_columns(const ChunkPlan &plan, const uint8_t *head, const warpdp_seq_pairs *pairs,
                  const warpdp_edit_results *r, const std::vector<CpuPair> &cpu, Written &written)
{
    const int64_t n = plan.n, *column = (const int64_t *)head;
    const int64_t *begin = (const int64_t *)(head + plan.at[S_LOC_BEGIN] - plan.at[S_OUT]);
    const int64_t *end = (const int64_t *)(head + plan.at[S_LOC_END] - plan.at[S_OUT]);
    size_t s = 0;
    for (int64_t p = 0; p < n; p++) {
        const int64_t g = plan.start + p;
        const CpuPair *on_cpu = s < plan.skip.size() && plan.skip[s] == p ? &cpu[s++] : nullptr;
        r->distance[g] = on_cpu ? on_cpu->distance : column[p];
        r->target_begin[g] = on_cpu ? on_cpu->t_begin : column[n + p];
        r->target_end[g] = on_cpu ? on_cpu->t_end : column[2 * n + p];
        if (r->distance[g] == BAD_BASE && plan.windowed && written.bad_pair < 0)
            written.bad_pair = g;
        if (!plan.want_locations)
            continue;
        const int64_t count = on_cpu ? on_cpu->n_locations : column[3 * n + p];
        const int64_t room = plan.one_location ? 1 : pairs->target_offsets[g + 1] - pairs->target_offsets[g] + 1;
        WD_TRY(check_count(count, room, g, "locations"));
        const int64_t from = plan.one_location ? p : pairs->target_offsets[g] - plan.t0 + p;
        for (int64_t l = 0; l < count; l++) {
            r->loc_begin[written.locations + l] = on_cpu ? on_cpu->loc_begin[l] : begin[from + l];
            r->loc_end[written.locations + l] = on_cpu ? on_cpu->loc_end[l] : end[from + l];
        }
        written.locations += count;
        r->loc_offsets[g + 1] = written.locations;
    }
    return WARPDP_OK;
}

/* The chunk's CIGARs: packed on the device in pair order (compact_cigars), copied back to their
   place in the caller's cigar_ops; the CPU's pairs' runs then written into the room left for them. */
int write_cigars(Slot &slot, const warpdp_seq_pairs *pairs, const warpdp_edit_results *r,
                 const std::vector<CpuPair> &cpu, Written &written)
{
    const ChunkPlan &plan = slot.plan;
    const int64_t n = plan.n, *n_cigar = (const int64_t *)slot.out.get() + 4 * n;
    std::vector<int64_t> offsets((size_t)n + 1, 0);
    for (int64_t p = 0, s = 0; p < n; p++) {
        const bool on_cpu = s < (int64_t)plan.skip.size() && plan.skip[s] == p;
        const int64_t g = plan.start + p, runs = on_cpu ? cpu[s++].n_cigar : n_cigar[p];
        const int64_t bases = pairs->query_offsets[g + 1] - pairs->query_offsets[g] +
                              pairs->target_offsets[g + 1] - pairs->target_offsets[g];
        WD_TRY(check_count(runs, bases, g, "CIGAR runs"));
        offsets[p + 1] = offsets[p] + runs;
        r->cigar_offsets[plan.start + p + 1] = written.runs + offsets[p + 1];
    }
    const int64_t total = offsets[n];
    if (total > 0) {
        const cudaStream_t stream = slot.stream.get();
        uint8_t *base = slot.device.get();
        WD_TRY(grow(slot.packed, 8 * offsets.size() + 4 * (size_t)total, "allocating packed CIGARs"));
        i64 *packed_offsets = (i64 *)slot.packed.get();
        uint32_t *packed_ops = (uint32_t *)(packed_offsets + offsets.size());
        WD_CUDA_TRY(FAMILY, "uploading CIGAR offsets",
                    cudaMemcpyAsync(packed_offsets, offsets.data(), 8 * offsets.size(), cudaMemcpyHostToDevice,
                                    stream));
        const int grid = (int)std::min<int64_t>((n * 32 + THREADS - 1) / THREADS, 1 << 16);
        kernel::compact_cigars<<<grid, THREADS, 0, stream>>>(
            (const uint32_t *)(base + plan.at[S_CIGAR]), (const i64 *)(base + plan.at[S_QOFF]),
            (const i64 *)(base + plan.at[S_TOFF]), packed_offsets, packed_ops, (int)n);
        WD_TRY(wd_cuda_launched(FAMILY, "compact_cigars"));
        WD_CUDA_TRY(FAMILY, "copying CIGARs back",
                    cudaMemcpyAsync(r->cigar_ops + written.runs, packed_ops, 4 * (size_t)total,
                                    cudaMemcpyDeviceToHost, stream));
        WD_TRY(slot.stream.wait(FAMILY, "packing CIGARs"));
    }
    for (size_t s = 0; s < plan.skip.size(); s++)
        memcpy(r->cigar_ops + written.runs + offsets[plan.skip[s]], cpu[s].cigar.data(),
               4 * (size_t)cpu[s].n_cigar);
    written.runs += total;
    return WARPDP_OK;
}

// The results of the chunk in the slot, its kernels waited for.
int collect(Slot &slot, const warpdp_seq_pairs *pairs, const warpdp_edit_params *p, const warpdp_edit_results *r,
            Written &written)
{
    if (!slot.busy)
        return WARPDP_OK;
    slot.busy = false;
    std::vector<CpuPair> cpu;
    WD_TRY(run_on_cpu(slot.plan, pairs, p, cpu));  // overlaps the chunk's kernels
    WD_TRY(slot.stream.wait(FAMILY, "running the kernels"));
    WD_TRY(write_columns(slot.plan, slot.out.get(), pairs, r, cpu, written));
    if (slot.plan.want_cigar)
        WD_TRY(write_cigars(slot, pairs, r, cpu, written));
    return WARPDP_OK;
}

// The plan of the chunk from `start`, halved until its device memory fits a slot's share.
void plan_fitting(ChunkPlan &plan, const warpdp_seq_pairs *pairs, const warpdp_edit_params *p, int64_t start,
                  size_t slot_budget)
{
    const int64_t scratch_budget = std::min<int64_t>(SCRATCH_BUDGET, (int64_t)(slot_budget / 4));
    int64_t stop = chunk_stop(pairs, start);
    for (;;) {
        plan_chunk(plan, pairs, p, start, stop, scratch_budget, sizeof(Params));
        if (plan.device_bytes <= slot_budget || stop - start == 1)
            return;
        stop = start + (stop - start) / 2;
    }
}

}  // namespace

static int edit_on_gpu(wd_gpu *gpu, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params,
                const warpdp_edit_results *results)
{
    WD_TRY(wd_gpu_enter(gpu, FAMILY));
    if (params->task >= WARPDP_EDIT_LOCATIONS)
        results->loc_offsets[0] = 0;
    if (params->task == WARPDP_EDIT_PATH)
        results->cigar_offsets[0] = 0;
    const size_t slot_budget = wd_gpu_budget(gpu) / SLOTS;
    SlotPool &pool = device_pool(gpu->device);
    std::unique_lock<std::mutex> held(pool.lock, std::try_to_lock);
    std::unique_ptr<Slot[]> own(held.owns_lock() ? nullptr : new Slot[SLOTS]);
    Slot *slots = own ? own.get() : pool.slots;
    const SlotsDone done = {slots};
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].stream.get() == nullptr)
            WD_TRY(slots[i].stream.create(FAMILY));
    Written written;
    ChunkPlan plan;
    int next = 0;  // the slot the next chunk takes (its previous chunk collected first: results in order)
    for (int64_t start = 0; start < pairs->n_pairs;) {
        plan_fitting(plan, pairs, params, start, slot_budget);  // overlaps the chunks in flight
        start = plan.stop;
        Slot &slot = slots[next];
        next = (next + 1) % SLOTS;
        WD_TRY(collect(slot, pairs, params, results, written));
        std::swap(slot.plan, plan);
        slot.busy = true;  // before its work is enqueued: SlotsDone waits for it after a failed enqueue too
        WD_TRY(enqueue(slot, pairs, params));
    }
    for (int i = 0; i < SLOTS; i++)
        WD_TRY(collect(slots[(next + i) % SLOTS], pairs, params, results, written));
    if (written.bad_pair >= 0)
        return wd_edit_refuse_byte(written.bad_pair);
    return wd_ok();
}

int wd_gpu_edit(wd_gpu *gpu, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params,
                const warpdp_edit_results *results)
{
    return wd_gpu_call(FAMILY, [&] { return edit_on_gpu(gpu, pairs, params, results); });
}
