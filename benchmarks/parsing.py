"""Text readers' throughput: LOGAN text, seed-extension TSV, Pair-HMM text (issue 28: >= 1 GB/s).

    python benchmarks/parsing.py [--formats logan seedext pairhmm] [--mb 1000 500 500]
                                 [--repeats 3] [--dir /tmp/warpdp-parsing] [--no-line-reader]
                                 [--xdrop-cli X]

Inputs (written once into --dir, reused while their size matches): a block of generated items
repeated until the file holds about the given megabytes:
- logan: the X-drop workload of benchmarks/xdrop.py (V of 2,500-7,500 bases, H with 15% errors),
  every other pair written with strand c (H complemented, posH mirrored); 1,000 MB is about the
  100,000 pairs of issue 28's X-drop row;
- seedext: benchmarks/seedext.py's BWA-MEM-like pairs (query 50-250 bases, target up to 100 more);
- pairhmm: benchmarks/pairhmm_workloads.py's GATK-like regions (10-80 reads of 100-250 bases,
  2-8 haplotypes of 200-500 bases), qualities as phred+33 text.

Times the reader alone on a file already in the page cache (one untimed read first), on one
thread, each reader in a fresh process (as the `warpdp` command reads): `read_logan_text`,
`read_seedext_tsv`, `read_pairhmm_text` (the C scanner), and the line-by-line Python reader each
of them falls back to (the readers before the scanner), from the path to the packed arrays.
Reports the median wall-clock seconds of --repeats runs, the median CPU seconds of the calling
thread, user + system (on a shared machine it leaves out time other processes held the core;
system time is mostly the kernel's work of giving the output arrays fresh pages), and GB/s =
file bytes / median seconds, wall and CPU. Prints a markdown table for BENCHMARKS.md.

--xdrop-cli X: instead, the whole `warpdp xdrop` command on the LOGAN file (-k 17 -x X, CPU
backend, one thread, output to /dev/null), each run in a fresh process, with read_logan_text as it
is and with the line-by-line reader put in its place, alternating: wall and CPU seconds of the
command (from its `main`, after the imports) and of the reading within it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import commit, cpu_name  # noqa: E402
from pairhmm_workloads import gatk_like_batches  # noqa: E402
from seedext import bwa_like_pairs  # noqa: E402
from xdrop import SEED_LENGTH, make_workload  # noqa: E402

import warpdp  # noqa: E402
from warpdp.plugin import pairhmm_text, seedext_io, xdrop_io  # noqa: E402
from warpdp.plugin.core.text import NumberedLines, open_text  # noqa: E402
from warpdp.plugin.pairhmm_text import FORMAT_MIN_BASE_QUAL  # noqa: E402

_COMPLEMENT = bytes.maketrans(b"ACGT", b"TGCA")


def logan_block(megabytes: int) -> bytes:
    pairs = make_workload(min(2_000, 100 * megabytes), seed=3)  # about 10 kB a pair
    lines = []
    for i in range(pairs.n_pairs):
        v, h = pairs.v_sequence(i), pairs.h_sequence(i)
        pv, ph, strand = int(pairs.v_pos[i]), int(pairs.h_pos[i]), "nc"[i % 2]
        if strand == "c":  # what reads back as this pair: the reader complements and mirrors again
            h, ph = h.translate(_COMPLEMENT), len(h) - ph - SEED_LENGTH
        lines.append(b"%s\t%d\t%s\t%d\t%s\n" % (v, pv, h, ph, strand.encode()))
    return b"".join(lines)


def seedext_block(megabytes: int) -> bytes:
    pairs = bwa_like_pairs(min(20_000, 2_500 * megabytes), seed=4)  # about 400 bytes a pair
    return b"".join(b"%s\t%s\t%d\n" % (pairs.query[pairs.query_offsets[i]:pairs.query_offsets[i + 1]].tobytes(),
                                        pairs.target[pairs.target_offsets[i]:pairs.target_offsets[i + 1]].tobytes(),
                                        pairs.h0[i]) for i in range(pairs.n_pairs))


def pairhmm_block(path: Path, megabytes: int) -> bytes:
    pairhmm_text.write_pairhmm_text(gatk_like_batches(min(2e8, 4e7 * megabytes), seed=5), path)
    return path.read_bytes()


def write_input(fmt: str, path: Path, megabytes: int) -> None:
    if fmt == "pairhmm":
        block = pairhmm_block(path, megabytes)
    else:
        block = {"logan": logan_block, "seedext": seedext_block}[fmt](megabytes)
    copies = max(1, round(megabytes * 1e6 / len(block)))
    with open(path, "wb") as out:
        for _ in range(copies):
            out.write(block)


def line_reader(fmt: str, path: Path) -> object:
    """The Python reader each format falls back to: the reader as it was before the scanner."""
    with open_text(path) as (lines, name):
        if fmt == "logan":
            return xdrop_io._logan_lines(lines, name, SEED_LENGTH)
        if fmt == "seedext":
            return seedext_io._seedext_lines(lines, name)
        return pairhmm_text._batches_from_lines(NumberedLines(lines, name), FORMAT_MIN_BASE_QUAL)


READERS: dict[str, Callable[[Path], object]] = {
    "logan": lambda path: warpdp.read_logan_text(path, k=SEED_LENGTH),
    "seedext": lambda path: warpdp.read_seedext_tsv(path),
    "pairhmm": lambda path: warpdp.read_pairhmm_text(path),
}
SCANNER, LINE_READER = "C scanner", "line by line (before)"


def thread_cpu() -> tuple[float, float]:
    """The calling thread's user and system CPU seconds."""
    usage = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return usage.ru_utime, usage.ru_stime


def time_reader(fmt: str, reader: str, path: Path, repeats: int) -> dict[str, list[float]]:
    """Wall, user and system seconds of each run of one reader (after one untimed run)."""
    read = (lambda: READERS[fmt](path)) if reader == SCANNER else (lambda: line_reader(fmt, path))
    read()
    times: dict[str, list[float]] = {"wall": [], "user": [], "system": []}
    for _ in range(repeats):
        start, (user, system) = time.perf_counter(), thread_cpu()
        result = read()
        times["wall"].append(time.perf_counter() - start)
        end_user, end_system = thread_cpu()
        times["user"].append(end_user - user)
        times["system"].append(end_system - system)
        del result
    return times


def time_in_fresh_process(fmt: str, reader: str, path: Path, repeats: int) -> dict[str, list[float]]:
    """time_reader in a process of its own, as a `warpdp` command would read: memory that an
    earlier reader freed would otherwise spare the next one the kernel's work on fresh pages."""
    child = subprocess.run([sys.executable, __file__, "--child", fmt, reader, str(path), str(repeats)],
                           capture_output=True, text=True, check=True)
    return json.loads(child.stdout)


def run_xdrop_cli(path: Path, x: int, reader: str) -> dict[str, float]:
    """One `warpdp xdrop` command in this process, with the time spent reading its input."""
    from warpdp.cli import main as warpdp_main

    read = xdrop_io.read_logan_text if reader == SCANNER else (lambda source, *, k: line_reader("logan", source))
    spent: dict[str, float] = {}

    def timed_read(source: Path, *, k: int) -> object:
        start, (user, system) = time.perf_counter(), thread_cpu()
        pairs = read(source, k=k)
        end_user, end_system = thread_cpu()
        spent.update(read_wall=time.perf_counter() - start, read_cpu=end_user - user + end_system - system)
        return pairs

    xdrop_io.read_logan_text = timed_read  # the command imports it when it runs
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    status = warpdp_main(["xdrop", str(path), "-k", str(SEED_LENGTH), "-x", str(x), "--backend", "cpu",
                          "--threads", "1", "-o", os.devnull])
    after = resource.getrusage(resource.RUSAGE_SELF)
    if status != 0:
        raise SystemExit(f"warpdp xdrop exited with {status}")
    return dict(spent, wall=time.perf_counter() - start,
                cpu=after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def xdrop_cli_table(path: Path, x: int, repeats: int) -> None:
    runs: dict[str, list[dict[str, float]]] = {SCANNER: [], LINE_READER: []}
    for _ in range(repeats):
        for reader in runs:
            child = subprocess.run([sys.executable, __file__, "--child-cli", str(path), str(x), reader],
                                   capture_output=True, text=True, check=True)
            runs[reader].append(json.loads(child.stdout))
    print(f"`warpdp xdrop {path.name} -k {SEED_LENGTH} -x {x} --backend cpu --threads 1`, "
          f"{path.stat().st_size / 1e6:.0f} MB, medians of {repeats}\n")
    print("| reader | command s | command CPU s | reading s | reading CPU s | reading's share (wall, CPU) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for reader, results in runs.items():
        m = {key: statistics.median(r[key] for r in results) for key in results[0]}
        print(f"| {reader} | {m['wall']:.2f} | {m['cpu']:.2f} | {m['read_wall']:.2f} | {m['read_cpu']:.2f} | "
              f"{statistics.median(r['read_wall'] / r['wall'] for r in results):.0%}, "
              f"{statistics.median(r['read_cpu'] / r['cpu'] for r in results):.0%} |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--formats", nargs="+", choices=tuple(READERS), default=list(READERS))
    parser.add_argument("--mb", type=int, nargs="+", default=[1000, 500, 500],
                        help="megabytes per format, in --formats order (default 1000 500 500)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per reader (the median is reported)")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/warpdp-parsing"), help="where the inputs are kept")
    parser.add_argument("--no-line-reader", action="store_true", help="time the C scanner's readers alone")
    parser.add_argument("--xdrop-cli", type=int, metavar="X", help="time the whole `warpdp xdrop` command instead")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)  # FORMAT READER PATH REPEATS
    parser.add_argument("--child-cli", nargs=3, help=argparse.SUPPRESS)  # PATH X READER
    args = parser.parse_args(argv)
    if args.child:
        fmt, reader, path, repeats = args.child
        print(json.dumps(time_reader(fmt, reader, Path(path), int(repeats))))
        return 0
    if args.child_cli:
        path, x, reader = args.child_cli
        print(json.dumps(run_xdrop_cli(Path(path), int(x), reader)))
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {cpu_name()}, {len(os.sched_getaffinity(0))} cores; commit {commit()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"command: python {' '.join(sys.argv)}\n")
    if args.xdrop_cli is not None:
        path = args.dir / f"logan-{args.mb[0]}mb.txt"
        if not path.exists():
            write_input("logan", path, args.mb[0])
        xdrop_cli_table(path, args.xdrop_cli, args.repeats)
        return 0
    if len(args.mb) < len(args.formats):
        parser.error("give one --mb per format")
    print("| format | file MB | reader | median s | all runs s | median CPU s (user + system) | GB/s (wall) "
          "| GB/s (CPU) |")
    print("| --- | ---: | --- | ---: | --- | ---: | ---: | ---: |")
    for fmt, megabytes in zip(args.formats, args.mb):
        path = args.dir / f"{fmt}-{megabytes}mb.txt"
        if not path.exists() or abs(path.stat().st_size / 1e6 - megabytes) > 0.2 * megabytes + 1:
            write_input(fmt, path, megabytes)
        size = path.stat().st_size
        for reader in [SCANNER] if args.no_line_reader else [SCANNER, LINE_READER]:
            times = time_in_fresh_process(fmt, reader, path, args.repeats)
            walls = times["wall"]
            wall = statistics.median(walls)
            cpu = statistics.median(u + s for u, s in zip(times["user"], times["system"]))
            user, system = statistics.median(times["user"]), statistics.median(times["system"])
            print(f"| {fmt} | {size / 1e6:.0f} | {reader} | {wall:.3f} | {' '.join(f'{t:.3f}' for t in walls)} | "
                  f"{cpu:.3f} ({user:.3f} + {system:.3f}) | {size / wall / 1e9:.2f} | "
                  f"{f'{size / cpu / 1e9:.2f}' if cpu > 0 else '-'} |",  # rusage counts in ticks
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
