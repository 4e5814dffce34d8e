"""The C API's in-process GPU handle (warpdp_open_gpu, libwarpdp built with CUDA) against the Python
API's GPU backend on the same packed arrays (issue 29).

    python benchmarks/c_api_gpu.py --family FAMILY --harness BUILD/tests/warpdp_harness
                                   [--pairs N] [--repeats 5]

Build the harness without sanitizers (`cmake -S clients/cpp -B build/cpp-gpu -DCMAKE_BUILD_TYPE=Release
-DWARPDP_CUDA_ARCHITECTURES=90-real && cmake --build build/cpp-gpu`). Each family's function (FAMILIES)
packs one large batch and times its rows: the Python side `warpdp.<family>(..., backend="gpu")`
(validation, chunking, copies, kernels), the C side the warpdp_<family> call inside warpdp_harness on
a GPU handle (device 0), both from arrays in memory to results in memory. Each figure is the median
of --repeats calls after one warm-up call (the C side's in the same process, on the same handle).
The C results of the last call must equal the Python results, array for array (exit 1 otherwise).
Prints C seconds, Python seconds and C / Python per row.
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
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import warpdp  # noqa: E402
from bench_common import commit  # noqa: E402


@dataclass
class Row:
    family: str
    workload: str
    pairs: int
    c_seconds: float
    python_seconds: float
    equal: bool


def python_median(call: Callable[[], dict[str, np.ndarray]], repeats: int) -> tuple[float, dict[str, np.ndarray]]:
    """Median seconds of `repeats` calls after a warm-up, and the last call's results."""
    found = call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        found = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), found


def c_median(harness: str, family: str, arrays: dict[str, np.ndarray], params: dict[str, int], repeats: int,
             expected: dict[str, np.ndarray]) -> tuple[float, bool]:
    """Median seconds of `repeats` calls after a warm-up on one GPU handle, and whether the last
    call's outputs equal `expected` (out_<name> arrays)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder)
        for name, array in arrays.items():
            np.ascontiguousarray(array).tofile(path / f"{name}.bin")
        (path / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in {**params, "gpu": 0}.items()))
        done = subprocess.run([harness, family, folder, str(repeats + 1)], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"warpdp_harness {family} failed ({done.returncode}): {done.stderr.strip()}")
        values = dict(line.split() for line in done.stdout.splitlines())
        equal = all(np.array_equal(np.fromfile(path / f"out_{name}.bin", dtype=want.dtype), want.ravel())
                    for name, want in expected.items())
        return float(values["median_seconds"]), equal


# ------------------------------------------------------------------------------------------- edit

def edit(args: argparse.Namespace) -> list[Row]:
    """Short reads (100-250 bases, 1-5 % errors: benchmarks/edit.py's generator): Scrooge's windowed
    GenASM (W=32, O=17) with the path, and exact NW distance."""
    from edit import read_pairs

    pairs = read_pairs(args.pairs or 100_000, (100, 250), (0.01, 0.05), (0.8, 0.1, 0.1), seed=2)
    arrays = {n: getattr(pairs, n) for n in ("query_bases", "target_bases", "query_offsets", "target_offsets")}
    rows = []
    for workload, params, harness_params in (
            ("windowed W=32 O=17, path", {"mode": "shw", "method": "windowed", "window": 32, "overlap": 17,
                                          "task": "path"},
             {"mode": 1, "method": 1, "window": 32, "overlap": 17, "task": 2}),
            ("exact NW, distance", {"mode": "nw"}, {"mode": 0})):
        def python(params: dict = params) -> dict[str, np.ndarray]:
            r = warpdp.edit(pairs, backend="gpu", **params)
            out = {c: np.asarray(getattr(r, c)) for c in ("distance", "target_begin", "target_end")}
            if r.locations is not None:
                out["loc_begin"], out["loc_end"], out["loc_offsets"] = (np.asarray(a) for a in r.locations)
            if r.cigar_ops is not None:
                out["cigar_ops"], out["cigar_offsets"] = np.asarray(r.cigar_ops), np.asarray(r.cigar_offsets)
            return out

        py, expected = python_median(python, args.repeats)
        c, equal = c_median(args.harness, "edit", arrays, harness_params, args.repeats, expected)
        rows.append(Row("edit", workload, pairs.n_pairs, c, py, equal))
    return rows


FAMILIES: dict[str, Callable[[argparse.Namespace], list[Row]]] = {"edit": edit}


def device_name() -> str:
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", required=True, choices=sorted(FAMILIES))
    parser.add_argument("--pairs", type=int, default=None, help="pairs of the batch (default: the family's)")
    parser.add_argument("--harness", required=True, help="warpdp_harness of a Release build with CUDA")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls after the warm-up (default 5)")
    args = parser.parse_args()
    rows = FAMILIES[args.family](args)
    print(f"GPU: {device_name()}; commit {commit()}; median of {args.repeats} calls after a warm-up\n")
    print("| family | workload | pairs | C GPU handle (s) | Python GPU (s) | C / Python | equal |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.family} | {r.workload} | {r.pairs} | {r.c_seconds:.4f} | {r.python_seconds:.4f} | "
              f"{r.c_seconds / r.python_seconds:.3f} | {'yes' if r.equal else 'NO'} |")
    return 0 if all(r.equal for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
