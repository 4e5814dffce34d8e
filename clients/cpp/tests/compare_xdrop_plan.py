"""ctest: the X-drop GPU launcher of libwarpdp plans its chunks as the Python launcher does. For
synthetic batches (every kernel and flank bin, several scores, small chunk limits),
warpdp_xdrop_plan (src/gpu/xdrop_plan.cu, no GPU needed) and warpdp/kernels/xdrop.py
(split_chunks, _ChunkPlan) must give the same chunks, work-item order, launches (kernel, items,
stride, grid, threads, shared memory) and memory layout, for the same device residency.

    compare_xdrop_plan.py --program PATH --work DIR
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import RNG  # noqa: E402
from gpu_cases import xdrop_concat, xdrop_noisy_pairs  # noqa: E402
from warpdp.kernels import xdrop as launcher  # noqa: E402

# A device as the plans see it (an H200-like one): blocks resident at once per kernel.
SM_COUNT = 132
SHARED_PER_SM = 228 << 10
NARROW_WARPS = 3 * 8 * SM_COUNT
WIDE_BLOCKS = (8 * SM_COUNT, 4 * SM_COUNT, 2 * SM_COUNT)
KERNELS = {4: "narrow_int32", 8: "narrow_int64", "shared": "shared"}
LAYOUT = ("params", "counters", "h_bases", "v_bases", "h_offsets", "v_offsets", "h_pos", "v_pos", "order")


def shared_resident(shared_bytes: int) -> int:
    return max(1, SHARED_PER_SM // (shared_bytes + 1024)) * SM_COUNT


def python_plan(pairs, scores: launcher.Scores, chunk_pairs: int, chunk_bytes: int) -> tuple[list[str], list]:
    lines, orders = [], []
    wide = list(zip(launcher.WIDE_CONFIGS, WIDE_BLOCKS))
    for start, stop in launcher.split_chunks(pairs.h_offsets, pairs.v_offsets, chunk_pairs, chunk_bytes):
        plan = launcher._ChunkPlan(pairs, start, stop, scores, NARROW_WARPS, wide, shared_resident)
        lines.append(f"chunk {start} {stop} {plan.h0} {plan.h1} {plan.v0} {plan.v1}")
        at = plan.at
        layout = [at[name] for name in LAYOUT] + [plan.blob_bytes, at["out"], plan.out_bytes, at["scratch"],
                                                  plan.device_bytes]
        lines.append("layout " + " ".join(str(v) for v in layout))
        for launch in plan.launches:
            kind, row = (("wide", launch.kernel[1]) if isinstance(launch.kernel, tuple)
                         else (KERNELS[launch.kernel], 0))
            lines.append(f"launch {kind} {row} {launch.first} {launch.count} {launch.stride} {launch.grid} "
                         f"{launch.threads} {launch.index} {launch.shared_bytes}")
        orders.append(plan.order)
    return lines, orders


def check(program: str, work: Path, name: str, pairs, scores: launcher.Scores, chunk_pairs: int,
          chunk_bytes: int) -> list[str]:
    folder = work / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for field in ("h_bases", "v_bases", "h_offsets", "v_offsets", "h_pos", "v_pos"):
        np.ascontiguousarray(getattr(pairs, field)).tofile(folder / f"{field}.bin")
    params = {"k": scores.k, "x": scores.x, "match": scores.match, "mismatch": scores.mismatch, "gap": scores.gap,
              "report": int(scores.best), "narrow_warps": NARROW_WARPS, "sm_count": SM_COUNT,
              "shared_per_sm": SHARED_PER_SM, "chunk_pairs": chunk_pairs, "chunk_bytes": chunk_bytes,
              "scratch_limit": launcher._SCRATCH_BYTES, **{f"wide{i}": b for i, b in enumerate(WIDE_BLOCKS)}}
    (folder / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in params.items()))
    done = subprocess.run([program, str(folder)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return [f"{name}: exit {done.returncode}: {done.stderr.strip()}"]
    want_lines, want_orders = python_plan(pairs, scores, chunk_pairs, chunk_bytes)
    got_lines = (folder / "plan.txt").read_text().splitlines()
    problems = []
    if got_lines != want_lines:
        first = next((i for i, (a, b) in enumerate(zip(got_lines, want_lines)) if a != b), min(len(got_lines),
                                                                                            len(want_lines)))
        problems.append(f"{name}: plans differ from line {first}: C {got_lines[first:first + 1]} "
                        f"Python {want_lines[first:first + 1]} ({len(got_lines)} and {len(want_lines)} lines)")
    for c, want in enumerate(want_orders):
        got = np.fromfile(folder / f"order_{c}.bin", dtype=np.int32) if (folder / f"order_{c}.bin").exists() else None
        if got is None or not np.array_equal(got, want):
            problems.append(f"{name}: chunk {c}: the order of the work items differs")
    kernels = sorted({line.split()[1] + (line.split()[2] if line.split()[1] == "wide" else "")
                      for line in want_lines if line.startswith("launch")})
    print(f"{name}: {sum(line.startswith('chunk') for line in want_lines)} chunks, "
          f"{sum(line.startswith('launch') for line in want_lines)} launches ({', '.join(kernels)})")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--program", required=True)
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()
    for name in (launcher.WIDE_ENV, launcher.WIDE_MIN_WINDOW_ENV, launcher.WIDE_CONFIGS_ENV, launcher.SHARED_ENV,
                 launcher.SHARED_MIN_WINDOW_ENV):
        os.environ.pop(name, None)  # the C launcher has the defaults only
    k = 17
    pairs = xdrop_concat([
        xdrop_noisy_pairs(RNG.integers(k, 2500, 1500), k, 0.1),
        xdrop_noisy_pairs(RNG.integers(2500, 9000, 300), k, 0.15),
        xdrop_noisy_pairs(RNG.integers(9000, 40000, 12), k, 0.1),
        xdrop_noisy_pairs(RNG.integers(140000, 200000, 2), k, 0.05),
        xdrop_noisy_pairs(RNG.integers(540000, 560000, 1), k, 0.05),
        xdrop_noisy_pairs(RNG.integers(k, 3000, 100), k, 0.75),
    ])
    big = 1 << 20
    runs = [("x10", launcher.Scores(k, 1, -1, -1, 10, False), 1 << 19, 512 << 20),
            ("x500.best", launcher.Scores(k, 1, -1, -1, 500, True), 1 << 19, 512 << 20),
            ("wide", launcher.Scores(k, 10, -10, -10, 25000, False), 1 << 19, 512 << 20),
            ("int64", launcher.Scores(k, big, -big, -big, 100 * big, False), 1 << 19, 512 << 20),
            ("huge_x", launcher.Scores(k, 1, -1, -1, 1 << 62, False), 1 << 19, 512 << 20),
            ("chunks.pairs", launcher.Scores(k, 2, -3, -2, 300, False), 97, 512 << 20),
            ("chunks.bytes", launcher.Scores(k, 1, -1, -1, 100, False), 1 << 19, 1 << 20)]
    problems = []
    for name, scores, chunk_pairs, chunk_bytes in runs:
        problems += check(args.program, args.work, name, pairs, scores, chunk_pairs, chunk_bytes)
    for line in problems:
        print(line)
    print(f"xdrop plans: {len(runs)} batches, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
