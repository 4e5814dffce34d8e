// Writes the X-drop GPU launcher's plans (src/gpu/xdrop_plan.cu: chunks, bins, order, launches,
// layout) for packed pairs, so that compare_xdrop_plan.py can check them against the Python
// launcher's (warpdp/kernels/xdrop.py). No GPU needed: the device's residency comes from params.
//   warpdp_xdrop_plan DIR
// DIR holds the pairs as warpdp_harness reads them (h_bases.bin, ...) and params.txt: k x match
// mismatch gap report, narrow_warps wide0 wide1 wide2, sm_count shared_per_sm (extend_shared_kernel
// blocks: max(1, shared_per_sm / (bytes + 1024)) per SM), chunk_pairs chunk_bytes scratch_limit.
// Writes DIR/plan.txt (one "chunk", "layout" and "launch" line each, see below) and
// DIR/order_<chunk>.bin (int32).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/gpu/xdrop_plan.h"

namespace {

std::map<std::string, long long> read_params(const std::string &dir)
{
    std::ifstream file(dir + "/params.txt");
    std::map<std::string, long long> params;
    std::string name;
    long long value;
    while (file >> name >> value)
        params[name] = value;
    return params;
}

template <typename T> std::vector<T> load(const std::string &dir, const std::string &name)
{
    std::ifstream file(dir + "/" + name + ".bin", std::ios::binary);
    if (!file)
        throw std::runtime_error("cannot open " + dir + "/" + name + ".bin");
    const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::vector<T> values(bytes.size() / sizeof(T) + 1);
    bytes.copy(reinterpret_cast<char *>(values.data()), bytes.size());
    values.resize(bytes.size() / sizeof(T));
    return values;
}

const char *kernel_name(wd_xdrop::Kernel kernel)
{
    switch (kernel) {
    case wd_xdrop::Kernel::narrow_int32:
        return "narrow_int32";
    case wd_xdrop::Kernel::narrow_int64:
        return "narrow_int64";
    case wd_xdrop::Kernel::wide:
        return "wide";
    case wd_xdrop::Kernel::shared:
        return "shared";
    }
    return "?";
}

void write_plan(std::FILE *out, const wd_xdrop::ChunkPlan &plan)
{
    const wd_xdrop::Layout &at = plan.at;
    std::fprintf(out, "chunk %lld %lld %lld %lld %lld %lld\n", (long long)plan.start, (long long)plan.stop,
                 (long long)plan.h0, (long long)plan.h1, (long long)plan.v0, (long long)plan.v1);
    std::fprintf(out, "layout %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu\n", at.params, at.counters,
                 at.h_bases, at.v_bases, at.h_offsets, at.v_offsets, at.h_pos, at.v_pos, at.order, at.upload_bytes,
                 at.out, at.out_bytes, at.scratch, at.device_bytes);
    for (const wd_xdrop::Launch &l : plan.launches)
        std::fprintf(out, "launch %s %d %lld %lld %lld %lld %d %d %zu\n", kernel_name(l.kernel), l.wide_row,
                     (long long)l.first, (long long)l.count, (long long)l.stride, (long long)l.grid, l.threads,
                     l.index, l.shared_bytes);
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: warpdp_xdrop_plan DIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    try {
        auto p = read_params(dir);
        const auto h_bases = load<uint8_t>(dir, "h_bases"), v_bases = load<uint8_t>(dir, "v_bases");
        const auto h_offsets = load<int64_t>(dir, "h_offsets"), v_offsets = load<int64_t>(dir, "v_offsets");
        const auto h_pos = load<int64_t>(dir, "h_pos"), v_pos = load<int64_t>(dir, "v_pos");
        const warpdp_xdrop_pairs pairs = {h_bases.data(), v_bases.data(), int64_t(h_bases.size()),
                                          int64_t(v_bases.size()), h_offsets.data(), v_offsets.data(),
                                          h_pos.data(), v_pos.data(), int64_t(h_pos.size())};
        const wd_xdrop::Scores scores = {p["k"], p["match"], p["mismatch"], p["gap"], p["x"], p["report"] != 0};
        wd_xdrop::Residency residency;
        residency.narrow_warps = p["narrow_warps"];
        for (int row = 0; row < wd_xdrop::N_WIDE; row++)
            residency.wide_blocks[row] = p["wide" + std::to_string(row)];
        const long long sm_count = p["sm_count"], shared_per_sm = p["shared_per_sm"];
        residency.shared_blocks = [=](size_t bytes) {
            const long long per_sm = shared_per_sm / (long long)(bytes + 1024);
            return int64_t(per_sm > 1 ? per_sm : 1) * sm_count;
        };
        std::FILE *out = std::fopen((dir + "/plan.txt").c_str(), "w");
        if (out == nullptr)
            throw std::runtime_error("cannot write " + dir + "/plan.txt");
        const auto chunks = wd_xdrop::split_chunks(pairs, p["chunk_pairs"], p["chunk_bytes"]);
        for (std::size_t c = 0; c < chunks.size(); c++) {
            wd_xdrop::ChunkPlan plan;
            wd_xdrop::plan_chunk(pairs, chunks[c].first, chunks[c].second, scores, residency, p["scratch_limit"], plan);
            write_plan(out, plan);
            std::ofstream order(dir + "/order_" + std::to_string(c) + ".bin", std::ios::binary);
            order.write(reinterpret_cast<const char *>(plan.order.data()), std::streamsize(4 * plan.order.size()));
        }
        std::fclose(out);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "warpdp_xdrop_plan: %s\n", e.what());
        return 2;
    }
    return 0;
}
