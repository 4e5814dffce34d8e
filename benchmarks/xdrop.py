"""X-drop seed extension throughput on the LOGAN-style workload of issue 6.

    python benchmarks/xdrop.py [--pairs 100000] [--x 10 100 1000 5000] [--backend auto|cpu|gpu]
                               [--threads N] [--cpu-isa scalar|avx2|avx512] [--repeats 3]

Workload: pairs with V of length uniform in 2,500..7,500; H is V with 15% errors split equally
into substitutions, insertions and deletions, except an exact 17-mer seed in the middle of V;
match 1 / mismatch -1 / gap -1. Times `warpdp.plugin.xdrop.xdrop` end to end, from packed arrays
in host memory to results in host memory (generation and one warm-up call, which compiles the GPU
kernels and allocates the buffers the GPU backend reuses, are not timed), and reports the median
wall-clock seconds, the DP cells computed (both directions, as LOGAN counts them) and
GCUPS = cells / s. With one CPU thread the calling thread's CPU time is reported too: on a
shared machine it leaves out the time other processes held the core (though not their
effect on caches and on the core's other hardware thread). Prints a markdown table for
BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import commit, cpu_name  # noqa: E402
from warpdp.plugin.backend import choose_backend
from warpdp.plugin.xdrop import XdropPairs, xdrop, xdrop_cpu_isas

SEED_LENGTH = 17


def mutate(rng: np.random.Generator, v: np.ndarray, seed_at: int, k: int, error_rate: float) -> tuple[np.ndarray, int]:
    """H from V with `error_rate` errors, equally substitutions, deletions and insertions (an insertion
    puts a random base before a V base); V[seed_at:seed_at+k] is copied exactly. Returns H and the
    seed's position in H."""
    n = len(v)
    u = rng.random(n)
    third = error_rate / 3
    u[seed_at:seed_at + k] = 1.0  # no edit inside the seed
    sub, dele, ins = u < third, (u >= third) & (u < 2 * third), (u >= 2 * third) & (u < error_rate)
    base = v.copy()
    # A substitution adds 1..3 modulo 4 to the base code, so it always changes the base.
    codes = np.searchsorted(np.frombuffer(b"ACGT", dtype=np.uint8), base)
    codes[sub] = (codes[sub] + rng.integers(1, 4, int(sub.sum()))) % 4
    base = np.frombuffer(b"ACGT", dtype=np.uint8)[codes]
    # Each V base becomes 0 (deleted), 1, or 2 (inserted base + itself) H bases.
    counts = 1 - dele.astype(np.int64) + ins.astype(np.int64)
    h = np.empty(int(counts.sum()), dtype=np.uint8)
    ends = np.cumsum(counts)
    kept = counts > 0
    h[ends[kept] - 1] = base[kept]
    inserted = ends[ins] - 2
    h[inserted] = np.frombuffer(b"ACGT", dtype=np.uint8)[rng.integers(0, 4, len(inserted))]
    seed_in_h = int(ends[seed_at] - 1)
    return h, seed_in_h


def make_workload(n_pairs: int, *, seed: int = 1, min_len: int = 2500, max_len: int = 7500,
                  error_rate: float = 0.15, k: int = SEED_LENGTH) -> XdropPairs:
    """The issue's workload (see the module doc), reproducible from `seed`."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"ACGT", dtype=np.uint8)
    v_parts, h_parts, v_pos, h_pos = [], [], [], []
    for length in rng.integers(min_len, max_len + 1, n_pairs):
        v = alphabet[rng.integers(0, 4, int(length))]
        at = int(length) // 2 - k // 2
        h, at_h = mutate(rng, v, at, k, error_rate)
        v_parts.append(v)
        h_parts.append(h)
        v_pos.append(at)
        h_pos.append(at_h)

    def offsets(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum([len(p) for p in parts], dtype=np.int64)]).astype(np.int64)

    return XdropPairs.from_arrays(h_bases=np.concatenate(h_parts), h_offsets=offsets(h_parts),
                                  v_bases=np.concatenate(v_parts), v_offsets=offsets(v_parts),
                                  h_pos=np.array(h_pos, dtype=np.int64), v_pos=np.array(v_pos, dtype=np.int64))






def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--x", type=int, nargs="+", default=[10, 100, 1000, 5000])
    parser.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--cpu-isa", default=None, help="force a CPU variant (scalar, avx2, avx512)")
    parser.add_argument("--report", choices=("longest", "best"), default="longest")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per X (the median is reported)")
    parser.add_argument("--seed", type=int, default=1, help="workload random seed")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    pairs = make_workload(args.pairs, seed=args.seed)
    generated = time.perf_counter() - start
    chosen = choose_backend(args.backend, "xdrop")
    cores = len(os.sched_getaffinity(0))
    threads = args.threads or cores
    where = (f"CPU {args.cpu_isa or xdrop_cpu_isas()[-1]}, {threads} thread(s)" if chosen == "cpu"
             else "GPU")
    print(f"machine: {cpu_name()}, {cores} cores; backend: {where}; commit {commit()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"command: python {' '.join(sys.argv)}")
    print(f"workload: {args.pairs} pairs, {len(pairs.v_bases) + len(pairs.h_bases)} bases "
          f"(generated in {generated:.1f} s, not timed)\n")
    one_thread = chosen == "cpu" and threads == 1
    print("| X | pairs | median s | all runs s | median CPU s (1 thread) | cells | GCUPS | pairs/s |")
    print("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    # Warm-up (not timed): CPU thread start-up; on the GPU, kernel compilation and the pinned
    # and device buffers, which the backend keeps for later calls (so the whole input, at the
    # smallest X, which is quick).
    warm = pairs if chosen == "gpu" else pairs.select(0, min(args.pairs, 64))
    xdrop(warm, k=SEED_LENGTH, x=min(args.x), report=args.report, backend=args.backend,
          threads=args.threads, cpu_isa=args.cpu_isa)
    for x in args.x:
        times, cpu_times = [], []
        for _ in range(args.repeats):
            start, start_cpu = time.perf_counter(), time.thread_time()
            results = xdrop(pairs, k=SEED_LENGTH, x=x, report=args.report, backend=args.backend,
                            threads=args.threads, cpu_isa=args.cpu_isa)
            times.append(time.perf_counter() - start)
            cpu_times.append(time.thread_time() - start_cpu)
        seconds = statistics.median(times)
        cpu = f"{statistics.median(cpu_times):.3f}" if one_thread else "-"
        cells = results.n_cells
        print(f"| {x} | {args.pairs} | {seconds:.3f} | {' '.join(f'{t:.3f}' for t in times)} | {cpu} | "
              f"{cells:.3e} | {cells / seconds / 1e9:.2f} | {args.pairs / seconds:,.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
