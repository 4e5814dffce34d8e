// Client handles: each family's call as one unary RPC of the warpdp.v1 service (warpdp.proto),
// packed arrays in and results out (both through shared memory when the server is on this host
// and offers it), the results copied into the caller's buffers.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "client_calls.h"
#include "internal.h"
#include "shared_memory.h"
#include "warpdp.grpc.pb.h"

namespace v1 = warpdp::v1;

struct wd_client {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::Warpdp::Stub> stub;
    std::string token;
    double timeout_seconds;
    int64_t max_message_bytes;  // the server's limit on a request (and a reply), 0: none given
    std::unique_ptr<wd::SharedMemory> shared;  // NULL: the server is elsewhere or does not offer it
};

namespace {

int status_of(const grpc::Status &s, const char *family)
{
    int code;
    switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
        code = WARPDP_ERR_INVALID_ARGUMENT;
        break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
        code = WARPDP_ERR_RESOURCE_EXHAUSTED;
        break;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
        code = WARPDP_ERR_UNAVAILABLE;
        break;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
        code = WARPDP_ERR_UNAUTHENTICATED;
        break;
    case grpc::StatusCode::UNIMPLEMENTED:
        code = WARPDP_ERR_UNSUPPORTED;
        break;
    default:
        code = WARPDP_ERR_RPC;
    }
    return wd_fail(code, "warpdp %s (server, gRPC status %d): %s", family, int(s.error_code()),
                   s.error_message().c_str());
}

void prepare(const wd_client *c, grpc::ClientContext &context)
{
    if (!c->token.empty())
        context.AddMetadata("authorization", "Bearer " + c->token);
    if (c->timeout_seconds > 0)
        context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::microseconds(int64_t(c->timeout_seconds * 1e6)));
}

// A packed array of n items of `size` bytes (little-endian, as the proto wants: this library runs
// on x86-64), for the field `field`.
wd::Array array(const char *field, const void *data, int64_t n, size_t size)
{
    return {field, data, n > 0 ? size_t(n) * size : 0};
}

// One RPC's outcome. Its results are in the reply message or, when the server wrote them into
// the request's memfd (SharedFile.reply_offset), there: the memfd is held until this goes.
struct Call {
    grpc::Status status;
    wd::SharedMemory *shared = nullptr;
    wd::SharedFile *file = nullptr;
    uint64_t reply_offset = 0;
    Call() = default;
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;
    ~Call()
    {
        if (file != nullptr)
            shared->release(file);
    }
};

// One RPC; the request's packed arrays go through shared memory where the client has it, and
// with reply_bytes > 0 (the family's bound of result bytes, see SharedFile.reply_offset) the
// server may write the results into that memory too (read them with Results).
template <typename Request, typename Reply, typename Packed>
void rpc(wd_client *c, Request &request, Packed *packed, const wd::Arrays &arrays, Reply *reply,
         size_t reply_bytes, grpc::Status (v1::Warpdp::Stub::*method)(grpc::ClientContext *, const Request &, Reply *),
         Call *call)
{
    wd::SharedFile *file = c->shared ? c->shared->share(request, *packed, arrays, reply_bytes) : nullptr;
    if (file == nullptr)
        wd::pack(*packed, arrays);
    grpc::ClientContext context;
    prepare(c, context);
    call->status = (c->stub.get()->*method)(&context, request, reply);
    if (file == nullptr)
        return;
    if (call->status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        // The server could not use the memfd (a kept one it no longer knows, after a restart):
        // the memfds go, and the call is made once more with the arrays in the message.
        wd::unshare(request, *packed, arrays);
        c->shared->discard(file);
        reply->Clear();
        grpc::ClientContext again;
        prepare(c, again);
        call->status = (c->stub.get()->*method)(&again, request, reply);
        return;
    }
    call->shared = c->shared.get();
    call->file = file;
    call->reply_offset = request.shared_file().reply_offset();
}

// A reply's result fields, read in the family's order: each from its field of the message, or,
// when the server wrote them into the memfd, back to back from the reply offset (the layout of
// SharedFile.reply_offset).
class Results {
public:
    // first: the reply's first result field (empty with pairs: the results are in the memfd).
    Results(const Call &call, uint64_t n_pairs, const std::string &first)
    {
        if (call.file != nullptr && call.reply_offset > 0 && n_pairs > 0 && first.empty() &&
            call.reply_offset <= call.file->capacity) {
            at_ = call.file->map + call.reply_offset;
            left_ = call.file->capacity - call.reply_offset;
        }
    }

    // Copies the next field, n values of type T, into out (NULL: skipped); false when the field
    // (in the message) has another size or (in the memfd) would run past its end.
    template <typename T>
    bool column(const std::string &field, int64_t n, T *out)
    {
        const char *data = take(field, size_t(n) * sizeof(T));
        if (data == nullptr)
            return false;
        if (out != nullptr && n > 0)
            std::memcpy(out, data, size_t(n) * sizeof(T));
        return true;
    }

    // A ragged array of n pairs: its n + 1 offsets into out_offsets, then its values (at most
    // capacity) into out; false unless the offsets run from 0 up to a count within capacity.
    template <typename T>
    bool ragged(const std::string &values, const std::string &offsets, int64_t n, T *out, int64_t capacity,
                int64_t *out_offsets)
    {
        if (!column(offsets, n + 1, out_offsets) || out_offsets[0] != 0)
            return false;
        for (int64_t i = 0; i < n; i++)
            if (out_offsets[i + 1] < out_offsets[i])
                return false;
        return out_offsets[n] <= capacity && column(values, out_offsets[n], out);
    }

    // The next field's bytes (size of them), or NULL.
    const char *take(const std::string &field, size_t size)
    {
        if (at_ == nullptr)
            return field.size() == size ? field.data() : nullptr;
        if (size > left_)
            return nullptr;
        const char *data = at_;
        at_ += size;
        left_ -= size;
        return data;
    }

private:
    const char *at_ = nullptr;  // NULL: the results are in the message
    size_t left_ = 0;
};

// Room for results in the memfd: n_pairs values of `columns` int64 columns, plus ragged arrays
// of at most the given numbers of values (their offsets included).
size_t columns_bytes(int64_t n_pairs, int columns)
{
    return size_t(n_pairs) * 8 * size_t(columns);
}

// The same for a fixed-width family's reply: every bytes field of it is a result column.
template <typename Reply>
size_t fixed_reply_bytes(int64_t n_pairs)
{
    const google::protobuf::Descriptor *d = Reply::descriptor();
    int columns = 0;
    for (int i = 0; i < d->field_count(); i++)
        columns += d->field(i)->type() == google::protobuf::FieldDescriptor::TYPE_BYTES;
    return columns_bytes(n_pairs, columns);
}

size_t ragged_bytes(int64_t n_pairs, int64_t values, size_t value_size)
{
    return size_t(n_pairs + 1) * 8 + size_t(values) * value_size;
}

int malformed(const char *family)
{
    return wd_fail(WARPDP_ERR_RPC, "warpdp %s: the server's reply does not match the request", family);
}

std::string read_file(const char *path, bool *ok)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    *ok = bool(in);
    return text.str();
}

}  // namespace

int wd_client_open(const warpdp_client_options *options, wd_client **client)
{
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
    if (options->tls) {
        grpc::SslCredentialsOptions ssl;
        if (options->tls_ca_file != nullptr) {
            bool ok;
            ssl.pem_root_certs = read_file(options->tls_ca_file, &ok);
            if (!ok)
                return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp: cannot read options->tls_ca_file %s",
                               options->tls_ca_file);
        }
        credentials = grpc::SslCredentials(ssl);
    }
    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(-1);
    arguments.SetMaxSendMessageSize(-1);
    auto made = std::make_unique<wd_client>();
    made->channel = grpc::CreateCustomChannel(options->address, credentials, arguments);
    made->stub = v1::Warpdp::NewStub(made->channel);
    made->token = options->token != nullptr ? options->token : "";
    made->timeout_seconds = options->timeout_seconds;
    // The server must answer now (ServerInfo, bounded by the timeout or 10 s).
    grpc::ClientContext context;
    prepare(made.get(), context);
    if (options->timeout_seconds == 0)
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ServerInfoReply info;
    const grpc::Status s = made->stub->ServerInfo(&context, v1::ServerInfoRequest(), &info);
    if (!s.ok())
        return status_of(s, "client");
    made->max_message_bytes = int64_t(std::min<uint64_t>(info.limits().max_message_bytes(), uint64_t(1) << 62));
    if (info.shared_files().enabled() && !info.shared_files().socket().empty() &&
        wd::is_local_target(options->address))
        made->shared = std::make_unique<wd::SharedMemory>(info.shared_files().socket());
    *client = made.release();
    return WARPDP_OK;
}

void wd_client_free(wd_client *client)
{
    delete client;
}

namespace wd {

int64_t max_message_bytes(const wd_client *c)
{
    return c->max_message_bytes;
}

int xdrop_rpc(wd_client *c, const warpdp_xdrop_pairs *p, const warpdp_xdrop_params *params,
                    const warpdp_xdrop_results *r)
{
    v1::XdropRequest request;
    const int64_t n = p->n_pairs;
    const wd::Arrays arrays = {array("h_bases", p->h_bases, p->h_total, 1),
                               array("v_bases", p->v_bases, p->v_total, 1),
                               array("h_offsets", p->h_offsets, n + 1, 8),
                               array("v_offsets", p->v_offsets, n + 1, 8),
                               array("h_pos", p->h_pos, n, 8),
                               array("v_pos", p->v_pos, n, 8)};
    request.set_k(params->k);
    request.set_x(params->x);
    request.set_match(params->match);
    request.set_mismatch(params->mismatch);
    request.set_gap(params->gap);
    request.set_report(params->report == WARPDP_XDROP_REPORT_BEST ? v1::XDROP_REPORT_BEST : v1::XDROP_REPORT_LONGEST);
    v1::XdropReply reply;
    Call call;
    rpc(c, request, request.mutable_pairs(), arrays, &reply, fixed_reply_bytes<v1::XdropReply>(n),
        &v1::Warpdp::Stub::Xdrop, &call);
    if (!call.status.ok())
        return status_of(call.status, "xdrop");
    Results from(call, reply.n_pairs(), reply.score());
    if (reply.n_pairs() != uint64_t(n) || !from.column(reply.score(), n, r->score) ||
        !from.column(reply.begin_h(), n, r->begin_h) || !from.column(reply.end_h(), n, r->end_h) ||
        !from.column(reply.begin_v(), n, r->begin_v) || !from.column(reply.end_v(), n, r->end_v) ||
        (r->cells != nullptr && !from.column(reply.cells(), n, r->cells)))
        return malformed("xdrop");
    return wd_ok();
}

int seedext_rpc(wd_client *c, const warpdp_seedext_pairs *p, const warpdp_seedext_params *params,
                      warpdp_seedext_result *results)
{
    v1::SeedExtendRequest request;
    const int64_t n = p->n_pairs;
    const std::vector<int64_t> h0(p->h0, p->h0 + n);  // int64 on the wire
    const wd::Arrays arrays = {array("query", p->query, p->query_total, 1),
                               array("target", p->target, p->target_total, 1),
                               array("query_offsets", p->query_offsets, n + 1, 8),
                               array("target_offsets", p->target_offsets, n + 1, 8), array("h0", h0.data(), n, 8)};
    request.set_a(params->a);
    request.set_b(params->b);
    request.set_o_del(params->o_del);
    request.set_e_del(params->e_del);
    request.set_o_ins(params->o_ins);
    request.set_e_ins(params->e_ins);
    request.set_w(params->w);
    request.set_end_bonus(params->end_bonus);
    request.set_zdrop(params->zdrop);
    v1::SeedExtendReply reply;
    Call call;
    rpc(c, request, request.mutable_pairs(), arrays, &reply, fixed_reply_bytes<v1::SeedExtendReply>(n),
        &v1::Warpdp::Stub::SeedExtend, &call);
    if (!call.status.ok())
        return status_of(call.status, "seedext");
    Results from(call, reply.n_pairs(), reply.score());
    const std::string *fields[] = {&reply.score(), &reply.qle(), &reply.tle(), &reply.gtle(), &reply.gscore(),
                                   &reply.max_off()};
    const char *columns[6];
    for (int f = 0; f < 6; f++)
        if ((columns[f] = from.take(*fields[f], size_t(n) * 8)) == nullptr)
            return malformed("seedext");
    if (reply.n_pairs() != uint64_t(n))
        return malformed("seedext");
    for (int64_t i = 0; i < n; i++) {
        int64_t v[6];
        for (int f = 0; f < 6; f++)
            std::memcpy(&v[f], columns[f] + size_t(i) * 8, 8);
        results[i] = {int32_t(v[0]), int32_t(v[1]), int32_t(v[2]), int32_t(v[3]), int32_t(v[4]), int32_t(v[5])};
    }
    return wd_ok();
}

int pairhmm_rpc(wd_client *c, const warpdp_pairhmm_batches *b, int use_double, double *out, int64_t n_out)
{
    v1::PairHmmRequest request;
    const wd::Arrays arrays = {array("read_bases", b->read_bases, b->n_read_bases, 1),
                               array("read_quals", b->read_quals, b->n_read_bases, 1),
                               array("read_ins", b->read_ins, b->n_read_bases, 1),
                               array("read_del", b->read_del, b->n_read_bases, 1),
                               array("read_gcp", b->read_gcp, b->n_read_bases, 1),
                               array("read_offsets", b->read_offsets, b->n_reads + 1, 8),
                               array("hap_bases", b->hap_bases, b->n_hap_bases, 1),
                               array("hap_offsets", b->hap_offsets, b->n_haps + 1, 8),
                               array("batch_reads", b->batch_reads, b->n_batches + 1, 8),
                               array("batch_haps", b->batch_haps, b->n_batches + 1, 8)};
    request.set_use_double(use_double != 0);
    v1::PairHmmReply reply;
    Call call;
    rpc(c, request, request.mutable_batches(), arrays, &reply, fixed_reply_bytes<v1::PairHmmReply>(n_out),
        &v1::Warpdp::Stub::PairHmm, &call);
    if (!call.status.ok())
        return status_of(call.status, "pairhmm");
    Results from(call, reply.n_pairs(), reply.log10_likelihoods());
    if (reply.n_pairs() != uint64_t(n_out) || !from.column(reply.log10_likelihoods(), n_out, out))
        return malformed("pairhmm");
    return wd_ok();
}

namespace {

wd::Arrays seq_arrays(const warpdp_seq_pairs *p)
{
    return {array("query_bases", p->query_bases, p->query_total, 1),
            array("target_bases", p->target_bases, p->target_total, 1),
            array("query_offsets", p->query_offsets, p->n_pairs + 1, 8),
            array("target_offsets", p->target_offsets, p->n_pairs + 1, 8)};
}

}  // namespace

int align_rpc(wd_client *c, const warpdp_seq_pairs *p, const warpdp_align_params *a,
                    const warpdp_align_results *r)
{
    static const char *const MODES[] = {"global", "semiglobal", "local", "extension", "gatk"};
    static const char *const OVERHANGS[] = {"SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE"};
    v1::AlignRequest request;
    const wd::Arrays arrays = seq_arrays(p);
    request.set_mode(MODES[a->mode]);  // modes, gaps, conventions and overhangs are checked by warpdp_align
    request.set_match(a->match);
    request.set_mismatch(a->mismatch);
    if (a->matrix != nullptr) {
        std::string matrix(25 * 8, '\0');
        for (int k = 0; k < 25; k++) {
            const int64_t value = a->matrix[k];
            std::memcpy(&matrix[size_t(k) * 8], &value, 8);
        }
        request.set_matrix(matrix);
    }
    request.set_gaps(a->gaps == WARPDP_GAPS_LINEAR ? "linear" : "affine");
    request.set_gap_open(a->gap_open);
    request.set_gap_extend(a->gap_extend);
    request.set_gap_convention(a->gap_convention == WARPDP_GAP_CONVENTION_L ? "L" : "L-1");
    if (a->zdrop != -1)
        request.set_zdrop(a->zdrop);
    request.set_overhang(OVERHANGS[a->overhang]);
    request.set_cigar(a->cigar != 0);
    v1::AlignReply reply;
    const int64_t n = p->n_pairs;
    // Room for the columns and a CIGAR as long as the caller's buffer (a longer one is an error
    // anyway), or the longest the pairs can have.
    const size_t reply_bytes =
        columns_bytes(n, 5) +
        (a->cigar ? ragged_bytes(n, std::min(r->cigar_capacity, p->query_total + p->target_total + 2 * n), 4) : 0);
    Call call;
    rpc(c, request, request.mutable_pairs(), arrays, &reply, reply_bytes, &v1::Warpdp::Stub::Align, &call);
    if (!call.status.ok())
        return status_of(call.status, "align");
    Results from(call, reply.n_pairs(), reply.score());
    if (reply.n_pairs() != uint64_t(n) || !from.column(reply.score(), n, r->score) ||
        !from.column(reply.query_begin(), n, r->query_begin) || !from.column(reply.query_end(), n, r->query_end) ||
        !from.column(reply.target_begin(), n, r->target_begin) || !from.column(reply.target_end(), n, r->target_end))
        return malformed("align");
    if (a->cigar && !from.ragged(reply.cigar_ops(), reply.cigar_offsets(), n, r->cigar_ops, r->cigar_capacity,
                                 r->cigar_offsets))
        return malformed("align");
    return wd_ok();
}

int edit_rpc(wd_client *c, const warpdp_seq_pairs *p, const warpdp_edit_params *e,
                   const warpdp_edit_results *r)
{
    static const char *const MODES[] = {"nw", "shw", "hw"}, *const TASKS[] = {"distance", "locations", "path"},
                             *const METHODS[] = {"exact", "windowed"};
    v1::EditRequest request;
    const wd::Arrays arrays = seq_arrays(p);
    if (e->mode < 0 || e->mode > 2 || e->method < 0 || e->method > 1)
        return wd_fail(WARPDP_ERR_INVALID_ARGUMENT, "warpdp edit: mode must be 0..2 and method 0..1");
    request.set_mode(MODES[e->mode]);
    request.set_task(TASKS[e->task]);
    request.set_method(METHODS[e->method]);
    request.set_k(e->k);
    request.set_window(e->window);
    request.set_overlap(e->overlap);
    v1::EditReply reply;
    const int64_t n = p->n_pairs;
    const bool locations = e->task >= WARPDP_EDIT_LOCATIONS, path = e->task == WARPDP_EDIT_PATH;
    // Room for the columns, locations and a CIGAR as long as the caller's buffers, or the most
    // the pairs can have (a location per target base and pair, an op per base).
    const size_t reply_bytes =
        columns_bytes(n, 3) +
        (locations ? ragged_bytes(n, std::min(r->loc_capacity, p->target_total + n), 16) : 0) +
        (path ? ragged_bytes(n, std::min(r->cigar_capacity, p->query_total + p->target_total + 2 * n), 4) : 0);
    Call call;
    rpc(c, request, request.mutable_pairs(), arrays, &reply, reply_bytes, &v1::Warpdp::Stub::Edit, &call);
    if (!call.status.ok())
        return status_of(call.status, "edit");
    Results from(call, reply.n_pairs(), reply.distance());
    if (reply.n_pairs() != uint64_t(n) || !from.column(reply.distance(), n, r->distance) ||
        !from.column(reply.target_begin(), n, r->target_begin) || !from.column(reply.target_end(), n, r->target_end))
        return malformed("edit");
    // In the memfd's order (SharedFile.reply_offset): locations, then the CIGAR.
    if (locations && (!from.ragged(reply.loc_begin(), reply.loc_offsets(), n, r->loc_begin, r->loc_capacity,
                                   r->loc_offsets) ||
                      !from.column(reply.loc_end(), r->loc_offsets[n], r->loc_end)))
        return malformed("edit");
    if (path &&
        !from.ragged(reply.cigar_ops(), reply.cigar_offsets(), n, r->cigar_ops, r->cigar_capacity, r->cigar_offsets))
        return malformed("edit");
    return wd_ok();
}

}  // namespace wd
