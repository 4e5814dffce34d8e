// Runs warpdp_logan.h's entry points on a LOGAN demo file, for compare_logan.py:
//   warpdp_test_logan MODE INPUT.tsv K X
// MODE: logan (extendSeedL on the whole file), logan2 (the same with ngpus 2), bella (the same as BELLA calls it: 10 arguments,
// results in loganResult), seed (warpdp::extendSeed per pair), batcher
// (warpdp::XdropBatcher, batches of 7), directions (left-only and right-only extensions must
// compose to the two-sided one), errors (bad input throws std::invalid_argument), gpu (exit 0
// when a GPU handle opens here, 77 when not; INPUT, K, X unused).
// Prints "score beginH endH beginV endV" per pair (strand c handled as LOGAN's demo does).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "warpdp.h"
#include "warpdp_logan.h"

namespace {

struct Input {
    std::vector<std::string> h, v;
    std::vector<SeedL> seeds;
};

Input read_input(const char *path, int k)
{
    Input in;
    std::ifstream file(path);
    std::string line;
    while (std::getline(file, line)) {
        std::istringstream fields(line);
        std::string seq_v, seq_h, strand;
        int pos_v, pos_h;
        if (!(fields >> seq_v >> pos_v >> seq_h >> pos_h >> strand))
            continue;
        if (strand == "c") {  // LOGAN's demo: complement H (not reversed), mirror the seed
            for (char &c : seq_h)
                c = c == 'A' ? 'T' : c == 'T' ? 'A' : c == 'C' ? 'G' : c == 'G' ? 'C' : c;
            pos_h = int(seq_h.size()) - pos_h - k;
        }
        in.h.push_back(seq_h);
        in.v.push_back(seq_v);
        in.seeds.emplace_back(pos_h, pos_v, k);
    }
    return in;
}

void print(int score, const SeedL &s)
{
    std::printf("%d %d %d %d %d\n", score, s.beginPositionH, s.endPositionH, s.beginPositionV, s.endPositionV);
}

int check_directions(const Input &in, int k, int x, const ScoringSchemeL &scoring)
{
    int bad = 0;
    for (std::size_t i = 0; i < in.seeds.size(); i++) {
        SeedL both = in.seeds[i], left = in.seeds[i], right = in.seeds[i];
        const int s_both = warpdp::extendSeed(both, in.h[i], in.v[i], EXTEND_BOTHL, scoring, x);
        const int s_left = warpdp::extendSeed(left, in.h[i], in.v[i], EXTEND_LEFTL, scoring, x);
        const int s_right = warpdp::extendSeed(right, in.h[i], in.v[i], EXTEND_RIGHTL, scoring, x);
        if (s_left + s_right - k != s_both || left.beginPositionH != both.beginPositionH ||
            left.endPositionH != in.seeds[i].endPositionH || right.endPositionV != both.endPositionV ||
            right.beginPositionV != in.seeds[i].beginPositionV) {
            std::fprintf(stderr, "pair %zu: one-sided extensions do not compose\n", i);
            bad++;
        }
    }
    return bad;
}

template <typename F>
int expect_invalid(const char *what, F call)
{
    try {
        call();
    } catch (const std::invalid_argument &e) {
        return 0;
    }
    std::fprintf(stderr, "no std::invalid_argument for %s\n", what);
    return 1;
}

int check_errors(Input in, int k, int x)
{
    std::vector<ScoringSchemeL> scoring{ScoringSchemeL(1, -1, -1, -1)};
    std::vector<int> res(in.seeds.size());
    const int n = int(in.seeds.size());
    int bad = 0;
    bad += expect_invalid("too many alignments", [&] {
        extendSeedL(in.seeds, EXTEND_BOTHL, in.h, in.v, scoring, x, k, res.data(), n + 1, 1, 128);
    });
    bad += expect_invalid("res NULL", [&] {
        extendSeedL(in.seeds, EXTEND_BOTHL, in.h, in.v, scoring, x, k, nullptr, n, 1, 128);
    });
    std::vector<ScoringSchemeL> positive{ScoringSchemeL(1, -1, 1, 1)};
    bad += expect_invalid("positive gap", [&] {
        extendSeedL(in.seeds, EXTEND_BOTHL, in.h, in.v, positive, x, k, res.data(), n, 1, 128);
    });
    std::vector<SeedL> outside = in.seeds;
    outside[0] = SeedL(int(in.h[0].size()) - 2, 0, k);
    bad += expect_invalid("seed outside H", [&] {
        extendSeedL(outside, EXTEND_BOTHL, in.h, in.v, scoring, x, k, res.data(), n, 1, 128);
    });
    std::vector<std::string> not_dna = in.h;
    not_dna[0][0] = '#';
    bad += expect_invalid("a byte other than ACGTN", [&] {
        extendSeedL(in.seeds, EXTEND_BOTHL, not_dna, in.v, scoring, x, k, res.data(), n, 1, 128);
    });
    bad += expect_invalid("negative X", [&] {
        SeedL s = in.seeds[0];
        warpdp::extendSeed(s, in.h[0], in.v[0], EXTEND_BOTHL, scoring[0], -1);
    });
    bad += expect_invalid("EXTEND_NONEL", [&] {
        SeedL s = in.seeds[0];
        warpdp::extendSeed(s, in.h[0], in.v[0], EXTEND_NONEL, scoring[0], x);
    });
    return bad;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 5) {
        std::fprintf(stderr, "usage: warpdp_test_logan logan|logan2|bella|seed|batcher|directions|errors|gpu INPUT K X\n");
        return 2;
    }
    const std::string mode = argv[1];
    const int k = std::stoi(argv[3]), x = std::stoi(argv[4]);
    Input in = read_input(argv[2], k);
    const ScoringSchemeL scoring(1, -1, -1, -1);  // BELLA's
    try {
        if (mode == "gpu") {
            warpdp_handle *h = nullptr;
            const int status = warpdp_open_gpu(nullptr, &h);
            warpdp_close(h);
            if (status != WARPDP_OK)
                std::fprintf(stderr, "%s: %s\n", warpdp_status_name(status), warpdp_last_error());
            return status == WARPDP_OK ? 0 : 77;
        } else if (mode == "logan" || mode == "logan2") {
            std::vector<ScoringSchemeL> penalties{scoring};
            std::vector<int> res(in.seeds.size());
            const int ngpus = mode == "logan2" ? 2 : 1;
            extendSeedL(in.seeds, EXTEND_BOTHL, in.h, in.v, penalties, x, k, res.data(), int(in.seeds.size()), ngpus,
                        128);
            for (std::size_t i = 0; i < in.seeds.size(); i++)
                print(res[i], in.seeds[i]);
        } else if (mode == "bella") {
            // As BELLA's GPU path (include/align.hpp, alignLogan) calls it: LOGAN's 10-argument
            // form (no n_threads), the results kept in loganResult records.
            std::vector<ScoringSchemeL> penalties{scoring};
            std::vector<int> res(in.seeds.size());
            extendSeedL(in.seeds, EXTEND_BOTHL, in.h, in.v, penalties, x, k, res.data(), int(in.seeds.size()), 1);
            std::vector<loganResult> kept(in.seeds.size());
            for (std::size_t i = 0; i < in.seeds.size(); i++) {
                kept[i].score = res[i];
                kept[i].seed = in.seeds[i];
            }
            for (const loganResult &r : kept)
                print(r.score, r.seed);
        } else if (mode == "seed") {
            for (std::size_t i = 0; i < in.seeds.size(); i++) {
                SeedL s = in.seeds[i];
                const int score = warpdp::extendSeed(s, in.h[i], in.v[i], EXTEND_BOTHL, scoring, x);
                print(score, s);
            }
        } else if (mode == "batcher") {
            warpdp::XdropBatcher batcher(scoring, x, 7);
            std::vector<std::size_t> tickets;
            for (std::size_t i = 0; i < in.seeds.size(); i++)
                tickets.push_back(batcher.add(in.seeds[i], in.h[i], in.v[i]));
            batcher.flush();
            for (std::size_t t : tickets)
                print(batcher.result(t).score, batcher.result(t).seed);
        } else if (mode == "directions") {
            return check_directions(in, k, x, scoring) == 0 ? 0 : 1;
        } else if (mode == "errors") {
            return check_errors(in, k, x) == 0 ? 0 : 1;
        } else {
            std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
            return 2;
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 3;
    }
    return 0;
}
