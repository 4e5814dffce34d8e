/* warpdp_align on a GPU handle: the launcher of warpdp/kernels/align.cu (the Python package's
   kernels, one source), doing what warpdp/kernels/align.py does:
   - the driver's own argument checks first (align_check_arguments: the CPU handle's refusals,
     max_traceback_cells included, with its messages);
   - consecutive chunks of pairs bounded in pairs, sequence bytes, traceback bytes (4 bits per DP
     cell in whole stripes) and the device memory budget; a pair whose traceback is over the
     per-chunk bound (or whose chunk alone would not fit the budget) is aligned by the CPU driver;
   - per chunk, the sequences, offsets and the kernels' Params struct go up through a pinned
     buffer, dp_kernel<GATK, TRACE, ORIGIN> (one warp per pair) and, with a traceback,
     traceback_kernel<GATK> (one thread per pair) run on the slot's stream, and the result records
     and CIGAR ops come back; two slots keep two chunks in flight (filling one while the other
     runs);
   - the CIGARs land in the caller's cigar_ops at the CPU driver's per-pair slots and are packed
     as the CPU handle packs them (wd_pack_ragged).
   Each call borrows a set of slots (streams and pinned buffers, kept for later calls as the
   Python runner keeps its slots; device memory is freed after each call). */
#include <new>
#include <mutex>
#include <stdint.h>
#include <string.h>
#include "gpu.h"
#include "host_copy.h"
#include "../align_call.h"
extern "C" {
#include "../seq_pairs.h" /* C declarations */
}
/* The kernels' align.cu (angle brackets: warpdp/kernels on the include path, not this file), in a
   namespace of its own: its namespace warpdp_align is also the name of the API's function. */
namespace wd_kernels {
#include <align.cu>
}

namespace {

namespace kernels = wd_kernels::warpdp_align;
using kernels::Params;
using Kernel = void (*)(const Params *);

const char *const FAMILY = "align";
constexpr int THREADS_PER_BLOCK = 128; /* four warps: four pairs per block */
constexpr int WARPS_PER_BLOCK = THREADS_PER_BLOCK / 32;
constexpr int TRACEBACK_THREADS = 128;
constexpr int64_t MAX_SHARED_BYTES = 96 * 1024; /* boundary rows of a block's warps in shared memory up to this */
constexpr int64_t CHUNK_PAIRS = (int64_t)1 << 18;
constexpr int64_t CHUNK_BYTES = (int64_t)64 << 20;       /* sequence bytes per chunk */
constexpr int64_t TRACE_CHUNK_BYTES = (int64_t)1 << 30;  /* traceback bytes per chunk */
constexpr int SLOTS = 2;
constexpr size_t SECTION_ALIGN = 256;                    /* each section of a chunk's buffers starts there */
constexpr size_t KEEP_PINNED_BYTES = (size_t)256 << 20;  /* a slot keeps its pinned buffers up to this */
constexpr int MAX_IDLE_SETS = 16;

size_t round_up(size_t value)
{
    return (value + SECTION_ALIGN - 1) / SECTION_ALIGN * SECTION_ALIGN;
}

/* Words of 4-bit cells in a pair's traceback: whole stripes of STRIPE_ROWS rows, per row of a lane
   align.cu's stripe_words (8 anti-diagonal steps a word, steps < cols + 32). */
int64_t traceback_words(int64_t rows, int64_t cols)
{
    return (rows + kernels::STRIPE_ROWS - 1) / kernels::STRIPE_ROWS * kernels::ROWS_PER_LANE * ((cols + 38) / 8 * 32);
}

/* One call: its pairs, the driver's parameters and what the kernels are asked for. */
struct Job {
    const warpdp_seq_pairs *pairs;
    const warpdp_align_params *api_params;
    const warpdp_align_results *results;
    align_params params;
    bool gatk, trace, origin, cigar;
    int64_t shared_limit; /* bytes of dynamic shared memory a block's boundary rows may take */
    int64_t slot_budget;  /* bytes of device memory one slot may plan on */
};

/* A pair's lengths; the DP's rows and columns (GATK mode: rows = ref = target). */
struct Dims {
    int64_t q, t, rows, cols;
};

Dims dims_of(const Job &job, int64_t i)
{
    Dims d;
    d.q = job.pairs->query_offsets[i + 1] - job.pairs->query_offsets[i];
    d.t = job.pairs->target_offsets[i + 1] - job.pairs->target_offsets[i];
    d.rows = job.gatk ? d.t : d.q;
    d.cols = job.gatk ? d.q : d.t;
    return d;
}

int64_t pair_trace_bytes(const Job &job, const Dims &d)
{
    return job.trace ? 4 * traceback_words(d.rows, d.cols) : 0;
}

/* Device bytes a pair adds to a chunk, at most: sequences, offsets, record, CIGAR room,
   traceback, boundary row in global scratch. */
int64_t pair_device_bytes(const Job &job, const Dims &d)
{
    const int64_t ops = job.trace ? 4 * (d.q + d.t + 2) : 0;
    return d.q + d.t + 3 * 8 + 4 * kernels::RECORD + ops + pair_trace_bytes(job, d) +
           (d.cols + 1) * kernels::boundary_bytes(job.origin);
}

struct Chunk {
    int64_t start, stop;
    bool on_gpu; /* false: one pair for the CPU driver */
};

/* The chunk from pair `start` on (align.py's plan_chunks, with the budget as one more bound). */
Chunk next_chunk(const Job &job, int64_t start)
{
    const int64_t n = job.pairs->n_pairs;
    int64_t seq = 0, trace = 0, device = 0, i = start;
    for (; i < n && i - start < CHUNK_PAIRS; i++) {
        const Dims d = dims_of(job, i);
        const int64_t tb = pair_trace_bytes(job, d), db = pair_device_bytes(job, d);
        if (tb > TRACE_CHUNK_BYTES || db > job.slot_budget)
            return i == start ? Chunk{i, i + 1, false} : Chunk{start, i, true};
        if (i > start && (seq + d.q + d.t > CHUNK_BYTES || trace + tb > TRACE_CHUNK_BYTES ||
                          device + db > job.slot_budget))
            break;
        seq += d.q + d.t;
        trace += tb;
        device += db;
    }
    return Chunk{start, i, true};
}

/* One GPU chunk's buffers: the upload (Params, sequences, offsets) then device-only sections. */
struct Layout {
    int64_t start, n, q0, q1, t0, t1, max_cols, trace_words;
    bool shared;
    size_t shared_bytes;
    size_t params, query, target, qoff, toff, trace_offsets, blob_bytes;
    size_t out, ops, trace, scratch, device_bytes;
    size_t out_bytes, ops_ints, pinned_out_bytes;
};

Layout layout_of(const Job &job, const Chunk &c)
{
    const int64_t *qo = job.pairs->query_offsets, *to = job.pairs->target_offsets;
    Layout L = {};
    L.start = c.start;
    L.n = c.stop - c.start;
    L.q0 = qo[c.start], L.q1 = qo[c.stop], L.t0 = to[c.start], L.t1 = to[c.stop];
    int64_t cols = 0;
    for (int64_t i = c.start; i < c.stop; i++) {
        const Dims d = dims_of(job, i);
        cols += d.cols;
        L.max_cols = d.cols > L.max_cols ? d.cols : L.max_cols;
        L.trace_words += job.trace ? traceback_words(d.rows, d.cols) : 0;
    }
    const int64_t bb = kernels::boundary_bytes(job.origin);
    const int64_t shared_bytes = WARPS_PER_BLOCK * (L.max_cols + 1) * bb;
    L.shared = shared_bytes <= job.shared_limit;
    L.shared_bytes = L.shared ? (size_t)shared_bytes : 0;
    L.ops_ints = job.trace ? (size_t)((L.q1 - L.q0) + (L.t1 - L.t0) + 2 * L.n) : 0;
    L.out_bytes = (size_t)(4 * kernels::RECORD * L.n);
    size_t at = 0;
    auto section = [&at](size_t bytes) {
        const size_t here = at;
        at = round_up(at + (bytes > 0 ? bytes : 1));
        return here;
    };
    const size_t offsets_bytes = (size_t)(8 * (L.n + 1));
    L.params = section(sizeof(Params));
    L.query = section((size_t)(L.q1 - L.q0));
    L.target = section((size_t)(L.t1 - L.t0));
    L.qoff = section(offsets_bytes);
    L.toff = section(offsets_bytes);
    L.trace_offsets = section(offsets_bytes);
    L.blob_bytes = at;
    L.out = section(L.out_bytes);
    L.ops = section(4 * L.ops_ints);
    L.trace = section((size_t)(4 * L.trace_words));
    L.scratch = section(L.shared ? 0 : (size_t)((cols + L.n) * bb));
    L.device_bytes = at;
    L.pinned_out_bytes = L.out_bytes + (job.cigar ? 4 * L.ops_ints : 0);
    return L;
}

/* The kernels' launch struct for a chunk whose device buffer starts at base. */
Params params_of(const Job &job, const Layout &L, uint8_t *base)
{
    Params p;
    memset(&p, 0, sizeof p);
    p.query = base + L.query;
    p.target = base + L.target;
    p.query_offsets = reinterpret_cast<const long long *>(base + L.qoff);
    p.target_offsets = reinterpret_cast<const long long *>(base + L.toff);
    p.trace_offsets = reinterpret_cast<const long long *>(base + L.trace_offsets);
    p.out = reinterpret_cast<int *>(base + L.out);
    p.trace = reinterpret_cast<unsigned *>(base + L.trace);
    p.scratch = base + L.scratch;
    p.ops = reinterpret_cast<unsigned *>(base + L.ops);
    if (!job.gatk) { /* GATK mode scores with match, mismatch and its gaps */
        memcpy(p.matrix, job.params.matrix, sizeof p.matrix);
        p.mode = job.params.mode;
        p.first = job.params.gap_first;
        p.ext = job.params.gap_ext;
    }
    p.n = (int)L.n;
    p.zdrop = job.params.zdrop;
    p.overhang = job.params.overhang;
    p.match = job.params.match;
    p.mismatch = job.params.mismatch;
    p.gap_open = job.params.gap_open;
    p.gap_extend = job.params.gap_extend;
    p.shared_boundary = L.shared;
    p.max_cols = (int)L.max_cols;
    return p;
}

/* Writes the chunk's upload (what the kernels read) into the pinned buffer blob. */
void fill(const Job &job, const Layout &L, uint8_t *blob, uint8_t *device_base)
{
    const warpdp_seq_pairs *pairs = job.pairs;
    wd_copy_parallel({{blob + L.query, pairs->query_bases + L.q0, (size_t)(L.q1 - L.q0)},
                      {blob + L.target, pairs->target_bases + L.t0, (size_t)(L.t1 - L.t0)}});
    int64_t *qoff = reinterpret_cast<int64_t *>(blob + L.qoff), *toff = reinterpret_cast<int64_t *>(blob + L.toff);
    int64_t *trace_offsets = reinterpret_cast<int64_t *>(blob + L.trace_offsets);
    trace_offsets[0] = 0;
    for (int64_t k = 0; k <= L.n; k++) {
        qoff[k] = pairs->query_offsets[L.start + k] - L.q0;
        toff[k] = pairs->target_offsets[L.start + k] - L.t0;
        if (k > 0) {
            const Dims d = dims_of(job, L.start + k - 1);
            trace_offsets[k] = trace_offsets[k - 1] + (job.trace ? traceback_words(d.rows, d.cols) : 0);
        }
    }
    const Params p = params_of(job, L, device_base);
    memcpy(blob + L.params, &p, sizeof p);
}

/* align.py's DP_KERNELS: (gatk, trace, origin). */
Kernel dp_kernel_of(const Job &job)
{
    if (job.gatk)
        return kernels::dp_kernel<true, true, false>;
    if (job.trace)
        return kernels::dp_kernel<false, true, false>;
    return job.origin ? kernels::dp_kernel<false, false, true> : kernels::dp_kernel<false, false, false>;
}

int launch(Kernel kernel, const char *name, int64_t blocks, int threads, size_t shared, cudaStream_t stream,
           const Params *params)
{
    void *args[] = {&params};
    const cudaError_t error = cudaLaunchKernel(reinterpret_cast<const void *>(kernel), dim3((unsigned)blocks),
                                               dim3((unsigned)threads), args, shared, stream);
    if (error != cudaSuccess) {
        cudaGetLastError(); /* a launch error is not sticky: clear it for the thread's next call */
        return wd_cuda_fail(FAMILY, name, error);
    }
    return wd_cuda_launched(FAMILY, name);
}

/* A chunk in flight: its buffers and stream. The stream is declared last so that it is destroyed
   first, waiting for the slot's work before the memory goes. */
struct Slot {
    PinnedArray<uint8_t> in, out;
    DeviceArray<uint8_t> device;
    Stream stream;
    Layout layout;
    bool busy = false;
};

int grow_to(Slot &slot, const Layout &L)
{
    if (slot.in.size() < L.blob_bytes)
        WD_TRY(slot.in.allocate(round_up(L.blob_bytes + L.blob_bytes / 4), FAMILY, "allocating pinned memory"));
    if (slot.out.size() < L.pinned_out_bytes)
        WD_TRY(slot.out.allocate(round_up(L.pinned_out_bytes + L.pinned_out_bytes / 4), FAMILY,
                                 "allocating pinned memory"));
    if (slot.device.size() < L.device_bytes)
        WD_TRY(slot.device.allocate(L.device_bytes, FAMILY, "allocating device memory"));
    return WARPDP_OK;
}

/* Enqueues the chunk on the slot's stream: upload, kernels, copies back. */
int enqueue(const Job &job, Slot &slot, const Layout &L)
{
    const cudaStream_t stream = slot.stream.get();
    uint8_t *base = slot.device.get();
    fill(job, L, slot.in.get(), base);
    WD_CUDA_TRY(FAMILY, "copying a chunk to the GPU",
                cudaMemcpyAsync(base, slot.in.get(), L.blob_bytes, cudaMemcpyHostToDevice, stream));
    const Params *params = reinterpret_cast<const Params *>(base + L.params);
    WD_TRY(launch(dp_kernel_of(job), "dp_kernel", (L.n + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK, THREADS_PER_BLOCK,
                  L.shared_bytes, stream, params));
    if (job.trace) {
        const Kernel traceback = job.gatk ? kernels::traceback_kernel<true> : kernels::traceback_kernel<false>;
        WD_TRY(launch(traceback, "traceback_kernel", (L.n + TRACEBACK_THREADS - 1) / TRACEBACK_THREADS,
                      TRACEBACK_THREADS, 0, stream, params));
    }
    WD_CUDA_TRY(FAMILY, "copying results from the GPU",
                cudaMemcpyAsync(slot.out.get(), base + L.out, L.out_bytes, cudaMemcpyDeviceToHost, stream));
    if (job.cigar)
        WD_CUDA_TRY(FAMILY, "copying CIGARs from the GPU",
                    cudaMemcpyAsync(slot.out.get() + L.out_bytes, base + L.ops, 4 * L.ops_ints,
                                    cudaMemcpyDeviceToHost, stream));
    slot.layout = L;
    slot.busy = true;
    return WARPDP_OK;
}

/* Waits for the slot's chunk; its records into the result columns, its CIGARs into their slots
   of cigar_ops (counts in cigar_offsets[i + 1], as the CPU driver leaves them). */
int collect(const Job &job, Slot &slot)
{
    slot.busy = false;
    WD_TRY(slot.stream.wait(FAMILY, "running a chunk"));
    const Layout &L = slot.layout;
    const warpdp_align_results *r = job.results;
    const int64_t *qo = job.pairs->query_offsets, *to = job.pairs->target_offsets;
    const int32_t *records = reinterpret_cast<const int32_t *>(slot.out.get());
    const uint32_t *ops = reinterpret_cast<const uint32_t *>(slot.out.get() + L.out_bytes);
    for (int64_t k = 0; k < L.n; k++) {
        const int64_t i = L.start + k;
        const int32_t *x = records + kernels::RECORD * k;
        r->score[i] = x[0];
        r->query_begin[i] = x[1];
        r->query_end[i] = x[2];
        r->target_begin[i] = x[3];
        r->target_end[i] = x[4];
        if (!job.cigar)
            continue;
        const int64_t count = x[7], room = (qo[i + 1] - qo[i]) + (to[i + 1] - to[i]) + 2;
        if (count < 0 || count > room)
            return wd_fail(WARPDP_ERR_INTERNAL, "warpdp align (GPU): pair %lld: %lld CIGAR ops (room for %lld)",
                           (long long)i, (long long)count, (long long)room);
        const int64_t in_chunk = (qo[i] - L.q0) + (to[i] - L.t0) + 2 * k;
        memcpy(r->cigar_ops + qo[i] + to[i] + 2 * i, ops + in_chunk, (size_t)count * sizeof(uint32_t));
        r->cigar_offsets[i + 1] = count;
    }
    return WARPDP_OK;
}

/* Pair i on the CPU driver (scalar variant, one thread), into the same places. */
int align_on_cpu(const Job &job, int64_t i)
{
    const warpdp_seq_pairs *pairs = job.pairs;
    const warpdp_align_results *r = job.results;
    const Dims d = dims_of(job, i);
    const int64_t q_offsets[2] = {0, d.q}, t_offsets[2] = {0, d.t};
    const int64_t q0 = pairs->query_offsets[i], t0 = pairs->target_offsets[i];
    const align_pairs one = {pairs->query_bases + q0, pairs->target_bases + t0, q_offsets, t_offsets, 1, d.q, d.t};
    align_outputs out = {r->score + i, r->query_begin + i, r->query_end + i, r->target_begin + i, r->target_end + i,
                         NULL, 0, NULL};
    if (job.cigar) {
        out.ops = r->cigar_ops + q0 + t0 + 2 * i;
        out.ops_capacity = d.q + d.t + 2;
        out.ops_count = r->cigar_offsets + i + 1;
    }
    warpdp_bad_argument bad = {0, -1};
    return wd_align_driver_status(align_run(&one, &job.params, &out, 1, WARPDP_ISA_SCALAR, &bad), bad,
                                  job.api_params);
}

/* The slots one call uses; sets are kept between calls (per device), one call at a time each. */
struct SlotSet {
    int device;
    Slot slots[SLOTS];
};

struct Pool {
    std::mutex lock;
    SlotSet *idle[MAX_IDLE_SETS];
    int n_idle = 0;
};

/* Never destroyed: CUDA may be gone by the time static objects are (at exit the memory goes anyway). */
Pool &pool()
{
    static Pool *const made = new Pool();
    return *made;
}

/* A borrowed SlotSet, given back (device memory freed, large pinned buffers too) on every path. */
class Borrowed {
  public:
    Borrowed() = default;
    Borrowed(const Borrowed &) = delete;
    Borrowed &operator=(const Borrowed &) = delete;
    ~Borrowed() { give_back(); }

    /* Takes an idle set of this device, or makes one (streams on the current device). */
    int take(int device)
    {
        {
            std::lock_guard<std::mutex> guard(pool().lock);
            Pool &p = pool();
            for (int k = 0; k < p.n_idle && set_ == nullptr; k++)
                if (p.idle[k]->device == device) {
                    set_ = p.idle[k];
                    p.idle[k] = p.idle[--p.n_idle];
                }
        }
        if (set_ != nullptr)
            return WARPDP_OK;
        set_ = new (std::nothrow) SlotSet();
        if (set_ == nullptr)
            return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp align (GPU): out of memory");
        set_->device = device;
        for (Slot &slot : set_->slots)
            WD_TRY(slot.stream.create(FAMILY));
        return WARPDP_OK;
    }
    SlotSet &set() { return *set_; }

  private:
    void give_back()
    {
        if (set_ == nullptr)
            return;
        bool keep = true;
        for (Slot &slot : set_->slots) {
            if (slot.stream.get() == nullptr || cudaStreamSynchronize(slot.stream.get()) != cudaSuccess)
                keep = false;
            slot.busy = false;
            slot.device.release();
            if (slot.in.size() + slot.out.size() > KEEP_PINNED_BYTES) {
                slot.in.release();
                slot.out.release();
            }
        }
        {
            std::lock_guard<std::mutex> guard(pool().lock);
            Pool &p = pool();
            if (keep && p.n_idle < MAX_IDLE_SETS) {
                p.idle[p.n_idle++] = set_;
                set_ = nullptr;
            }
        }
        delete set_;
        set_ = nullptr;
    }
    SlotSet *set_ = nullptr;
};

/* Every pair, chunk after chunk, two chunks in flight. */
int run_chunks(const Job &job, SlotSet &set)
{
    int next = 0;
    for (int64_t start = 0; start < job.pairs->n_pairs;) {
        const Chunk chunk = next_chunk(job, start);
        start = chunk.stop;
        if (!chunk.on_gpu) {
            WD_TRY(align_on_cpu(job, chunk.start));
            continue;
        }
        const Layout L = layout_of(job, chunk); /* planned while the slot's last chunk may still run */
        Slot &slot = set.slots[next];
        next = (next + 1) % SLOTS;
        if (slot.busy)
            WD_TRY(collect(job, slot));
        WD_TRY(grow_to(slot, L));
        WD_TRY(enqueue(job, slot, L));
    }
    for (int k = 0; k < SLOTS; k++) { /* the older chunk first */
        Slot &slot = set.slots[(next + k) % SLOTS];
        if (slot.busy)
            WD_TRY(collect(job, slot));
    }
    return WARPDP_OK;
}

Job job_of(const wd_gpu *gpu, const warpdp_seq_pairs *pairs, const warpdp_align_params *params,
           const warpdp_align_results *results)
{
    Job job;
    job.pairs = pairs;
    job.api_params = params;
    job.results = results;
    job.params = wd_align_driver_params(params);
    job.gatk = params->mode == WARPDP_ALIGN_GATK;
    job.cigar = params->cigar != 0;
    job.trace = job.cigar || job.gatk;
    job.origin = !job.trace && (params->mode == WARPDP_ALIGN_LOCAL || params->mode == WARPDP_ALIGN_SEMIGLOBAL);
    job.shared_limit = gpu->max_shared_per_block_optin < MAX_SHARED_BYTES ? gpu->max_shared_per_block_optin
                                                                          : MAX_SHARED_BYTES;
    job.slot_budget = 0; /* set once the device is current */
    return job;
}

/* Lets every dp_kernel instance take shared_limit bytes of dynamic shared memory (above 48 KiB
   needs the opt-in). */
int allow_shared(const Job &job)
{
    WD_CUDA_TRY(FAMILY, "setting dp_kernel's shared memory",
                cudaFuncSetAttribute(reinterpret_cast<const void *>(dp_kernel_of(job)),
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)job.shared_limit));
    return WARPDP_OK;
}

} // namespace

static int align_on_gpu(wd_gpu *gpu, const warpdp_seq_pairs *pairs, const warpdp_align_params *params,
                 const warpdp_align_results *results)
{
    Job job = job_of(gpu, pairs, params, results);
    const align_pairs c_pairs = wd_align_driver_pairs(pairs);
    const align_outputs out = wd_align_driver_outputs(results, params->cigar);
    int32_t largest = 1;
    warpdp_bad_argument bad = {0, -1};
    WD_TRY(wd_align_driver_status(align_check_arguments(&c_pairs, &job.params, &out, 0, &largest, &bad), bad,
                                  params));
    if (pairs->n_pairs > 0) {
        WD_TRY(wd_gpu_enter(gpu, FAMILY));
        job.slot_budget = (int64_t)(wd_gpu_budget(gpu) / SLOTS) - 16 * (int64_t)SECTION_ALIGN;
        WD_TRY(allow_shared(job));
        Borrowed borrowed;
        WD_TRY(borrowed.take(gpu->device));
        WD_TRY(run_chunks(job, borrowed.set()));
    }
    if (job.cigar)
        wd_pack_ragged(results->cigar_ops, NULL, sizeof(uint32_t), results->cigar_offsets, pairs->n_pairs,
                       pairs->query_offsets, pairs->target_offsets, 2);
    return wd_ok();
}

int wd_gpu_align(wd_gpu *gpu, const warpdp_seq_pairs *pairs, const warpdp_align_params *params,
                 const warpdp_align_results *results)
{
    return wd_gpu_call(FAMILY, [&] { return align_on_gpu(gpu, pairs, params, results); });
}
