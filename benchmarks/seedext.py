"""Seed-extension throughput (BWA-MEM ksw_extend2 semantics): pairs/s and GCUPS.

    python benchmarks/seedext.py [--pairs 1000000] [--long-pairs 2000] [--threads N]
                                 [--backend auto|cpu|gpu] [--isa scalar|avx2|avx512] [--repeats 5]

Two generated workloads, BWA-MEM's default parameters:
- short: BWA-MEM-like extensions: query 50..250 bases, target = query + 0..100 bases, 2-8 %
  errors (mostly substitutions, some 1-3 base indels), h0 19..60;
- long: query 1,000 bases, target 1,500 bases, same error model.
Times `warpdp.seed_extend` from packed arrays in memory to results in memory (end to end for
the library: validation, grouping, the kernels). GCUPS counts the cells ksw_extend2 actually
computes (inside its band, after its trimming and z-drop), counted once by the scalar kernel.
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
from warpdp.plugin.seedext import SeedExtPairs, SeedExtParams, seedext_cells

ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)


def bwa_like_pairs(n: int, *, seed: int = 1, query_len: tuple[int, int] = (50, 250),
                   target_extra: tuple[int, int] = (0, 100), error_rate: tuple[float, float] = (0.02, 0.08),
                   h0: tuple[int, int] = (19, 60)) -> SeedExtPairs:
    """n extensions: a random reference window (target) and a read copied from its start with
    errors (query). Vectorised over all pairs so 10^6 pairs take seconds, not minutes."""
    rng = np.random.default_rng(seed)
    qlen = rng.integers(query_len[0], query_len[1] + 1, n)
    tlen = qlen + rng.integers(target_extra[0], target_extra[1] + 1, n)
    rate = rng.uniform(error_rate[0], error_rate[1], n)
    t_off = np.concatenate([[0], np.cumsum(tlen)]).astype(np.int64)
    q_off = np.concatenate([[0], np.cumsum(qlen)]).astype(np.int64)
    target = ACGT[rng.integers(0, 4, int(t_off[-1]))]

    # Per query base: substitution (80 % of errors), insertion or deletion (10 % each).
    pair_of = np.repeat(np.arange(n), qlen)
    pos = np.arange(int(q_off[-1])) - q_off[pair_of]
    draw = rng.random(len(pos)) / rate[pair_of]
    substituted, inserted, deleted = draw < 0.8, (draw >= 0.8) & (draw < 0.9), (draw >= 0.9) & (draw < 1.0)
    # Indels of 1..3 bases; the source position in the target shifts by the running sum.
    size = rng.integers(1, 4, len(pos))
    shift = np.where(deleted, size, 0) - np.where(inserted, 1, 0)
    running = np.cumsum(shift)
    running -= np.repeat(running[q_off[:-1]] - shift[q_off[:-1]], qlen)
    source = np.clip(pos + running, 0, tlen[pair_of] - 1)
    query = target[t_off[:-1][pair_of] + source]
    random_bases = ACGT[rng.integers(0, 4, len(pos))]
    query = np.where(substituted | inserted, random_bases, query)
    return SeedExtPairs.from_arrays(query=query, query_offsets=q_off, target=target, target_offsets=t_off,
                                    h0=rng.integers(h0[0], h0[1] + 1, n))


def long_pairs(n: int, *, seed: int = 2) -> SeedExtPairs:
    return bwa_like_pairs(n, seed=seed, query_len=(1000, 1000), target_extra=(500, 500))






def median_seconds(pairs: SeedExtPairs, repeats: int, **options) -> tuple[float, float]:
    """Median wall-clock and process-CPU seconds (all threads) over at least `repeats` runs, and
    over at least ~1 s of runs for short inputs. On a shared machine the CPU time shows what
    the work costs when other processes slow the wall clock down."""
    warpdp.seed_extend(pairs, **options)  # warm-up: page in buffers, start threads, compile
    wall: list[float] = []
    cpu: list[float] = []
    while len(wall) < repeats or (sum(wall) < 1.0 and len(wall) < 100):
        start, start_cpu = time.perf_counter(), time.process_time()
        warpdp.seed_extend(pairs, **options)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1_000_000, help="short (BWA-MEM-like) pairs (default 10^6)")
    parser.add_argument("--long-pairs", type=int, default=2000, help="long pairs (1,000 x 1,500; 0: skip)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto")
    parser.add_argument("--isa", default=None, help="force a CPU variant (default: the best)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="also check the results against the scalar variant")
    args = parser.parse_args()

    threads = args.threads or len(os.sched_getaffinity(0))
    options = dict(backend=args.backend, threads=threads, cpu_isa=args.isa)
    print(f"machine: {cpu_name()}, {len(os.sched_getaffinity(0))} cores; CPU variants: "
          f"{', '.join(warpdp.seedext_cpu_isas())}; commit {commit()}")
    print(f"command: python {' '.join(sys.argv)}\n")
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("| workload | pairs | cells computed | backend/variant | threads | median s | pairs/s | GCUPS "
          "| median CPU s | GCUPS per CPU s |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    workloads = [("short (BWA-MEM-like)", lambda: bwa_like_pairs(args.pairs))]
    if args.long_pairs:
        workloads.append(("long (1,000 x 1,500)", lambda: long_pairs(args.long_pairs)))
    for name, make in workloads:
        pairs = make()
        cells = int(seedext_cells(pairs, SeedExtParams()).sum())
        seconds, cpu_seconds = median_seconds(pairs, args.repeats, **options)
        chosen = warpdp.choose_backend(args.backend, "seedext")
        where = chosen if chosen == "gpu" else f"cpu/{args.isa or warpdp.seedext_cpu_isas()[-1]}"
        print(f"| {name} | {pairs.n_pairs:,} | {cells:,} | {where} | {threads} | {seconds:.4f} | "
              f"{pairs.n_pairs / seconds:,.0f} | {cells / seconds / 1e9:.2f} | {cpu_seconds:.4f} | "
              f"{cells / cpu_seconds / 1e9:.2f} |")
        if args.check:
            got = warpdp.seed_extend(pairs, **options).table
            want = warpdp.seed_extend(pairs, backend="cpu", threads=threads, cpu_isa="scalar").table
            bad = int((got != want).any(axis=1).sum())
            print(f"  check against the scalar variant: {'identical' if bad == 0 else f'{bad} pairs differ'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
