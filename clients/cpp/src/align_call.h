/* warpdp_align's arguments as the align driver (warpdp/cython_cpu/align_driver.c) takes them, and
   the driver's statuses as the API's: align.c (CPU handles) and gpu/align.cu (GPU handles) share
   them, so both refuse the same input with the same messages. */
#ifndef WARPDP_ALIGN_CALL_H
#define WARPDP_ALIGN_CALL_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "align_kernel.h"

/* The packed pairs (the same arrays, no copy). */
align_pairs wd_align_driver_pairs(const warpdp_seq_pairs *pairs);

/* The driver's parameters, as align.pyx builds them from AlignParams. */
align_params wd_align_driver_params(const warpdp_align_params *params);

/* The driver's outputs over the caller's results; with a CIGAR, pair i's ops go to its slot of
   cigar_ops and their count to cigar_offsets[i + 1] (wd_pack_ragged packs them afterwards). */
align_outputs wd_align_driver_outputs(const warpdp_align_results *results, int cigar);

/* A driver status (align_run, align_check_arguments) as the API's: a traceback over
   max_traceback_cells is WARPDP_ERR_RESOURCE_EXHAUSTED, the rest as wd_driver_status says. */
int wd_align_driver_status(int status, warpdp_bad_argument bad, const warpdp_align_params *params);

#ifdef __cplusplus
}
#endif

#endif
