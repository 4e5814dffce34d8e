"""The cases only GPU handles run (compare_python.py --gpu): larger batches that reach every bin,
chunk and fallback of the families' GPU launchers, per family (GPU_CASES), and the base cases a GPU
handle must give when its family's GPU backend is not the CPU's to the bit (GPU_BASE_CASES)."""
from __future__ import annotations

import dataclasses
import sys
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np

import warpdp
from cases import RNG, Case, random_dna
from family_cases import OVERHANGS, align_case, edit_case, pairhmm_case, pairhmm_cases, seedext_case, xdrop_case

# Cases only the GPU handle runs (larger batches: the launchers' bins and chunks), per family; each
# family's section registers its own.
GPU_CASES: dict[str, Callable[[], list[Case]]] = {}
# The family's cases as a GPU handle must give them, for the families whose GPU backend's results
# are not the CPU backend's to the bit (the family's section says why); the others' GPU handles
# give the cases' CPU results.
GPU_BASE_CASES: dict[str, Callable[[], list[Case]]] = {}


ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)


def xdrop_noisy_pairs(lengths: np.ndarray, k: int, error: float) -> warpdp.XdropPairs:
    """V random of the given lengths, H = V with `error` substitutions, deletions and insertions
    (a third each) outside the seed, vectorized over the whole batch; seeds anywhere in V, every
    eighth at V's start and every eighth at its end (nothing to extend into on one side); about
    a tenth of the H sequences lowercase and one V base in a thousand N."""
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    v_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    v = ACGT[RNG.integers(0, 4, int(v_offsets[-1]))]
    v_pos = (RNG.random(n) * (lengths - k + 1)).astype(np.int64)
    v_pos[0::8], v_pos[1::8] = 0, lengths[1::8] - k
    starts = v_offsets[:-1] + v_pos
    seed_marks = np.zeros(len(v) + 1, dtype=np.int64)
    np.add.at(seed_marks, starts, 1)
    np.add.at(seed_marks, starts + k, -1)
    u = RNG.random(len(v))
    u[np.cumsum(seed_marks)[:-1] > 0] = 1.0  # the seed is copied exactly
    third = error / 3
    h_source = v.copy()
    sub = u < third
    h_source[sub] = ACGT[(np.searchsorted(ACGT, v[sub]) + RNG.integers(1, 4, int(sub.sum()))) % 4]
    pieces = 1 - ((u >= third) & (u < 2 * third)) + ((u >= 2 * third) & (u < error))  # 0: deleted, 2: inserted
    h = np.repeat(h_source, pieces)
    ends = np.cumsum(pieces)
    h_offsets = np.concatenate([[0], ends[v_offsets[1:] - 1]]).astype(np.int64)
    h_pos = ends[starts] - 1 - h_offsets[:-1]  # a seed base is its own single H base
    h[np.repeat(RNG.random(n) < 0.1, np.diff(h_offsets))] |= 0x20
    v[(RNG.random(len(v)) < 0.001) & (np.cumsum(seed_marks)[:-1] == 0)] = ord("N")
    return warpdp.XdropPairs.from_arrays(h_bases=h, h_offsets=h_offsets, v_bases=v, v_offsets=v_offsets,
                                         h_pos=h_pos, v_pos=v_pos)


def xdrop_concat(groups: list[warpdp.XdropPairs]) -> warpdp.XdropPairs:
    def offsets(name: str, bases: str) -> np.ndarray:
        shifts = np.cumsum([0] + [len(getattr(g, bases)) for g in groups[:-1]])
        return np.concatenate([[0]] + [getattr(g, name)[1:] + shift for g, shift in zip(groups, shifts)])

    return warpdp.XdropPairs.from_arrays(
        h_bases=np.concatenate([g.h_bases for g in groups]), h_offsets=offsets("h_offsets", "h_bases"),
        v_bases=np.concatenate([g.v_bases for g in groups]), v_offsets=offsets("v_offsets", "v_bases"),
        h_pos=np.concatenate([g.h_pos for g in groups]), v_pos=np.concatenate([g.v_pos for g in groups]))


def xdrop_gpu_cases() -> list[Case]:
    """Larger batches for the GPU launcher: every kernel (extend_kernel with int32 and int64 cells
    in each flank bin, the shared-memory kernel, each wide-kernel frame), both report modes, a
    batch of more pairs than one chunk holds (2^19), and a bad byte deep in a batch."""
    k = 17
    mixed = xdrop_concat([
        xdrop_noisy_pairs(RNG.integers(k, 2500, 16000), k, 0.1),
        xdrop_noisy_pairs(RNG.integers(2500, 9000, 3000), k, 0.15),
        xdrop_noisy_pairs(RNG.integers(9000, 40000, 100), k, 0.1),    # flanks past 2^13 and 2^15
        xdrop_noisy_pairs(RNG.integers(140000, 300000, 8), k, 0.05),  # past 2^17
        xdrop_noisy_pairs(RNG.integers(1100000, 1200000, 2), k, 0.05),  # past 2^19
        xdrop_noisy_pairs(RNG.integers(k, 3000, 1000), k, 0.75),      # unrelated
    ])
    wide = mixed.select(16000, 19000)  # frames of 1024, 2048 and 4096 columns, and longer flanks
    cases = [xdrop_case(f"gpu.mixed.x{x}", mixed, k=k, x=x) for x in (10, 100, 500)]
    cases.append(xdrop_case("gpu.mixed.x100.best", mixed, k=k, x=100, report="best"))
    cases.append(xdrop_case("gpu.mixed.x500.best", mixed, k=k, x=500, report="best"))
    # X = 2500 at ten times the scores: windows of ~1700 columns whose values do not fit int16.
    cases.append(xdrop_case("gpu.wide.x25000", wide, k=k, x=25000, match=10, mismatch=-10, gap=-10))
    cases.append(xdrop_case("gpu.wide.x25000.best", wide, k=k, x=25000, match=10, mismatch=-10, gap=-10,
                            report="best"))
    # Scores of 2^20: int64 cells wherever min(m, n) >= 512, int32 below.
    big = 1 << 20
    cases.append(xdrop_case("gpu.int64", mixed.select(17000, 19110), k=k, x=100 * big, match=big, mismatch=-big,
                            gap=-big))
    many = xdrop_noisy_pairs(RNG.integers(k, 60, (1 << 19) + 3000), k, 0.1)
    cases.append(xdrop_case("gpu.chunks", many, k=k, x=20))
    good = mixed.select(0, 12000)
    bad = dataclasses.replace(good, v_bases=good.v_bases.copy())
    bad.v_bases[int(bad.v_offsets[7777]) + 3] = ord("#")
    cases.append(xdrop_case("gpu.bad_base", bad, k=k, x=10))
    return cases


GPU_CASES["xdrop"] = xdrop_gpu_cases


SEEDEXT_BASES = np.frombuffer(b"ACGTNacgt", dtype=np.uint8)


def seedext_gpu_pairs(n: int, seed: int, long_share: float = 0.0, longest: int = 3000, shortest_max: int = 320) -> Any:
    """n BWA-MEM-like extensions (vectorised): a random target (1 % N, some lowercase) and a query
    copied from its start with up to 10 % substitutions, insertions and deletions; query sources
    of 0..shortest_max bases (320: every lane bin) and, for long_share of the pairs, 300..longest
    (subwarp bins; over about 1,360 bases the row state of the widest bin leaves shared memory for
    global scratch); h0 mostly 0..99, 5 % of the pairs near the lane kernel's 14-bit score limit
    (a = 1) or above it (subwarp bins of short queries)."""
    rng = np.random.default_rng(seed)
    source = rng.integers(0, shortest_max + 1, n)
    long = rng.random(n) < long_share
    source[long] = rng.integers(300, longest + 1, int(long.sum()))
    tlen = source + rng.integers(0, 101, n)
    t_off = np.concatenate(([0], np.cumsum(tlen))).astype(np.int64)
    codes = np.where(rng.random(int(t_off[-1])) < 0.01, 4, rng.integers(0, 4, int(t_off[-1])))
    codes[rng.random(len(codes)) < 0.02] += 5  # lowercase (N stays N: code 9 is 't')
    target = SEEDEXT_BASES[np.minimum(codes, 8)]
    pair_of = np.repeat(np.arange(n), tlen)
    rate = rng.uniform(0.0, 0.1, n)[pair_of]
    u = rng.random(len(target))
    copies = (np.arange(len(target)) - t_off[pair_of] < source[pair_of]).astype(np.int64)
    copies[(copies == 1) & (u < rate * 0.1)] = 0  # deletions
    copies[(copies == 1) & (u >= rate * 0.1) & (u < rate * 0.2)] = 2  # insertions (substituted below, or not)
    query = target[np.repeat(np.arange(len(target)), copies)]
    substituted = rng.random(len(query)) < np.repeat(rate, copies)
    query[substituted] = SEEDEXT_BASES[rng.integers(0, 4, int(substituted.sum()))]
    qlen = np.bincount(pair_of, weights=copies, minlength=n).astype(np.int64)
    h0 = rng.integers(0, 100, n)
    near = rng.random(n) < 0.03
    h0[near] = np.maximum(0, 16384 - qlen[near] + rng.integers(-2, 3, int(near.sum())))
    high = rng.random(n) < 0.02
    h0[high] = rng.integers(16000, 20000, int(high.sum()))
    return warpdp.SeedExtPairs.from_arrays(query=query, query_offsets=np.concatenate(([0], np.cumsum(qlen))),
                                           target=target, target_offsets=t_off, h0=h0)


def seedext_gpu_cases() -> list[Case]:
    """Every bin of the GPU launcher: lane bins by query length, subwarp bins by row width (w and
    h0 decide which), in shared memory (queries up to 1,300 bases) and in global scratch (up to
    3,000), a match score that leaves the lane kernel, gap costs where E and F open differently;
    and a batch of four chunks (by pair count: 32,768, 65,536, 131,072, the rest), slots reused."""
    long = seedext_gpu_pairs(20000, seed=291, long_share=0.03, longest=3000)
    shared = seedext_gpu_pairs(20000, seed=293, long_share=0.03, longest=1300)
    chunked = seedext_gpu_pairs(240000, seed=292, shortest_max=120)
    return [seedext_case("gpu.bins", long),
            seedext_case("gpu.match20", long, a=20, b=9, w=40, end_bonus=0, zdrop=0),
            seedext_case("gpu.wide", shared, b=2, w=1000, end_bonus=3, zdrop=500),
            seedext_case("gpu.narrow", shared, w=10, o_del=5, e_del=2, o_ins=7, e_ins=1, end_bonus=10, zdrop=20),
            seedext_case("gpu.chunks", chunked)]


GPU_CASES["seedext"] = seedext_gpu_cases


def pairhmm_random(n_batches: int, reads: tuple[int, int], haps: tuple[int, int], hap_len: tuple[int, int],
                   long_reads: float, short_len: tuple[int, int] = (20, 60), long_len: tuple[int, int] = (150, 250),
                   related: float = 0.9, qual_high: int = 41) -> Any:
    """Packed batches like HaplotypeCaller's: per batch a haplotype and variants of it, reads cut
    from them with errors (a share `long_reads` of long_len bases, the rest short_len; a share
    1 - `related` random), quality bytes up to qual_high, a few N."""
    acgt = np.frombuffer(b"ACGT", np.uint8)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("bases", "quals", "ins", "del", "gcp", "haps")}
    read_lens, hap_lens, n_reads, n_haps = [], [], [], []
    for _ in range(n_batches):
        base = RNG.choice(acgt, int(RNG.integers(hap_len[0], hap_len[1], endpoint=True)))
        batch_haps = []
        for _ in range(int(RNG.integers(haps[0], haps[1], endpoint=True))):
            hap = base.copy()
            hap[RNG.random(len(hap)) < 0.01] = ord("C")
            batch_haps.append(hap if RNG.random() > 0.2 else hap[: max(1, len(hap) - int(RNG.integers(0, 40)))])
        count = int(RNG.integers(reads[0], reads[1], endpoint=True))
        for _ in range(count):
            span = long_len if RNG.random() < long_reads else short_len
            length = int(RNG.integers(span[0], span[1], endpoint=True))
            source = batch_haps[int(RNG.integers(len(batch_haps)))]
            if RNG.random() < related and length <= len(source):
                start = int(RNG.integers(0, len(source) - length + 1))
                read = source[start:start + length].copy()
                read[RNG.random(length) < 0.01] = RNG.choice(acgt)
            else:
                read = RNG.choice(acgt, length)
            read[RNG.random(length) < 0.005] = ord("N")
            parts["bases"].append(read)
            parts["quals"].append(RNG.integers(6, qual_high, length, dtype=np.uint8))
            parts["ins"].append(RNG.integers(25, 46, length, dtype=np.uint8))
            parts["del"].append(RNG.integers(25, 46, length, dtype=np.uint8))
            parts["gcp"].append(np.full(length, 10, np.uint8))
            read_lens.append(length)
        parts["haps"] += batch_haps
        hap_lens += [len(h) for h in batch_haps]
        n_reads.append(count)
        n_haps.append(len(batch_haps))

    def offsets(lengths: list[int]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])

    return warpdp.PairHmmBatches.from_arrays(
        read_bases=np.concatenate(parts["bases"]), read_quals=np.concatenate(parts["quals"]),
        read_ins=np.concatenate(parts["ins"]), read_del=np.concatenate(parts["del"]),
        read_gcp=np.concatenate(parts["gcp"]), read_offsets=offsets(read_lens),
        hap_bases=np.concatenate(parts["haps"]), hap_offsets=offsets(hap_lens),
        batch_reads=offsets(n_reads), batch_haps=offsets(n_haps))


def pairhmm_gpu_cases() -> list[Case]:
    """Batches for the GPU launcher's bins (reads 20-60 bp mostly, some 150-250, a few over 512:
    the multi-strip bin), its chunks (over 10^9 cells: several; one batch over the first chunk's
    cells: cut by reads) and GKL's double recomputation (unrelated reads with high qualities;
    long mismatching ones that underflow even in double: -inf)."""
    mixed = pairhmm_random(1500, (5, 30), (2, 8), (100, 400), long_reads=0.15)
    rescue = pairhmm_random(300, (5, 20), (2, 6), (50, 400), long_reads=0.3, related=0.3, qual_high=61)
    long_reads = pairhmm_random(20, (4, 12), (1, 3), (1000, 2500), long_reads=1.0, long_len=(520, 1200))
    one_batch = pairhmm_random(1, (6000, 6000), (8, 8), (300, 300), long_reads=1.0)
    n = 1000
    hopeless = warpdp.PairHmmBatches.from_arrays(
        read_bases=np.full(2 * n, ord("A"), np.uint8), read_quals=np.full(2 * n, 60, np.uint8),
        read_ins=np.full(2 * n, 45, np.uint8), read_del=np.full(2 * n, 45, np.uint8),
        read_gcp=np.full(2 * n, 10, np.uint8), read_offsets=np.array([0, n, 2 * n]),
        hap_bases=np.full(1500, ord("C"), np.uint8), hap_offsets=np.array([0, 1500]),
        batch_reads=np.array([0, 2]), batch_haps=np.array([0, 1]))
    cases = []
    for name, batches in (("gpu.mixed", mixed), ("gpu.rescue", rescue), ("gpu.long-reads", long_reads),
                          ("gpu.one-batch", one_batch), ("gpu.underflow", hopeless)):
        cases += [pairhmm_case(f"{name}.{mode}", batches, mode == "double", "gpu") for mode in ("float", "double")]
    return cases


GPU_CASES["pairhmm"] = pairhmm_gpu_cases
GPU_BASE_CASES["pairhmm"] = partial(pairhmm_cases, backend="gpu")


def packed_pairs(query_lengths: np.ndarray, target_lengths: np.ndarray, rate: float) -> Any:
    """AlignPairs of random targets of these lengths (a few N and lower-case bases) and queries
    drawn from them with about `rate` differences (substitutions, deletions, insertions),
    cut or padded to their lengths: numpy only, fast at 10^4+ pairs."""
    n = len(target_lengths)
    alphabet = np.frombuffer(b"ACGTNacgt", dtype=np.uint8)
    weights = np.array([0.24] * 4 + [0.01] + [0.0075] * 4)
    target = RNG.choice(alphabet, int(target_lengths.sum()), p=weights / weights.sum())
    source = np.concatenate([target, RNG.choice(alphabet[:4], int(query_lengths.sum()))])  # enough bases
    draw = RNG.random(len(source))
    copies = np.where(draw < rate / 3, 0, np.where(draw < 2 * rate / 3, 2, 1))
    query = np.repeat(source, copies)
    changed = RNG.random(len(query)) < rate / 3
    query[changed] = RNG.choice(alphabet[:4], int(changed.sum()))
    starts = np.concatenate(([0], np.cumsum(target_lengths)[:-1]))  # each query starts where its target does
    at = np.concatenate(([0], np.cumsum(copies)))[np.minimum(starts, len(source))]
    query = np.concatenate([query[a:a + q] for a, q in zip(at.tolist(), query_lengths.tolist())])
    query_offsets = np.concatenate(([0], np.cumsum(query_lengths))).astype(np.int64)
    target_offsets = np.concatenate(([0], np.cumsum(target_lengths))).astype(np.int64)
    assert len(query) == query_offsets[-1] and n == len(query_lengths)
    return warpdp.AlignPairs(query, query_offsets, target, target_offsets)


def mixed_lengths(n: int, lo: int, hi: int, long: int) -> np.ndarray:
    """n lengths in lo..hi, `long` of them (at random places) of 2-5 kb."""
    lengths = RNG.integers(lo, hi + 1, n)
    lengths[RNG.choice(n, long, replace=False)] = RNG.integers(2000, 5001, long)
    return lengths


def with_matrix(case: Case, matrix: tuple[tuple[int, ...], ...]) -> Case:
    """The harness reads a 5x5 matrix from matrix.bin (has_matrix 1)."""
    case.arrays["matrix"] = np.array(matrix, dtype=np.int32).ravel()
    case.params = {k: v for k, v in case.params.items() if k != "matrix"}
    case.params["has_matrix"] = 1
    return case


# GATK's HaplotypeCaller parameter sets (match, mismatch, gap_open, gap_extend): NEW_SW_PARAMETERS
# (haplotypes against the reference), ALIGNMENT_TO_BEST_HAPLOTYPE_SW_PARAMETERS (reads against
# their haplotype), STANDARD_NGS.
HAPLOTYPE_CALLER = ((200, -150, -260, -11), (10, -15, -30, -5), (25, -50, -110, -6))


def align_gpu_cases() -> list[Case]:
    """10^4 pairs (1-400 bases, eight of 2-5 kb: global scratch rows) in every mode, affine and
    linear gaps, both gap conventions, a 5x5 matrix, with and without CIGARs (score-only local and
    semiglobal carry traceback ends: dp_kernel's ORIGIN); GATK mode with every overhang strategy
    and HaplotypeCaller's three parameter sets; short pairs in three chunks (the two slots reused);
    one pair whose traceback is over the GPU's chunk bound (the CPU driver's)."""
    n = 10_000
    t_lengths = mixed_lengths(n, 1, 400, 8)
    q_lengths = np.maximum(1, (t_lengths * RNG.uniform(0.8, 1.2, n)).astype(np.int64))
    pairs = packed_pairs(q_lengths, t_lengths, 0.1)
    cases = []
    for mode in ("global", "semiglobal", "local", "extension"):
        cases.append(align_case(f"gpu.{mode}.affine.cigar", pairs, mode=mode, cigar=True))
        cases.append(align_case(f"gpu.{mode}.linear", pairs, mode=mode, gaps="linear", gap_extend=3))
    cases.append(align_case("gpu.global.L.cigar", pairs, gap_open=6, gap_extend=1, gap_convention="L", cigar=True))
    cases.append(align_case("gpu.local.L", pairs, mode="local", gap_open=4, gap_extend=2, gap_convention="L"))
    cases.append(align_case("gpu.extension.zdrop.cigar", pairs, mode="extension", zdrop=30, cigar=True))
    cases.append(align_case("gpu.extension.zdrop", pairs, mode="extension", zdrop=30, gaps="linear", gap_extend=2))
    matrix = tuple(tuple(int(v) for v in row) for row in RNG.integers(-6, 7, (5, 5)))
    cases.append(with_matrix(align_case("gpu.local.matrix.cigar", pairs, mode="local", matrix=matrix, cigar=True),
                             matrix))
    cases.append(with_matrix(align_case("gpu.semiglobal.matrix", pairs, mode="semiglobal", matrix=matrix), matrix))
    # GATK: alt (query) against ref (target); bytes as they are
    refs = mixed_lengths(n, 100, 400, 4)
    alts = np.maximum(1, (refs * RNG.uniform(0.3, 1.1, n)).astype(np.int64))
    gatk = packed_pairs(alts, refs, 0.05)
    for match, mismatch, gap_open, gap_extend in HAPLOTYPE_CALLER:
        for overhang in OVERHANGS:
            cases.append(align_case(f"gpu.gatk.{match}.{overhang}", gatk, mode="gatk", match=match, mismatch=mismatch,
                                    gap_open=gap_open, gap_extend=gap_extend, overhang=overhang, cigar=True))
    cases.append(align_case("gpu.gatk.200.SOFTCLIP.no-cigar", gatk, mode="gatk", match=200, mismatch=-150,
                            gap_open=-260, gap_extend=-11))
    # 6 * 10^5 short pairs: three chunks of at most 2^18 pairs, so each of the two slots is reused
    m = 600_000
    cases.append(align_case("gpu.short.chunks.cigar", packed_pairs(RNG.integers(1, 25, m), RNG.integers(1, 25, m),
                                                                   0.1), mode="semiglobal", cigar=True))
    # a 7 * 10^7-base query against 1 base between two short pairs: 4 bits a cell in stripes of 128
    # rows make its traceback over 1 GiB, the GPU's per-chunk bound (its 7 * 10^7 cells are within
    # max_traceback_cells): the CPU driver aligns it
    long_query = np.frombuffer(b"ACGT", dtype=np.uint8)[RNG.integers(0, 4, 70_000_000, dtype=np.uint8)]
    short = packed_pairs(np.array([300, 280]), np.array([310, 290]), 0.1)
    q, t = short.query_offsets, short.target_offsets
    three = warpdp.AlignPairs(
        np.concatenate([short.query_bases[:q[1]], long_query, short.query_bases[q[1]:]]),
        np.array([0, q[1], q[1] + len(long_query), q[2] + len(long_query)], dtype=np.int64),
        np.concatenate([short.target_bases[:t[1]], np.frombuffer(b"G", dtype=np.uint8), short.target_bases[t[1]:]]),
        np.array([0, t[1], t[1] + 1, t[2] + 1], dtype=np.int64))
    cases.append(align_case("gpu.cpu-pair.cigar", three, mode="global", cigar=True))
    return cases


GPU_CASES["align"] = align_gpu_cases


def edit_read_pairs(n: int, lengths: tuple[int, int], rates: tuple[float, float], seed: int) -> Any:
    """n reads with errors against the reference windows they came from (benchmarks/edit.py's
    generator: Scrooge's short and long workloads)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from edit import read_pairs

    split = (0.8, 0.1, 0.1) if lengths[1] <= 1000 else (0.3, 0.35, 0.35)
    return read_pairs(n, lengths, rates, split, seed)


def edit_sequences(pairs: Any) -> list[tuple[bytes, bytes]]:
    qb, qo, tb, to = pairs.query_bases, pairs.query_offsets, pairs.target_bases, pairs.target_offsets
    return [(qb[qo[i]:qo[i + 1]].tobytes(), tb[to[i]:to[i + 1]].tobytes()) for i in range(pairs.n_pairs)]


def edit_divergent_pairs(n: int) -> Any:
    """Pairs whose windows need more than the first windowed tiers' edits (8, 24): reads with 20-45 %
    errors, unrelated sequences, and homopolymers against other homopolymers (every base an edit)."""
    noisy = edit_sequences(edit_read_pairs(n // 2, (300, 2000), (0.2, 0.45), seed=31))
    unrelated = [(random_dna(int(RNG.integers(100, 1500))), random_dna(int(RNG.integers(100, 1500))))
                 for _ in range(n // 2 - n // 20)]
    homopolymers = [(bytes([a]) * int(RNG.integers(40, 400)), bytes([b]) * int(RNG.integers(40, 400)))
                    for a, b in RNG.choice(np.frombuffer(b"ACGT", np.uint8), (n // 20, 2)).tolist() if a != b]
    mixed = noisy + unrelated + homopolymers
    return warpdp.pack_edit_pairs([mixed[i] for i in RNG.permutation(len(mixed))])


def edit_gpu_cases() -> list[Case]:
    """Batches through the GPU launcher's paths: the windowed tiers and their overflow lists, exact
    thread and warp groups, bounds, several chunks, pairs left to the CPU, bytes refused."""
    cases = []
    short = edit_read_pairs(10_000, (100, 250), (0.01, 0.05), seed=32)
    long = edit_read_pairs(2_000, (2000, 10000), (0.05, 0.15), seed=33)
    for mode in ("nw", "shw", "hw"):
        cases += [edit_case(f"gpu.short.{mode}.{task}", short, mode=mode, task=task)
                  for task in ("distance", "locations", "path")]
    cases += [edit_case("gpu.short.nw.distance.k3", short, mode="nw", k=3),
              edit_case("gpu.short.shw.locations.k5", short, mode="shw", task="locations", k=5),
              edit_case("gpu.short.hw.path.k4", short, mode="hw", task="path", k=4)]
    for window, overlap in ((64, 33), (32, 17)):
        cases += [edit_case(f"gpu.short.windowed.w{window}.{task}", short, mode="shw", method="windowed",
                            window=window, overlap=overlap, task=task) for task in ("distance", "locations", "path")]
    cases.append(edit_case("gpu.short.windowed.w32.path.k6", short, mode="shw", method="windowed", window=32,
                           overlap=17, task="path", k=6))
    cases += [edit_case("gpu.long.nw.distance", long, mode="nw"), edit_case("gpu.long.nw.path", long, mode="nw",
                                                                             task="path"),
              edit_case("gpu.long.nw.distance.k500", long, mode="nw", k=500),
              edit_case("gpu.long.shw.locations", long, mode="shw", task="locations"),
              edit_case("gpu.long.hw.path", long, mode="hw", task="path"),
              edit_case("gpu.long.hw.locations.k800", long, mode="hw", task="locations", k=800)]
    cases += [edit_case(f"gpu.long.windowed.w{w}.{task}", long, mode="shw", method="windowed", window=w,
                        overlap=o, task=task) for w, o in ((64, 33), (32, 17)) for task in ("distance", "path")]
    divergent = edit_divergent_pairs(3_000)
    cases += [edit_case(f"gpu.divergent.windowed.w{w}.{task}", divergent, mode="shw", method="windowed", window=w,
                        overlap=o, task=task) for w, o in ((64, 33), (32, 17)) for task in ("locations", "path")]
    cases.append(edit_case("gpu.divergent.hw.path", divergent, mode="hw", task="path"))
    # Either case for the windowed method; lower case and N as symbols of their own for the exact one.
    sequences = edit_sequences(short)[:3_000]
    lowered = [(q.lower() if i % 3 == 0 else q, t.lower() if i % 5 == 0 else t) for i, (q, t) in enumerate(sequences)]
    cases.append(edit_case("gpu.short.windowed.lowercase", warpdp.pack_edit_pairs(lowered), mode="shw",
                           method="windowed", window=32, overlap=17, task="path"))
    with_n = [(q[:50] + b"N" + q[51:] if i % 7 == 0 else q, t) for i, (q, t) in enumerate(lowered)]
    cases.append(edit_case("gpu.short.hw.path.symbols", warpdp.pack_edit_pairs(with_n), mode="hw", task="path"))
    cases.append(edit_case("bad.gpu.windowed.N", warpdp.pack_edit_pairs(with_n), mode="shw", method="windowed"))
    # Over 2^18 pairs: two chunks in flight, results joined in order.
    many = edit_read_pairs(300_000, (100, 250), (0.01, 0.05), seed=34)
    cases += [edit_case("gpu.many.windowed.locations", many, mode="shw", method="windowed", window=32, overlap=17,
                        task="locations"), edit_case("gpu.many.nw.distance", many, mode="nw")]
    # A pair too large for one GPU thread's scratch (the CPU's per-pair body runs it), among others.
    target = bytearray(random_dna(8_400_000))
    query = random_dna(200)
    target[5_000_000:5_000_200] = query
    huge = sequences[:100] + [(query, bytes(target))] + sequences[100:200]
    for task in ("distance", "locations", "path"):
        cases.append(edit_case(f"gpu.cpu-fallback.hw.{task}", warpdp.pack_edit_pairs(huge), mode="hw", task=task,
                               k=20 if task == "locations" else -1))
    cases.append(edit_case("gpu.cpu-fallback.alone", warpdp.pack_edit_pairs([(query, bytes(target))]), mode="shw",
                           task="path"))
    return cases


GPU_CASES["edit"] = edit_gpu_cases
