"""The C API's GPU handles (libwarpdp built with CUDA, warpdp_open_gpu) against the Python API's GPU
backend on the same batch (issue 29): C seconds, Python seconds and C / Python.

    python benchmarks/c_api_gpu.py --harness BUILD/tests/warpdp_harness [--family xdrop] [--pairs N]
                                   [--repeats 5]

Build libwarpdp with CUDA and without sanitizers first (`cmake -S clients/cpp -B build/cpp-gpu
-DCMAKE_BUILD_TYPE=Release -DWARPDP_CUDA_ARCHITECTURES=90-real && cmake --build build/cpp-gpu`).
Per family one workload is packed once (not timed). The C side is warpdp_harness on a GPU handle
(device 0): --repeats + 1 calls in one process, the first a warm-up (buffers, module load), each
call timed from packed arrays in host memory to results in host memory; the Python side is
`warpdp.<family>(..., backend="gpu")` on the same arrays, one warm-up call, then --repeats timed
calls. Each figure is the median of the timed calls; the C outputs must equal Python's, array for
array. Families:

  xdrop  benchmarks/xdrop.py's LOGAN-style workload (V 2,500..7,500 bases, H = V with 15% errors
         around an exact 17-mer seed; default 100,000 pairs), X = 100, longest extension.

Prints a markdown table for BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import warpdp  # noqa: E402
from bench_common import commit, cpu_name  # noqa: E402


@dataclass
class Workload:
    """A family's batch: the harness's input arrays and params.txt entries, the Python call, and
    the Python result's arrays by the harness's output names."""
    description: str
    n_pairs: int
    arrays: dict[str, np.ndarray]
    params: dict[str, int]
    python: Callable[[], Any]
    outputs: Callable[[Any], dict[str, np.ndarray]]


def xdrop_workload(n_pairs: int) -> Workload:
    import xdrop as xdrop_benchmark  # benchmarks/xdrop.py: the LOGAN-style generator

    pairs = xdrop_benchmark.make_workload(n_pairs)
    k, x = xdrop_benchmark.SEED_LENGTH, 100
    arrays = {name: getattr(pairs, name) for name in ("h_bases", "v_bases", "h_offsets", "v_offsets", "h_pos",
                                                       "v_pos")}
    return Workload(f"LOGAN-style pairs (benchmarks/xdrop.py), k = {k}, X = {x}, longest", n_pairs, arrays,
                    {"k": k, "x": x, "report": 0},
                    lambda: warpdp.xdrop(pairs, k=k, x=x, backend="gpu"),
                    lambda r: {name: np.asarray(getattr(r, name))
                               for name in ("score", "begin_h", "end_h", "begin_v", "end_v", "cells")})


FAMILIES: dict[str, Callable[[int], Workload]] = {"xdrop": xdrop_workload}
DEFAULT_PAIRS = {"xdrop": 100_000}


def c_seconds(harness: str, family: str, work: Workload, repeats: int, folder: Path) -> list[float]:
    """The timed calls' wall seconds on a GPU handle (after one warm-up call); outputs left in folder."""
    for name, array in work.arrays.items():
        np.ascontiguousarray(array).tofile(folder / f"{name}.bin")
    params = {**work.params, "gpu": 0}
    (folder / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in params.items()))
    done = subprocess.run([harness, family, str(folder), str(repeats + 1)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"warpdp_harness failed (exit {done.returncode}): {done.stderr.strip()}")
    values = dict(line.split() for line in done.stdout.splitlines())
    return [float(s) for s in values["call_seconds"].split(",")][1:]


def python_seconds(work: Workload, repeats: int) -> tuple[list[float], Any]:
    """The timed calls' wall seconds (after one warm-up call) and the last call's result."""
    result = work.python()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = work.python()
        times.append(time.perf_counter() - start)
    return times, result


def same_outputs(work: Workload, result: Any, folder: Path) -> bool:
    for name, want in work.outputs(result).items():
        got = np.fromfile(folder / f"out_{name}.bin", dtype=want.dtype)
        if not np.array_equal(got, want.reshape(-1)):
            print(f"{name}: the C API's GPU handle and Python differ at {int((got != want.reshape(-1)).sum())} "
                  "entries", file=sys.stderr)
            return False
    return True


def gpu_name() -> str:
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--harness", required=True, help="warpdp_harness of a libwarpdp built with CUDA")
    parser.add_argument("--family", choices=sorted(FAMILIES), nargs="+", default=sorted(FAMILIES))
    parser.add_argument("--pairs", type=int, default=None, help="pairs per workload (default: the family's)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per side (the median is reported)")
    args = parser.parse_args(argv)
    print(f"machine: {cpu_name()}, GPU {gpu_name()}; commit {commit()}")
    print(f"command: python {' '.join(sys.argv)}\n")
    print("| family | workload | pairs | C GPU handle s (median) | Python GPU s (median) | C / Python | equal |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    failed = False
    for family in args.family:
        work = FAMILIES[family](args.pairs or DEFAULT_PAIRS[family])
        with tempfile.TemporaryDirectory() as folder:
            c_times = c_seconds(args.harness, family, work, args.repeats, Path(folder))
            py_times, result = python_seconds(work, args.repeats)
            equal = same_outputs(work, result, Path(folder))
        c, py = statistics.median(c_times), statistics.median(py_times)
        failed |= not equal
        print(f"| {family} | {work.description} | {work.n_pairs} | {c:.3f} | {py:.3f} | {c / py:.2f} | "
              f"{'yes' if equal else 'NO'} |", flush=True)
        print(f"<!-- {family}: C runs {' '.join(f'{t:.3f}' for t in c_times)}; Python runs "
              f"{' '.join(f'{t:.3f}' for t in py_times)} -->", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
