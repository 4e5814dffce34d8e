"""ctest (builds with CUDA; no GPU needed): the C API's seed-extension GPU launcher plans its work
as the Python package's does. For pairs that reach every bin, several match scores and bands, and
chunk limits that cut them into several chunks, warpdp_seedext_plan_check prints the chunks and,
per chunk, its launches (kernel configuration, pairs, longest query, shared memory, grid, params
row, scratch), buffer layout and pair order, and each must equal what warpdp/kernels/seedext.py
(split_chunks, _ChunkPlan) makes of the same pairs with the same occupancy.

    compare_seedext_plan.py --program PATH --work DIR
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_cases import seedext_gpu_pairs  # noqa: E402
from warpdp.kernels import seedext as launcher  # noqa: E402
from warpdp.plugin.seedext import SeedExtParams  # noqa: E402

BLOCKS_PER_SM, SM_COUNT = 2, 4  # few: grids are capped at the resident blocks
CHUNK_PAIRS, CHUNK_BYTES = 4096, 400_000  # several chunks of a few thousand pairs


class FixedOccupancy:
    """seedext.py's runner, as far as a plan asks it: a fixed number of blocks per SM."""

    def resident_blocks(self, config: object, shared_bytes: int) -> int:
        return BLOCKS_PER_SM * SM_COUNT


def python_plan(pairs: object, a: int, w: int) -> list[str]:
    configs = {config: index for index, config in enumerate(launcher.KERNEL_CONFIGS)}
    params = SeedExtParams.from_kwargs(None, a=a, w=w)
    lines = []
    for start, stop in launcher.split_chunks(pairs.query_offsets, pairs.target_offsets, CHUNK_PAIRS, CHUNK_BYTES):
        lines.append(f"chunk {start} {stop}")
        plan = launcher._ChunkPlan(pairs, params, start, stop, FixedOccupancy())
        for launch in plan.launches:
            config = -1 if launch.config is None else configs[launch.config]
            lines.append(f"launch {config} {launch.first} {launch.count} {launch.qmax} {launch.shared_bytes} "
                         f"{launch.grid} {launch.index} {launch.scratch} {launch.state}")
        at = plan.at
        lines.append("layout " + " ".join(str(at[name]) for name in ("params", "counters", "query", "target", "qoff",
                                                                       "toff", "h0", "order"))
                     + f" {plan.blob_bytes} {at['out']} {at['scratch']} {plan.device_bytes}")
        lines.append(" ".join(["order", *map(str, plan.order.tolist())]))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--program", required=True)
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    pair_sets = {"long": seedext_gpu_pairs(6000, seed=294, long_share=0.05, longest=3000),
                 "shared": seedext_gpu_pairs(6000, seed=295, long_share=0.05, longest=1300)}
    problems, compared = [], 0
    for name, pairs in pair_sets.items():
        folder = args.work / name
        folder.mkdir(exist_ok=True)
        for array in ("query", "target", "query_offsets", "target_offsets"):
            getattr(pairs, array).tofile(folder / f"{array}.bin")
        pairs.h0.astype(np.int32).tofile(folder / "h0.bin")
        for a, w in ((1, 100), (1, 10), (1, 40), (20, 40), (3, 0), (2, 1000)):
            done = subprocess.run([args.program, str(folder), str(a), str(w), str(CHUNK_PAIRS), str(CHUNK_BYTES),
                                   str(BLOCKS_PER_SM), str(SM_COUNT)], capture_output=True, text=True, timeout=300)
            got = done.stdout.splitlines() if done.returncode == 0 else [f"exit {done.returncode}: {done.stderr}"]
            want = python_plan(pairs, a, w)
            compared += 1
            if got != want:
                first = next((k for k, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))
                problems.append(f"{name} a={a} w={w}: line {first} differs: C {got[first:first + 1]!s:.200} "
                                f"Python {want[first:first + 1]!s:.200} ({len(got)} and {len(want)} lines)")
    for line in problems:
        print(line)
    print(f"seedext GPU plans: {compared} compared, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
