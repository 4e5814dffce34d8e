"""ctest: warpdp_logan.h (LOGAN's extendSeedL, warpdp::extendSeed, warpdp::XdropBatcher) against
SeqAn's own outputs (../shared/data/xdrop/*.seqan.out, where that folder exists) and against the
Python API (warpdp.xdrop on the same pairs, always; a synthetic LOGAN-format file is added).

extendSeedL runs with WARPDP_LOGAN_BACKEND unset (auto), cpu, and, where a GPU handle opens here,
gpu (with ngpus 1 and 2); where none opens, gpu must be refused with a message. A value other
than auto, cpu and gpu must be refused too.

    compare_logan.py --program PATH --work DIR
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import warpdp

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "xdrop"
K = 17
RNG = np.random.default_rng(17)


def synthetic_file(path: Path) -> None:
    """LOGAN's text format: 150 pairs, ~10% substitutions, some on the opposite strand (strand c)."""
    complement = bytes.maketrans(b"ACGT", b"TGCA")
    lines = []
    for n in range(150):
        v = bytes(RNG.choice(np.frombuffer(b"ACGT", np.uint8), int(RNG.integers(40, 800))))
        h = bytearray(v)
        for i in range(len(h)):
            if RNG.random() < 0.1:
                h[i] = int(RNG.choice(np.frombuffer(b"ACGT", np.uint8)))
        pos = int(RNG.integers(0, len(v) - K + 1))
        h[pos:pos + K] = v[pos:pos + K]
        strand = "c" if n % 3 == 0 else "n"
        if strand == "c":  # the reader complements H back and mirrors the seed
            h = bytearray(bytes(h).translate(complement))
        pos_h = len(h) - pos - K if strand == "c" else pos
        lines.append(f"{v.decode()}\t{pos}\t{bytes(h).decode()}\t{pos_h}\t{strand}\n")
    path.write_text("".join(lines))


def python_lines(tsv: Path, x: int) -> list[str]:
    r = warpdp.xdrop(warpdp.read_logan_text(tsv, k=K), k=K, x=x, backend="cpu")
    return [f"{s} {a} {b} {c} {d}" for s, a, b, c, d in zip(r.score, r.begin_h, r.end_h, r.begin_v, r.end_v)]


BACKEND = "WARPDP_LOGAN_BACKEND"


def run(program: str, mode: str, tsv: Path, x: int, backend: str | None = None) -> subprocess.CompletedProcess:
    """The program on the file, with WARPDP_LOGAN_BACKEND set to `backend` (None: unset)."""
    env = {name: value for name, value in os.environ.items() if name != BACKEND}
    if backend is not None:
        env[BACKEND] = backend
    return subprocess.run([program, mode, str(tsv), str(K), str(x)], capture_output=True, text=True, timeout=600,
                          env=env)


def check_backend_errors(program: str, tsv: Path, gpu: bool) -> list[str]:
    """A bad WARPDP_LOGAN_BACKEND is refused; so is gpu where no GPU handle opens."""
    problems = []
    refused = [("tpu", BACKEND)] + ([] if gpu else [("gpu", "no GPU handle opens")])
    for backend, words in refused:
        done = run(program, "logan", tsv, 20, backend)
        if done.returncode != 3 or words not in done.stderr:
            problems.append(f"{BACKEND}={backend}: wanted exit 3 with '{words}', got exit {done.returncode}: "
                            f"{done.stderr.strip()[:300]}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--program", required=True)
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    synthetic = args.work / "synthetic-150.tsv"
    synthetic_file(synthetic)
    inputs = [(synthetic, x, None) for x in (7, 40)]
    for stem, xs in (("logan-example", (5, 21, 100)), ("synthetic-300", (10, 50, 200))):
        if (DATA / f"{stem}.tsv").exists():
            inputs += [(DATA / f"{stem}.tsv", x, DATA / f"{stem}.x{x}.seqan.out") for x in xs]
    if not DATA.exists():
        print(f"note: {DATA} is absent: synthetic pairs against the Python API only")
    probe = run(args.program, "gpu", synthetic, 0)
    gpu = probe.returncode == 0
    print("GPU handle: opens, extendSeedL runs on the GPU too" if gpu
          else f"GPU handle: none here ({probe.stderr.strip()[:200]}): extendSeedL on the CPU only")
    # (mode, backend): unset (auto) for every mode; LOGAN's call on each backend explicitly.
    runs = [(mode, None) for mode in ("logan", "bella", "seed", "batcher")]
    runs += [(mode, "cpu") for mode in ("logan", "bella")]
    if gpu:
        runs += [(mode, "gpu") for mode in ("logan", "logan2", "bella")]
    problems = check_backend_errors(args.program, synthetic, gpu)
    for tsv, x, seqan in inputs:
        want = python_lines(tsv, x)
        if seqan is not None:
            reference = [" ".join(line.split()) for line in seqan.read_text().splitlines() if line.strip()]
            if reference != want:
                problems.append(f"{tsv.name} X={x}: the Python API differs from SeqAn's outputs")
        for mode, backend in runs:
            done = run(args.program, mode, tsv, x, backend)
            if done.returncode != 0 or done.stdout.splitlines() != want:
                problems.append(f"{tsv.name} X={x} {mode} ({BACKEND}={backend}): exit {done.returncode}, "
                                f"{done.stderr.strip()[:200]}; "
                                f"{sum(a != b for a, b in zip(done.stdout.splitlines(), want))} lines differ")
        print(f"{tsv.name} X={x}: {len(want)} pairs" + (" (also against SeqAn)" if seqan is not None else ""))
    for mode, backend in [("directions", None), ("errors", None), ("errors", "cpu")] + [("errors", "gpu")] * gpu:
        done = run(args.program, mode, synthetic, 20, backend)
        if done.returncode != 0:
            problems.append(f"{mode} ({BACKEND}={backend}): exit {done.returncode}: {done.stderr.strip()[:400]}")
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
