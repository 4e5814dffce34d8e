"""The GPU seed-extension kernel's logic, run on the CPU (no GPU needed).

``warpdp/kernels/seedext.cu`` is compiled as host C++ (g++) with its warp intrinsics
emulated: every lane of a subwarp is a fiber (ucontext) on one OS thread, run until its next
warp collective, and a shuffle or reduction reads what all lanes posted. Each kernel configuration the launcher uses
then runs real pairs and must give the CPU backend's answers exactly. This checks the
algorithm (tiles, the F scan, the state writes, the trimming, the bookkeeping), not the CUDA
specifics, which the `gpu` tests check on a device.

By default a sample runs; WARPDP_EMULATE_ALL=1 runs all 500 reference pairs through every
configuration (minutes).
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import warpdp
from helpers.data import shared_file
from helpers.emulation import WARP_EMULATION_INCLUDE
from warpdp.kernels import seedext as gpu_module

CU_SOURCE = Path(gpu_module.__file__).with_name("seedext.cu")
FULL = os.environ.get("WARPDP_EMULATE_ALL") == "1"


@dataclass(frozen=True)
class LaneKernel:
    """The lane kernel, in the shape the harness's command line takes (lanes 1 selects it)."""

    lanes: int = 1
    cols: int = 0
    shared: bool = True
    name: str = gpu_module.LANE_KERNEL


LANE = LaneKernel()
ALL_KERNELS = (LANE, *gpu_module.KERNEL_CONFIGS)

HARNESS = r"""
#include "warp_emulation.h"

/* Reductions over a subwarp (the lanes of its group). */
int __reduce_max_sync(unsigned, int v) {
    long long *s = collective(v);
    long long r = s[0];
    for (int k = 1; k < emu_group; k++) r = std::max(r, s[k]);
    return (int)r;
}
int __reduce_min_sync(unsigned, int v) {
    long long *s = collective(v);
    long long r = s[0];
    for (int k = 1; k < emu_group; k++) r = std::min(r, s[k]);
    return (int)r;
}

#include SEEDEXT_CU
using namespace warpdp_seedext;
static void *emu_params = nullptr;

/* The layout the Python launcher writes (seedext.py, _ChunkPlan.fill). */
static_assert(offsetof(Params, scratch) == 64 && offsetof(Params, state_ints) == 72);
static_assert(offsetof(Params, n) == 80 && offsetof(Params, qmax) == 84 && offsetof(Params, a) == 88);
static_assert(offsetof(Params, zdrop) == 120);

template <int G, int C, bool SHARED> static void lane_main() {
    extend_kernel<G, C, SHARED>(reinterpret_cast<const Params *>(emu_params));
    fiber_exit();
}

static void lane_kernel_main() {
    extend_lane_kernel(reinterpret_cast<const Params *>(emu_params));
    fiber_exit();
}

/* The lane kernel: one block of one warp, 32 fibers sharing its interleaved row state. */
static void run_lane(Params &p) {
    emu_group = 32;
    emu_params = &p;
    std::vector<int> shared((size_t)32 * (p.qmax + 1));
    emu_shared = shared.data();
    run_fibers(32, lane_kernel_main, 1 << 18);
}

template <int G, int C, bool SHARED> static void run(Params &p, int n_sub) {
    emu_group = G;
    emu_params = &p;
    std::vector<int> shared(SHARED ? (size_t)(THREADS / G) * p.state_ints : 1);
    std::vector<int> scratch(SHARED ? 1 : (size_t)(THREADS / G) * p.state_ints);
    emu_shared = shared.data();
    p.scratch = scratch.data();
    run_fibers(n_sub * G, lane_main<G, C, SHARED>, 1 << 18);
}

int main(int argc, char **argv) {
    if (argc != 6) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    const int G = atoi(argv[2]), C = atoi(argv[3]), shared = atoi(argv[4]), n_sub = atoi(argv[5]);
    int par[9];
    if (fread(par, 4, 9, f) != 9) return 3;
    auto query = read_array<unsigned char>(f);
    auto target = read_array<unsigned char>(f);
    auto qoff = read_array<long long>(f);
    auto toff = read_array<long long>(f);
    auto h0 = read_array<int>(f);
    fclose(f);
    const int n = (int)qoff.size() - 1;
    std::vector<int> order(n > 0 ? n : 1), out((size_t)(n > 0 ? n : 1) * 6, -99);
    int qmax = 0, counter = 0;
    for (int k = 0; k < n; k++) {
        order[k] = n - 1 - k;  /* any order: each result goes to its own row */
        qmax = std::max(qmax, (int)(qoff[k + 1] - qoff[k]));
    }
    Params p{};
    p.query = query.data(); p.target = target.data();
    p.query_offsets = qoff.data(); p.target_offsets = toff.data();
    p.h0 = h0.data(); p.order = order.data(); p.counter = &counter; p.out = out.data();
    p.state_ints = STATE_INTS(qmax);
    p.n = n; p.qmax = qmax;
    p.a = par[0]; p.b = par[1]; p.o_del = par[2]; p.e_del = par[3]; p.o_ins = par[4]; p.e_ins = par[5];
    p.w = par[6]; p.end_bonus = par[7]; p.zdrop = par[8];
    bool ran = false;
    if (G == 1) { run_lane(p); ran = true; }
    DISPATCH
    if (!ran) return 4;
    for (int k = 0; k < n; k++)
        printf("%d %d %d %d %d %d\n", out[k * 6], out[k * 6 + 1], out[k * 6 + 2], out[k * 6 + 3],
               out[k * 6 + 4], out[k * 6 + 5]);
    return 0;
}
"""

PARAM_ORDER = ("a", "b", "o_del", "e_del", "o_ins", "e_ins", "w", "end_bonus", "zdrop")
DEFAULTS = dict(a=1, b=4, o_del=6, e_del=1, o_ins=6, e_ins=1, w=100, end_bonus=5, zdrop=100)
ALT = dict(a=2, b=5, o_del=5, e_del=2, o_ins=7, e_ins=1, w=30, end_bonus=0, zdrop=50)


def test_nvcc_check_list_matches_launcher() -> None:
    """The .cu's explicit instantiations are exactly the launcher's configurations."""
    text = CU_SOURCE.read_text()
    block = text[text.index("#ifdef WARPDP_NVCC_CHECK"):]
    listed = set(re.findall(r"extend_kernel<(\d+), (\d+), (true|false)>", block))
    wanted = {(str(c.lanes), str(c.cols), "true" if c.shared else "false") for c in gpu_module.KERNEL_CONFIGS}
    assert listed == wanted


def test_chunks_cover_all_pairs() -> None:
    qo = np.array([0, 5, 5, 9, 20, 21], dtype=np.int64)
    to = np.array([0, 3, 10, 10, 11, 30], dtype=np.int64)
    for pairs_per, size in ((1, 10**9), (2, 10**9), (10, 9), (10, 1)):
        chunks = gpu_module.split_chunks(qo, to, pairs_per, size)
        assert chunks[0][0] == 0 and chunks[-1][1] == 5
        assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
        assert all(0 < stop - start <= pairs_per for start, stop in chunks)


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ not found: the GPU kernel cannot be emulated here")
    directory = tmp_path_factory.mktemp("seedext_emulation")
    dispatch = "\n    ".join(
        f"if (!ran && G == {c.lanes} && C == {c.cols} && shared == {int(c.shared)}) "
        f"{{ run<{c.lanes}, {c.cols}, {'true' if c.shared else 'false'}>(p, n_sub); ran = true; }}"
        for c in gpu_module.KERNEL_CONFIGS)
    source = HARNESS.replace("DISPATCH", dispatch)
    (directory / "harness.cpp").write_text(source)
    binary = directory / "harness"
    state = "2 * ((q) + 2) + ((q) + 3) / 4 + 1"
    assert gpu_module.state_ints(100) == 2 * 102 + 103 // 4 + 1
    result = subprocess.run([compiler, "-std=c++17", "-O1", WARP_EMULATION_INCLUDE, f'-DSEEDEXT_CU="{CU_SOURCE}"',
                             f"-DSTATE_INTS(q)=({state})", str(directory / "harness.cpp"), "-o", str(binary)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return binary


def emulate(binary: Path, pairs: warpdp.SeedExtPairs, params: dict, config, tmp_path: Path,
            subwarps: int = 2) -> np.ndarray:
    path = tmp_path / "input.bin"
    with open(path, "wb") as f:
        f.write(struct.pack("9i", *[params[k] for k in PARAM_ORDER]))
        for array, dtype in ((pairs.query, np.uint8), (pairs.target, np.uint8), (pairs.query_offsets, np.int64),
                             (pairs.target_offsets, np.int64), (pairs.h0, np.int32)):
            data = np.ascontiguousarray(array, dtype=dtype)
            f.write(struct.pack("q", len(data)))
            f.write(data.tobytes())
    result = subprocess.run([str(binary), str(path), str(config.lanes), str(config.cols), str(int(config.shared)),
                             str(subwarps)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return np.array(result.stdout.split(), dtype=np.int32).reshape(-1, 6)


def assert_config_matches(binary, pairs, params, config, tmp_path) -> None:
    want = warpdp.seed_extend(pairs, backend="cpu", **params).table
    got = emulate(binary, pairs, params, config, tmp_path)
    bad = np.flatnonzero((got != want).any(axis=1))
    assert len(bad) == 0, f"{config.name}: pair {bad[0]} got {got[bad[0]]}, want {want[bad[0]]}"


@pytest.mark.parametrize("config", ALL_KERNELS, ids=lambda c: c.name.split("::")[1])
def test_reference_pairs(harness, config, tmp_path) -> None:
    pairs = warpdp.read_seedext_tsv(shared_file("seedext", "bwamem-like-500.tsv"))
    if not FULL:
        # Fewer pairs for the wide subwarps (more threads to schedule per pair).
        count = {1: 64, 4: 10, 8: 8, 16: 5}[config.lanes]
        pairs = pairs.select(0, count)
    for params in (DEFAULTS, ALT):
        assert_config_matches(harness, pairs, params, config, tmp_path)


def random_items(rng: np.random.Generator, n: int) -> list[tuple[bytes, bytes, int]]:
    alphabet = np.frombuffer(b"ACGTNacgt-", dtype=np.uint8)
    items = []
    for _ in range(n):
        tlen, qlen = int(rng.integers(0, 70)), int(rng.integers(0, 50))
        target = rng.choice(alphabet[:5], tlen)
        if rng.random() < 0.7 and tlen:
            query = np.resize(target, qlen).copy()
            flips = rng.random(qlen) < rng.choice([0.0, 0.05, 0.2])
            query[flips] = rng.choice(alphabet, int(flips.sum()))
        else:
            query = rng.choice(alphabet, qlen)
        items.append((query.tobytes(), target.tobytes(), int(rng.choice([0, 1, 5, 19, 40, 120, 40000]))))
    return items


@pytest.mark.parametrize("config", [LANE, gpu_module.BINS[0], gpu_module.BINS[3]],
                         ids=lambda c: c.name.split("::")[1])
def test_random_pairs_and_parameters(harness, config, tmp_path) -> None:
    """Empty sequences, N, tiny bands, z-drop, h0 0 and large: the small configurations take
    such queries in several tiles per row; the lane kernel gets the pairs it is given."""
    rng = np.random.default_rng(5)
    for trial in range(6 if not FULL else 40):
        params = dict(a=int(rng.choice([0, 1, 2, 5, 15])), b=int(rng.choice([0, 1, 4, 9])),
                      o_del=int(rng.choice([0, 1, 6, 20])), e_del=int(rng.choice([1, 2, 7])),
                      o_ins=int(rng.choice([0, 1, 6, 20])), e_ins=int(rng.choice([1, 3, 5])),
                      w=int(rng.choice([0, 1, 2, 5, 30, 2**31 - 1])), end_bonus=int(rng.choice([0, 5, 50])),
                      zdrop=int(rng.choice([0, 1, 5, 20, 100])))
        items = random_items(rng, 8)
        if config is LANE:  # the launcher sends it only pairs whose scores fit its 14-bit fields (and a <= 15)
            items = [item for item in items
                     if item[2] + params["a"] * len(item[0]) < 1 << gpu_module.LANE_SCORE_BITS]
        assert_config_matches(harness, warpdp.pack_seed_pairs(items), params, config, tmp_path)


def indel_items(rng: np.random.Generator, n: int) -> list[tuple[bytes, bytes, int]]:
    """Queries with long insertions and deletions, so that insertion runs (F) cross tile
    boundaries and rows need several tiles."""
    acgt = np.frombuffer(b"ACGT", dtype=np.uint8)
    items = []
    for _ in range(n):
        target = acgt[rng.integers(0, 4, int(rng.integers(120, 220)))]
        parts, pos = [], 0
        while pos < len(target) - 20:
            step = int(rng.integers(10, 40))
            parts.append(target[pos:pos + step])
            pos += step
            if rng.random() < 0.5:
                parts.append(acgt[rng.integers(0, 4, int(rng.integers(5, 40)))])  # insertion
            else:
                pos += int(rng.integers(1, 15))  # deletion
        query = np.concatenate(parts)[:160]
        items.append((query.tobytes(), target.tobytes(), int(rng.choice([30, 60, 150]))))
    # An insertion longer than two tiles of the narrowest configuration, paid for by h0.
    target = acgt[rng.integers(0, 4, 200)]
    query = np.concatenate([target[:30], acgt[rng.integers(0, 4, 90)], target[30:100]])
    items.append((query.tobytes(), target.tobytes(), 150))
    return items


@pytest.mark.parametrize("config", [LANE, gpu_module.BINS[0], gpu_module.BINS[2]],
                         ids=lambda c: c.name.split("::")[1])
def test_insertions_across_tiles(harness, config, tmp_path) -> None:
    rng = np.random.default_rng(8)
    pairs = warpdp.pack_seed_pairs(indel_items(rng, 6))
    for params in (DEFAULTS, dict(DEFAULTS, o_ins=0, e_ins=1, zdrop=0, w=2**31 - 1)):
        assert_config_matches(harness, pairs, params, config, tmp_path)


class _NoDevice:
    """What _ChunkPlan asks of the runner, without a GPU."""

    def resident_blocks(self, config, shared_bytes: int) -> int:
        return 1000


def test_plan_sends_short_queries_to_the_lane_kernel() -> None:
    """Lane bins take exactly the pairs within its limits, in query-length order; every pair
    is in exactly one launch."""
    from warpdp.plugin.seedext import SeedExtParams

    rng = np.random.default_rng(12)
    acgt = np.frombuffer(b"ACGT", dtype=np.uint8)
    items = [(acgt[rng.integers(0, 4, int(q))].tobytes(), acgt[rng.integers(0, 4, int(t))].tobytes(), int(h))
             for q, t, h in zip(rng.integers(0, 400, 3000), rng.integers(0, 500, 3000),
                                rng.choice([0, 40, 16000, 16200], 3000))]
    pairs = warpdp.pack_seed_pairs(items)
    for params in (SeedExtParams(), SeedExtParams(a=15, w=20), SeedExtParams(a=16, w=20)):
        plan = gpu_module._ChunkPlan(pairs, params, 0, pairs.n_pairs, _NoDevice())
        assert sorted(plan.order.tolist()) == list(range(pairs.n_pairs))
        qlen = np.diff(pairs.query_offsets)
        fits = (qlen <= gpu_module.LANE_MAX_QUERY) & (pairs.h0 + params.a * qlen < 1 << gpu_module.LANE_SCORE_BITS) \
            & (params.a <= gpu_module.LANE_MAX_MATCH)
        seen = 0
        for launch in plan.launches:
            chosen = plan.order[launch.first:launch.first + launch.count]
            seen += launch.count
            assert fits[chosen].all() if launch.config is None else not fits[chosen].any()
            assert launch.qmax == qlen[chosen].max()
            if launch.config is None:
                assert np.all(np.diff(qlen[chosen]) >= 0)
                assert launch.shared_bytes == gpu_module.lane_shared_bytes(launch.qmax)
        assert seen == pairs.n_pairs
