/* Edit distance on NVIDIA GPUs: the same answers as the CPU backend (cython_cpu/edit_body.h).
 *
 * Compiled ahead of time into fatbin/ (runtime/fatbin_build.py), else at run time by NVRTC;
 * warpdp/kernels/edit.py plans the chunks and
 * launches these kernels, a thread or a warp per alignment:
 *
 *   - windowed_kernel<D>: Scrooge's windowed GenASM (SENE, DENT, early termination). A thread
 *     walks its pair's windows; in each it computes the GenASM bit-vectors R[i][d] text row by
 *     text row (i = wn .. 0), the D + 1 vectors of a row (d = 0..D) in registers, and keeps only
 *     the rows the traceback can reach (i <= W - O: DENT) in its own slot of a global scratch
 *     (interleaved by thread, so a warp's stores coalesce; L1/L2 hold them for the traceback).
 *     The window's distance is the first d whose row-0 vector reaches the corner (early
 *     termination, read off the registers). A window needing more than D edits gives the pair
 *     up: it goes to an overflow list that the next tier (a larger D) takes, in the same
 *     stream, carrying on from the window that needed more (the pair's state in a per-pair
 *     resume record); the last tier's D is 64, enough for any window.
 *   - compact_cigars: the CIGARs' runs packed together before they are copied back.
 *   - exact_kernel (a thread per pair, queries up to edit.py's WARP_MIN_QUERY) and
 *     exact_warp_kernel (a warp per pair, longer queries): the CPU backend's exact algorithm:
 *     Myers' bit-vector algorithm in Hyyrö's block form for the last DP row (the thread kernel
 *     with the CPU's Ukkonen cut-off and bound doubling, the warp kernel as a diagonal wavefront
 *     of blocks over its lanes, see WarpTeam), edlib's locations, Hirschberg's recursion for the
 *     path (here a loop over an explicit stack, in the same order). Bit-vectors live in the
 *     thread's or warp's slot of a global scratch (interleaved by thread or lane), rows and
 *     reversed copies in per-slot regions, so memory is linear in the pair's lengths. The
 *     tie-breaking rule is the CPU's (see edit_body.h).
 *
 * Every answer is determined by the DP values alone (values above a bound k come out as k + 1
 * on both sides), so the GPU's answers equal the CPU's exactly.
 */

namespace warpdp_edit {

typedef unsigned char u8;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

enum { MODE_NW = 0, MODE_SHW = 1, MODE_HW = 2 };
enum { TASK_DISTANCE = 0, TASK_LOCATIONS = 1, TASK_PATH = 2 };
// Result columns, each n_chunk int64 values (edit.py: OUT_COLUMNS).
enum { OUT_DISTANCE = 0, OUT_T_BEGIN, OUT_T_END, OUT_N_LOCATIONS, OUT_N_CIGAR, OUT_COLUMNS };

const u32 OP_INS = 1u, OP_DEL = 2u, OP_EQ = 7u, OP_MIS = 8u;
const int STACK = 64;      // Hirschberg's pending segments: at most log2(query) + 2 (queries < 2^28)
const i64 BAD_BASE = -2;  // the distance of a windowed pair with a byte other than ACGT (edit.py)

// One launch: a list of a chunk's pairs and where its answers go. edit.py: PARAMS.
struct Params {
    const u8 *query;
    const u8 *target;
    const i64 *query_offsets;   // the chunk's, from 0 (n_chunk + 1)
    const i64 *target_offsets;
    const int *order;           // the launch's pairs (indices into the chunk)
    const int *count;           // how many (device memory: a tier's count is written by the last)
    int *overflow;              // windowed: pairs this tier gives up on (NULL in the last tier)
    int *overflow_count;
    const unsigned short *symbols;  // exact: byte -> 1..alphabet for bytes of the chunk's queries, else 0
    i64 *out;                   // OUT_COLUMNS x n_chunk
    i64 *loc_begin;             // pair p's locations from target_offsets[p] + p; NW, windowed: at p (NULL: none)
    i64 *loc_end;
    u32 *cigar;                 // pair p's ops from query_offsets[p] + target_offsets[p] (NULL: none)
    u64 *words;                 // scratch: word w of slot s at w * slots + s
    int *ints;                  // exact scratch: slot s's from s * ints_per_slot
    u8 *bytes;                  // exact scratch: slot s's from s * bytes_per_slot
    i64 *resume;                // windowed: where each pair a tier gave up on stands (RESUME values a pair)
    i64 k;
    i64 words_per_lane;         // exact_warp_kernel: scratch words of one lane
    i64 ints_per_slot;
    i64 bytes_per_slot;
    int n_chunk;
    int slots;                  // threads of the launch (grid x block); warps for exact_warp_kernel
    int alphabet;
    int mode;
    int task;
    int window;
    int overlap;
    int trace_rows;             // windowed: rows kept per window, W - O + 1
    int resume_in;              // windowed: this tier's pairs carry on from `resume` (every tier but the first)
};

extern "C" __global__ void edit_struct_sizes(unsigned long long *out) { out[0] = sizeof(Params); }

// A thread's words of the interleaved scratch.
struct Slot {
    u64 *base;
    int stride;
    __device__ __forceinline__ u64 &operator[](i64 i) const { return base[i * stride]; }
};

// The same scratch as 32-bit words (a thread's word i at (u32 *)words + i * slots + slot).
struct Slot32 {
    u32 *base;
    int stride;
    __device__ __forceinline__ u32 &operator[](i64 i) const { return base[i * stride]; }
};

// CIGAR ops written run by run; the open run stays in a register (the CPU merges the same way).
struct Cigar {
    u32 *ops;
    i64 n;
    u32 run;
    __device__ void push(u32 op, i64 count)
    {
        if (count <= 0 || ops == 0)
            return;
        if (run != 0 && (run & 15u) == op) {
            run += (u32)count << 4;
            return;
        }
        if (run != 0)
            ops[n++] = run;
        run = (u32)count << 4 | op;
    }
    __device__ i64 finish()
    {
        if (run != 0 && ops != 0)
            ops[n++] = run;
        run = 0;
        return n;
    }
};

/* ---------------------------------------------------------------- exact */

__device__ __forceinline__ int clip(i64 value, i64 k) { return (int)(k >= 0 && value > k ? k + 1 : value); }

// One 64-row block of one column of Myers/Hyyro's bit-parallel step: the block's vertical
// deltas (pv, mv) are updated in place from its match mask eq and the horizontal delta hin
// entering at its top; returns the horizontal delta leaving at its row `bit` (63, or the
// query's last row in the last block).
__device__ __forceinline__ int myers_block(u64 eq, u64 &pv, u64 &mv, int hin, int bit)
{
    const u64 p = pv, mm = mv;
    const u64 xv = eq | mm;
    if (hin < 0)
        eq |= 1ull;
    const u64 xh = (((eq & p) + p) ^ p) | eq;
    u64 ph = mm | ~(xh | p);
    u64 mh = p & xh;
    const int hout = (int)((ph >> bit) & 1) - (int)((mh >> bit) & 1);
    ph <<= 1;
    mh <<= 1;
    if (hin < 0)
        mh |= 1ull;
    else if (hin > 0)
        ph |= 1ull;
    pv = mh | ~(xv | ph);
    mv = ph & xv;
    return hout;
}

/* One thread per pair: edit_body.h's last_row with its Ukkonen cut-off, the block state in the
   thread's slot of the interleaved scratch. */
struct ThreadTeam {
    static const bool DOUBLING = true;  // bound doubling: the cut-off makes small bounds cheap
    Slot s;

    __device__ bool leader() const { return true; }
    __device__ void reverse_copy(u8 *dst, const u8 *src, i64 len) const
    {
        for (i64 i = 0; i < len; i++)
            dst[i] = src[len - 1 - i];
    }

    // row[j] = D[m][j] (j = 0..n); values above k (k >= 0) as k + 1.
    __device__ void last_row(const u8 *q, i64 m, const u8 *t, i64 n, bool free_start, i64 k, int *row,
                             const unsigned short *symbols, int alphabet) const
    {
        const i64 blocks = (m + 63) / 64;
        const i64 pv_at = (i64)(alphabet + 1) * blocks, mv_at = pv_at + blocks, bottom_at = mv_at + blocks;
        for (i64 w = 0; w < pv_at; w++)
            s[w] = 0;
        for (i64 i = 0; i < m; i++)
            s[(i64)symbols[q[i]] * blocks + i / 64] |= 1ull << (i % 64);
        for (i64 b = 0; b < blocks; b++) {
            s[pv_at + b] = ~0ull;
            s[mv_at + b] = 0;
            s[bottom_at + b] = (u64)(64 * (b + 1) < m ? 64 * (b + 1) : m);
        }
        const int lastbit = (int)((m - 1) % 64);
        i64 last = blocks - 1;
        if (k >= 0)
            for (last = 0; last < blocks - 1 && (i64)s[bottom_at + last] <= k;)
                last++;
        row[0] = clip(m, k);
        for (i64 j = 0; j < n; j++) {
            const i64 eq_at = (i64)symbols[t[j]] * blocks;
            int hin = free_start ? 0 : 1;
            for (i64 b = 0; b <= last; b++) {
                const int hout = myers_block(s[eq_at + b], s[pv_at + b], s[mv_at + b], hin,
                                             b == blocks - 1 ? lastbit : 63);
                s[bottom_at + b] = (u64)((i64)s[bottom_at + b] + hout);
                hin = hout;
            }
            if (k >= 0) {
                while (last > 0 && (i64)s[bottom_at + last] >= k + 64)
                    last--;
                if (last < blocks - 1 && (i64)s[bottom_at + last] <= k) {
                    last++;
                    s[pv_at + last] = ~0ull;
                    s[mv_at + last] = 0;
                    const i64 height = last == blocks - 1 ? m - 64 * last : 64;
                    s[bottom_at + last] = (u64)((i64)s[bottom_at + last - 1] + height);
                }
            }
            row[j + 1] = last == blocks - 1 ? clip((i64)s[bottom_at + blocks - 1], k) : (int)(k + 1);
        }
    }
};

/* One warp per pair (long queries): lane l holds a contiguous run of the query's 64-row blocks
   and computes column j at step j + l, its first block's horizontal delta coming from lane l-1
   (a shuffle per step), so the lanes sweep the columns as a diagonal wavefront. Every column
   is computed whole (values above k come out as k + 1 all the same), so one pass replaces bound
   doubling. The rest of the pair's work runs in every lane alike; lane 0 writes the answers. */
struct WarpTeam {
    static const bool DOUBLING = false;
    u64 *words;  // the warp's scratch: a lane's word i at words[i * 32 + lane]
    int lane;

    __device__ bool leader() const { return lane == 0; }
    __device__ u64 &word(i64 i) const { return words[i * 32 + lane]; }
    __device__ void reverse_copy(u8 *dst, const u8 *src, i64 len) const
    {
        __syncwarp();  // nobody still reads dst
        for (i64 i = lane; i < len; i += 32)
            dst[i] = src[len - 1 - i];
        __syncwarp();
    }

    __device__ void last_row(const u8 *q, i64 m, const u8 *t, i64 n, bool free_start, i64 k, int *row,
                             const unsigned short *symbols, int alphabet) const
    {
        __syncwarp();  // nobody still reads the last row
        const i64 blocks = (m + 63) / 64, per_lane = (blocks + 31) / 32, b0 = lane * per_lane;
        const i64 mine = b0 >= blocks ? 0 : (blocks - b0 < per_lane ? blocks - b0 : per_lane);
        const i64 pv_at = (i64)(alphabet + 1) * per_lane, mv_at = pv_at + per_lane;
        for (i64 w = 0; w < pv_at; w++)
            word(w) = 0;
        for (i64 i = 0; i < mine; i++) {
            const i64 first = (b0 + i) * 64, end = first + 64 < m ? first + 64 : m;
            for (i64 r = first; r < end; r++)
                word((i64)symbols[q[r]] * per_lane + i) |= 1ull << (r - first);
            word(pv_at + i) = ~0ull;
            word(mv_at + i) = 0;
        }
        const int last_lane = (int)((blocks - 1) / per_lane), lastbit = (int)((m - 1) % 64);
        i64 score = m;  // D[m][j] in the last lane
        if (lane == 0)
            row[0] = clip(m, k);
        int from_left = 0;
        for (i64 step = 0; step < n + last_lane; step++) {
            const i64 j = step - lane;
            int hin = lane == 0 ? (free_start ? 0 : 1) : from_left;
            if (mine > 0 && j >= 0 && j < n) {
                const i64 eq_at = (i64)symbols[t[j]] * per_lane;
                for (i64 i = 0; i < mine; i++)
                    hin = myers_block(word(eq_at + i), word(pv_at + i), word(mv_at + i), hin,
                                      b0 + i == blocks - 1 ? lastbit : 63);
                if (lane == last_lane) {
                    score += hin;
                    row[j + 1] = clip(score, k);
                }
            }
            from_left = __shfl_up_sync(0xffffffffu, hin, 1);
        }
        __syncwarp();  // the row is whole for every lane
    }
};

// Global alignment of q[0..m) with t[0..n) by Hirschberg's rule (edit_body.h), left to right.
template <class Team>
__device__ void hirschberg(const Team &team, const u8 *q, i64 m, const u8 *t, i64 n, Cigar &c, int *ints, u8 *rev,
                           const unsigned short *symbols, int alphabet)
{
    int stack[STACK][4];  // segments (query start, query length, target start, target length)
    int depth = 1;
    stack[0][0] = 0, stack[0][1] = (int)m, stack[0][2] = 0, stack[0][3] = (int)n;
    while (depth > 0) {
        depth--;
        const u8 *sq = q + stack[depth][0], *st = t + stack[depth][2];
        const i64 sm = stack[depth][1], sn = stack[depth][3];
        if (sn == 0) {
            c.push(OP_INS, sm);
            continue;
        }
        if (sm == 0) {
            c.push(OP_DEL, sn);
            continue;
        }
        if (sm == 1) {
            i64 at = 0;
            while (at < sn && st[at] != sq[0])
                at++;
            if (at < sn) {
                c.push(OP_DEL, at);
                c.push(OP_EQ, 1);
                c.push(OP_DEL, sn - at - 1);
            } else {
                c.push(OP_MIS, 1);
                c.push(OP_DEL, sn - 1);
            }
            continue;
        }
        const i64 mid = sm / 2;
        int *fwd = ints, *bwd = ints + sn + 1;
        team.reverse_copy(rev, sq + mid, sm - mid);
        team.reverse_copy(rev + (sm - mid), st, sn);
        team.last_row(sq, mid, st, sn, false, -1, fwd, symbols, alphabet);
        team.last_row(rev, sm - mid, rev + (sm - mid), sn, false, -1, bwd, symbols, alphabet);
        i64 split = 0, best = 0x7fffffffffffffffLL;
        for (i64 j = 0; j <= sn; j++) {
            const i64 cost = (i64)fwd[j] + bwd[sn - j];
            if (cost < best) {
                best = cost;
                split = j;
            }
        }
        const int q0 = stack[depth][0], t0 = stack[depth][2];
        // The right half waits below the left one, which is taken next.
        stack[depth][0] = q0 + (int)mid, stack[depth][1] = (int)(sm - mid);
        stack[depth][2] = t0 + (int)split, stack[depth][3] = (int)(sn - split);
        depth++;
        stack[depth][0] = q0, stack[depth][1] = (int)mid, stack[depth][2] = t0, stack[depth][3] = (int)split;
        depth++;
    }
}

// Start of the longest optimal alignment (distance best) of q ending at t[end] (edit_body.h).
template <class Team>
__device__ i64 start_of(const Team &team, const u8 *rq, i64 m, const u8 *t, i64 end, i64 best, u8 *rt, int *rrow,
                        const unsigned short *symbols, int alphabet)
{
    const i64 span = end + 1 < m + best ? end + 1 : m + best;
    team.reverse_copy(rt, t + end + 1 - span, span);
    team.last_row(rq, m, rt, span, false, best, rrow, symbols, alphabet);
    i64 last = 1;
    for (i64 j = 1; j <= span; j++)
        if (rrow[j] == best)
            last = j;
    return end + 1 - last;
}

template <class Team>
__device__ void exact_pair(const Params &p, int pair, const Team &team, int *ints, u8 *bytes)
{
    const i64 q_at = p.query_offsets[pair], t_at = p.target_offsets[pair];
    const u8 *q = p.query + q_at, *t = p.target + t_at;
    const i64 m = p.query_offsets[pair + 1] - q_at, n = p.target_offsets[pair + 1] - t_at;
    const i64 k = p.k;
    const bool leader = team.leader();
    i64 distance = -1, t_begin = -1, t_end = -1, count = 0, n_cigar = 0;
    const i64 loc_at = p.mode == MODE_NW ? pair : t_at + pair;  // NW has one location, the others n + 1 at most
    i64 *loc_begin = p.loc_begin ? p.loc_begin + loc_at : 0;
    i64 *loc_end = p.loc_end ? p.loc_end + loc_at : 0;
    if (!(p.mode == MODE_NW && k >= 0 && (m > n ? m - n : n - m) > k)) {
        int *row = ints, *rrow = ints + n + 1;
        u8 *rq = bytes, *rt = bytes + m;
        // SHW and HW also count the empty target prefix (end -1, as edlib reports it: for HW only
        // when the distance is m, all insertions, and its start is 0).
        const i64 first_end = p.mode == MODE_NW ? n : 0;
        const i64 most = m > n ? m : n;
        i64 bound = k >= 0 ? k : (Team::DOUBLING && most > 64 ? 64 : most);
        i64 best;
        for (;;) {
            team.last_row(q, m, t, n, p.mode == MODE_HW, bound >= most ? -1 : bound, row, p.symbols, p.alphabet);
            best = row[n];
            for (i64 j = first_end; j <= n; j++)
                best = row[j] < best ? row[j] : best;
            if (best <= bound || k >= 0 || bound >= most)
                break;
            bound = 2 * bound < most ? 2 * bound : most;
        }
        if (!(k >= 0 && best > k)) {
            distance = best;
            team.reverse_copy(rq, q, m);
            for (i64 j = first_end; j <= n; j++) {
                if (row[j] != best)
                    continue;
                const i64 end = j - 1;
                const i64 start = p.mode == MODE_HW && end >= 0 ? start_of(team, rq, m, t, end, best, rt, rrow,
                                                                           p.symbols, p.alphabet)
                                                                : 0;
                if (count == 0) {
                    t_begin = start;
                    t_end = end + 1;
                }
                if (p.task == TASK_DISTANCE) {
                    count = 1;
                    break;
                }
                if (leader) {
                    loc_begin[count] = start;
                    loc_end[count] = end + 1;
                }
                count++;
            }
            if (p.task == TASK_PATH) {
                Cigar c = {leader ? p.cigar + q_at + t_at : 0, 0, 0};
                hirschberg(team, q, m, t + t_begin, t_end - t_begin, c, ints, bytes, p.symbols, p.alphabet);
                n_cigar = c.finish();
            }
        }
    }
    if (!leader)
        return;
    const i64 n_chunk = p.n_chunk;
    p.out[OUT_DISTANCE * n_chunk + pair] = distance;
    p.out[OUT_T_BEGIN * n_chunk + pair] = t_begin;
    p.out[OUT_T_END * n_chunk + pair] = t_end;
    p.out[OUT_N_LOCATIONS * n_chunk + pair] = p.task == TASK_DISTANCE || distance < 0 ? 0 : count;
    p.out[OUT_N_CIGAR * n_chunk + pair] = n_cigar;
}

// One thread per pair; slots = threads.
__global__ void __launch_bounds__(128) exact_kernel(const Params *params)
{
    const Params &p = *params;
    const int slot = blockIdx.x * blockDim.x + threadIdx.x;
    const ThreadTeam team = {{p.words + slot, p.slots}};
    int *ints = p.ints + slot * p.ints_per_slot;
    u8 *bytes = p.bytes + slot * p.bytes_per_slot;
    const int count = *p.count;
    for (int i = slot; i < count; i += p.slots)
        exact_pair(p, p.order[i], team, ints, bytes);
}

// One warp per pair; slots = warps, words_per_slot counted per lane.
__global__ void __launch_bounds__(128) exact_warp_kernel(const Params *params)
{
    const Params &p = *params;
    const int slot = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    const WarpTeam team = {p.words + (i64)slot * 32 * p.words_per_lane, lane};
    int *ints = p.ints + slot * p.ints_per_slot;
    u8 *bytes = p.bytes + slot * p.bytes_per_slot;
    const int count = *p.count;
    for (int i = slot; i < count; i += p.slots)
        exact_pair(p, p.order[i], team, ints, bytes);
}

/* ---------------------------------------------------------------- windowed */

// ACGT (either case) as 0..3 (a pair with any other byte is refused before its windows).
__device__ __forceinline__ int base_code(u8 b)
{
    const u8 u = b & 0xDF;
    return u == 'C' ? 1 : u == 'G' ? 2 : u == 'T' ? 3 : 0;
}

__device__ bool all_acgt(const u8 *bases, i64 len)
{
    for (i64 i = 0; i < len; i++) {
        const u8 u = bases[i] & 0xDF;
        if (u != 'A' && u != 'C' && u != 'G' && u != 'T')
            return false;
    }
    return true;
}

/* One window's bit-vectors R[i][d] (bit wm-1-j clear: pattern[j..wm) aligns to a prefix of
   text[i..wn) with at most d edits), text row by text row, d = 0..D in registers; rows 0..limit
   (DENT: all the traceback reads) go to the slot. Returns the window's distance, the first d
   whose row 0 reaches the corner (early termination), or -1 when that is above D < wm.
   The traceback reads only pattern columns j <= limit, bits wm-1-limit .. wm-1 of a vector: when
   those fit 32 bits (limit < 32: W - O <= 31, both of Scrooge's configurations), the slot keeps
   them alone as 32-bit words (s32, column j at bit limit - j), half the scratch traffic. */
template <int D>
__device__ int window_distance(const u8 *text, int wn, const u8 *pattern, int wm, int limit, const Slot &s,
                               const Slot32 &s32)
{
    const bool narrow = limit < 32;
    const int shift = wm - 1 - limit;  // narrow word = the vector shifted right by this (left if < 0)
    // The pattern's masks in four registers (an array indexed by the base would live in local memory).
    u64 pa = ~0ull, pc = ~0ull, pg = ~0ull, pt = ~0ull;
    for (int j = 0; j < wm; j++) {
        const int code = base_code(pattern[j]);
        const u64 bit = 1ull << (wm - 1 - j);
        pa &= code == 0 ? ~bit : ~0ull;
        pc &= code == 1 ? ~bit : ~0ull;
        pg &= code == 2 ? ~bit : ~0ull;
        pt &= code == 3 ? ~bit : ~0ull;
    }
    u64 r[D + 1];  // R[i][0..D] of the text row being computed
#pragma unroll
    for (int d = 0; d <= D; d++)
        r[d] = d == 0 ? ~0ull : (d >= 64 ? 0ull : ~0ull << d);
    for (int i = wn;; i--) {
        if (i < wn) {
            const int code = base_code(text[i]);
            const u64 eq = code == 0 ? pa : code == 1 ? pc : code == 2 ? pg : pt;
            u64 above = r[0];  // R[i+1][d-1] for the next d
            r[0] = (r[0] << 1) | eq;
#pragma unroll
            for (int d = 1; d <= D; d++) {
                const u64 old = r[d];
                r[d] = ((old << 1) | eq) & (above << 1) & (r[d - 1] << 1) & above;
                above = old;
            }
        }
        if (i <= limit && narrow) {
#pragma unroll
            for (int d = 0; d <= D; d++)
                s32[(i64)i * (D + 1) + d] = (u32)(shift >= 0 ? r[d] >> shift : r[d] << -shift);
        } else if (i <= limit) {
#pragma unroll
            for (int d = 0; d <= D; d++)
                s[(i64)i * (D + 1) + d] = r[d];
        }
        if (i == 0)
            break;
    }
    int wed = -1;
#pragma unroll
    for (int d = 0; d <= D; d++)
        if (wed < 0 && d <= wm && !((r[d] >> (wm - 1)) & 1))
            wed = d;
    return wed >= 0 || D < wm ? wed : wm;
}

/* Scrooge's traceback from (0, 0) with d = wed edits, until the pattern ends or i or j reaches
   limit (W - O); the edits left are returned, the position in i and j. */
template <int D>
__device__ int window_traceback(const Slot &s, const Slot32 &s32, int wn, int wm, int limit, int wed, Cigar &c,
                                int &i, int &j)
{
    int d = wed;
    i = j = 0;
    const bool narrow = limit < 32;  // as window_distance stored them
#define ZERO_AT(I, DD, J)                                                                                    \
    (narrow ? !((s32[(i64)(I) * (D + 1) + (DD)] >> (limit - (J))) & 1u)                                      \
            : !((s[(i64)(I) * (D + 1) + (DD)] >> (wm - 1 - (J))) & 1))
    while (j < wm && i < limit && j < limit) {
        bool can_ins, can_del, can_sub;
        if (j < wm - 1) {
            can_ins = d > 0 && ZERO_AT(i, d - 1, j + 1);
            can_del = d > 0 && i < wn && ZERO_AT(i + 1, d - 1, j);
            can_sub = d > 0 && i < wn && ZERO_AT(i + 1, d - 1, j + 1);
        } else {  // the window's last pattern base: an insertion while edits are left
            can_ins = d > 0;
            can_del = false;
            can_sub = d > 0 && i < wn;
        }
        if (can_ins) {
            c.push(OP_INS, 1);
            j++;
            d--;
        } else if (can_del) {
            c.push(OP_DEL, 1);
            i++;
            d--;
        } else if (can_sub) {
            c.push(OP_MIS, 1);
            i++;
            j++;
            d--;
        } else {
            c.push(OP_EQ, 1);
            i++;
            j++;
        }
    }
#undef ZERO_AT
    return d;
}

/* Windows of one pair with at most D edits each (any window when D >= its pattern length).
   Returns false when a window needs more than D: the pair's position (the windows done, their
   edits, the CIGAR so far and its open run) is left in p.resume for the next tier, which carries
   on from that window (a window's answer does not depend on D once D covers it). */
enum { RESUME_Q, RESUME_T, RESUME_TOTAL, RESUME_N_CIGAR, RESUME_RUN, RESUME };
template <int D>
__device__ bool windowed_pair(const Params &p, int pair, const Slot &s, const Slot32 &s32)
{
    const i64 q_at = p.query_offsets[pair], t_at = p.target_offsets[pair];
    const u8 *q = p.query + q_at, *t = p.target + t_at;
    const i64 m = p.query_offsets[pair + 1] - q_at, n = p.target_offsets[pair + 1] - t_at;
    const i64 n_chunk = p.n_chunk;
    if (!p.resume_in && (!all_acgt(q, m) || !all_acgt(t, n))) {  // edit.py raises the CPU's error for it
        p.out[OUT_DISTANCE * n_chunk + pair] = BAD_BASE;
        p.out[OUT_N_LOCATIONS * n_chunk + pair] = 0;
        p.out[OUT_N_CIGAR * n_chunk + pair] = 0;
        return true;
    }
    const int w = p.window, limit = p.window - p.overlap;
    Cigar c = {p.task == TASK_PATH ? p.cigar + q_at + t_at : 0, 0, 0};
    i64 t0 = 0, q0 = 0, total = 0;
    i64 *state = p.resume + (i64)RESUME * pair;
    if (p.resume_in) {
        q0 = state[RESUME_Q], t0 = state[RESUME_T], total = state[RESUME_TOTAL];
        c.n = state[RESUME_N_CIGAR], c.run = (u32)state[RESUME_RUN];
    }
    while (q0 < m) {
        const int wn = (int)(n - t0 < w ? n - t0 : w), wm = (int)(m - q0 < w ? m - q0 : w);
        const int wed = window_distance<D>(t + t0, wn, q + q0, wm, limit, s, s32);
        if (wed < 0) {
            state[RESUME_Q] = q0, state[RESUME_T] = t0, state[RESUME_TOTAL] = total;
            state[RESUME_N_CIGAR] = c.n, state[RESUME_RUN] = c.run;
            return false;
        }
        int i, j;
        const int left = window_traceback<D>(s, s32, wn, wm, limit, wed, c, i, j);
        total += wed - left;
        t0 += i;
        q0 += j;
    }
    const bool kept = !(p.k >= 0 && total > p.k);
    p.out[OUT_DISTANCE * n_chunk + pair] = kept ? total : -1;
    p.out[OUT_T_BEGIN * n_chunk + pair] = kept ? 0 : -1;
    p.out[OUT_T_END * n_chunk + pair] = kept ? t0 : -1;
    p.out[OUT_N_LOCATIONS * n_chunk + pair] = kept && p.task != TASK_DISTANCE ? 1 : 0;
    p.out[OUT_N_CIGAR * n_chunk + pair] = kept && p.task == TASK_PATH ? c.finish() : 0;
    if (kept && p.task != TASK_DISTANCE) {
        p.loc_begin[pair] = 0;  // one location per pair: room for one each
        p.loc_end[pair] = t0;
    }
    return true;
}

template <int D>
__global__ void __launch_bounds__(128) windowed_kernel(const Params *params)
{
    const Params &p = *params;
    const int slot = blockIdx.x * blockDim.x + threadIdx.x;
    const Slot s = {p.words + slot, p.slots};
    const Slot32 s32 = {(u32 *)p.words + slot, p.slots};
    const int count = *p.count;
    for (int i = slot; i < count; i += p.slots) {
        const int pair = p.order[i];
        if (!windowed_pair<D>(p, pair, s, s32))
            p.overflow[atomicAdd(p.overflow_count, 1)] = pair;
    }
}

/* ---------------------------------------------------------------- copy back */

// The chunk's CIGARs made contiguous for the copy back (each pair's room is query + target
// long, its runs a fraction of that): pair p's runs, dst_offsets[p + 1] - dst_offsets[p] of
// them (its n_cigar), from cigar + query_offsets[p] + target_offsets[p] to dst + dst_offsets[p].
// A warp per pair.
__global__ void __launch_bounds__(128) compact_cigars(const u32 *cigar, const i64 *query_offsets,
                                                      const i64 *target_offsets, const i64 *dst_offsets, u32 *dst,
                                                      int n)
{
    const int lane = threadIdx.x % 32, warps = gridDim.x * blockDim.x / 32;
    for (int p = (blockIdx.x * blockDim.x + threadIdx.x) / 32; p < n; p += warps) {
        const u32 *src = cigar + query_offsets[p] + target_offsets[p];
        const i64 at = dst_offsets[p], count = dst_offsets[p + 1] - at;
        for (i64 i = lane; i < count; i += 32)
            dst[at + i] = src[i];
    }
}

}  // namespace warpdp_edit

#ifdef WARPDP_NVCC_CHECK
// The instantiations edit.py launches (WINDOW_TIERS), compiled by scripts/check_cuda_sources.sh.
template __global__ void warpdp_edit::windowed_kernel<8>(const warpdp_edit::Params *);
template __global__ void warpdp_edit::windowed_kernel<24>(const warpdp_edit::Params *);
template __global__ void warpdp_edit::windowed_kernel<64>(const warpdp_edit::Params *);
#endif
