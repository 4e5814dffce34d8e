"""X-drop as users run it: whole `warpdp xdrop` processes against LOGAN's demo on the same file (issue 28).

    python benchmarks/xdrop_cli.py [--pairs 100000] [--x 10 100 1000 5000] [--repeats 2]
                                   [--backend gpu|cpu|auto] [--logan PATH] [--logan-scores PATH]
                                   [--check-pairs 2000] [--file PATH] [--reuse-file]

Writes the workload of benchmarks/xdrop.py (100,000 pairs, about 1 GB) as LOGAN's tab-separated
text 'seqV posV seqH posH strand' once, then for each X times whole processes, alternating:
`python -m warpdp xdrop FILE -k 17 -x X --backend B -o /dev/null` and, with --logan, LOGAN's demo
`PATH FILE 17 X 1` (one GPU). Both read the file from the page cache (it was just written).
Reports the median wall seconds of each and LOGAN / warpdp; LOGAN's own "Total Execution time"
(after its file reading) is shown too.

The CLI logs no timings, so the split of warpdp's process is measured in this process after the
whole-process runs: parse (`read_logan_text`), GPU/CPU set-up (first `xdrop` call minus a later one
at the same X), `xdrop` per X, writing the results to /dev/null, and the rest of the process's time
(interpreter start, imports, CUDA context) as the whole-process median minus those.

LOGAN (github.com/albertozeni/LOGAN, fetched and built beside the project, never committed) builds
as its Makefile does, with the target named: `nvcc -O3 -maxrregcount=32 -std=c++14 -Isrc -Xcompiler
-fopenmp -arch=sm_90 -rdc=true src/demo.cu src/seed.cu src/score.cu src/logan_functions.cu -o demo`
(CUDA 13 needs no change to its sources). LOGAN's demo prints no scores. Its score line (`//cout << res[i] <<endl;` in src/logan_functions.cu)
can be uncommented in a second build, passed as --logan-scores: the first --check-pairs pairs are then
scored by both at every X and the scores compared (exit status 1 on any difference). The timed
LOGAN runs use the unmodified --logan binary.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import commit, cpu_name  # noqa: E402
from xdrop import SEED_LENGTH, make_workload  # noqa: E402

from warpdp.plugin.xdrop import XdropPairs, xdrop
from warpdp.plugin.xdrop_io import read_logan_text, read_xdrop_results, write_xdrop_results

REPO = Path(__file__).resolve().parents[1]
LOGAN_TOTAL = re.compile(r"Total Execution time:\s*([0-9.eE+-]+)")


def write_logan_text(pairs: XdropPairs, path: Path, count: int | None = None) -> None:
    """The first `count` pairs (all by default) as LOGAN's demo reads them: tab-separated, strand n."""
    with open(path, "wb", buffering=1 << 24) as out:
        for i in range(pairs.n_pairs if count is None else count):
            out.write(b"%s\t%d\t%s\t%d\tn\n" % (pairs.v_sequence(i), pairs.v_pos[i], pairs.h_sequence(i),
                                                 pairs.h_pos[i]))


def warpdp_command(path: Path, x: int, backend: str, threads: int | None, output: str) -> list[str]:
    command = [sys.executable, "-m", "warpdp", "xdrop", str(path), "-k", str(SEED_LENGTH), "-x", str(x),
               "--backend", backend, "-o", output]
    return command + (["--threads", str(threads)] if threads else [])


def logan_command(binary: str, path: Path, x: int) -> list[str]:
    return [binary, str(path), str(SEED_LENGTH), str(x), "1"]


def timed(command: list[str]) -> tuple[float, str]:
    """Wall seconds of one process and its stdout; a failure stops the benchmark with its stderr."""
    start = time.perf_counter()
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"failed ({run.returncode}): {' '.join(command)}\n{run.stderr[-3000:]}")
    return seconds, run.stdout


def logan_scores(binary: str, path: Path, x: int) -> np.ndarray:
    """Scores printed by a LOGAN build with its score line uncommented (lines holding one integer)."""
    _, stdout = timed(logan_command(binary, path, x))
    lines = (line.strip() for line in stdout.splitlines())
    return np.array([int(line) for line in lines if re.fullmatch(r"-?\d+", line)], dtype=np.int64)


def check_scores(args: argparse.Namespace, sample: Path, workdir: Path) -> bool:
    """warpdp's scores against LOGAN's on the sample, at every X; prints one line per X."""
    if not args.logan_scores:
        print("scores: not compared (LOGAN's demo prints no scores; pass --logan-scores, a build with "
              "its `cout << res[i]` line uncommented)")
        return True
    same = True
    for x in args.x:
        output = workdir / f"sample-{x}.out"
        timed(warpdp_command(sample, x, args.backend, args.threads, str(output)))
        ours = read_xdrop_results(output)[:, 0]
        theirs = logan_scores(args.logan_scores, sample, x)
        if len(theirs) != len(ours):
            print(f"scores, X = {x}: LOGAN printed {len(theirs)} scores for {len(ours)} pairs")
            same = False
            continue
        differ = np.flatnonzero(ours != theirs)
        print(f"scores, X = {x}: {len(ours) - len(differ)} / {len(ours)} equal"
              + (f"; first differences (pair, warpdp, LOGAN): "
                 f"{[(int(i), int(ours[i]), int(theirs[i])) for i in differ[:5]]}" if len(differ) else ""))
        same &= len(differ) == 0
    return same


def split_in_process(args: argparse.Namespace, path: Path) -> dict[str, float]:
    """Seconds of the CLI's steps run here: parse, first-call set-up, xdrop per X, write per X."""
    start = time.perf_counter()
    pairs = read_logan_text(path, k=SEED_LENGTH)
    split = {"parse": time.perf_counter() - start}
    call = dict(k=SEED_LENGTH, backend=args.backend, threads=args.threads)
    start = time.perf_counter()
    xdrop(pairs, x=args.x[0], **call)
    first = time.perf_counter() - start
    for x in args.x:
        start = time.perf_counter()
        results = xdrop(pairs, x=x, **call)
        split[f"xdrop {x}"] = time.perf_counter() - start
        start = time.perf_counter()
        write_xdrop_results(results, os.devnull)
        split[f"write {x}"] = time.perf_counter() - start
    split["set-up"] = max(first - split[f"xdrop {args.x[0]}"], 0.0)
    return split


def runs(times: list[float]) -> str:
    return " ".join(f"{t:.2f}" for t in times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--x", type=int, nargs="+", default=[10, 100, 1000, 5000])
    parser.add_argument("--repeats", type=int, default=2, help="whole-process runs per X and program (median)")
    parser.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="gpu")
    parser.add_argument("--threads", type=int, default=None, help="warpdp CPU threads (default: all cores)")
    parser.add_argument("--logan", default=None, help="LOGAN's demo binary (timed)")
    parser.add_argument("--logan-scores", default=None, help="a LOGAN demo build that prints its scores")
    parser.add_argument("--check-pairs", type=int, default=2000, help="pairs whose scores are compared")
    parser.add_argument("--seed", type=int, default=1, help="workload random seed")
    parser.add_argument("--file", type=Path, default=None, help="where to write the text (default: a temporary "
                        "directory, removed at the end)")
    parser.add_argument("--reuse-file", action="store_true", help="use --file as it is if it exists")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.repeats < 1 or args.check_pairs < 1:
        parser.error("--pairs, --repeats and --check-pairs must be at least 1")
    for name in ("logan", "logan_scores"):  # the processes run in the repository's root
        if getattr(args, name):
            setattr(args, name, os.path.abspath(getattr(args, name)))

    with tempfile.TemporaryDirectory(prefix="xdrop_cli_") as temporary:
        workdir = Path(temporary)
        path = args.file or workdir / "pairs.txt"
        sample = workdir / "sample.txt"
        start = time.perf_counter()
        if args.reuse_file and path.exists():
            pairs = read_logan_text(path, k=SEED_LENGTH)  # for the sample only
            made = f"reused {path}"
        else:
            pairs = make_workload(args.pairs, seed=args.seed)
            generated = time.perf_counter() - start
            write_logan_text(pairs, path)
            made = f"generated in {generated:.1f} s, written in {time.perf_counter() - start - generated:.1f} s"
        write_logan_text(pairs, sample, min(args.check_pairs, pairs.n_pairs))
        n_pairs, size = pairs.n_pairs, path.stat().st_size
        del pairs
        print(f"machine: {cpu_name()}, {len(os.sched_getaffinity(0))} cores; warpdp backend {args.backend}; "
              f"commit {commit()}; load average {os.getloadavg()[0]:.1f}")
        print(f"command: python {' '.join(sys.argv)}")
        print(f"workload: {n_pairs} pairs, {size / 1e9:.2f} GB of LOGAN text ({made}, not timed)\n")

        rows = []
        for x in args.x:
            ours, theirs, logan_inner = [], [], []
            for repeat in range(args.repeats):
                order = ("warpdp", "logan") if repeat % 2 == 0 else ("logan", "warpdp")
                for program in order:
                    if program == "warpdp":
                        ours.append(timed(warpdp_command(path, x, args.backend, args.threads, os.devnull))[0])
                    elif args.logan:
                        seconds, stdout = timed(logan_command(args.logan, path, x))
                        theirs.append(seconds)
                        found = LOGAN_TOTAL.search(stdout)
                        logan_inner.append(float(found.group(1)) if found else float("nan"))
            rows.append((x, ours, theirs, logan_inner))
            print(f"X = {x}: warpdp {runs(ours)} s" + (f", LOGAN {runs(theirs)} s" if theirs else ""), flush=True)

        split = split_in_process(args, path)
        print("\n| X | warpdp process s (median) | runs s | LOGAN process s (median) | runs s | LOGAN / warpdp "
              "| LOGAN's own total s | warpdp: parse / set-up / xdrop / write / rest s |")
        print("| ---: | ---: | --- | ---: | --- | ---: | ---: | --- |")
        for x, ours, theirs, logan_inner in rows:
            mine = statistics.median(ours)
            parts = [split["parse"], split["set-up"], split[f"xdrop {x}"], split[f"write {x}"]]
            breakdown = " / ".join(f"{p:.2f}" for p in parts + [mine - sum(parts)])
            if theirs:
                logan = statistics.median(theirs)
                logan_cells = (f"{logan:.2f} | {runs(theirs)} | **{logan / mine:.2f}x** | "
                               f"{statistics.median(logan_inner):.2f}")
            else:
                logan_cells = "- | - | - | -"
            print(f"| {x} | {mine:.2f} | {runs(ours)} | {logan_cells} | {breakdown} |")
        print()
        return 0 if check_scores(args, sample, workdir) else 1


if __name__ == "__main__":
    sys.exit(main())
