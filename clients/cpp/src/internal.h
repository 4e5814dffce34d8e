/* Shared by the in-process library's families: the handle, error messages and argument checks
   done before a driver (the drivers in warpdp/cython_cpu) is called. */
#ifndef WARPDP_INTERNAL_H
#define WARPDP_INTERNAL_H

#include <stdint.h>
#include "warpdp.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "cpu_common.h" /* C declarations: the kernels' shared helpers (warpdp_offsets_ok, ...) */

typedef struct wd_client wd_client; /* client.cpp: a gRPC channel and stub */
typedef struct wd_gpu wd_gpu;       /* gpu/device.cu: the CUDA device of a GPU handle */

struct warpdp_handle {
    int threads;       /* 0: all cores (the drivers' convention) */
    int isa;           /* WARPDP_ISA_* for the families with SIMD variants */
    int isa_chosen;    /* 1 when the caller (or $WARPDP_CPU_ISA) named the variant */
    wd_client *client; /* non-NULL: calls go to a server */
    wd_gpu *gpu;       /* non-NULL: calls run on this GPU */
};

#ifdef WARPDP_WITH_GRPC
/* client.cpp: each family's call on a server, after the family's own checks of the arguments. */
int wd_client_open(const warpdp_client_options *options, wd_client **client);
void wd_client_free(wd_client *client);
int wd_client_xdrop(wd_client *c, const warpdp_xdrop_pairs *pairs, const warpdp_xdrop_params *params,
                    const warpdp_xdrop_results *results);
int wd_client_seedext(wd_client *c, const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params,
                      warpdp_seedext_result *results);
int wd_client_pairhmm(wd_client *c, const warpdp_pairhmm_batches *batches, int use_double, double *out,
                      int64_t n_out);
int wd_client_align(wd_client *c, const warpdp_seq_pairs *pairs, const warpdp_align_params *params,
                    const warpdp_align_results *results);
int wd_client_edit(wd_client *c, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params,
                   const warpdp_edit_results *results);
#endif

#ifdef WARPDP_WITH_CUDA
/* gpu/: each family's call on the handle's GPU, after the family's own checks of the arguments
   (the driver's checks too: the GPU path refuses what the CPU path refuses, with its message). */
int wd_gpu_open(int device, wd_gpu **gpu);
void wd_gpu_free(wd_gpu *gpu);
int wd_gpu_xdrop(wd_gpu *gpu, const warpdp_xdrop_pairs *pairs, const warpdp_xdrop_params *params,
                 const warpdp_xdrop_results *results);
int wd_gpu_seedext(wd_gpu *gpu, const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params,
                   warpdp_seedext_result *results);
int wd_gpu_pairhmm(wd_gpu *gpu, const warpdp_pairhmm_batches *batches, int use_double, double *out, int64_t n_out);
int wd_gpu_align(wd_gpu *gpu, const warpdp_seq_pairs *pairs, const warpdp_align_params *params,
                 const warpdp_align_results *results);
int wd_gpu_edit(wd_gpu *gpu, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params,
                const warpdp_edit_results *results);
#endif

/* edit.c: the windowed method's refusal of pair `pair` (a byte other than A, C, G, T), CPU and GPU alike. */
int wd_edit_refuse_byte(int64_t pair);

/* Counts and byte totals beyond these are refused as absurd (2^40 pairs, 2^48 bytes) before any
   size is computed from them, so no product or sum of them can overflow int64. */
#define WD_MAX_ITEMS ((int64_t)1 << 40)
#define WD_MAX_BYTES ((int64_t)1 << 48)

/* Records this thread's message (printf-style) and returns status. */
int wd_fail(int status, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Clears this thread's message; returns WARPDP_OK. */
int wd_ok(void);

/* WARPDP_ERR_INVALID_ARGUMENT naming `name` when ptr is NULL although `needed`. */
int wd_check_pointer(const void *ptr, const char *name, int needed);

/* WARPDP_ERR_INVALID_ARGUMENT naming `name` unless 0 <= value <= max. */
int wd_check_count(int64_t value, const char *name, int64_t max);

/* A driver's status as this API's: 0 -> WARPDP_OK (the message left as it is), WARPDP_BAD_ARGUMENT
   -> the field's name (fields[bad.field]) and the item at fault (items[bad.field]: "pair",
   "read", ...; items NULL: "pair"), -1 out of memory, -2 a CPU variant this CPU lacks, anything else internal. */
int wd_driver_status(const char *family, int status, const char *const *fields, const char *const *items,
                     int n_fields, warpdp_bad_argument bad);

/* The variant a family with the given variants (bit mask of 1 << WARPDP_ISA_*) runs for this
   handle: the handle's when the caller chose it (WARPDP_ERR_UNSUPPORTED if the family lacks it),
   else the best of the handle's and the family's. */
int wd_family_isa(const warpdp_handle *handle, const char *family, unsigned variants, int *isa);

#ifdef __cplusplus
}
#endif

#define WD_TRY(expr)                 \
    do {                             \
        const int wd_status_ = (expr); \
        if (wd_status_ != WARPDP_OK) \
            return wd_status_;       \
    } while (0)

#endif
