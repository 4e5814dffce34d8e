/* Gapped X-drop seed extension (SeqAn 2 extendSeed(..., GappedXDrop()) semantics) on NVIDIA GPUs.
 *
 * Compiled at run time through CuPy (NVRTC); warpdp/kernels/xdrop.py picks the template
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
/* The launcher writes this layout: 10 pointers, 6 int64, 2 int32 (xdrop.py, PARAMS_LAYOUT). */
static_assert(sizeof(Params) == 136, "Params layout changed: update warpdp/kernels/xdrop.py");

template <typename Cell> struct Undefined;
template <> struct Undefined<int> { static constexpr int value = -(1 << 30); };
template <> struct Undefined<long long> { static constexpr long long value = (-0x7fffffffffffffffLL - 1) + (1LL << 40); };

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

template <typename Cell>
__global__ void __launch_bounds__(256, 3) extend_kernel(const Params *__restrict__ params)
{
    const Params &p = *params; /* read through the cache as needed, not held in registers */
    const int lane = threadIdx.x & 31;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    Cell *const scratch = (Cell *)p.scratch + warp * 3 * p.stride;
    const Cell U = Undefined<Cell>::value;

    for (;;) {
        int next = 0;
        if (lane == 0)
            next = atomicAdd(p.counter, 1);
        next = __shfl_sync(FULL, next, 0);
        if (next >= p.n_items)
            return;
        const int item = p.order[next];
        const i64 pair = item >> 1;
        const bool right = item & 1;
        const i64 h0 = p.h_offsets[pair], v0 = p.v_offsets[pair];
        const i64 len_h = p.h_offsets[pair + 1] - h0, len_v = p.v_offsets[pair + 1] - v0;
        const i64 pos_h = p.h_pos[pair], pos_v = p.v_pos[pair];
        /* q[i] = qs[step * i] is the V flank and t[j] = ts[step * j] the H flank, both walking
           away from the seed; cell (c, r) compares q[c-1] with t[r-1]. */
        const i64 step = right ? 1 : -1;
        const u8 *qs = p.v_bases + v0 + (right ? pos_v + p.k : pos_v - 1);
        const u8 *ts = p.h_bases + h0 + (right ? pos_h + p.k : pos_h - 1);
        const i64 m = right ? len_v - pos_v - p.k : pos_v;
        const i64 n = right ? len_h - pos_h - p.k : pos_h;
        i64 *out = p.out + 4 * (i64)item;
        if (m == 0 || n == 0) { /* nothing to extend into: the seed stays */
            if (lane < 4)
                out[lane] = 0;
            continue;
        }

        Cell *a1 = scratch, *a2 = scratch + p.stride, *a3 = scratch + 2 * p.stride;
        /* Anti-diagonal 0 is the origin; anti-diagonal 1 the two gap cells, dropped when -gap > x. */
        if (lane == 0) {
            a2[0] = 0;
            a3[0] = a3[1] = (-p.gap > p.x) ? U : (Cell)p.gap;
        }
        __syncwarp();
        i64 lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0, lo3 = 0, hi3 = 1;
        i64 min_col = 1, max_col = 2, d = 1, best = 0, cells = 0, best_col = 0, best_row = 0;

        while (min_col < max_col) {
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
            const i64 thr = best - p.x;
            /* d < 2^32 and |gap| < 2^31: d * gap cannot overflow. */
            const i64 edge = d * p.gap;
            const bool edge_kept = edge > thr;
            const Cell lo_edge = edge_kept && lo3 == 0 ? (Cell)edge : U;
            const Cell hi_edge = edge_kept && hi3 == d ? (Cell)edge : U;

            Cell dmax = U;
            i64 first_live = hi3 + 1, last_live = lo3 - 1;
            for (i64 base = lo3; base <= hi3; base += 32) {
                const i64 c = base + lane;
                bool from_left = false, from_right = false;
                if (c <= hi3) {
                    Cell value;
                    if (c == lo3) {
                        value = lo_edge;
                    } else if (c == hi3) {
                        value = hi_edge;
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
            cells += max_col - min_col;
            __syncwarp(); /* a3 complete before anyone reads it */

            if (p.best_mode && (i64)dmax > best) {
                /* The first cell of the anti-diagonal holding the new best. */
                for (i64 base = min_col; base < max_col; base += 32) {
                    const i64 c = base + lane;
                    const unsigned hit = __ballot_sync(FULL, c < max_col && a3[c] == dmax);
                    if (hit) {
                        best_col = base + __ffs(hit) - 1;
                        best_row = d - best_col;
                        break;
                    }
                }
            }
            best = (i64)dmax > best ? (i64)dmax : best;

            const i64 next_min = first_live;
            const i64 next_max = last_live >= lo3 ? last_live + 2 : lo3 + 1;
            min_col = next_min < d + 1 - n ? d + 1 - n : next_min;
            max_col = next_max > m + 1 ? m + 1 : next_max;
        }

        if (lane == 0) {
            i64 score_out, col, row;
            if (p.best_mode) {
                score_out = best;
                col = best_col;
                row = best_row;
            } else {
                /* SeqAn's longest extension (see xdrop_body.h). */
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
        __syncwarp(); /* lane 0 done with the scratch before the next item overwrites it */
    }
}

}  // namespace warpdp_xdrop

#ifdef WARPDP_NVCC_CHECK
/* Every configuration xdrop.py launches (scripts/check_cuda_sources.sh compiles these). */
template __global__ void warpdp_xdrop::extend_kernel<int>(const warpdp_xdrop::Params *);
template __global__ void warpdp_xdrop::extend_kernel<long long>(const warpdp_xdrop::Params *);
#endif
