"""The Pair-HMM workload of a real GATK run, kept for replay (the reference workload for Pair-HMM tuning).

GATK's `--pair-hmm-results-file` lists every (haplotype, read) pair GATK scored, with the read's
qualities and GKL's log10 likelihood, read-major within each region (GATK's computeLikelihoods call).
`convert` regroups the pairs into those regions and writes the PairHMM text format (one record of R
reads x H haplotypes per region, readable by warpdp.read_pairhmm_text) and the expected values:

    python3 benchmarks/gatk_workload.py convert RESULTS.txt OUT.in[.gz] OUT.gkl.out[.gz]
    python3 benchmarks/gatk_workload.py replay benchmarks/workloads/gatk-hc.in.gz \\
        [--expected benchmarks/workloads/gatk-hc.gkl.out.gz] [--backend auto|cpu|gpu] [--repeats 3]

`replay` times warpdp.pairhmm on the workload (all regions as one job, as the server batches them) and
reports cells, GCUPS and the largest |difference| from GKL's values.
"""
from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _open(path: Path, mode: str):
    return gzip.open(path, mode + "t") if path.suffix == ".gz" else open(path, mode)


def regions(results: Path):
    """Yields (reads, haplotypes, values) per region; a read is (bases, quals, ins, del, gcp)."""
    with _open(results, "r") as f:
        pairs = [line.split() for line in f if line.strip() and not line.startswith("#")]
    i = 0
    while i < len(pairs):
        # The first read's lines give the region's haplotypes: until the read changes or h0 comes again.
        first_read = pairs[i][1:6]
        haps = [pairs[i][0]]
        j = i + 1
        while j < len(pairs) and pairs[j][1:6] == first_read and pairs[j][0] != haps[0]:
            haps.append(pairs[j][0])
            j += 1
        # Then whole blocks of len(haps) lines with exactly these haplotypes, one read per block.
        reads, values = [], []
        k = i
        while k + len(haps) <= len(pairs):
            block = pairs[k:k + len(haps)]
            if [p[0] for p in block] != haps or any(p[1:6] != block[0][1:6] for p in block):
                break
            reads.append(block[0][1:6])
            values.extend(float(p[6]) for p in block)
            k += len(haps)
        yield reads, haps, values
        i = k


def convert(results: Path, out_in: Path, out_expected: Path) -> tuple[int, int, float]:
    n_regions = n_pairs = 0
    cells = 0.0
    with _open(out_in, "w") as fin, _open(out_expected, "w") as fout:
        for reads, haps, values in regions(results):
            fin.write(f"{len(reads)} {len(haps)}\n")
            for r in reads:
                fin.write(" ".join(r) + "\n")
            for h in haps:
                fin.write(h + "\n")
            for v in values:
                fout.write(f"{v:.6e}\n")
            n_regions += 1
            n_pairs += len(values)
            cells += sum(len(r[0]) for r in reads) * sum(len(h) for h in haps)
    return n_regions, n_pairs, cells


def replay(workload: Path, expected: Path | None, backend: str, repeats: int) -> None:
    import warpdp

    with _open(workload, "r") as f:
        batches = warpdp.read_pairhmm_text(f)
    cells = batches.n_cells
    warpdp.pairhmm(batches, backend=backend)  # warm-up (GPU: module load)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        got = warpdp.pairhmm(batches, backend=backend)
        times.append(time.perf_counter() - start)
    best = min(times)
    print(f"{workload.name}: {batches.n_batches} regions, {len(got)} pairs, {cells:.3e} cells; "
          f"backend {backend}: best of {repeats} {best:.3f} s, {cells / best / 1e9:.2f} GCUPS")
    if expected is not None:
        with _open(expected, "r") as f:
            want = np.loadtxt(f, ndmin=1)
        print(f"max |dlog10| vs GKL: {np.max(np.abs(got - want)):.3g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert")
    c.add_argument("results", type=Path)
    c.add_argument("out_in", type=Path)
    c.add_argument("out_expected", type=Path)
    r = sub.add_parser("replay")
    r.add_argument("workload", type=Path)
    r.add_argument("--expected", type=Path)
    r.add_argument("--backend", default="auto")
    r.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if args.command == "convert":
        n_regions, n_pairs, cells = convert(args.results, args.out_in, args.out_expected)
        print(f"{args.out_in}: {n_regions} regions, {n_pairs} pairs, {cells:.3e} cells")
    else:
        replay(args.workload, args.expected, args.backend, args.repeats)


if __name__ == "__main__":
    main()
