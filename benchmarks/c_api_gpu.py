"""The C API's GPU handle (warpdp_open_gpu, libwarpdp built with CUDA) against the Python API's GPU
backend on the same packed arrays (issue 29).

    python benchmarks/c_api_gpu.py --family seedext --harness BUILD/tests/warpdp_harness
                                   [--pairs 100000 [1000000 ...]] [--repeats 5]

Build clients/cpp with CUDA and without sanitizers first (`cmake -S clients/cpp -B build/cpp-gpu
-DWARPDP_CUDA_ARCHITECTURES=90-real -DCMAKE_BUILD_TYPE=Release && cmake --build build/cpp-gpu`).
For each size a workload is packed once. The Python side times `warpdp.<family>(...,
backend="gpu")` (validation, planning, copies, kernels), the C side the warpdp_<family> call on a
GPU handle inside warpdp_harness; each is the median of --repeats calls after a warm-up call (the
first call of a process compiles or loads kernels and grows its buffers). The C results must equal
Python's, array for array. Prints a markdown table for BENCHMARKS.md.

Each family is one function (pairs -> Workload), registered in FAMILIES.
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
    arrays: dict[str, np.ndarray]                    # the harness's input files
    params: dict[str, int]                           # its params.txt (besides "gpu")
    python: Callable[[], dict[str, np.ndarray]]      # the Python GPU call: output name -> array


def seedext(n: int) -> Workload:
    """benchmarks/seedext.py's BWA-MEM-like extensions, BWA-MEM's default parameters."""
    from seedext import bwa_like_pairs

    pairs = bwa_like_pairs(n)
    arrays = {"query": pairs.query, "target": pairs.target, "query_offsets": pairs.query_offsets,
              "target_offsets": pairs.target_offsets, "h0": pairs.h0.astype(np.int32)}
    return Workload(arrays, {}, lambda: {"table": warpdp.seed_extend(pairs, backend="gpu").table})


FAMILIES: dict[str, Callable[[int], Workload]] = {"seedext": seedext}


def python_median(call: Callable[[], dict[str, np.ndarray]], repeats: int) -> tuple[float, dict[str, np.ndarray]]:
    """Median seconds of `repeats` calls after a warm-up, and the last call's outputs."""
    out = call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def c_median(harness: str, family: str, work: Workload, repeats: int, folder: Path) -> float:
    """Median seconds of `repeats` calls after a warm-up, in one harness process on GPU 0."""
    for name, array in work.arrays.items():
        np.ascontiguousarray(array).tofile(folder / f"{name}.bin")
    params = {**work.params, "gpu": 0}
    (folder / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in params.items()))
    done = subprocess.run([harness, family, str(folder), str(repeats + 1)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"warpdp_harness failed (exit {done.returncode}): {done.stderr.strip()}")
    values = dict(line.split() for line in done.stdout.splitlines())
    return float(values["median_seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", required=True, choices=sorted(FAMILIES))
    parser.add_argument("--pairs", type=int, nargs="+", default=[100_000])
    parser.add_argument("--harness", required=True, help="warpdp_harness of a Release build of clients/cpp with CUDA")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"GPU: {device}, commit {commit()}, median of {args.repeats} calls after a warm-up\n")
    print("| family | pairs | Python API, GPU (s) | C API, GPU handle (s) | C / Python | results equal |")
    print("|---|---:|---:|---:|---:|---|")
    failed = False
    for n in args.pairs:
        work = FAMILIES[args.family](n)
        python_seconds, expected = python_median(work.python, args.repeats)
        with tempfile.TemporaryDirectory() as folder:
            c_seconds = c_median(args.harness, args.family, work, args.repeats, Path(folder))
            equal = all(np.array_equal(np.fromfile(Path(folder) / f"out_{name}.bin", dtype=want.dtype).reshape(want.shape),
                                       want) for name, want in expected.items())
        failed |= not equal
        print(f"| {args.family} | {n:,} | {python_seconds:.4f} | {c_seconds:.4f} | {c_seconds / python_seconds:.3f} | "
              f"{'yes' if equal else 'NO'} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
