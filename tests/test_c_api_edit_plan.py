"""libwarpdp's edit GPU launcher plans its chunks in C++ (clients/cpp/src/gpu/edit_plan.cu): its
chunks, launches (kernels, grids, slots, pair lists, counters, overflow lists, scratch), pair order,
symbols and memory layout must be those of warpdp/kernels/edit.py's ChunkPlan, which the Python GPU
backend runs. The plan is host code: built here with g++ and compared on random batches."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from warpdp.kernels import edit as gpu_edit
from warpdp.plugin.edit import EditPairs

ROOT = Path(__file__).resolve().parents[1]
DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string>
#include <vector>
#include "edit_plan.cu"
using namespace wd_edit;

static std::vector<char> load(const std::string &path)
{
    std::vector<char> data;
    FILE *f = fopen(path.c_str(), "rb");
    for (int c; (c = fgetc(f)) != EOF;)
        data.push_back((char)c);
    fclose(f);
    return data;
}

// dir mode task method window overlap k start stop params_bytes: one plan; dir stops: every chunk.
int main(int argc, char **argv)
{
    const std::string dir = argv[1];
    std::vector<char> qb = load(dir + "/qb"), tb = load(dir + "/tb"), qo = load(dir + "/qo"), to = load(dir + "/to");
    const int64_t n = (int64_t)qo.size() / 8 - 1;
    const warpdp_seq_pairs pairs = {(const uint8_t *)qb.data(), (const uint8_t *)tb.data(), 0, 0,
                                    (const int64_t *)qo.data(), (const int64_t *)to.data(), n};
    if (std::string(argv[2]) == "stops") {
        for (int64_t start = 0; start < n; start = chunk_stop(&pairs, start))
            printf("%lld %lld\n", (long long)start, (long long)chunk_stop(&pairs, start));
        return 0;
    }
    const warpdp_edit_params p = {atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoll(argv[7]), atoi(argv[5]),
                                  atoi(argv[6])};
    ChunkPlan plan;
    plan_chunk(plan, &pairs, &p, atoll(argv[8]), atoll(argv[9]), SCRATCH_BUDGET, (size_t)atoll(argv[10]));
    for (const Launch &l : plan.launches)
        printf("launch %d %d %lld %d %lld %d %d %lld %lld %lld %lld %d %d\n", (int)l.kernel, l.grid,
               (long long)l.slots, (int)l.order, (long long)l.order_from, l.count, (int)l.overflow,
               (long long)l.words_per_slot, (long long)l.ints_per_slot, (long long)l.bytes_per_slot,
               (long long)l.words_per_lane, l.trace_rows, l.resume_in);
    printf("counts");
    for (int c : plan.counts)
        printf(" %d", c);
    printf("\norder");
    for (int i : plan.order)
        printf(" %d", i);
    printf("\nskip");
    for (int64_t i : plan.skip)
        printf(" %lld", (long long)i);
    printf("\nsymbols");
    for (int b = 0; b < 256; b++)
        printf(" %d", plan.symbols[b]);
    printf("\nat");
    for (int s = 0; s < N_SECTIONS; s++) {  // an exact plan has no overflow lists nor resume records
        if (!plan.windowed && (s == S_LIST1 || s == S_LIST2 || s == S_RESUME))
            printf(" -1");
        else
            printf(" %zu", plan.at[s]);
    }
    printf("\nsizes %zu %zu %zu %lld %lld %d\n", plan.blob_bytes, plan.device_bytes, plan.head_bytes,
           (long long)plan.loc_room, (long long)plan.cigar_room, plan.alphabet);
    return 0;
}
"""
KERNELS = [gpu_edit.window_kernel_name(d) for d in gpu_edit.WINDOW_TIERS] + [gpu_edit.EXACT_KERNEL,
                                                                            gpu_edit.EXACT_WARP_KERNEL]
SECTIONS = ("params", "counts", "symbols", "query", "target", "qoff", "toff", "order", "out", "loc_begin", "loc_end",
            "cigar", "list1", "list2", "resume", "words", "ints", "bytes")
MODES, TASKS = ("nw", "shw", "hw"), ("distance", "locations", "path")


@pytest.fixture(scope="module")
def planner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed to build the C launcher's planner")
    folder = tmp_path_factory.mktemp("edit_plan")
    (folder / "driver.cpp").write_text(DRIVER)
    gpu = ROOT / "clients" / "cpp" / "src" / "gpu"
    subprocess.run(["g++", "-std=c++17", "-O1", "-I", str(gpu), "-I", str(gpu.parent), "-I",
                    str(ROOT / "clients" / "cpp" / "include"), "-I", str(ROOT / "warpdp" / "cython_cpu"),
                    "-o", str(folder / "driver"), str(folder / "driver.cpp")], check=True)
    return folder


def write_pairs(folder: Path, pairs: EditPairs) -> None:
    for name, array in (("qb", pairs.query_bases), ("tb", pairs.target_bases), ("qo", pairs.query_offsets),
                        ("to", pairs.target_offsets)):
        np.ascontiguousarray(array).tofile(folder / name)


def python_plan(pairs: EditPairs, params: SimpleNamespace, start: int, stop: int) -> list[str]:
    """The Python launcher's plan in the driver's format."""
    skip = gpu_edit.cpu_fallback_pairs(pairs.query_offsets, pairs.target_offsets, params)
    plan = gpu_edit.plan_chunk(pairs, params, skip, (start, stop))
    lists = {"order": SECTIONS.index("order"), "list1": SECTIONS.index("list1"), "list2": SECTIONS.index("list2")}
    lines = [f"launch {KERNELS.index(l.kernel)} {l.grid} {l.slots} {lists[l.order]} {l.order_from} {l.count} "
             f"{lists[l.overflow] if l.overflow else 0} {l.words_per_slot} {l.ints_per_slot} {l.bytes_per_slot} "
             f"{l.words_per_lane} {l.trace_rows} {l.resume_in}" for l in plan.launches]
    lines += ["counts" + "".join(f" {c}" for c in plan.counts), "order" + "".join(f" {i}" for i in plan.order),
              "skip" + "".join(f" {i}" for i in plan.skip), "symbols" + "".join(f" {s}" for s in plan.symbols)]
    lines.append("at" + "".join(f" {plan.at.get(name, -1)}" for name in SECTIONS))
    lines.append(f"sizes {plan.blob_bytes} {plan.device_bytes} {plan.head_bytes} {plan.loc_room} {plan.cigar_room} "
                 f"{plan.alphabet}")
    return lines


def c_plan(planner: Path, params: SimpleNamespace, start: int, stop: int) -> list[str]:
    args = [MODES.index(params.mode), TASKS.index(params.task), int(params.method == "windowed"), params.window,
            params.overlap, params.k, start, stop, gpu_edit.PARAMS.itemsize]
    return subprocess.run([str(planner / "driver"), str(planner), *map(str, args)], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def random_pairs(rng: np.random.Generator, n: int, longest: int, alphabet: bytes) -> EditPairs:
    letters = np.frombuffer(alphabet, np.uint8)
    qlen, tlen = rng.integers(1, longest, n), rng.integers(1, longest, n)
    return EditPairs.from_arrays(query_bases=rng.choice(letters, int(qlen.sum())),
                                 query_offsets=np.concatenate([[0], np.cumsum(qlen)]),
                                 target_bases=rng.choice(letters, int(tlen.sum())),
                                 target_offsets=np.concatenate([[0], np.cumsum(tlen)]))


@pytest.mark.parametrize("trial", range(12))
def test_plans_are_the_python_launchers(planner: Path, trial: int) -> None:
    rng = np.random.default_rng(trial)
    pairs = random_pairs(rng, int(rng.integers(1, 400)), 3000 if trial % 4 == 0 else 300,
                         b"ACGTN" if trial % 3 == 0 else b"ACGT")
    write_pairs(planner, pairs)
    windowed = trial % 2 == 1
    window, overlap = ((64, 33), (32, 17), (20, 5))[trial % 3]
    params = SimpleNamespace(method="windowed" if windowed else "exact", mode="shw" if windowed else MODES[trial % 3],
                             task=TASKS[(trial // 2) % 3], k=int(rng.integers(-1, 50)), window=window, overlap=overlap)
    start = int(rng.integers(0, pairs.n_pairs))
    stop = int(rng.integers(start + 1, pairs.n_pairs + 1))
    assert c_plan(planner, params, start, stop) == python_plan(pairs, params, start, stop)


def test_a_pair_too_large_for_the_gpu_is_left_to_the_cpu_alike(planner: Path) -> None:
    rng = np.random.default_rng(7)
    pairs = random_pairs(rng, 50, 200, b"ACGT")
    big_target = rng.choice(np.frombuffer(b"ACGT", np.uint8), 8_400_000)
    pairs = EditPairs.from_arrays(
        query_bases=np.concatenate([pairs.query_bases, pairs.query_bases[:200]]),
        query_offsets=np.append(pairs.query_offsets, pairs.query_offsets[-1] + 200),
        target_bases=np.concatenate([pairs.target_bases, big_target]),
        target_offsets=np.append(pairs.target_offsets, pairs.target_offsets[-1] + len(big_target)))
    write_pairs(planner, pairs)
    params = SimpleNamespace(method="exact", mode="hw", task="path", k=-1, window=64, overlap=33)
    want = python_plan(pairs, params, 0, pairs.n_pairs)
    assert "skip 50" in want
    assert c_plan(planner, params, 0, pairs.n_pairs) == want


def test_chunks_are_the_python_launchers(planner: Path) -> None:
    rng = np.random.default_rng(3)
    for n, longest in ((300_000, 200), (60_000, 4000)):  # by pairs (2^18 a chunk), by bases (128 Mi)
        qlen, tlen = rng.integers(1, longest, n), rng.integers(1, longest, n)
        for name, lengths in (("qo", qlen), ("to", tlen)):
            np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64).tofile(planner / name)
        for name in ("qb", "tb"):
            (planner / name).write_bytes(b"")
        found = subprocess.run([str(planner / "driver"), str(planner), "stops"], capture_output=True, text=True,
                               check=True).stdout.split()
        want = gpu_edit.split_chunks(np.concatenate([[0], np.cumsum(qlen)]), np.concatenate([[0], np.cumsum(tlen)]))
        assert len(want) > 1
        assert [int(v) for v in found] == [v for chunk in want for v in chunk]
