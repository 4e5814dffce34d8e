/* Bad input on every warpdp.h entry point: each returns its error code with a message naming what
   is wrong, never crashes (run under AddressSanitizer + UBSan in CI). Also: a handle shared by
   threads gives every thread its own results and its own error message. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warpdp.h"

static int failures;

/* The call must return `expected` and leave a message containing `word`. */
#define EXPECT(call, expected, word) expect_status((call), (expected), (word), #call, __LINE__)

static void expect_status(int status, int expected, const char *word, const char *text, int line)
{
    const char *message = warpdp_last_error();
    if (status != expected || (expected != WARPDP_OK && strstr(message, word) == NULL)) {
        fprintf(stderr, "line %d: %s\n  returned %s (wanted %s), message '%s' (wanted '%s')\n", line, text,
                warpdp_status_name(status), warpdp_status_name(expected), message, word);
        failures++;
    }
}

static const uint8_t H[] = "ACGTACGTTTGACCA", V[] = "ACGTACGATTGACCA";
static const int64_t OFF15[] = {0, 15}, POS4[] = {4}, BAD_OFF[] = {0, 99}, NEG_OFF[] = {0, -1};

static void xdrop_errors(warpdp_handle *h)
{
    int64_t s, bh, eh, bv, ev;
    warpdp_xdrop_pairs p = {H, V, 15, 15, OFF15, OFF15, POS4, POS4, 1};
    warpdp_xdrop_params params = warpdp_xdrop_params_default(4, 10);
    warpdp_xdrop_results r = {&s, &bh, &eh, &bv, &ev, NULL};
    EXPECT(warpdp_xdrop(h, &p, &params, &r), WARPDP_OK, "");
    if (s != 15 || bh != 0 || eh != 15) { /* the seed (bases 4..7) covers the mismatch */
        fprintf(stderr, "xdrop: score %lld [%lld, %lld), wanted 15 [0, 15)\n", (long long)s, (long long)bh, (long long)eh);
        failures++;
    }
    EXPECT(warpdp_xdrop(NULL, &p, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "handle");
    EXPECT(warpdp_xdrop(h, NULL, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "pairs");
    EXPECT(warpdp_xdrop(h, &p, NULL, &r), WARPDP_ERR_INVALID_ARGUMENT, "params");
    EXPECT(warpdp_xdrop(h, &p, &params, NULL), WARPDP_ERR_INVALID_ARGUMENT, "results");
    warpdp_xdrop_results no_score = r;
    no_score.score = NULL;
    EXPECT(warpdp_xdrop(h, &p, &params, &no_score), WARPDP_ERR_INVALID_ARGUMENT, "results->score");
    warpdp_xdrop_pairs q = p;
    q.n_pairs = -1;
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "n_pairs");
    q = p;
    q.n_pairs = INT64_MAX;
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "n_pairs");
    q = p;
    q.h_total = -5;
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "h_total");
    q = p;
    q.h_bases = NULL;
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "h_bases");
    q = p;
    q.v_offsets = NULL;
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "v_offsets");
    q = p;
    q.h_pos = NULL;
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "h_pos");
    q = p;
    q.h_offsets = BAD_OFF;
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "h_offsets");
    q = p;
    q.v_offsets = NEG_OFF;
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "v_offsets");
    const int64_t far[] = {14};
    q = p;
    q.h_pos = far; /* the seed runs past the end */
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "h_pos");
    const int64_t negative[] = {-3};
    q = p;
    q.v_pos = negative;
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "v_pos");
    q = p;
    q.h_bases = (const uint8_t *)"ACGTACGTTTGAXCA";
    EXPECT(warpdp_xdrop(h, &q, &params, &r), WARPDP_ERR_INVALID_ARGUMENT, "pair 0");
    warpdp_xdrop_params bad = params;
    bad.k = 0;
    EXPECT(warpdp_xdrop(h, &p, &bad, &r), WARPDP_ERR_INVALID_ARGUMENT, "k");
    bad = params;
    bad.match = 0;
    EXPECT(warpdp_xdrop(h, &p, &bad, &r), WARPDP_ERR_INVALID_ARGUMENT, "match");
    bad = params;
    bad.gap = 1;
    EXPECT(warpdp_xdrop(h, &p, &bad, &r), WARPDP_ERR_INVALID_ARGUMENT, "gap");
    bad = params;
    bad.x = -1;
    EXPECT(warpdp_xdrop(h, &p, &bad, &r), WARPDP_ERR_INVALID_ARGUMENT, "x");
    bad = params;
    bad.mismatch = INT64_MIN;
    EXPECT(warpdp_xdrop(h, &p, &bad, &r), WARPDP_ERR_INVALID_ARGUMENT, "mismatch");
    bad = params;
    bad.report = 7;
    EXPECT(warpdp_xdrop(h, &p, &bad, &r), WARPDP_ERR_INVALID_ARGUMENT, "report");
    const warpdp_xdrop_pairs empty = {NULL, NULL, 0, 0, OFF15, OFF15, NULL, NULL, 0};
    const warpdp_xdrop_results none = {NULL, NULL, NULL, NULL, NULL, NULL};
    EXPECT(warpdp_xdrop(h, &empty, &params, &none), WARPDP_OK, "");
}

static void seedext_errors(warpdp_handle *h)
{
    const int32_t h0[] = {19}, bad_h0[] = {-1};
    warpdp_seedext_pairs p = {H, V, 15, 15, OFF15, OFF15, h0, 1};
    warpdp_seedext_params s = warpdp_seedext_params_default();
    warpdp_seedext_result r;
    EXPECT(warpdp_seedext(h, &p, &s, &r), WARPDP_OK, "");
    EXPECT(warpdp_seedext(NULL, &p, &s, &r), WARPDP_ERR_INVALID_ARGUMENT, "handle");
    EXPECT(warpdp_seedext(h, NULL, &s, &r), WARPDP_ERR_INVALID_ARGUMENT, "pairs");
    EXPECT(warpdp_seedext(h, &p, NULL, &r), WARPDP_ERR_INVALID_ARGUMENT, "params");
    EXPECT(warpdp_seedext(h, &p, &s, NULL), WARPDP_ERR_INVALID_ARGUMENT, "results");
    warpdp_seedext_pairs q = p;
    q.h0 = NULL;
    EXPECT(warpdp_seedext(h, &q, &s, &r), WARPDP_ERR_INVALID_ARGUMENT, "h0");
    q = p;
    q.h0 = bad_h0;
    EXPECT(warpdp_seedext(h, &q, &s, &r), WARPDP_ERR_INVALID_ARGUMENT, "h0");
    q = p;
    q.query_offsets = BAD_OFF;
    EXPECT(warpdp_seedext(h, &q, &s, &r), WARPDP_ERR_INVALID_ARGUMENT, "query_offsets");
    q = p;
    q.target_total = -1;
    EXPECT(warpdp_seedext(h, &q, &s, &r), WARPDP_ERR_INVALID_ARGUMENT, "target_total");
    warpdp_seedext_params t = s;
    t.a = 200;
    EXPECT(warpdp_seedext(h, &p, &t, &r), WARPDP_ERR_INVALID_ARGUMENT, "a");
    t = s;
    t.e_ins = 0;
    EXPECT(warpdp_seedext(h, &p, &t, &r), WARPDP_ERR_INVALID_ARGUMENT, "e_ins");
    t = s;
    t.w = -1;
    EXPECT(warpdp_seedext(h, &p, &t, &r), WARPDP_ERR_INVALID_ARGUMENT, "w");
}

static void pairhmm_errors(warpdp_handle *h)
{
    const uint8_t q[] = {30, 30, 30, 30}, ins[] = {45, 45, 45, 45}, gcp[] = {10, 10, 10, 10};
    const int64_t read_off[] = {0, 4}, hap_off[] = {0, 5}, one[] = {0, 1}, two[] = {0, 2};
    warpdp_pairhmm_batches b = {(const uint8_t *)"ACGT", q, ins, ins, gcp, 4, read_off, 1,
                                (const uint8_t *)"ACGTA", 5, hap_off, 1, one, one, 1};
    double out[2];
    int64_t n;
    EXPECT(warpdp_pairhmm_count(&b, &n), WARPDP_OK, "");
    EXPECT(warpdp_pairhmm(h, &b, 0, out, 1), WARPDP_OK, "");
    EXPECT(warpdp_pairhmm(h, &b, 1, out, 1), WARPDP_OK, "");
    EXPECT(warpdp_pairhmm_count(NULL, &n), WARPDP_ERR_INVALID_ARGUMENT, "batches");
    EXPECT(warpdp_pairhmm_count(&b, NULL), WARPDP_ERR_INVALID_ARGUMENT, "n_results");
    EXPECT(warpdp_pairhmm(NULL, &b, 0, out, 1), WARPDP_ERR_INVALID_ARGUMENT, "handle");
    EXPECT(warpdp_pairhmm(h, &b, 0, NULL, 1), WARPDP_ERR_INVALID_ARGUMENT, "out");
    EXPECT(warpdp_pairhmm(h, &b, 0, out, 2), WARPDP_ERR_INVALID_ARGUMENT, "n_out");
    EXPECT(warpdp_pairhmm(h, &b, 0, out, -1), WARPDP_ERR_INVALID_ARGUMENT, "n_out");
    EXPECT(warpdp_pairhmm(h, &b, 2, out, 1), WARPDP_ERR_INVALID_ARGUMENT, "use_double");
    warpdp_pairhmm_batches c = b;
    c.read_gcp = NULL;
    EXPECT(warpdp_pairhmm(h, &c, 0, out, 1), WARPDP_ERR_INVALID_ARGUMENT, "read_gcp");
    c = b;
    c.batch_reads = two; /* more reads than there are */
    EXPECT(warpdp_pairhmm(h, &c, 0, out, 1), WARPDP_ERR_INVALID_ARGUMENT, "batch_reads");
    EXPECT(warpdp_pairhmm_count(&c, &n), WARPDP_ERR_INVALID_ARGUMENT, "batch_reads");
    c = b;
    c.hap_offsets = BAD_OFF;
    EXPECT(warpdp_pairhmm(h, &c, 0, out, 1), WARPDP_ERR_INVALID_ARGUMENT, "hap_offsets");
    const int64_t empty_read[] = {0, 0};
    c = b;
    c.read_offsets = empty_read;
    c.n_read_bases = 0;
    EXPECT(warpdp_pairhmm(h, &c, 0, out, 1), WARPDP_ERR_INVALID_ARGUMENT, "read_offsets");
    c = b;
    c.n_batches = (int64_t)1 << 62;
    EXPECT(warpdp_pairhmm(h, &c, 0, out, 1), WARPDP_ERR_INVALID_ARGUMENT, "n_batches");
}

static void align_errors(warpdp_handle *h)
{
    const int64_t q_off[] = {0, 8}, t_off[] = {0, 13};
    const warpdp_seq_pairs p = {(const uint8_t *)"ACGTACGT", (const uint8_t *)"TTACGTTACGTAA", 8, 13, q_off, t_off, 1};
    warpdp_align_params a = warpdp_align_params_default();
    a.mode = WARPDP_ALIGN_LOCAL;
    a.cigar = 1;
    int64_t s, qb, qe, tb, te, offsets[2];
    uint32_t ops[32];
    warpdp_align_results r = {&s, &qb, &qe, &tb, &te, ops, 32, offsets};
    EXPECT(warpdp_align(h, &p, &a, &r), WARPDP_OK, "");
    EXPECT(warpdp_align_cigar_capacity(&p) == 8 + 13 + 2 ? WARPDP_OK : -1, WARPDP_OK, "");
    EXPECT(warpdp_align_cigar_capacity(NULL) == -1 ? WARPDP_OK : -1, WARPDP_OK, "");
    EXPECT(warpdp_align(NULL, &p, &a, &r), WARPDP_ERR_INVALID_ARGUMENT, "handle");
    EXPECT(warpdp_align(h, NULL, &a, &r), WARPDP_ERR_INVALID_ARGUMENT, "pairs");
    EXPECT(warpdp_align(h, &p, NULL, &r), WARPDP_ERR_INVALID_ARGUMENT, "params");
    EXPECT(warpdp_align(h, &p, &a, NULL), WARPDP_ERR_INVALID_ARGUMENT, "results");
    warpdp_align_results small = r;
    small.cigar_capacity = 5;
    EXPECT(warpdp_align(h, &p, &a, &small), WARPDP_ERR_INVALID_ARGUMENT, "cigar_ops");
    small = r;
    small.cigar_offsets = NULL;
    EXPECT(warpdp_align(h, &p, &a, &small), WARPDP_ERR_INVALID_ARGUMENT, "cigar_ops");
    warpdp_align_params b = a;
    b.mode = 9;
    EXPECT(warpdp_align(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "mode");
    b = a;
    b.match = -1;
    EXPECT(warpdp_align(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "match");
    b = a;
    b.gap_open = 1;
    b.gap_extend = 2;
    EXPECT(warpdp_align(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "gap_open");
    b = a;
    b.gap_extend = 70000;
    EXPECT(warpdp_align(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "gap_extend");
    b = a;
    b.zdrop = 5; /* not extension mode */
    EXPECT(warpdp_align(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "zdrop");
    b = a;
    b.mode = WARPDP_ALIGN_GATK;
    b.mismatch = 3;
    EXPECT(warpdp_align(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "mismatch");
    b = a;
    b.max_traceback_cells = 10;
    EXPECT(warpdp_align(h, &p, &b, &r), WARPDP_ERR_RESOURCE_EXHAUSTED, "max_traceback_cells");
    b = a;
    b.max_traceback_cells = 0;
    EXPECT(warpdp_align(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "max_traceback_cells");
    int32_t matrix[25] = {0};
    matrix[3] = 1 << 20;
    b = a;
    b.matrix = matrix;
    EXPECT(warpdp_align(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "matrix");
    const int64_t empty_q[] = {0, 0};
    warpdp_seq_pairs e = p;
    e.query_offsets = empty_q;
    e.query_total = 0;
    EXPECT(warpdp_align(h, &e, &a, &r), WARPDP_ERR_INVALID_ARGUMENT, "query_offsets");
    e = p;
    e.target_bases = NULL;
    EXPECT(warpdp_align(h, &e, &a, &r), WARPDP_ERR_INVALID_ARGUMENT, "target_bases");
}

static void edit_errors(warpdp_handle *h)
{
    const int64_t q_off[] = {0, 8}, t_off[] = {0, 11};
    const warpdp_seq_pairs p = {(const uint8_t *)"ACGTACGT", (const uint8_t *)"TTACGTACGAA", 8, 11, q_off, t_off, 1};
    warpdp_edit_params e = warpdp_edit_params_default();
    e.mode = WARPDP_EDIT_HW;
    e.task = WARPDP_EDIT_PATH;
    int64_t d, tb, te, lb[16], le[16], lo[2], co[2];
    uint32_t ops[32];
    warpdp_edit_results r = {&d, &tb, &te, lb, le, 16, lo, ops, 32, co};
    EXPECT(warpdp_edit(h, &p, &e, &r), WARPDP_OK, "");
    if (d != 1 || co[1] < 1) {
        fprintf(stderr, "edit: distance %lld, %lld ops; wanted 1 and a CIGAR\n", (long long)d, (long long)co[1]);
        failures++;
    }
    warpdp_edit_params w = warpdp_edit_params_default();
    w.method = WARPDP_EDIT_WINDOWED;
    w.mode = WARPDP_EDIT_SHW;
    EXPECT(warpdp_edit(h, &p, &w, &r), WARPDP_OK, "");
    EXPECT(warpdp_edit(NULL, &p, &e, &r), WARPDP_ERR_INVALID_ARGUMENT, "handle");
    EXPECT(warpdp_edit(h, NULL, &e, &r), WARPDP_ERR_INVALID_ARGUMENT, "pairs");
    EXPECT(warpdp_edit(h, &p, NULL, &r), WARPDP_ERR_INVALID_ARGUMENT, "params");
    EXPECT(warpdp_edit(h, &p, &e, NULL), WARPDP_ERR_INVALID_ARGUMENT, "results");
    warpdp_edit_results small = r;
    small.loc_capacity = 2;
    EXPECT(warpdp_edit(h, &p, &e, &small), WARPDP_ERR_INVALID_ARGUMENT, "loc_begin");
    small = r;
    small.cigar_ops = NULL;
    EXPECT(warpdp_edit(h, &p, &e, &small), WARPDP_ERR_INVALID_ARGUMENT, "cigar_ops");
    warpdp_edit_params b = e;
    b.task = 3;
    EXPECT(warpdp_edit(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "task");
    b = e;
    b.mode = -1;
    EXPECT(warpdp_edit(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "mode");
    b = e;
    b.k = -2;
    EXPECT(warpdp_edit(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "k");
    b = w;
    b.window = 65;
    EXPECT(warpdp_edit(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "window");
    b = w;
    b.overlap = 64;
    EXPECT(warpdp_edit(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "overlap");
    b = w;
    b.mode = WARPDP_EDIT_NW;
    EXPECT(warpdp_edit(h, &p, &b, &r), WARPDP_ERR_INVALID_ARGUMENT, "SHW");
    warpdp_seq_pairs n = p;
    n.query_bases = (const uint8_t *)"ACGTNCGT";
    EXPECT(warpdp_edit(h, &n, &w, &r), WARPDP_ERR_INVALID_ARGUMENT, "pair 0");
    n = p;
    n.target_offsets = BAD_OFF;
    EXPECT(warpdp_edit(h, &n, &e, &r), WARPDP_ERR_INVALID_ARGUMENT, "target_offsets");
}

/* Every family's bad input on one handle (a CPU handle, then a GPU handle where one opens). */
static void every_family_errors(warpdp_handle *h)
{
    xdrop_errors(h);
    seedext_errors(h);
    pairhmm_errors(h);
    align_errors(h);
    edit_errors(h);
}

static void handle_errors(void)
{
    warpdp_handle *gpu_handle = NULL;
    const warpdp_gpu_options minus_one = {-1}, too_many = {1 << 20};
    EXPECT(warpdp_open_gpu(&minus_one, &gpu_handle), WARPDP_ERR_INVALID_ARGUMENT, "options->device");
    EXPECT(warpdp_open_gpu(&minus_one, NULL), WARPDP_ERR_INVALID_ARGUMENT, "handle");
    const int far = warpdp_open_gpu(&too_many, &gpu_handle);
    if (far != WARPDP_ERR_INVALID_ARGUMENT && far != WARPDP_ERR_UNAVAILABLE && far != WARPDP_ERR_UNSUPPORTED) {
        fprintf(stderr, "warpdp_open_gpu(device 2^20) returned %s\n", warpdp_status_name(far));
        failures++;
    }
    if (gpu_handle != NULL) {
        fprintf(stderr, "a failed warpdp_open_gpu left a handle\n");
        failures++;
    }
    warpdp_handle *h = (warpdp_handle *)1;
    EXPECT(warpdp_open_local(NULL, NULL), WARPDP_ERR_INVALID_ARGUMENT, "handle");
    warpdp_local_options o = {-1, NULL};
    EXPECT(warpdp_open_local(&o, &h), WARPDP_ERR_INVALID_ARGUMENT, "threads");
    if (h != NULL) {
        fprintf(stderr, "a failed open must leave *handle NULL\n");
        failures++;
    }
    o.threads = 5000;
    EXPECT(warpdp_open_local(&o, &h), WARPDP_ERR_INVALID_ARGUMENT, "threads");
    o.threads = 1;
    o.cpu_isa = "sse9";
    EXPECT(warpdp_open_local(&o, &h), WARPDP_ERR_INVALID_ARGUMENT, "cpu_isa");
    o.cpu_isa = "scalar";
    EXPECT(warpdp_open_local(&o, &h), WARPDP_OK, "");
    if (strcmp(warpdp_handle_cpu_isa(h), "scalar") != 0 || strcmp(warpdp_handle_cpu_isa(NULL), "") != 0 ||
        strcmp(warpdp_status_name(WARPDP_ERR_UNAVAILABLE), "WARPDP_ERR_UNAVAILABLE") != 0) {
        fprintf(stderr, "warpdp_handle_cpu_isa or warpdp_status_name is wrong\n");
        failures++;
    }
    warpdp_close(h);
    warpdp_close(NULL);
    warpdp_client_options c = {NULL, 0, NULL, NULL, 2.0};
    EXPECT(warpdp_open_client(&c, &h), WARPDP_ERR_INVALID_ARGUMENT, "address");
    EXPECT(warpdp_open_client(NULL, &h), WARPDP_ERR_INVALID_ARGUMENT, "options");
    c.address = "127.0.0.1:1";
    c.tls = 2;
    EXPECT(warpdp_open_client(&c, &h), WARPDP_ERR_INVALID_ARGUMENT, "tls");
    c.tls = 0;
    c.timeout_seconds = -1;
    EXPECT(warpdp_open_client(&c, &h), WARPDP_ERR_INVALID_ARGUMENT, "timeout_seconds");
    c.timeout_seconds = 2.0;
#ifdef WARPDP_TEST_GRPC
    EXPECT(warpdp_open_client(&c, &h), WARPDP_ERR_UNAVAILABLE, "server"); /* nothing listens on port 1 */
    c.tls = 1;
    c.tls_ca_file = "/nonexistent/ca.pem";
    EXPECT(warpdp_open_client(&c, &h), WARPDP_ERR_INVALID_ARGUMENT, "tls_ca_file");
#else
    EXPECT(warpdp_open_client(&c, &h), WARPDP_ERR_UNSUPPORTED, "gRPC");
#endif
    if (warpdp_api_version() != WARPDP_API_VERSION) {
        fprintf(stderr, "library API version %d, header %d\n", warpdp_api_version(), WARPDP_API_VERSION);
        failures++;
    }
}

/* Threads sharing one handle: each scores its own pairs and sees its own errors. */
static warpdp_handle *shared;

static void *worker(void *arg)
{
    const long id = (long)arg;
    for (int round = 0; round < 50; round++) {
        int64_t s = -1, bh, eh, bv, ev;
        const warpdp_xdrop_pairs p = {H, V, 15, 15, OFF15, OFF15, POS4, POS4, 1};
        warpdp_xdrop_params params = warpdp_xdrop_params_default(4, 10);
        params.match = 1 + id; /* each thread its own scores */
        warpdp_xdrop_results r = {&s, &bh, &eh, &bv, &ev, NULL};
        if (warpdp_xdrop(shared, &p, &params, &r) != WARPDP_OK || s != 15 * (1 + id))
            return (void *)1;
        params.gap = (int64_t)id + 1; /* an error of this thread's own */
        if (warpdp_xdrop(shared, &p, &params, &r) != WARPDP_ERR_INVALID_ARGUMENT ||
            strstr(warpdp_last_error(), "gap") == NULL)
            return (void *)1;
    }
    return NULL;
}

static void threads_share_a_handle(void)
{
    EXPECT(warpdp_open_local(NULL, &shared), WARPDP_OK, "");
    pthread_t threads[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++) {
        void *bad;
        pthread_join(threads[i], &bad);
        if (bad != NULL) {
            fprintf(stderr, "thread %d: wrong result or message on a shared handle\n", i);
            failures++;
        }
    }
    warpdp_close(shared);
}

#define N_FAMILIES 5
#define PAIRHMM 2 /* small_call's family number */

/* One small call of family f on h, its results packed into out (the same bytes on every handle). */
typedef struct {
    int64_t ints[40];
    uint32_t ops[32];
    double likelihoods[2];
    warpdp_seedext_result extension;
} small_results;

static int small_call(warpdp_handle *h, int f, small_results *o)
{
    memset(o, 0, sizeof *o);
    int64_t *v = o->ints;
    if (f == 0) {
        const warpdp_xdrop_pairs p = {H, V, 15, 15, OFF15, OFF15, POS4, POS4, 1};
        const warpdp_xdrop_params params = warpdp_xdrop_params_default(4, 10);
        const warpdp_xdrop_results r = {v, v + 1, v + 2, v + 3, v + 4, v + 5};
        return warpdp_xdrop(h, &p, &params, &r);
    }
    if (f == 1) {
        const int32_t h0[] = {19};
        const warpdp_seedext_pairs p = {H, V, 15, 15, OFF15, OFF15, h0, 1};
        const warpdp_seedext_params params = warpdp_seedext_params_default();
        return warpdp_seedext(h, &p, &params, &o->extension);
    }
    if (f == PAIRHMM) {
        const uint8_t q[] = {30, 30, 30, 30}, ins[] = {45, 45, 45, 45}, gcp[] = {10, 10, 10, 10};
        const int64_t read_off[] = {0, 4}, hap_off[] = {0, 5}, one[] = {0, 1};
        const warpdp_pairhmm_batches b = {(const uint8_t *)"ACGT", q, ins, ins, gcp, 4, read_off, 1,
                                          (const uint8_t *)"ACGTA", 5, hap_off, 1, one, one, 1};
        return warpdp_pairhmm(h, &b, 1, o->likelihoods, 1);
    }
    const int64_t q_off[] = {0, 8}, t_off[] = {0, 13};
    const warpdp_seq_pairs p = {(const uint8_t *)"ACGTACGT", (const uint8_t *)"TTACGTTACGTAA", 8, 13, q_off, t_off, 1};
    if (f == 3) {
        warpdp_align_params a = warpdp_align_params_default();
        a.mode = WARPDP_ALIGN_LOCAL;
        a.cigar = 1;
        const warpdp_align_results r = {v, v + 1, v + 2, v + 3, v + 4, o->ops, 32, v + 5};
        return warpdp_align(h, &p, &a, &r);
    }
    warpdp_edit_params e = warpdp_edit_params_default();
    e.mode = WARPDP_EDIT_HW;
    e.task = WARPDP_EDIT_PATH;
    const warpdp_edit_results r = {v, v + 1, v + 2, v + 3, v + 17, 14, v + 31, o->ops, 32, v + 33};
    return warpdp_edit(h, &p, &e, &r);
}

static small_results cpu_results[N_FAMILIES];

static void *family_worker(void *arg)
{
    const int f = (int)(long)arg % N_FAMILIES;
    for (int round = 0; round < 20; round++) {
        small_results got;
        if (small_call(shared, f, &got) != WARPDP_OK || memcmp(&got, &cpu_results[f], sizeof got) != 0)
            return (void *)1;
    }
    return NULL;
}

/* Ten threads on one GPU handle, two per family at once: every call gives the CPU handle's results
   (Pair-HMM: the GPU handle's own result of a call made alone, since the GPU backend's likelihoods
   are not the CPU's to the bit; that one within the documented 1e-6 of the CPU's, in double mode). */
static void threads_share_a_gpu_handle(void)
{
    warpdp_handle *cpu;
    EXPECT(warpdp_open_local(NULL, &cpu), WARPDP_OK, "");
    for (int f = 0; f < N_FAMILIES; f++)
        EXPECT(small_call(cpu, f, &cpu_results[f]), WARPDP_OK, "");
    warpdp_close(cpu);
    const warpdp_gpu_options gpu = {0};
    if (warpdp_open_gpu(&gpu, &shared) != WARPDP_OK)
        return;
    const double cpu_likelihood = cpu_results[PAIRHMM].likelihoods[0];
    EXPECT(small_call(shared, PAIRHMM, &cpu_results[PAIRHMM]), WARPDP_OK, "");
    if (!(fabs(cpu_results[PAIRHMM].likelihoods[0] - cpu_likelihood) <= 1e-6)) {
        fprintf(stderr, "GPU handle: Pair-HMM %.17g, CPU handle %.17g\n", cpu_results[PAIRHMM].likelihoods[0],
                cpu_likelihood);
        failures++;
    }
    pthread_t threads[2 * N_FAMILIES];
    for (long i = 0; i < 2 * N_FAMILIES; i++)
        pthread_create(&threads[i], NULL, family_worker, (void *)i);
    for (int i = 0; i < 2 * N_FAMILIES; i++) {
        void *bad;
        pthread_join(threads[i], &bad);
        if (bad != NULL) {
            fprintf(stderr, "GPU handle, thread %d (family %d): a call failed or differs from the reference\n", i,
                    i % N_FAMILIES);
            failures++;
        }
    }
    warpdp_close(shared);
    printf("bad input: ten threads shared a GPU handle\n");
}

int main(void)
{
    handle_errors();
    warpdp_handle *h;
    warpdp_local_options o = {2, NULL};
    EXPECT(warpdp_open_local(&o, &h), WARPDP_OK, "");
    every_family_errors(h);
    warpdp_close(h);
    /* The same bad input on a GPU handle, where one can be opened here. */
    const warpdp_gpu_options gpu = {0};
    const int opened = warpdp_open_gpu(&gpu, &h);
    if (opened == WARPDP_OK) {
        every_family_errors(h);
        warpdp_close(h);
        printf("bad input: checked on a GPU handle too\n");
    } else {
        EXPECT(opened, warpdp_has_gpu() ? WARPDP_ERR_UNAVAILABLE : WARPDP_ERR_UNSUPPORTED,
               warpdp_has_gpu() ? "GPU" : "WARPDP_WITH_CUDA");
        printf("bad input: no GPU handle here (%s)\n", warpdp_last_error());
    }
    threads_share_a_handle();
    threads_share_a_gpu_handle();
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    else
        printf("bad input: every check passed\n");
    return failures ? 1 : 0;
}
