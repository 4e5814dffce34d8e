"""Exact edit distance on one CPU thread, side by side with edlib (issue 27's CPU target).

    python benchmarks/edit_cpu.py [--data PATH] [--synthetic-long 40] [--synthetic-short 3000]
                                  [--modes nw shw hw] [--tasks distance locations path] [--repeats 3]
                                  [--isa scalar|avx2|avx512]

Sets: the long (>= 1 kb query) and short pairs of the reference data file (default
/work/shared/data/edit/pairs-400.tsv, skipped when absent; the short ones repeated
``--data-short-copies`` times), and a synthetic set like issue 27's
workload, scaled to run in about a minute: long reads of 5-20 kb with 5-15% PacBio-like errors
(substitutions 20%, insertions 45%, deletions 35%, indel lengths geometric with mean 1.5) against
their reference window (the read's span plus 0-10% on each side), and short reads of 100-250 bp
with 1-5% errors (substitutions 80%) against a window 0-5 bp wider on each side.

For each set, mode and task, warpdp (``warpdp.plugin.edit.edit``, CPU backend, one thread, from
packed pairs, the CPU variant ``--isa``: default $WARPDP_CPU_ISA, else the best this CPU runs) and edlib (``edlib.align`` of the same pairs one by one, as bytes) are timed in
alternation, ``--repeats`` times each; each figure is the median process CPU time (what the
process itself used, so other processes on a shared machine count for little), and every run's
distances are checked equal to edlib's. Prints a markdown table for BENCHMARKS.md.
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
from warpdp.plugin.edit import EditPairs, edit, edit_cpu_isas, pack_edit_pairs  # noqa: E402

DATA = Path("/work/shared/data/edit/pairs-400.tsv")
BASES = np.frombuffer(b"ACGT", dtype=np.uint8)
Pair = tuple[bytes, bytes]


def read_tsv(path: Path) -> list[Pair]:
    pairs = []
    for line in path.read_text().splitlines():
        if line.strip():
            query, target = line.split("\t")[:2]
            pairs.append((query.encode(), target.encode()))
    return pairs


def mutate(rng: np.random.Generator, region: np.ndarray, rate: float, substitution: float,
           insertion: float) -> np.ndarray:
    """region with about rate * len edits: substitutions, insertions and deletions in the given
    shares (deletions the rest); indel lengths geometric with mean 1.5."""
    out: list[np.ndarray] = []
    at = 0
    positions = np.sort(rng.choice(len(region), size=int(rate * len(region)), replace=False))
    for p in positions:
        if p < at:
            continue
        out.append(region[at:p])
        kind = rng.random()
        length = int(rng.geometric(2 / 3))
        if kind < substitution:
            out.append((region[p:p + 1] + rng.integers(1, 4, dtype=np.uint8)) % 4)
            at = p + 1
        elif kind < substitution + insertion:
            out.append(rng.integers(0, 4, size=length, dtype=np.uint8))
            at = p
        else:
            at = p + length
    out.append(region[at:])
    return np.concatenate(out)


def synthetic(rng: np.random.Generator, count: int, lengths: tuple[int, int], rates: tuple[float, float],
              substitution: float, insertion: float, flank: float, flank_min: int) -> list[Pair]:
    """count (read, reference window) pairs, read = a mutated region, window = region + flanks."""
    pairs = []
    for _ in range(count):
        length = int(rng.integers(lengths[0], lengths[1] + 1))
        left, right = (int(rng.integers(0, max(flank_min, int(flank * length)) + 1)) for _ in range(2))
        window = rng.integers(0, 4, size=left + length + right, dtype=np.uint8)
        read = mutate(rng, window[left:left + length], float(rng.uniform(*rates)), substitution, insertion)
        pairs.append((BASES[read].tobytes(), BASES[window].tobytes()))
    return pairs


def time_warpdp(packed: EditPairs, mode: str, task: str, isa: str | None) -> tuple[float, np.ndarray]:
    start = time.process_time()
    result = edit(packed, mode=mode, task=task, threads=1, backend="cpu", cpu_isa=isa)
    return time.process_time() - start, result.distance


def time_edlib(pairs: list[Pair], mode: str, task: str) -> tuple[float, np.ndarray]:
    import edlib

    start = time.process_time()
    distances = [edlib.align(q, t, mode=mode.upper(), task=task)["editDistance"] for q, t in pairs]
    return time.process_time() - start, np.array(distances, dtype=np.int64)


def measure(name: str, pairs: list[Pair], modes: list[str], tasks: list[str], repeats: int,
            isa: str | None) -> list[str]:
    packed = pack_edit_pairs(pairs)
    rows = []
    for mode in modes:
        for task in tasks:
            ours, theirs = [], []
            for _ in range(repeats):  # alternate, so a noisy neighbour hits both about equally
                seconds, mine = time_warpdp(packed, mode, task, isa)
                ours.append(seconds)
                seconds, reference = time_edlib(pairs, mode, task)
                theirs.append(seconds)
                if not np.array_equal(mine, reference):
                    bad = int(np.flatnonzero(mine != reference)[0])
                    raise SystemExit(f"{name} {mode} {task}: pair {bad}: warpdp {mine[bad]} != edlib {reference[bad]}")
            a, b = statistics.median(ours), statistics.median(theirs)
            rows.append(f"| {name} | {len(pairs)} | {mode} | {task} | {b:.3f} | {a:.3f} | {b / a:.2f}x |")
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--data-short-copies", type=int, default=10,
                        help="times the data file's short pairs are repeated (300 pairs take a millisecond)")
    parser.add_argument("--synthetic-long", type=int, default=20, help="synthetic long pairs (0: none)")
    parser.add_argument("--synthetic-short", type=int, default=2000, help="synthetic short pairs (0: none)")
    parser.add_argument("--modes", nargs="+", default=["nw", "shw", "hw"])
    parser.add_argument("--tasks", nargs="+", default=["distance", "locations", "path"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--isa", choices=edit_cpu_isas(), default=None,
                        help="warpdp's CPU variant (default: $WARPDP_CPU_ISA, else the best this CPU runs)")
    args = parser.parse_args()
    sets: list[tuple[str, list[Pair]]] = []
    if args.data.exists():
        data = read_tsv(args.data)
        sets.append(("data long", [p for p in data if len(p[0]) >= 1000]))
        short = [p for p in data if len(p[0]) < 1000]
        sets.append((f"data short x{args.data_short_copies}", short * args.data_short_copies))
    rng = np.random.default_rng(args.seed)
    if args.synthetic_long:
        sets.append(("synthetic long", synthetic(rng, args.synthetic_long, (5000, 20000), (0.05, 0.15),
                                                 0.20, 0.45, 0.10, 0)))
    if args.synthetic_short:
        sets.append(("synthetic short", synthetic(rng, args.synthetic_short, (100, 250), (0.01, 0.05),
                                                  0.80, 0.10, 0.0, 5)))
    isa = args.isa or os.environ.get("WARPDP_CPU_ISA") or edit_cpu_isas()[-1]
    print(f"CPU: {cpu_name()}; commit {commit()}; warpdp variant {isa}; one thread, process CPU time, "
          f"median of {args.repeats}")
    print("| set | pairs | mode | task | edlib s | warpdp s | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for name, pairs in sets:
        measure(name, pairs, args.modes, args.tasks, args.repeats, isa)


if __name__ == "__main__":
    main()
