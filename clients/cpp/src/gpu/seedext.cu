/* warpdp_seedext on a GPU handle: the kernels of warpdp/kernels/seedext.cu (the Python package's
   GPU backend), launched as warpdp/kernels/seedext.py launches them. The pairs go in chunks
   (seedext_plan.cu: binned and ordered, one launch per bin) through pinned buffers, three chunks
   in flight: the host plans chunk c+1 on a thread and fills chunk c while the GPU computes the
   chunks before it; a chunk's bins run on concurrent streams. The caller has checked the
   arguments (the driver's checks, seedext.c). */
/* warpdp/kernels/seedext.cu (angle brackets: not this file), in a namespace of its own: its
   namespace warpdp_seedext would clash with warpdp.h's function of that name. */
namespace seedext_kernels {
#include <seedext.cu>
}

#include <string.h>
#include <algorithm>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>
#include "gpu.h"
#include "host_copy.h"
#include "seedext_plan.h"

namespace seedext_gpu {
namespace {

namespace kernels = seedext_kernels::warpdp_seedext;
const char *const FAMILY = "seedext";

static_assert(sizeof(kernels::Params) == PARAMS_BYTES, "PARAMS_BYTES must be sizeof(Params)");
static_assert(sizeof(warpdp_seedext_result) == RESULT_BYTES, "a result row is six int32");

template <int K> const void *config_kernel()
{
    return reinterpret_cast<const void *>(
        &kernels::extend_kernel<CONFIGS[K].lanes, CONFIGS[K].cols, CONFIGS[K].shared>);
}

/* The kernels of CONFIGS, in order. */
const void *const *subwarp_kernels()
{
    static const void *const table[N_SUBWARP_BINS + 1] = {config_kernel<0>(), config_kernel<1>(), config_kernel<2>(),
                                                          config_kernel<3>(), config_kernel<4>()};
    static_assert(N_SUBWARP_BINS + 1 == 5, "one kernel per configuration");
    return table;
}

const void *lane_kernel()
{
    return reinterpret_cast<const void *>(&kernels::extend_lane_kernel);
}

/* PlanDevice::blocks_per_sm: the driver's occupancy query (the device must be current). */
int blocks_per_sm(int config, size_t shared_bytes, int *blocks)
{
    WD_CUDA_TRY(FAMILY, "querying the occupancy",
                cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, subwarp_kernels()[config], THREADS_PER_BLOCK,
                                                              shared_bytes));
    return WARPDP_OK;
}

/* One chunk in flight: its pinned input and output, device memory, a stream for its copies
   and one per launch. The streams come last: they are destroyed (after their work) first. */
struct Slot {
    bool pending = false; /* a chunk's results wait in it: pairs start .. start + n - 1 */
    int64_t start = 0, n = 0;
    PinnedArray<uint8_t> in, out;
    DeviceArray<uint8_t> device;
    Event uploaded, done, finished[N_BINS];
    Stream stream, bin_streams[N_BINS];
};

/* The slots of one call on one device. */
struct Ring {
    int device = -1;
    Slot slots[SLOTS];
    size_t device_bytes() const
    {
        size_t total = 0;
        for (const Slot &slot : slots)
            total += slot.device.size();
        return total;
    }
};

/* Rings of finished calls, for the next calls on their device: buffers only grow, so steady
   work allocates nothing (as the Python package's runners keep theirs for the process). A call
   takes one, or makes one, and puts it back when it succeeded. Never freed: the process's end
   frees the device memory, and CUDA may be gone before static destructors run. */
constexpr long MAX_KEPT_RINGS = 2;
std::mutex pool_lock;
std::vector<std::unique_ptr<Ring>> *const pool = new std::vector<std::unique_ptr<Ring>>();

int set_kernel_attributes()
{
    for (int k = 0; k < N_SUBWARP_BINS; k++)
        WD_CUDA_TRY(FAMILY, "setting the kernels' shared memory",
                    cudaFuncSetAttribute(subwarp_kernels()[k], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)MAX_SHARED_BYTES));
    WD_CUDA_TRY(FAMILY, "setting the lane kernel's shared memory",
                cudaFuncSetAttribute(lane_kernel(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)lane_shared_bytes(LANE_MAX_QUERY)));
    /* Shared memory bounds the lane kernel's occupancy: ask for all of it (only a preference). */
    if (cudaFuncSetAttribute(lane_kernel(), cudaFuncAttributePreferredSharedMemoryCarveout, 100) != cudaSuccess)
        cudaGetLastError();
    return WARPDP_OK;
}

int make_ring(const wd_gpu *gpu, std::unique_ptr<Ring> *made)
{
    std::unique_ptr<Ring> ring(new Ring());
    ring->device = gpu->device;
    WD_TRY(set_kernel_attributes());
    for (Slot &slot : ring->slots) {
        WD_TRY(slot.stream.create(FAMILY));
        WD_TRY(slot.uploaded.create(FAMILY));
        WD_TRY(slot.done.create(FAMILY));
        for (int b = 0; b < N_BINS; b++) {
            WD_TRY(slot.bin_streams[b].create(FAMILY));
            WD_TRY(slot.finished[b].create(FAMILY));
        }
    }
    *made = std::move(ring);
    return WARPDP_OK;
}

int take_ring(const wd_gpu *gpu, std::unique_ptr<Ring> *ring)
{
    {
        std::lock_guard<std::mutex> hold(pool_lock);
        for (auto it = pool->begin(); it != pool->end(); ++it) {
            if ((*it)->device == gpu->device) {
                *ring = std::move(*it);
                pool->erase(it);
                return WARPDP_OK;
            }
        }
    }
    return make_ring(gpu, ring);
}

/* Keeps the ring for later calls, up to MAX_KEPT_RINGS per device (more are freed). */
void give_back(std::unique_ptr<Ring> ring)
{
    std::lock_guard<std::mutex> hold(pool_lock);
    const long kept = std::count_if(pool->begin(), pool->end(),
                                    [&ring](const std::unique_ptr<Ring> &r) { return r->device == ring->device; });
    if (kept < MAX_KEPT_RINGS)
        pool->push_back(std::move(ring));
}

struct Job {
    const warpdp_seedext_pairs *pairs;
    const warpdp_seedext_params *params;
    warpdp_seedext_result *results;
};

/* The Params of every launch, pointing into the chunk's device memory at dev. */
void write_params(uint8_t *blob, uint8_t *dev, const ChunkPlan &plan, const warpdp_seedext_params *s)
{
    const Layout &at = plan.at;
    for (const Launch &launch : plan.launches) {
        kernels::Params p;
        memset(&p, 0, sizeof p); /* the padding too */
        p.query = dev + at.query;
        p.target = dev + at.target;
        p.query_offsets = reinterpret_cast<const long long *>(dev + at.query_offsets);
        p.target_offsets = reinterpret_cast<const long long *>(dev + at.target_offsets);
        p.h0 = reinterpret_cast<const int *>(dev + at.h0);
        p.order = reinterpret_cast<const int *>(dev + at.order) + launch.first;
        p.counter = reinterpret_cast<int *>(dev + at.counters) + launch.index;
        p.out = reinterpret_cast<int *>(dev + at.out);
        p.scratch = reinterpret_cast<int *>(dev + at.scratch + launch.scratch);
        p.state_ints = launch.state();
        p.n = (int)launch.count;
        p.qmax = launch.qmax;
        p.a = s->a;
        p.b = s->b;
        p.o_del = s->o_del;
        p.e_del = s->e_del;
        p.o_ins = s->o_ins;
        p.e_ins = s->e_ins;
        p.w = s->w;
        p.end_bonus = s->end_bonus;
        p.zdrop = s->zdrop;
        memcpy(blob + at.params + PARAMS_BYTES * (size_t)launch.index, &p, sizeof p);
    }
}

/* The upload part of the chunk, in the slot's pinned input. */
void fill(Slot &slot, const ChunkPlan &plan, const Job &job)
{
    const Layout &at = plan.at;
    const warpdp_seedext_pairs *pairs = job.pairs;
    uint8_t *blob = slot.in.get();
    const int64_t s = plan.start, n = plan.n;
    memset(blob + at.counters, 0, N_COUNTERS * 4);
    wd_copy_parallel({{blob + at.query, pairs->query + plan.q0, (size_t)(plan.q1 - plan.q0)},
                      {blob + at.target, pairs->target + plan.t0, (size_t)(plan.t1 - plan.t0)}});
    int64_t *qoff = reinterpret_cast<int64_t *>(blob + at.query_offsets);
    int64_t *toff = reinterpret_cast<int64_t *>(blob + at.target_offsets);
    for (int64_t i = 0; i <= n; i++) {
        qoff[i] = pairs->query_offsets[s + i] - plan.q0;
        toff[i] = pairs->target_offsets[s + i] - plan.t0;
    }
    memcpy(blob + at.h0, pairs->h0 + s, 4 * (size_t)n);
    memcpy(blob + at.order, plan.order.data(), 4 * (size_t)n);
    write_params(blob, slot.device.get(), plan, job.params);
}

/* Grows a buffer to hold `bytes` (with a quarter of headroom, so that steady work stops growing). */
template <typename Array> int grow(Array &array, size_t bytes, const char *what)
{
    if (array.size() >= bytes)
        return WARPDP_OK;
    return array.allocate(bytes + bytes / 4 + ALIGN, FAMILY, what);
}

/* Upload, the bins' launches side by side (each on its stream, after the upload), the results back. */
int enqueue(Slot &slot, const ChunkPlan &plan)
{
    uint8_t *dev = slot.device.get();
    const cudaStream_t stream = slot.stream.get();
    WD_CUDA_TRY(FAMILY, "copying a chunk to the GPU",
                cudaMemcpyAsync(dev, slot.in.get(), plan.at.blob_bytes, cudaMemcpyHostToDevice, stream));
    WD_CUDA_TRY(FAMILY, "recording an event", cudaEventRecord(slot.uploaded.get(), stream));
    const size_t n_launches = plan.launches.size();
    for (size_t k = 0; k < n_launches; k++) {
        const Launch &launch = plan.launches[k];
        const cudaStream_t bin = slot.bin_streams[k].get();
        WD_CUDA_TRY(FAMILY, "waiting for an event", cudaStreamWaitEvent(bin, slot.uploaded.get(), 0));
        const kernels::Params *params =
            reinterpret_cast<const kernels::Params *>(dev + plan.at.params + PARAMS_BYTES * launch.index);
        void *args[] = {&params};
        const bool lane = launch.config == LANE_KERNEL;
        WD_CUDA_TRY(FAMILY, lane ? "launching extend_lane_kernel" : "launching extend_kernel",
                    cudaLaunchKernel(lane ? lane_kernel() : subwarp_kernels()[launch.config], dim3(launch.grid),
                                     dim3(launch.threads()), args, launch.shared_bytes, bin));
        WD_CUDA_TRY(FAMILY, "recording an event", cudaEventRecord(slot.finished[k].get(), bin));
    }
    for (size_t k = 0; k < n_launches; k++)
        WD_CUDA_TRY(FAMILY, "waiting for an event", cudaStreamWaitEvent(stream, slot.finished[k].get(), 0));
    WD_CUDA_TRY(FAMILY, "copying results from the GPU",
                cudaMemcpyAsync(slot.out.get(), dev + plan.at.out, RESULT_BYTES * (size_t)plan.n,
                                cudaMemcpyDeviceToHost, stream));
    WD_CUDA_TRY(FAMILY, "recording an event", cudaEventRecord(slot.done.get(), stream));
    slot.pending = true;
    slot.start = plan.start;
    slot.n = plan.n;
    return WARPDP_OK;
}

/* Waits for the slot's chunk and copies its results out (nothing when it holds none). */
int finish(Slot &slot, warpdp_seedext_result *results)
{
    if (!slot.pending)
        return WARPDP_OK;
    slot.pending = false;
    WD_CUDA_TRY(FAMILY, "running a chunk", cudaEventSynchronize(slot.done.get()));
    memcpy(results + slot.start, slot.out.get(), RESULT_BYTES * (size_t)slot.n);
    return WARPDP_OK;
}

/* A plan made on another thread, with the message of its failure (messages are per thread). */
struct Planned {
    int status = WARPDP_OK;
    std::string message;
    ChunkPlan plan;
};

Planned plan_on_device(int device, const Job &job, std::pair<int64_t, int64_t> chunk, const PlanDevice &plan_device)
{
    Planned planned;
    const cudaError_t entered = cudaSetDevice(device); /* the occupancy queries need the device */
    planned.status = entered != cudaSuccess ? wd_cuda_fail(FAMILY, "selecting the device", entered)
                                            : plan_chunk(job.pairs, job.params, chunk.first, chunk.second,
                                                         plan_device, &planned.plan);
    if (planned.status != WARPDP_OK)
        planned.message = warpdp_last_error();
    return planned;
}

/* The next chunk's plan, made on a thread while this one fills and enqueues (here if no thread starts). */
std::future<Planned> plan_ahead(int device, const Job &job, std::pair<int64_t, int64_t> chunk,
                                const PlanDevice &plan_device)
{
    try {
        return std::async(std::launch::async, plan_on_device, device, std::cref(job), chunk, std::cref(plan_device));
    } catch (const std::system_error &) {
        std::promise<Planned> here;
        here.set_value(plan_on_device(device, job, chunk, plan_device));
        return here.get_future();
    }
}

/* Chunk limits as seedext.py's, smaller where a third of the memory budget (a slot) would not
   hold twice a chunk: the other half is for the global scratch of very long queries. */
void chunk_limits(size_t budget, int64_t *chunk_pairs, int64_t *chunk_bytes)
{
    const double slot = (double)(budget / SLOTS);
    const double full = (double)CHUNK_BYTES + (double)CHUNK_PAIRS * (16 + 4 + 4 + RESULT_BYTES);
    const double scale = std::min(1.0, slot / (2.0 * full));
    *chunk_pairs = std::max<int64_t>(1, (int64_t)((double)CHUNK_PAIRS * scale));
    *chunk_bytes = std::max<int64_t>(1, (int64_t)((double)CHUNK_BYTES * scale));
}

int run(const wd_gpu *gpu, Ring &ring, const Job &job)
{
    const size_t budget = wd_gpu_budget(gpu) + ring.device_bytes();
    int64_t chunk_pairs, chunk_bytes;
    chunk_limits(budget, &chunk_pairs, &chunk_bytes);
    const PlanDevice plan_device = {blocks_per_sm, gpu->sm_count, budget / SLOTS / 2};
    const std::vector<std::pair<int64_t, int64_t>> chunks = split_chunks(job.pairs, chunk_pairs, chunk_bytes);
    Planned next = plan_on_device(gpu->device, job, chunks[0], plan_device);
    std::future<Planned> ahead;
    for (size_t c = 0; c < chunks.size(); c++) {
        if (next.status != WARPDP_OK)
            return wd_fail(next.status, "%s", next.message.c_str());
        const ChunkPlan plan = std::move(next.plan);
        if (c + 1 < chunks.size())
            ahead = plan_ahead(gpu->device, job, chunks[c + 1], plan_device);
        Slot &slot = ring.slots[c % SLOTS];
        WD_TRY(finish(slot, job.results)); /* the chunk that had the slot */
        WD_TRY(grow(slot.in, plan.at.blob_bytes, "allocating pinned memory"));
        WD_TRY(grow(slot.out, RESULT_BYTES * (size_t)plan.n, "allocating pinned memory"));
        WD_TRY(grow(slot.device, plan.at.device_bytes, "allocating device memory"));
        fill(slot, plan, job);
        WD_TRY(enqueue(slot, plan));
        if (c + 1 < chunks.size())
            next = ahead.get();
    }
    for (size_t c = chunks.size() > SLOTS ? chunks.size() - SLOTS : 0; c < chunks.size(); c++)
        WD_TRY(finish(ring.slots[c % SLOTS], job.results));
    return WARPDP_OK;
}

} // namespace
} // namespace seedext_gpu

int wd_gpu_seedext(wd_gpu *gpu, const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params,
                   warpdp_seedext_result *results)
{
    using namespace seedext_gpu;
    if (pairs->n_pairs == 0)
        return WARPDP_OK;
    return wd_gpu_call(FAMILY, [&] {
        WD_TRY(wd_gpu_enter(gpu, FAMILY));
        std::unique_ptr<Ring> ring;
        WD_TRY(take_ring(gpu, &ring));
        const Job job = {pairs, params, results};
        const int status = run(gpu, *ring, job);
        if (status == WARPDP_OK) /* else it goes, after its streams' work (a CUDA error may stick) */
            give_back(std::move(ring));
        return status;
    });
}
