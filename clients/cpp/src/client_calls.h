// client.cpp's single RPCs, one per family (each sends its whole batch in one request), for
// client_chunks.cpp, which splits a batch into requests the server accepts.
#ifndef WARPDP_CLIENT_CALLS_H
#define WARPDP_CLIENT_CALLS_H

#include <cstdint>

#include "internal.h"

namespace wd {

// The server's limit on a request message (or shared memory's arrays) and on a reply, in bytes
// (ServerInfo.limits.max_message_bytes; 0 when the server gave none).
int64_t max_message_bytes(const wd_client *c);

int xdrop_rpc(wd_client *c, const warpdp_xdrop_pairs *pairs, const warpdp_xdrop_params *params,
              const warpdp_xdrop_results *results);
int seedext_rpc(wd_client *c, const warpdp_seedext_pairs *pairs, const warpdp_seedext_params *params,
                warpdp_seedext_result *results);
int pairhmm_rpc(wd_client *c, const warpdp_pairhmm_batches *batches, int use_double, double *out, int64_t n_out);
int align_rpc(wd_client *c, const warpdp_seq_pairs *pairs, const warpdp_align_params *params,
              const warpdp_align_results *results);
int edit_rpc(wd_client *c, const warpdp_seq_pairs *pairs, const warpdp_edit_params *params,
             const warpdp_edit_results *results);

}  // namespace wd

#endif
