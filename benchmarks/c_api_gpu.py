"""The C API's GPU handle (libwarpdp built with CUDA: warpdp_open_gpu) against the Python API's GPU
backend on the same packed arrays (issue 29), one large input per family: the results must be
equal element for element, and each side's time of one call is the median of --repeats calls
after a warm-up call on the same handle (the harness times the warpdp_<family> calls inside one
process; Python times warpdp.<family>(..., backend="gpu"): checks, chunking, copies, kernels),
both from arrays in memory to results in memory.

    python benchmarks/c_api_gpu.py --harness BUILD/tests/warpdp_harness [--family pairhmm]
                                   [--pairs 100000] [--repeats 5]

Build the harness without sanitizers (`cmake -S clients/cpp -B build/cpp-gpu -DCMAKE_BUILD_TYPE=Release
-DWARPDP_CUDA_ARCHITECTURES=90-real && cmake --build build/cpp-gpu`). Prints a markdown table for
BENCHMARKS.md; exits 1 when a family's results differ.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import warpdp  # noqa: E402
from bench_common import commit  # noqa: E402
from pairhmm_workloads import active_region_batches  # noqa: E402


@dataclass
class Row:
    family: str
    workload: str
    pairs: int
    c_seconds: float
    python_seconds: float
    equal: bool


def c_call(harness: str, family: str, arrays: dict[str, np.ndarray], params: dict[str, int], repeats: int,
           outputs: dict[str, Any]) -> tuple[float, dict[str, np.ndarray]]:
    """The median wall time of the `repeats` calls after a warm-up on a GPU handle (device 0), and the
    last call's outputs (name -> dtype)."""
    with tempfile.TemporaryDirectory() as folder:
        for name, array in arrays.items():
            np.ascontiguousarray(array).tofile(Path(folder) / f"{name}.bin")
        (Path(folder) / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in {**params, "gpu": 0}.items()))
        done = subprocess.run([harness, family, folder, str(repeats + 1)], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"warpdp_harness {family} failed ({done.returncode}): {done.stderr.strip()}")
        values = dict(line.split() for line in done.stdout.splitlines())
        got = {name: np.fromfile(Path(folder) / f"out_{name}.bin", dtype=dtype) for name, dtype in outputs.items()}
        return float(values["median_seconds"]), got


def python_calls(call: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall seconds of `repeats` calls after a warm-up call, and the last result."""
    result = call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


# ---------------------------------------------------------------------------------------- pairhmm

PAIRHMM_ARRAYS = ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp", "read_offsets", "hap_bases",
                  "hap_offsets", "batch_reads", "batch_haps")


def pairhmm(args: argparse.Namespace) -> list[Row]:
    """GATK-like active regions (10-50 reads of 100-150 bp against 2-5 haplotypes of 200-400 bp),
    about --pairs pairs, in GKL's float mode (with its double recomputation) and in double."""
    batches = active_region_batches(np.random.default_rng(29), max(1, args.pairs // 105))
    arrays = {name: getattr(batches, name) for name in PAIRHMM_ARRAYS}
    pairs = int(np.sum(np.diff(batches.batch_reads) * np.diff(batches.batch_haps)))
    rows = []
    for double in (False, True):
        c_seconds, got = c_call(args.harness, "pairhmm", arrays, {"double": int(double)}, args.repeats,
                                {"values": np.float64})
        seconds, want = python_calls(lambda: warpdp.pairhmm(batches, backend="gpu", double=double), args.repeats)
        workload = f"active regions, {batches.n_cells / 1e9:.2f} G cells, {'double' if double else 'float'}"
        rows.append(Row("pairhmm", workload, pairs, c_seconds, seconds,
                        bool(np.array_equal(got["values"], np.asarray(want)))))
    return rows


def equal_arrays(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> bool:
    return all(np.array_equal(got[name], np.asarray(want[name]).ravel()) for name in want)


# ------------------------------------------------------------------------------------------ xdrop

XDROP_ARRAYS = ("h_bases", "v_bases", "h_offsets", "v_offsets", "h_pos", "v_pos")
XDROP_COLUMNS = ("score", "begin_h", "end_h", "begin_v", "end_v", "cells")


def xdrop(args: argparse.Namespace) -> list[Row]:
    """--pairs LOGAN-style pairs (benchmarks/xdrop.py's generator), k = 17, X = 100, SeqAn's
    longest extension."""
    import xdrop as xdrop_benchmark

    pairs = xdrop_benchmark.make_workload(args.pairs)
    k, x = xdrop_benchmark.SEED_LENGTH, 100
    arrays = {name: getattr(pairs, name) for name in XDROP_ARRAYS}
    c_seconds, got = c_call(args.harness, "xdrop", arrays, {"k": k, "x": x, "report": 0}, args.repeats,
                            {c: np.int64 for c in XDROP_COLUMNS})

    def python() -> dict[str, np.ndarray]:
        r = warpdp.xdrop(pairs, k=k, x=x, backend="gpu")
        return {c: getattr(r, c) for c in XDROP_COLUMNS}

    seconds, want = python_calls(python, args.repeats)
    return [Row("xdrop", f"LOGAN-style pairs, k = {k}, X = {x}, longest", args.pairs, c_seconds, seconds,
                equal_arrays(got, want))]


# ------------------------------------------------------------------------------------------ align

ALIGN_COLUMNS = ("score", "query_begin", "query_end", "target_begin", "target_end")
SEQ_PAIR_ARRAYS = ("query_bases", "target_bases", "query_offsets", "target_offsets")


def align(args: argparse.Namespace) -> list[Row]:
    """--pairs reads of 125 bases against targets with 5-10 % differences (benchmarks/align.py's
    generator), global alignment, affine gaps (the defaults), with CIGARs."""
    from align import make_pairs

    packed = make_pairs(args.pairs, 125)
    arrays = {name: getattr(packed, name) for name in SEQ_PAIR_ARRAYS}
    outputs = {**{c: np.int64 for c in ALIGN_COLUMNS}, "cigar_ops": np.uint32, "cigar_offsets": np.int64}
    c_seconds, got = c_call(args.harness, "align", arrays, {"mode": 0, "cigar": 1}, args.repeats, outputs)

    def python() -> dict[str, np.ndarray]:
        r = warpdp.align(packed, mode="global", cigar=True, backend="gpu")
        return {**{c: r.columns[c] for c in ALIGN_COLUMNS}, "cigar_ops": r.cigar_ops, "cigar_offsets": r.cigar_offsets}

    seconds, want = python_calls(python, args.repeats)
    return [Row("align", "125 bp, 5-10 % differences, global affine, CIGAR", args.pairs, c_seconds, seconds,
                equal_arrays(got, want))]


# ------------------------------------------------------------------------------------------- edit

EDIT_OUTPUTS = {"distance": np.int64, "target_begin": np.int64, "target_end": np.int64, "loc_begin": np.int64,
                "loc_end": np.int64, "loc_offsets": np.int64, "cigar_ops": np.uint32, "cigar_offsets": np.int64}


def edit_arrays(result: Any) -> dict[str, np.ndarray]:
    """An EditResults' arrays by the harness's output names."""
    out = {c: np.asarray(getattr(result, c)) for c in ("distance", "target_begin", "target_end")}
    if result.locations is not None:
        out["loc_begin"], out["loc_end"], out["loc_offsets"] = (np.asarray(a) for a in result.locations)
    if result.cigar_ops is not None:
        out["cigar_ops"], out["cigar_offsets"] = np.asarray(result.cigar_ops), np.asarray(result.cigar_offsets)
    return out


def edit(args: argparse.Namespace) -> list[Row]:
    """--pairs short reads (100-250 bases, 1-5 % errors: benchmarks/edit.py's generator): Scrooge's
    windowed GenASM (W=32, O=17) with the path, and exact NW distance."""
    from edit import read_pairs

    pairs = read_pairs(args.pairs, (100, 250), (0.01, 0.05), (0.8, 0.1, 0.1), seed=2)
    arrays = {name: getattr(pairs, name) for name in SEQ_PAIR_ARRAYS}
    rows = []
    for workload, params, harness_params in (
            ("short reads, windowed W=32 O=17, path",
             {"mode": "shw", "method": "windowed", "window": 32, "overlap": 17, "task": "path"},
             {"mode": 1, "method": 1, "window": 32, "overlap": 17, "task": 2}),
            ("short reads, exact NW, distance", {"mode": "nw"}, {"mode": 0})):
        def python(params: dict[str, Any] = params) -> dict[str, np.ndarray]:
            return edit_arrays(warpdp.edit(pairs, backend="gpu", **params))

        seconds, want = python_calls(python, args.repeats)
        outputs = {name: EDIT_OUTPUTS[name] for name in want}
        c_seconds, got = c_call(args.harness, "edit", arrays, harness_params, args.repeats, outputs)
        equal = all(np.array_equal(got[name], want[name]) for name in want)
        rows.append(Row("edit", workload, pairs.n_pairs, c_seconds, seconds, equal))
    return rows


# ---------------------------------------------------------------------------------------- seedext

SEEDEXT_ARRAYS = ("query", "target", "query_offsets", "target_offsets")


def seedext(args: argparse.Namespace) -> list[Row]:
    """--pairs BWA-MEM-like extensions (benchmarks/seedext.py's generator: queries 50-250 bp,
    targets 0-100 bp longer, 2-8 % errors, h0 19-60), BWA-MEM's default parameters."""
    from seedext import bwa_like_pairs

    pairs = bwa_like_pairs(args.pairs)
    arrays = {**{name: getattr(pairs, name) for name in SEEDEXT_ARRAYS}, "h0": pairs.h0.astype(np.int32)}
    c_seconds, got = c_call(args.harness, "seedext", arrays, {}, args.repeats, {"table": np.int32})
    seconds, want = python_calls(lambda: warpdp.seed_extend(pairs, backend="gpu"), args.repeats)
    return [Row("seedext", "BWA-MEM-like, 50-250 bp queries, BWA-MEM defaults", args.pairs, c_seconds, seconds,
                bool(np.array_equal(got["table"], want.table.ravel())))]


FAMILIES: dict[str, Callable[[argparse.Namespace], list[Row]]] = {"pairhmm": pairhmm, "xdrop": xdrop, "align": align, "edit": edit,
                                                                   "seedext": seedext}


def device_name() -> str:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as error:  # noqa: BLE001  (a name for the report only)
        return f"unknown ({error})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harness", required=True, help="warpdp_harness of a Release build of clients/cpp with CUDA")
    parser.add_argument("--family", choices=sorted(FAMILIES), action="append",
                        help="the families to time (repeatable; default: all)")
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"GPU: {device_name()}; commit {commit()}; median of {args.repeats} calls after a warm-up\n")
    print("| family | workload | pairs | C GPU handle (s) | Python GPU (s) | Python / C | equal |")
    print("|---|---|---|---|---|---|---|")
    differ = False
    for family in args.family or sorted(FAMILIES):
        for row in FAMILIES[family](args):
            differ |= not row.equal
            print(f"| {row.family} | {row.workload} | {row.pairs} | {row.c_seconds:.4f} | {row.python_seconds:.4f} | "
                  f"{row.python_seconds / row.c_seconds:.2f} | {'yes' if row.equal else 'NO'} |", flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
