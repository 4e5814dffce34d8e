/* Runs one warpdp.h entry point on arrays stored as raw files, for compare_python.py and
   benchmarks/cpp_inprocess.py:
     warpdp_harness FAMILY DIR [REPEATS]
   reads DIR/params.txt ("name value" lines: parameters, threads, cpu_isa; or server ADDRESS with
   token, tls, tls_ca for a client handle) and DIR/<array>.bin
   (raw little-endian arrays, as numpy's tofile writes them), calls warpdp_<FAMILY> and writes
   every output array to DIR/out_<name>.bin. Exit 0; 3 with "STATUS_NAME: message" on stderr when
   the call fails; 2 on a harness error. With REPEATS, the call runs that many times and the
   fastest call's wall time is printed ("seconds S"), after the least CPU time of the calling
   thread ("thread_cpu_seconds S"), then every call's wall time in order ("call_seconds S1,S2,...",
   for medians). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "warpdp.h"

static int repeats = 1;
static double best_seconds = 1e300, best_cpu_seconds = 1e300;
static double *call_seconds; /* repeats entries */
static int calls_made;

static double clock_seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs `call` (an expression giving a warpdp_status) `repeats` times, keeping the fastest wall
   time and the least CPU time of the calling thread (all of the work with threads 1). */
#define TIMED(status, call)                                                          \
    for (int rep_ = 0; rep_ < repeats; rep_++) {                                     \
        const double start_ = clock_seconds(CLOCK_MONOTONIC);                        \
        const double cpu_start_ = clock_seconds(CLOCK_THREAD_CPUTIME_ID);            \
        status = (call);                                                             \
        const double cpu_ = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu_start_;     \
        const double took_ = clock_seconds(CLOCK_MONOTONIC) - start_;                \
        best_seconds = took_ < best_seconds ? took_ : best_seconds;                  \
        call_seconds[calls_made++] = took_;                                           \
        best_cpu_seconds = cpu_ < best_cpu_seconds ? cpu_ : best_cpu_seconds;        \
        if (status != WARPDP_OK)                                                     \
            break;                                                                   \
    }

static const char *dir;

#define MAX_PARAMS 64
static char param_names[MAX_PARAMS][64], param_values[MAX_PARAMS][256];
static int n_params;

static void die(const char *what, const char *name)
{
    fprintf(stderr, "harness: %s %s\n", what, name);
    exit(2);
}

static void read_params(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/params.txt", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        die("cannot open", path);
    while (n_params < MAX_PARAMS && fscanf(f, "%63s %255s", param_names[n_params], param_values[n_params]) == 2)
        n_params++;
    fclose(f);
}

static const char *param(const char *name)
{
    for (int i = 0; i < n_params; i++)
        if (strcmp(param_names[i], name) == 0)
            return param_values[i];
    return NULL;
}

static long long int_param(const char *name, long long fallback)
{
    const char *value = param(name);
    return value == NULL ? fallback : strtoll(value, NULL, 10);
}

/* The array's bytes (never NULL: an empty file gives a 1-byte buffer) and its element count. */
static void *load(const char *name, size_t item, int64_t *count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        die("cannot open", path);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *data = malloc((size_t)size + 1);
    if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size)
        die("cannot read", path);
    fclose(f);
    if (count != NULL)
        *count = (int64_t)((size_t)size / item);
    return data;
}

static void save(const char *name, const void *data, size_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/out_%s.bin", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || (bytes > 0 && fwrite(data, 1, bytes, f) != bytes))
        die("cannot write", path);
    fclose(f);
}

static int64_t *int64s(int64_t n)
{
    int64_t *p = calloc((size_t)n + 1, sizeof(int64_t));
    if (p == NULL)
        die("out of memory", "");
    return p;
}

static int run_xdrop(warpdp_handle *h)
{
    warpdp_xdrop_pairs p;
    int64_t n_offsets;
    p.h_bases = load("h_bases", 1, &p.h_total);
    p.v_bases = load("v_bases", 1, &p.v_total);
    p.h_offsets = load("h_offsets", 8, &n_offsets);
    p.v_offsets = load("v_offsets", 8, NULL);
    p.h_pos = load("h_pos", 8, NULL);
    p.v_pos = load("v_pos", 8, NULL);
    p.n_pairs = n_offsets - 1;
    warpdp_xdrop_params params = warpdp_xdrop_params_default(int_param("k", 17), int_param("x", 7));
    params.match = int_param("match", 1);
    params.mismatch = int_param("mismatch", -1);
    params.gap = int_param("gap", -1);
    params.report = (int)int_param("report", 0);
    const int64_t n = p.n_pairs;
    warpdp_xdrop_results r = {int64s(n), int64s(n), int64s(n), int64s(n), int64s(n), int64s(n)};
    int status = WARPDP_OK;
    TIMED(status, warpdp_xdrop(h, &p, &params, &r))
    if (status != WARPDP_OK)
        return status;
    const size_t bytes = (size_t)n * 8;
    save("score", r.score, bytes);
    save("begin_h", r.begin_h, bytes);
    save("end_h", r.end_h, bytes);
    save("begin_v", r.begin_v, bytes);
    save("end_v", r.end_v, bytes);
    save("cells", r.cells, bytes);
    return status;
}

static int run_seedext(warpdp_handle *h)
{
    warpdp_seedext_pairs p;
    int64_t n_offsets;
    p.query = load("query", 1, &p.query_total);
    p.target = load("target", 1, &p.target_total);
    p.query_offsets = load("query_offsets", 8, &n_offsets);
    p.target_offsets = load("target_offsets", 8, NULL);
    p.h0 = load("h0", 4, NULL);
    p.n_pairs = n_offsets - 1;
    warpdp_seedext_params s = warpdp_seedext_params_default();
    s.a = (int32_t)int_param("a", s.a);
    s.b = (int32_t)int_param("b", s.b);
    s.o_del = (int32_t)int_param("o_del", s.o_del);
    s.e_del = (int32_t)int_param("e_del", s.e_del);
    s.o_ins = (int32_t)int_param("o_ins", s.o_ins);
    s.e_ins = (int32_t)int_param("e_ins", s.e_ins);
    s.w = (int32_t)int_param("w", s.w);
    s.end_bonus = (int32_t)int_param("end_bonus", s.end_bonus);
    s.zdrop = (int32_t)int_param("zdrop", s.zdrop);
    warpdp_seedext_result *r = calloc((size_t)p.n_pairs + 1, sizeof *r);
    int status = WARPDP_OK;
    TIMED(status, warpdp_seedext(h, &p, &s, r))
    if (status == WARPDP_OK)
        save("table", r, (size_t)p.n_pairs * sizeof *r);
    return status;
}

static int run_pairhmm(warpdp_handle *h)
{
    warpdp_pairhmm_batches b;
    int64_t count;
    b.read_bases = load("read_bases", 1, &b.n_read_bases);
    b.read_quals = load("read_quals", 1, NULL);
    b.read_ins = load("read_ins", 1, NULL);
    b.read_del = load("read_del", 1, NULL);
    b.read_gcp = load("read_gcp", 1, NULL);
    b.read_offsets = load("read_offsets", 8, &count);
    b.n_reads = count - 1;
    b.hap_bases = load("hap_bases", 1, &b.n_hap_bases);
    b.hap_offsets = load("hap_offsets", 8, &count);
    b.n_haps = count - 1;
    b.batch_reads = load("batch_reads", 8, &count);
    b.batch_haps = load("batch_haps", 8, NULL);
    b.n_batches = count - 1;
    int64_t n_out;
    int status = warpdp_pairhmm_count(&b, &n_out);
    if (status != WARPDP_OK)
        return status;
    double *out = calloc((size_t)n_out + 1, sizeof(double));
    TIMED(status, warpdp_pairhmm(h, &b, (int)int_param("double", 0), out, n_out))
    if (status == WARPDP_OK)
        save("values", out, (size_t)n_out * sizeof(double));
    return status;
}

static void load_seq_pairs(warpdp_seq_pairs *p)
{
    int64_t n_offsets;
    p->query_bases = load("query_bases", 1, &p->query_total);
    p->target_bases = load("target_bases", 1, &p->target_total);
    p->query_offsets = load("query_offsets", 8, &n_offsets);
    p->target_offsets = load("target_offsets", 8, NULL);
    p->n_pairs = n_offsets - 1;
}

static int run_align(warpdp_handle *h)
{
    warpdp_seq_pairs p;
    load_seq_pairs(&p);
    warpdp_align_params a = warpdp_align_params_default();
    a.mode = (int)int_param("mode", a.mode);
    a.match = (int32_t)int_param("match", a.match);
    a.mismatch = (int32_t)int_param("mismatch", a.mismatch);
    a.gaps = (int)int_param("gaps", a.gaps);
    a.gap_open = (int32_t)int_param("gap_open", a.gap_open);
    a.gap_extend = (int32_t)int_param("gap_extend", a.gap_extend);
    a.gap_convention = (int)int_param("gap_convention", a.gap_convention);
    a.zdrop = int_param("zdrop", a.zdrop);
    a.overhang = (int)int_param("overhang", a.overhang);
    a.cigar = (int)int_param("cigar", a.cigar);
    a.max_traceback_cells = int_param("max_traceback_cells", a.max_traceback_cells);
    if (int_param("has_matrix", 0))
        a.matrix = load("matrix", 4, NULL);
    const int64_t n = p.n_pairs, room = warpdp_align_cigar_capacity(&p);
    warpdp_align_results r = {int64s(n), int64s(n), int64s(n), int64s(n), int64s(n), NULL, 0, NULL};
    if (a.cigar) {
        r.cigar_ops = calloc((size_t)room + 1, sizeof(uint32_t));
        r.cigar_capacity = room;
        r.cigar_offsets = int64s(n + 1);
    }
    int status = WARPDP_OK;
    TIMED(status, warpdp_align(h, &p, &a, &r))
    if (status != WARPDP_OK)
        return status;
    save("score", r.score, (size_t)n * 8);
    save("query_begin", r.query_begin, (size_t)n * 8);
    save("query_end", r.query_end, (size_t)n * 8);
    save("target_begin", r.target_begin, (size_t)n * 8);
    save("target_end", r.target_end, (size_t)n * 8);
    if (a.cigar) {
        save("cigar_ops", r.cigar_ops, (size_t)r.cigar_offsets[n] * 4);
        save("cigar_offsets", r.cigar_offsets, (size_t)(n + 1) * 8);
    }
    return status;
}

static int run_edit(warpdp_handle *h)
{
    warpdp_seq_pairs p;
    load_seq_pairs(&p);
    warpdp_edit_params e = warpdp_edit_params_default();
    e.mode = (int)int_param("mode", e.mode);
    e.task = (int)int_param("task", e.task);
    e.method = (int)int_param("method", e.method);
    e.k = int_param("k", e.k);
    e.window = (int)int_param("window", e.window);
    e.overlap = (int)int_param("overlap", e.overlap);
    const int64_t n = p.n_pairs;
    const int64_t loc_room = warpdp_edit_locations_capacity(&p), cigar_room = warpdp_edit_cigar_capacity(&p);
    warpdp_edit_results r = {int64s(n), int64s(n), int64s(n), int64s(loc_room), int64s(loc_room), loc_room,
                             int64s(n + 1), calloc((size_t)cigar_room + 1, 4), cigar_room, int64s(n + 1)};
    int status = WARPDP_OK;
    TIMED(status, warpdp_edit(h, &p, &e, &r))
    if (status != WARPDP_OK)
        return status;
    save("distance", r.distance, (size_t)n * 8);
    save("target_begin", r.target_begin, (size_t)n * 8);
    save("target_end", r.target_end, (size_t)n * 8);
    if (e.task >= WARPDP_EDIT_LOCATIONS) {
        save("loc_begin", r.loc_begin, (size_t)r.loc_offsets[n] * 8);
        save("loc_end", r.loc_end, (size_t)r.loc_offsets[n] * 8);
        save("loc_offsets", r.loc_offsets, (size_t)(n + 1) * 8);
    }
    if (e.task == WARPDP_EDIT_PATH) {
        save("cigar_ops", r.cigar_ops, (size_t)r.cigar_offsets[n] * 4);
        save("cigar_offsets", r.cigar_offsets, (size_t)(n + 1) * 8);
    }
    return status;
}

/* Exit status when a GPU handle cannot be opened here (ctest's skip). */
#define NO_GPU_EXIT 77

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4)
        die("usage:", "warpdp_harness FAMILY DIR [REPEATS]");
    dir = argv[2];
    if (argc == 4 && (repeats = atoi(argv[3])) < 1)
        die("REPEATS must be at least 1, not", argv[3]);
    if ((call_seconds = calloc((size_t)repeats, sizeof *call_seconds)) == NULL)
        die("out of memory", "");
    read_params();
    warpdp_handle *h;
    int status;
    if (param("server") != NULL) { /* a client handle on that server */
        const warpdp_client_options options = {param("server"), (int)int_param("tls", 0), param("tls_ca"),
                                               param("token"), 60.0};
        status = warpdp_open_client(&options, &h);
    } else if (param("gpu") != NULL) { /* an in-process GPU handle on that device */
        const warpdp_gpu_options options = {(int)int_param("gpu", 0)};
        status = warpdp_open_gpu(&options, &h);
        if (status == WARPDP_ERR_UNAVAILABLE || status == WARPDP_ERR_UNSUPPORTED) {
            fprintf(stderr, "%s: %s\n", warpdp_status_name(status), warpdp_last_error());
            return NO_GPU_EXIT;
        }
    } else {
        const warpdp_local_options options = {(int)int_param("threads", 0), param("cpu_isa")};
        status = warpdp_open_local(&options, &h);
    }
    if (status == WARPDP_OK) {
        const char *family = argv[1];
        if (strcmp(family, "xdrop") == 0)
            status = run_xdrop(h);
        else if (strcmp(family, "seedext") == 0)
            status = run_seedext(h);
        else if (strcmp(family, "pairhmm") == 0)
            status = run_pairhmm(h);
        else if (strcmp(family, "align") == 0)
            status = run_align(h);
        else if (strcmp(family, "edit") == 0)
            status = run_edit(h);
        else
            die("unknown family", family);
        warpdp_close(h);
    }
    if (status != WARPDP_OK) {
        fprintf(stderr, "%s: %s\n", warpdp_status_name(status), warpdp_last_error());
        return 3;
    }
    if (argc == 4) {
        printf("thread_cpu_seconds %.6f\nseconds %.6f\ncall_seconds ", best_cpu_seconds, best_seconds);
        for (int i = 0; i < calls_made; i++)
            printf(i ? ",%.6f" : "%.6f", call_seconds[i]);
        printf("\n");
    }
    return 0;
}
