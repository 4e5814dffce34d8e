"""The C API's in-process GPU handle (warpdp_open_gpu, libwarpdp built with CUDA) against the Python
API's GPU backend on the same packed arrays (issue 29).

    python benchmarks/c_api_gpu.py --family FAMILY --harness BUILD/tests/warpdp_harness
                                   [--pairs N] [--repeats 5]

Build the harness without sanitizers (`cmake -S clients/cpp -B build/cpp-gpu -DCMAKE_BUILD_TYPE=Release
-DWARPDP_CUDA_ARCHITECTURES=90-real && cmake --build build/cpp-gpu`). Each family's workload (one
function per family in WORKLOADS) packs one large batch; the Python side times
`warpdp.<family>(..., backend="gpu")` (validation, chunking, copies, kernels), the C side the
warpdp_<family> call inside warpdp_harness on a GPU handle (device 0), both from arrays in memory
to results in memory. Each figure is the median of --repeats calls after one warm-up call (the
C side's warm-up runs in the same process, on the same handle). The C results of the last call
must equal the Python results, array for array. Prints C seconds, Python seconds and C / Python.
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
class Workload:
    """The harness's input arrays and params.txt entries, and the Python call (its output arrays
    by the harness's out_<name> names)."""

    arrays: dict[str, np.ndarray]
    params: dict[str, int]
    python: Callable[[], dict[str, np.ndarray]]


def align_workload(pairs: int) -> Workload:
    """Reads of 125 bases against targets with 5-10 % differences (benchmarks/align.py's
    generator), global alignment, affine gaps (the defaults), with CIGARs."""
    from align import make_pairs

    packed = make_pairs(pairs, 125)
    arrays = {n: getattr(packed, n) for n in ("query_bases", "target_bases", "query_offsets", "target_offsets")}

    def python() -> dict[str, np.ndarray]:
        r = warpdp.align(packed, mode="global", cigar=True, backend="gpu")
        out = {c: np.asarray(r.columns[c]) for c in ("score", "query_begin", "query_end", "target_begin",
                                                      "target_end")}
        out["cigar_ops"], out["cigar_offsets"] = np.asarray(r.cigar_ops), np.asarray(r.cigar_offsets)
        return out

    return Workload(arrays, {"mode": 0, "cigar": 1}, python)


WORKLOADS: dict[str, Callable[[int], Workload]] = {"align": align_workload}
DEFAULT_PAIRS = {"align": 100_000}


def python_median(call: Callable[[], dict[str, np.ndarray]], repeats: int) -> tuple[float, dict[str, np.ndarray]]:
    """Median seconds of `repeats` calls after a warm-up, and the last call's results."""
    found = call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        found = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), found


def c_median(harness: str, family: str, work: Workload,
             repeats: int) -> tuple[float, Path, tempfile.TemporaryDirectory]:
    """Median seconds of `repeats` calls after a warm-up on one GPU handle, and the folder of the
    results (kept while the returned TemporaryDirectory lives)."""
    folder = tempfile.TemporaryDirectory()
    path = Path(folder.name)
    for name, array in work.arrays.items():
        np.ascontiguousarray(array).tofile(path / f"{name}.bin")
    params = {**work.params, "gpu": 0}
    (path / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in params.items()))
    done = subprocess.run([harness, family, str(path), str(repeats + 1)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"warpdp_harness failed ({done.returncode}): {done.stderr.strip()}")
    values = dict(line.split() for line in done.stdout.splitlines())
    return float(values["median_seconds"]), path, folder


def differences(path: Path, expected: dict[str, np.ndarray]) -> list[str]:
    problems = []
    for name, want in expected.items():
        got = np.fromfile(path / f"out_{name}.bin", dtype=want.dtype)
        if not np.array_equal(got, want.ravel()):
            problems.append(name)
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", required=True, choices=sorted(WORKLOADS))
    parser.add_argument("--pairs", type=int, default=None, help="pairs of the batch (default: the family's)")
    parser.add_argument("--harness", required=True, help="warpdp_harness of a Release build with CUDA")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls after the warm-up (default 5)")
    args = parser.parse_args()
    pairs = args.pairs or DEFAULT_PAIRS[args.family]
    work = WORKLOADS[args.family](pairs)
    py, expected = python_median(work.python, args.repeats)
    c, path, folder = c_median(args.harness, args.family, work, args.repeats)
    with folder:
        problems = differences(path, expected)
    import cupy

    card = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"GPU: {card}, commit {commit()}, {args.family}, {pairs} pairs, median of {args.repeats} after a warm-up")
    print(f"C GPU handle (s) {c:.4f}  Python GPU (s) {py:.4f}  C / Python {c / py:.3f}  results "
          f"{'equal' if not problems else 'DIFFERENT: ' + ', '.join(problems)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
