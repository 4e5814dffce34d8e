/* Handles, versions and errors of the in-process library. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static _Thread_local char last_error[512];

static const char *const ISA_NAMES[] = {"scalar", "avx2", "avx512"};

int warpdp_api_version(void)
{
    return WARPDP_API_VERSION;
}

const char *warpdp_status_name(int status)
{
    switch (status) {
    case WARPDP_OK:
        return "WARPDP_OK";
    case WARPDP_ERR_INVALID_ARGUMENT:
        return "WARPDP_ERR_INVALID_ARGUMENT";
    case WARPDP_ERR_OUT_OF_MEMORY:
        return "WARPDP_ERR_OUT_OF_MEMORY";
    case WARPDP_ERR_UNSUPPORTED:
        return "WARPDP_ERR_UNSUPPORTED";
    case WARPDP_ERR_RESOURCE_EXHAUSTED:
        return "WARPDP_ERR_RESOURCE_EXHAUSTED";
    case WARPDP_ERR_INTERNAL:
        return "WARPDP_ERR_INTERNAL";
    case WARPDP_ERR_UNAVAILABLE:
        return "WARPDP_ERR_UNAVAILABLE";
    case WARPDP_ERR_UNAUTHENTICATED:
        return "WARPDP_ERR_UNAUTHENTICATED";
    case WARPDP_ERR_RPC:
        return "WARPDP_ERR_RPC";
    default:
        return "unknown warpdp status";
    }
}

const char *warpdp_last_error(void)
{
    return last_error;
}

int wd_fail(int status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return status;
}

int wd_ok(void)
{
    last_error[0] = '\0';
    return WARPDP_OK;
}

int wd_check_pointer(const void *ptr, const char *name, int needed)
{
    if (needed && ptr == NULL)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: %s is NULL", name);
    return WARPDP_OK;
}

int wd_check_count(int64_t value, const char *name, int64_t max)
{
    if (value < 0 || value > max)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: %s must be within 0..%lld, not %lld", name,
                       (long long)max, (long long)value);
    return WARPDP_OK;
}

static int wd_bad_argument(const char *family, const char *const *fields, const char *const *items, int n_fields,
                           warpdp_bad_argument bad)
{
    const int known = bad.field >= 0 && bad.field < n_fields;
    const char *name = known ? fields[bad.field] : "an argument";
    const char *item = known && items != NULL ? items[bad.field] : "pair";
    if (bad.index >= 0)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp %s: %s is out of range (%s %lld)", family, name, item,
                       (long long)bad.index);
    return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp %s: %s is out of range", family, name);
}

int wd_driver_status(const char *family, int status, const char *const *fields, const char *const *items,
                     int n_fields, warpdp_bad_argument bad)
{
    switch (status) {
    case 0:
        return WARPDP_OK;
    case WARPDP_BAD_ARGUMENT:
        return wd_bad_argument(family, fields, items, n_fields, bad);
    case -1:
        return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp %s: out of memory", family);
    case -2:
        return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp %s: this CPU variant cannot run on this CPU", family);
    default:
        return wd_fail(WARPDP_ERR_INTERNAL, "warpdp %s: driver status %d", family, status);
    }
}

int wd_family_isa(const warpdp_handle *handle, const char *family, unsigned variants, int *isa)
{
    if (handle->isa_chosen) {
        if (!(variants & (1u << handle->isa)))
            return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp %s: this family has no '%s' CPU variant (cpu_isa)", family,
                           ISA_NAMES[handle->isa]);
        *isa = handle->isa;
        return WARPDP_OK;
    }
    for (int candidate = handle->isa; candidate >= WARPDP_ISA_SCALAR; candidate--) {
        if (variants & (1u << candidate)) {
            *isa = candidate;
            return WARPDP_OK;
        }
    }
    return wd_fail(WARPDP_ERR_INTERNAL, "warpdp %s: no CPU variant", family);
}

static int parse_isa(const char *name, const char *what, int *isa)
{
    for (int code = 0; code < 3; code++) {
        if (strcmp(name, ISA_NAMES[code]) == 0) {
            if (!warpdp_cpu_supports(code))
                return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp: the '%s' CPU variant (%s) cannot run on this CPU",
                               name, what);
            *isa = code;
            return WARPDP_OK;
        }
    }
    return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: %s must be one of scalar, avx2, avx512, not '%.40s'", what,
                   name);
}

int warpdp_open_local(const warpdp_local_options *options, warpdp_handle **handle)
{
    WD_TRY(wd_check_pointer(handle, "handle", 1));
    *handle = NULL;
    const warpdp_local_options defaults = {0, NULL};
    if (options == NULL)
        options = &defaults;
    if (options->threads < 0 || options->threads > WARPDP_MAX_THREADS)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: threads must be within 0..%d (0: all cores), not %d",
                       WARPDP_MAX_THREADS, options->threads);
    int isa = warpdp_cpu_best_isa(), chosen = 0;
    const char *env = getenv("WARPDP_CPU_ISA");
    if (options->cpu_isa != NULL) {
        WD_TRY(parse_isa(options->cpu_isa, "cpu_isa", &isa));
        chosen = 1;
    } else if (env != NULL && env[0] != '\0') {
        WD_TRY(parse_isa(env, "WARPDP_CPU_ISA", &isa));
        chosen = 1;
    }
    warpdp_handle *made = malloc(sizeof *made);
    if (made == NULL)
        return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp: out of memory opening a handle");
    made->threads = options->threads;
    made->isa = isa;
    made->isa_chosen = chosen;
    made->client = NULL;
    made->gpu = NULL;
    *handle = made;
    return wd_ok();
}

int warpdp_has_gpu(void)
{
#ifdef WARPDP_WITH_CUDA
    return 1;
#else
    return 0;
#endif
}

int warpdp_open_gpu(const warpdp_gpu_options *options, warpdp_handle **handle)
{
    WD_TRY(wd_check_pointer(handle, "handle", 1));
    *handle = NULL;
    const warpdp_gpu_options defaults = {0};
    if (options == NULL)
        options = &defaults;
    if (options->device < 0)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: options->device must be 0 or more, not %d",
                       options->device);
#ifdef WARPDP_WITH_CUDA
    warpdp_handle *made = calloc(1, sizeof *made);
    if (made == NULL)
        return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp: out of memory opening a handle");
    const int status = wd_gpu_open(options->device, &made->gpu);
    if (status != WARPDP_OK) {
        free(made);
        return status;
    }
    *handle = made;
    return wd_ok();
#else
    return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp: this libwarpdp was built without CUDA (WARPDP_WITH_CUDA=OFF)");
#endif
}

int warpdp_open_client(const warpdp_client_options *options, warpdp_handle **handle)
{
    WD_TRY(wd_check_pointer(handle, "handle", 1));
    *handle = NULL;
    WD_TRY(wd_check_pointer(options, "options", 1));
    WD_TRY(wd_check_pointer(options->address, "options->address", 1));
    if (options->tls != 0 && options->tls != 1)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: options->tls must be 0 or 1, not %d", options->tls);
    if (!(options->timeout_seconds >= 0 && options->timeout_seconds <= 1e9))
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: options->timeout_seconds must be within 0..1e9");
#ifdef WARPDP_WITH_GRPC
    warpdp_handle *made = calloc(1, sizeof *made);
    if (made == NULL)
        return wd_fail(WARPDP_ERR_OUT_OF_MEMORY, "warpdp: out of memory opening a handle");
    const int status = wd_client_open(options, &made->client);
    if (status != WARPDP_OK) {
        free(made);
        return status;
    }
    *handle = made;
    return wd_ok();
#else
    return wd_fail(WARPDP_ERR_UNSUPPORTED, "warpdp: this libwarpdp was built without gRPC (WARPDP_WITH_GRPC=OFF)");
#endif
}

void warpdp_close(warpdp_handle *handle)
{
#ifdef WARPDP_WITH_CUDA
    if (handle != NULL && handle->gpu != NULL)
        wd_gpu_free(handle->gpu);
#endif
#ifdef WARPDP_WITH_GRPC
    if (handle != NULL && handle->client != NULL)
        wd_client_free(handle->client);
#endif
    free(handle);
}

const char *warpdp_handle_cpu_isa(const warpdp_handle *handle)
{
    if (handle == NULL)
        return "";
    if (handle->gpu != NULL)
        return "gpu";
    return handle->client != NULL ? "server" : ISA_NAMES[handle->isa];
}
