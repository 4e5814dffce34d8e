/* warpdp.h: the C API of warpdp (exact dynamic-programming kernels for genomics).
 *
 * A plain C API (no C++ types), usable from C and C++. A handle runs batches of the five kernel
 * families (pairhmm, xdrop, seedext, align, edit) either in this process, on the same C kernels the
 * Python package compiles (AVX-512 / AVX2 / scalar, chosen at run time), with no Python and no
 * server (warpdp_open_local); in this process on a GPU, on the same CUDA kernels the Python package
 * runs (warpdp_open_gpu, when the library was built with CUDA: WARPDP_WITH_CUDA); or on a
 * `warpdp serve` server through gRPC (warpdp_open_client, when the library was built with gRPC).
 * Every kind of handle takes the same calls and gives the same results.
 *
 * Data model (the project's, see docs/design.md): every sequence set is one byte array of
 * concatenated sequences plus int64 offsets (n + 1 entries, offsets[0] == 0, offsets[n] == total,
 * non-decreasing). Results go into arrays the caller owns; ragged results (CIGARs, locations) are
 * written packed with int64 offsets (n + 1 entries), the caller's buffer sized with the matching
 * *_capacity function. CIGAR ops are BAM's packed uint32: length << 4 | op (M=0 I=1 D=2 S=4 ==7 X=8).
 *
 * Errors: every function returns a warpdp_status and, on failure, warpdp_last_error() gives a
 * message naming the argument (and pair) at fault; the outputs' contents are then unspecified.
 * Every pointer, count, offset and parameter is checked before a kernel reads anything (a byte
 * that is not a base can be found while computing), so a bad argument is an error code, never a
 * crash.
 *
 * Threads: a handle is immutable once opened; any number of threads may submit on the same handle
 * at once. Error messages are per thread. A CPU handle's call spreads its pairs over the handle's
 * threads; a GPU handle's call runs on its device (and leaves that device current on the calling
 * thread, as cudaSetDevice would).
 *
 * Versioning: WARPDP_API_VERSION is the version of this header; warpdp_api_version() that of the
 * library linked. Minor versions only add functions; a program built against major M runs with
 * any library of major M and a minor at least its own.
 */
#ifndef WARPDP_H
#define WARPDP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WARPDP_API_VERSION_MAJOR 1
#define WARPDP_API_VERSION_MINOR 1
#define WARPDP_API_VERSION (WARPDP_API_VERSION_MAJOR * 100 + WARPDP_API_VERSION_MINOR)

/* The WARPDP_API_VERSION the library was built with. */
int warpdp_api_version(void);

/* ---------------------------------------------------------------- status and errors */

typedef enum {
    WARPDP_OK = 0,
    WARPDP_ERR_INVALID_ARGUMENT = 1, /* a null pointer, a length, offset, parameter or base out of range */
    WARPDP_ERR_OUT_OF_MEMORY = 2,
    WARPDP_ERR_UNSUPPORTED = 3,       /* a CPU variant this CPU (or this family) does not have; a GPU
                                         handle from a library built without CUDA */
    WARPDP_ERR_RESOURCE_EXHAUSTED = 4, /* a pair over a configured limit (align's max_traceback_cells) */
    WARPDP_ERR_INTERNAL = 5,
    WARPDP_ERR_UNAVAILABLE = 6,        /* client handles: the server cannot be reached, or the call timed
                                          out; GPU handles: no usable GPU or driver */
    WARPDP_ERR_UNAUTHENTICATED = 7,    /* client handles: the token was refused */
    WARPDP_ERR_RPC = 8                 /* client handles: any other gRPC failure (the message names it) */
} warpdp_status;

/* A static name for a status ("WARPDP_ERR_INVALID_ARGUMENT", ...). */
const char *warpdp_status_name(int status);

/* The message of the last failed call made by this thread ("" when none failed yet). Valid until
   this thread's next warpdp call. */
const char *warpdp_last_error(void);

/* ---------------------------------------------------------------- handles */

typedef struct warpdp_handle warpdp_handle;

typedef struct {
    int threads;         /* CPU threads per call: 0 = every core this process may use, else 1..1024 */
    const char *cpu_isa; /* NULL: the best this CPU runs (or $WARPDP_CPU_ISA); "scalar", "avx2", "avx512" */
} warpdp_local_options;

/* Opens an in-process handle (options NULL: the defaults, all zero). On success *handle is set;
   close it with warpdp_close. WARPDP_ERR_UNSUPPORTED when cpu_isa cannot run on this CPU. */
int warpdp_open_local(const warpdp_local_options *options, warpdp_handle **handle);

typedef struct {
    const char *address;     /* the server, "host:port" (any gRPC target: "unix:/path", ...) */
    int tls;                 /* 0: plaintext, 1: TLS */
    const char *tls_ca_file; /* TLS: PEM file of the roots to trust (NULL: the system's) */
    const char *token;       /* NULL, or a bearer token sent as 'authorization: Bearer <token>' */
    double timeout_seconds;  /* per call (0: none) */
} warpdp_client_options;

/* Opens a handle on a warpdp server (gRPC, the warpdp.v1 service) and checks that it answers
   (ServerInfo). Each call is one unary RPC when the batch fits the server's message limit
   (--max-message-mb, 64 MB by default); a larger batch goes as several, of consecutive pairs
   (Pair-HMM: batches) within the limit, and one the server refuses as too large (its cell limit,
   or its memory budget) is halved and sent again; the results come back in order either way. On
   the server's own host (a loopback address or a Unix socket) a request's arrays of 64 KiB or
   more go through shared memory (a sealed memfd) when the server offers it, and so do the
   results (every family's). The server checks what it receives as the in-process
   library does, and its errors come back as the same codes with the server's message;
   max_traceback_cells is the server's own. WARPDP_ERR_UNSUPPORTED when the library was built
   without gRPC (WARPDP_WITH_GRPC=OFF). */
int warpdp_open_client(const warpdp_client_options *options, warpdp_handle **handle);

/* Since 1.1. */
typedef struct {
    int device; /* the CUDA device ordinal, 0 .. (devices visible to this process) - 1 */
} warpdp_gpu_options;

/* Since 1.1: 1 when this library was built with the GPU backend (WARPDP_WITH_CUDA), else 0. */
int warpdp_has_gpu(void);

/* Since 1.1. Opens an in-process handle whose calls run on one GPU of this host (options NULL:
   device 0), with the CUDA kernels of the Python package's GPU backend (the .cu files of warpdp/kernels,
   compiled into this library), and the same results as the other handles (Pair-HMM: the Python
   GPU backend's, within docs/semantics.md's tolerance of the CPU's). Each call checks its
   arguments as the CPU handles do (Pair-HMM on a GPU also refuses, as the Python GPU backend does,
   haplotypes over 2^24 - 1 bases and batches too large for one chunk: over 2^31 pairs, reads,
   haplotypes or bases), then copies its batch to the GPU in chunks that fit the device's free
   memory and runs it there on streams of its own, so several threads may call at once. A host
   out of memory while planning gives WARPDP_ERR_OUT_OF_MEMORY, a CUDA failure
   WARPDP_ERR_OUT_OF_MEMORY (device memory) or WARPDP_ERR_INTERNAL with CUDA's message.
   WARPDP_ERR_UNSUPPORTED when the library was built without CUDA, WARPDP_ERR_UNAVAILABLE when
   no usable GPU (or driver) is found, WARPDP_ERR_INVALID_ARGUMENT for a device number out of range. */
int warpdp_open_gpu(const warpdp_gpu_options *options, warpdp_handle **handle);

/* Frees the handle (NULL is allowed). No call on it may be in flight. */
void warpdp_close(warpdp_handle *handle);

/* The CPU variant the handle runs ("scalar", "avx2", "avx512"); "server" for a client handle, "gpu"
   for a GPU handle. */
const char *warpdp_handle_cpu_isa(const warpdp_handle *handle);

/* ---------------------------------------------------------------- X-drop (SeqAn's extendSeed, GappedXDrop) */

/* Pair i extends the seed of length k at h_pos[i] in H_i = h_bases[h_offsets[i] .. h_offsets[i+1])
   and v_pos[i] in V_i = v_bases[v_offsets[i] .. v_offsets[i+1]), in both directions. Bases: A C G T N,
   either case. */
typedef struct {
    const uint8_t *h_bases, *v_bases;
    int64_t h_total, v_total; /* bytes in h_bases, v_bases */
    const int64_t *h_offsets, *v_offsets; /* n_pairs + 1 each */
    const int64_t *h_pos, *v_pos;         /* n_pairs each */
    int64_t n_pairs;
} warpdp_xdrop_pairs;

enum { WARPDP_XDROP_REPORT_LONGEST = 0, WARPDP_XDROP_REPORT_BEST = 1 };

typedef struct {
    int64_t k;        /* seed length >= 1 */
    int64_t x;        /* X-drop, 0..2^62 */
    int64_t match;    /* > 0 */
    int64_t mismatch; /* < 0 */
    int64_t gap;      /* < 0 (linear gaps) */
    int report;       /* WARPDP_XDROP_REPORT_*: SeqAn's longest extension (BELLA, LOGAN) or the best cell */
} warpdp_xdrop_params;

/* k and x as given, match 1, mismatch -1, gap -1, report longest (BELLA's scoring). */
warpdp_xdrop_params warpdp_xdrop_params_default(int64_t k, int64_t x);

/* Per pair (n_pairs each): score = left + right + k * match; [begin_h, end_h) and [begin_v, end_v)
   the extended seed. cells (DP cells computed) may be NULL. */
typedef struct {
    int64_t *score, *begin_h, *end_h, *begin_v, *end_v, *cells;
} warpdp_xdrop_results;

int warpdp_xdrop(warpdp_handle *handle, const warpdp_xdrop_pairs *pairs, const warpdp_xdrop_params *params,
                 const warpdp_xdrop_results *results);

/* ---------------------------------------------------------------- seed extension (BWA's ksw_extend2) */

/* Pair i extends query_i = query[query_offsets[i] ..) against target_i from a seed score h0[i].
   Any byte other than A C G T (either case) counts as N. */
typedef struct {
    const uint8_t *query, *target;
    int64_t query_total, target_total;
    const int64_t *query_offsets, *target_offsets; /* n_pairs + 1 each */
    const int32_t *h0;                             /* n_pairs */
    int64_t n_pairs;
} warpdp_seedext_pairs;

typedef struct {
    int32_t a, b, o_del, e_del, o_ins, e_ins, w, end_bonus, zdrop;
} warpdp_seedext_params;

/* BWA-MEM's defaults: a=1 b=4 o_del=6 e_del=1 o_ins=6 e_ins=1 w=100 end_bonus=5 zdrop=100. */
warpdp_seedext_params warpdp_seedext_params_default(void);

/* What ksw_extend2 returns. */
typedef struct {
    int32_t score, qle, tle, gtle, gscore, max_off;
} warpdp_seedext_result;

/* results: n_pairs entries. */
int warpdp_seedext(warpdp_handle *handle, const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params,
                   warpdp_seedext_result *results);

/* ---------------------------------------------------------------- Pair-HMM forward (GATK / GKL numerics) */

/* Read r spans [read_offsets[r], read_offsets[r+1]) of the five read arrays (bases and raw phred
   values: base qualities, insertion and deletion gap-open, gap continuation); haplotype h spans
   [hap_offsets[h], hap_offsets[h+1]) of hap_bases; batch b scores reads [batch_reads[b], batch_reads[b+1])
   against haplotypes [batch_haps[b], batch_haps[b+1]). No read or haplotype may be empty. */
typedef struct {
    const uint8_t *read_bases, *read_quals, *read_ins, *read_del, *read_gcp;
    int64_t n_read_bases; /* bytes in each of the five read arrays */
    const int64_t *read_offsets; /* n_reads + 1 */
    int64_t n_reads;
    const uint8_t *hap_bases;
    int64_t n_hap_bases;
    const int64_t *hap_offsets; /* n_haps + 1 */
    int64_t n_haps;
    const int64_t *batch_reads, *batch_haps; /* n_batches + 1 each */
    int64_t n_batches;
} warpdp_pairhmm_batches;

/* *n_results = the number of likelihoods warpdp_pairhmm writes (sum over batches of reads * haps). */
int warpdp_pairhmm_count(const warpdp_pairhmm_batches *batches, int64_t *n_results);

/* Fills out[0 .. n_out) with log10 likelihoods, batch after batch, read-major inside a batch
   (GATK's layout); n_out must equal warpdp_pairhmm_count's. use_double: 0 = GKL's float with
   double recomputation below 1e-28, 1 = double throughout. */
int warpdp_pairhmm(warpdp_handle *handle, const warpdp_pairhmm_batches *batches, int use_double, double *out,
                   int64_t n_out);

/* ---------------------------------------------------------------- query/target pairs (align, edit) */

/* Pair i is query_i = query_bases[query_offsets[i] .. query_offsets[i+1]) against target_i; none empty. */
typedef struct {
    const uint8_t *query_bases, *target_bases;
    int64_t query_total, target_total;
    const int64_t *query_offsets, *target_offsets; /* n_pairs + 1 each */
    int64_t n_pairs;
} warpdp_seq_pairs;

/* ---------------------------------------------------------------- pairwise alignment */

enum {
    WARPDP_ALIGN_GLOBAL = 0, WARPDP_ALIGN_SEMIGLOBAL = 1, WARPDP_ALIGN_LOCAL = 2, WARPDP_ALIGN_EXTENSION = 3,
    WARPDP_ALIGN_GATK = 4 /* GKL's IntelSmithWaterman.align */
};
enum { WARPDP_GAPS_AFFINE = 0, WARPDP_GAPS_LINEAR = 1 };
enum { WARPDP_GAP_CONVENTION_L_MINUS_1 = 0, WARPDP_GAP_CONVENTION_L = 1 };
enum { WARPDP_OVERHANG_SOFTCLIP = 0, WARPDP_OVERHANG_INDEL = 1, WARPDP_OVERHANG_LEADING_INDEL = 2,
       WARPDP_OVERHANG_IGNORE = 3 };

/* As Python's AlignParams (README "Pairwise alignment"). Generic modes: match > 0 > mismatch or a
   5x5 matrix (rows query A C G T N, columns target), penalties gap_open >= gap_extend >= 0 (with
   convention L-1) subtracted; a gap of length L costs gap_open + (L-1)*gap_extend (L-1), gap_open +
   L*gap_extend (L), L*gap_extend (linear). GATK mode: GATK's SWParameters (match > 0; mismatch,
   gap_open, gap_extend <= 0, added) and an overhang strategy. |every score| <= 65536. */
typedef struct {
    int mode;
    int32_t match, mismatch;
    const int32_t *matrix; /* NULL, or 25 entries replacing match/mismatch (generic modes) */
    int gaps;              /* WARPDP_GAPS_* */
    int32_t gap_open, gap_extend;
    int gap_convention; /* WARPDP_GAP_CONVENTION_* */
    int64_t zdrop;      /* extension mode only; -1: none, else 0..2^31-1 */
    int overhang;       /* GATK mode only: WARPDP_OVERHANG_* */
    int cigar;          /* 1: write CIGARs */
    int64_t max_traceback_cells; /* with a CIGAR (or GATK mode) a pair needing more cells is refused */
} warpdp_align_params;

/* Global, match 2, mismatch -3, affine gaps open 5 extend 2 (L-1), no zdrop, SOFTCLIP, no CIGAR,
   max_traceback_cells 2^28 (Python's defaults). */
warpdp_align_params warpdp_align_params_default(void);

/* Coordinates 0-based, end exclusive. With params->cigar: cigar_ops (cigar_capacity entries, at
   least warpdp_align_cigar_capacity(pairs)) receives pair after pair, pair i's ops at
   [cigar_offsets[i], cigar_offsets[i+1]) (cigar_offsets: n_pairs + 1). Without, both may be NULL. */
typedef struct {
    int64_t *score, *query_begin, *query_end, *target_begin, *target_end;
    uint32_t *cigar_ops;
    int64_t cigar_capacity;
    int64_t *cigar_offsets;
} warpdp_align_results;

/* Room the CIGAR ops of these pairs may need (query_total + target_total + 2 * n_pairs), or -1
   when pairs is NULL or its counts are negative or absurd. */
int64_t warpdp_align_cigar_capacity(const warpdp_seq_pairs *pairs);

int warpdp_align(warpdp_handle *handle, const warpdp_seq_pairs *pairs, const warpdp_align_params *params,
                 const warpdp_align_results *results);

/* ---------------------------------------------------------------- edit distance */

enum { WARPDP_EDIT_NW = 0, WARPDP_EDIT_SHW = 1, WARPDP_EDIT_HW = 2 };
enum { WARPDP_EDIT_DISTANCE = 0, WARPDP_EDIT_LOCATIONS = 1, WARPDP_EDIT_PATH = 2 };
enum { WARPDP_EDIT_EXACT = 0, WARPDP_EDIT_WINDOWED = 1 };

/* As Python's EditParams: edlib's modes and tasks; k >= 0 reports distances above k as -1 (-1: no
   bound); the windowed method (Scrooge's GenASM) needs mode SHW, 2 <= window <= 64,
   0 <= overlap < window, and bases A C G T only. */
typedef struct {
    int mode, task, method;
    int64_t k;
    int window, overlap;
} warpdp_edit_params;

/* NW, k -1, task distance, exact, window 64, overlap 33. */
warpdp_edit_params warpdp_edit_params_default(void);

/* Per pair: distance (-1 above k) and the first location's target span [target_begin, target_end).
   Task locations or path: every optimal location, pair i's at [loc_offsets[i], loc_offsets[i+1]) of
   loc_begin/loc_end (loc_capacity >= warpdp_edit_locations_capacity(pairs)). Task path: the CIGAR as
   for align (cigar_capacity >= warpdp_edit_cigar_capacity(pairs)). Unused buffers may be NULL. */
typedef struct {
    int64_t *distance, *target_begin, *target_end;
    int64_t *loc_begin, *loc_end;
    int64_t loc_capacity;
    int64_t *loc_offsets;
    uint32_t *cigar_ops;
    int64_t cigar_capacity;
    int64_t *cigar_offsets;
} warpdp_edit_results;

/* target_total + n_pairs, and query_total + target_total; -1 for NULL or absurd counts. */
int64_t warpdp_edit_locations_capacity(const warpdp_seq_pairs *pairs);
int64_t warpdp_edit_cigar_capacity(const warpdp_seq_pairs *pairs);

int warpdp_edit(warpdp_handle *handle, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params,
                const warpdp_edit_results *results);

#ifdef __cplusplus
}
#endif

#endif
