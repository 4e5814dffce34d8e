/* Pairwise alignment (the align family) on NVIDIA GPUs: the same answers as the CPU backend
 * (warpdp/cython_cpu/align_body.h), bit for bit, CIGARs included.
 *
 * Compiled ahead of time into fatbin/ (runtime/fatbin_build.py), else at run time by NVRTC;
 * warpdp/kernels/align.py launches it. Two kernels:
 *   - dp_kernel<GATK, TRACE, ORIGIN>: one warp per pair (AnySeq/GPU's design, this project's own
 *     code). The rows of the DP (query; GATK mode: the ref) are cut into stripes of 32, one row
 *     per lane; the warp sweeps the stripe's anti-diagonals: at step s lane l computes cell
 *     (i0 + 1 + l, s - l + 1). A cell's up and up-left neighbours come from lane l - 1 by one
 *     register shuffle per value, its left neighbour is the lane's own last cell; lane 0 reads
 *     the row above the stripe from the boundary row (shared memory, or global scratch for long
 *     pairs) that the stripe's last lane wrote. TRACE keeps 4 bits per cell in global memory
 *     (8 cells of a lane in one 32-bit word, so a step's words are one coalesced write); ORIGIN
 *     (score-only local and semiglobal) carries each cell's traceback end along instead, as the
 *     CPU's score-only path does. Per stripe, the lanes' row maxima are scanned in row order for
 *     the best cell and extension's z-drop, exactly as the CPU's row loop does.
 *   - traceback_kernel: one thread per pair walks the 4-bit cells back from the end cell and
 *     writes the CIGAR, with the CPU's tie rules.
 * Arithmetic is int32 and the same as the CPU's (its bounds keep every value within +-2^30).
 */

#ifndef WARPDP_DYNAMIC_SHARED
#define WARPDP_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
#endif

namespace warpdp_align {

typedef unsigned char u8;
typedef unsigned int u32;
typedef long long i64;

constexpr int NEG = -(1 << 30); /* ALIGN_NEG of align_kernel.h */
constexpr int GLOBAL = 0, SEMIGLOBAL = 1, LOCAL = 2, EXTENSION = 3;
constexpr int SOFTCLIP = 0, INDEL = 1, LEADING_INDEL = 2, IGNORE = 3;
constexpr u32 OP_M = 0, OP_I = 1, OP_D = 2, OP_S = 4, OP_EQ = 7, OP_X = 8;
constexpr u32 FULL = 0xffffffffu;
constexpr int ROWS_PER_LANE = 4;                 /* rows of a stripe per lane (align.py's ROWS_PER_LANE) */
constexpr int STRIPE_ROWS = 32 * ROWS_PER_LANE;
constexpr int RECORD = 8; /* ints per pair in out: score q_begin q_end t_begin t_end end_row end_col n_ops */

/* One launch: pairs 0..n of a chunk. Offsets are relative to the chunk's sequences. */
struct Params {
    const u8 *query, *target;
    const i64 *query_offsets, *target_offsets; /* n + 1 */
    const i64 *trace_offsets;                  /* n + 1, in 32-bit words of trace */
    int *out;                                  /* n x RECORD */
    u32 *trace;
    u8 *scratch;                               /* boundary rows when not in shared memory */
    u32 *ops;                                  /* pair k's CIGAR at q_off[k] + t_off[k] + 2k */
    int matrix[25];
    int n, mode, first, ext, zdrop, overhang, match, mismatch, gap_open, gap_extend;
    int shared_boundary;                       /* 1: boundary rows in shared memory (max_cols + 1 each) */
    int max_cols;
};
/* The launcher writes this layout by field name (align.py, PARAMS); it checks the size the
   kernel below reports when the module loads. */
static_assert(sizeof(Params) == 224, "Params layout changed: update PARAMS in warpdp/kernels/align.py");

extern "C" __global__ void align_struct_sizes(unsigned long long *out) { out[0] = sizeof(Params); }

__device__ __forceinline__ int imax(int x, int y) { return x > y ? x : y; }
__device__ __forceinline__ int imin(int x, int y) { return x < y ? x : y; }

__device__ __forceinline__ i64 pack_pos(i64 i, i64 j) { return (i << 32) | j; }

/* A, C, G, T in either case -> 0..3; any other byte -> 4 (N), as the CPU driver's to_codes. */
__device__ __forceinline__ int base_code(u32 c)
{
    const u32 u = c & 0xDF;
    return u == 'A' ? 0 : u == 'C' ? 1 : u == 'G' ? 2 : u == 'T' ? 3 : 4;
}

/* Bytes per boundary column: H and F (int32), and with ORIGIN the two origins (int64). */
__host__ __device__ constexpr int boundary_bytes(bool origin) { return origin ? 24 : 8; }

/* Words of trace per row of a lane in a stripe over `cols` columns (steps < cols + 32, 8 per word);
   a stripe has ROWS_PER_LANE times as many. */
__device__ __forceinline__ i64 stripe_words(int cols) { return (i64)((cols + 31 + 7) >> 3) * 32; }

/* The pair's rows (R: query, GATK the ref) and columns (C: target, GATK the alt). */
struct Pair {
    const u8 *rows, *cols;
    int R, C;
};

__device__ __forceinline__ Pair pair_of(const Params &p, int k, bool gatk)
{
    const i64 q0 = p.query_offsets[k], t0 = p.target_offsets[k];
    const int m = (int)(p.query_offsets[k + 1] - q0), n = (int)(p.target_offsets[k + 1] - t0);
    Pair pr;
    if (gatk) {
        pr.rows = p.target + t0; pr.R = n; pr.cols = p.query + q0; pr.C = m;
    } else {
        pr.rows = p.query + q0; pr.R = m; pr.cols = p.target + t0; pr.C = n;
    }
    return pr;
}

/* H of column 0 (row r) and of row 0 (column c), and their traceback ends (ORIGIN). */
__device__ __forceinline__ int edge_h(const Params &p, bool gatk, bool free_edge, int r)
{
    if (r == 0)
        return 0;
    if (gatk)
        return free_edge ? 0 : p.gap_open + (r - 1) * p.gap_extend;
    return free_edge ? 0 : -(p.first + (r - 1) * p.ext);
}

/* The state a lane carries along one of its rows; the last row's outputs go to the next lane. */
struct Lane {
    int h_left, e, h_diag;       /* H(i, j-1), E(i, j-1), H(i-1, j-1) */
    i64 o_left, o_e, o_diag;     /* their traceback ends (ORIGIN) */
    int h_out, f_out;            /* H(i, j), F(i, j): for the row below */
    i64 oh_out, of_out;
    int row_max, row_j;          /* the row's highest cell, first among equals (from column 0) */
    i64 row_o;
    int last_h;                  /* H(i, C) (GATK) */
};

template <bool GATK, bool ORIGIN>
__device__ __forceinline__ void cell(const Params &p, Lane &L, int i, int j, int rcode, const int *srow, int up_h,
                                     int up_f, int ccode, i64 o_up_h, i64 o_up_f, u32 &nibble)
{
    int h;
    if (GATK) {
        const int diag = L.h_diag + (rcode == ccode ? p.match : p.mismatch);
        int v = up_f + p.gap_extend;
        const int v_opened = up_h + p.gap_open > v;
        if (v_opened)
            v = up_h + p.gap_open;
        int g = L.e + p.gap_extend;
        const int h_opened = L.h_left + p.gap_open > g;
        if (h_opened)
            g = L.h_left + p.gap_open;
        int move;
        if (diag >= v && diag >= g) {
            h = diag; move = 0;
        } else if (g >= v) {
            h = g; move = 1;
        } else {
            h = v; move = 2;
        }
        L.e = g;
        L.f_out = v;
        nibble = (u32)(move | (h_opened << 2) | (v_opened << 3));
    } else {
        const int f_open = up_h - p.first, f_ext = up_f - p.ext;
        const int f_opened = f_open >= f_ext;
        const int f = f_opened ? f_open : f_ext;
        const int e_open = L.h_left - p.first, e_ext = L.e - p.ext;
        const int e_opened = e_open >= e_ext;
        const int e = e_opened ? e_open : e_ext;
        const int s = ccode == 0 ? srow[0] : ccode == 1 ? srow[1] : ccode == 2 ? srow[2] : ccode == 3 ? srow[3] : srow[4];
        const int diag = L.h_diag + s;
        h = imax(imax(diag, e), f);
        int source;
        if (p.mode == LOCAL && h <= 0) {
            h = 0; source = 3;
        } else {
            source = h == diag ? 0 : (h == e ? 1 : 2);
        }
        if (ORIGIN) {
            const i64 of = f_opened ? o_up_h : o_up_f;
            if (e_opened)
                L.o_e = L.o_left;
            const i64 oh = source == 3 ? pack_pos(i, j) : source == 0 ? L.o_diag : source == 1 ? L.o_e : of;
            L.of_out = of;
            L.oh_out = oh;
            L.o_left = oh;
            L.o_diag = o_up_h;
        }
        L.e = e;
        L.f_out = f;
        nibble = (u32)(source | (e_opened << 2) | (f_opened << 3));
    }
    L.h_left = h;
    L.h_out = h;
    L.h_diag = up_h;
    if (h > L.row_max) {
        L.row_max = h;
        L.row_j = j;
        if (ORIGIN)
            L.row_o = L.oh_out;
    }
}

/* Where a warp keeps the row above its stripe: H, F (and origins) for columns 0..C. */
struct Boundary {
    int *h, *f;
    i64 *oh, *of;
};

template <bool ORIGIN>
__device__ __forceinline__ Boundary boundary_of(const Params &p, int k, int warp, int cols_offset, int C)
{
    u8 *base;
    int stride;
    if (p.shared_boundary) {
        WARPDP_DYNAMIC_SHARED(u8, shared);
        stride = p.max_cols + 1;
        base = shared + (size_t)warp * stride * boundary_bytes(ORIGIN);
    } else {
        stride = C + 1;
        base = p.scratch + (size_t)(cols_offset + k) * boundary_bytes(ORIGIN);
    }
    Boundary b;
    b.oh = (i64 *)base;
    b.of = b.oh + (ORIGIN ? stride : 0);
    b.h = (int *)(base + (ORIGIN ? 16 * (size_t)stride : 0));
    b.f = b.h + stride;
    return b;
}

/* What the stripes found: the best cell so far (local, extension, GATK's last column). */
struct Best {
    int score, i, j;
    i64 origin;
    bool have, stop;
};

/* The CPU's per-row bookkeeping over the stripe's rows, in order (every lane the same). */
template <bool GATK, bool ORIGIN>
__device__ __forceinline__ void scan_rows(const Params &p, const Lane (&L)[ROWS_PER_LANE], int i0, int rows, Best &b)
{
    for (int l = 0; l * ROWS_PER_LANE < rows; l++) {
#pragma unroll
        for (int r = 0; r < ROWS_PER_LANE; r++) {
            const int k = l * ROWS_PER_LANE + r, i = i0 + 1 + k;
            if (GATK) {
                const int v = __shfl_sync(FULL, L[r].last_h, l);
                if (k < rows && (!b.have || v >= b.score)) {
                    b.score = v; b.i = i; b.have = true;
                }
                continue;
            }
            const int rm = __shfl_sync(FULL, L[r].row_max, l), rj = __shfl_sync(FULL, L[r].row_j, l);
            const i64 ro = ORIGIN ? __shfl_sync(FULL, L[r].row_o, l) : 0;
            if (k >= rows)
                continue;
            if (rm > b.score) {
                b.score = rm; b.i = i; b.j = rj; b.origin = ro;
            }
            if (p.mode == EXTENSION && p.zdrop >= 0) {
                const i64 off = (i64)(i - b.i) - (rj - b.j);
                if ((i64)b.score - rm > (i64)p.zdrop + (i64)p.ext * (off < 0 ? -off : off)) {
                    b.stop = true;
                    return;
                }
            }
        }
    }
}

/* A lane's row r of the stripe: state at the start of the stripe (column 0). */
template <bool GATK>
__device__ __forceinline__ void start_row(const Params &p, const Pair &pr, Lane &L, int i, bool row_ok, bool free_col0,
                                          int &rcode, int (&srow)[5])
{
    rcode = row_ok ? (GATK ? pr.rows[i - 1] : base_code(pr.rows[i - 1])) : 0;
#pragma unroll
    for (int c = 0; c < 5; c++)
        srow[c] = GATK ? 0 : p.matrix[5 * (rcode < 5 ? rcode : 4) + c];
    L.h_left = edge_h(p, GATK, free_col0, i);
    L.e = NEG;
    L.h_diag = edge_h(p, GATK, free_col0, i - 1);
    L.o_left = (!GATK && p.mode == LOCAL) ? pack_pos(i, 0) : 0;
    L.o_e = 0;
    L.o_diag = (!GATK && p.mode == LOCAL && i > 1) ? pack_pos(i - 1, 0) : 0;
    L.h_out = L.f_out = 0;
    L.oh_out = L.of_out = 0;
    L.row_max = L.h_left;
    L.row_j = 0;
    L.row_o = L.o_left;
    L.last_h = 0;
}

/* One stripe: rows i0 + 1 .. i0 + rows (rows <= STRIPE_ROWS), every column. Lane l holds rows
   i0 + 1 + ROWS_PER_LANE * l + r, r < ROWS_PER_LANE, and at step s computes their cells of column
   s - l + 1, top to bottom: a row's up neighbour is the row above in the same lane, the first
   row's comes from lane l - 1 (its last row, one step earlier) or, for lane 0, the boundary. */
template <bool GATK, bool TRACE, bool ORIGIN>
__device__ __forceinline__ void stripe(const Params &p, const Pair &pr, const Boundary &bd, u32 *trace, int i0,
                                       Lane (&L)[ROWS_PER_LANE], int lane)
{
    const int rows = imin(STRIPE_ROWS, pr.R - i0);
    const int first_row = i0 + 1 + ROWS_PER_LANE * lane;
    const bool free_row0 = GATK ? !(p.overhang == INDEL || p.overhang == LEADING_INDEL)
                                : (p.mode == SEMIGLOBAL || p.mode == LOCAL);
    const bool free_col0 = GATK ? free_row0 : p.mode == LOCAL;
    int rcode[ROWS_PER_LANE], srow[ROWS_PER_LANE][5];
#pragma unroll
    for (int r = 0; r < ROWS_PER_LANE; r++)
        start_row<GATK>(p, pr, L[r], first_row + r, first_row + r <= i0 + rows, free_col0, rcode[r], srow[r]);
    const int last = ROWS_PER_LANE - 1;
    const int writer = (rows - 1) / ROWS_PER_LANE, writer_row = (rows - 1) % ROWS_PER_LANE;
    const int C = pr.C, steps = C + (rows - 1) / ROWS_PER_LANE;
    const i64 row_words = stripe_words(C);
    int c_out = 0;
    u32 word[ROWS_PER_LANE];
#pragma unroll
    for (int r = 0; r < ROWS_PER_LANE; r++)
        word[r] = 0;
    for (int s = 0; s < steps; s++) {
        int up_h = __shfl_up_sync(FULL, L[last].h_out, 1), up_f = __shfl_up_sync(FULL, L[last].f_out, 1);
        int ccode = __shfl_up_sync(FULL, c_out, 1);
        i64 o_up_h = 0, o_up_f = 0;
        if (ORIGIN) {
            o_up_h = __shfl_up_sync(FULL, L[last].oh_out, 1);
            o_up_f = __shfl_up_sync(FULL, L[last].of_out, 1);
        }
        const int j = s - lane + 1;
        if (lane == 0 && j <= C) { /* the row above the stripe */
            const u32 c = pr.cols[j - 1];
            ccode = GATK ? (int)c : base_code(c);
            if (i0 == 0) {
                up_h = edge_h(p, GATK, free_row0, j);
                up_f = NEG;
                if (ORIGIN) {
                    o_up_h = free_row0 ? pack_pos(0, j) : 0;
                    o_up_f = 0;
                }
            } else {
                up_h = bd.h[j];
                up_f = bd.f[j];
                if (ORIGIN) {
                    o_up_h = bd.oh[j];
                    o_up_f = bd.of[j];
                }
            }
        }
        u32 nibble[ROWS_PER_LANE];
        const bool column_ok = j >= 1 && j <= C;
#pragma unroll
        for (int r = 0; r < ROWS_PER_LANE; r++) {
            nibble[r] = 0;
            if (column_ok && first_row + r <= i0 + rows) {
                cell<GATK, ORIGIN>(p, L[r], first_row + r, j, rcode[r], srow[r], up_h, up_f, ccode, o_up_h, o_up_f,
                                   nibble[r]);
                if (GATK && j == C)
                    L[r].last_h = L[r].h_out;
                if (lane == writer && r == writer_row) { /* the row the next stripe starts from */
                    bd.h[j] = L[r].h_out;
                    bd.f[j] = L[r].f_out;
                    if (ORIGIN) {
                        bd.oh[j] = L[r].oh_out;
                        bd.of[j] = L[r].of_out;
                    }
                }
                up_h = L[r].h_out;
                up_f = L[r].f_out;
                if (ORIGIN) {
                    o_up_h = L[r].oh_out;
                    o_up_f = L[r].of_out;
                }
            }
        }
        if (column_ok)
            c_out = ccode;
        if (TRACE) {
            const i64 at = (i64)(s >> 3) * 32 + lane;
#pragma unroll
            for (int r = 0; r < ROWS_PER_LANE; r++) {
                word[r] |= nibble[r] << ((s & 7) * 4);
                if ((s & 7) == 7 || s == steps - 1) {
                    trace[r * row_words + at] = word[r];
                    word[r] = 0;
                }
            }
        }
    }
    __syncwarp();
}

/* Local and extension rows compare row maxima from column 0; global and semiglobal need none. */
template <bool GATK, bool TRACE, bool ORIGIN>
__global__ void __launch_bounds__(128) dp_kernel(const Params *params)
{
    const Params &p = *params;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int k = blockIdx.x * (blockDim.x >> 5) + warp;
    if (k >= p.n)
        return;
    const Pair pr = pair_of(p, k, GATK);
    const int cols_offset = (int)(GATK ? p.query_offsets[k] : p.target_offsets[k]);
    const Boundary bd = boundary_of<ORIGIN>(p, k, warp, cols_offset, pr.C);
    u32 *trace = TRACE ? p.trace + p.trace_offsets[k] : nullptr;
    const i64 words = stripe_words(pr.C);
    Best b;
    b.score = (GATK || p.mode == LOCAL || p.mode == EXTENSION) ? 0 : NEG;
    b.i = b.j = 0;
    b.origin = 0;
    b.have = b.stop = false;
    Lane L[ROWS_PER_LANE];
    for (int i0 = 0; i0 < pr.R && !b.stop; i0 += STRIPE_ROWS) {
        stripe<GATK, TRACE, ORIGIN>(p, pr, bd, TRACE ? trace + (i0 / STRIPE_ROWS) * ROWS_PER_LANE * words : nullptr,
                                    i0, L, lane);
        const int rows = imin(STRIPE_ROWS, pr.R - i0);
        if (GATK || p.mode == LOCAL || p.mode == EXTENSION)
            scan_rows<GATK, ORIGIN>(p, L, i0, rows, b);
    }
    if (lane != 0)
        return;
    int *out = p.out + (size_t)k * RECORD;
    const int R = pr.R, C = pr.C;
    if (GATK) {
        /* bd holds row R (the ref's last row); the overhang strategy picks the end cell */
        int best = b.score, p1 = b.i, p2 = C, tail = 0;
        if (p.overhang == INDEL) {
            p1 = R;
            best = bd.h[C];
        } else if (p.overhang != LEADING_INDEL) {
            for (int j = 1; j <= C; j++) {
                const int d_new = R - j < 0 ? j - R : R - j;
                const int d_old = p1 - p2 < 0 ? p2 - p1 : p1 - p2;
                const int v = bd.h[j];
                if (v > best || (v == best && d_new < d_old)) {
                    best = v; p1 = R; p2 = j; tail = C - j;
                }
            }
        }
        out[0] = best;
        out[2] = C - tail; /* query (alt) end */
        out[4] = p1;       /* target (ref) end */
        out[5] = p1;
        out[6] = p2;
        return;
    }
    int best = b.score, bi = b.i, bj = b.j;
    i64 origin = b.origin;
    if (p.mode == GLOBAL) {
        best = bd.h[C]; bi = R; bj = C;
    } else if (p.mode == SEMIGLOBAL) {
        bi = R; bj = 0;
        best = edge_h(p, false, false, R);
        for (int j = 1; j <= C; j++)
            if (bd.h[j] > best) {
                best = bd.h[j]; bj = j;
            }
        origin = bj == 0 ? 0 : (ORIGIN ? bd.oh[bj] : 0);
    }
    const bool empty = p.mode == LOCAL && best == 0;
    out[0] = best;
    out[1] = empty ? 0 : (int)(origin >> 32);
    out[2] = empty ? 0 : bi;
    out[3] = empty ? 0 : (int)(origin & 0xffffffff);
    out[4] = empty ? 0 : bj;
    out[5] = empty ? -1 : bi; /* -1: nothing to trace back */
    out[6] = bj;
    out[7] = 0;
}

/* The 4 bits of cell (i, j), i, j >= 1, in a pair's trace (layout of stripe()). */
__device__ __forceinline__ u32 trace_cell(const u32 *trace, i64 words, int i, int j)
{
    const int within = (i - 1) % STRIPE_ROWS, l = within / ROWS_PER_LANE, r = within % ROWS_PER_LANE, s = j - 1 + l;
    const u32 word = trace[((i64)((i - 1) / STRIPE_ROWS) * ROWS_PER_LANE + r) * words + (s >> 3) * 32 + l];
    return (word >> ((s & 7) * 4)) & 15;
}

/* CIGAR runs built backwards from the end cell, merged on the fly, reversed at the end. */
struct Runs {
    u32 *ops;
    int n;
    __device__ void push(u32 op, i64 length)
    {
        if (length <= 0)
            return;
        if (n > 0 && (ops[n - 1] & 0xF) == op) {
            ops[n - 1] += (u32)(length << 4);
            return;
        }
        ops[n++] = (u32)(length << 4) | op;
    }
    __device__ void reverse()
    {
        for (int a = 0, b = n - 1; a < b; a++, b--) {
            const u32 x = ops[a];
            ops[a] = ops[b];
            ops[b] = x;
        }
    }
};

__device__ void trace_generic(const Params &p, const Pair &pr, const u32 *trace, i64 words, int *out, Runs &r)
{
    const bool local = p.mode == LOCAL, free_row0 = p.mode == SEMIGLOBAL || local;
    int i = out[5], j = out[6], state = 0;
    for (;;) {
        if (state == 0) {
            if (i == 0) {
                if (!free_row0) {
                    r.push(OP_D, j);
                    j = 0;
                }
                break;
            }
            if (j == 0) {
                if (!local) {
                    r.push(OP_I, i);
                    i = 0;
                }
                break;
            }
            const u32 source = trace_cell(trace, words, i, j) & 3;
            if (source == 3)
                break;
            if (source == 0) {
                const int a = base_code(pr.rows[i - 1]), b = base_code(pr.cols[j - 1]);
                r.push(a == b && a < 4 ? OP_EQ : OP_X, 1);
                i--;
                j--;
            } else {
                state = (int)source;
            }
        } else if (state == 1) {
            const u32 opened = (trace_cell(trace, words, i, j) >> 2) & 1;
            r.push(OP_D, 1);
            j--;
            if (opened)
                state = 0;
        } else {
            const u32 opened = (trace_cell(trace, words, i, j) >> 3) & 1;
            r.push(OP_I, 1);
            i--;
            if (opened)
                state = 0;
        }
    }
    out[1] = i;
    out[3] = j;
}

/* GKL's traceback: rows the ref, columns the alt (see gatk_pair in align_body.h). */
__device__ void trace_gatk(const Params &p, const Pair &pr, const u32 *trace, i64 words, int *out, Runs &r)
{
    int p1 = out[5], p2 = out[6];
    r.push(OP_S, pr.C - p2);
    u32 last = OP_M;
    while (p1 > 0 && p2 > 0) {
        const u32 move = trace_cell(trace, words, p1, p2) & 3;
        if (move == 0) {
            r.push(OP_M, 1);
            last = OP_M;
            p1--;
            p2--;
        } else if (move == 1) {
            int k = p2;
            while (!((trace_cell(trace, words, p1, k) >> 2) & 1))
                k--;
            r.push(OP_I, p2 - k + 1);
            last = OP_I;
            p2 = k - 1;
        } else {
            int k = p1;
            while (!((trace_cell(trace, words, k, p2) >> 3) & 1))
                k--;
            r.push(OP_D, p1 - k + 1);
            last = OP_D;
            p1 = k - 1;
        }
    }
    if (p.overhang == SOFTCLIP) {
        r.push(OP_S, p2);
        out[3] = p1;
        out[1] = p2;
    } else if (p.overhang == IGNORE) {
        r.push(last, p2);
        out[3] = p1 - p2;
        out[1] = 0;
    } else {
        if (p1 > 0)
            r.push(OP_D, p1);
        else if (p2 > 0)
            r.push(OP_I, p2);
        out[3] = 0;
        out[1] = 0;
    }
}

template <bool GATK>
__global__ void traceback_kernel(const Params *params)
{
    const Params &p = *params;
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.n)
        return;
    int *out = p.out + (size_t)k * RECORD;
    Runs r;
    r.ops = p.ops + p.query_offsets[k] + p.target_offsets[k] + 2 * (i64)k;
    r.n = 0;
    if (GATK || out[5] >= 0) {
        const Pair pr = pair_of(p, k, GATK);
        const u32 *trace = p.trace + p.trace_offsets[k];
        if (GATK)
            trace_gatk(p, pr, trace, stripe_words(pr.C), out, r);
        else
            trace_generic(p, pr, trace, stripe_words(pr.C), out, r);
        r.reverse();
    }
    out[7] = r.n;
}

} // namespace warpdp_align

#ifdef WARPDP_NVCC_CHECK
/* Explicit instantiations so that an offline nvcc run compiles every kernel
   warpdp/kernels/align.py uses (keep the lists in step). */
namespace warpdp_align {
template __global__ void dp_kernel<false, false, false>(const Params *);
template __global__ void dp_kernel<false, false, true>(const Params *);
template __global__ void dp_kernel<false, true, false>(const Params *);
template __global__ void dp_kernel<true, true, false>(const Params *);
template __global__ void traceback_kernel<false>(const Params *);
template __global__ void traceback_kernel<true>(const Params *);
} // namespace warpdp_align
#endif
