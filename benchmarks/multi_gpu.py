"""Throughput on 1, 2, 4 ... GPUs of one machine (issue 31), through the in-process API's
``devices=`` and through the gRPC server (``warpdp serve --devices``).

Workloads (each checked: the results on n devices equal those on one device, bit for bit):

- Pair-HMM "1m x10": GATK-like active regions (benchmarks/pairhmm_workloads.py) of about 10^6
  pairs, scored 10 times (``--repeats``);
- Pair-HMM, GATK HaplotypeCaller's own workload (benchmarks/workloads/gatk-hc-*.in.gz): a
  few milliseconds on one GPU, too small to spread, so it is measured as repeated jobs: the
  workload concatenated ``--hc-copies`` times into one job;
- X-drop: 100,000 pairs of 2,500-7,500 bases, X = 1,000 (benchmarks/xdrop.py's workload, made
  in ten parts of distinct seeds on ten processes);
- seed extension: 10^6 BWA-MEM-like pairs (benchmarks/seedext.py's workload, likewise);
- the gRPC server under 32 closed-loop clients (GATK-sized Pair-HMM requests,
  benchmarks/grpc_load.py) with ``--devices 0`` against every device.

Throughput is work over the median wall time of ``--repeats`` calls after a warm-up call;
the ratio is against one device of the same machine.
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_common import commit, cpu_name  # noqa: E402
import warpdp  # noqa: E402
from warpdp.grpc._packing import concat_pairhmm  # noqa: E402


def gpu_names() -> list[str]:
    import cupy

    names = []
    for index in range(cupy.cuda.runtime.getDeviceCount()):
        name = cupy.cuda.runtime.getDeviceProperties(index)["name"]
        names.append(name.decode() if isinstance(name, bytes) else str(name))
    return names


def timed(run: Callable[[list[int]], object], devices: list[int], repeats: int) -> tuple[float, object]:
    """Median seconds of ``repeats`` calls after one warm-up call, and the last result."""
    result = run(devices)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = run(devices)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if hasattr(a, "table"):
        return np.array_equal(a.table, b.table)
    return all(np.array_equal(getattr(a, c), getattr(b, c)) for c in a.COLUMNS)


def scale(name: str, work: float, unit: str, run: Callable[[list[int]], object], counts: list[int],
          repeats: int, rows: list[str]) -> None:
    base_s, base = None, None
    for n in counts:
        seconds, result = timed(run, list(range(n)), repeats)
        if base is None:
            base_s, base = seconds, result
        ok = same(result, base)
        line = (f"| {name} | {n} | {seconds * 1e3:.1f} | {work / seconds:.3g} {unit} | "
                f"{base_s / seconds:.2f}x | {'yes' if ok else '**NO**'} |")
        print(line, flush=True)
        rows.append(line)


def pairhmm_1m() -> warpdp.PairHmmBatches:
    from pairhmm_workloads import gatk_like_batches

    part = gatk_like_batches(6e9, seed=31)  # about 10^5 pairs
    copies = max(1, round(1e6 / part.n_pairs))
    return concat_pairhmm([part] * copies)


def _xdrop_part(args: tuple[int, int]) -> object:
    from xdrop import make_workload

    return make_workload(args[0], seed=args[1])


def _seedext_part(args: tuple[int, int]) -> object:
    from seedext import bwa_like_pairs

    return bwa_like_pairs(args[0], seed=args[1])


def generated(family: str, make_part: Callable[[tuple[int, int]], object], n_pairs: int, parts: int = 10) -> object:
    """benchmarks/<family>.py's workload of n_pairs, made in parts (distinct seeds) on several
    processes and merged as the server merges requests: the pairs are all distinct."""
    from concurrent.futures import ProcessPoolExecutor

    from warpdp import registry

    sizes = [n_pairs // parts + (i < n_pairs % parts) for i in range(parts)]
    with ProcessPoolExecutor(parts) as pool:
        pieces = list(pool.map(make_part, [(size, 1 + i) for i, size in enumerate(sizes)]))
    return registry.family(family).algorithm().merge(pieces)


def hc_workload(copies: int) -> warpdp.PairHmmBatches:
    path = sorted((HERE / "workloads").glob("gatk-hc-*.in.gz"))[0]
    with gzip.open(path, "rt") as f:
        batches = warpdp.read_pairhmm_text(f)
    return concat_pairhmm([batches] * copies)


def grpc_rows(counts: list[int], clients: int, processes: int, duration: float, rows: list[str]) -> None:
    import grpc_load

    rng = np.random.default_rng(7)
    pool = [grpc_load.make_batches(rng, 1, "gatk", **grpc_load.GATK_SHAPE) for _ in range(64)]
    refs = [warpdp.pairhmm(b, backend="gpu", devices=[0]) for b in pool]
    base = None
    for n in counts:
        devices = ",".join(str(d) for d in range(n))
        with grpc_load.ServerProcess("gpu", True, [f"--devices={devices}"]) as server:
            result = grpc_load.summarize([grpc_load.run_load(server.address, clients, processes, pool, refs, "gpu",
                                                             duration, 10**7)])
        base = base or result["rps"]
        line = (f"| gRPC Pair-HMM, {clients} clients ({processes} client processes) | {n} | "
                f"p50 {result['p50']:.2f} ms | {result['rps']:.0f} req/s, {result['gcups']:.1f} GCUPS | "
                f"{result['rps'] / base:.2f}x | {'yes' if result['wrong'] == 0 else '**NO**'} |")
        print(line, flush=True)
        rows.append(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="1,2,4", help="device counts (those above the visible count are skipped)")
    parser.add_argument("--repeats", type=int, default=10, help="timed calls per row (median)")
    parser.add_argument("--hc-copies", type=int, default=100, help="copies of the HaplotypeCaller workload in one job")
    parser.add_argument("--xdrop-pairs", type=int, default=100_000)
    parser.add_argument("--seedext-pairs", type=int, default=1_000_000)
    parser.add_argument("--only", nargs="+", choices=("pairhmm", "hc", "xdrop", "seedext", "grpc"),
                        default=["pairhmm", "hc", "xdrop", "seedext", "grpc"])
    parser.add_argument("--grpc-clients", type=int, default=32)
    parser.add_argument("--grpc-processes", type=int, default=8)
    parser.add_argument("--grpc-duration", type=float, default=6.0)
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown table here")
    args = parser.parse_args(argv)
    names = gpu_names()
    counts = [n for n in (int(c) for c in args.counts.split(",")) if n <= len(names)]
    rows = ["| workload | GPUs | median ms per job | throughput | vs 1 GPU | same results as 1 GPU |",
            "|---|---|---|---|---|---|"]
    header = (f"{len(names)} x {names[0] if names else 'no GPU'}; {cpu_name()}; commit {commit()}; "
              f"`python3 benchmarks/multi_gpu.py {' '.join(argv if argv is not None else sys.argv[1:])}`")
    print(header, flush=True)
    print("\n".join(rows), flush=True)
    try:
        if "pairhmm" in args.only:
            batches = pairhmm_1m()
            scale(f"Pair-HMM 1m ({batches.n_pairs:,} pairs, {batches.n_cells:.2e} cells) x{args.repeats}",
                  batches.n_cells / 1e9, "GCUPS", lambda d: warpdp.pairhmm(batches, backend="gpu", devices=d),
                  counts, args.repeats, rows)
        if "hc" in args.only:
            batches = hc_workload(args.hc_copies)
            scale(f"Pair-HMM HaplotypeCaller workload x{args.hc_copies} in one job ({batches.n_pairs:,} pairs, "
                  f"{batches.n_cells:.2e} cells)", batches.n_cells / 1e9, "GCUPS",
                  lambda d: warpdp.pairhmm(batches, backend="gpu", devices=d), counts, args.repeats, rows)
            one = hc_workload(1)
            scale(f"Pair-HMM HaplotypeCaller workload alone ({one.n_pairs:,} pairs, {one.n_cells:.2e} cells)",
                  one.n_cells / 1e9, "GCUPS", lambda d: warpdp.pairhmm(one, backend="gpu", devices=d), counts,
                  args.repeats, rows)
        if "xdrop" in args.only:
            from xdrop import SEED_LENGTH

            pairs = generated("xdrop", _xdrop_part, args.xdrop_pairs)
            scale(f"X-drop {pairs.n_pairs:,} pairs, X = 1000", pairs.n_pairs / 1e6, "M pairs/s",
                  lambda d: warpdp.xdrop(pairs, k=SEED_LENGTH, x=1000, backend="gpu", devices=d), counts,
                  2, rows)
        if "seedext" in args.only:
            pairs = generated("seedext", _seedext_part, args.seedext_pairs)
            scale(f"seed extension {pairs.n_pairs:,} pairs", pairs.n_pairs / 1e6, "M pairs/s",
                  lambda d: warpdp.seed_extend(pairs, backend="gpu", devices=d), counts, args.repeats, rows)
        if "grpc" in args.only:
            grpc_rows([counts[0], counts[-1]], args.grpc_clients, args.grpc_processes, args.grpc_duration, rows)
    finally:
        if args.out:
            args.out.write_text(header + "\n\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
