"""Pairwise alignment throughput (the align family): GPU TCUPS score-only and with CIGAR, CPU pairs/s.

    python benchmarks/align.py [--pairs 1000000] [--cigar-pairs 100000] [--cpu-pairs 2000]
                               [--lengths 512,125] [--mode global] [--repeats 3]

Workload per length L: targets of L random bases; each query is its target with 5-10 %
differences (per pair a rate drawn in 5..10 %: 80 % of the differences substitutions, 10 %
one-base deletions, 10 % one-base insertions). Affine gaps, the defaults (match 2, mismatch -3,
open 5, extend 2, convention L-1). Times ``warpdp.align`` end to end from packed arrays in memory
to results in memory (validation, chunking, copies, kernels). Cells are len_q * len_t summed;
TCUPS = cells / s / 10^12. The CPU rows run one thread (the best CPU variant, or $WARPDP_CPU_ISA) on
the first --cpu-pairs pairs; the GPU's answers on those pairs are checked against the CPU's (every
column and the CIGARs). One thread against parasail and ksw2: benchmarks/align_cpu.py.
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
import warpdp  # noqa: E402
from warpdp.plugin.align import COLUMNS, AlignPairs, AlignParams, align, align_cpu_isas  # noqa: E402

ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)


def make_pairs(n: int, length: int, seed: int = 1) -> AlignPairs:
    """n targets of `length` bases and queries with 5-10 % differences (module doc)."""
    rng = np.random.default_rng(seed)
    target = ACGT[rng.integers(0, 4, n * length)]
    rate = np.repeat(rng.uniform(0.05, 0.10, n), length)
    draw = rng.random(n * length)
    deleted = draw < rate * 0.1
    inserted = (draw >= rate * 0.1) & (draw < rate * 0.2)
    substituted = (draw >= rate * 0.2) & (draw < rate)
    codes = np.searchsorted(ACGT, target)
    codes[substituted] = (codes[substituted] + rng.integers(1, 4, int(substituted.sum()))) % 4
    copies = np.where(deleted, 0, np.where(inserted, 2, 1))
    query = np.repeat(ACGT[codes], copies)
    per_pair = np.add.reduceat(copies, np.arange(0, n * length, length))
    if (per_pair == 0).any():
        raise SystemExit("a query lost every base: use longer pairs")
    query_offsets = np.concatenate(([0], np.cumsum(per_pair))).astype(np.int64)
    target_offsets = np.arange(0, n * length + 1, length, dtype=np.int64)
    return AlignPairs(query, query_offsets, target, target_offsets)


def median_seconds(pairs: AlignPairs, params: AlignParams, repeats: int, **options) -> float:
    align(pairs, params, **options)  # warm-up: compile, buffers
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        align(pairs, params, **options)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def check(pairs: AlignPairs, params: AlignParams) -> str:
    gpu = align(pairs, params, backend="gpu")
    cpu = align(pairs, params, backend="cpu")
    same = all(np.array_equal(gpu.columns[c], cpu.columns[c]) for c in COLUMNS)
    if params.cigar:
        same = same and np.array_equal(gpu.cigar_ops, cpu.cigar_ops) and np.array_equal(gpu.cigar_offsets,
                                                                                       cpu.cigar_offsets)
    return "identical" if same else "DIFFERENT"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1_000_000, help="pairs per length, score only (default 10^6)")
    parser.add_argument("--cigar-pairs", type=int, default=100_000, help="pairs per length with CIGAR")
    parser.add_argument("--cpu-pairs", type=int, default=2000, help="pairs per length on one CPU thread")
    parser.add_argument("--lengths", default="512,125")
    parser.add_argument("--mode", default="global", choices=("global", "semiglobal", "local", "extension"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-gpu", action="store_true", help="CPU rows only")
    args = parser.parse_args()

    print(f"machine: {cpu_name()}, {len(os.sched_getaffinity(0))} cores; commit {commit()}")
    if not args.no_gpu:
        from warpdp.kernels.runtime.device import device_info

        info = device_info()
        print(f"GPU: {info['name']} ({info['multiprocessors']} SMs), CuPy {info['cupy_version']}")
    print(f"command: python {' '.join(sys.argv)}\n")
    rows = []
    for length in (int(x) for x in args.lengths.split(",")):
        pairs = make_pairs(max(args.pairs, args.cigar_pairs, args.cpu_pairs), length)
        for backend, cigar, count in (("gpu", False, args.pairs), ("gpu", True, args.cigar_pairs),
                                      ("cpu", False, args.cpu_pairs), ("cpu", True, args.cpu_pairs)):
            if count == 0 or (backend == "gpu" and args.no_gpu):
                continue
            subset = pairs.select(0, count)
            cells = int((np.diff(subset.query_offsets) * np.diff(subset.target_offsets)).sum())
            params = AlignParams(mode=args.mode, cigar=cigar)
            seconds = median_seconds(subset, params, args.repeats if backend == "gpu" else 1, backend=backend,
                                     threads=1)
            rows.append((length, backend, "CIGAR" if cigar else "score only", count, cells, seconds))
            print(f"  {length} bp {backend} {'cigar' if cigar else 'score'}: {seconds:.3f} s", flush=True)
        if not args.no_gpu and args.cpu_pairs:
            for cigar in (False, True):
                print(f"  check {length} bp ({'CIGAR' if cigar else 'score only'}, {args.cpu_pairs} pairs): "
                      f"{check(pairs.select(0, args.cpu_pairs), AlignParams(mode=args.mode, cigar=cigar))}")
    cpu_variant = os.environ.get("WARPDP_CPU_ISA") or align_cpu_isas()[-1]
    print(f"\n{args.mode}, affine gaps (match 2, mismatch -3, open 5, extend 2)\n")
    print("| length | backend | output | pairs | cells | median s | pairs/s | GCUPS | TCUPS |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for length, backend, output, count, cells, seconds in rows:
        where = "GPU" if backend == "gpu" else f"CPU, 1 thread ({cpu_variant})"
        print(f"| {length} | {where} | {output} | {count:,} | {cells:.3e} | {seconds:.4f} | {count / seconds:,.0f} "
              f"| {cells / seconds / 1e9:.2f} | {cells / seconds / 1e12:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
