"""Start-up time of the `warpdp` command (issue #28 target: --help and --version < 0.15 s).

    python benchmarks/startup.py [--repeats 20]

Runs `python -m warpdp --version`, `--help` and `python -c "import warpdp"` as new processes,
with this checkout's package, and prints the median and best wall time of each, against a bare
`python -c pass` for the interpreter's own share. Also lists which heavy modules each one imports.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import commit, cpu_name  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 0.15
HEAVY = ("numpy", "grpc", "google.protobuf", "cupy", "pysam", "tqdm")
CASES = {
    "python -c pass (interpreter alone)": ["-c", "pass"],
    "import warpdp": ["-c", "import warpdp"],
    "warpdp --version": ["-m", "warpdp", "--version"],
    "warpdp --help": ["-m", "warpdp", "--help"],
}


def wall_times(arguments: list[str], repeats: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, *arguments], check=True, stdout=subprocess.DEVNULL, env=env, cwd=REPO)
        times.append(time.perf_counter() - start)
    return times


def heavy_imports(arguments: list[str]) -> list[str]:
    probe = ("import sys, runpy; sys.argv = ['warpdp', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('warpdp', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    if arguments[0] == "-c":
        probe = f"{arguments[1]}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"
        arguments = []
    else:
        arguments = arguments[2:]
    result = subprocess.run([sys.executable, "-c", probe, *arguments], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, check=True)
    return result.stderr.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"CPU: {cpu_name()}; commit {commit()}; Python {sys.version.split()[0]}; target < {TARGET_S} s\n")
    print("| command | median s | best s | heavy modules imported |")
    print("|---|---|---|---|")
    for label, arguments in CASES.items():
        times = wall_times(arguments, args.repeats)
        heavy = ", ".join(heavy_imports(arguments)) or "none"
        print(f"| {label} | {statistics.median(times):.3f} | {min(times):.3f} | {heavy} |")


if __name__ == "__main__":
    main()
