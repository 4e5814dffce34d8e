"""ctest: one warpdp.h entry point against the Python API, on ../shared/data inputs (where that
folder exists) and on synthetic pairs (always).

    compare_python.py FAMILY --harness PATH --work DIR [--server]

For each case the packed arrays go to DIR/<case>/ as raw files, warpdp_harness runs the C entry
point on them, and every output array must equal what the Python API (warpdp.<family>, CPU
backend, the same CPU variant) returns for the same arrays, element for element. Bad inputs must
make both refuse: Python with ValueError, the C API with an error code and a message.

With --gpu the harness opens an in-process GPU handle (warpdp_open_gpu, device 0): the same
cases, the same expected arrays (the GPU backend gives the CPU's results); the test exits 77
(ctest's skip) when no GPU is usable or the library has no GPU backend.

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


# ---------------------------------------------------------------------------------------- pairhmm

def pairhmm_case(name: str, batches: Any, double: bool) -> Case:
    arrays = {n: getattr(batches, n) for n in ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp",
                                               "read_offsets", "hap_bases", "hap_offsets", "batch_reads",
                                               "batch_haps")}

    def python() -> dict[str, np.ndarray]:
        return {"values": np.asarray(warpdp.pairhmm(batches, backend="cpu", double=double))}

    return Case(name, arrays, {"double": int(double)}, python)


def pairhmm_cases() -> list[Case]:
    cases = []
    for stem in ("tiny", "10s"):
        path = data_file("pairhmm", f"{stem}.in")
        if path is not None:
            batches = warpdp.read_pairhmm_text(path)
            cases += [pairhmm_case(f"{stem}.float", batches, False), pairhmm_case(f"{stem}.double", batches, True)]
    groups = []
    for _ in range(20):
        hap = random_dna(int(RNG.integers(30, 300)))
        reads = [warpdp.PairHmmRead(mutate(hap[i:i + 60], 0.05) or b"A", bytes(RNG.integers(2, 60, 200).tolist())[
            : len(mutate(hap[i:i + 60], 0.05) or b"A")]) for i in range(0, 40, 10)]
        reads = [warpdp.PairHmmRead(r.bases, r.quals[: len(r.bases)].ljust(len(r.bases), b"\x1e")) for r in reads]
        groups.append((reads, [hap, mutate(hap, 0.02) or b"A"]))
    batches = warpdp.pack_batches(groups)
    cases += [pairhmm_case("synthetic.float", batches, False), pairhmm_case("synthetic.double", batches, True)]
    return cases


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
        gpu_only = GPU_CASES.get(args.family, list)()
        for case in cases + gpu_only:
            problems += run_case(args.family, case, args.harness, args.work / "gpu", {"gpu": "0"})
        print(f"{args.family}: {len(gpu_only)} GPU-only cases besides the ones below")
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
