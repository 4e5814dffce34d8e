"""CPU Pair-HMM throughput: GCUPS on the 10s input and on larger generated inputs.

    python benchmarks/pairhmm_cpu.py [--data ../shared/data/pairhmm] [--repeats 5]

Times `warpdp.pairhmm` from packed arrays in memory to results in memory (the text
parsing is not timed), for every CPU variant single-threaded and the best one on all cores.
Prints a markdown table for BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import commit, cpu_name  # noqa: E402
import warpdp  # noqa: E402
from pairhmm_workloads import gatk_like_batches  # noqa: E402






def median_seconds(batches, repeats: int, **options) -> float:
    """Median over at least `repeats` runs, and over at least ~1 s of runs for short inputs."""
    warpdp.pairhmm(batches, backend="cpu", **options)  # warm-up: page in buffers, start threads
    times: list[float] = []
    while len(times) < repeats or (sum(times) < 1.0 and len(times) < 200):
        start = time.perf_counter()
        warpdp.pairhmm(batches, backend="cpu", **options)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "pairhmm"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--large-cells", type=float, default=2e9, help="cells of the generated input")
    args = parser.parse_args()

    inputs = []
    tenth = Path(args.data) / "10s.in"
    if tenth.exists():
        inputs.append(("10s", warpdp.read_pairhmm_text(tenth)))
    else:
        print(f"note: {tenth} not found; 10s skipped", file=sys.stderr)
    inputs.append((f"generated GATK-like ({args.large_cells:.0e} cells)", gatk_like_batches(args.large_cells, seed=1)))

    cores = len(os.sched_getaffinity(0))
    isas = warpdp.available_cpu_isas()
    print(f"machine: {cpu_name()}, {cores} cores; variants: {', '.join(isas)}; commit {commit()}")
    print(f"command: python {' '.join(sys.argv)}\n")
    print("| input | pairs | cells | variant | threads | median s | GCUPS |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for name, batches in inputs:
        runs = [(isa, 1) for isa in isas] + [(isas[-1], cores)]
        one_thread = None
        for isa, threads in runs:
            seconds = median_seconds(batches, args.repeats, threads=threads, cpu_isa=isa)
            gcups = batches.n_cells / seconds / 1e9
            if isa == isas[-1] and threads == 1:
                one_thread = seconds
            note = f" ({one_thread / seconds:.2f}x one thread)" if threads > 1 and one_thread else ""
            print(f"| {name} | {batches.n_pairs} | {batches.n_cells:.3e} | {isa} | {threads} | "
                  f"{seconds:.4f} | {gcups:.2f}{note} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
