"""Start-up time of the `warpdp` command (issue #28 target: --help and --version < 0.15 s), and
of a first GPU call (issue #28: kernels from the prebuilt fatbin, no NVRTC compile).

    python benchmarks/startup.py [--repeats 20]
    python benchmarks/startup.py --gpu [--gpu-repeats 3] [--families pairhmm,xdrop,...]

Runs `python -m warpdp --version`, `--help` and `python -c "import warpdp"` as new processes,
with this checkout's package, and prints the median and best wall time of each, against a bare
`python -c pass` for the interpreter's own share. Also lists which heavy modules each one imports.

With --gpu, instead: for each family, new processes that each make one small GPU call of that
family (`--first-gpu-call FAMILY`, which prints a JSON line), with the kernels from the fatbin
(the default) and compiled by NVRTC (WARPDP_NO_FATBIN=1), each with CuPy's kernel cache empty
(a new CUPY_CACHE_DIR: a user's first run) and warm (the same folder again). The first call's
time counts CUDA's start on the device, the module load or compile and the call itself; CuPy's
import is timed apart. The module cache's route and the NVRTC compiles seen are printed too.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's warpdp, not an installed one

from bench_common import commit, cpu_name  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 0.15
HEAVY = ("numpy", "grpc", "google.protobuf", "cupy", "pysam", "tqdm")
CASES = {
    "python -c pass (interpreter alone)": ["-c", "pass"],
    "import warpdp": ["-c", "import warpdp"],
    "warpdp --version": ["-m", "warpdp", "--version"],
    "warpdp --help": ["-m", "warpdp", "--help"],
}


def wall_times(arguments: list[str], repeats: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, *arguments], check=True, stdout=subprocess.DEVNULL, env=env, cwd=REPO)
        times.append(time.perf_counter() - start)
    return times


def heavy_imports(arguments: list[str]) -> list[str]:
    probe = ("import sys, runpy; sys.argv = ['warpdp', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('warpdp', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    if arguments[0] == "-c":
        probe = f"{arguments[1]}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"
        arguments = []
    else:
        arguments = arguments[2:]
    result = subprocess.run([sys.executable, "-c", probe, *arguments], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, check=True)
    return result.stderr.split()


# -- first GPU call --

FAMILIES = ("pairhmm", "xdrop", "seedext", "align", "edit")


def gpu_call(family: str) -> Callable[[], Any]:
    """A small GPU call of ``family`` on fixed inputs (made here, before the clock starts)."""
    import numpy as np

    import warpdp

    rng = np.random.default_rng(7)

    def dna(n: int) -> bytes:
        return np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, n)].tobytes()

    def mutated(seq: bytes, rate: float) -> bytes:
        out = np.frombuffer(seq, np.uint8).copy()
        hit = rng.random(len(out)) < rate
        out[hit] = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, int(hit.sum()))]
        return out.tobytes()

    pairs = [(mutated(t, 0.05), t) for t in (dna(int(n)) for n in rng.integers(100, 400, 64))]
    if family == "pairhmm":
        batches = warpdp.read_pairhmm_text(str(REPO / "examples" / "example.in"))
        return lambda: warpdp.pairhmm(batches, backend="gpu")
    if family == "xdrop":
        packed = warpdp.pack_xdrop_pairs([(q[:50] + t[50:67] + q[67:], 50, t, 50) for q, t in pairs])
        return lambda: warpdp.xdrop(packed, k=17, x=20, backend="gpu")
    if family == "seedext":
        seeds = warpdp.pack_seed_pairs([(q[:90], t, 30) for q, t in pairs])
        return lambda: warpdp.seed_extend(seeds, backend="gpu")
    if family == "align":
        aligned = warpdp.AlignPairs.from_sequences(pairs)
        return lambda: warpdp.align(aligned, mode="local", cigar=True, backend="gpu")
    if family == "edit":
        edited = warpdp.pack_edit_pairs(pairs)
        return lambda: warpdp.edit(edited, mode="nw", task="path", backend="gpu")
    raise ValueError(f"unknown family {family!r}")


def digest(result: Any) -> str:
    """A hash of every output array of a family's result."""
    h = hashlib.sha256()
    if hasattr(result, "columns"):
        arrays = [result.columns[name] for name in sorted(result.columns)]
        arrays += [a for a in (result.cigar_ops, result.cigar_offsets) if a is not None]
        arrays += list(getattr(result, "locations", None) or ())
    else:
        arrays = [result]
    for array in arrays:
        h.update(array.tobytes())
    return h.hexdigest()


def first_gpu_call(family: str) -> dict[str, Any]:
    """In this (new) process: time the first and a second GPU call of ``family``, counting the
    NVRTC compiles of warpdp's modules (cupy.RawModule from source) on the way."""
    call = gpu_call(family)
    start = time.perf_counter()
    import cupy

    cupy_import_s = time.perf_counter() - start
    compiles = []
    raw_module = cupy.RawModule

    def counting_raw_module(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("code") is not None or args:
            compiles.append(1)
        return raw_module(*args, **kwargs)

    cupy.RawModule = counting_raw_module
    start = time.perf_counter()
    result = call()
    first_s = time.perf_counter() - start
    start = time.perf_counter()
    call()
    second_s = time.perf_counter() - start
    from warpdp.kernels.runtime import module_cache

    routes = {f"{device}:{name}": route for (device, name), route in module_cache.routes().items()}
    return {"family": family, "routes": routes, "nvrtc_modules": len(compiles), "cupy_import_s": cupy_import_s,
            "first_call_s": first_s, "second_call_s": second_s, "digest": digest(result)}


def run_first_call(family: str, fatbin: bool, cache_dir: str) -> dict[str, Any]:
    """--first-gpu-call in a new process; the parsed JSON line."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "CUPY_CACHE_DIR": cache_dir}
    env.pop("WARPDP_NO_FATBIN", None)
    if not fatbin:
        env["WARPDP_NO_FATBIN"] = "1"
    start = time.perf_counter()
    run = subprocess.run([sys.executable, __file__, "--first-gpu-call", family], capture_output=True, text=True,
                         env=env, cwd=REPO)
    if run.returncode:
        raise SystemExit(f"--first-gpu-call {family} failed:\n{run.stderr[-3000:]}")
    return {**json.loads(run.stdout.strip().splitlines()[-1]), "process_s": time.perf_counter() - start}


def gpu_table(families: list[str], repeats: int) -> int:
    from warpdp.kernels.runtime import fatbin_build
    from warpdp.plugin.backend import gpu_status

    ok, why = gpu_status(families[0])
    if not ok:
        print(f"startup.py --gpu: no usable GPU: {why}", file=sys.stderr)
        return 1
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    print(f"GPU: {props['name'].decode()}; CPU: {cpu_name()}; commit {commit()}; nvcc for the fatbin: "
          f"{'found' if fatbin_build.find_nvcc() else 'not found'}\n")
    print("| family | kernels | CuPy cache | first call median s | best s | second call s | process s | route |"
          " NVRTC modules | same results |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for family in families:
        ok, why = gpu_status(family)
        if not ok:
            print(f"| {family} | GPU not usable: {why} |")
            continue
        digests = set()
        for fatbin in (True, False):
            runs: dict[str, list[dict[str, Any]]] = {"empty": [], "warm": []}
            for _ in range(repeats):
                with tempfile.TemporaryDirectory(prefix="cupy-cache-") as cache:
                    runs["empty"].append(run_first_call(family, fatbin, cache))
                    runs["warm"].append(run_first_call(family, fatbin, cache))
            for cache_state, rows in runs.items():
                firsts = [r["first_call_s"] for r in rows]
                digests |= {r["digest"] for r in rows}
                routes = sorted({route for r in rows for route in r["routes"].values()})
                print(f"| {family} | {'fatbin' if fatbin else 'NVRTC (WARPDP_NO_FATBIN=1)'} | {cache_state} | "
                      f"{statistics.median(firsts):.3f} | {min(firsts):.3f} | "
                      f"{statistics.median(r['second_call_s'] for r in rows):.3f} | "
                      f"{statistics.median(r['process_s'] for r in rows):.2f} | {'/'.join(routes)} | "
                      f"{max(r['nvrtc_modules'] for r in rows)} | {'yes' if len(digests) == 1 else 'NO'} |",
                      flush=True)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--gpu", action="store_true", help="time a first GPU call per family, fatbin vs NVRTC")
    parser.add_argument("--gpu-repeats", type=int, default=3)
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--first-gpu-call", metavar="FAMILY", help=argparse.SUPPRESS)  # the child of --gpu
    args = parser.parse_args()
    if args.first_gpu_call:
        print(json.dumps(first_gpu_call(args.first_gpu_call)))
        return
    if args.gpu:
        sys.exit(gpu_table(args.families.split(","), args.gpu_repeats))
    print(f"CPU: {cpu_name()}; commit {commit()}; Python {sys.version.split()[0]}; target < {TARGET_S} s\n")
    print("| command | median s | best s | heavy modules imported |")
    print("|---|---|---|---|")
    for label, arguments in CASES.items():
        times = wall_times(arguments, args.repeats)
        heavy = ", ".join(heavy_imports(arguments)) or "none"
        print(f"| {label} | {statistics.median(times):.3f} | {min(times):.3f} | {heavy} |")


if __name__ == "__main__":
    main()
