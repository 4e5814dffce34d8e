"""Host work of the edit family's GPU launcher, stage by stage, without a GPU (issue 27: the
windowed short set's kernels take ~30 ms on an H200 but the call ~320 ms end to end).

    python benchmarks/edit_gpu_host.py [--short-pairs 1000000] [--repeats 5] [--tasks path,distance]

The pairs are benchmarks/edit_gpu.py's short workload (seed 2, 100-250 bp, 1-5 % errors, each
read against its window plus 2 W of reference; W=32, O=17). Each stage is what the launcher's
device path runs on the host, for every chunk of the job (warpdp/kernels/edit.py):

* front: ``EditPairs.validate`` and the parameters (warpdp.plugin.edit.edit, before the launcher);
* split: the CPU-fallback scan and the cut into chunks;
* plan: ``plan_chunk`` (order, tiers, memory layout);
* fill: ``ChunkPlan.fill`` into a host buffer (the pinned input buffer on a GPU);
* collect: what ``_Runner._copy_out`` does with the bytes that came back: the CIGAR offsets
  (uploaded for the device's CIGAR packing), the packed CIGARs' copy out of the pinned buffer,
  ``ChunkPlan.decode``;
* merge: the chunks' results joined, the BAD_BASE check.

The bytes that "came back" are synthetic (not timed): distances Poisson(3 % of the query), a
CIGAR of 2 d + 1 runs, locations at the pair; the host stages' cost depends on these sizes, not
on the values. The GPU's own work (uploads, kernels, downloads) is not here: benchmarks/edit_gpu.py
times the whole call on a device. Each stage's figure is the median over --repeats of its total
per job, in ms.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import commit, cpu_name  # noqa: E402
from edit import read_pairs  # noqa: E402
from edit_gpu import PAD_WINDOWS, windowed_pairs  # noqa: E402
from warpdp.kernels import edit as gpu_edit  # noqa: E402
from warpdp.plugin.core.packed import offsets_of  # noqa: E402
from warpdp.plugin.edit import EditParams, EditResults  # noqa: E402

STAGES = ("front", "split", "plan", "fill", "collect", "merge")
PINNED_IN = [np.zeros(0, np.uint8)]  # stands for a slot's pinned input buffer, reused from job to job


def synthetic_head(plan: gpu_edit.ChunkPlan, rng: np.random.Generator) -> np.ndarray:
    """The bytes the device would copy back for this chunk (head_bytes from "out", then the
    CIGARs packed in pair order), with plausible sizes."""
    n = plan.n
    buffer = np.zeros(plan.out_bytes, np.uint8)
    table = buffer[:8 * gpu_edit.OUT_COLUMNS * n].view(np.int64).reshape(gpu_edit.OUT_COLUMNS, n)
    m = np.diff(plan.qoff)
    table[0] = rng.poisson(0.03 * m)
    table[1] = 0
    table[2] = m + table[0] // 2
    table[3] = 1 if plan.want_locations else 0
    table[4] = 2 * table[0] + 1 if plan.want_cigar else 0
    if plan.want_locations:
        at0 = plan.at["out"]
        buffer[plan.at["loc_begin"] - at0:][:8 * n].view(np.int64)[:] = table[1]
        buffer[plan.at["loc_end"] - at0:][:8 * n].view(np.int64)[:] = table[2]
    total = int(table[4].sum())
    buffer[plan.head_bytes:plan.head_bytes + 4 * total].view(np.uint32)[:] = rng.integers(0, 1 << 20, total,
                                                                                           dtype=np.uint32)
    return buffer


def collect(plan: gpu_edit.ChunkPlan, pinned_out: np.ndarray) -> EditResults:
    """_Runner._copy_out's host work (the CIGARs already packed after the head)."""
    head = pinned_out[:plan.head_bytes]
    if not plan.want_cigar:
        return plan.decode(head)
    if hasattr(plan, "cigar_offsets"):
        offsets = plan.cigar_offsets(head)
        total = int(offsets[-1])
        ops = pinned_out[plan.head_bytes:plan.head_bytes + 4 * total].view(np.uint32).copy()
        return plan.decode(head, ops, offsets)
    offsets = offsets_of(plan.table(head)[4])  # an older launcher (the "before" rows): its ChunkPlan.table
    total = int(offsets[-1])
    ops = pinned_out[plan.head_bytes:plan.head_bytes + 4 * total].view(np.uint32).copy()
    return plan.decode(head, ops)


def one_job(pairs, fields: dict, rng: np.random.Generator) -> dict[str, float]:
    spent = dict.fromkeys((*STAGES, "device"), 0.0)
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        spent[stage] += now - clock
        clock = now

    pairs.validate()
    params = EditParams(**fields)
    lap("front")
    skip = gpu_edit.cpu_fallback_pairs(pairs.query_offsets, pairs.target_offsets, params)
    chunks = gpu_edit.split_chunks(pairs.query_offsets, pairs.target_offsets)
    lap("split")
    parts = []
    for chunk in chunks:
        plan = gpu_edit.plan_chunk(pairs, params, skip, chunk)
        lap("plan")
        if len(PINNED_IN[0]) < plan.blob_bytes:  # the slots' buffers outlive a job: not timed
            PINNED_IN[0] = np.zeros(plan.blob_bytes + plan.blob_bytes // 4, np.uint8)
            lap("device")
        plan.fill(PINNED_IN[0], pairs, 1 << 40)
        lap("fill")
        pinned_out = synthetic_head(plan, rng)
        lap("device")  # stands for the GPU's work: not reported
        parts.append((plan.start, collect(plan, pinned_out)))
        lap("collect")
    results = parts[0][1] if len(parts) == 1 else EditResults.concat([part for _, part in parts])
    np.flatnonzero(results.distance == gpu_edit.BAD_BASE)
    lap("merge")
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short-pairs", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tasks", default="path,distance")
    args = parser.parse_args()
    w, o = 32, 17
    pairs = windowed_pairs(read_pairs(args.short_pairs, (100, 250), (0.01, 0.05), (0.8, 0.1, 0.1), seed=2),
                           PAD_WINDOWS * w)
    rng = np.random.default_rng(27)
    print(f"commit {commit()}; CPU {cpu_name()}; {len(pairs)} short pairs, windowed W{w}/O{o}; "
          f"median of {args.repeats} runs after a warm-up, ms per job")
    print("| task | " + " | ".join(STAGES) + " | host total |\n|---|" + "---:|" * (len(STAGES) + 1))
    for task in args.tasks.split(","):
        fields = dict(method="windowed", mode="shw", window=w, overlap=o, task=task)
        one_job(pairs, fields, rng)
        runs = [one_job(pairs, fields, rng) for _ in range(args.repeats)]
        medians = [1000 * statistics.median(run[stage] for run in runs) for stage in STAGES]
        total = 1000 * statistics.median(sum(run[stage] for stage in STAGES) for run in runs)
        print(f"| windowed {task} | " + " | ".join(f"{value:.1f}" for value in medians) + f" | {total:.1f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
