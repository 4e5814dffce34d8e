// LOGAN's extendSeedL and SeqAn-like single-pair helpers on warpdp_xdrop (see warpdp_logan.h).
#include "warpdp_logan.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "warpdp.h"

namespace {

// One process-wide in-process CPU handle (handles are thread-safe), opened on first use.
warpdp_handle *cpu_handle()
{
    static warpdp_handle *const handle = [] {
        warpdp_handle *h = nullptr;
        if (warpdp_open_local(nullptr, &h) != WARPDP_OK)
            throw std::runtime_error(warpdp_last_error());
        return h;
    }();
    return handle;
}

// GPU handles on devices 0, 1, ..., opened as calls ask for them and kept for the process.
class GpuHandles {
  public:
    // Handles on the first `wanted` devices (fewer where fewer open); none when device 0 does not
    // open, with the reason in *why.
    std::vector<warpdp_handle *> first(int wanted, std::string *why)
    {
        std::lock_guard<std::mutex> hold(lock_);
        while (int(handles_.size()) < wanted && !exhausted_) {
            const warpdp_gpu_options options = {int(handles_.size())};
            warpdp_handle *h = nullptr;
            if (warpdp_open_gpu(&options, &h) == WARPDP_OK) {
                handles_.push_back(h);
            } else {
                exhausted_ = true; // no device beyond this one either
                if (handles_.empty())
                    failure_ = warpdp_last_error();
            }
        }
        *why = failure_;
        std::vector<warpdp_handle *> chosen = handles_;
        chosen.resize(std::min(chosen.size(), std::size_t(wanted)));
        return chosen;
    }

  private:
    std::mutex lock_;
    std::vector<warpdp_handle *> handles_;
    bool exhausted_ = false;
    std::string failure_;
};

GpuHandles &gpu_handles()
{
    static GpuHandles *const handles = new GpuHandles; // kept to the process's end
    return *handles;
}

const char *const BACKEND_VARIABLE = "WARPDP_LOGAN_BACKEND";

// The handles extendSeedL runs on, by $WARPDP_LOGAN_BACKEND: GPU handles on up to ngpus devices
// (gpu; auto when at least one opens), else the CPU handle (cpu; auto otherwise).
std::vector<warpdp_handle *> logan_handles(int ngpus)
{
    const char *value = std::getenv(BACKEND_VARIABLE);
    const std::string backend = value == nullptr || *value == '\0' ? "auto" : value;
    if (backend != "auto" && backend != "cpu" && backend != "gpu")
        throw std::invalid_argument(std::string("warpdp_logan: ") + BACKEND_VARIABLE +
                                    " must be auto, cpu or gpu, not '" + backend + "'");
    if (backend != "cpu") {
        std::string why;
        std::vector<warpdp_handle *> gpus = gpu_handles().first(ngpus < 1 ? 1 : ngpus, &why);
        if (!gpus.empty())
            return gpus;
        if (backend == "gpu")
            throw std::runtime_error(std::string("warpdp_logan: ") + BACKEND_VARIABLE +
                                     "=gpu but no GPU handle opens: " + why);
    }
    return {cpu_handle()};
}

// pairs[from, to) of a packed batch as a batch of its own (offsets from 0).
struct Range {
    std::vector<int64_t> h_offsets, v_offsets;
    warpdp_xdrop_pairs pairs;
    warpdp_xdrop_results results;
};

Range select(const warpdp_xdrop_pairs &all, const warpdp_xdrop_results &out, std::size_t from, std::size_t to)
{
    Range r;
    for (std::size_t i = from; i <= to; i++) {
        r.h_offsets.push_back(all.h_offsets[i] - all.h_offsets[from]);
        r.v_offsets.push_back(all.v_offsets[i] - all.v_offsets[from]);
    }
    r.pairs = {all.h_bases + all.h_offsets[from], all.v_bases + all.v_offsets[from], r.h_offsets.back(),
               r.v_offsets.back(), r.h_offsets.data(), r.v_offsets.data(), all.h_pos + from, all.v_pos + from,
               int64_t(to - from)};
    r.results = {out.score + from, out.begin_h + from, out.end_h + from, out.begin_v + from, out.end_v + from, nullptr};
    return r;
}

// A failed call's exception: std::invalid_argument for bad input, std::runtime_error for anything
// else (out of memory, a GPU failure).
[[noreturn]] void throw_failure(int status, const std::string &message)
{
    if (status == WARPDP_ERR_INVALID_ARGUMENT)
        throw std::invalid_argument(message);
    throw std::runtime_error(message);
}

// Runs the batch on the handles: one call, or (several GPUs) consecutive ranges of pairs, one per
// handle, each on a thread of its own. Throws (throw_failure) with the (first) failure's message.
void run_xdrop(const std::vector<warpdp_handle *> &handles, const warpdp_xdrop_pairs &pairs,
               const warpdp_xdrop_params &params, const warpdp_xdrop_results &results)
{
    const std::size_t n = std::size_t(pairs.n_pairs), parts = std::min(handles.size(), std::max<std::size_t>(n, 1));
    if (parts == 1) {
        const int status = warpdp_xdrop(handles[0], &pairs, &params, &results);
        if (status != WARPDP_OK)
            throw_failure(status, std::string("warpdp_logan: ") + warpdp_last_error());
        return;
    }
    std::vector<Range> ranges;
    for (std::size_t part = 0; part < parts; part++)
        ranges.push_back(select(pairs, results, n * part / parts, n * (part + 1) / parts));
    std::vector<std::string> errors(parts);
    std::vector<int> statuses(parts, WARPDP_OK);
    const auto run = [&](std::size_t part) {
        const Range &r = ranges[part];
        statuses[part] = warpdp_xdrop(handles[part], &r.pairs, &params, &r.results);
        if (statuses[part] != WARPDP_OK)
            errors[part] = warpdp_last_error(); // the message of this thread's call
    };
    std::vector<std::thread> threads;
    threads.reserve(parts);
    try {
        for (std::size_t part = 1; part < parts; part++)
            threads.emplace_back(run, part);
    } catch (...) { // no thread to start: the ones started are joined before the error goes up
        for (std::thread &t : threads)
            t.join();
        throw;
    }
    run(0);
    for (std::thread &t : threads)
        t.join();
    for (std::size_t part = 0; part < parts; part++)
        if (statuses[part] != WARPDP_OK)
            throw_failure(statuses[part], "warpdp_logan: alignments " + std::to_string(n * part / parts) + " to " +
                                              std::to_string(n * (part + 1) / parts - 1) + " (GPU " +
                                              std::to_string(part) + "; pairs counted from the first of them): " +
                                              errors[part]);
}

struct Extended {
    SeedL seed;
    int64_t score;  // left + right + match * seed length
};

// Extends seed i of `seeds` over (H, V) = (h(i), v(i)) in its direction. Each pair is handed to
// warpdp with a seed of one base: the seed's other bases are never compared, so
// H' = H[.. begin_h + 1) + H[end_h ..) (both directions), H[.. begin_h + 1) (left only) or
// H[end_h - 1 ..) (right only), and the same for V, give the same extensions for any seed length.
template <typename GetH, typename GetV, typename GetDirection>
std::vector<Extended> extend_all(const SeedL *seeds, std::size_t n, GetH h, GetV v, GetDirection direction,
                                 const ScoringSchemeL &scoring, int xdrop,
                                 const std::vector<warpdp_handle *> &handles = {cpu_handle()})
{
    if (scoring.gap_open_score != scoring.gap_extend_score)
        throw std::invalid_argument("warpdp_logan: only linear gaps (gap_open_score == gap_extend_score)");
    std::string h_bases, v_bases;
    std::vector<int64_t> h_offsets{0}, v_offsets{0}, h_pos(n), v_pos(n);
    for (std::size_t i = 0; i < n; i++) {
        const SeedL &s = seeds[i];
        const std::string &sh = h(i), &sv = v(i);
        const long length = long(s.endPositionH) - s.beginPositionH;
        if (length < 1 || long(s.endPositionV) - s.beginPositionV != length || s.beginPositionH < 0 ||
            s.beginPositionV < 0 || std::size_t(s.endPositionH) > sh.size() || std::size_t(s.endPositionV) > sv.size())
            throw std::invalid_argument("warpdp_logan: seed " + std::to_string(i) +
                                        " is empty, not on one diagonal, or outside its sequences");
        const ExtensionDirectionL d = direction(i);
        if (d < EXTEND_LEFTL || d > EXTEND_BOTHL)
            throw std::invalid_argument("warpdp_logan: direction must be EXTEND_LEFTL, EXTEND_RIGHTL or EXTEND_BOTHL");
        const bool left = d != EXTEND_RIGHTL, right = d != EXTEND_LEFTL;
        if (left) {
            h_bases.append(sh, 0, std::size_t(s.beginPositionH) + 1);
            v_bases.append(sv, 0, std::size_t(s.beginPositionV) + 1);
        } else {
            h_bases.push_back(sh[std::size_t(s.endPositionH) - 1]);
            v_bases.push_back(sv[std::size_t(s.endPositionV) - 1]);
        }
        if (right) {
            h_bases.append(sh, std::size_t(s.endPositionH), std::string::npos);
            v_bases.append(sv, std::size_t(s.endPositionV), std::string::npos);
        }
        h_pos[i] = left ? s.beginPositionH : 0;
        v_pos[i] = left ? s.beginPositionV : 0;
        h_offsets.push_back(int64_t(h_bases.size()));
        v_offsets.push_back(int64_t(v_bases.size()));
    }
    std::vector<int64_t> score(n), begin_h(n), end_h(n), begin_v(n), end_v(n);
    const warpdp_xdrop_pairs pairs = {reinterpret_cast<const uint8_t *>(h_bases.data()),
                                      reinterpret_cast<const uint8_t *>(v_bases.data()),
                                      int64_t(h_bases.size()), int64_t(v_bases.size()), h_offsets.data(),
                                      v_offsets.data(), h_pos.data(), v_pos.data(), int64_t(n)};
    warpdp_xdrop_params params = warpdp_xdrop_params_default(1, xdrop);
    params.match = scoring.match_score;
    params.mismatch = scoring.mismatch_score;
    params.gap = scoring.gap_extend_score;
    const warpdp_xdrop_results results = {score.data(), begin_h.data(), end_h.data(),
                                          begin_v.data(), end_v.data(), nullptr};
    run_xdrop(handles, pairs, params, results);
    std::vector<Extended> out(n);
    for (std::size_t i = 0; i < n; i++) {
        const SeedL &s = seeds[i];
        const bool left = direction(i) != EXTEND_RIGHTL;
        const int length = s.endPositionH - s.beginPositionH;
        // Back to the caller's coordinates: H' lost the seed's inner bases (and, right only, the prefix).
        const int shift_h = left ? length - 1 : s.endPositionH - 1, shift_v = left ? length - 1 : s.endPositionV - 1;
        SeedL e = s;
        e.beginPositionH = left ? int(begin_h[i]) : s.beginPositionH;
        e.beginPositionV = left ? int(begin_v[i]) : s.beginPositionV;
        e.endPositionH = int(end_h[i]) + shift_h;
        e.endPositionV = int(end_v[i]) + shift_v;
        e.beginDiagonal = e.beginPositionH - e.beginPositionV;
        e.endDiagonal = e.endPositionH - e.endPositionV;
        e.lowerDiagonal = e.beginDiagonal < e.endDiagonal ? e.beginDiagonal : e.endDiagonal;
        e.upperDiagonal = e.beginDiagonal < e.endDiagonal ? e.endDiagonal : e.beginDiagonal;
        out[i] = {e, score[i] + int64_t(length - 1) * scoring.match_score};
    }
    return out;
}

}  // namespace

void extendSeedL(std::vector<SeedL> &seeds, ExtensionDirectionL direction, std::vector<std::string> &target,
                 std::vector<std::string> &query, std::vector<ScoringSchemeL> &penalties, int const &XDrop,
                 int const &kmer_length, int *res, int numAlignments, int ngpus, int n_threads)
{
    (void)n_threads;
    if (numAlignments < 0 || std::size_t(numAlignments) > seeds.size() || std::size_t(numAlignments) > target.size() ||
        std::size_t(numAlignments) > query.size())
        throw std::invalid_argument("warpdp_logan: numAlignments must be within 0 and the sizes of seeds, target and query");
    if (penalties.empty())
        throw std::invalid_argument("warpdp_logan: penalties is empty");
    if (numAlignments > 0 && res == nullptr)
        throw std::invalid_argument("warpdp_logan: res is NULL");
    const ScoringSchemeL &scoring = penalties[0];
    if (scoring.gap_extend_score >= 0 || scoring.gap_open_score >= 0)
        throw std::invalid_argument("warpdp_logan: gap penalties must be negative, as LOGAN requires");
    const std::size_t n = std::size_t(numAlignments);
    const std::vector<Extended> done = extend_all(
        seeds.data(), n, [&](std::size_t i) -> const std::string & { return target[i]; },
        [&](std::size_t i) -> const std::string & { return query[i]; }, [&](std::size_t) { return direction; },
        scoring, XDrop, logan_handles(ngpus));
    for (std::size_t i = 0; i < n; i++) {
        // LOGAN's total: the extensions plus kmer_length (whatever the match score).
        const int64_t length = seeds[i].endPositionH - seeds[i].beginPositionH;
        res[i] = int(done[i].score - length * scoring.match_score + kmer_length);
        const int score_kept = seeds[i].score;
        seeds[i] = done[i].seed;
        seeds[i].score = score_kept;
    }
}

namespace warpdp {

int extendSeed(SeedL &seed, const std::string &seqH, const std::string &seqV, ExtensionDirectionL direction,
               const ScoringSchemeL &scoring, int xdrop)
{
    const std::vector<Extended> done = extend_all(
        &seed, 1, [&](std::size_t) -> const std::string & { return seqH; },
        [&](std::size_t) -> const std::string & { return seqV; }, [&](std::size_t) { return direction; }, scoring,
        xdrop);
    seed = done[0].seed;
    seed.score = int(done[0].score);
    return int(done[0].score);
}

XdropBatcher::XdropBatcher(const ScoringSchemeL &scoring, int xdrop, std::size_t batch_size)
    : scoring_(scoring), xdrop_(xdrop), batch_size_(batch_size == 0 ? 1 : batch_size)
{
}

std::size_t XdropBatcher::add(const SeedL &seed, const std::string &seqH, const std::string &seqV,
                              ExtensionDirectionL direction)
{
    seeds_.push_back(seed);
    h_.push_back(seqH);
    v_.push_back(seqV);
    directions_.push_back(direction);
    const std::size_t ticket = results_.size() + seeds_.size() - 1;  // results come in queue order
    if (seeds_.size() >= batch_size_)
        flush();
    return ticket;
}

void XdropBatcher::flush()
{
    if (seeds_.empty())
        return;
    const std::vector<Extended> done = extend_all(
        seeds_.data(), seeds_.size(), [&](std::size_t i) -> const std::string & { return h_[i]; },
        [&](std::size_t i) -> const std::string & { return v_[i]; }, [&](std::size_t i) { return directions_[i]; },
        scoring_, xdrop_);
    for (const Extended &e : done) {
        XdropExtension r{e.seed, int(e.score)};
        r.seed.score = r.score;
        results_.push_back(r);
    }
    seeds_.clear();
    h_.clear();
    v_.clear();
    directions_.clear();
}

const XdropExtension &XdropBatcher::result(std::size_t ticket) const
{
    if (ticket >= results_.size())
        throw std::out_of_range("warpdp::XdropBatcher: ticket " + std::to_string(ticket) + " has not run (flush())");
    return results_[ticket];
}

}  // namespace warpdp
