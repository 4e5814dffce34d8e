/* Seed extension with BWA's ksw_extend2 semantics on NVIDIA GPUs.
 *
 * Compiled ahead of time into fatbin/ (runtime/fatbin_build.py), else at run time by NVRTC;
 * warpdp/kernels/seedext.py picks the template
 * configurations by name and launches them. Two kernels:
 *   - extend_kernel: intra-query parallelism after SALoBa (one subwarp of G lanes per
 *     extension, each lane a contiguous block of C columns of a tile held in registers, C odd
 *     so that the lanes' shared-memory accesses hit different banks), for long queries;
 *   - extend_lane_kernel (further down): one thread per extension, for short queries, where a
 *     subwarp's per-row collectives cost more than its cells.
 * The code and the row-parallel formulation are this project's own.
 *
 * Why rows, not anti-diagonals
 *   ksw_extend2 narrows the window [beg, end) of row i+1 from the cells of the whole of row i
 *   (zero cells are trimmed off both ends), and cells outside a window keep whatever they
 *   last held, which later rows may read. An anti-diagonal wavefront would have to compute
 *   row i+1 before row i is finished, so it cannot give the same answers. Instead a subwarp
 *   computes one row at a time, all columns at once: in ksw_extend2 the insertion score F
 *   comes from M (the diagonal move), not from H, so
 *     F(i, j+1) = max(F(i, j) - e_ins, max(M(i, j) - o_ins - e_ins, 0)),  F(i, beg) = 0
 *   is a max-plus recurrence whose value at the start of each lane's block is an exclusive
 *   prefix scan over the lanes (log2 G shuffles). Everything else in a cell depends on the
 *   row above only. Row maximum, its column, and the first/last non-zero columns (for the
 *   trimming) are subwarp reductions; every lane then runs the per-row bookkeeping (band,
 *   best cell, z-drop, gscore) on the same values, so no lane waits on another to branch.
 *
 * State per extension (shared memory, or global scratch for very long queries):
 *   eh_h[j] = H(i-1, j-1) on entry to row i, eh_e[j] = E(i, j), for j = 0..qlen+1, and the
 *   query's base codes. A lane writes H(i, j) to eh_h[j+1] after the subwarp has read the row
 *   above; the column right after a tile, whose H(i-1, .) that write would destroy, is read
 *   first. Scores: codes A,C,G,T = 0..3, N = 8 in the query and 12 in the target, so q ^ t is
 *   0 for a match, 1..3 for a mismatch and anything else involves an N.
 *
 * Arithmetic is 32-bit and exact: the plugin keeps h0 + a * min(qlen, tlen) <= 2^30 and
 * gap costs <= 16383, and 64-bit values are used where BWA's own arithmetic grows with i or j.
 */

#ifndef WARPDP_DYNAMIC_SHARED
#define WARPDP_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
#endif
#ifndef WARPDP_SEEDEXT_THREADS
#define WARPDP_SEEDEXT_THREADS 128
#endif

namespace warpdp_seedext {

typedef unsigned char u8;
typedef unsigned int u32;
typedef long long i64;

constexpr int THREADS = WARPDP_SEEDEXT_THREADS;
constexpr int NEG = -(1 << 29); /* below any score, and far from overflowing when decayed */
constexpr int FAR = 0x7fffffff;
constexpr int QUERY_N = 8, TARGET_N = 12;

/* One launch: the extensions order[0..n) of one length bin. */
struct Params {
    const u8 *query;               /* ASCII bases of all queries, concatenated */
    const u8 *target;              /* ASCII bases of all targets */
    const i64 *query_offsets;      /* n_pairs + 1, into query */
    const i64 *target_offsets;     /* n_pairs + 1, into target */
    const int *h0;                 /* per pair */
    const int *order;              /* pair indices of this launch */
    int *counter;                  /* next entry of order to take (starts at 0) */
    int *out;                      /* n_pairs x 6: score qle tle gtle gscore max_off */
    int *scratch;                  /* global state per subwarp when not in shared memory */
    i64 state_ints;                /* ints of state per subwarp (eh_h, eh_e, query codes) */
    int n;                         /* entries in order */
    int qmax;                      /* longest query of the launch */
    int a, b, o_del, e_del, o_ins, e_ins, w, end_bonus, zdrop;
};
/* The launcher writes this layout by field name (seedext.py, PARAMS); it checks the size the
   kernel below reports when the module loads. */
static_assert(sizeof(Params) == 128, "Params layout changed: update PARAMS in warpdp/kernels/seedext.py");

extern "C" __global__ void seedext_struct_sizes(unsigned long long *out) { out[0] = sizeof(Params); }

__device__ __forceinline__ int imax(int x, int y) { return x > y ? x : y; }
__device__ __forceinline__ int imin(int x, int y) { return x < y ? x : y; }

/* A, C, G, T in either case -> 0, 1, 3, 2 (any fixed bijection will do: only equality and
   N-ness matter), anything else -> n_code. */
__device__ __forceinline__ int base_code(u32 c, int n_code)
{
    const u32 x = c | 0x20u;
    const bool acgt = (x & 0xe0u) == 0x60u && ((0x0010008Au >> (x & 31u)) & 1u);
    return acgt ? (int)((x >> 1) & 3u) : n_code;
}

/* BWA's band: w, narrowed to the longest insertion and deletion that could still pay off. */
__device__ __forceinline__ i64 narrowed_band(int qlen, const Params &p)
{
    const i64 best = p.a > 0 ? p.a : 0;
    i64 w = p.w;
    const int opens[2] = {p.o_ins, p.o_del}, extends[2] = {p.e_ins, p.e_del};
    for (int k = 0; k < 2; k++) {
        const i64 x = (i64)qlen * best + p.end_bonus - opens[k] + extends[k];
        const i64 longest = x > 0 ? x / extends[k] : 0;
        const i64 cap = longest > 1 ? longest : 1;
        w = w < cap ? w : cap;
    }
    return w;
}

/* H(-1, j) for j >= 1: an insertion run along the query from the seed (0 once it runs out). */
__device__ __forceinline__ int insertion_run(int h0, int j, const Params &p)
{
    const i64 run = (i64)h0 - p.o_ins - (i64)p.e_ins * j;
    return run > 0 ? (int)run : 0;
}

/* H(i, -1): a deletion run along the target from the seed, before column 0 of row i. */
__device__ __forceinline__ int deletion_run(int h0, int i, const Params &p)
{
    const i64 run = (i64)h0 - p.o_del - (i64)p.e_del * (i + 1);
    return run > 0 ? (int)run : 0;
}

/* Row i's window [beg, end), narrowed to the band and the query. */
__device__ __forceinline__ void clamp_to_band(int &beg, int &end, int i, i64 w, int qlen)
{
    if ((i64)beg < (i64)i - w)
        beg = (int)(i - w);
    if ((i64)end > (i64)i + w + 1)
        end = (int)(i + w + 1);
    end = imin(end, qlen);
}

/* What ksw_extend2 tracks from row to row, and what it decides at the end of a row (both kernels). */
struct Extension {
    int best, best_i, best_j, gscore, gscore_i, max_off;

    __device__ explicit Extension(int h0) : best(h0), best_i(-1), best_j(-1), gscore(-1), gscore_i(-1), max_off(0) {}

    /* After row i: its best cell (row_max at column row_max_j), whether its window reached the
       query end and H of its last column there. False where ksw_extend2 stops: an all-zero row,
       or the z-drop. */
    __device__ bool end_row(int i, int row_max, int row_max_j, bool at_query_end, int h_last, const Params &p)
    {
        if (at_query_end && h_last >= gscore) {
            gscore = h_last;
            gscore_i = i;
        }
        if (row_max == 0)
            return false;
        if (row_max > best) {
            best = row_max;
            best_i = i;
            best_j = row_max_j;
            const int off = row_max_j > i ? row_max_j - i : i - row_max_j;
            max_off = imax(max_off, off);
        } else if (p.zdrop > 0) {
            const i64 di = (i64)i - best_i, dj = (i64)row_max_j - best_j, drop = (i64)best - row_max;
            if (di > dj ? drop - (di - dj) * p.e_del > p.zdrop : drop - (dj - di) * p.e_ins > p.zdrop)
                return false;
        }
        return true;
    }

    /* ksw_extend2's results: score, qle, tle, gtle, gscore, max_off. */
    __device__ void write(int *r) const
    {
        r[0] = best;
        r[1] = best_j + 1;
        r[2] = best_i + 1;
        r[3] = gscore_i + 1;
        r[4] = gscore;
        r[5] = max_off;
    }
};

/* Inclusive max-plus scan over the G lanes of a subwarp: lane t gets
   max over k <= t of (v_k - (t - k) * step). */
template <int G>
__device__ __forceinline__ int decayed_scan(u32 mask, int t, int v, int step)
{
#pragma unroll
    for (int d = 1; d < G; d <<= 1) {
        const int other = __shfl_up_sync(mask, v, d, G);
        if (t >= d)
            v = imax(v, other - d * step);
    }
    return v;
}

/* Extends one pair with the subwarp (every lane calls it with the same arguments). */
template <int G, int C>
__device__ void extend_one(const Params &p, int pair, int *state, u32 mask, int t)
{
    const i64 q0 = p.query_offsets[pair], t0 = p.target_offsets[pair];
    const int qlen = (int)(p.query_offsets[pair + 1] - q0), tlen = (int)(p.target_offsets[pair + 1] - t0);
    const u8 *query = p.query + q0, *target = p.target + t0;
    const int h0 = p.h0[pair];
    const int a = p.a, b = p.b, e_del = p.e_del, e_ins = p.e_ins;
    const int oe_del = p.o_del + p.e_del, oe_ins = p.o_ins + p.e_ins;
    int *eh_h = state, *eh_e = state + (qlen + 2);
    u8 *qcode = (u8 *)(eh_e + (qlen + 2));

    /* Row -1: h0, then an insertion run along the query; E = 0; the query's codes. */
    for (int j = t; j <= qlen + 1; j += G) {
        eh_h[j] = j == 0 ? h0 : (j <= qlen ? insertion_run(h0, j, p) : 0);
        eh_e[j] = 0;
        if (j < qlen)
            qcode[j] = (u8)base_code(query[j], QUERY_N);
    }
    __syncwarp(mask);

    const i64 w = narrowed_band(qlen, p);
    int beg = 0, end = qlen;
    Extension ext(h0);
    for (int i = 0; i < tlen; i++) {
        clamp_to_band(beg, end, i, w, qlen);
        /* H(i, beg-1): the first column (a deletion run from the seed) only exists at beg 0. */
        const int h_first = beg == 0 ? deletion_run(h0, i, p) : 0;
        const int tc = base_code(target[i], TARGET_N);
        /* Per lane: row maximum and its column (ties: later column), and the first and last
           columns whose new (H(i, j-1), E(i+1, j)) are not both zero. */
        int m = 0, mj = -1, first = FAR, last = -1;
        if (beg < end) {
            int f_carry = 0;     /* F entering the tile */
            int next_diag = 0;   /* lane 0: H(i-1, base-1) of the next tile, read before it is overwritten */
            for (int base = beg; base < end; base += G * C) {
                const int lo = base + t * C;
                int mm[C], ee[C];
                int out = NEG; /* F leaving this lane's block, from its own columns */
#pragma unroll
                for (int c = 0; c < C; c++) {
                    const int j = lo + c;
                    mm[c] = 0;
                    ee[c] = 0;
                    if (j < end) {
                        const int diag = (c == 0 && t == 0 && base > beg) ? next_diag : eh_h[j];
                        const int x = qcode[j] ^ tc;
                        const int s = x == 0 ? a : (x < 4 ? -b : -1);
                        mm[c] = diag ? diag + s : 0;
                        ee[c] = eh_e[j];
                        out = imax(out - e_ins, imax(mm[c] - oe_ins, 0));
                    } else {
                        out -= e_ins;
                    }
                }
                /* F entering lane t's block: from the tile's start, or from the lanes before. */
                const int step = C * e_ins;
                const int scanned = decayed_scan<G>(mask, t, out, step);
                const int before = __shfl_up_sync(mask, scanned, 1, G);
                int f = t == 0 ? f_carry : imax(f_carry - t * step, before);
                const int tile_out = __shfl_sync(mask, scanned, G - 1, G);
                if (t == 0 && base + G * C < end)
                    next_diag = eh_h[base + G * C];
                __syncwarp(mask); /* the row above is read: now overwrite it */
                if (t == 0 && base == beg)
                    eh_h[beg] = h_first;
                if (t == 0 && base == beg && h_first != 0) {
                    first = beg;
                    last = beg;
                }
#pragma unroll
                for (int c = 0; c < C; c++) {
                    const int j = lo + c;
                    if (j < end) {
                        const int h = imax(imax(mm[c], ee[c]), f);
                        const int e_next = imax(ee[c] - e_del, imax(mm[c] - oe_del, 0));
                        eh_e[j] = e_next;
                        eh_h[j + 1] = h;
                        f = imax(f - e_ins, imax(mm[c] - oe_ins, 0));
                        if (h >= m) {
                            m = h;
                            mj = j;
                        }
                        if (e_next != 0) {
                            first = imin(first, j);
                            last = imax(last, j);
                        }
                        if (h != 0) { /* column j+1 now holds H(i, j); column end counts for last only */
                            if (j + 1 < end)
                                first = imin(first, j + 1);
                            last = imax(last, j + 1);
                        }
                    }
                }
                f_carry = imax(f_carry - G * step, tile_out);
                __syncwarp(mask);
            }
        }
        if (t == 0) {
            if (beg >= end)
                eh_h[end] = h_first; /* an empty window still leaves its first H at end */
            eh_e[end] = 0;
        }
        __syncwarp(mask);
        const int row_max = __reduce_max_sync(mask, m);
        const int row_max_j = __reduce_max_sync(mask, m == row_max ? mj : -1);
        const int first_live = __reduce_min_sync(mask, first);
        const int last_live = __reduce_max_sync(mask, last);
        const int h_last = eh_h[end];
        __syncwarp(mask); /* everyone has read eh_h[end] before the next row writes */

        /* The rest is ksw_extend2's bookkeeping, on values every lane holds. */
        if (!ext.end_row(i, row_max, row_max_j, (beg < end ? end : beg) == qlen, h_last, p))
            break;
        const int new_beg = first_live < end ? first_live : end;
        const int top = last_live >= new_beg ? last_live : new_beg - 1;
        beg = new_beg;
        end = imin(top + 2, qlen);
    }
    if (t == 0)
        ext.write(p.out + (i64)pair * 6);
    __syncwarp(mask); /* the state is free for the next pair */
}

/* Persistent kernel: each subwarp takes pairs from the launch's list until it is empty. */
template <int G, int C, bool SHARED>
__global__ void __launch_bounds__(THREADS) extend_kernel(const Params *params)
{
    const Params &p = *params;
    const int lane = (int)(threadIdx.x & 31u), t = lane % G;
    const u32 mask = G == 32 ? 0xffffffffu : (((1u << G) - 1u) << (lane - t));
    const int sub = (int)threadIdx.x / G, subs_per_block = THREADS / G;
    int *state;
    if (SHARED) {
        WARPDP_DYNAMIC_SHARED(int, shared_state);
        state = shared_state + (i64)sub * p.state_ints;
    } else {
        state = p.scratch + ((i64)blockIdx.x * subs_per_block + sub) * p.state_ints;
    }
    for (;;) {
        int k = 0;
        if (t == 0)
            k = atomicAdd(p.counter, 1);
        k = __shfl_sync(mask, k, 0, G);
        if (k >= p.n)
            break;
        extend_one<G, C>(p, p.order[k], state, mask, t);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Lane kernel (inter-query): one thread per extension, for short queries.
 *
 * For BWA-MEM's reads (50-250 bases) a subwarp's per-row scan and reductions cost more than its
 * few cells per lane (SALoBa, too, finds inter-query parallelism better for very short
 * queries), so such pairs run one per thread: ksw_extend2's loops, with no collective per row,
 * two rows at a time (lane_row_pair: the second row one column behind the first, which gives
 * the thread two independent dependency chains and halves the shared-memory traffic; the
 * warps per SM are few, as shared memory bounds them, so that extra parallelism is what hides
 * the latencies). A thread's row state lives in shared memory, one 32-bit word per column
 * j = 0..qlen: the query's base code in bits 0..3 (lane_code), H(i-1, j-1) in
 * bits 4..17 and E(i, j) in bits 18..31. Blocks are one warp; column j of lane l is word
 * 32 * j + l of the block, so the lanes always hit different banks, whichever columns they are
 * at. The launcher sends a pair here only when every score it can reach, h0 + a * qlen, fits
 * in 14 bits, and the match score a is at most LANE_MAX_MATCH.
 * ------------------------------------------------------------------------------------------- */
constexpr int LANE_BITS = 14;
constexpr u32 LANE_FIELD = (1u << LANE_BITS) - 1u;
constexpr int LANE_H_SHIFT = 4, LANE_E_SHIFT = LANE_H_SHIFT + LANE_BITS;
static_assert(LANE_H_SHIFT == 4, "lane_h_x16 reads 16 H straight from the word");
constexpr int LANE_MAX_MATCH = 15; /* seedext.py keeps the same limit */
static_assert(LANE_MAX_MATCH < (1 << LANE_H_SHIFT), "16 diag >= diag + a for every diag >= 1 needs a <= 15");
constexpr u32 LANE_CODE_MASK = 0xfu;
constexpr int LANE_N = 4; /* base_code of N; the state words hold base_code + 1 (lane_code) */
constexpr int SCORE_BIAS = 128; /* scores -127..127 travel as the bytes 1..255 */

/* prmt.b32: byte k of the result is byte (nibble k of the selector) & 7 of the eight bytes
   hi:lo, or that byte's sign bit copied eight times where the nibble's bit 3 is set. */
__device__ __forceinline__ u32 select_byte(u32 lo, u32 hi, u32 selector)
{
#ifdef __CUDA_ARCH__
    u32 r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(selector));
    return r;
#else
    const unsigned long long both = ((unsigned long long)hi << 32) | lo;
    u32 r = 0;
    for (int k = 0; k < 4; k++) {
        const u32 nibble = (selector >> (4 * k)) & 0xfu;
        u32 byte = (u32)(both >> (8 * (nibble & 7u))) & 0xffu;
        if (nibble & 8u)
            byte = (byte & 0x80u) ? 0xffu : 0u;
        r |= byte << (8 * k);
    }
    return r;
#endif
}

/* A column's query code, base_code + 1 (A, C, G, T = 1..4, N = 5), from its state word. It is
   also the prmt selector of the column's score in a row's RowScores: its nibbles 1..3 are zero,
   and byte 0 of the scores is zero, so the score byte comes out zero-extended. One code serves
   both rows of a pass. */
__device__ __forceinline__ u32 lane_code(u32 word) { return word & LANE_CODE_MASK; }

/* A row's score of each query code as biased bytes: byte c of the eight bytes hi:lo for code c;
   byte 0 is zero. */
struct RowScores {
    u32 lo, hi;
};

/* The scores of a row whose target base has base_code tc (LANE_N for N). */
__device__ __forceinline__ RowScores row_scores(u32 tc, const Params &p)
{
    typedef unsigned long long u64;
    const u64 n_score = SCORE_BIAS - 1, mismatch = (u64)(SCORE_BIAS - p.b);
    const u64 bytes = tc == (u32)LANE_N ? n_score * 0x010101010100ull
                                        : mismatch * 0x0101010100ull + (n_score << 40) + ((u64)(p.a + p.b) << (8 * (tc + 1)));
    return {(u32)bytes, (u32)(bytes >> 32)};
}

/* x * y + z as one instruction: written as shifts and adds, the state word's packing compiles
   to three (a shift, a merge, a multiply-add) where two do. */
__device__ __forceinline__ u32 multiply_add(u32 x, u32 y, u32 z)
{
#ifdef __CUDA_ARCH__
    u32 r;
    asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    return r;
#else
    return x * y + z;
#endif
}

__device__ __forceinline__ int imax3(int x, int y, int z)
{
#ifdef __CUDA_ARCH__
    return __vimax3_s32(x, y, z); /* one instruction on sm_90 (DPX) */
#else
    return imax(imax(x, y), z);
#endif
}

/* Gap costs, copied into registers (the shared-memory stores must not make the compiler
   reload them from the parameters). */
struct GapCosts {
    int e_del, e_ins, oe_del, oe_ins;
};

/* The running values of one row of the lane kernel. */
struct LaneRow {
    u32 lo, hi; /* the row's RowScores */
    int h1;     /* H(i, j-1) */
    int f;      /* F(i, j) */
    int key;    /* (H << 16) + j of the row's best cell so far: the max keeps BWA's later j on ties */
};

/* Cell (i, j) of ksw_extend2's inner loop, from diag = H(i-1, j-1) (and diag_x16 = 16 diag),
   e = E(i, j) and the column's lane_code: moves row.h1 on to H(i, j),
   updates F and the row's best cell, and returns E(i+1, j). SAME_OPEN: o_del + e_del equals
   o_ins + e_ins (BWA-MEM's defaults), so E and F start from one clamped M - o - e. */
template <bool SAME_OPEN>
__device__ __forceinline__ int lane_step(LaneRow &row, int diag, int diag_x16, int e, u32 code, int j,
                                         const GapCosts &g)
{
    const int score_byte = (int)select_byte(row.lo, row.hi, code);
    /* M = diag ? diag + score : 0. min(diag + score, 16 diag) is the same for diag >= 1 (the
       launcher keeps a <= LANE_MAX_MATCH = 15), and with diag 0 it gives min(score, 0): a
       negative M changes neither H (E, F >= 0) nor the gap scores (clamped at 0). */
    const int m = imin(diag + score_byte - SCORE_BIAS, diag_x16);
    const int h = imax3(m, e, row.f);
    const int open_del = imax(m - g.oe_del, 0);
    const int open_ins = SAME_OPEN ? open_del : imax(m - g.oe_ins, 0);
    row.h1 = h;
    row.f = imax(row.f - g.e_ins, open_ins);
    row.key = imax(row.key, h * 65536 + j);
    return imax(e - g.e_del, open_del);
}

__device__ __forceinline__ int lane_h_x16(u32 word) { return (int)(word & (LANE_FIELD << LANE_H_SHIFT)); }
__device__ __forceinline__ int lane_h(u32 word) { return lane_h_x16(word) >> LANE_H_SHIFT; /* shares the mask */ }
__device__ __forceinline__ int lane_e(u32 word) { return (int)(word >> LANE_E_SHIFT); }

/* A column's state word: the query code of `code_word` (a state word or its lane_code), H(i, j-1)
   and E(i+1, j). */
__device__ __forceinline__ u32 lane_word(u32 code_word, int h_left, int e_next)
{
    const u32 low = multiply_add((u32)h_left, 1u << LANE_H_SHIFT, code_word & LANE_CODE_MASK);
    return multiply_add((u32)e_next, 1u << LANE_E_SHIFT, low);
}

/* Cell (i, j) from its state word; returns the word as ksw_extend2 leaves column j. */
__device__ __forceinline__ u32 lane_cell(LaneRow &row, u32 word, int j, const GapCosts &g)
{
    const int h_left = row.h1;
    const int e_next = lane_step<false>(row, lane_h(word), lane_h_x16(word), lane_e(word), lane_code(word), j, g);
    return lane_word(word, h_left, e_next);
}

/* The target's base codes in order, read a 32-bit aligned word at a time (the next word is
   loaded four bases ahead). */
struct TargetReader {
    const u32 *word;
    const u8 *end;
    u32 current, next;
    int shift;

    __device__ TargetReader(const u8 *target, int tlen)
        : word((const u32 *)((unsigned long long)target & ~3ull)), end(target + tlen),
          current(tlen > 0 ? word[0] : 0u), next((const u8 *)(word + 1) < end ? word[1] : 0u),
          shift(8 * (int)((unsigned long long)target & 3ull)) {}

    __device__ u32 next_code()
    {
        const u32 code = (u32)base_code((current >> shift) & 0xffu, LANE_N);
        shift += 8;
        if (shift == 32) {
            shift = 0;
            current = next;
            word++;
            if ((const u8 *)(word + 1) < end)
                next = word[1];
        }
        return code;
    }
};

/* Columns the row-pair loop unrolls: 8 was the fastest of 2, 4 and 8 (BENCHMARKS.md, seed
   extension). */
#ifndef WARPDP_LANE_UNROLL
#define WARPDP_LANE_UNROLL 8
#endif
constexpr int LANE_UNROLL = WARPDP_LANE_UNROLL;

/* Rows i and i+1 in one pass over the columns; the caller has clamped row i's window
   [beg, end) to the band and it is not empty. Row i+1 runs one column behind row i and takes
   row i's output for a column from registers, so each state word is read and written once for
   both rows, and the two rows' dependency chains interleave. Returns false where ksw_extend2
   stops after either row; otherwise leaves row i+1's window in beg, end for the trimming.

   Row i+1 cannot wait for ksw_extend2's trimming of row i, which needs the whole row, so:
   - it starts at row i's window, narrowed to its own band. The columns the trimming would
     skip are all zero after row i, and compute to zero again (M = 0, E = 0, F = 0);
   - it ends where the trimming would end it: the last non-zero column after row i is one past
     the last cell with H > 0, so row i+1 stops two further on (or at the query end or its
     band), up to two columns beyond row i's window. Where that is short of row i's window,
     row i+1 has computed a few cells too many; they held zero after row i, which is written
     back, and their H is only F running out (below the row's best, as e_ins >= 1), so they
     change neither the best cell nor anything written before them. */
template <bool SAME_OPEN>
__device__ __forceinline__ bool lane_row_pair(u32 *col, int i, int &beg, int &end, i64 w, int qlen, RowScores sa,
                                              RowScores sb, int h0, const GapCosts &g, Extension &ext,
                                              const Params &p)
{
    LaneRow a{sa.lo, sa.hi, beg == 0 ? deletion_run(h0, i, p) : 0, 0, 0};
    const int start_b = (i64)beg < (i64)(i + 1) - w ? beg + 1 : beg;
    LaneRow b{sb.lo, sb.hi, start_b == 0 ? deletion_run(h0, i + 1, p) : 0, 0, 0};
    int last_positive = -1; /* row i's last column with H > 0 */
    /* Row i's output at the column row i+1 takes next: the word and its code, H(i, j-1), E(i+1, j). */
    u32 word = col[32 * beg], code = lane_code(word);
    int out_h = a.h1;
    int out_e = lane_step<SAME_OPEN>(a, lane_h(word), lane_h_x16(word), lane_e(word), code, beg, g);
    if (a.h1 > 0)
        last_positive = beg;
    int j = beg + 1;
    if (start_b > beg) { /* column beg is outside row i+1's band: it keeps row i's output */
        col[32 * beg] = lane_word(code, out_h, out_e);
        if (j < end) {
            word = col[32 * j];
            code = lane_code(word);
            out_h = a.h1;
            out_e = lane_step<SAME_OPEN>(a, lane_h(word), lane_h_x16(word), lane_e(word), code, j, g);
            if (a.h1 > 0)
                last_positive = j;
            j++;
        }
    }
#pragma unroll LANE_UNROLL
    for (; j < end; j++) {
        const int h_left = b.h1;
        const int e_next = lane_step<SAME_OPEN>(b, out_h, out_h << 4, out_e, code, j - 1, g);
        col[32 * (j - 1)] = lane_word(code, h_left, e_next);
        word = col[32 * j];
        code = lane_code(word);
        out_h = a.h1;
        out_e = lane_step<SAME_OPEN>(a, lane_h(word), lane_h_x16(word), lane_e(word), code, j, g);
        if (a.h1 > 0)
            last_positive = j;
    }
    /* Row i's last output, column end: H(i, end-1) and E = 0. */
    const int h_last = a.h1;
    const u32 end_word = col[32 * end];
    if (!ext.end_row(i, a.key >> 16, a.key & 0xffff, end == qlen, h_last, p))
        return false;

    i64 end_b = (i64)last_positive + 3;
    end_b = end_b < qlen ? end_b : qlen;
    end_b = end_b < (i64)i + w + 2 ? end_b : (i64)i + w + 2;
    int next_b = imax(start_b, end - 1);
    for (; next_b < end_b; next_b++) {
        int diag = h_last, e = 0;
        u32 code_word = end_word;
        if (next_b == end - 1) {
            diag = out_h;
            e = out_e;
            code_word = word;
        } else if (next_b > end) { /* beyond row i's window: the state as an earlier row left it */
            code_word = col[32 * next_b];
            diag = lane_h(code_word);
            e = lane_e(code_word);
        }
        const int h_left = b.h1;
        const int e_next = lane_step<SAME_OPEN>(b, diag, diag << 4, e, lane_code(code_word), next_b, g);
        col[32 * next_b] = lane_word(code_word, h_left, e_next);
    }
    if (next_b == end_b) /* E(i+2, end_b) = 0 */
        col[32 * end_b] = (col[32 * end_b] & LANE_CODE_MASK) | ((u32)b.h1 << LANE_H_SHIFT);
    for (int c = (int)end_b + 1; c <= end; c++) /* row i left these zero */
        col[32 * c] &= LANE_CODE_MASK;
    if (!ext.end_row(i + 1, b.key >> 16, b.key & 0xffff, end_b == qlen, b.h1, p))
        return false;
    beg = start_b;
    end = (int)end_b;
    return true;
}

__device__ __forceinline__ void extend_lane(const Params &p, int pair, u32 *col)
{
    const i64 q0 = p.query_offsets[pair], t0 = p.target_offsets[pair];
    const int qlen = (int)(p.query_offsets[pair + 1] - q0), tlen = (int)(p.target_offsets[pair + 1] - t0);
    const u8 *query = p.query + q0;
    const int h0 = p.h0[pair];
    const int e_del = p.e_del, e_ins = p.e_ins;
    const GapCosts gaps{e_del, e_ins, p.o_del + e_del, p.o_ins + e_ins};

    /* Row -1: h0, then an insertion run along the query; E = 0; the query's codes. */
    for (int j = 0; j <= qlen; j++) {
        const int h = j == 0 ? h0 : insertion_run(h0, j, p);
        const u32 code = j < qlen ? (u32)base_code(query[j], LANE_N) + 1u : 0u;
        col[32 * j] = code | ((u32)h << LANE_H_SHIFT);
    }

    TargetReader target(p.target + t0, tlen);
    const i64 w = narrowed_band(qlen, p);
    int beg = 0, end = qlen;
    Extension ext(h0);
    for (int i = 0; i < tlen;) {
        clamp_to_band(beg, end, i, w, qlen);
        const RowScores scores = row_scores(target.next_code(), p);
        if (i + 1 < tlen && beg < end) {
            const RowScores next = row_scores(target.next_code(), p);
            const bool go_on =
                gaps.oe_del == gaps.oe_ins
                    ? lane_row_pair<true>(col, i, beg, end, w, qlen, scores, next, h0, gaps, ext, p)
                    : lane_row_pair<false>(col, i, beg, end, w, qlen, scores, next, h0, gaps, ext, p);
            if (!go_on)
                break;
            i += 2;
        } else {
            /* One row: the last of an odd target, or an empty window (where ksw_extend2 stops). */
            LaneRow row{scores.lo, scores.hi, beg == 0 ? deletion_run(h0, i, p) : 0, 0, 0};
            for (int j = beg; j < end; j++)
                col[32 * j] = lane_cell(row, col[32 * j], j, gaps);
            col[32 * end] = (col[32 * end] & LANE_CODE_MASK) | ((u32)row.h1 << LANE_H_SHIFT); /* E(i+1, end) = 0 */
            if (!ext.end_row(i, row.key >> 16, row.key & 0xffff, (beg < end ? end : beg) == qlen, row.h1, p))
                break;
            i += 1;
        }
        /* The next row's window: trim columns whose H and E are both zero off both ends. */
        int j = beg;
        while (j < end && (col[32 * j] & ~LANE_CODE_MASK) == 0)
            j++;
        beg = j;
        j = end;
        while (j >= beg && (col[32 * j] & ~LANE_CODE_MASK) == 0)
            j--;
        end = imin(j + 2, qlen);
    }
    ext.write(p.out + (i64)pair * 6);
}

/* Blocks of one warp; the warp takes 32 consecutive entries of the launch's list at a time (the
   launcher sorts them so that neighbours have similar lengths). Shared memory: 32 * (qmax + 1)
   words. */
__global__ void __launch_bounds__(32) extend_lane_kernel(const Params *params)
{
    const Params &p = *params;
    WARPDP_DYNAMIC_SHARED(u32, lane_state);
    const int lane = (int)(threadIdx.x & 31u);
    u32 *col = lane_state + lane;
    for (;;) {
        int k = 0;
        if (lane == 0)
            k = atomicAdd(p.counter, 32);
        k = __shfl_sync(0xffffffffu, k, 0, 32);
        if (k >= p.n)
            break;
        if (k + lane < p.n)
            extend_lane(p, p.order[k + lane], col);
    }
}

}  // namespace warpdp_seedext

#ifdef WARPDP_NVCC_CHECK
/* Explicit instantiations so that an offline nvcc run compiles every configuration
   warpdp/kernels/seedext.py uses (keep the two lists in step; a test compares them). */
namespace warpdp_seedext {
template __global__ void extend_kernel<4, 9, true>(const Params *);
template __global__ void extend_kernel<4, 17, true>(const Params *);
template __global__ void extend_kernel<8, 17, true>(const Params *);
template __global__ void extend_kernel<16, 13, true>(const Params *);
template __global__ void extend_kernel<16, 13, false>(const Params *);
}  // namespace warpdp_seedext
#endif
