"""Every family's cases for compare_python.py (in process, on a server and on a GPU handle): the
reference inputs of ../shared/data where that folder exists, and synthetic pairs."""
from __future__ import annotations

from typing import Any

import numpy as np

import warpdp
from cases import RNG, Case, data_file, mutate, random_dna, short_pairs

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
