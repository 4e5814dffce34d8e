/* warpdp_logan.h: LOGAN's batch X-drop call (extendSeedL) and its types, implemented on warpdp's
 * X-drop (SeqAn 2's gapped X-drop, exactly; in process, on the GPU or the CPU), so a LOGAN caller
 * such as BELLA's GPU path relinks against libwarpdp_logan without code changes; plus SeqAn-like
 * single-pair helpers for CPU callers (warpdp::extendSeed, warpdp::XdropBatcher, always on the CPU).
 * C++17.
 *
 * Where extendSeedL runs: the environment variable WARPDP_LOGAN_BACKEND, read at each call:
 *  - auto (the default, also when unset or empty): on GPUs when libwarpdp was built with CUDA
 *    (WARPDP_WITH_CUDA) and device 0 opens (warpdp_open_gpu), else on the CPU (every core);
 *  - gpu: on GPUs; std::runtime_error naming the reason when no GPU handle opens;
 *  - cpu: on the CPU, in process (warpdp_open_local).
 * On GPUs the call uses devices 0 .. ngpus - 1 (those that exist: fewer where fewer open), the
 * pairs split into consecutive ranges, one per device, each run on its own thread; the results
 * are in the seeds' order either way, and the same as on the CPU. GPU and CPU handles are opened
 * at first use and kept for the process.
 *
 * The names, members and argument lists are LOGAN's (github.com/PASSIONLab/LOGAN, the
 * 11-argument extendSeedL, and the 10-argument one of the LOGAN copy BELLA calls). Semantics, as LOGAN's: query = V, target = H; seed i starts at
 * (beginPositionH, beginPositionV) and ends at (endPositionH, endPositionV); the left extension
 * starts from the begin positions, the right one from the end positions; res[i] = left score +
 * right score + kmer_length; the seed's begin positions become those of the left extension and its
 * end positions those of the right one. Differences, deliberate:
 *  - errors throw instead of printing and exiting: bad input (positive gap scores, seeds outside
 *    their sequences, bytes other than ACGTN, vectors shorter than numAlignments, a bad
 *    WARPDP_LOGAN_BACKEND) std::invalid_argument, anything else (out of memory, a GPU failure)
 *    std::runtime_error, each with warpdp's message;
 *  - scores are exact for any length (LOGAN keeps 16-bit anti-diagonals);
 *  - only linear gaps (gap_open_score == gap_extend_score), as LOGAN computes;
 *  - n_threads (LOGAN's CUDA block size) is accepted and unused; on the CPU the threads are every
 *    core (OMP_NUM_THREADS bounds them);
 *  - direction EXTEND_LEFTL / EXTEND_RIGHTL extend one side only (LOGAN always extends both);
 *  - lowerDiagonal / upperDiagonal become the extended seed's begin and end diagonals.
 */
#ifndef WARPDP_LOGAN_H
#define WARPDP_LOGAN_H

#include <cstddef>
#include <string>
#include <vector>

enum ExtensionDirectionL { EXTEND_NONEL = 0, EXTEND_LEFTL = 1, EXTEND_RIGHTL = 2, EXTEND_BOTHL = 3 };

struct ScoringSchemeL {
    int match_score;
    int mismatch_score;
    int gap_extend_score;
    int gap_open_score;

    ScoringSchemeL() : match_score(1), mismatch_score(-1), gap_extend_score(-1), gap_open_score(-1) {}
    ScoringSchemeL(int match, int mismatch, int gap)
        : match_score(match), mismatch_score(mismatch), gap_extend_score(gap), gap_open_score(gap) {}
    ScoringSchemeL(int match, int mismatch, int gap_extend, int gap_open)
        : match_score(match), mismatch_score(mismatch), gap_extend_score(gap_extend), gap_open_score(gap_open) {}
};

inline int scoreMatch(ScoringSchemeL const &me) { return me.match_score; }
inline int scoreMismatch(ScoringSchemeL const &me) { return me.mismatch_score; }
inline int scoreGapExtend(ScoringSchemeL const &me) { return me.gap_extend_score; }
inline int scoreGapOpen(ScoringSchemeL const &me) { return me.gap_open_score; }
inline int scoreGap(ScoringSchemeL const &me) { return me.gap_extend_score; }
inline void setScoreMatch(ScoringSchemeL &me, int const &value) { me.match_score = value; }
inline void setScoreMismatch(ScoringSchemeL &me, int const &value) { me.mismatch_score = value; }
inline void setScoreGapExtend(ScoringSchemeL &me, int const &value) { me.gap_extend_score = value; }
inline void setScoreGapOpen(ScoringSchemeL &me, int const &value) { me.gap_open_score = value; }
inline void setScoreGap(ScoringSchemeL &me, int const &value) { me.gap_extend_score = me.gap_open_score = value; }
inline int score(ScoringSchemeL const &me, char valH, char valV)
{
    return valH == valV ? me.match_score : me.mismatch_score;
}

struct SeedL {
    int beginPositionH;
    int beginPositionV;
    int endPositionH;
    int endPositionV;
    int seedLength;
    int lowerDiagonal;
    int upperDiagonal;
    int beginDiagonal;
    int endDiagonal;
    int score;

    SeedL()
        : beginPositionH(0), beginPositionV(0), endPositionH(0), endPositionV(0), seedLength(0), lowerDiagonal(0),
          upperDiagonal(0), beginDiagonal(0), endDiagonal(0), score(0) {}
    SeedL(int begin_h, int begin_v, int seed_length)
        : SeedL(begin_h, begin_v, begin_h + seed_length, begin_v + seed_length) { seedLength = seed_length; }
    SeedL(int begin_h, int begin_v, int end_h, int end_v)
        : beginPositionH(begin_h), beginPositionV(begin_v), endPositionH(end_h), endPositionV(end_v),
          seedLength(end_h - begin_h), lowerDiagonal(begin_h - begin_v < end_h - end_v ? begin_h - begin_v : end_h - end_v),
          upperDiagonal(begin_h - begin_v < end_h - end_v ? end_h - end_v : begin_h - begin_v),
          beginDiagonal(begin_h - begin_v), endDiagonal(end_h - end_v), score(0) {}
};

inline int getAlignScore(SeedL const &s) { return s.score; }
inline int getBeginPositionH(SeedL const &s) { return s.beginPositionH; }
inline int getBeginPositionV(SeedL const &s) { return s.beginPositionV; }
inline int getEndPositionH(SeedL const &s) { return s.endPositionH; }
inline int getEndPositionV(SeedL const &s) { return s.endPositionV; }
inline int getSeedLLength(SeedL const &s) { return s.seedLength; }
inline int getLowerDiagonal(SeedL const &s) { return s.lowerDiagonal; }
inline int getUpperDiagonal(SeedL const &s) { return s.upperDiagonal; }
inline int getBeginDiagonal(SeedL const &s) { return s.beginDiagonal; }
inline int getEndDiagonal(SeedL const &s) { return s.endDiagonal; }
inline void setAlignScore(SeedL &s, int const value) { s.score = value; }
inline void setBeginPositionH(SeedL &s, int const value) { s.beginPositionH = value; }
inline void setBeginPositionV(SeedL &s, int const value) { s.beginPositionV = value; }
inline void setEndPositionH(SeedL &s, int const value) { s.endPositionH = value; }
inline void setEndPositionV(SeedL &s, int const value) { s.endPositionV = value; }
inline void setSeedLLength(SeedL &s, int const value) { s.seedLength = value; }
inline void setLowerDiagonal(SeedL &s, int const value) { s.lowerDiagonal = value; }
inline void setUpperDiagonal(SeedL &s, int const value) { s.upperDiagonal = value; }
inline void setBeginDiagonal(SeedL &s, int const value) { s.beginDiagonal = value; }
inline void setEndDiagonal(SeedL &s, int const value) { s.endDiagonal = value; }

/* LOGAN's result record (logan.cuh), which BELLA's GPU path fills from res and the seeds. */
struct loganResult {
    int score;
    std::string strand;
    SeedL seed;
};

/* LOGAN's batch call: extends seeds[0 .. numAlignments) (H = target[i], V = query[i]) with
   penalties[0] and X-drop XDrop; fills res[0 .. numAlignments) and updates the seeds (see above).
   n_threads may be left out: LOGAN's own repository has the 11-argument form, the copy in BELLA
   (loganGPU/functions.cuh) the 10-argument one BELLA calls. */
void extendSeedL(std::vector<SeedL> &seeds, ExtensionDirectionL direction, std::vector<std::string> &target,
                 std::vector<std::string> &query, std::vector<ScoringSchemeL> &penalties, int const &XDrop,
                 int const &kmer_length, int *res, int numAlignments, int ngpus, int n_threads = 0);

namespace warpdp {

/* SeqAn's extendSeed(seed, seqH, seqV, direction, Score<int, Simple>(match, mismatch, gap), xdrop,
   GappedXDrop()) for one pair, as BELLA's CPU path calls it: updates the seed's positions and returns
   the score of the extended seed (seed score k * match plus the extensions). */
int extendSeed(SeedL &seed, const std::string &seqH, const std::string &seqV, ExtensionDirectionL direction,
               const ScoringSchemeL &scoring, int xdrop);

/* One extended pair: the seed after extension and its score, as extendSeed gives them. */
struct XdropExtension {
    SeedL seed;
    int score;
};

/* Single-pair calls, run in batches: add() queues a pair (its sequences are copied) and returns its
   ticket; every batch_size pairs, and on flush(), the queued pairs run as one warpdp batch (all
   cores). result(ticket) is valid once its batch ran. Not thread-safe: one batcher per thread. */
class XdropBatcher {
public:
    XdropBatcher(const ScoringSchemeL &scoring, int xdrop, std::size_t batch_size = 4096);
    std::size_t add(const SeedL &seed, const std::string &seqH, const std::string &seqV,
                    ExtensionDirectionL direction = EXTEND_BOTHL);
    void flush();
    const XdropExtension &result(std::size_t ticket) const;
    std::size_t size() const { return results_.size(); }

private:
    ScoringSchemeL scoring_;
    int xdrop_;
    std::size_t batch_size_;
    std::vector<SeedL> seeds_;
    std::vector<std::string> h_, v_;
    std::vector<ExtensionDirectionL> directions_;
    std::vector<XdropExtension> results_;
};

}  // namespace warpdp

#endif
