"""Edit-distance GPU throughput against issue 27's targets: warpdp's GPU windowed GenASM against
Scrooge's GPU code on the same pairs and the same W, O, and warpdp's GPU exact kernels against
edlib (PyPI, one thread) on the long set.

    python benchmarks/edit_gpu.py [--long-pairs 10000] [--short-pairs 1000000]
                                  [--exact-long-pairs N] [--edlib-long 40] [--repeats 3]
                                  [--scrooge DIR] [--workdir DIR] [--cigar-sample 20000]
                                  [--sets long,short] [--no-exact] [--windowed-tasks path,distance]

Workloads (benchmarks/edit.py's generator, seeds 1 and 2): long reads of 5-20 kb with 5-15 %
errors, PacBio-like indel-rich (30 % substitutions, 35 % insertions, 35 % deletions), each against
the reference window it came from; short reads of 100-250 bp with 1-5 % errors. The windows are
laid end to end as one reference, which is how Scrooge's benchmark takes them (FASTA reference,
FASTQ reads, PAF candidate locations, written under --workdir): Scrooge aligns each read to the
reference from its location to the reference's end, so warpdp's windowed rows get the same text,
cut 2 W bases past the window (GenASM reads at most W bases past the alignment's current end; a
CIGAR that reaches the cut would show as a mismatch below). Exact rows use the windows alone (NW).

--scrooge DIR: a folder with Scrooge's builds for W=64/O=33 and W=32/O=17 (SENE, DENT, early
termination, as its scripts/profile.py builds them): ``tests_w64``/``tests_w32`` (its own
``tests`` program, whose GPU performance test prints the kernel's aligns/s) and ``pairs_w64``/
``pairs_w32`` (a driver that calls the same ``genasm_gpu::align_all`` on the same files and prints
each read's distance and CIGAR, for the comparison). Neither is part of warpdp.

warpdp's rows time ``warpdp.edit`` from packed arrays in memory to results in memory (uploads,
kernels, downloads, ragged results): the median of --repeats after a warm-up; "kernels alone"
rows are the GPU time of warpdp's launches in one more run (events around each). Scrooge's own
figure is its kernel alone (its align_all also converts, copies and post-processes; that
end-to-end time is shown too). edlib runs ``edlib.align`` per pair on the first --edlib-long long
pairs, one thread; its alignments/s is that sample's rate.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import commit, cpu_name  # noqa: E402
from edit import read_pairs, seconds  # noqa: E402
import warpdp  # noqa: E402
from warpdp.kernels import edit as gpu_edit  # noqa: E402
from warpdp.plugin.edit import EditPairs  # noqa: E402

PAD_WINDOWS = 2                 # text past each window that the windowed rows see, in windows W
OPS = {"I": 1, "D": 2, "=": 7, "X": 8}  # CIGAR op codes of warpdp's packed runs (count << 4 | op)
CIGAR_RUN = re.compile(rb"(\d+)([=XID])")


def reference_layout(pairs: EditPairs) -> tuple[np.ndarray, np.ndarray]:
    """The reference (every pair's target end to end) and each pair's start in it."""
    return pairs.target_bases, pairs.target_offsets[:-1]


def windowed_pairs(pairs: EditPairs, pad: int) -> EditPairs:
    """Each read against the reference from its window's start to ``pad`` bases past its end."""
    reference, starts = reference_layout(pairs)
    lengths = np.minimum(np.diff(pairs.target_offsets) + pad, len(reference) - starts)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    gather = np.repeat(starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]), dtype=np.int64)
    return EditPairs.from_arrays(query_bases=pairs.query_bases, query_offsets=pairs.query_offsets,
                                 target_bases=reference[gather], target_offsets=offsets)


def write_scrooge_inputs(pairs: EditPairs, folder: Path, name: str) -> tuple[Path, Path, Path]:
    """Scrooge's benchmark inputs: reference FASTA (one sequence), reads FASTQ (read i named r<i>),
    PAF with one forward-strand candidate location per read, at its window."""
    folder.mkdir(parents=True, exist_ok=True)
    reference, starts = reference_layout(pairs)
    fasta, fastq, paf = folder / f"{name}.fasta", folder / f"{name}.fastq", folder / f"{name}.paf"
    with open(fasta, "wb") as out:
        out.write(b">ref\n")
        out.write(reference.tobytes())
        out.write(b"\n")
    q, qo, to = pairs.query_bases.tobytes(), pairs.query_offsets, pairs.target_offsets
    with open(fastq, "wb") as out:
        for i in range(len(pairs)):
            m = int(qo[i + 1] - qo[i])
            out.write(b"@r%d\n%s\n+\n%s\n" % (i, q[qo[i]:qo[i + 1]], b"I" * m))
    with open(paf, "wb") as out:
        for i in range(len(pairs)):
            m, n = int(qo[i + 1] - qo[i]), int(to[i + 1] - to[i])
            out.write(b"r%d\t%d\t0\t%d\t+\tref\t%d\t%d\t%d\t%d\t%d\t60\n"
                      % (i, m, m, len(reference), starts[i], starts[i] + n, m, max(m, n)))
    return fasta, fastq, paf


def packed_cigar(text: bytes) -> np.ndarray:
    """A CIGAR string as warpdp's packed runs, adjacent runs of one op merged (Scrooge writes a
    run list per window)."""
    runs: list[list[int]] = []
    for count, op in CIGAR_RUN.findall(text):
        code = OPS[op.decode()]
        if runs and runs[-1][1] == code:
            runs[-1][0] += int(count)
        else:
            runs.append([int(count), code])
    return np.array([count << 4 | code for count, code in runs], dtype=np.uint32)


def run_scrooge(folder: Path, w: int, files: tuple[Path, Path, Path], n: int) -> dict:
    """Scrooge's `tests` GPU performance test (when built) and the CIGAR driver on the same files."""
    found: dict = {"kernel_rate_tests": None}
    if (folder / f"tests_w{w}").exists():
        tests = subprocess.run([str(folder / f"tests_w{w}"), f"--reference={files[0]}", f"--reads={files[1]}",
                                f"--seeds={files[2]}"], capture_output=True, text=True, check=True)
        found["kernel_rate_tests"] = float(re.search(r"GPU kernel ran at (\d+) aligns/second", tests.stdout).group(1))
        if "FAILED" in tests.stdout:
            found["sanity"] = "its sanity check FAILED on some pairs"
    driver = subprocess.run([str(folder / f"pairs_w{w}"), *map(str, files)], capture_output=True, check=True)
    lines = driver.stdout.split(b"\n")
    header = dict(line.split(b" ") for line in lines[:3])
    assert int(header[b"pairs"]) == n, header
    found["kernel_rate"] = n / (int(header[b"kernel_ns"]) * 1e-9)
    found["end_to_end_rate"] = n / (int(header[b"end_to_end_ns"]) * 1e-9)
    distance = np.full(n, -1, np.int64)
    cigars: list[bytes] = [b""] * n
    for line in lines[3:]:
        if line:
            name, dist, cigar = line.split(b"\t")
            i = int(name[1:])
            distance[i], cigars[i] = int(dist), cigar
    found["distance"], found["cigars"] = distance, cigars
    return found


def compare_with_scrooge(results, found: dict, sample: np.ndarray) -> str:
    """How many distances (all pairs) and CIGARs (the sample) equal Scrooge's."""
    same_distance = int((results.distance == found["distance"]).sum())
    ops, offsets = results.cigar_ops, results.cigar_offsets
    same_cigar = sum(np.array_equal(ops[offsets[i]:offsets[i + 1]], packed_cigar(found["cigars"][i]))
                     for i in sample)
    return (f"distances equal Scrooge's on {same_distance} of {len(results.distance)} pairs; "
            f"CIGARs on {same_cigar} of {len(sample)} sampled")


def kernel_seconds(run: Callable[[], object]) -> float:
    """Seconds the GPU spent in warpdp's kernels during one ``run()``: the union of the spans
    from each launch's start to its end, read off events recorded around every launch on its
    stream (the launches of two chunks in flight overlap; their union counts once)."""
    import cupy

    runner = gpu_edit._runner()  # the current GPU's (the benchmark runs on one)
    spans: list[tuple[object, object]] = []
    real = dict(runner.kernels)

    def timed(kernel):
        def launch(grid, block, args, stream=None):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            kernel(grid, block, args, stream=stream)
            end.record(stream)
            spans.append((start, end))
        return launch

    origin = cupy.cuda.Event()
    origin.record()
    runner.kernels = {name: timed(kernel) for name, kernel in real.items()}
    try:
        run()
    finally:
        runner.kernels = real
    cupy.cuda.runtime.deviceSynchronize()
    intervals = sorted((cupy.cuda.get_elapsed_time(origin, a), cupy.cuda.get_elapsed_time(origin, b)) for a, b in spans)
    busy, reach = 0.0, float("-inf")
    for begin, end in intervals:
        busy += max(0.0, end - max(begin, reach))
        reach = max(reach, end)
    return busy / 1000


def edlib_rate(pairs: EditPairs, task: str) -> float:
    import edlib

    items = [(pairs.query(i), pairs.target(i)) for i in range(len(pairs))]
    start = time.process_time()
    for query, target in items:
        edlib.align(query, target, mode="NW", task=task)
    return len(items) / (time.process_time() - start)


class Report:
    """The table's rows, the notes and the ratios against the issue's targets, printed as they come."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, int, float]] = []
        self.notes: list[str] = []

    def row(self, *entry) -> None:
        self.rows.append(entry)
        print(*entry, flush=True)

    def note(self, line: str) -> None:
        self.notes.append(line)
        print("-", line, flush=True)

    def print(self) -> None:
        from warpdp.kernels.runtime.device import device_info

        print(f"\ncommit {commit()}; CPU {cpu_name()}; GPU {device_info()['name']}; "
              f"text past each window {PAD_WINDOWS} W")
        print("| set | run | backend | pairs | alignments/s |\n|---|---|---|---:|---:|")
        for name, label, backend, n, rate in self.rows:
            print(f"| {name} | {label} | {backend} | {n} | {rate:,.0f} |")
        for line in self.notes:
            print(f"- {line}")


def windowed_rows(report: Report, name: str, pairs: EditPairs, w: int, o: int, args: argparse.Namespace,
                  rng: np.random.Generator) -> None:
    """warpdp's windowed GPU rows (and chunk-size variants), the suboptimal rate against the
    exact SHW distance, and Scrooge's rows and CIGAR comparison on the same files."""
    padded = windowed_pairs(pairs, PAD_WINDOWS * w)
    n = len(padded)
    label = f"windowed W{w}/O{o}, path"
    fields = dict(method="windowed", mode="shw", window=w, overlap=o, task="path")
    t = seconds(lambda: warpdp.edit(padded, backend="gpu", **fields), args.repeats)
    windowed = warpdp.edit(padded, backend="gpu", **fields)
    report.row(name, label, "warpdp GPU", n, n / t)
    t_kernels = kernel_seconds(lambda: warpdp.edit(padded, backend="gpu", **fields))
    report.row(name, label, "warpdp GPU kernels alone", n, n / t_kernels)
    for task in filter(lambda task: task and task != "path", args.windowed_tasks.split(",")):
        other = dict(fields, task=task)
        t_task = seconds(lambda: warpdp.edit(padded, backend="gpu", **other), args.repeats)
        report.row(name, f"windowed W{w}/O{o}, {task}", "warpdp GPU", n, n / t_task)
    for chunk_bases in filter(None, args.chunk_bases.split(",")):
        default, gpu_edit._CHUNK_BASES = gpu_edit._CHUNK_BASES, int(float(chunk_bases))
        t_chunk = seconds(lambda: warpdp.edit(padded, backend="gpu", **fields), args.repeats)
        report.row(name, label, f"warpdp GPU, chunks of {chunk_bases} bases", n, n / t_chunk)
        gpu_edit._CHUNK_BASES = default
    exact_shw = warpdp.edit(padded, backend="gpu", mode="shw", task="distance")
    worse = windowed.distance > exact_shw.distance
    report.note(f"{name}: windowed W{w}/O{o} distance above the exact SHW distance on {int(worse.sum())} of {n} "
                f"pairs ({100 * worse.mean():.1f} %), total distance "
                f"+{100 * (windowed.distance.sum() / max(1, exact_shw.distance.sum()) - 1):.1f} %")
    if args.scrooge is None:
        return
    files = write_scrooge_inputs(pairs, args.workdir, name)
    try:
        found = run_scrooge(args.scrooge, w, files, n)
    except (OSError, subprocess.CalledProcessError, AttributeError) as error:
        report.note(f"{name}: Scrooge did not run: {error!r}")
        return
    if found["kernel_rate_tests"] is not None:
        report.row(name, label, "Scrooge GPU kernel (its tests)", n, found["kernel_rate_tests"])
    report.row(name, label, "Scrooge GPU kernel (driver)", n, found["kernel_rate"])
    report.row(name, label, "Scrooge GPU align_all end to end", n, found["end_to_end_rate"])
    sample = np.sort(rng.choice(n, min(n, args.cigar_sample), replace=False))
    report.note(f"{name}: {compare_with_scrooge(windowed, found, sample)}")
    if "sanity" in found:
        report.note(f"{name}: Scrooge's {found['sanity']}")
    best = max(found["kernel_rate_tests"] or 0.0, found["kernel_rate"])
    report.note(f"{name} windowed: warpdp {n / t:,.0f} / Scrooge kernel {best:,.0f} = {n / t / best:.2f}x "
                f"(target >= 3x); warpdp kernels alone / Scrooge kernel {n / t_kernels / best:.2f}x; "
                f"warpdp / Scrooge's align_all end to end {n / t / found['end_to_end_rate']:.2f}x")


def exact_rows(report: Report, name: str, pairs: EditPairs, args: argparse.Namespace) -> None:
    """warpdp's exact NW GPU rows, and edlib's on a sample of the long set."""
    exact = pairs.select(0, min(len(pairs), args.exact_long_pairs or len(pairs))) if name == "long" else pairs
    for task in ("distance", "path"):
        t = seconds(lambda: warpdp.edit(exact, backend="gpu", mode="nw", task=task), args.repeats)
        report.row(name, f"exact NW, {task}", "warpdp GPU", len(exact), len(exact) / t)
        t_kernels = kernel_seconds(lambda: warpdp.edit(exact, backend="gpu", mode="nw", task=task))
        report.row(name, f"exact NW, {task}", "warpdp GPU kernels alone", len(exact), len(exact) / t_kernels)
        if name == "long" and args.edlib_long > 0:
            sample = pairs.select(0, min(len(pairs), args.edlib_long))
            rate = edlib_rate(sample, task)
            report.row(name, f"exact NW, {task}", "edlib 1 thread (CPU time)", len(sample), rate)
            report.note(f"long exact NW {task}: warpdp {len(exact) / t:,.0f} / edlib {rate:,.0f} = "
                        f"{len(exact) / t / rate:.0f}x (target >= 100x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long-pairs", type=int, default=10_000)
    parser.add_argument("--short-pairs", type=int, default=1_000_000)
    parser.add_argument("--exact-long-pairs", type=int, default=None, help="long pairs of the exact rows (all)")
    parser.add_argument("--edlib-long", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scrooge", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/warpdp-edit-gpu"))
    parser.add_argument("--cigar-sample", type=int, default=20_000, help="pairs per set whose CIGARs are compared")
    parser.add_argument("--chunk-bases", default="", help="comma-separated bases per chunk to time the windowed "
                        "rows with as well (the launcher's _CHUNK_BASES; default: its own only)")
    parser.add_argument("--sets", default="long,short")
    parser.add_argument("--exact", action=argparse.BooleanOptionalAction, default=True,
                        help="time the exact rows too (--no-exact: the windowed rows only)")
    parser.add_argument("--windowed-tasks", default="path", help="comma-separated tasks of the windowed rows "
                        "(path: the full rows and Scrooge's; the others: warpdp's end-to-end row only)")
    args = parser.parse_args()
    rng = np.random.default_rng(27)
    report = Report()
    for name in args.sets.split(","):
        if name == "long":
            pairs = read_pairs(args.long_pairs, (5000, 20000), (0.05, 0.15), (0.3, 0.35, 0.35), seed=1)
            windowed_rows(report, name, pairs, 64, 33, args, rng)
        else:
            pairs = read_pairs(args.short_pairs, (100, 250), (0.01, 0.05), (0.8, 0.1, 0.1), seed=2)
            windowed_rows(report, name, pairs, 32, 17, args, rng)
        if args.exact:
            exact_rows(report, name, pairs, args)
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
