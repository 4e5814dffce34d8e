/* Gapped X-drop seed extension (SeqAn 2 extendSeed(..., GappedXDrop()) semantics) on NVIDIA GPUs.
 *
 * Compiled ahead of time into fatbin/ (runtime/fatbin_build.py), else at run time by NVRTC;
 * warpdp/kernels/xdrop.py picks the template
 * configurations by name and launches them. The semantics, the windows and what is reported are
 * those of the CPU backend (warpdp/cython_cpu/xdrop_body.h), which documents them; this file
 * computes the same values and must stay in step with it.
 *
 * Design (after LOGAN, changed where it helps):
 *   - Work items are single extensions: the left and the right one of each seed are
 *     independent items (LOGAN runs them on two streams). A warp takes one item at a time from
 *     a per-launch atomic counter, so many alignments share a block and a finished warp moves
 *     on at once (LOGAN: one alignment per block, block size fixed by X).
 *   - A warp walks the anti-diagonals of its item; its 32 lanes take 32 consecutive cells of
 *     the live window at a time, so the work follows the window's width, which tracks X.
 *     The anti-diagonal maximum is a shuffle reduction, the window's ends are ballots.
 *   - Flanks are read in place from the uploaded pair arrays, walking away from the seed in
 *     either direction: neighbouring lanes read neighbouring bytes (coalesced either way), so
 *     no reversed copies are made on the host or the device. Bases compare case-insensitively.
 *   - Three anti-diagonals per warp live in a scratch area indexed by column (L1/L2-resident
 *     as the window slides; the launcher sizes it by the longest V flank of the launch and
 *     bins the items by that length).
 *   - Cells are int32 when the values provably fit (the CPU's xdrop_fits with 2^29), int64
 *     otherwise: no overflow for any scores.
 *   - For large X, where windows span hundreds to thousands of columns, extend_shared_kernel
 *     (below) keeps a warp's anti-diagonals in shared memory as int16 cells, two per operation,
 *     when the values fit; the int32 items with wide windows that do not fit int16 go to
 *     extend_wide_kernel, one block per item with the cells in registers. xdrop.py
 *     (shared_items, wide_frames) decides which items go where.
 */

namespace warpdp_xdrop {

typedef unsigned char u8;
typedef long long i64;

constexpr unsigned FULL = 0xffffffffu;

/* One launch: the work items order[0..n_items) (2 * pair + 1 for the right extension). */
struct Params {
    const u8 *h_bases;        /* the chunk's H sequences, concatenated (ASCII) */
    const u8 *v_bases;        /* the chunk's V sequences */
    const i64 *h_offsets;     /* n_pairs + 1, into h_bases */
    const i64 *v_offsets;     /* n_pairs + 1, into v_bases */
    const i64 *h_pos;         /* seed positions, per pair */
    const i64 *v_pos;
    const int *order;         /* the work items of this launch */
    int *counter;             /* next entry of order to take (starts at 0) */
    i64 *out;                 /* per work item: score, ext_v, ext_h, cells */
    void *scratch;            /* 3 * stride cells per warp of the grid */
    i64 stride;               /* cells per anti-diagonal buffer: >= longest V flank + 2 */
    i64 k, match, mismatch, gap, x;
    int n_items, best_mode;
};
/* The launcher writes this layout by field name (xdrop.py, PARAMS); it checks the size the
   kernel below reports when the module loads. */
static_assert(sizeof(Params) == 136, "Params layout changed: update PARAMS in warpdp/kernels/xdrop.py");

extern "C" __global__ void xdrop_struct_sizes(unsigned long long *out) { out[0] = sizeof(Params); }

template <typename Cell> struct Undefined;
template <> struct Undefined<int> { static constexpr int value = -(1 << 30); };
template <> struct Undefined<long long> { static constexpr long long value = (-0x7fffffffffffffffLL - 1) + (1LL << 40); };
template <> struct Undefined<short> { static constexpr short value = -(1 << 14); }; /* extend_shared_kernel */

template <typename Cell> __device__ __forceinline__ Cell cmax(Cell a, Cell b) { return a > b ? a : b; }

__device__ __forceinline__ bool same_base(u8 a, u8 b) { return ((a ^ b) & 0xdfu) == 0; }

/* One bit set when some byte is not A, C, G, T or N (either case); grid-stride over `bytes`. */
extern "C" __global__ void check_bases(const u8 *__restrict__ bytes, i64 n, int *__restrict__ bad)
{
    int found = 0;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
        const unsigned u = bytes[i] & 0xdfu;
        found |= !(u == 'A' || u == 'C' || u == 'G' || u == 'T' || u == 'N');
    }
    if (__any_sync(FULL, found) && (threadIdx.x & 31) == 0)
        atomicOr(bad, 1);
}

/* One work item's flanks: q[i] = qs[step * i] is the V flank and t[j] = ts[step * j] the H
   flank, both walking away from the seed; cell (c, r) compares q[c-1] with t[r-1]. */
struct Flanks {
    const u8 *qs, *ts;
    i64 step, m, n;
};

__device__ __forceinline__ Flanks flanks_of(const Params &p, int item)
{
    const i64 pair = item >> 1;
    const bool right = item & 1;
    const i64 h0 = p.h_offsets[pair], v0 = p.v_offsets[pair];
    const i64 len_h = p.h_offsets[pair + 1] - h0, len_v = p.v_offsets[pair + 1] - v0;
    const i64 pos_h = p.h_pos[pair], pos_v = p.v_pos[pair];
    Flanks f;
    f.step = right ? 1 : -1;
    f.qs = p.v_bases + v0 + (right ? pos_v + p.k : pos_v - 1);
    f.ts = p.h_bases + h0 + (right ? pos_h + p.k : pos_h - 1);
    f.m = right ? len_v - pos_v - p.k : pos_v;
    f.n = right ? len_h - pos_h - p.k : pos_h;
    return f;
}

/* An item with nothing to extend into keeps its seed: threads 0..3 write its all-zero result
   (score, ext_v, ext_h, cells). Says whether that is the case. */
__device__ __forceinline__ bool seed_stays(const Flanks &f, i64 *out, unsigned thread)
{
    if (f.m != 0 && f.n != 0)
        return false;
    if (thread < 4)
        out[thread] = 0;
    return true;
}

/* Writes one item's result: score, ext_v, ext_h, cells. In best mode the first cell reaching
   the best score; else SeqAn's longest extension (see xdrop_body.h), read from the last three
   anti-diagonals a1, a2, a3 (d-2, d-1, d) and their windows. */
template <typename Cell>
__device__ void write_result(i64 *out, bool best_mode, i64 best, i64 best_col, i64 best_row, const Cell *a1,
                             const Cell *a2, const Cell *a3, i64 d, i64 lo1, i64 hi1, i64 lo2, i64 hi2, i64 hi3,
                             i64 cells)
{
    const Cell U = Undefined<Cell>::value;
    i64 score_out, col, row;
    if (best_mode) {
        score_out = best;
        col = best_col;
        row = best_row;
    } else {
        col = hi3 - 1;
        row = d - col;
        Cell score = a3[col];
        if (score == U) {
            if (a2[hi2 - 1] != U) {
                col = hi2 - 1;
                row = d - 1 - col;
                score = a2[col];
            } else if (hi2 - lo2 + 1 > 2 && a2[hi2 - 2] != U) {
                col = hi2 - 2;
                row = d - 1 - col;
                score = a2[col];
            }
        }
        if (score == U) {
            for (i64 c = lo1; c <= hi1; c++) {
                if (a1[c] > score) {
                    score = a1[c];
                    col = c;
                    row = d - 2 - c;
                }
            }
        }
        if (score == U) { /* SeqAn finds nothing defined: the seed stays, scored 0 */
            score = 0;
            col = row = 0;
        }
        score_out = score;
    }
    out[0] = score_out;
    out[1] = col;
    out[2] = row;
    out[3] = cells;
}

/* The next work item for a warp (all lanes get it), or -1 when the launch has none left. */
__device__ __forceinline__ int warp_next_item(const Params &p, int lane)
{
    int next = 0;
    if (lane == 0)
        next = atomicAdd(p.counter, 1);
    next = __shfl_sync(FULL, next, 0);
    return next < p.n_items ? p.order[next] : -1;
}

/* What extend_kernel and extend_shared_kernel keep per item besides the cells: the three
   anti-diagonal buffers a1, a2, a3 (d-2, d-1, d), their windows [lo, hi], the next window
   [min_col, max_col), the best score, its cell (best mode) and the cell count. Index is the
   column type: i64 for extend_kernel, int for extend_shared_kernel (short flanks). Every lane
   holds the same values. */
template <typename Cell, typename Index> struct WarpWalk {
    Cell *a1, *a2, *a3;
    Index lo1, hi1, lo2, hi2, lo3, hi3, min_col, max_col, d, best, best_col, best_row;
    i64 cells;
    /* for the anti-diagonal being computed: the drop threshold and the values of its edge cells */
    Index thr;
    Cell lo_edge, hi_edge;

    /* Anti-diagonal 0 is the origin; anti-diagonal 1 the two gap cells, dropped when -gap > x. */
    __device__ __forceinline__ void start(Cell *b1, Cell *b2, Cell *b3, i64 gap, i64 x, int lane)
    {
        a1 = b1;
        a2 = b2;
        a3 = b3;
        if (lane == 0) {
            a2[0] = 0;
            a3[0] = a3[1] = (-gap > x) ? Undefined<Cell>::value : (Cell)gap;
        }
        __syncwarp();
        lo1 = hi1 = lo2 = hi2 = lo3 = 0;
        hi3 = 1;
        min_col = 1;
        max_col = 2;
        d = 1;
        best = best_col = best_row = 0;
        cells = 0;
    }

    __device__ __forceinline__ bool going() const { return min_col < max_col; }

    /* Moves on to anti-diagonal d + 1: rotates the buffers and windows, sets thr and the edges. */
    __device__ __forceinline__ void advance(i64 gap, i64 x)
    {
        d++;
        Cell *recycled = a1;
        a1 = a2;
        a2 = a3;
        a3 = recycled;
        lo1 = lo2;
        hi1 = hi2;
        lo2 = lo3;
        hi2 = hi3;
        lo3 = min_col - 1;
        hi3 = max_col;
        thr = (Index)(best - x);
        /* d < 2^32 and |gap| < 2^31: d * gap cannot overflow. */
        const i64 edge = (i64)d * gap;
        const bool edge_kept = edge > thr;
        lo_edge = edge_kept && lo3 == 0 ? (Cell)edge : Undefined<Cell>::value;
        hi_edge = edge_kept && hi3 == d ? (Cell)edge : Undefined<Cell>::value;
    }

    /* After a3 is complete and visible to the warp: counts the cells, records a new best (best
       mode: the first cell of the anti-diagonal holding it), and sets the next window from the
       live ends (first_live: hi3 + 1 when none, last_live: lo3 - 1 when none). */
    __device__ __forceinline__ void finish(Cell dmax, Index first_live, Index last_live, bool best_mode, Index m, i64 n,
                                           int lane)
    {
        cells += max_col - min_col;
        if (best_mode && (Index)dmax > best) {
            for (Index base = min_col; base < max_col; base += 32) {
                const Index c = base + lane;
                const unsigned hit = __ballot_sync(FULL, c < max_col && a3[c] == dmax);
                if (hit) {
                    best_col = base + __ffs(hit) - 1;
                    best_row = d - best_col;
                    break;
                }
            }
        }
        best = (Index)dmax > best ? (Index)dmax : best;
        const Index next_max = last_live >= lo3 ? last_live + 2 : lo3 + 1;
        const i64 lowest = (i64)d + 1 - n; /* the window never leaves the H flank */
        min_col = (i64)first_live < lowest ? (Index)lowest : first_live;
        max_col = next_max > m + 1 ? m + 1 : next_max;
    }

    /* One thread writes the item's result (write_result). */
    __device__ __forceinline__ void report(i64 *out, bool best_mode) const
    {
        write_result<Cell>(out, best_mode, best, best_col, best_row, a1, a2, a3, d, lo1, hi1, lo2, hi2, hi3, cells);
    }
};

template <typename Cell>
__global__ void __launch_bounds__(256, 3) extend_kernel(const Params *__restrict__ params)
{
    const Params &p = *params; /* read through the cache as needed, not held in registers */
    const int lane = threadIdx.x & 31;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    Cell *const scratch = (Cell *)p.scratch + warp * 3 * p.stride;
    const Cell U = Undefined<Cell>::value;

    for (;;) {
        const int item = warp_next_item(p, lane);
        if (item < 0)
            return;
        const Flanks f = flanks_of(p, item);
        const u8 *qs = f.qs, *ts = f.ts;
        const i64 step = f.step, m = f.m, n = f.n;
        i64 *out = p.out + 4 * (i64)item;
        if (seed_stays(f, out, lane))
            continue;

        WarpWalk<Cell, i64> w;
        w.start(scratch, scratch + p.stride, scratch + 2 * p.stride, p.gap, p.x, lane);
        while (w.going()) {
            w.advance(p.gap, p.x);
            const Cell *a1 = w.a1, *a2 = w.a2;
            Cell *a3 = w.a3;
            const i64 lo3 = w.lo3, hi3 = w.hi3, d = w.d, thr = w.thr;

            Cell dmax = U;
            i64 first_live = hi3 + 1, last_live = lo3 - 1;
            for (i64 base = lo3; base <= hi3; base += 32) {
                const i64 c = base + lane;
                bool from_left = false, from_right = false;
                if (c <= hi3) {
                    Cell value;
                    if (c == lo3) {
                        value = w.lo_edge;
                    } else if (c == hi3) {
                        value = w.hi_edge;
                    } else {
                        const Cell s = same_base(qs[step * (c - 1)], ts[step * (d - c - 1)]) ? (Cell)p.match
                                                                                           : (Cell)p.mismatch;
                        const Cell v = cmax<Cell>(cmax<Cell>(a2[c - 1], a2[c]) + (Cell)p.gap, a1[c - 1] + s);
                        value = v < thr ? U : v;
                        dmax = cmax<Cell>(dmax, value);
                    }
                    a3[c] = value;
                    /* Live columns for the next window: a3[c] or a2[c-1] defined (lo < c <= hi),
                       a3[c] or a2[c] defined (lo <= c < hi). */
                    from_left = c > lo3 && (value != U || a2[c - 1] != U);
                    from_right = c < hi3 && (value != U || a2[c] != U);
                }
                const unsigned left_bits = __ballot_sync(FULL, from_left);
                const unsigned right_bits = __ballot_sync(FULL, from_right);
                if (left_bits && first_live > hi3)
                    first_live = base + __ffs(left_bits) - 1;
                if (right_bits)
                    last_live = base + 31 - __clz(right_bits);
            }
            for (int offset = 16; offset > 0; offset >>= 1)
                dmax = cmax<Cell>(dmax, __shfl_xor_sync(FULL, dmax, offset));
            __syncwarp(); /* a3 complete before anyone reads it */
            w.finish(dmax, first_live, last_live, p.best_mode, m, n, lane);
        }

        if (lane == 0)
            w.report(out, p.best_mode);
        __syncwarp(); /* lane 0 done with the scratch before the next item overwrites it */
    }
}

/* ---------------------------------------------------------------------------------------------
 * Wide windows (large X): one block per work item, the cells in registers.
 *
 * With a large X the window spans hundreds to thousands of columns and extend_kernel is bound
 * by the latency of its scratch (three loads and a store per cell). extend_wide_kernel gives a
 * work item to a block of W warps instead; the item's V flank must fit the block's fixed frame
 * of FRAME = 32 * W * T columns (m + 2 <= FRAME). Lane l of the block owns the columns
 * [l * T, l * T + T) for the whole item and keeps their values on the last three
 * anti-diagonals in registers. All lanes step the anti-diagonals together:
 *   - column c0 - 1 (the previous lane's last column) comes by shuffle, from the previous warp
 *     through shared memory;
 *   - column c compares V[c-1], fixed (loaded once), with H[d-c-1], which moves one column to
 *     the right per anti-diagonal: each lane shifts its T packed bases by one and takes the new
 *     one from the previous lane (a warp's first lane reads it from memory, one anti-diagonal
 *     ahead);
 *   - the anti-diagonal's maximum, the next window's ends and, in best mode, the first column
 *     of the maximum are warp reductions, then one exchange through shared memory and one
 *     barrier per anti-diagonal (the slots alternate with the anti-diagonal's parity, so a fast
 *     warp never overwrites a slot a slow one still reads);
 *   - warps the window has passed (for good: min_col never decreases) or not reached yet only
 *     take part in the exchange, and a warp the window reaches loads its H bases afresh; lanes
 *     outside the window compute nothing.
 * Windows, threshold, edges, stopping rule and cell count are extend_kernel's (and the CPU's):
 * only where the values live differs. A cell is only read inside the window of its
 * anti-diagonal, where its owner wrote it, so registers left stale outside the windows are
 * never used. At the end the last three anti-diagonals go to a per-block scratch and one thread
 * reports as extend_kernel does. int32 cells only (the launcher checks fits_int32, and that
 * d < m + n + 2 fits an int).
 * tests/xdrop_wide_emulation.py restates this algorithm in NumPy, lane for lane; keep the two
 * in step.
 */

constexpr int WIDE_NONE = 0x7fffffff; /* no column, for min reductions */

template <int W> struct WideShared {
    int4 reduce[2][W]; /* per warp and parity: max, first live column, last live column, column of the max */
    int edge[2][W];    /* per warp and parity: its last column's new value, for the next warp */
    int item;
    /* What only the reporting thread (0) needs, kept here rather than in every thread's registers:
       the windows of anti-diagonals d, d-1, d-2 (at d % 3), the cell count, the best cell. */
    int2 window[3];
    i64 cells;
    int best_col, best_row;
};

/* max(a + b, c): the same code as the DPX intrinsic __viaddmax_s32 (identical cubin for sm_90),
   which older NVRTC headers lack. */
__device__ __forceinline__ int add_max(int a, int b, int c) { return max(a + b, c); }

/* Base i of a flank walking away from the seed (s[step * i]), upper-cased; 0 outside [0, n). */
__device__ __forceinline__ unsigned flank_base(const u8 *s, i64 step, i64 i, i64 n)
{
    return (i >= 0 && i < n) ? (unsigned)(s[step * i] & 0xdfu) : 0u;
}

/* One block's state for one work item. Arrays are indexed by constants only, so they stay in
   registers. Uniform fields are computed alike by every thread of the block. */
template <int W, int T> struct WideItem {
    static constexpr int U = Undefined<int>::value;
    static constexpr int FRAME = 32 * W * T;

    /* per lane (first column c0) */
    int a[3][T];         /* three anti-diagonals; which is d-2, d-1, d rotates with the step */
    unsigned q[T / 4];   /* V bases of the lane's columns: column c0 + j in byte j % 4 of q[j / 4] */
    unsigned t[T / 4];   /* the H bases they meet on the current anti-diagonal, packed alike */
    int left1, left2;    /* column c0 - 1 on anti-diagonals d-2 and d-1 */
    unsigned in_base;    /* the base entering column c0 on the next anti-diagonal */
    unsigned ahead_base; /* first lane of a warp: the one after that, being loaded */
    bool bases_current;  /* whether the warp stepped the last anti-diagonal (else t is stale) */
    int lane, warp, c0, warp_c0;

    /* the item */
    const u8 *ts;
    int step, m, n, match, mismatch, gap, x;
    bool best_mode;

    /* uniform, as in extend_kernel (the rest of its state is in WideShared) */
    int d, lo3, hi3, min_col, max_col, best;

    __device__ __forceinline__ void start(const Params &p, const Flanks &f, WideShared<W> &sh)
    {
        ts = f.ts;
        step = (int)f.step;
        m = (int)f.m;
        n = (int)f.n;
        match = (int)p.match;
        mismatch = (int)p.mismatch;
        gap = (int)p.gap;
        x = (int)p.x;
        best_mode = p.best_mode;
#pragma unroll
        for (int k = 0; k < T / 4; k++)
            q[k] = 0;
        if (warp_c0 <= m + 1) {
#pragma unroll
            for (int j = 0; j < T; j++) {
                const int c = c0 + j;
                if (c >= 1 && c <= m)
                    q[j / 4] |= (unsigned)(f.qs[f.step * (c - 1)] & 0xdfu) << (8 * (j % 4));
            }
        }
        bases_current = false; /* t is loaded when the window first reaches the warp */
        /* Anti-diagonal 0 is the origin; anti-diagonal 1 the two gap cells, dropped when -gap > x. */
#pragma unroll
        for (int r = 0; r < 3; r++)
#pragma unroll
            for (int j = 0; j < T; j++)
                a[r][j] = U;
        if (c0 == 0) {
            a[0][0] = 0;
            a[1][0] = a[1][1] = (-gap > x) ? U : gap;
        }
        left1 = left2 = U;
        d = 1;
        lo3 = 0;
        hi3 = 1;
        min_col = 1;
        max_col = 2;
        best = 0;
        if (threadIdx.x == 0) {
            sh.window[0] = make_int2(0, 0); /* anti-diagonal 0 */
            sh.window[1] = make_int2(0, 1);
            sh.cells = 0;
            sh.best_col = sh.best_row = 0;
        }
    }

    /* Live columns for the next window, exactly: the first c in (lo3, hi3] with a3[c] or
       a2[c-1] defined, the last c in [lo3, hi3) with a3[c] or a2[c] defined. The window's ends
       are given relative to the lane: jlo = lo3 - c0, jhi = hi3 - c0. */
    __device__ __forceinline__ void live_ends(const int (&a2)[T], const int (&a3)[T], int jlo, int jhi, int &first,
                                              int &last) const
    {
        int j_first = T, j_last = -1;
#pragma unroll
        for (int j = T - 1; j >= 0; j--) {
            const bool here = a3[j] != U;
            if (j > jlo && j <= jhi && (here || (j ? a2[j - 1] : left2) != U))
                j_first = j;
        }
#pragma unroll
        for (int j = 0; j < T; j++) {
            const bool here = a3[j] != U;
            if (j >= jlo && j < jhi && (here || a2[j] != U))
                j_last = j;
        }
        if (j_first < T)
            first = c0 + j_first;
        if (j_last >= 0)
            last = c0 + j_last;
    }

    /* Computes anti-diagonal d + 1 into a[P3] from a[P1] (d-1) and a[P2] (d); returns whether
       the extension goes on. The first call computes anti-diagonal 2 into a[2], so P3 == d % 3. */
    template <int P1, int P2, int P3> __device__ __forceinline__ bool advance(WideShared<W> &sh, int &buf)
    {
        const int(&a1)[T] = a[P1];
        const int(&a2)[T] = a[P2];
        int(&a3)[T] = a[P3];
        d++;
        lo3 = min_col - 1;
        hi3 = max_col;
        if (threadIdx.x == 0) {
            sh.window[P3] = make_int2(lo3, hi3);
            sh.cells += max_col - min_col;
        }
        const int thr = best - x;
        const i64 edge = (i64)d * gap;
        const bool edge_kept = edge > thr;
        const int lo_edge = edge_kept && lo3 == 0 ? (int)edge : U;
        const int hi_edge = edge_kept && hi3 == d ? (int)edge : U;

        int lane_max = U, lane_first = WIDE_NONE, lane_last = -1, lane_col = WIDE_NONE;
        /* Warps the window has not reached, has passed (for good: lo3 never decreases) or never
           reaches (past m + 1) only take part in the exchange. */
        const bool live_warp = warp_c0 <= hi3 && warp_c0 + 32 * T > lo3;
        if (live_warp) {
            if (bases_current) {
                /* The H bases move one column right; column c0's comes from the previous lane. */
#pragma unroll
                for (int k = T / 4 - 1; k > 0; k--)
                    t[k] = __funnelshift_l(t[k - 1], t[k], 8);
                t[0] = (t[0] << 8) | in_base;
            } else {
                /* The window reaches the warp: column c meets H[d - c - 1]. */
#pragma unroll
                for (int k = 0; k < T / 4; k++) {
                    t[k] = 0;
#pragma unroll
                    for (int b = 0; b < 4; b++)
                        t[k] |= flank_base(ts, step, (i64)d - (c0 + 4 * k + b) - 1, n) << (8 * b);
                }
                bases_current = true;
            }
            if (lane == 0) /* column c0's base on the next anti-diagonal: H[d - c0] */
                ahead_base = flank_base(ts, step, (i64)d - warp_c0, n);

            const int c_last = c0 + T - 1;
            if (c_last >= lo3 && c0 <= hi3) {
                unsigned eq[T / 4];
#pragma unroll
                for (int k = 0; k < T / 4; k++)
                    eq[k] = __vcmpeq4(q[k], t[k]);
                /* The recurrence on all the lane's columns; a lane holding an end of the window
                   then fixes the columns that are not inside it (one path for the whole warp). */
                bool all_kept = true;
#pragma unroll
                for (int j = 0; j < T; j++) {
                    const int s = (eq[j / 4] >> (8 * (j % 4))) & 1u ? match : mismatch;
                    const int v = add_max(max(j ? a2[j - 1] : left2, a2[j]), gap, (j ? a1[j - 1] : left1) + s);
                    const int value = v < thr ? U : v;
                    a3[j] = value;
                    lane_max = max(lane_max, value);
                    all_kept &= v >= thr;
                }
                const int jlo = lo3 - c0, jhi = hi3 - c0; /* the window's ends, in the lane's columns */
                if (jlo < 0 && jhi >= T) {
                    if (all_kept) { /* every cell defined: all columns live */
                        lane_first = c0;
                        lane_last = c_last;
                    } else {
                        live_ends(a2, a3, jlo, jhi, lane_first, lane_last);
                    }
                } else {
                    /* The window's edge cells, nothing outside it, the maximum of its inner cells. */
                    lane_max = U;
#pragma unroll
                    for (int j = 0; j < T; j++) {
                        if (j == jlo)
                            a3[j] = lo_edge;
                        else if (j == jhi)
                            a3[j] = hi_edge;
                        else if (j < jlo || j > jhi)
                            a3[j] = U;
                        else
                            lane_max = max(lane_max, a3[j]);
                    }
                    live_ends(a2, a3, jlo, jhi, lane_first, lane_last);
                }
                if (best_mode && lane_max > best) {
                    /* The lane's first inner cell holding its maximum. */
                    int j_col = T;
#pragma unroll
                    for (int j = T - 1; j >= 0; j--) {
                        if (j > jlo && j < jhi && a3[j] == lane_max)
                            j_col = j;
                    }
                    lane_col = c0 + j_col; /* j_col < T: lane_max is one of the inner cells */
                }
            }
            /* Column c0 + T - 1 and its base go to the next lane (the next warp: shared memory). */
            const int out_value = a3[T - 1];
            left1 = left2;
            left2 = __shfl_up_sync(FULL, out_value, 1);
            in_base = __shfl_up_sync(FULL, t[T / 4 - 1] >> 24, 1);
            if (lane == 0)
                in_base = ahead_base;
            const int warp_max = __reduce_max_sync(FULL, lane_max);
            const int warp_first = __reduce_min_sync(FULL, lane_first);
            const int warp_last = __reduce_max_sync(FULL, lane_last);
            const int warp_col = best_mode ? __reduce_min_sync(FULL, lane_max == warp_max ? lane_col : WIDE_NONE)
                                           : WIDE_NONE;
            if (lane == 0)
                sh.reduce[buf][warp] = make_int4(warp_max, warp_first, warp_last, warp_col);
            if (lane == 31)
                sh.edge[buf][warp] = out_value;
        } else {
            bases_current = false;
            if (lane == 0) {
                sh.reduce[buf][warp] = make_int4(U, WIDE_NONE, -1, WIDE_NONE);
                sh.edge[buf][warp] = U;
            }
        }
        __syncthreads();

        /* The whole anti-diagonal: every warp reduces the W slots the same way. */
        const int4 r = lane < W ? sh.reduce[buf][lane] : make_int4(U, WIDE_NONE, -1, WIDE_NONE);
        if (lane == 0)
            left2 = warp > 0 ? sh.edge[buf][warp - 1] : U;
        buf ^= 1;
        const int dmax = __reduce_max_sync(FULL, r.x);
        const int first_live = __reduce_min_sync(FULL, r.y);
        const int last_live = __reduce_max_sync(FULL, r.z);
        if (best_mode && dmax > best) {
            const int col = __reduce_min_sync(FULL, r.x == dmax ? r.w : WIDE_NONE);
            if (threadIdx.x == 0) {
                sh.best_col = col;
                sh.best_row = d - col;
            }
        }
        best = max(best, dmax);
        const int next_min = first_live <= hi3 ? first_live : hi3 + 1;
        const int next_max = last_live >= lo3 ? last_live + 2 : lo3 + 1;
        min_col = max(next_min, d + 1 - n);
        max_col = min(next_max, m + 1);
        return min_col < max_col;
    }

    /* The last three anti-diagonals (a[P1] = d-2, a[P2] = d-1, a[P3] = d) to the block's scratch. */
    template <int P1, int P2, int P3> __device__ __forceinline__ void save(int *frames) const
    {
        if (warp_c0 > m + 1)
            return;
        static_assert(T % 4 == 0, "T must be a multiple of 4");
#pragma unroll
        for (int j = 0; j < T; j += 4) {
            *(int4 *)(frames + c0 + j) = make_int4(a[P1][j], a[P1][j + 1], a[P1][j + 2], a[P1][j + 3]);
            *(int4 *)(frames + FRAME + c0 + j) = make_int4(a[P2][j], a[P2][j + 1], a[P2][j + 2], a[P2][j + 3]);
            *(int4 *)(frames + 2 * FRAME + c0 + j) = make_int4(a[P3][j], a[P3][j + 1], a[P3][j + 2], a[P3][j + 3]);
        }
    }
};

/* Params.stride is FRAME here, and scratch holds 3 * FRAME int32 cells per block of the grid. */
template <int W, int T, int B>
__global__ void __launch_bounds__(32 * W, B) extend_wide_kernel(const Params *__restrict__ params)
{
    static_assert(W >= 1 && W <= 32, "one reduction slot per lane of a warp");
    static_assert(T >= 4 && T % 4 == 0, "bases are packed four to a word");
    constexpr int FRAME = WideItem<W, T>::FRAME;
    __shared__ WideShared<W> sh;
    const Params &p = *params;
    int *const frames = (int *)p.scratch + (i64)blockIdx.x * 3 * FRAME;
    WideItem<W, T> s;
    s.lane = threadIdx.x & 31;
    s.warp = threadIdx.x >> 5;
    s.c0 = threadIdx.x * T;
    s.warp_c0 = s.warp * 32 * T;
    int buf = 0;

    for (;;) {
        if (threadIdx.x == 0)
            sh.item = atomicAdd(p.counter, 1);
        __syncthreads();
        const int next = sh.item;
        if (next >= p.n_items)
            return;
        const int item = p.order[next];
        const Flanks f = flanks_of(p, item);
        i64 *out = p.out + 4 * (i64)item;
        if (!seed_stays(f, out, threadIdx.x)) {
            s.start(p, f, sh);
            for (;;) { /* three anti-diagonals per turn, so that the buffers rotate by name only */
                if (!s.template advance<0, 1, 2>(sh, buf)) {
                    s.template save<0, 1, 2>(frames);
                    break;
                }
                if (!s.template advance<1, 2, 0>(sh, buf)) {
                    s.template save<1, 2, 0>(frames);
                    break;
                }
                if (!s.template advance<2, 0, 1>(sh, buf)) {
                    s.template save<2, 0, 1>(frames);
                    break;
                }
            }
            __syncthreads(); /* the frames complete */
            if (threadIdx.x == 0) {
                /* The frames hold d-2, d-1, d in this order; their windows sit at their d % 3. */
                const int2 w1 = sh.window[(s.d + 1) % 3], w2 = sh.window[(s.d + 2) % 3];
                write_result<int>(out, s.best_mode, s.best, sh.best_col, sh.best_row, frames, frames + FRAME,
                                  frames + 2 * FRAME, s.d, w1.x, w1.y, w2.x, w2.y, s.hi3, sh.cells);
            }
        }
        __syncthreads(); /* sh.item read and the frames reported before the next item */
    }
}

/* ---------------------------------------------------------------------------------------------
 * Shared-memory kernel (int16 cells): one warp per work item, as extend_kernel, with the three
 * anti-diagonals in shared memory and two cells per 32-bit operation.
 *
 * extend_kernel keeps its anti-diagonals in a global scratch that outgrows L1 once windows span
 * hundreds of columns, and extend_wide_kernel steps a whole fixed frame behind one barrier per
 * anti-diagonal; both are slow for large X. Here:
 *   - a warp owns 3 * (stride + SHARED_PAD) int16 cells of dynamic shared memory (one warp per
 *     block; the launcher bins items by their V flank, which sets the stride, and asks for as
 *     many blocks as fit an SM);
 *   - each anti-diagonal's window is cut into chunks of 8 columns aligned to multiples of 8, and
 *     the lanes take consecutive chunks, so the work follows the window, not the flank;
 *   - a chunk is 4 words of two int16 cells, loaded and stored with one 16-byte access per
 *     anti-diagonal; the recurrence runs on packed halves with the sm_90 DPX instructions
 *     (max(a + b, c) on both halves at once) and a sign-replicating byte permute;
 *   - the chunk's bases are read in place (8 bytes of each flank, unaligned, through two
 *     funnel shifts), byte-reversed for the flank that walks against the columns;
 *   - the next window's ends are found from the window's ends inwards (ballots over the last
 *     anti-diagonals, usually one round each), the maximum is a warp reduction.
 * Windows, threshold, edges, stopping rule, cell count and result are extend_kernel's (and the
 * CPU's): only where the values live and how many a lane handles differ. The launcher uses this
 * kernel only when every value fits int16 with room to spare (xdrop.py, fits_int16): legal
 * values lie in [-x, 16000], an undefined cell is -16384 and anything derived from it stays
 * below every threshold, and no sum or difference below leaves the int16 range.
 */

constexpr int SHARED_PAD = 8;              /* cells before column 0 of each buffer (column -1 is read) */
constexpr unsigned SHORT_U2 = 0xC000C000u; /* two undefined cells */
constexpr unsigned SHORT_MIN2 = 0x80008000u;

__device__ __forceinline__ unsigned splat16(int v) { return ((unsigned)v & 0xffffu) * 0x10001u; }

/* 0xffff in each half that is negative, 0 elsewhere (prmt's sign-replicating mode). */
__device__ __forceinline__ unsigned negative_halves(unsigned w)
{
    unsigned r;
    asm("prmt.b32 %0, %1, 0, 0xBB99;" : "=r"(r) : "r"(w));
    return r;
}

/* 0xff..: the sign bit of byte b of w, replicated over half 0; byte b + 1 over half 1. */
template <int B> __device__ __forceinline__ unsigned byte_signs_to_halves(unsigned w)
{
    constexpr unsigned lo = 8 | B, hi = 8 | (B + 1);
    constexpr unsigned selector = lo | (lo << 4) | (hi << 8) | (hi << 12);
    unsigned r;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(r) : "r"(w), "n"(selector));
    return r;
}

/* The 8 bytes at s .. s+7 (any alignment) as two little-endian words; reads 3 bytes before s
   and 4 after s+7 (the launcher's arrays lie inside one buffer, with other arrays around). */
__device__ __forceinline__ uint2 load8(const u8 *s)
{
    const size_t a = (size_t)s;
    const unsigned *w = (const unsigned *)(a & ~(size_t)3);
    const unsigned shift = (unsigned)(a & 3) * 8;
    const unsigned x0 = __ldg(w), x1 = __ldg(w + 1), x2 = __ldg(w + 2);
    return make_uint2(__funnelshift_r(x0, x1, shift), __funnelshift_r(x1, x2, shift));
}

__device__ __forceinline__ unsigned reverse_bytes(unsigned w) { return __byte_perm(w, 0, 0x0123); }

/* Per byte: bit 7 set where a and b differ as bases (case-insensitively), clear where equal. */
__device__ __forceinline__ unsigned differing_bytes(unsigned a, unsigned b)
{
    const unsigned x = (a ^ b) & 0xdfdfdfdfu;
    return ((x & 0x7f7f7f7fu) + 0x7f7f7f7fu) | x;
}

__device__ __forceinline__ int half_of(const unsigned (&w)[4], int e)
{
    return (short)(e & 1 ? w[e >> 1] >> 16 : w[e >> 1] & 0xffffu);
}

__device__ __forceinline__ void set_half(unsigned (&w)[4], int e, int v)
{
    const unsigned shift = (e & 1) * 16;
    w[e >> 1] = (w[e >> 1] & ~(0xffffu << shift)) | (((unsigned)v & 0xffffu) << shift);
}

/* Scratch is not used; the dynamic shared memory holds 3 * (Params.stride + SHARED_PAD) int16
   cells (Params.stride a multiple of 8, at least the longest V flank of the launch + 16). */
extern "C" __global__ void __launch_bounds__(32) extend_shared_kernel(const Params *__restrict__ params)
{
    extern __shared__ int4 shared_cells[];
    const Params &p = *params;
    const int lane = threadIdx.x;
    const short U = Undefined<short>::value;
    const int stride = (int)p.stride + SHARED_PAD;
    short *const buffers = (short *)shared_cells + SHARED_PAD;
    const int match = (int)p.match, mismatch = (int)p.mismatch, gap = (int)p.gap;
    const unsigned gap2 = splat16(gap), match2 = splat16(match), mismatch2 = splat16(mismatch);

    for (;;) {
        const int item = warp_next_item(p, lane);
        if (item < 0)
            return;
        const Flanks f = flanks_of(p, item);
        const u8 *qs = f.qs, *ts = f.ts;
        const bool forward = f.step > 0;
        const int m = (int)f.m;
        const i64 n = f.n;
        i64 *out = p.out + 4 * (i64)item;
        if (seed_stays(f, out, lane))
            continue;

        WarpWalk<short, int> w;
        w.start(buffers, buffers + stride, buffers + 2 * stride, p.gap, p.x, lane);
        while (w.going()) {
            w.advance(p.gap, p.x);
            const short *a1 = w.a1, *a2 = w.a2;
            short *a3 = w.a3;
            const int lo3 = w.lo3, hi3 = w.hi3, d = w.d;
            const int lo_edge = w.lo_edge, hi_edge = w.hi_edge;
            const unsigned minus_thr2 = splat16(-w.thr);

            unsigned lane_max2 = SHORT_U2;
            for (int c0 = ((lo3 >> 3) + lane) * 8; c0 <= hi3; c0 += 256) {
                /* Bases: column c compares V[c - 1] with H[d - c - 1]. */
                unsigned v_lo, v_hi, h_lo, h_hi;
                const i64 j0 = (i64)d - c0 - 1; /* H index of column c0; c0 + 7 has j0 - 7 */
                if (forward) {
                    const uint2 v = load8(qs + (c0 - 1));
                    const uint2 h = load8(ts + (j0 - 7));
                    v_lo = v.x;
                    v_hi = v.y;
                    h_lo = reverse_bytes(h.y);
                    h_hi = reverse_bytes(h.x);
                } else {
                    const uint2 v = load8(qs - (c0 - 1) - 7);
                    const uint2 h = load8(ts - j0);
                    v_lo = reverse_bytes(v.y);
                    v_hi = reverse_bytes(v.x);
                    h_lo = h.x;
                    h_hi = h.y;
                }
                const unsigned diff_lo = differing_bytes(v_lo, h_lo), diff_hi = differing_bytes(v_hi, h_hi);
                unsigned differ[4];
                differ[0] = byte_signs_to_halves<0>(diff_lo);
                differ[1] = byte_signs_to_halves<2>(diff_lo);
                differ[2] = byte_signs_to_halves<0>(diff_hi);
                differ[3] = byte_signs_to_halves<2>(diff_hi);

                /* Words k = 0..3 hold columns (c0 + 2k, c0 + 2k + 1); "shifted" words the
                   columns one to the left, the previous word's high half first. */
                const uint4 w1 = *(const uint4 *)(a1 + c0), w2 = *(const uint4 *)(a2 + c0);
                const unsigned before1 = *(const unsigned *)(a1 + c0 - 2), before2 = *(const unsigned *)(a2 + c0 - 2);
                const unsigned a1w[4] = {w1.x, w1.y, w1.z, w1.w}, a2w[4] = {w2.x, w2.y, w2.z, w2.w};
                unsigned value[4];
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    const unsigned a1s = __byte_perm(k ? a1w[k - 1] : before1, a1w[k], 0x5432);
                    const unsigned a2s = __byte_perm(k ? a2w[k - 1] : before2, a2w[k], 0x5432);
                    const unsigned s = (differ[k] & mismatch2) | (~differ[k] & match2);
                    unsigned v = __viaddmax_s16x2(a1s, s, SHORT_MIN2); /* diagonal: a1[c-1] + s */
                    v = __viaddmax_s16x2(a2w[k], gap2, v);              /* from a2[c] */
                    v = __viaddmax_s16x2(a2s, gap2, v);                 /* from a2[c-1] */
                    const unsigned dropped = negative_halves(__viaddmax_s16x2(v, minus_thr2, SHORT_MIN2));
                    value[k] = (v & ~dropped) | (SHORT_U2 & dropped);
                }
                if (c0 <= lo3 || c0 + 7 >= hi3) {
                    /* A chunk at an end of the window: its edge cells, nothing outside it. */
#pragma unroll
                    for (int e = 0; e < 8; e++) {
                        const int c = c0 + e;
                        if (c < lo3 || c > hi3)
                            set_half(value, e, U);
                        else if (c == lo3)
                            set_half(value, e, lo_edge);
                        else if (c == hi3)
                            set_half(value, e, hi_edge);
                    }
                }
                /* Edge cells (< 0 <= best) may join the maximum: it only matters above best. */
                lane_max2 = __vimax3_s16x2(lane_max2, value[0], value[1]);
                lane_max2 = __vimax3_s16x2(lane_max2, value[2], value[3]);
                *(uint4 *)(a3 + c0) = make_uint4(value[0], value[1], value[2], value[3]);
            }
            const int dmax = __reduce_max_sync(FULL, max((int)(short)(lane_max2 & 0xffffu), (int)(short)(lane_max2 >> 16)));
            __syncwarp(); /* a3 complete before anyone reads it */

            /* Live columns for the next window: the first c in (lo3, hi3] with a3[c] or a2[c-1]
               defined, the last c in [lo3, hi3) with a3[c] or a2[c] defined. */
            int first_live = hi3 + 1, last_live = lo3 - 1;
            for (int base = lo3 + 1; base <= hi3; base += 32) {
                const int c = base + lane;
                const unsigned bits = __ballot_sync(FULL, c <= hi3 && (a3[c] != U || a2[c - 1] != U));
                if (bits) {
                    first_live = base + __ffs(bits) - 1;
                    break;
                }
            }
            for (int base = hi3 - 1; base >= lo3; base -= 32) {
                const int c = base - lane;
                const unsigned bits = __ballot_sync(FULL, c >= lo3 && (a3[c] != U || a2[c] != U));
                if (bits) {
                    last_live = base - (__ffs(bits) - 1);
                    break;
                }
            }

            w.finish((short)dmax, first_live, last_live, p.best_mode, m, n, lane);
        }

        if (lane == 0)
            w.report(out, p.best_mode);
        __syncwarp(); /* lane 0 done with the buffers before the next item overwrites them */
    }
}

}  // namespace warpdp_xdrop

#ifdef WARPDP_NVCC_CHECK
/* Every configuration xdrop.py launches (scripts/check_cuda_sources.sh compiles these). */
template __global__ void warpdp_xdrop::extend_kernel<int>(const warpdp_xdrop::Params *);
template __global__ void warpdp_xdrop::extend_kernel<long long>(const warpdp_xdrop::Params *);
template __global__ void warpdp_xdrop::extend_wide_kernel<2, 16, 8>(const warpdp_xdrop::Params *);
template __global__ void warpdp_xdrop::extend_wide_kernel<4, 16, 4>(const warpdp_xdrop::Params *);
template __global__ void warpdp_xdrop::extend_wide_kernel<8, 16, 2>(const warpdp_xdrop::Params *);
#endif
