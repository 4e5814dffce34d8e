"""GATK's Smith-Waterman calls on one CPU thread: warpdp's GATK mode against GKL's native IntelSmithWaterman.

    PYTHONPATH=. python benchmarks/gatk_sw.py [--calls 20000] [--repeats 5] [--isa scalar,avx2,avx512]
                                 [--gkl-kernels native,avx2] [--no-gkl] [--include-long] [--data DIR]

Workload: the Smith-Waterman calls of ../shared/data/sw/gatk-sw-600.tsv (the calls a HaplotypeCaller run
hands to GKL; see ../shared/data/README), cycled to --calls calls. By default the two cases with a
sequence of 1,024 bases or more are left out: GKL's AVX-512 kernel gives wrong CIGARs, hangs or crashes
there (../shared/data/README); --include-long keeps them (then only GKL's AVX2 kernel is run). Rows: the
three parameter sets HaplotypeCaller uses (NEW_SW_PARAMETERS, ALIGNMENT_TO_BEST_HAPLOTYPE, STANDARD_NGS),
the file's edge-case sets ("other"), and all calls; each with the overhang strategies its calls have.

warpdp: ``align(mode="gatk", cigar=True, threads=1, cpu_isa=...)``, one batch per (parameter set,
overhang); seconds = CPU time of the calling thread (``time.thread_time``) over the row's batches.
GKL 0.8.11 (the version GATK 4.6.2.0 ships; Maven Central ``com.intel.gkl:gkl``, fetched with ``mvn
dependency:get`` when not in ~/.m2): benchmarks/java/GklSmithWatermanBench.java, compiled here, calls
``IntelSmithWaterman.align`` one pair at a time as GATK does and reports the thread's CPU time
(``ThreadMXBean``). GKL picks its kernel from CPUID (AVX-512 where the CPU has it); ``--gkl-kernels``
lists the runs: "native" (GKL's own pick), "avx2", "avx512" (GKL's dispatch pointer set to that kernel of
GKL's). Every warpdp variant's CIGAR and offset are checked against every GKL run's, pair by pair, and
against gatk-sw-600.gkl.out. Times are medians of --repeats runs after a warm-up. ratio = GKL s / warpdp s.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import warpdp  # noqa: E402
from bench_common import commit, cpu_name  # noqa: E402
from warpdp.plugin.align import AlignPairs, AlignParams, align, align_cpu_isas  # noqa: E402

HERE = Path(__file__).resolve().parent
PARAMETER_SETS = {(200, -150, -260, -11): "NEW_SW_PARAMETERS", (10, -15, -30, -5): "ALIGNMENT_TO_BEST_HAPLOTYPE",
                  (25, -50, -110, -6): "STANDARD_NGS"}
ROWS = (*PARAMETER_SETS.values(), "other")
GKL_VERSION = "0.8.11"
# GKL's jar and the runtime dependencies its Smith-Waterman classes load (GKL 0.8.11's pom).
GKL_CLASSPATH = (("com.intel.gkl", "gkl", GKL_VERSION), ("org.broadinstitute", "gatk-native-bindings", "1.0.0"),
                 ("commons-logging", "commons-logging", "1.2"), ("commons-io", "commons-io", "2.7"))
JAVA_OPTIONS = ["--add-modules", "jdk.incubator.foreign", "--enable-native-access=ALL-UNNAMED"]


def read_cases(data: Path, include_long: bool) -> list[tuple]:
    """(ref, alt, (match, mismatch, open, extend), overhang, expected (cigar, offset)) per kept case."""
    cases = []
    with open(data / "gatk-sw-600.tsv") as tsv, open(data / "gatk-sw-600.gkl.out") as out:
        for line, expected in zip(tsv, out):
            ref, alt, *scores, overhang = line.rstrip("\n").split("\t")
            cigar, offset = expected.split()
            if include_long or max(len(ref), len(alt)) < 1024:
                cases.append((ref, alt, tuple(int(s) for s in scores), overhang, (cigar, int(offset))))
    return cases


def row_of(scores: tuple) -> str:
    return PARAMETER_SETS.get(scores, "other")


def gkl_classpath() -> str:
    jars = []
    for group, artifact, version in GKL_CLASSPATH:
        jar = (Path.home() / ".m2" / "repository" / group.replace(".", "/") / artifact / version /
               f"{artifact}-{version}.jar")
        if not jar.exists():
            subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact={group}:{artifact}:{version}",
                            "-Dtransitive=false"], check=True)
        jars.append(str(jar))
    return os.pathsep.join(jars)


def run_gkl(calls: list[tuple], kernel: str, repeats: int, workdir: Path, classpath: str) -> tuple:
    """GKL's times per row (median) and results per call; the kernel GKL picked and the one used."""
    calls_file, out_file = workdir / "calls.tsv", workdir / f"gkl-{kernel}.tsv"
    with open(calls_file, "w") as f:
        for ref, alt, scores, overhang, _ in calls:
            f.write("\t".join((ref, alt, *map(str, scores), overhang, row_of(scores))) + "\n")
    run = subprocess.run(["java", *JAVA_OPTIONS, "-cp", f"{classpath}{os.pathsep}{workdir}", "GklSmithWatermanBench",
                          str(calls_file), str(out_file), str(repeats), kernel],
                         capture_output=True, text=True, check=True)
    times: dict[str, list[float]] = defaultdict(list)
    found = {}
    for line in run.stdout.splitlines():
        words = line.split()
        if words[0] == "time":
            times[words[1]].append(float(words[3]))
        else:
            found[words[0]] = words[1]
    lines = out_file.read_text().splitlines()
    results = [(cigar, int(offset)) for cigar, offset in (line.split("\t") for line in lines)]
    medians = {row: statistics.median(t) for row, t in times.items()}
    return medians, results, found["kernel_picked"], found["kernel_used"]


def warpdp_batches(calls: list[tuple]) -> dict[str, list[tuple]]:
    """Per row: (indices, AlignPairs (query = alt, target = ref), AlignParams) per (parameter set, overhang)."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for k, (_, _, scores, overhang, _) in enumerate(calls):
        groups[(scores, overhang)].append(k)
    batches: dict[str, list[tuple]] = defaultdict(list)
    for (scores, overhang), indices in groups.items():
        pairs = AlignPairs.from_sequences([(calls[k][1], calls[k][0]) for k in indices])
        match, mismatch, gap_open, gap_extend = scores
        params = AlignParams(mode="gatk", match=match, mismatch=mismatch, gap_open=gap_open, gap_extend=gap_extend,
                             overhang=overhang, cigar=True)
        batches[row_of(scores)].append((indices, pairs, params))
    return batches


def run_warpdp(batches: dict[str, list[tuple]], n_calls: int, isa: str, repeats: int) -> tuple:
    """warpdp's times per row (median of the sums of its batches) and results per call."""
    results: list = [None] * n_calls
    times: dict[str, list[float]] = defaultdict(list)
    for repeat in range(repeats + 1):  # the first is the warm-up
        for row, row_batches in batches.items():
            used = 0.0
            for indices, pairs, params in row_batches:
                start = time.thread_time()
                found = align(pairs, params, backend="cpu", threads=1, cpu_isa=isa)
                used += time.thread_time() - start
                if repeat == 0:
                    for n, k in enumerate(indices):
                        results[k] = (found.cigarstring(n), int(found.columns["target_begin"][n]))
            if repeat > 0:
                times[row].append(used)
    return {row: statistics.median(t) for row, t in times.items()}, results


def check(name: str, got: list, want: list) -> int:
    wrong = [k for k in range(len(want)) if got[k] != want[k]]
    if wrong:
        print(f"MISMATCH: {name}: {len(wrong)} of {len(want)} calls differ, first {wrong[:5]}")
    return len(wrong)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--isa", default=None, help="warpdp CPU variants, comma separated (default: all this CPU runs)")
    parser.add_argument("--gkl-kernels", default="native,avx2")
    parser.add_argument("--no-gkl", action="store_true", help="warpdp rows only")
    parser.add_argument("--include-long", action="store_true", help="keep the two cases of >= 1,024 bases")
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data" / "sw")
    args = parser.parse_args()
    cases = read_cases(args.data, args.include_long)
    calls = [cases[k % len(cases)] for k in range(args.calls)]
    isas = args.isa.split(",") if args.isa else align_cpu_isas()
    kernels = [] if args.no_gkl else args.gkl_kernels.split(",")
    if args.include_long:
        kernels = [k for k in kernels if k == "avx2"]
    print(f"machine: {cpu_name()}, {len(os.sched_getaffinity(0))} cores; commit {commit()}")
    print(f"command: python {' '.join(sys.argv)}; warpdp from {Path(warpdp.__file__).parent}")
    rows = [r for r in ROWS if any(row_of(c[2]) == r for c in calls)]
    cells = {r: sum((len(c[0]) + 1) * (len(c[1]) + 1) for c in calls if row_of(c[2]) == r) for r in rows}
    counts = {r: sum(row_of(c[2]) == r for c in calls) for r in rows}
    print(f"{len(calls)} calls from {len(cases)} cases; calls (DP cells) per row: "
          + ", ".join(f"{r} {counts[r]} ({cells[r] / 1e6:.1f} M)" for r in rows))
    wrong = 0
    expected = [c[4] for c in calls]
    gkl: dict[str, dict[str, float]] = {}
    gkl_results: dict[str, list] = {}
    missing = [tool for tool in ("java", "javac", "mvn") if kernels and shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"gatk_sw.py: GKL's runs need a JDK 17 and Maven ({', '.join(missing)} not found); "
                         "or pass --no-gkl")
    if kernels:
        classpath = gkl_classpath()
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            subprocess.run(["javac", "--add-modules", "jdk.incubator.foreign", "-nowarn", "-cp", classpath, "-d", tmp,
                            str(HERE / "java" / "GklSmithWatermanBench.java")], check=True, capture_output=True)
            for kernel in kernels:
                times, results, picked, used = run_gkl(calls, kernel, args.repeats, workdir, classpath)
                name = f"GKL {GKL_VERSION} {used}" + (" (GKL's pick)" if kernel == "native" else "")
                print(f"GKL picks its {picked} kernel on this CPU; run {kernel!r} used {used}")
                wrong += check(f"{name} vs gatk-sw-600.gkl.out", results, expected)
                gkl[name] = times
                gkl_results[name] = results
    print("\n| parameter set | calls | warpdp variant | warpdp s | warpdp calls/s | GCUPS | "
          + " | ".join(f"{name} s | ratio" for name in gkl) + " |")
    print("| --- | ---: | --- | ---: | ---: | ---: |" + " ---: | ---: |" * len(gkl))
    batches = warpdp_batches(calls)
    for isa in isas:
        times, results = run_warpdp(batches, len(calls), isa, args.repeats)
        wrong += check(f"warpdp {isa} vs gatk-sw-600.gkl.out", results, expected)
        for name, theirs in gkl_results.items():
            wrong += check(f"warpdp {isa} vs {name}", results, theirs)
        for row in (*rows, "all"):
            ours = sum(times.values()) if row == "all" else times[row]
            n = len(calls) if row == "all" else counts[row]
            n_cells = sum(cells.values()) if row == "all" else cells[row]
            line = f"| {row} | {n} | {isa} | {ours:.4f} | {n / ours:,.0f} | {n_cells / ours / 1e9:.2f} |"
            for name, theirs in gkl.items():
                base = sum(theirs.values()) if row == "all" else theirs[row]
                line += f" {base:.4f} | {base / ours:.2f} |"
            print(line, flush=True)
    print("results: " + ("every call equal to GKL's" if wrong == 0 else f"{wrong} MISMATCHES"))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
