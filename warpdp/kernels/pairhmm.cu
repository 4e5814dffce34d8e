/* Pair-HMM forward algorithm (GATK / Intel GKL numerics) on NVIDIA GPUs.
 *
 * Compiled ahead of time into fatbin/ (runtime/fatbin_build.py), else at run time by NVRTC;
 * warpdp/kernels/pairhmm.py picks the template
 * configurations by name and launches them. The design follows the gpuPairHMM paper
 * (Schmidt et al., 2024); the code is this project's own.
 *
 * Work layout
 *   One work item = one read scored against a run of consecutive haplotypes of its batch.
 *   The items are made on the GPU from the chunk's offsets (plan_*_kernel below), grouped by
 *   kernel configuration and longest first; hap_codes_kernel turns haplotype bytes into codes.
 *   A subwarp of G lanes computes one item. The read's rows are dealt out to the lanes in
 *   blocks of T consecutive rows (lane t holds rows t*T .. t*T+T-1 of a strip of G*T rows) and
 *   stay in registers; the item's haplotypes, concatenated into one stream of columns, flow
 *   through the subwarp one column per step: at step k lane t computes column k - t of its rows.
 *   Everything a cell needs then is either in the same lane (the previous column, the row above
 *   inside the lane) or in the lane above one step earlier, which __shfl_up_sync delivers.
 *   The column codes flow down the subwarp the same way, so only lane 0 reads the stream
 *   (four codes per 32-bit load). A new haplotype starts right behind the previous one in the
 *   stream (its first column carries a flag that makes each lane reset its state), so the
 *   pipeline fills once per item rather than once per pair.
 *
 *   Reads are padded at the TOP to a whole number of strips: padding rows have emission 0,
 *   which makes them reproduce row 0 of the recurrence (M = X = 0, Y = K/hapLen) exactly, and
 *   puts the read's last row in the last register of the last lane, where the result is
 *   summed. Reads longer than one strip (MULTI configurations) are computed strip after
 *   strip; the last lane of a strip writes its bottom row to a per-subwarp scratch row that
 *   lane 0 of the next strip reads as its top boundary.
 *
 * Emission and transitions
 *   The emission of a cell depends only on the read row and the haplotype base, which has
 *   five values (A, C, G, T, other = N). Each lane precomputes, per row and hap base,
 *   e*MM and e*GapM into shared memory, so a cell's M update is one multiply and one FMA
 *   after a table lookup with no branch. The per-row transition probabilities MX, MY and
 *   XX = YY stay in registers.
 *
 * Numerics (see docs/semantics.md)
 *   Float with K = 2^120; results below 1e-28 are queued for a double-precision pass
 *   (K = 2^1020) run by the same kernel template instantiated for double, as GKL does.
 *   The float path uses FMAs and the e*MM / e*GapM products: a few roundings per cell away
 *   from the CPU backend, far inside the 1e-4 log10 tolerance. The double path is the
 *   rescue for results near underflow, where flush-to-zero decides the answer, so it
 *   repeats the CPU backend's operations in the same order without FMAs and flushes
 *   subnormals as the CPU does: it gives the CPU's result to the last bit or so.
 *   Compile with --fmad=false: the only fused multiply-adds are the explicit ones.
 */

/* Steps of a four-column group unrolled into straight code (1, 2 or 4): more unrolling
   exposes more independent work, less keeps the loop inside the instruction cache. */
#ifndef WARPDP_STEP_UNROLL
#define WARPDP_STEP_UNROLL 4
#endif


#ifndef WARPDP_DYNAMIC_SHARED
#define WARPDP_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
#endif

namespace warpdp_pairhmm {

typedef unsigned char u8;
typedef unsigned int u32;

/* Column codes of the haplotype stream (one byte per haplotype base, made by the host). */
enum : u32 {
    CODE_BASE = 7u,        /* bits 0-2: 0..3 = A, C, G, T; 4 = any other byte (N) */
    CODE_FIRST = 8u,       /* first column of a haplotype: lanes reset their state */
    CODE_LAST = 16u,       /* last column of a haplotype: the result is complete */
    CODE_NONE_BIT = 128u,  /* no column here (before or after the item's stream) */
    CODE_NONE = 0x84u,     /* a "no column" code whose base bits still index the tables */
};
constexpr u32 CODE_NONE4 = 0x84848484u;
constexpr int N_CODES = 5;
constexpr int MAX_WARPS_PER_BLOCK = 4;  /* the launcher picks 2 or 4 per configuration */
constexpr int STEP_UNROLL = WARPDP_STEP_UNROLL;
constexpr unsigned FULL_MASK = 0xffffffffu;

/* One work item: a read against `stream_len` columns of consecutive haplotypes. */
struct Item {
    int read_start;   /* offset of the read in each of the five read planes */
    int read_len;
    int code_start;   /* offset of the first haplotype's first code */
    int stream_len;   /* sum of the item's haplotype lengths */
    int hap_index;    /* index of the first haplotype in hap_starts */
    int out_index;    /* output index of the first pair; the item's pairs follow it */
    int reserved0, reserved1;
};

/* Launch parameters, read from device memory (one block of 8-byte fields per launch). */
struct Params {
    const Item *items;
    const int *n_items;       /* read on the device: the double pass learns its count there */
    int *work_counter;        /* items handed out so far (zero before the launch) */
    const u8 *reads;          /* five planes: bases, quals, ins, del, gcp */
    long long read_plane;     /* bytes between planes */
    const u8 *codes;          /* haplotype stream codes, padded at the end */
    const int *hap_starts;    /* offset of each haplotype in codes, plus the end, plus one spare */
    const void *ph2pr;        /* GKL tables in the kernel's precision */
    const void *mm;
    double *out;              /* log10 likelihoods */
    Item *fb_items;           /* float pass: pairs to redo in double */
    int *fb_count;
    void *scratch;            /* MULTI: per subwarp, scratch_stride cells */
    long long scratch_stride;
    double initial;           /* K */
    double log10_initial;     /* log10(K) as GKL computes it, exact in the kernel's precision */
    const int *items_offset;  /* where this launch's items start in `items` (set by the planner) */
    long long unused;
};

/* Work planning on the GPU (plan_count_kernel, plan_prefix_kernel, plan_scatter_kernel): one
   thread per read turns the chunk's offsets into work items, grouped by kernel configuration
   (bin) and, inside a bin, longest first (a counting sort on the item length): the subwarps of
   a warp then get items of about the same length, and the last items handed out are short. */
constexpr int MAX_BINS = 16;
constexpr int PLAN_BUCKETS = 64;
struct PlanParams {
    const int *read_offsets;  /* n_reads + 1, into the read planes */
    const int *batch_reads;   /* n_batches + 1 */
    const int *batch_haps;    /* n_batches + 1 */
    const int *pair_base;     /* n_batches: output index of each batch's first pair */
    const int *hap_starts;    /* n_haps + 1, into the codes */
    Item *items;              /* room for one item per pair */
    int *bin_count;           /* MAX_BINS: items per bin (prefix kernel) */
    int *bin_start;           /* MAX_BINS: first item of each bin (prefix kernel) */
    int *bucket_count;        /* MAX_BINS * PLAN_BUCKETS, zero before */
    int *bucket_cursor;       /* MAX_BINS * PLAN_BUCKETS, zero before */
    int *bucket_start;        /* MAX_BINS * PLAN_BUCKETS (prefix kernel) */
    long long n_reads, n_batches, n_bins;
    long long cap;            /* most haplotypes per item */
    long long multi_from;     /* reads longer than this take strips of strip_rows rows */
    long long strip_rows;
    double columns;           /* an item should not take more column steps than this */
    double mean_hap_len;
    double bucket_scale;      /* length buckets per column */
    long long bounds[MAX_BINS];  /* bin b takes reads up to bounds[b] (the last bin: any) */
};

/* The launcher writes these layouts by field name (pairhmm.py, PARAMS and PLAN_PARAMS); it
   checks the sizes the kernel below reports when the module loads. */
static_assert(sizeof(Params) == 144, "Params layout changed: update PARAMS in warpdp/kernels/pairhmm.py");
static_assert(sizeof(PlanParams) == 288, "PlanParams layout changed: update PLAN_PARAMS in warpdp/kernels/pairhmm.py");

extern "C" __global__ void pairhmm_struct_sizes(unsigned long long *out)
{
    out[0] = sizeof(Params);
    out[1] = sizeof(PlanParams);
}

struct __align__(16) CellF { float m, x, y, unused; };
struct __align__(16) CellD { double m, x, y, unused; };

template <typename Real> struct Num;

template <> struct Num<float> {
    typedef CellF Cell;
    static constexpr bool EXACT = false;
    static __device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
    static __device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
    /* Shared-memory tables: per (hap code, group of four rows) one float4 per lane. */
    static __device__ __forceinline__ int slot(int code, int row, int lane, int groups)
    {
        return (((code * groups + (row >> 2)) * 32 + lane) << 2) + (row & 3);
    }
    static __device__ __forceinline__ void load4(const float *table, int code, int group, int lane,
                                                 int groups, float *v)
    {
        const float4 a = reinterpret_cast<const float4 *>(table)[(code * groups + group) * 32 + lane];
        v[0] = a.x;
        v[1] = a.y;
        v[2] = a.z;
        v[3] = a.w;
    }
};

template <> struct Num<double> {
    typedef CellD Cell;
    static constexpr bool EXACT = true;
    /* The CPU backend (like GKL) runs with flush-to-zero and denormals-are-zero: every
       subnormal result becomes 0. All values here are >= 0, so this reproduces it. */
    static __device__ __forceinline__ double ftz(double x) { return x < 2.2250738585072014e-308 ? 0.0 : x; }
    static __device__ __forceinline__ double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
    static __device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }
    /* Two double2 per lane and group, each half in its own lane-contiguous run (no bank conflicts). */
    static __device__ __forceinline__ int slot(int code, int row, int lane, int groups)
    {
        return ((((code * groups + (row >> 2)) * 2 + ((row & 3) >> 1)) * 32 + lane) << 1) + (row & 1);
    }
    static __device__ __forceinline__ void load4(const double *table, int code, int group, int lane,
                                                 int groups, double *v)
    {
        const double2 *t = reinterpret_cast<const double2 *>(table);
        const double2 a = t[((code * groups + group) * 2) * 32 + lane];
        const double2 b = t[((code * groups + group) * 2 + 1) * 32 + lane];
        v[0] = a.x;
        v[1] = a.y;
        v[2] = b.x;
        v[3] = b.y;
    }
};

__device__ __forceinline__ float flush(float x) { return x; }
__device__ __forceinline__ double flush(double x) { return Num<double>::ftz(x); }

template <bool B> struct Flag {
    static constexpr bool value = B;
};

__device__ __forceinline__ int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

__device__ __forceinline__ int base_code(int b)
{
    return b == 'A' ? 0 : b == 'C' ? 1 : b == 'G' ? 2 : b == 'T' ? 3 : 4;
}

/* The result of one pair, in the precision's way (GKL's rule for float). */
__device__ __forceinline__ void store_result(const Params *params, float total, int out_index,
                                             const Item &item, int hap_index, int code_start, int hap_len)
{
    if (total >= 1e-28f) {
        /* log10f as a correctly rounded float, then GKL's float subtraction. */
        const float log10_total = (float)log10((double)total);
        params->out[out_index] = (double)(log10_total - (float)params->log10_initial);
    } else {
        const int slot = atomicAdd(params->fb_count, 1);
        Item redo;
        redo.read_start = item.read_start;
        redo.read_len = item.read_len;
        redo.code_start = code_start;
        redo.stream_len = hap_len;
        redo.hap_index = hap_index;
        redo.out_index = out_index;
        redo.reserved0 = 0;
        redo.reserved1 = 0;
        params->fb_items[slot] = redo;
    }
}

__device__ __forceinline__ void store_result(const Params *params, double total, int out_index,
                                             const Item &, int, int, int)
{
    /* total is already flushed like the CPU's; 0 gives -inf as log10(0) does there. */
    params->out[out_index] = total == 0.0 ? -__longlong_as_double(0x7ff0000000000000LL)
                                          : log10(total) - params->log10_initial;
}

template <typename Real, int G, int T, bool MULTI>
__global__ void __launch_bounds__(MAX_WARPS_PER_BLOCK * 32) forward_kernel(const Params *__restrict__ params)
{
    static_assert(G == 4 || G == 8 || G == 16 || G == 32, "a subwarp has 4, 8, 16 or 32 lanes");
    static_assert(T >= 4 && T % 4 == 0, "rows per lane come in groups of four");
    constexpr int GROUPS = T / 4;
    constexpr int SUBS = 32 / G;
    constexpr int GT = G * T;
    typedef Num<Real> N;
    typedef typename N::Cell Cell;

    WARPDP_DYNAMIC_SHARED(float4, shared_tables);

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int t = lane & (G - 1);
    const int sub = lane / G;
    Real *const tab_mm = reinterpret_cast<Real *>(shared_tables) + warp * (2 * N_CODES * T * 32);
    Real *const tab_gm = tab_mm + N_CODES * T * 32;
    const Real K = (Real)params->initial;
    const Real *const ph2pr = reinterpret_cast<const Real *>(params->ph2pr);
    const Real *const mm = reinterpret_cast<const Real *>(params->mm);
    const u8 *const reads = params->reads;
    const long long plane = params->read_plane;
    const int n_items = *params->n_items;
    const Item *const items = params->items + (params->items_offset ? *params->items_offset : 0);
    Cell *lane_scratch = nullptr;
    if (MULTI) {
        const long long subwarp = ((long long)blockIdx.x * (blockDim.x >> 5) + warp) * SUBS + sub;
        lane_scratch = reinterpret_cast<Cell *>(params->scratch) + subwarp * params->scratch_stride;
    }

    for (;;) {
        /* Dynamic hand-out: items are sorted longest first, so the tail is short. */
        int first = 0;
        if (lane == 0)
            first = atomicAdd(params->work_counter, SUBS);
        first = __shfl_sync(FULL_MASK, first, 0);
        if (first >= n_items)
            break;
        const int index = first + sub;
        const bool valid = index < n_items;
        Item item = {0, 0, 0, 0, 0, 0, 0, 0};
        if (valid)
            item = items[index];

        const int n_strips = valid ? (MULTI ? (item.read_len + GT - 1) / GT : 1) : 0;
        const int pad = n_strips * GT - item.read_len;
        const int lead = item.code_start & 3;  /* the stream is read in aligned words */
        const u8 *const stream = params->codes + (item.code_start - lead);
        const int stream_end = lead + item.stream_len;
        const int iters = valid ? stream_end + G - 1 : 0;
        /* All subwarps of a warp step together (the shuffles need the whole warp). */
        const int warp_iters = (__reduce_max_sync(FULL_MASK, iters) + 3) & ~3;
        const int warp_strips = __reduce_max_sync(FULL_MASK, n_strips);

        for (int s = 0; s < warp_strips; ++s) {
            const bool on = s < n_strips;
            const int npad = (on && s == 0) ? clamp_int(pad - t * T, 0, T) : 0;
            /* Is the row above my first row row 0 (or padding that equals it)? */
            const bool top_is_row0 = s == 0 && t * T <= pad;

            /* Per-row probabilities: transitions to registers; emission (double: e; float:
               e*MM and e*GapM) to shared memory, per hap code. */
            Real MX[T], MY[T], XX[T], MM[N::EXACT ? T : 1], GM[N::EXACT ? T : 1];
#pragma unroll
            for (int u = 0; u < T; ++u) {
                const int row = s * GT + t * T + u - pad;
                Real mx = 0, my = 0, xx = 1;  /* padding: X stays 0, Y is carried unchanged */
                Real p_mm = 0, gap_m = 0;
                Real e_code[N_CODES];
#pragma unroll
                for (int c = 0; c < N_CODES; ++c)
                    e_code[c] = 0;  /* padding: M = 0 */
                if (on && row >= 0) {
                    const u8 *r = reads + item.read_start + row;
                    const int b = base_code(r[0]);
                    const int q = r[plane] & 127, ins = r[2 * plane] & 127;
                    const int del = r[3 * plane] & 127, gcp = r[4 * plane] & 127;
                    mx = ph2pr[ins];
                    my = ph2pr[del];
                    xx = ph2pr[gcp];
                    gap_m = (Real)1 - xx;
                    const int hi = ins > del ? ins : del, lo = ins > del ? del : ins;
                    p_mm = mm[((hi * (hi + 1)) >> 1) + lo];
                    const Real p = ph2pr[q];
                    const Real e_match = (Real)1 - p, e_mismatch = N::div(p, (Real)3);
#pragma unroll
                    for (int c = 0; c < N_CODES; ++c)
                        e_code[c] = (b == 4 || c == 4 || b == c) ? e_match : e_mismatch;
                }
                MX[u] = mx;
                MY[u] = my;
                XX[u] = xx;
                if constexpr (N::EXACT) {
                    MM[u] = p_mm;
                    GM[u] = gap_m;
                }
#pragma unroll
                for (int c = 0; c < N_CODES; ++c) {
                    if constexpr (N::EXACT) {
                        tab_mm[N::slot(c, u, lane, GROUPS)] = e_code[c];
                    } else {
                        tab_mm[N::slot(c, u, lane, GROUPS)] = e_code[c] * p_mm;
                        tab_gm[N::slot(c, u, lane, GROUPS)] = e_code[c] * gap_m;
                    }
                }
            }

            Real M[T], X[T], Y[T];
#pragma unroll
            for (int r = 0; r < T; ++r)
                M[r] = X[r] = Y[r] = 0;
            Real dM = 0, dX = 0, dY = 0;  /* the row above at the previous column */
            Real sum_m = 0, sum_x = 0, top_y = 0;
            int ord = -1;                 /* which haplotype of the item this lane is in */
            u32 word = CODE_NONE;         /* code | hapLen << 8 of this lane's last column */

            const bool feeder = on && t == 0;
            u32 w_cur = CODE_NONE4, w_next = CODE_NONE4;
            int hap_cur = 0, hap_next = 0, feed_ord = 0;
            if (feeder) {
                w_cur = *reinterpret_cast<const u32 *>(stream);
                w_next = *reinterpret_cast<const u32 *>(stream + 4);
                hap_next = params->hap_starts[item.hap_index + 1] - params->hap_starts[item.hap_index];
            }
            const bool from_scratch = MULTI && feeder && s > 0;
            const bool to_scratch = MULTI && on && t == G - 1 && s + 1 < n_strips;
            Cell b_cur[4], b_next[4];
            if (MULTI) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    b_cur[i] = from_scratch ? lane_scratch[i] : Cell{0, 0, 0, 0};
                    b_next[i] = from_scratch ? lane_scratch[4 + i] : Cell{0, 0, 0, 0};
                }
            }

            /* One step: every lane computes one column of its T rows. SLOW steps also handle
               the rare events (a lane starting a new haplotype, a result to store); a group of
               four steps in which no lane of the warp meets one runs the branch-free FAST
               version, which the compiler can interleave across the four steps. */
            auto step = [&](const int u, const int k, const u32 w, const Cell *bnd, auto slow_tag) {
                constexpr bool SLOW = decltype(slow_tag)::value;
                /* This step's column code: from the lane above, or (lane 0) from the stream. */
                u32 in = __shfl_up_sync(FULL_MASK, word, 1, G);
                if (t == 0) {
                    const u32 c = (w >> (8 * u)) & 0xffu;
                    if (SLOW && (c & CODE_FIRST)) {
                        hap_cur = hap_next;
                        ++feed_ord;
                        hap_next = params->hap_starts[item.hap_index + feed_ord + 1] -
                                   params->hap_starts[item.hap_index + feed_ord];
                    }
                    in = c | ((u32)hap_cur << 8);
                }
                word = in;
                /* The lane above computed my column's row above one step ago. */
                Real rM = __shfl_up_sync(FULL_MASK, M[T - 1], 1, G);
                Real rX = __shfl_up_sync(FULL_MASK, X[T - 1], 1, G);
                Real rY = __shfl_up_sync(FULL_MASK, Y[T - 1], 1, G);
                const u32 code = word & 0xffu;
                if (SLOW && (code & CODE_FIRST)) {
                    /* Column 0 of a new haplotype: M = X = 0; Y = K/hapLen on row 0 (and padding). */
                    const Real init_y = N::div(K, (Real)(int)(word >> 8));
#pragma unroll
                    for (int r = 0; r < T; ++r) {
                        M[r] = 0;
                        X[r] = 0;
                        Y[r] = r < npad ? init_y : (Real)0;
                    }
                    dM = 0;
                    dX = 0;
                    dY = top_is_row0 ? init_y : (Real)0;
                    sum_m = 0;
                    sum_x = 0;
                    top_y = init_y;
                    ++ord;
                }
                if (t == 0) {
                    rM = (MULTI && s > 0) ? bnd[u].m : (Real)0;
                    rX = (MULTI && s > 0) ? bnd[u].x : (Real)0;
                    rY = (MULTI && s > 0) ? bnd[u].y : top_y;
                }

                const int hc = code & CODE_BASE;
                if constexpr (!N::EXACT) {
                    Real e_mm[T], e_gm[T];
#pragma unroll
                    for (int g = 0; g < GROUPS; ++g) {
                        N::load4(tab_mm, hc, g, lane, GROUPS, &e_mm[4 * g]);
                        N::load4(tab_gm, hc, g, lane, GROUPS, &e_gm[4 * g]);
                    }
                    /* M and Y from the previous column, bottom row first so the old values
                       of the row above are still there. */
#pragma unroll
                    for (int i = 0; i < T; ++i) {
                        const int r = T - 1 - i;
                        const Real diag_m = r ? M[r - 1] : dM;
                        const Real diag_xy = r ? X[r - 1] + Y[r - 1] : dX + dY;
                        Y[r] = N::fma(XX[r], Y[r], MY[r] * M[r]);
                        M[r] = N::fma(e_mm[r], diag_m, e_gm[r] * diag_xy);
                    }
                    /* X down the column (needs this column's M of the row above). */
                    X[0] = N::fma(XX[0], rX, MX[0] * rM);
#pragma unroll
                    for (int r = 1; r < T; ++r)
                        X[r] = N::fma(XX[r], X[r - 1], MX[r] * M[r - 1]);
                } else {
                    /* The CPU backend's operations, in its order, flushed like it. */
                    Real e[T];
#pragma unroll
                    for (int g = 0; g < GROUPS; ++g)
                        N::load4(tab_mm, hc, g, lane, GROUPS, &e[4 * g]);
#pragma unroll
                    for (int i = 0; i < T; ++i) {
                        const int r = T - 1 - i;
                        const Real pm = r ? M[r - 1] : dM;
                        const Real px = r ? X[r - 1] : dX;
                        const Real py = r ? Y[r - 1] : dY;
                        Y[r] = N::ftz(N::ftz(M[r] * MY[r]) + N::ftz(Y[r] * XX[r]));
                        const Real m = N::ftz(N::ftz(pm * MM[r]) + N::ftz(px * GM[r]));
                        M[r] = N::ftz(N::ftz(m + N::ftz(py * GM[r])) * e[r]);
                    }
                    X[0] = N::ftz(N::ftz(rM * MX[0]) + N::ftz(rX * XX[0]));
#pragma unroll
                    for (int r = 1; r < T; ++r)
                        X[r] = N::ftz(N::ftz(M[r - 1] * MX[r]) + N::ftz(X[r - 1] * XX[r]));
                }
                dM = rM;
                dX = rX;
                dY = rY;

                const bool column = !(code & CODE_NONE_BIT);
                const Real add_m = column ? M[T - 1] : (Real)0, add_x = column ? X[T - 1] : (Real)0;
                sum_m = N::EXACT ? flush(sum_m + add_m) : sum_m + add_m;
                sum_x = N::EXACT ? flush(sum_x + add_x) : sum_x + add_x;
                if (MULTI && to_scratch && k >= G - 1)
                    lane_scratch[k - (G - 1)] = Cell{M[T - 1], X[T - 1], Y[T - 1], 0};
                if (SLOW && t == G - 1 && (code & CODE_LAST) && s + 1 == n_strips) {
                    const int hap_len = (int)(word >> 8);
                    const int code_start = item.code_start - lead + (k - (G - 1)) - hap_len + 1;
                    store_result(params, N::EXACT ? flush(sum_m + sum_x) : sum_m + sum_x,
                                 item.out_index + ord, item, item.hap_index + ord, code_start, hap_len);
                }
            };

            unsigned long long events = 0;  /* lane 0: first/last-column flags of recent positions */
            for (int k4 = 0; k4 < warp_iters; k4 += 4) {
                /* Prefetch one group ahead: the stream word and (MULTI) the strip boundary. */
                u32 w = w_cur;
                w_cur = w_next;
                if (feeder)
                    w_next = *reinterpret_cast<const u32 *>(stream + k4 + 8);
                Cell bnd[4];
                if (MULTI) {
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        bnd[i] = b_cur[i];
                        b_cur[i] = b_next[i];
                        if (from_scratch)
                            b_next[i] = lane_scratch[k4 + 8 + i];
                    }
                }
                /* Positions outside the item's stream have no column. */
                u32 keep = 0;
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    keep |= (feeder && k4 + i >= lead && k4 + i < stream_end) ? (0xffu << (8 * i)) : 0u;
                w = (w & keep) | (CODE_NONE4 & ~keep);
                /* Lane t meets position p at step p + t: this group's steps see positions
                   k4 - (G-1) .. k4 + 3. Nibble d of `events` holds the flags of group k4/4 - d,
                   so nibbles 0 .. ceil((G-1)/4) cover them. */
                const u32 flagged = ((w >> 3) | (w >> 4)) & 0x01010101u;
                events = (events << 4) | ((flagged | (flagged >> 7) | (flagged >> 14) | (flagged >> 21)) & 0xfu);
                constexpr int WINDOW_BITS = 4 * ((G + 2) / 4 + 1);
                const bool slow = __any_sync(FULL_MASK, (events & ((1ull << WINDOW_BITS) - 1)) != 0);
                if (!slow) {
#pragma unroll STEP_UNROLL
                    for (int u = 0; u < 4; ++u)
                        step(u, k4 + u, w, bnd, Flag<false>());
                } else {
#pragma unroll STEP_UNROLL
                    for (int u = 0; u < 4; ++u)
                        step(u, k4 + u, w, bnd, Flag<true>());
                }
            }
            /* The next strip's lane 0 reads what this strip's last lane wrote. */
            __syncwarp();
        }
    }
}

/* The work items of one read: its batch (binary search), its bin, and how many items its
   haplotypes are cut into (shorter runs for reads computed in several strips). */
struct ReadPlan {
    int batch, bin, n_items, cap, n_haps, read_start, read_len;
};

__device__ __forceinline__ ReadPlan plan_read(const PlanParams &p, int r)
{
    ReadPlan rp;
    int lo = 0, hi = (int)p.n_batches;  /* batch_reads[lo] <= r < batch_reads[hi] */
    while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (p.batch_reads[mid] <= r)
            lo = mid;
        else
            hi = mid;
    }
    rp.batch = lo;
    rp.read_start = p.read_offsets[r];
    rp.read_len = p.read_offsets[r + 1] - rp.read_start;
    rp.n_haps = p.batch_haps[lo + 1] - p.batch_haps[lo];
    int bin = (int)p.n_bins - 1;
    for (int b = (int)p.n_bins - 2; b >= 0; --b)
        if (rp.read_len <= p.bounds[b])
            bin = b;
    rp.bin = bin;
    const long long strips = rp.read_len > p.multi_from ? (rp.read_len + p.strip_rows - 1) / p.strip_rows : 1;
    long long cap = (long long)(p.columns / ((double)strips * p.mean_hap_len));
    cap = cap < 1 ? 1 : (cap > p.cap ? p.cap : cap);
    rp.cap = (int)cap;
    rp.n_items = (rp.n_haps + rp.cap - 1) / rp.cap;
    return rp;
}

__device__ __forceinline__ int item_bucket(const PlanParams &p, int bin, int columns)
{
    int k = (int)((double)columns * p.bucket_scale);
    return bin * PLAN_BUCKETS + (k < PLAN_BUCKETS - 1 ? k : PLAN_BUCKETS - 1);
}

__global__ void __launch_bounds__(256) plan_count_kernel(const PlanParams *__restrict__ params)
{
    const PlanParams &p = *params;
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < p.n_reads;
         r += (long long)gridDim.x * blockDim.x) {
        const ReadPlan rp = plan_read(p, (int)r);
        const int h0 = p.batch_haps[rp.batch];
        for (int j = 0; j < rp.n_items; ++j) {
            const int first = h0 + j * rp.cap;
            const int n = rp.n_haps - j * rp.cap < rp.cap ? rp.n_haps - j * rp.cap : rp.cap;
            atomicAdd(&p.bucket_count[item_bucket(p, rp.bin, p.hap_starts[first + n] - p.hap_starts[first])], 1);
        }
    }
}

/* One thread: bins in order, inside a bin the longest-item buckets first. */
__global__ void plan_prefix_kernel(const PlanParams *__restrict__ params)
{
    const PlanParams &p = *params;
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    int acc = 0;
    for (int b = 0; b < (int)p.n_bins; ++b) {
        p.bin_start[b] = acc;
        for (int k = PLAN_BUCKETS - 1; k >= 0; --k) {
            p.bucket_start[b * PLAN_BUCKETS + k] = acc;
            acc += p.bucket_count[b * PLAN_BUCKETS + k];
        }
        p.bin_count[b] = acc - p.bin_start[b];
    }
}

__global__ void __launch_bounds__(256) plan_scatter_kernel(const PlanParams *__restrict__ params)
{
    const PlanParams &p = *params;
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < p.n_reads;
         r += (long long)gridDim.x * blockDim.x) {
        const ReadPlan rp = plan_read(p, (int)r);
        const int h0 = p.batch_haps[rp.batch];
        const int out0 = p.pair_base[rp.batch] + ((int)r - p.batch_reads[rp.batch]) * rp.n_haps;
        for (int j = 0; j < rp.n_items; ++j) {
            const int first = h0 + j * rp.cap;
            const int n = rp.n_haps - j * rp.cap < rp.cap ? rp.n_haps - j * rp.cap : rp.cap;
            Item it;
            it.read_start = rp.read_start;
            it.read_len = rp.read_len;
            it.code_start = p.hap_starts[first];
            it.stream_len = p.hap_starts[first + n] - it.code_start;
            it.hap_index = first;
            it.out_index = out0 + j * rp.cap;
            it.reserved0 = 0;
            it.reserved1 = 0;
            const int bucket = item_bucket(p, rp.bin, it.stream_len);
            p.items[p.bucket_start[bucket] + atomicAdd(&p.bucket_cursor[bucket], 1)] = it;
        }
    }
}

/* Haplotype bases to column codes, in place: one warp per haplotype (the host only copies
   the bytes). Base code, plus the first/last-column flags the forward kernel resets on. */
__global__ void __launch_bounds__(256) hap_codes_kernel(u8 *codes, const int *__restrict__ hap_starts,
                                                        int n_haps)
{
    const int lane = threadIdx.x & 31;
    for (int h = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; h < n_haps;
         h += (gridDim.x * blockDim.x) >> 5) {
        const int start = hap_starts[h], end = hap_starts[h + 1];
        for (int i = start + lane; i < end; i += 32) {
            u32 c = (u32)base_code(codes[i]);
            if (i == start)
                c |= CODE_FIRST;
            if (i == end - 1)
                c |= CODE_LAST;
            codes[i] = (u8)c;
        }
    }
}

}  // namespace warpdp_pairhmm

#ifdef WARPDP_NVCC_CHECK
/* Explicit instantiations so that an offline nvcc run compiles every configuration
   warpdp/kernels/pairhmm.py uses (keep the two lists in step; a test compares them). */
namespace warpdp_pairhmm {
template __global__ void forward_kernel<float, 4, 8, false>(const Params *);
template __global__ void forward_kernel<float, 8, 8, false>(const Params *);
template __global__ void forward_kernel<float, 8, 12, false>(const Params *);
template __global__ void forward_kernel<float, 8, 16, false>(const Params *);
template __global__ void forward_kernel<float, 8, 20, false>(const Params *);
template __global__ void forward_kernel<float, 16, 12, false>(const Params *);
template __global__ void forward_kernel<float, 16, 16, false>(const Params *);
template __global__ void forward_kernel<float, 32, 16, false>(const Params *);
template __global__ void forward_kernel<float, 8, 16, true>(const Params *);
template __global__ void forward_kernel<double, 8, 4, true>(const Params *);
}  // namespace warpdp_pairhmm
#endif
