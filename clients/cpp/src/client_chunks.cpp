// Client handles' calls (internal.h's wd_client_*): a batch larger than the server's message limit
// goes as several requests (consecutive pairs, or Pair-HMM batches), each within the limit, and
// their results land in the caller's buffers in order; a request the server still refuses as too
// large (RESOURCE_EXHAUSTED: over its cell limit or its memory budget) is halved and sent again,
// down to one pair. One request when the batch fits, as before.
#include <cstdint>
#include <vector>

#include "client_calls.h"

namespace {

// Room in a request message (or a reply) beside its arrays: parameters and protobuf framing.
constexpr int64_t FRAMING_BYTES = 4096;

// Whether offsets[0 .. n] run from 0 up to total without going down: the ranges below are cut
// from them, so they must hold before any pointer is made from them. (A batch whose offsets do
// not goes whole, and the server's checks name the field at fault.)
bool offsets_ok(const int64_t *offsets, int64_t n, int64_t total)
{
    int64_t at;
    return warpdp_offsets_ok(offsets, n, total, 0, INT64_MAX, &at) != 0;
}

// offsets[i .. j] less offsets[i], into `into` (the offsets of a range's own arrays).
const int64_t *rebased(const int64_t *offsets, int64_t i, int64_t j, std::vector<int64_t> &into)
{
    into.assign(offsets + i, offsets + j + 1);
    for (int64_t &value : into)
        value -= offsets[i];
    return into.data();
}

// call(i, j) for [i, j), halved while the server refuses it as too large.
template <typename Call>
int halving(Call &call, int64_t i, int64_t j)
{
    const int status = call(i, j);
    if (status != WARPDP_ERR_RESOURCE_EXHAUSTED || j - i < 2)
        return status;
    const int64_t middle = i + (j - i) / 2;
    WD_TRY(halving(call, i, middle));
    return halving(call, middle, j);
}

// call(i, j) on consecutive ranges of the n items, each as long as its items' request bytes
// (request(i)) and reply bytes (reply(i)) stay within the server's message limit (an item over
// it alone): one call for a batch that fits.
template <typename Request, typename Reply, typename Call>
int in_chunks(const wd_client *c, int64_t n, Request request, Reply reply, Call call)
{
    const int64_t limit = wd::max_message_bytes(c);
    const int64_t room = limit > FRAMING_BYTES ? limit - FRAMING_BYTES : (limit > 0 ? 1 : INT64_MAX);
    int64_t i = 0;
    do {
        int64_t j = i, in = 0, out = 0;
        while (j < n && (j == i || (in + request(j) <= room && out + reply(j) <= room))) {
            in += request(j);
            out += reply(j);
            j++;
        }
        WD_TRY(halving(call, i, j));
        i = j;
    } while (i < n);
    return WARPDP_OK;
}

// A range's ragged output: pair i's values start at offsets[i] of the caller's buffers; the
// range's call writes offsets[i ..] from 0, which this turns back into the whole batch's.
void shift(int64_t *offsets, int64_t i, int64_t j, int64_t by)
{
    for (int64_t k = i; k <= j; k++)
        offsets[k] += by;
}

// The pairs [i, j) of seq pairs, with their own offsets.
struct SeqRange {
    std::vector<int64_t> query_offsets, target_offsets;
    warpdp_seq_pairs pairs;

    SeqRange(const warpdp_seq_pairs *p, int64_t i, int64_t j) : pairs(*p)
    {
        const int64_t *q = p->query_offsets, *t = p->target_offsets;
        pairs.query_bases = p->query_bases + q[i];
        pairs.target_bases = p->target_bases + t[i];
        pairs.query_total = q[j] - q[i];
        pairs.target_total = t[j] - t[i];
        pairs.query_offsets = rebased(q, i, j, query_offsets);
        pairs.target_offsets = rebased(t, i, j, target_offsets);
        pairs.n_pairs = j - i;
    }
};

bool seq_offsets_ok(const warpdp_seq_pairs *p)
{
    return offsets_ok(p->query_offsets, p->n_pairs, p->query_total) &&
           offsets_ok(p->target_offsets, p->n_pairs, p->target_total);
}

}  // namespace

int wd_client_xdrop(wd_client *c, const warpdp_xdrop_pairs *p, const warpdp_xdrop_params *params,
                    const warpdp_xdrop_results *r)
{
    const int64_t *h = p->h_offsets, *v = p->v_offsets;
    if (!offsets_ok(h, p->n_pairs, p->h_total) || !offsets_ok(v, p->n_pairs, p->v_total))
        return wd::xdrop_rpc(c, p, params, r);
    std::vector<int64_t> h_offsets, v_offsets;
    auto call = [&](int64_t i, int64_t j) -> int {
        warpdp_xdrop_pairs q = *p;
        q.h_bases = p->h_bases + h[i];
        q.v_bases = p->v_bases + v[i];
        q.h_total = h[j] - h[i];
        q.v_total = v[j] - v[i];
        q.h_offsets = rebased(h, i, j, h_offsets);
        q.v_offsets = rebased(v, i, j, v_offsets);
        q.h_pos = p->h_pos + i;
        q.v_pos = p->v_pos + i;
        q.n_pairs = j - i;
        const warpdp_xdrop_results s = {r->score + i, r->begin_h + i, r->end_h + i, r->begin_v + i, r->end_v + i,
                                        r->cells != nullptr ? r->cells + i : nullptr};
        return wd::xdrop_rpc(c, &q, params, &s);
    };
    // In: bases, two offsets and two positions; out: six int64 columns.
    return in_chunks(
        c, p->n_pairs, [&](int64_t i) { return h[i + 1] - h[i] + v[i + 1] - v[i] + 32; },
        [](int64_t) { return int64_t(48); }, call);
}

int wd_client_seedext(wd_client *c, const warpdp_seedext_pairs *p, const warpdp_seedext_params *params,
                      warpdp_seedext_result *results)
{
    const int64_t *q = p->query_offsets, *t = p->target_offsets;
    if (!offsets_ok(q, p->n_pairs, p->query_total) || !offsets_ok(t, p->n_pairs, p->target_total))
        return wd::seedext_rpc(c, p, params, results);
    std::vector<int64_t> q_offsets, t_offsets;
    auto call = [&](int64_t i, int64_t j) -> int {
        warpdp_seedext_pairs range = *p;
        range.query = p->query + q[i];
        range.target = p->target + t[i];
        range.query_total = q[j] - q[i];
        range.target_total = t[j] - t[i];
        range.query_offsets = rebased(q, i, j, q_offsets);
        range.target_offsets = rebased(t, i, j, t_offsets);
        range.h0 = p->h0 + i;
        range.n_pairs = j - i;
        return wd::seedext_rpc(c, &range, params, results + i);
    };
    // In: bases, two offsets and h0 (int64 on the wire); out: six int64 columns.
    return in_chunks(
        c, p->n_pairs, [&](int64_t i) { return q[i + 1] - q[i] + t[i + 1] - t[i] + 24; },
        [](int64_t) { return int64_t(48); }, call);
}

int wd_client_pairhmm(wd_client *c, const warpdp_pairhmm_batches *b, int use_double, double *out, int64_t n_out)
{
    const int64_t *reads = b->batch_reads, *haps = b->batch_haps, *ro = b->read_offsets, *ho = b->hap_offsets;
    if (!offsets_ok(reads, b->n_batches, b->n_reads) || !offsets_ok(haps, b->n_batches, b->n_haps) ||
        !offsets_ok(ro, b->n_reads, b->n_read_bases) || !offsets_ok(ho, b->n_haps, b->n_hap_bases))
        return wd::pairhmm_rpc(c, b, use_double, out, n_out);
    // Batch k's first likelihood (results are batch after batch).
    std::vector<int64_t> first(size_t(b->n_batches) + 1, 0);
    for (int64_t k = 0; k < b->n_batches; k++)
        first[size_t(k) + 1] = first[size_t(k)] + (reads[k + 1] - reads[k]) * (haps[k + 1] - haps[k]);
    if (first.back() != n_out)  // the server's check words what is wrong
        return wd::pairhmm_rpc(c, b, use_double, out, n_out);
    std::vector<int64_t> read_offsets, hap_offsets, batch_reads, batch_haps;
    auto call = [&](int64_t i, int64_t j) -> int {
        warpdp_pairhmm_batches range = *b;
        const int64_t r0 = reads[i], r1 = reads[j], h0 = haps[i], h1 = haps[j], base = ro[r0];
        range.read_bases = b->read_bases + base;
        range.read_quals = b->read_quals + base;
        range.read_ins = b->read_ins + base;
        range.read_del = b->read_del + base;
        range.read_gcp = b->read_gcp + base;
        range.n_read_bases = ro[r1] - base;
        range.read_offsets = rebased(ro, r0, r1, read_offsets);
        range.n_reads = r1 - r0;
        range.hap_bases = b->hap_bases + ho[h0];
        range.n_hap_bases = ho[h1] - ho[h0];
        range.hap_offsets = rebased(ho, h0, h1, hap_offsets);
        range.n_haps = h1 - h0;
        range.batch_reads = rebased(reads, i, j, batch_reads);
        range.batch_haps = rebased(haps, i, j, batch_haps);
        range.n_batches = j - i;
        return wd::pairhmm_rpc(c, &range, use_double, out + first[size_t(i)], first[size_t(j)] - first[size_t(i)]);
    };
    // In: a batch's reads (five bytes per base and an offset each) and haplotypes; out: a double per pair.
    return in_chunks(
        c, b->n_batches,
        [&](int64_t k) {
            return 5 * (ro[reads[k + 1]] - ro[reads[k]]) + 8 * (reads[k + 1] - reads[k]) +
                   (ho[haps[k + 1]] - ho[haps[k]]) + 8 * (haps[k + 1] - haps[k]) + 16;
        },
        [&](int64_t k) { return 8 * (first[size_t(k) + 1] - first[size_t(k)]); }, call);
}

int wd_client_align(wd_client *c, const warpdp_seq_pairs *p, const warpdp_align_params *a,
                    const warpdp_align_results *r)
{
    if (!seq_offsets_ok(p))
        return wd::align_rpc(c, p, a, r);
    const int64_t *q = p->query_offsets, *t = p->target_offsets;
    int64_t ops = 0;  // the CIGAR ops of the ranges done
    auto call = [&](int64_t i, int64_t j) -> int {
        const SeqRange range(p, i, j);
        warpdp_align_results s = {r->score + i,        r->query_begin + i, r->query_end + i, r->target_begin + i,
                                  r->target_end + i,   r->cigar_ops,       r->cigar_capacity, r->cigar_offsets};
        if (a->cigar) {
            s.cigar_ops = r->cigar_ops + ops;
            s.cigar_capacity = r->cigar_capacity - ops;
            s.cigar_offsets = r->cigar_offsets + i;
        }
        WD_TRY(wd::align_rpc(c, &range.pairs, a, &s));
        if (a->cigar) {
            shift(r->cigar_offsets, i, j, ops);
            ops = r->cigar_offsets[j];
        }
        return WARPDP_OK;
    };
    // In: bases and two offsets; out: five columns, and a CIGAR of at most an op per base and two more.
    return in_chunks(
        c, p->n_pairs, [&](int64_t i) { return q[i + 1] - q[i] + t[i + 1] - t[i] + 16; },
        [&](int64_t i) { return 48 + (a->cigar ? 4 * (q[i + 1] - q[i] + t[i + 1] - t[i] + 2) : 0); }, call);
}

int wd_client_edit(wd_client *c, const warpdp_seq_pairs *p, const warpdp_edit_params *e,
                   const warpdp_edit_results *r)
{
    if (!seq_offsets_ok(p))
        return wd::edit_rpc(c, p, e, r);
    const int64_t *q = p->query_offsets, *t = p->target_offsets;
    const bool locations = e->task >= WARPDP_EDIT_LOCATIONS, path = e->task == WARPDP_EDIT_PATH;
    int64_t found = 0, ops = 0;  // the locations and CIGAR ops of the ranges done
    auto call = [&](int64_t i, int64_t j) -> int {
        const SeqRange range(p, i, j);
        warpdp_edit_results s = *r;
        s.distance = r->distance + i;
        s.target_begin = r->target_begin + i;
        s.target_end = r->target_end + i;
        if (locations) {
            s.loc_begin = r->loc_begin + found;
            s.loc_end = r->loc_end + found;
            s.loc_capacity = r->loc_capacity - found;
            s.loc_offsets = r->loc_offsets + i;
        }
        if (path) {
            s.cigar_ops = r->cigar_ops + ops;
            s.cigar_capacity = r->cigar_capacity - ops;
            s.cigar_offsets = r->cigar_offsets + i;
        }
        WD_TRY(wd::edit_rpc(c, &range.pairs, e, &s));
        if (locations) {
            shift(r->loc_offsets, i, j, found);
            found = r->loc_offsets[j];
        }
        if (path) {
            shift(r->cigar_offsets, i, j, ops);
            ops = r->cigar_offsets[j];
        }
        return WARPDP_OK;
    };
    // In: bases and two offsets; out (the server's bound): three columns, a location per target
    // base and one more (two int64 and an offset each), an op per base.
    return in_chunks(
        c, p->n_pairs, [&](int64_t i) { return q[i + 1] - q[i] + t[i + 1] - t[i] + 16; },
        [&](int64_t i) { return 24 + 4 * (q[i + 1] - q[i] + t[i + 1] - t[i]) + 16 * (t[i + 1] - t[i] + 1) + 16; },
        call);
}
