"""One CPU thread of warpdp against the public tool, side by side in the same run (issue 28).

    python benchmarks/cpu_vs_public.py pairhmm --tool GKL_HARNESS [--input FILE.in ...] [--copies 5]
    python benchmarks/cpu_vs_public.py xdrop   --tool SEQAN_HARNESS [--pairs 2000] [--x 100]
    python benchmarks/cpu_vs_public.py seedext --tool BWA_HARNESS [--pairs 100000]
    common options: [--isa avx2] [--rounds 3] [--repeats 5]

The public tool is built beside the project, never in it. `--tool` is a small program around the
tool's own routine that reads the workload file, runs the routine over every pair `REPEATS + 1`
times on one thread (the first run is a warm-up), writes one result line per pair to OUT and
prints `cpu_s SECONDS` (median thread CPU time of the counted runs, file reading excluded):

    pairhmm: TOOL FILE.in REPEATS OUT   GKL's AVX `compute_fp_avxs` (and `compute_fp_avxd` below
             1e-28) as IntelPairHmm.cc calls them, base qualities raised to 6; OUT: log10 likelihood
    xdrop:   TOOL PAIRS.tsv X REPEATS OUT   SeqAn 2 `extendSeed(seed, H, V, EXTEND_BOTH,
             Score<int,Simple>(1,-1,-1), X, GappedXDrop())`, k = 17; TSV as LOGAN's demo
             (`seqV posV seqH posH strand`); OUT: `score beginH endH beginV endV`
    seedext: TOOL PAIRS.tsv REPEATS OUT   BWA's `ksw_extend2` with BWA-MEM's defaults;
             TSV `query target h0`; OUT: `score qle tle gtle gscore max_off`

warpdp is timed in-process the same way (thread CPU time of the public API call from packed arrays
to results, one thread, the variant `--isa`, median of `--repeats` after a warm-up). Rounds
alternate tool and warpdp; each round gives a ratio (tool / warpdp), the median ratio is printed
together with both sides' medians. Before timing, warpdp's results are checked against the tool's
OUT (Pair-HMM within 1e-4 in log10, the others exactly).

Workloads: Pair-HMM reads `--input` text files (default: the 10s set and the GATK HaplotypeCaller
workload in benchmarks/workloads), each repeated `--copies` times; X-drop and seed extension
generate the workloads of benchmarks/xdrop.py and benchmarks/seedext.py.
"""
from __future__ import annotations

import argparse
import gzip
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's warpdp, not an installed one

from bench_common import commit, cpu_name  # noqa: E402
import warpdp  # noqa: E402
from seedext import bwa_like_pairs  # noqa: E402
from xdrop import SEED_LENGTH, make_workload  # noqa: E402
from warpdp.plugin.xdrop import xdrop  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_PAIRHMM_INPUTS = [HERE.parents[1] / "shared" / "data" / "pairhmm" / "10s.in",
                          HERE / "workloads" / "gatk-hc-4.6.2.0.in.gz"]


def run_tool(command: list[str]) -> float:
    """The tool harness's reported median CPU seconds."""
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = re.search(r"cpu_s ([0-9.eE+-]+)", out)
    if not found:
        raise RuntimeError(f"no 'cpu_s' in the output of {command[0]}: {out!r}")
    return float(found.group(1))


def thread_cpu_median(call: Callable[[], object], repeats: int) -> float:
    call()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        call()
        times.append(time.thread_time() - start)
    return statistics.median(times)


def text_of(bases: np.ndarray, offsets: np.ndarray, i: int) -> str:
    return bases[offsets[i]:offsets[i + 1]].tobytes().decode()


Case = tuple[list[str], Callable[[], object], Callable[[Path], None], str]
"""What a family's set-up returns: the tool's arguments before REPEATS, the warpdp call, the check
of the tool's results against warpdp's, and a description of the workload."""


def pairhmm_case(args: argparse.Namespace, work: Path) -> Case:
    """Concatenate `--copies` copies of each input into one text file (the tool reads it, warpdp parses it)."""
    text = ""
    for name in args.input or DEFAULT_PAIRHMM_INPUTS:
        path = Path(name)
        raw = gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
        text += (raw if raw.endswith("\n") else raw + "\n") * args.copies
    data = work / "pairhmm.in"
    data.write_text(text)
    batches = warpdp.read_pairhmm_text(data)

    def call() -> object:
        return warpdp.pairhmm(batches, backend="cpu", threads=1, cpu_isa=args.isa)

    def check(out: Path) -> None:
        want = np.loadtxt(out)
        worst = float(np.max(np.abs(call() - want)))
        if worst > 1e-4:
            raise SystemExit(f"warpdp and the tool differ by {worst:g} in log10")

    names = " + ".join(Path(n).name for n in args.input or DEFAULT_PAIRHMM_INPUTS)
    label = f"{batches.n_pairs} pairs, {batches.n_cells:.3e} cells ({names}) x {args.copies}"
    return [str(data)], call, check, label


def xdrop_case(args: argparse.Namespace, work: Path) -> Case:
    pairs = make_workload(args.pairs, seed=1)
    data = work / "xdrop.tsv"
    with open(data, "w") as f:
        for i in range(pairs.n_pairs):
            f.write(f"{text_of(pairs.v_bases, pairs.v_offsets, i)}\t{pairs.v_pos[i]}\t"
                    f"{text_of(pairs.h_bases, pairs.h_offsets, i)}\t{pairs.h_pos[i]}\tn\n")

    def call() -> object:
        return xdrop(pairs, k=SEED_LENGTH, x=args.x, backend="cpu", threads=1, cpu_isa=args.isa)

    def check(out: Path) -> None:
        got = call()
        # SeqAn's Seed keeps no score here; positions identify the extension exactly.
        want = np.loadtxt(out, dtype=np.int64, ndmin=2)[:, 1:]
        mine = np.stack([got.begin_h, got.end_h, got.begin_v, got.end_v], axis=1)
        if not np.array_equal(mine, want):
            raise SystemExit(f"warpdp and the tool differ on {int(np.sum(np.any(mine != want, axis=1)))} pairs")

    return [str(data), str(args.x)], call, check, f"{args.pairs} pairs, X = {args.x}"


def seedext_case(args: argparse.Namespace, work: Path) -> Case:
    pairs = bwa_like_pairs(args.pairs, seed=1)
    data = work / "seedext.tsv"
    with open(data, "w") as f:
        for i in range(pairs.n_pairs):
            f.write(f"{text_of(pairs.query, pairs.query_offsets, i)}\t"
                    f"{text_of(pairs.target, pairs.target_offsets, i)}\t{pairs.h0[i]}\n")

    def call() -> object:
        return warpdp.seed_extend(pairs, backend="cpu", threads=1, cpu_isa=args.isa)

    def check(out: Path) -> None:
        got = call()
        mine = np.stack([got.score, got.qle, got.tle, got.gtle, got.gscore, got.max_off], axis=1)
        want = np.loadtxt(out, dtype=np.int64, ndmin=2)
        if not np.array_equal(mine, want):
            raise SystemExit(f"warpdp and the tool differ on {int(np.sum(np.any(mine != want, axis=1)))} pairs")

    return [str(data)], call, check, f"{args.pairs} pairs"


CASES = {"pairhmm": pairhmm_case, "xdrop": xdrop_case, "seedext": seedext_case}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("family", choices=sorted(CASES))
    parser.add_argument("--tool", required=True, help="the public tool's harness program (see above)")
    parser.add_argument("--isa", default="avx2", help="warpdp CPU variant (default avx2)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating tool/warpdp rounds (default 3)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per side and round (default 5)")
    parser.add_argument("--input", nargs="+", default=None, help="pairhmm: input text files (.in or .in.gz)")
    parser.add_argument("--copies", type=int, default=5, help="pairhmm: copies of each input (default 5)")
    parser.add_argument("--pairs", type=int, default=None, help="xdrop: 2000, seedext: 100000 by default")
    parser.add_argument("--x", type=int, default=100, help="xdrop: X (default 100)")
    args = parser.parse_args()
    if args.pairs is None:
        args.pairs = 2000 if args.family == "xdrop" else 100_000

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tool_args, call, check, label = CASES[args.family](args, work)
        out = work / "tool.out"
        run_tool([args.tool, *tool_args, "1", str(out)])
        check(out)
        tool_s, ours_s = [], []
        for _ in range(args.rounds):
            tool_s.append(run_tool([args.tool, *tool_args, str(args.repeats)]))
            ours_s.append(thread_cpu_median(call, args.repeats))
    ratios = [t / o for t, o in zip(tool_s, ours_s)]
    print(f"machine: {cpu_name()}; commit {commit()}; warpdp variant {args.isa}, 1 thread")
    print(f"command: python {' '.join(sys.argv)}")
    print(f"workload: {args.family}, {label}; results checked against the tool's")
    print("| family | tool CPU s (rounds) | warpdp CPU s (rounds) | ratio (rounds) | median ratio |")
    print("| --- | --- | --- | --- | ---: |")
    print(f"| {args.family} | {' '.join(f'{t:.4f}' for t in tool_s)} | {' '.join(f'{t:.4f}' for t in ours_s)} | "
          f"{' '.join(f'{r:.2f}' for r in ratios)} | **{statistics.median(ratios):.2f}x** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
