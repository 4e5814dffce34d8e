"""The GPU wide-window X-drop kernel's algorithm (emulated in NumPy) against the CPU backend.

tests/references/xdrop_wide_emulation.py restates ``extend_wide_kernel<W, T>`` lane for lane; here it must
give the CPU backend's scores, coordinates and cell counts exactly, in both reporting modes, so
that logic errors show up without a GPU. Also CPU-only checks of the launcher's side: the
explicit instantiations in xdrop.cu match the configurations xdrop.py launches, and the rule
that sends items to the wide kernel.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from helpers.xdrop import items_of, noisy_copies, random_pairs
from references.xdrop_wide_emulation import WideBlock, flanks, xdrop_wide
from warpdp.kernels import xdrop as gpu_xdrop
from warpdp.plugin.xdrop import XdropPairs, pack_xdrop_pairs, xdrop


def check(pairs: XdropPairs, k: int, report: str, w: int, t: int, block: WideBlock | None = None, **scores) -> None:
    cpu = xdrop(pairs, k=k, report=report, backend="cpu", **scores)
    rows, cells = xdrop_wide(pairs, k=k, report=report, w=w, t=t, block=block, **scores)
    np.testing.assert_array_equal(rows, cpu.as_array())
    np.testing.assert_array_equal(cells, cpu.cells)


SCORES = [dict(match=1, mismatch=-1, gap=-1, x=20), dict(match=1, mismatch=-1, gap=-1, x=1000),
          dict(match=2, mismatch=-3, gap=-2, x=0), dict(match=3, mismatch=-6, gap=-5, x=40),
          dict(match=1, mismatch=-4, gap=-1, x=7), dict(match=5, mismatch=-1, gap=-3, x=300),
          dict(match=1, mismatch=-5, gap=-1, x=500)]  # the first row's edge cells matter (mismatch < 2 gap)


@pytest.mark.parametrize("report", ["longest", "best"])
@pytest.mark.parametrize("scores", SCORES, ids=lambda s: "{match}/{mismatch}/{gap}/x{x}".format(**s))
def test_emulated_wide_kernel_matches_cpu(report: str, scores: dict) -> None:
    # Frame 2 warps x 32 lanes x 4 columns = 256: flanks up to 250 reach its end, windows cross
    # lanes and warps, warps get passed and some lie past m + 1.
    pairs = random_pairs(21, 36, max_flank=250)
    check(pairs, 5, report, 2, 4, **scores)


@pytest.mark.parametrize("report", ["longest", "best"])
@pytest.mark.parametrize(("w", "t"), [(1, 8), (3, 4), (2, 16)])
def test_emulated_wide_kernel_other_shapes(report: str, w: int, t: int) -> None:
    pairs = random_pairs(22, 12, max_flank=min(32 * w * t - 2, 400))
    check(pairs, 5, report, w, t, match=1, mismatch=-1, gap=-1, x=60)


def test_emulated_wide_kernel_full_frame_and_n_runs() -> None:
    # A V flank of exactly frame - 2 bases (the largest the launcher sends), poly-N flanks
    # (N matches N), and an unrelated H much longer than V.
    rng = np.random.default_rng(5)
    v = "".join(rng.choice(list("ACGT"), 254 + 3))
    pairs = pack_xdrop_pairs([
        (v, 0, v, 0),
        ("N" * 300, 100, "N" * 200, 60),
        ("".join(rng.choice(list("ACGT"), 900)), 3, v, 3),
        (v.lower(), 0, v, 0),
    ])
    for report in ("longest", "best"):
        for x in (0, 3, 50, 10_000):
            check(pairs, 3, report, 2, 4, match=1, mismatch=-1, gap=-1, x=x)


def test_emulated_wide_kernel_benchmark_like_pairs() -> None:
    # The benchmark's shape at small scale, in the launcher's smallest frame: X small, X large
    # enough that nothing is dropped, both modes.
    pairs = noisy_copies(4, 3, 1000)
    _, w, t, _ = gpu_xdrop.WIDE_CONFIGS[0]
    for x in (30, 5000):
        check(pairs, 17, "longest", w, t, match=1, mismatch=-1, gap=-1, x=x)
    check(pairs, 17, "best", w, t, match=1, mismatch=-1, gap=-1, x=200)


@pytest.mark.parametrize(("seed", "x", "mismatch"), [(1, 10, -1), (5, 5, -1), (19, 3, -1), (68, 8, -2)])
def test_emulated_wide_kernel_window_leaves_a_warp_and_comes_back(seed: int, x: int, mismatch: int) -> None:
    # The window's right end drops below a warp's first column and comes back: that warp
    # reloads its H bases instead of shifting stale ones.
    pairs = random_pairs(seed, 12, max_flank=250)
    block = WideBlock(2, 4)
    check(pairs, 5, "longest", 2, 4, block=block, match=1, mismatch=mismatch, gap=-1, x=x)
    assert block.reloads > 0
    check(pairs, 5, "best", 2, 4, match=1, mismatch=mismatch, gap=-1, x=x)


def test_emulation_reads_nothing_outside_the_windows() -> None:
    # The scratch starts as garbage and stale registers stay: an item run after another in the
    # same block gives the same answer as on a fresh block.
    rng = np.random.default_rng(8)
    block = WideBlock(2, 4)
    v = rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8), 200)
    h = v.copy()
    h[::9] = ord("A")
    scores = dict(match=1, mismatch=-1, gap=-1, x=25, best_mode=False)
    first = block.run(*flanks(h, v, 50, 50, 5, True), **scores)
    block.run(*flanks(v, v, 10, 10, 5, True), **scores)
    assert block.run(*flanks(h, v, 50, 50, 5, True), **scores) == first


def test_nvcc_check_list_matches_launcher() -> None:
    """xdrop.cu's explicit instantiations are exactly the kernels xdrop.py compiles."""
    text = Path(gpu_xdrop.__file__).with_name("xdrop.cu").read_text()
    block = text[text.index("#ifdef WARPDP_NVCC_CHECK"):]
    listed = {f"warpdp_xdrop::{name}" for name in re.findall(r"warpdp_xdrop::(extend\w*<[^>]*>)\(", block)}
    assert listed == set(gpu_xdrop.all_kernel_names())
    for frame, w, t, blocks in gpu_xdrop.WIDE_CONFIGS:
        assert frame == 32 * w * t and blocks >= 1


def test_wide_selection_rule(monkeypatch) -> None:
    for name in (gpu_xdrop.WIDE_ENV, gpu_xdrop.WIDE_MIN_WINDOW_ENV, gpu_xdrop.WIDE_CONFIGS_ENV):
        monkeypatch.delenv(name, raising=False)
    default = gpu_xdrop.Scores(k=17, match=1, mismatch=-1, gap=-1, x=5000, best=False)
    # The shipped threshold: X = 5000 on long flanks goes wide, X = 1000 (window ~667) does not.
    assert gpu_xdrop.wide_frames(np.array([3000]), np.array([3000]), default).tolist() == \
        [int(np.searchsorted([c[0] for c in gpu_xdrop.WIDE_CONFIGS], 3002))]
    x1000 = gpu_xdrop.Scores(k=17, match=1, mismatch=-1, gap=-1, x=1000, best=False)
    assert gpu_xdrop.wide_frames(np.array([3000]), np.array([3000]), x1000).tolist() == [-1]
    # The rest checks the rule's shape with a low threshold.
    monkeypatch.setattr(gpu_xdrop, "WIDE_MIN_WINDOW", 256)
    frames = [c[0] for c in gpu_xdrop.WIDE_CONFIGS]
    assert frames == sorted(frames) and len(frames) >= 2
    scores = gpu_xdrop.Scores(k=17, match=1, mismatch=-1, gap=-1, x=1000, best=False)
    m = np.array([0, 100, frames[0] - 2, frames[0] - 1, frames[-1] - 2, frames[-1] - 1, 3000], dtype=np.int64)
    n = np.array([3000, 3000, 3000, 3000, 3000, 3000, 5], dtype=np.int64)
    # Per item the row of the smallest frame holding columns 0..m+1, when the window is expected
    # wide (not for m = 100, nor for n = 5), never past the largest frame; -1: extend_kernel.
    assert gpu_xdrop.wide_frames(m, n, scores).tolist() == [-1, -1, 0, 1, len(frames) - 1, -1, -1]
    narrow_x = gpu_xdrop.Scores(k=17, match=1, mismatch=-1, gap=-1, x=10, best=False)
    assert (gpu_xdrop.wide_frames(m, n, narrow_x) == -1).all()
    # match 1 / gap -1: about 2X/3 columns; X = 400 is just wide enough for 256.
    assert gpu_xdrop.expected_window(1, -1, 1000) == 667
    x400 = gpu_xdrop.Scores(k=17, match=1, mismatch=-1, gap=-1, x=400, best=False)
    assert gpu_xdrop.wide_frames(m, n, x400)[2] == 0

    monkeypatch.setenv(gpu_xdrop.WIDE_MIN_WINDOW_ENV, "50")
    assert gpu_xdrop.wide_frames(m, n, scores).tolist() == [-1, 0, 0, 1, len(frames) - 1, -1, -1]
    monkeypatch.delenv(gpu_xdrop.WIDE_MIN_WINDOW_ENV)
    monkeypatch.setenv(gpu_xdrop.WIDE_ENV, "1")  # every item that fits a frame
    forced = gpu_xdrop.wide_frames(m, n, narrow_x)
    assert forced.tolist() == [0, 0, 0, 1, len(frames) - 1, -1, int(np.searchsorted(frames, 3002))]
    monkeypatch.setenv(gpu_xdrop.WIDE_ENV, "0")
    assert (gpu_xdrop.wide_frames(m, n, scores) == -1).all()
    monkeypatch.setenv(gpu_xdrop.WIDE_ENV, "sometimes")
    with pytest.raises(ValueError, match=gpu_xdrop.WIDE_ENV):
        gpu_xdrop.wide_frames(m, n, scores)
    # Items needing int64 cells, or an H flank of 2^30, never go wide.
    monkeypatch.setenv(gpu_xdrop.WIDE_ENV, "1")
    big = gpu_xdrop.Scores(k=17, match=2**30, mismatch=-1, gap=-1, x=1000, best=False)
    assert (gpu_xdrop.wide_frames(m, n, big) == -1).all()
    assert gpu_xdrop.wide_frames(np.array([10]), np.array([1 << 30]), scores).tolist() == [-1]


def test_wide_configs_override(monkeypatch) -> None:
    monkeypatch.setenv(gpu_xdrop.WIDE_CONFIGS_ENV, "8:16:2, 2:4:1")
    assert gpu_xdrop.wide_configs() == ((256, 2, 4, 1), (4096, 8, 16, 2))
    assert gpu_xdrop.all_kernel_names(gpu_xdrop.wide_configs())[-2:] == [
        "warpdp_xdrop::extend_wide_kernel<2, 4, 1>", "warpdp_xdrop::extend_wide_kernel<8, 16, 2>"]
    monkeypatch.setenv(gpu_xdrop.WIDE_ENV, "1")
    assert gpu_xdrop.wide_frames(np.array([254, 255]), np.array([9, 9]),
                                 gpu_xdrop.Scores(17, 1, -1, -1, 5, False)).tolist() == [0, 1]
    for bad in ("8:6:2", "8:8", "40:4:1", "2:8:1,4:4:1"):
        monkeypatch.setenv(gpu_xdrop.WIDE_CONFIGS_ENV, bad)
        with pytest.raises(ValueError, match=gpu_xdrop.WIDE_CONFIGS_ENV):
            gpu_xdrop.wide_configs()


def test_chunk_plan_bins_wide_and_narrow_items(monkeypatch) -> None:
    # Host side only: items go to the launches the rule says, each launch's items are those of
    # one kernel and frame, and every item is in exactly one launch.
    monkeypatch.delenv(gpu_xdrop.WIDE_ENV, raising=False)
    monkeypatch.delenv(gpu_xdrop.WIDE_MIN_WINDOW_ENV, raising=False)
    monkeypatch.setattr(gpu_xdrop, "WIDE_MIN_WINDOW", 256)  # so that some items of these short pairs go wide
    pairs = random_pairs(30, 40, max_flank=5000)
    scores = gpu_xdrop.Scores(k=5, match=1, mismatch=-1, gap=-1, x=2000, best=False)
    wide = [(config, 264) for config in gpu_xdrop.WIDE_CONFIGS]
    plan = gpu_xdrop._ChunkPlan(pairs, 0, pairs.n_pairs, scores, resident_warps=10_000, wide=wide)
    n = pairs.n_pairs
    m_items, n_items = items_of(pairs, 5)
    expected = gpu_xdrop.wide_frames(m_items, n_items, scores)
    assert (expected >= 0).any() and (expected < 0).any()
    assert sorted(plan.order.tolist()) == list(range(2 * n))
    for launch in plan.launches:
        items = plan.order[launch.first:launch.first + launch.count]
        if isinstance(launch.kernel, tuple):
            row = launch.kernel[1]
            frame, w, _, _ = gpu_xdrop.WIDE_CONFIGS[row]
            assert (expected[items] == row).all() and launch.stride == frame and launch.threads == 32 * w
            assert (m_items[items] + 2 <= frame).all() and 1 <= launch.grid <= min(264, launch.count)
        else:
            assert (expected[items] == -1).all() and launch.threads == gpu_xdrop.THREADS_PER_BLOCK


def test_shared_kernel_selection_rule(monkeypatch) -> None:
    for name in (gpu_xdrop.SHARED_ENV, gpu_xdrop.SHARED_MIN_WINDOW_ENV):
        monkeypatch.delenv(name, raising=False)
    # int16 cells: values up to match * (min(m, n) + 1), plus x, match and the larger penalty,
    # must stay within 16000.
    m, n = np.array([1000, 1000, 5000]), np.array([3000, 999, 1000])
    assert gpu_xdrop.fits_int16(m, n, 2, -3, -1, 16000 - 2 * 1001 - 2 - 3).tolist() == [True, True, True]
    assert gpu_xdrop.fits_int16(m, n, 2, -3, -1, 16000 - 2 * 1001 - 2 - 3 + 1).tolist() == [False, True, False]
    assert not gpu_xdrop.fits_int16(m, n, 1, -20000, -1, 0).any()

    bins = gpu_xdrop.SHARED_FLANK_BINS
    m = np.array([0, 200, int(bins[0]), int(bins[0]) + 1, 3000, int(bins[-1]), int(bins[-1]) + 1, 3000], dtype=np.int64)
    n = np.array([3000, 3000, 3000, 3000, 3000, 3000, 3000, 1 << 30], dtype=np.int64)
    x1000 = gpu_xdrop.Scores(k=17, match=1, mismatch=-1, gap=-1, x=1000, best=False)
    # By V flank, never past the last bin nor with an H flank of 2^30; m = 0 (window of one
    # column) stays on extend_kernel under the default rule.
    expected = [-1, 0, 0, 1, int(np.searchsorted(bins, 3000)), len(bins) - 1, -1, -1]
    assert gpu_xdrop.shared_items(m, n, x1000).tolist() == expected
    # X = 100 (window ~67) stays on extend_kernel; X = 300 (~201) goes.
    x100 = gpu_xdrop.Scores(k=17, match=1, mismatch=-1, gap=-1, x=100, best=False)
    assert (gpu_xdrop.shared_items(m, n, x100) == -1).all()
    x300 = gpu_xdrop.Scores(k=17, match=1, mismatch=-1, gap=-1, x=300, best=False)
    assert gpu_xdrop.shared_items(m, n, x300).tolist() == expected
    monkeypatch.setenv(gpu_xdrop.SHARED_MIN_WINDOW_ENV, "50")
    assert gpu_xdrop.shared_items(m, n, x100).tolist() == expected
    monkeypatch.delenv(gpu_xdrop.SHARED_MIN_WINDOW_ENV)
    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, "1")  # every item that fits
    assert gpu_xdrop.shared_items(m, n, x100).tolist() == [0, *expected[1:]]
    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, "0")
    assert (gpu_xdrop.shared_items(m, n, x1000) == -1).all()
    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, "often")
    with pytest.raises(ValueError, match=gpu_xdrop.SHARED_ENV):
        gpu_xdrop.shared_items(m, n, x1000)


def test_chunk_plan_bins_shared_items(monkeypatch) -> None:
    # Host side only: shared-kernel items get launches of their own, one per flank bin, each
    # with shared memory for its longest flank; the rest keep their kernels.
    for name in (gpu_xdrop.SHARED_ENV, gpu_xdrop.SHARED_MIN_WINDOW_ENV, gpu_xdrop.WIDE_ENV):
        monkeypatch.delenv(name, raising=False)
    pairs = random_pairs(31, 60, max_flank=14000)
    scores = gpu_xdrop.Scores(k=5, match=1, mismatch=-1, gap=-1, x=2000, best=False)
    wide = [(config, 264) for config in gpu_xdrop.WIDE_CONFIGS]
    plan = gpu_xdrop._ChunkPlan(pairs, 0, pairs.n_pairs, scores, resident_warps=10_000, wide=wide,
                                shared_resident=lambda size: 1000)
    n = pairs.n_pairs
    m_items, n_items = items_of(pairs, 5)
    expected = gpu_xdrop.shared_items(m_items, n_items, scores)
    assert (expected >= 0).any() and (expected < 0).any()
    assert sorted(plan.order.tolist()) == list(range(2 * n))
    shared_launches = [launch for launch in plan.launches if launch.kernel == "shared"]
    assert len(shared_launches) == len(set(expected[expected >= 0].tolist()))
    for launch in plan.launches:
        items = plan.order[launch.first:launch.first + launch.count]
        if launch.kernel == "shared":
            assert len(set(expected[items].tolist())) == 1 and (expected[items] >= 0).all()
            assert launch.stride % 8 == 0 and launch.stride >= m_items[items].max() + 16
            assert launch.shared_bytes == gpu_xdrop.shared_bytes(launch.stride) == 6 * (launch.stride + 8)
            assert launch.threads == 32 and launch.grid == min(1000, launch.count)
        else:
            assert (expected[items] == -1).all() and launch.shared_bytes == 0
