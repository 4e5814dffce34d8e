/* warpdp_pairhmm on a GPU handle: the launcher of warpdp/kernels/pairhmm.cu (the kernels the
   Python package's GPU backend runs), doing what warpdp/kernels/pairhmm.py does. Per chunk
   (pairhmm_plan.cu cuts the input and lays each chunk out): upload the chunk's blob through
   pinned memory, turn haplotype bytes into column codes and the offsets into work items on the
   GPU, launch one kernel configuration per non-empty read-length bin on its own stream, then
   (float) the double-precision pass over the pairs the float kernels queued below GKL's 1e-28,
   and copy the log10 likelihoods back. Two chunks are in flight: the host fills one while the
   GPU computes the other. The driver's argument checks ran before (pairhmm.c).
   Compiled with the kernels' NVRTC options (CMakeLists.txt): --fmad=false --ftz=true
   --prec-div=true --prec-sqrt=true. */
#include <string.h>
#include <algorithm>
#include <mutex>
#include <new>
#include <vector>
#include "gpu.h"
#include "pairhmm_plan.h"

extern "C" {
#include "pairhmm_tables.h"
}

/* The kernel source of warpdp/kernels (angle brackets: through the include path, not this file
   of the same name). Its namespace is called like the API's function warpdp_pairhmm (warpdp.h),
   so it is renamed here, where both are declared. */
#define warpdp_pairhmm warpdp_pairhmm_kernels
#include <pairhmm.cu>
#undef warpdp_pairhmm
namespace kernels = warpdp_pairhmm_kernels;

using namespace wd_pairhmm;
using kernels::Item;
using kernels::Params;
using kernels::PlanParams;

static const char FAMILY[] = "pairhmm";

static_assert(kernels::MAX_BINS == MAX_BINS && kernels::PLAN_BUCKETS == PLAN_BUCKETS &&
                  sizeof(Item) == ITEM_BYTES && kernels::CODE_NONE == CODE_NONE,
              "pairhmm_plan.h disagrees with warpdp/kernels/pairhmm.cu");

typedef void (*ForwardKernel)(const Params *);

/* The instantiations of FLOAT_BINS and DOUBLE_CONFIG (pairhmm_plan.h), in their order. */
static const ForwardKernel FLOAT_KERNELS[N_FLOAT_BINS] = {
    kernels::forward_kernel<float, 4, 8, false>,   kernels::forward_kernel<float, 8, 8, false>,
    kernels::forward_kernel<float, 8, 12, false>,  kernels::forward_kernel<float, 8, 16, false>,
    kernels::forward_kernel<float, 8, 20, false>,  kernels::forward_kernel<float, 16, 12, false>,
    kernels::forward_kernel<float, 16, 16, false>, kernels::forward_kernel<float, 32, 16, false>,
    kernels::forward_kernel<float, 8, 16, true>,
};
static const ForwardKernel DOUBLE_KERNEL = kernels::forward_kernel<double, 8, 4, true>;

static const int64_t DEFAULT_CHUNK_BYTES = (int64_t)1 << 30; /* pairhmm_plan.py's defaults */
static const int64_t DEFAULT_CHUNK_CELLS = 4000000000LL;
static const int SLOTS = 2;

/* One chunk in flight: its buffers, then its streams (destroyed first: they wait for their work
   before the memory it uses is freed). */
struct Slot {
    PinnedArray<uint8_t> in;
    PinnedArray<double> out;
    DeviceArray<uint8_t> device;
    Stream copy, tail, bins[N_FLOAT_BINS];
    Event uploaded, bin_done[N_FLOAT_BINS], done;
    bool busy = false;
    int64_t out_lo = 0, n_out = 0;

    int create()
    {
        WD_TRY(copy.create(FAMILY));
        WD_TRY(tail.create(FAMILY));
        WD_TRY(uploaded.create(FAMILY));
        WD_TRY(done.create(FAMILY));
        for (int i = 0; i < N_FLOAT_BINS; i++) {
            WD_TRY(bins[i].create(FAMILY));
            WD_TRY(bin_done[i].create(FAMILY));
        }
        return WARPDP_OK;
    }
};

/* The GKL tables on the device. */
struct Tables {
    DeviceArray<uint8_t> memory;
    const void *ph2pr_f, *mm_f, *ph2pr_d, *mm_d;
};

static int upload_tables(Tables &t)
{
    pairhmm_tables_init();
    const size_t f = sizeof pairhmm_ph2pr_f, mf = sizeof pairhmm_mm_f, d = sizeof pairhmm_ph2pr_d;
    const size_t md = sizeof pairhmm_mm_d;
    const size_t at[4] = {0, 1024, 1024 + 34 * 1024, 2048 + 34 * 1024};
    static_assert(sizeof pairhmm_ph2pr_f <= 1024 && sizeof pairhmm_mm_f <= 34 * 1024 && sizeof pairhmm_ph2pr_d <= 1024,
                  "table sections overlap");
    WD_TRY(t.memory.allocate(at[3] + md, FAMILY, "allocating the tables"));
    uint8_t *base = t.memory.get();
    WD_CUDA_TRY(FAMILY, "uploading the tables", cudaMemcpy(base + at[0], pairhmm_ph2pr_f, f, cudaMemcpyHostToDevice));
    WD_CUDA_TRY(FAMILY, "uploading the tables", cudaMemcpy(base + at[1], pairhmm_mm_f, mf, cudaMemcpyHostToDevice));
    WD_CUDA_TRY(FAMILY, "uploading the tables", cudaMemcpy(base + at[2], pairhmm_ph2pr_d, d, cudaMemcpyHostToDevice));
    WD_CUDA_TRY(FAMILY, "uploading the tables", cudaMemcpy(base + at[3], pairhmm_mm_d, md, cudaMemcpyHostToDevice));
    t.ph2pr_f = base + at[0];
    t.mm_f = base + at[1];
    t.ph2pr_d = base + at[2];
    t.mm_d = base + at[3];
    return WARPDP_OK;
}

/* Blocks of a configuration resident on the whole device (at least one per SM), after opting
   in to its shared memory where it needs more than the default 48 KiB. */
static int resident_blocks(ForwardKernel kernel, const KernelConfig &c, int sm_count, int64_t *blocks)
{
    if (c.shared_bytes() > 48 * 1024)
        WD_CUDA_TRY(FAMILY, "opting in to shared memory",
                    cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         c.shared_bytes()));
    int per_sm = 0;
    WD_CUDA_TRY(FAMILY, "querying occupancy",
                cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)kernel, c.threads(),
                                                              (size_t)c.shared_bytes()));
    *blocks = (int64_t)std::max(1, per_sm) * sm_count;
    return WARPDP_OK;
}

static int measure_occupancy(const wd_gpu *gpu, Occupancy *occ)
{
    occ->sm_count = gpu->sm_count;
    for (int i = 0; i < N_FLOAT_BINS; i++)
        WD_TRY(resident_blocks(FLOAT_KERNELS[i], FLOAT_BINS[i], gpu->sm_count, &occ->float_blocks[i]));
    return resident_blocks(DOUBLE_KERNEL, DOUBLE_CONFIG, gpu->sm_count, &occ->double_blocks);
}

/* The kernels index a chunk with int: its pairs, reads, haplotypes and bytes must fit. */
static int check_chunk(const ChunkPlan &p)
{
    const int64_t limit = INT32_MAX - 1024;
    if (p.chunk.n_out > limit || p.n_reads > limit || p.n_haps > limit || p.read_bytes > limit ||
        p.code_bytes > limit)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT,
                       "warpdp pairhmm (GPU): batch %lld is too large for the GPU backend (over 2^31 pairs, reads, "
                       "haplotypes or bases in one chunk)",
                       (long long)p.chunk.b0);
    return WARPDP_OK;
}

static void fill_plan_params(const ChunkPlan &p, uint8_t *blob, uint8_t *dev)
{
    const Layout &at = p.at;
    int *counters = (int *)(dev + at.counters);
    PlanParams q;
    memset(&q, 0, sizeof q);
    q.read_offsets = (const int *)(dev + at.read_offsets);
    q.batch_reads = (const int *)(dev + at.batch_reads);
    q.batch_haps = (const int *)(dev + at.batch_haps);
    q.pair_base = (const int *)(dev + at.pair_base);
    q.hap_starts = (const int *)(dev + at.hap_starts);
    q.items = (Item *)(dev + at.items);
    q.bin_count = counters + C_BIN_COUNT;
    q.bin_start = counters + C_BIN_START;
    q.bucket_count = counters + C_BUCKET_COUNT;
    q.bucket_cursor = counters + C_BUCKET_CURSOR;
    q.bucket_start = counters + C_BUCKET_START;
    q.n_reads = p.n_reads;
    q.n_batches = p.n_batches;
    q.n_bins = p.n_configs;
    q.cap = p.cap;
    q.multi_from = FLOAT_BINS[N_FLOAT_BINS - 2].max_read_len;
    q.strip_rows = FLOAT_BINS[N_FLOAT_BINS - 1].strip_rows();
    q.columns = p.columns;
    q.mean_hap_len = std::max(p.mean_hap, 1.0);
    q.bucket_scale = PLAN_BUCKETS / ((double)p.longest_item + 1.0);
    for (int b = 0; b + 1 < p.n_configs; b++)
        q.bounds[b] = p.config(b).max_read_len;
    memcpy(blob + at.plan, &q, sizeof q);
}

static void fill_launch_params(const ChunkPlan &p, const Launch &launch, const Tables &t, uint8_t *blob, uint8_t *dev)
{
    const Layout &at = p.at;
    int *counters = (int *)(dev + at.counters);
    const bool fallback = p.has_fallback && launch.bin == p.fallback.bin;
    const bool dbl = launch.config.is_double;
    Params q;
    memset(&q, 0, sizeof q);
    q.items = (const Item *)(dev + (fallback ? at.fb_items : at.items));
    q.n_items = counters + (fallback ? C_FB_COUNT : C_BIN_COUNT + launch.bin);
    q.work_counter = counters + (fallback ? C_FB_WORK : C_WORK + launch.bin);
    q.items_offset = fallback ? nullptr : counters + C_BIN_START + launch.bin;
    q.reads = dev + at.reads;
    q.read_plane = p.read_plane;
    q.codes = dev + at.codes;
    q.hap_starts = (const int *)(dev + at.hap_starts);
    q.ph2pr = dbl ? t.ph2pr_d : t.ph2pr_f;
    q.mm = dbl ? t.mm_d : t.mm_f;
    q.out = (double *)(dev + at.out);
    q.fb_items = (Item *)(dev + at.fb_items);
    q.fb_count = counters + C_FB_COUNT;
    q.scratch = dev + (dbl ? at.scratch_d : at.scratch_f);
    q.scratch_stride = dbl ? p.stride_d : p.stride_f;
    q.initial = dbl ? pairhmm_initial_d : (double)pairhmm_initial_f;
    q.log10_initial = dbl ? pairhmm_log10_initial_d : (double)pairhmm_log10_initial_f;
    memcpy(blob + at.params + (size_t)launch.bin * sizeof(Params), &q, sizeof q);
}

static const Params *params_of(const ChunkPlan &p, const Launch &launch, uint8_t *dev)
{
    return (const Params *)(dev + p.at.params + (size_t)launch.bin * sizeof(Params));
}

static int launch_forward(const ChunkPlan &p, const Launch &launch, uint8_t *dev, cudaStream_t stream)
{
    const ForwardKernel kernel = launch.config.is_double ? DOUBLE_KERNEL : FLOAT_KERNELS[launch.bin];
    const Params *params = params_of(p, launch, dev);
    void *args[] = {&params};
    WD_CUDA_TRY(FAMILY, "launching forward_kernel",
                cudaLaunchKernel((const void *)kernel, dim3((unsigned)launch.grid), dim3((unsigned)launch.config.threads()),
                                 args, (size_t)launch.config.shared_bytes(), stream));
    return WARPDP_OK;
}

/* After the upload: haplotype codes and the work items, made on the GPU. */
static int prepare_on_device(const ChunkPlan &p, uint8_t *dev, int sm_count, cudaStream_t stream)
{
    const int64_t haps = p.n_haps, reads = p.n_reads;
    const unsigned codes_grid = (unsigned)std::max<int64_t>(1, std::min<int64_t>(4 * sm_count, (haps + 7) / 8));
    kernels::hap_codes_kernel<<<codes_grid, 256, 0, stream>>>(dev + p.at.codes, (const int *)(dev + p.at.hap_starts),
                                                                      (int)haps);
    WD_TRY(wd_cuda_launched(FAMILY, "hap_codes_kernel"));
    const unsigned grid = (unsigned)std::max<int64_t>(1, std::min<int64_t>(4 * sm_count, (reads + 255) / 256));
    const PlanParams *plan = (const PlanParams *)(dev + p.at.plan);
    kernels::plan_count_kernel<<<grid, 256, 0, stream>>>(plan);
    WD_TRY(wd_cuda_launched(FAMILY, "plan_count_kernel"));
    kernels::plan_prefix_kernel<<<1, 32, 0, stream>>>(plan);
    WD_TRY(wd_cuda_launched(FAMILY, "plan_prefix_kernel"));
    kernels::plan_scatter_kernel<<<grid, 256, 0, stream>>>(plan);
    return wd_cuda_launched(FAMILY, "plan_scatter_kernel");
}

/* Uploads the slot's blob and enqueues the chunk's kernels and the copy back (all asynchronous). */
static int enqueue(Slot &s, const ChunkPlan &p, int sm_count)
{
    uint8_t *dev = s.device.get();
    WD_CUDA_TRY(FAMILY, "uploading a chunk",
                cudaMemcpyAsync(dev, s.in.get(), p.at.blob_bytes, cudaMemcpyHostToDevice, s.copy.get()));
    WD_TRY(prepare_on_device(p, dev, sm_count, s.copy.get()));
    WD_CUDA_TRY(FAMILY, "recording an event", cudaEventRecord(s.uploaded.get(), s.copy.get()));
    for (size_t i = 0; i < p.launches.size(); i++) {
        const cudaStream_t stream = s.bins[i].get();
        WD_CUDA_TRY(FAMILY, "ordering streams", cudaStreamWaitEvent(stream, s.uploaded.get(), 0));
        WD_TRY(launch_forward(p, p.launches[i], dev, stream));
        WD_CUDA_TRY(FAMILY, "recording an event", cudaEventRecord(s.bin_done[i].get(), stream));
    }
    const cudaStream_t tail = s.tail.get();
    WD_CUDA_TRY(FAMILY, "ordering streams", cudaStreamWaitEvent(tail, s.uploaded.get(), 0));
    for (size_t i = 0; i < p.launches.size(); i++)
        WD_CUDA_TRY(FAMILY, "ordering streams", cudaStreamWaitEvent(tail, s.bin_done[i].get(), 0));
    if (p.has_fallback)
        WD_TRY(launch_forward(p, p.fallback, dev, tail));
    WD_CUDA_TRY(FAMILY, "copying results back",
                cudaMemcpyAsync(s.out.get(), dev + p.at.out, (size_t)p.chunk.n_out * 8, cudaMemcpyDeviceToHost, tail));
    WD_CUDA_TRY(FAMILY, "recording an event", cudaEventRecord(s.done.get(), tail));
    return WARPDP_OK;
}

/* Buffers of the slot large enough for the chunk (grown, never shrunk: the set keeps them for later calls). */
static int grow(Slot &s, const ChunkPlan &p)
{
    if (s.in.size() < p.at.blob_bytes)
        WD_TRY(s.in.allocate(p.at.blob_bytes, FAMILY, "allocating pinned memory"));
    if (s.out.size() < (size_t)p.chunk.n_out)
        WD_TRY(s.out.allocate((size_t)p.chunk.n_out, FAMILY, "allocating pinned memory"));
    if (s.device.size() < p.at.device_bytes)
        WD_TRY(s.device.allocate(p.at.device_bytes, FAMILY, "allocating device memory"));
    return WARPDP_OK;
}

/* Waits for the slot's chunk and copies its results into out. */
static int finish(Slot &s, double *out)
{
    if (!s.busy)
        return WARPDP_OK;
    s.busy = false;
    WD_CUDA_TRY(FAMILY, "computing a chunk", cudaEventSynchronize(s.done.get()));
    memcpy(out + s.out_lo, s.out.get(), (size_t)s.n_out * 8);
    return WARPDP_OK;
}

static int start_chunk(Slot &s, const warpdp_pairhmm_batches *b, const Chunk &chunk, int use_double,
                       const InputStats &stats, const Occupancy &occ, const Tables &t)
{
    const ChunkPlan p = plan_chunk(b, chunk, use_double != 0, stats, occ, sizeof(Params), sizeof(PlanParams));
    WD_TRY(check_chunk(p));
    WD_TRY(grow(s, p));
    uint8_t *blob = s.in.get(), *dev = s.device.get();
    fill_inputs(p, b, blob);
    fill_plan_params(p, blob, dev);
    for (const Launch &launch : p.launches)
        fill_launch_params(p, launch, t, blob, dev);
    if (p.has_fallback)
        fill_launch_params(p, p.fallback, t, blob, dev);
    WD_TRY(enqueue(s, p, occ.sm_count));
    s.busy = true;
    s.out_lo = chunk.out_lo;
    s.n_out = chunk.n_out;
    return WARPDP_OK;
}

/* The GPU backend's limit (pairhmm.py's _check_inputs): a length travels in 24 bits. */
static int check_hap_lengths(const warpdp_pairhmm_batches *b)
{
    for (int64_t h = 0; h < b->n_haps; h++)
        if (b->hap_offsets[h + 1] - b->hap_offsets[h] > MAX_HAP_LEN)
            return wd_fail(WARPDP_ERR_INVALID_ARGUMENT,
                           "warpdp pairhmm: haplotype %lld is longer than %lld bases, the GPU backend's limit",
                           (long long)h, (long long)MAX_HAP_LEN);
    return WARPDP_OK;
}

/* What a call needs beside its input: two slots, the tables and the configurations' occupancy on
   one device. Made once and kept for later calls, with their buffers (as the Python runner keeps
   its slots and CuPy its memory pool): streams, events, pinned buffers and device memory cost more
   to make and free than a small call takes. A set is used by one call at a time. */
struct SlotSet {
    int device = -1;
    Tables tables;
    Occupancy occ;
    Slot slots[SLOTS];

    int create(const wd_gpu *gpu)
    {
        device = gpu->device;
        WD_TRY(upload_tables(tables));
        WD_TRY(measure_occupancy(gpu, &occ));
        for (Slot &s : slots)
            WD_TRY(s.create());
        return WARPDP_OK;
    }
};

/* The sets not in use, of every device, at most KEPT_SETS per device (the ones of calls made
   beside each other beyond that are freed). Never freed: sets live until the process ends (CUDA
   may be shut down before static destructors would run). */
static const int KEPT_SETS = 2;
static std::mutex pool_lock;
static std::vector<SlotSet *> &pool = *new std::vector<SlotSet *>();

/* A set of the handle's device, borrowed from the pool (or made) for one call. */
class Borrowed {
  public:
    Borrowed() = default;
    Borrowed(const Borrowed &) = delete;
    Borrowed &operator=(const Borrowed &) = delete;
    /* A call that succeeded gives its set back, while its device has fewer than KEPT_SETS kept; a
       failed call's set, or one too many, is destroyed (its streams wait for what they hold, then
       everything is freed). */
    ~Borrowed()
    {
        if (set_ == nullptr)
            return;
        if (ok_) {
            std::lock_guard<std::mutex> hold(pool_lock);
            const auto kept = std::count_if(pool.begin(), pool.end(),
                                            [this](const SlotSet *s) { return s->device == set_->device; });
            if (kept < KEPT_SETS) {
                pool.push_back(set_);
                return;
            }
        }
        delete set_;
    }
    int take(const wd_gpu *gpu)
    {
        {
            std::lock_guard<std::mutex> hold(pool_lock);
            for (size_t i = 0; i < pool.size(); i++)
                if (pool[i]->device == gpu->device) {
                    set_ = pool[i];
                    pool.erase(pool.begin() + (ptrdiff_t)i);
                    return WARPDP_OK;
                }
        }
        set_ = new (std::nothrow) SlotSet();
        if (set_ == nullptr)
            return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp pairhmm (GPU): out of memory");
        return set_->create(gpu);
    }
    SlotSet &operator*() const { return *set_; }
    void succeeded() { ok_ = true; }

  private:
    SlotSet *set_ = nullptr;
    bool ok_ = false;
};

static int run_chunks(const wd_gpu *gpu, SlotSet &set, const warpdp_pairhmm_batches *batches, int use_double,
                      double *out)
{
    /* Two chunks in flight share the call's share of the device memory. */
    const int64_t budget = (int64_t)(wd_gpu_budget(gpu) / (2 * SLOTS));
    const int64_t chunk_bytes = std::max<int64_t>(16 << 20, std::min(DEFAULT_CHUNK_BYTES, budget));
    const std::vector<Chunk> chunks = split_work(batches, chunk_bytes, DEFAULT_CHUNK_CELLS);
    const InputStats stats = input_stats(batches);
    for (size_t i = 0; i < chunks.size(); i++) {
        Slot &s = set.slots[i % SLOTS];
        WD_TRY(finish(s, out));
        WD_TRY(start_chunk(s, batches, chunks[i], use_double, stats, set.occ, set.tables));
    }
    for (size_t i = chunks.size(); i < chunks.size() + SLOTS; i++)
        WD_TRY(finish(set.slots[i % SLOTS], out));
    return WARPDP_OK;
}

static int pairhmm_on_gpu(wd_gpu *gpu, const warpdp_pairhmm_batches *batches, int use_double, double *out,
                          int64_t n_out)
{
    WD_TRY(check_hap_lengths(batches));
    if (n_out == 0)
        return wd_ok();
    WD_TRY(wd_gpu_enter(gpu, FAMILY));
    Borrowed set;
    WD_TRY(set.take(gpu));
    WD_TRY(run_chunks(gpu, *set, batches, use_double, out));
    set.succeeded();
    return wd_ok();
}

int wd_gpu_pairhmm(wd_gpu *gpu, const warpdp_pairhmm_batches *batches, int use_double, double *out, int64_t n_out)
{
    return wd_gpu_call(FAMILY, [&] { return pairhmm_on_gpu(gpu, batches, use_double, out, n_out); });
}
