// An example BELLA-like long-read overlapper on warpdp.h: reads FASTA/FASTQ, finds read pairs that
// share k-mers (on the same or opposite strands), extends one shared k-mer per pair and strand with
// warpdp's X-drop in one batch, and writes PAF-like lines.
//
//   warpdp_overlapper READS.fa|fq [-k 17] [-x 7] [--min-shared 2] [--max-occurrences 64]
//                     [--threads N] [--candidates FILE] > overlaps.paf
//
// Opposite strands as BELLA does: the second read is reverse-complemented on the host and the seed
// is taken on that copy. Output, one line per candidate (pairs i < j, strand + before -):
//   name_i len_i begin_i end_i strand name_j len_j begin_j end_j score span 255 sd:Z:seed_i,seed_j
// begin/end are the extended seed (0-based, end exclusive), read j's on its forward strand; score is
// SeqAn's left + right + k (BELLA's scoring: match 1, mismatch -1, gap -1); span the longer side.
// --candidates writes "i j strand seed_i seed_j" (seed_j on read j's oriented copy), the pairs as
// handed to warpdp.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "warpdp.h"

namespace {

struct Read {
    std::string name, bases;
};

struct Options {
    std::string reads, candidates;
    int k = 17, x = 7, min_shared = 2, max_occurrences = 64, threads = 0;
};

[[noreturn]] void fail(const std::string &message)
{
    std::fprintf(stderr, "warpdp_overlapper: error: %s\n", message.c_str());
    std::exit(2);
}

Options parse(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&]() -> long {
            if (i + 1 >= argc)
                fail(a + " needs a value");
            char *end;
            const long v = std::strtol(argv[++i], &end, 10);
            if (*end != '\0')
                fail(a + " needs an integer");
            return v;
        };
        if (a == "-k") o.k = int(value());
        else if (a == "-x") o.x = int(value());
        else if (a == "--min-shared") o.min_shared = int(value());
        else if (a == "--max-occurrences") o.max_occurrences = int(value());
        else if (a == "--threads") o.threads = int(value());
        else if (a == "--candidates" && i + 1 < argc) o.candidates = argv[++i];
        else if (o.reads.empty() && a[0] != '-') o.reads = a;
        else fail("unknown argument " + a);
    }
    if (o.reads.empty())
        fail("usage: warpdp_overlapper READS.fa|fq [-k 17] [-x 7] [--min-shared 2] [--max-occurrences 64] "
             "[--threads N] [--candidates FILE]");
    if (o.k < 1 || o.k > 31 || o.x < 0 || o.min_shared < 1 || o.max_occurrences < 1)
        fail("k must be within 1..31, x >= 0, min-shared and max-occurrences >= 1");
    return o;
}

// FASTA (records may span lines) or FASTQ (four lines per record), by the first character.
std::vector<Read> read_fastx(const std::string &path)
{
    std::ifstream in(path);
    if (!in)
        fail("cannot open " + path);
    std::vector<Read> reads;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty())
            continue;
        if (line[0] == '>') {
            reads.push_back({line.substr(1, line.find_first_of(" \t") - 1), ""});
        } else if (line[0] == '@') {
            Read r{line.substr(1, line.find_first_of(" \t") - 1), ""};
            std::string plus, quals;
            if (!std::getline(in, r.bases) || !std::getline(in, plus) || !std::getline(in, quals))
                fail("truncated FASTQ record " + r.name);
            reads.push_back(r);
        } else if (!reads.empty()) {
            reads.back().bases += line;
        } else {
            fail(path + " is neither FASTA nor FASTQ");
        }
    }
    for (Read &r : reads)
        for (char &c : r.bases)
            c = char(std::toupper(static_cast<unsigned char>(c)));
    return reads;
}

std::string reverse_complement(const std::string &s)
{
    std::string out(s.rbegin(), s.rend());
    for (char &c : out)
        c = c == 'A' ? 'T' : c == 'T' ? 'A' : c == 'C' ? 'G' : c == 'G' ? 'C' : 'N';
    return out;
}

// Every k-mer of s made of ACGT only, as (2-bit code, position), in order.
std::vector<std::pair<uint64_t, int>> kmers(const std::string &s, int k)
{
    std::vector<std::pair<uint64_t, int>> out;
    const uint64_t mask = k == 32 ? ~0ull : (1ull << (2 * k)) - 1;
    uint64_t code = 0;
    int valid = 0;
    for (int i = 0; i < int(s.size()); i++) {
        const char *at = std::strchr("ACGT", s[i]);
        if (at == nullptr || s[i] == '\0') {
            valid = 0;
            continue;
        }
        code = ((code << 2) | uint64_t(at - "ACGT")) & mask;
        if (++valid >= k)
            out.emplace_back(code, i - k + 1);
    }
    return out;
}

struct Candidate {
    int i, j;
    char strand;
    int64_t seed_i, seed_j;  // seed_j on read j's oriented copy
};

// Pairs i < j sharing at least min_shared k-mer hits on a strand; the seed is the first shared
// k-mer along read j's oriented copy, at its first occurrence in read i.
std::vector<Candidate> find_candidates(const std::vector<Read> &reads, const Options &o,
                                       std::vector<std::string> &oriented_minus)
{
    std::unordered_map<uint64_t, std::vector<std::pair<int, int>>> index;  // k-mer -> (read, pos)
    for (int r = 0; r < int(reads.size()); r++)
        for (const auto &[code, pos] : kmers(reads[r].bases, o.k))
            index[code].emplace_back(r, pos);
    std::vector<Candidate> out;
    for (int j = 0; j < int(reads.size()); j++) {
        oriented_minus[j] = reverse_complement(reads[j].bases);
        for (const char strand : {'+', '-'}) {
            const std::string &seq = strand == '+' ? reads[j].bases : oriented_minus[j];
            std::map<int, std::pair<int, Candidate>> by_read;  // i -> (hits, first seed)
            for (const auto &[code, pos] : kmers(seq, o.k)) {
                const auto hit = index.find(code);
                if (hit == index.end() || int(hit->second.size()) > o.max_occurrences)
                    continue;
                for (const auto &[i, pos_i] : hit->second) {
                    if (i >= j)
                        continue;
                    auto [entry, fresh] = by_read.try_emplace(i, 0, Candidate{i, j, strand, pos_i, pos});
                    entry->second.first++;
                    (void)fresh;
                }
            }
            for (const auto &[i, hits] : by_read)
                if (hits.first >= o.min_shared)
                    out.push_back(hits.second);
        }
    }
    return out;
}

}  // namespace

int main(int argc, char **argv)
{
    const Options o = parse(argc, argv);
    const std::vector<Read> reads = read_fastx(o.reads);
    std::vector<std::string> minus(reads.size());
    const std::vector<Candidate> cands = find_candidates(reads, o, minus);

    // One batch: H = read i, V = read j as oriented.
    std::string h_bases, v_bases;
    std::vector<int64_t> h_off{0}, v_off{0}, h_pos, v_pos;
    for (const Candidate &c : cands) {
        h_bases += reads[c.i].bases;
        v_bases += c.strand == '+' ? reads[c.j].bases : minus[c.j];
        h_off.push_back(int64_t(h_bases.size()));
        v_off.push_back(int64_t(v_bases.size()));
        h_pos.push_back(c.seed_i);
        v_pos.push_back(c.seed_j);
    }
    const int64_t n = int64_t(cands.size());
    std::vector<int64_t> score(n), bh(n), eh(n), bv(n), ev(n);
    const warpdp_xdrop_pairs pairs = {reinterpret_cast<const uint8_t *>(h_bases.data()),
                                      reinterpret_cast<const uint8_t *>(v_bases.data()), int64_t(h_bases.size()),
                                      int64_t(v_bases.size()), h_off.data(), v_off.data(), h_pos.data(), v_pos.data(), n};
    const warpdp_xdrop_params params = warpdp_xdrop_params_default(o.k, o.x);
    const warpdp_xdrop_results results = {score.data(), bh.data(), eh.data(), bv.data(), ev.data(), nullptr};
    warpdp_local_options options = {o.threads, nullptr};
    warpdp_handle *handle = nullptr;
    if (warpdp_open_local(&options, &handle) != WARPDP_OK || warpdp_xdrop(handle, &pairs, &params, &results) != WARPDP_OK)
        fail(warpdp_last_error());
    warpdp_close(handle);

    if (!o.candidates.empty()) {
        std::ofstream out(o.candidates);
        for (const Candidate &c : cands)
            out << c.i << '\t' << c.j << '\t' << c.strand << '\t' << c.seed_i << '\t' << c.seed_j << '\n';
    }
    for (int64_t p = 0; p < n; p++) {
        const Candidate &c = cands[size_t(p)];
        const int64_t len_j = int64_t(reads[c.j].bases.size());
        // Read j's coordinates on its forward strand.
        const int64_t begin_j = c.strand == '+' ? bv[p] : len_j - ev[p], end_j = c.strand == '+' ? ev[p] : len_j - bv[p];
        const int64_t span = std::max(eh[p] - bh[p], ev[p] - bv[p]);
        std::printf("%s\t%zu\t%lld\t%lld\t%c\t%s\t%lld\t%lld\t%lld\t%lld\t%lld\t255\tsd:Z:%lld,%lld\n",
                    reads[c.i].name.c_str(), reads[c.i].bases.size(), (long long)bh[p], (long long)eh[p], c.strand,
                    reads[c.j].name.c_str(), (long long)len_j, (long long)begin_j, (long long)end_j,
                    (long long)score[p], (long long)span, (long long)c.seed_i, (long long)c.seed_j);
    }
    return 0;
}
