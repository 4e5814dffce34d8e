"""ctest: one warpdp.h entry point against the Python API, on ../shared/data inputs (where that
folder exists) and on synthetic pairs (always).

    compare_python.py FAMILY --harness PATH --work DIR [--server]

For each case the packed arrays go to DIR/<case>/ as raw files, warpdp_harness runs the C entry
point on them, and every output array must equal what the Python API (warpdp.<family>, CPU
backend, the same CPU variant) returns for the same arrays, element for element. Bad inputs must
make both refuse: Python with ValueError, the C API with an error code and a message.

With --gpu the harness opens an in-process GPU handle (warpdp_open_gpu, device 0): the same
cases, the same expected arrays (the GPU backend gives the CPU's results), and larger GPU-only
cases (GPU_CASES); a family whose GPU backend is not the CPU's to the bit (pairhmm) expects the
Python GPU backend's arrays instead (GPU_BASE_CASES). The test exits 77 (ctest's skip) when no GPU
is usable or the library has no GPU backend.

With --server the harness opens a client handle (warpdp_open_client) on a real warpdp server
started here (warpdp.grpc.Server, what `warpdp serve` runs; CPU backend, loopback, a bearer
token), and the same cases must give the same results through gRPC; a wrong token must be
refused (WARPDP_ERR_UNAUTHENTICATED), and, where openssl is installed, one case runs over TLS.
Every case whose arrays are large enough for shared memory must get its results back through
the memfd (SharedFile.reply_offset; align's and edit's ragged CIGARs and locations too): the
server, in this process, counts the results it writes there (the reply then carries none).
"""
from __future__ import annotations

import argparse
import dataclasses
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np

import warpdp

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
RNG = np.random.default_rng(29)


def data_file(*parts: str) -> Path | None:
    path = DATA.joinpath(*parts)
    return path if path.exists() else None


# Pairs of ../shared/data/{align,edit}/pairs-400.tsv up to this many bases (query + target): three
# quarters of them, keeping the test to seconds under the sanitizers.
MAX_PAIR_BASES = 3000


def short_pairs(path: Path) -> list[tuple[bytes, bytes]]:
    rows = [tuple(line.split()) for line in path.read_text().splitlines() if line.strip()]
    return [(q.encode(), t.encode()) for q, t in rows if len(q) + len(t) <= MAX_PAIR_BASES]


def random_dna(n: int, alphabet: bytes = b"ACGT") -> bytes:
    return bytes(RNG.choice(np.frombuffer(alphabet, dtype=np.uint8), n))


def mutate(seq: bytes, rate: float) -> bytes:
    out = bytearray()
    for base in seq:
        r = RNG.random()
        if r < rate / 3:
            out += random_dna(1)
        elif r < 2 * rate / 3:
            continue
        elif r < rate:
            out += bytes([base]) + random_dna(1)
        else:
            out.append(base)
    return bytes(out)


class Case:
    """Arrays for the harness, its params.txt, and what the Python API gives (dict of arrays) or
    None when Python refuses the input (ValueError)."""

    def __init__(self, name: str, arrays: dict[str, np.ndarray], params: dict[str, int],
                 python: Callable[[], dict[str, np.ndarray]]) -> None:
        self.name, self.arrays, self.params = name, arrays, params
        try:
            self.expected: dict[str, np.ndarray] | None = python()
        except ValueError as error:
            self.expected, self.python_error = None, str(error)


def run_case(family: str, case: Case, harness: str, work: Path, connect: dict[str, str] | None = None,
             refused: str | None = None, calls: int = 1) -> list[str]:
    """Runs the case (on a server when `connect` holds server/token/tls params; `calls` times on
    one handle, the last call's results checked); with `refused`, the harness must fail with
    that status instead."""
    folder = work / case.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, array in case.arrays.items():
        np.ascontiguousarray(array).tofile(folder / f"{name}.bin")
    params = {**case.params, **(connect or {})}
    (folder / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in params.items()))
    done = subprocess.run([harness, family, str(folder), str(calls)], capture_output=True, text=True, timeout=600)
    if refused is not None:
        if done.returncode == 3 and refused in done.stderr:
            return []
        return [f"{case.name}: wanted {refused}, got exit {done.returncode}: {done.stderr.strip()}"]
    if case.expected is None:
        if done.returncode == 3 and "WARPDP_ERR_INVALID_ARGUMENT" in done.stderr:
            return []
        return [f"{case.name}: Python refused ({case.python_error}) but the C API returned "
                f"{done.returncode}: {done.stderr.strip()}"]
    if done.returncode != 0:
        return [f"{case.name}: harness exit {done.returncode}: {done.stderr.strip()}"]
    problems = []
    for name, want in case.expected.items():
        want = np.ascontiguousarray(want)
        got = np.fromfile(folder / f"out_{name}.bin", dtype=want.dtype).reshape(want.shape)
        if not np.array_equal(got, want):
            bad = np.flatnonzero((got != want).reshape(len(want), -1).any(axis=1))
            problems.append(f"{case.name}: {name} differs at {len(bad)} rows, first {bad[:5].tolist()}: "
                            f"C {got[bad[:3]].tolist()} Python {want[bad[:3]].tolist()}")
    return problems


# Cases only the GPU handle runs (larger batches: the launchers' bins and chunks), per family; each
# family's section registers its own.
GPU_CASES: dict[str, Callable[[], list[Case]]] = {}
# The family's cases as a GPU handle must give them, for the families whose GPU backend's results
# are not the CPU backend's to the bit (the family's section says why); the others' GPU handles
# give the cases' CPU results.
GPU_BASE_CASES: dict[str, Callable[[], list[Case]]] = {}


# ------------------------------------------------------------------------------------------ xdrop

def xdrop_arrays(pairs: warpdp.XdropPairs) -> dict[str, np.ndarray]:
    return {name: getattr(pairs, name) for name in ("h_bases", "v_bases", "h_offsets", "v_offsets", "h_pos", "v_pos")}


def xdrop_case(name: str, pairs: warpdp.XdropPairs, **params: Any) -> Case:
    def python() -> dict[str, np.ndarray]:
        r = warpdp.xdrop(pairs, backend="cpu", **params)
        return {c: np.asarray(getattr(r, c)) for c in ("score", "begin_h", "end_h", "begin_v", "end_v", "cells")}

    harness = {k: v for k, v in params.items() if k != "report"}
    harness["report"] = int(params.get("report") == "best")
    return Case(name, xdrop_arrays(pairs), harness, python)


def xdrop_cases() -> list[Case]:
    cases = []
    for stem, xs in (("logan-example", (5, 21, 100)), ("synthetic-300", (10, 50, 200))):
        path = data_file("xdrop", f"{stem}.tsv")
        if path is not None:
            pairs = warpdp.read_logan_text(path, k=17)
            cases += [xdrop_case(f"{stem}.x{x}", pairs, k=17, x=x) for x in xs]
            cases.append(xdrop_case(f"{stem}.best", pairs, k=17, x=30, report="best"))
    synthetic = []
    for _ in range(400):
        core = random_dna(int(RNG.integers(20, 600)))
        h, v = mutate(core, 0.1), core
        k = 11
        ph = int(RNG.integers(0, len(h) - k + 1))
        pv = min(ph, len(v) - k)
        synthetic.append((h, ph, v, pv))
    pairs = warpdp.pack_xdrop_pairs(synthetic)
    cases.append(xdrop_case("synthetic.scores", pairs, k=11, x=25, match=2, mismatch=-3, gap=-2))
    cases.append(xdrop_case("synthetic.best", pairs, k=11, x=8, report="best"))
    bad = warpdp.pack_xdrop_pairs([(b"ACGTACGTAC", 2, b"ACGTACGTAC", 2)])
    cases.append(xdrop_case("bad.k", bad, k=9, x=5))  # the seed runs past the end
    cases.append(xdrop_case("bad.gap", bad, k=3, x=5, gap=0))
    return cases


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


# ---------------------------------------------------------------------------------------- seedext

ALT = dict(a=2, b=5, o_del=5, e_del=2, o_ins=7, e_ins=1, w=30, end_bonus=0, zdrop=50)


def seedext_case(name: str, pairs: Any, **params: Any) -> Case:
    arrays = {"query": pairs.query, "target": pairs.target, "query_offsets": pairs.query_offsets,
              "target_offsets": pairs.target_offsets, "h0": pairs.h0.astype(np.int32)}

    def python() -> dict[str, np.ndarray]:
        return {"table": np.asarray(warpdp.seed_extend(pairs, backend="cpu", **params).table)}

    return Case(name, arrays, params, python)


def seedext_cases() -> list[Case]:
    cases = []
    path = data_file("seedext", "bwamem-like-500.tsv")
    if path is not None:
        pairs = warpdp.read_seedext_tsv(path)
        cases += [seedext_case("bwamem-like", pairs), seedext_case("bwamem-like.alt", pairs, **ALT)]
    synthetic = []
    for _ in range(300):
        target = random_dna(int(RNG.integers(1, 400)), b"ACGTN")
        synthetic.append((mutate(target, 0.08)[: int(RNG.integers(1, 300))] or b"A", target, int(RNG.integers(0, 60))))
    pairs = warpdp.pack_seed_pairs(synthetic)
    cases += [seedext_case("synthetic", pairs), seedext_case("synthetic.alt", pairs, **ALT)]
    cases.append(seedext_case("bad.a", pairs, a=500))
    return cases


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


# ---------------------------------------------------------------------------------------- pairhmm

# The Pair-HMM's GPU backend is not the CPU's to the bit (its float kernels fuse multiplies and adds;
# docs/semantics.md: both agree with GKL within 1e-4 in log10, 1e-6 where the CPU took the double
# path). A GPU handle's results are compared with the Python GPU backend's, element for element,
# and those with the CPU backend's within that tolerance.
FLOAT_TOL, DOUBLE_TOL = 1e-4, 1e-6
DOUBLE_PATH_BELOW = -28.0 - 120 * np.log10(2.0)  # a float result below 1e-28 (scaled by 2^120) is redone in double


def assert_within_gkl_tolerance(name: str, gpu: np.ndarray, cpu: np.ndarray, double: bool) -> None:
    assert np.array_equal(np.isneginf(gpu), np.isneginf(cpu)) and not np.isnan(gpu).any(), f"{name}: -inf/NaN differ"
    finite = ~np.isneginf(cpu)
    ref = cpu[finite]
    tol = np.full(len(ref), DOUBLE_TOL) if double else np.where(ref < DOUBLE_PATH_BELOW - 1e-3, DOUBLE_TOL, FLOAT_TOL)
    err = np.abs(gpu[finite] - ref)
    assert (err <= tol).all(), f"{name}: the Python GPU backend is off the CPU's by {err.max():.3g} ({(err > tol).sum()} pairs)"


def pairhmm_case(name: str, batches: Any, double: bool, backend: str = "cpu") -> Case:
    arrays = {n: getattr(batches, n) for n in ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp",
                                               "read_offsets", "hap_bases", "hap_offsets", "batch_reads",
                                               "batch_haps")}

    def python() -> dict[str, np.ndarray]:
        values = np.asarray(warpdp.pairhmm(batches, backend=backend, double=double))
        if backend == "gpu":
            assert_within_gkl_tolerance(name, values, warpdp.pairhmm(batches, backend="cpu", double=double), double)
        return {"values": values}

    return Case(name, arrays, {"double": int(double)}, python)


def pairhmm_cases(backend: str = "cpu") -> list[Case]:
    cases = []
    for stem in ("tiny", "10s"):
        path = data_file("pairhmm", f"{stem}.in")
        if path is not None:
            batches = warpdp.read_pairhmm_text(path)
            cases += [pairhmm_case(f"{stem}.{mode}", batches, mode == "double", backend) for mode in ("float", "double")]
    groups = []
    for _ in range(20):
        hap = random_dna(int(RNG.integers(30, 300)))
        reads = [warpdp.PairHmmRead(mutate(hap[i:i + 60], 0.05) or b"A", bytes(RNG.integers(2, 60, 200).tolist())[
            : len(mutate(hap[i:i + 60], 0.05) or b"A")]) for i in range(0, 40, 10)]
        reads = [warpdp.PairHmmRead(r.bases, r.quals[: len(r.bases)].ljust(len(r.bases), b"\x1e")) for r in reads]
        groups.append((reads, [hap, mutate(hap, 0.02) or b"A"]))
    batches = warpdp.pack_batches(groups)
    cases += [pairhmm_case(f"synthetic.{mode}", batches, mode == "double", backend) for mode in ("float", "double")]
    return cases


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


# ---------------------------------------------------------------------------------- align and edit

def seq_arrays(pairs: Any) -> dict[str, np.ndarray]:
    return {n: getattr(pairs, n) for n in ("query_bases", "target_bases", "query_offsets", "target_offsets")}


MODES = {"global": 0, "semiglobal": 1, "local": 2, "extension": 3, "gatk": 4}
OVERHANGS = {"SOFTCLIP": 0, "INDEL": 1, "LEADING_INDEL": 2, "IGNORE": 3}


def align_case(name: str, pairs: Any, **params: Any) -> Case:
    harness = dict(params)
    harness["mode"] = MODES[params.get("mode", "global")]
    harness["gaps"] = int(params.get("gaps", "affine") == "linear")
    harness["gap_convention"] = int(params.get("gap_convention", "L-1") == "L")
    harness["overhang"] = OVERHANGS[params.get("overhang", "SOFTCLIP")]
    harness["cigar"] = int(params.get("cigar", False))
    harness["zdrop"] = -1 if params.get("zdrop") is None else params["zdrop"]

    def python() -> dict[str, np.ndarray]:
        r = warpdp.align(pairs, backend="cpu", **params)
        out = {c: np.asarray(getattr(r, c)) for c in ("score", "query_begin", "query_end", "target_begin",
                                                       "target_end")}
        if params.get("cigar"):
            out["cigar_ops"], out["cigar_offsets"] = np.asarray(r.cigar_ops), np.asarray(r.cigar_offsets)
        return out

    return Case(name, seq_arrays(pairs), harness, python)


def align_cases() -> list[Case]:
    cases = []
    path = data_file("align", "pairs-400.tsv")
    if path is not None:
        pairs = warpdp.AlignPairs.from_sequences(short_pairs(path))
        for mode in ("global", "semiglobal", "local", "extension"):
            cases.append(align_case(f"pairs-400.{mode}.affine", pairs, mode=mode, cigar=True))
            cases.append(align_case(f"pairs-400.{mode}.linear", pairs, mode=mode, gaps="linear", gap_extend=4))
        cases.append(align_case("pairs-400.extension.zdrop", pairs, mode="extension", zdrop=20, cigar=True))
        cases.append(align_case("pairs-400.global.L", pairs, gap_open=6, gap_extend=1, gap_convention="L", cigar=True))
    path = data_file("sw", "gatk-sw-600.tsv")
    if path is not None:
        groups: dict[tuple, list[tuple[bytes, bytes]]] = {}
        for line in path.read_text().splitlines():
            ref, alt, match, mismatch, gap_open, gap_extend, overhang = line.split("\t")
            key = (int(match), int(mismatch), int(gap_open), int(gap_extend), overhang)
            groups.setdefault(key, []).append((alt.encode(), ref.encode()))  # query = alt, target = ref
        for (match, mismatch, go, ge, overhang), group in sorted(groups.items()):
            cases.append(align_case(f"gatk-sw.{match}.{mismatch}.{go}.{ge}.{overhang}",
                                    warpdp.AlignPairs.from_sequences(group), mode="gatk", match=match,
                                    mismatch=mismatch, gap_open=go, gap_extend=ge, overhang=overhang, cigar=True))
    synthetic = []
    for _ in range(200):
        t = random_dna(int(RNG.integers(1, 300)), b"ACGTN")
        synthetic.append((mutate(t, 0.15) or b"G", t))
    pairs = warpdp.AlignPairs.from_sequences(synthetic)
    matrix = tuple(tuple(int(v) for v in row) for row in RNG.integers(-6, 7, (5, 5)))
    cases.append(align_case("synthetic.matrix", pairs, mode="local", matrix=matrix, cigar=True))
    cases[-1].arrays["matrix"] = np.array(matrix, dtype=np.int32).ravel()
    cases[-1].params = {**cases[-1].params, "has_matrix": 1}
    del cases[-1].params["matrix"]
    cases.append(align_case("synthetic.semiglobal", pairs, mode="semiglobal", cigar=True))
    cases.append(align_case("bad.gap_open", pairs, gap_open=1, gap_extend=3))
    return cases


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


EDIT = {"mode": {"nw": 0, "shw": 1, "hw": 2}, "task": {"distance": 0, "locations": 1, "path": 2},
        "method": {"exact": 0, "windowed": 1}}


def edit_case(name: str, pairs: Any, **params: Any) -> Case:
    harness = {k: EDIT[k][v] if k in EDIT else v for k, v in params.items()}
    task = params.get("task", "distance")

    def python() -> dict[str, np.ndarray]:
        r = warpdp.edit(pairs, backend="cpu", **params)
        out = {"distance": np.asarray(r.distance), "target_begin": np.asarray(r.target_begin),
               "target_end": np.asarray(r.target_end)}
        if task in ("locations", "path"):
            out["loc_begin"], out["loc_end"], out["loc_offsets"] = (np.asarray(a) for a in r.locations)
        if task == "path":
            out["cigar_ops"], out["cigar_offsets"] = np.asarray(r.cigar_ops), np.asarray(r.cigar_offsets)
        return out

    return Case(name, seq_arrays(pairs), harness, python)


def edit_cases() -> list[Case]:
    cases = []
    path = data_file("edit", "pairs-400.tsv")
    if path is not None:
        pairs = warpdp.pack_edit_pairs(short_pairs(path))
        for mode in ("nw", "shw", "hw"):
            cases.append(edit_case(f"pairs-400.{mode}.path", pairs, mode=mode, task="path"))
            cases.append(edit_case(f"pairs-400.{mode}.locations.k", pairs, mode=mode, task="locations", k=40))
        for window, overlap in ((64, 33), (32, 17)):
            cases.append(edit_case(f"pairs-400.windowed.w{window}", pairs, mode="shw", method="windowed",
                                   window=window, overlap=overlap, task="path"))
            cases.append(edit_case(f"pairs-400.windowed.w{window}.distance", pairs, mode="shw", method="windowed",
                                   window=window, overlap=overlap))
    synthetic = []
    for _ in range(200):
        t = random_dna(int(RNG.integers(1, 500)))
        synthetic.append((mutate(t, 0.1)[: int(RNG.integers(1, 400))] or b"C", t))
    pairs = warpdp.pack_edit_pairs(synthetic)
    cases += [edit_case(f"synthetic.{mode}", pairs, mode=mode, task="path") for mode in ("nw", "shw", "hw")]
    cases.append(edit_case("synthetic.windowed.locations", pairs, mode="shw", method="windowed", task="locations",
                           window=20, overlap=5))
    # Large enough for a client handle's shared memory (MEMFD_MIN_BYTES), each task.
    large = []
    for _ in range(400):
        t = random_dna(int(RNG.integers(200, 400)))
        large.append((mutate(t, 0.1) or b"C", t))
    pairs = warpdp.pack_edit_pairs(large)
    cases += [edit_case(f"synthetic.large.hw.{task}", pairs, mode="hw", task=task, k=60 if task == "locations" else -1)
              for task in ("distance", "locations", "path")]
    cases.append(edit_case("bad.windowed.N", warpdp.pack_edit_pairs([(b"ACGNT", b"ACGGT")]), mode="shw",
                           method="windowed"))
    return cases


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


FAMILIES = {"xdrop": xdrop_cases, "seedext": seedext_cases, "pairhmm": pairhmm_cases, "align": align_cases,
            "edit": edit_cases}


TOKEN = "ctest-token-29"


def tls_files(work: Path) -> tuple[Path, Path] | None:
    """A self-signed certificate for localhost (openssl), or None where openssl is missing."""
    if shutil.which("openssl") is None:
        return None
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


# Families whose client handle asks for its results in shared memory (every family: align's and
# edit's ragged CIGARs and locations too), and the input bytes from which it must get them that
# way (its threshold is 64 KiB of packed arrays; the harness's files are at most twice as wide as
# the packed arrays: seed extension's h0 goes from int32 to int64).
REPLY_IN_MEMFD = ("xdrop", "seedext", "pairhmm", "align", "edit")
MEMFD_MIN_BYTES = 128 * 1024


def count_memfd_results() -> list[int]:
    """Counts (in the returned list's one item) the results this process's servers write into
    clients' memfds instead of their replies."""
    from warpdp.grpc import _shm_server

    written = [0]
    write = _shm_server.write_results

    def counting(*args: Any, **kwargs: Any) -> bool:
        done = write(*args, **kwargs)
        written[0] += bool(done)
        return done
    _shm_server.write_results = counting
    return written


def refuse_one_memfd(call: int) -> list[int]:
    """Makes this process's servers refuse the memfd of the call-th request that hands one over,
    as a server does with a memfd it no longer knows (FAILED_PRECONDITION); the returned
    list's one item counts the refusals."""
    import grpc

    from warpdp.grpc import _shm_server

    seen, refused = [0], [0]
    read = _shm_server.read_arrays

    def refusing(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        if seen[0] == call:
            refused[0] += 1
            raise _shm_server.SharedFileRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                                 "shared file unusable: refused by the test")
        return read(*args, **kwargs)
    _shm_server.read_arrays = refusing
    return refused


def run_refused_memfd(family: str, case: Case, harness: str, work: Path, connect: dict[str, str],
                      written: list[int]) -> list[str]:
    """Three calls of a case on one handle, the server refusing the second one's memfd: the
    client must send that call again in the message and the third through a new memfd."""
    from warpdp.grpc import _shm_server

    read, before = _shm_server.read_arrays, written[0]
    refused = refuse_one_memfd(2)
    try:
        problems = run_case(family, replace_name(case, "refused-memfd"), harness, work, connect, calls=3)
    finally:
        _shm_server.read_arrays = read
    if refused[0] != 1:
        problems.append(f"{case.name}: the second call did not hand a memfd over")
    elif family in REPLY_IN_MEMFD and written[0] - before != 2:
        problems.append(f"{case.name}: {written[0] - before} of the 2 calls that kept their memfd got "
                        "their results through it")
    return problems


def replace_name(case: Case, name: str) -> Case:
    copy = object.__new__(Case)
    copy.__dict__.update(case.__dict__, name=f"{case.name}.{name}")
    return copy


# A server limit (bytes of a request message, shared memory's arrays or a reply) that the large
# cases exceed: the client handle must split them into requests within it (some through shared
# memory, some in messages), and put the results together in order.
SMALL_LIMIT_BYTES = 96 * 1024


def count_requests(family: str) -> list[int]:
    """Counts the requests this process's servers decode for the family."""
    from warpdp import registry

    algorithm = type(registry.family(family).algorithm())
    counted = [0]
    decode = algorithm.decode

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted[0] += 1
        return decode(self, *args, **kwargs)

    algorithm.decode = counting
    return counted


def run_in_chunks(family: str, cases: list[Case], harness: str, work: Path) -> list[str]:
    """The cases over SMALL_LIMIT_BYTES on a server with that message limit: results equal, and
    each took several requests."""
    from warpdp.grpc import Server, ServerConfig

    problems, chunked = [], 0
    requests = count_requests(family)
    server = Server(ServerConfig(port=0, backend="cpu", host="127.0.0.1",
                                 max_message_mb=SMALL_LIMIT_BYTES / 2**20)).start()
    try:
        for case in cases:
            if case.expected is None or sum(a.nbytes for a in case.arrays.values()) <= SMALL_LIMIT_BYTES:
                continue
            before = requests[0]
            problems += run_case(family, replace_name(case, "small-limit"), harness, work / "chunks",
                                 {"server": server.address})
            chunked += 1
            if requests[0] - before < 2:
                problems.append(f"{case.name}: {requests[0] - before} request(s) on a server with a "
                                f"{SMALL_LIMIT_BYTES}-byte limit")
    finally:
        server.stop()
    print(f"{family}: {chunked} cases split for a server with a {SMALL_LIMIT_BYTES}-byte message limit")
    if not chunked:
        problems.append(f"no {family} case is large enough to be split for a {SMALL_LIMIT_BYTES}-byte limit")
    if family == "align":  # cells are simplest to count for align: query length x target length
        problems += run_over_cell_limit(family, [c for c in cases if c.expected is not None][0], harness, work,
                                        requests)
    return problems


def run_over_cell_limit(family: str, case: Case, harness: str, work: Path, requests: list[int]) -> list[str]:
    """A case on a server whose cell limit is a quarter of its cells: the server refuses the whole
    batch (RESOURCE_EXHAUSTED) and the client handle must halve it until the server takes it."""
    from warpdp.grpc import Server, ServerConfig

    cells = np.diff(case.arrays["query_offsets"]) * np.diff(case.arrays["target_offsets"])
    limit = max(int(cells.sum()) // 4, int(cells.max()))
    server = Server(ServerConfig(port=0, backend="cpu", host="127.0.0.1", max_request_cells=limit)).start()
    try:
        before = requests[0]
        problems = run_case(family, replace_name(case, "cell-limit"), harness, work / "chunks",
                            {"server": server.address})
    finally:
        server.stop()
    if requests[0] - before < 5:  # refused whole, refused halves, then at least four accepted
        problems.append(f"{case.name}: {requests[0] - before} request(s) on a server with a limit of {limit} cells")
    return problems


def run_on_server(family: str, cases: list[Case], harness: str, work: Path) -> list[str]:
    from warpdp.grpc import Server, ServerConfig

    problems = []
    written = count_memfd_results()
    server = Server(ServerConfig(port=0, backend="cpu", host="127.0.0.1", tokens=(TOKEN,))).start()
    try:
        connect = {"server": server.address, "token": TOKEN}
        large = []
        for case in cases:
            before = written[0]
            problems += run_case(family, case, harness, work / "server", connect)
            if case.expected is None or sum(a.nbytes for a in case.arrays.values()) < MEMFD_MIN_BYTES:
                continue
            large.append(case)
            if family in REPLY_IN_MEMFD and written[0] == before:
                problems.append(f"{case.name}: the server did not write the results into the client's memfd")
        print(f"{family}: {len(large)} cases large enough for shared memory, {written[0]} results written "
              "into memfds")
        if large:
            problems += run_refused_memfd(family, large[0], harness, work / "server", connect, written)
        elif family in REPLY_IN_MEMFD:
            problems.append(f"no {family} case is large enough to check results through shared memory")
        problems += run_case(family, cases[0], harness, work / "server",
                             {"server": server.address, "token": "wrong"}, refused="WARPDP_ERR_UNAUTHENTICATED")
    finally:
        server.stop()
    work.mkdir(parents=True, exist_ok=True)
    tls = tls_files(work)
    if tls is None:
        print("note: openssl is not installed: the TLS case does not run")
        return problems
    server = Server(ServerConfig(port=0, backend="cpu", host="127.0.0.1", tls_cert=tls[0], tls_key=tls[1])).start()
    try:
        port = server.address.rsplit(":", 1)[1]
        problems += run_case(family, cases[-2], harness, work / "tls",
                             {"server": f"localhost:{port}", "tls": "1", "tls_ca": str(tls[0])})
    finally:
        server.stop()
    return problems


NO_GPU_EXIT = 77  # the harness's exit when no GPU handle can be opened, and ctest's skip


def gpu_unusable(family: str, case: Case, harness: str, work: Path) -> bool:
    """True (with the harness's reason printed) when no GPU handle can be opened here."""
    folder = work / "gpu_probe"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, array in case.arrays.items():
        np.ascontiguousarray(array).tofile(folder / f"{name}.bin")
    (folder / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in {**case.params, "gpu": 0}.items()))
    done = subprocess.run([harness, family, str(folder)], capture_output=True, text=True, timeout=600)
    if done.returncode == NO_GPU_EXIT:
        print(f"skip: no GPU handle here: {done.stderr.strip()}")
        return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("family", choices=sorted(FAMILIES))
    parser.add_argument("--harness", required=True)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--server", action="store_true", help="through a client handle on a warpdp server")
    parser.add_argument("--gpu", action="store_true", help="through an in-process GPU handle (device 0)")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"note: {DATA} is absent: synthetic cases only")
    cases = FAMILIES[args.family]()
    problems = []
    if args.server:
        problems = run_on_server(args.family, cases, args.harness, args.work)
        problems += run_in_chunks(args.family, cases, args.harness, args.work)
    elif args.gpu:
        if gpu_unusable(args.family, cases[0], args.harness, args.work):
            return NO_GPU_EXIT
        cases = GPU_BASE_CASES.get(args.family, lambda: cases)() + GPU_CASES.get(args.family, list)()
        for case in cases:
            problems += run_case(args.family, case, args.harness, args.work / "gpu", {"gpu": "0"})
    else:
        for case in cases:
            problems += run_case(args.family, case, args.harness, args.work)
    for line in problems:
        print(line)
    refused = sum(case.expected is None for case in cases)
    where = "through a server" if args.server else "on a GPU handle" if args.gpu else "in process"
    print(f"{args.family} {where}: {len(cases)} cases ({refused} refused by both), {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
