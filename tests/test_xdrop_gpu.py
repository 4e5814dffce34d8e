"""X-drop GPU backend: SeqAn's outputs and the CPU backend's answers, exactly. Needs a CUDA device."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.data import shared_file
from warpdp.plugin.backend import gpu_status

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_status("xdrop")[0], reason=f"GPU backend not usable: {gpu_status('xdrop')[1]}"),
]

from warpdp.plugin.xdrop import XdropPairs, xdrop  # noqa: E402
from warpdp.plugin.xdrop_io import read_logan_text, read_xdrop_results  # noqa: E402
from helpers.xdrop import items_of, noisy_copies, random_pairs as mixed_pairs  # noqa: E402

CASES = [("logan-example", 5), ("logan-example", 21), ("logan-example", 100),
         ("synthetic-300", 10), ("synthetic-300", 50), ("synthetic-300", 200)]


@pytest.mark.parametrize("shared", ["auto", "1"])
@pytest.mark.parametrize(("name", "x"), CASES)
def test_gpu_reproduces_seqan_exactly(monkeypatch, name: str, x: int, shared: str) -> None:
    import warpdp.kernels.xdrop as gpu_xdrop

    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, shared)  # "1": every item on extend_shared_kernel
    pairs = read_logan_text(shared_file("xdrop", f"{name}.tsv"), k=17)
    expected = read_xdrop_results(shared_file("xdrop", f"{name}.x{x}.seqan.out"))
    gpu = xdrop(pairs, k=17, x=x, backend="gpu")
    np.testing.assert_array_equal(gpu.as_array(), expected)
    np.testing.assert_array_equal(gpu.cells, xdrop(pairs, k=17, x=x, backend="cpu").cells)


def random_pairs(seed: int, count: int, max_flank: int = 300) -> tuple[XdropPairs, int]:
    """The emulation tests' mixed pairs (identical, unrelated, mutated with indels, lower case,
    N-rich, seeds at the ends), with their seed length."""
    return mixed_pairs(seed, count, max_flank, k=5), 5


@pytest.mark.parametrize("report", ["longest", "best"])
@pytest.mark.parametrize("scores", [dict(match=1, mismatch=-1, gap=-1, x=20), dict(match=2, mismatch=-3, gap=-2, x=0),
                                    dict(match=3, mismatch=-6, gap=-5, x=40),
                                    dict(match=2**30, mismatch=-(2**30), gap=-(2**29), x=2**40)])
def test_gpu_matches_cpu_on_random_pairs(report, scores) -> None:
    # The last scores need int64 cells; the others use int32.
    pairs, k = random_pairs(11, 400)
    cpu = xdrop(pairs, k=k, report=report, backend="cpu", **scores)
    gpu = xdrop(pairs, k=k, report=report, backend="gpu", **scores)
    np.testing.assert_array_equal(gpu.as_array(), cpu.as_array())
    np.testing.assert_array_equal(gpu.cells, cpu.cells)


def test_gpu_chunks_devices_and_long_flanks(monkeypatch) -> None:
    import warpdp.kernels.xdrop as gpu_xdrop

    pairs, k = random_pairs(12, 300, max_flank=3000)
    long_v = np.random.default_rng(3).choice(np.frombuffer(b"ACGT", dtype=np.uint8), 600_000)
    long_pairs = XdropPairs.from_arrays(h_bases=np.concatenate([pairs.h_bases, long_v]),
                                        h_offsets=np.append(pairs.h_offsets, pairs.h_offsets[-1] + len(long_v)),
                                        v_bases=np.concatenate([pairs.v_bases, long_v]),
                                        v_offsets=np.append(pairs.v_offsets, pairs.v_offsets[-1] + len(long_v)),
                                        h_pos=np.append(pairs.h_pos, 300_000), v_pos=np.append(pairs.v_pos, 300_000))
    cpu = xdrop(long_pairs, k=k, x=30, backend="cpu").as_array()
    monkeypatch.setattr(gpu_xdrop, "_CHUNK_PAIRS", 37)  # several chunks, both slots in flight
    gpu = xdrop(long_pairs, k=k, x=30, backend="gpu", devices=[0, 0]).as_array()
    np.testing.assert_array_equal(gpu, cpu)
    assert tuple(gpu[-1]) == (600_000, 0, 600_000, 0, 600_000)


def test_gpu_rejects_bad_bases() -> None:
    pairs = XdropPairs.from_arrays(h_bases=b"ACGTACGTACGTAC-T", h_offsets=[0, 8, 16], v_bases=b"ACGTACGT" * 2,
                                   v_offsets=[0, 8, 16], h_pos=[0, 2], v_pos=[0, 2])
    with pytest.raises(ValueError, match=r"h_bases: pair 1 has '-' at position 6"):
        xdrop(pairs, k=3, x=5, backend="gpu")


# The wide-window kernel (extend_wide_kernel: one block per item, cells in registers), which
# xdrop.py picks for large X. WARPDP_XDROP_WIDE=1 sends every item that fits a frame to it.
WIDE_SCORES = [dict(match=1, mismatch=-1, gap=-1, x=1000), dict(match=1, mismatch=-1, gap=-1, x=5000),
               dict(match=1, mismatch=-1, gap=-1, x=20), dict(match=2, mismatch=-3, gap=-2, x=0),
               dict(match=3, mismatch=-6, gap=-5, x=40), dict(match=5, mismatch=-1, gap=-3, x=300),
               dict(match=1, mismatch=-5, gap=-1, x=500)]  # the first row's edge cells matter


def assert_same_as_cpu(pairs: XdropPairs, k: int, report: str, **scores) -> None:
    cpu = xdrop(pairs, k=k, report=report, backend="cpu", **scores)
    gpu = xdrop(pairs, k=k, report=report, backend="gpu", **scores)
    np.testing.assert_array_equal(gpu.as_array(), cpu.as_array())
    np.testing.assert_array_equal(gpu.cells, cpu.cells)


@pytest.mark.parametrize("report", ["longest", "best"])
@pytest.mark.parametrize("scores", WIDE_SCORES, ids=lambda s: "{match}/{mismatch}/{gap}/x{x}".format(**s))
def test_gpu_wide_kernel_matches_cpu(monkeypatch, report, scores) -> None:
    import warpdp.kernels.xdrop as gpu_xdrop

    monkeypatch.setenv(gpu_xdrop.WIDE_ENV, "1")
    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, "0")
    pairs, k = random_pairs(13, 240, max_flank=4100)  # flanks up to 4091 bases: every frame
    frames = gpu_xdrop.wide_frames(*items_of(pairs, k), gpu_xdrop.Scores(k, best=report == "best", **scores))
    assert set(frames.tolist()) == set(range(len(gpu_xdrop.WIDE_CONFIGS)))
    assert_same_as_cpu(pairs, k, report, **scores)


@pytest.mark.parametrize("report", ["longest", "best"])
def test_gpu_wide_kernel_small_frames(monkeypatch, report) -> None:
    # Frames of 128, 256 and 768 columns with 1, 2 and 3 warps: windows cross many lanes and
    # warps, warps get passed, items longer than 766 stay on extend_kernel in the same call.
    import warpdp.kernels.xdrop as gpu_xdrop

    monkeypatch.setenv(gpu_xdrop.WIDE_ENV, "1")
    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, "0")
    monkeypatch.setenv(gpu_xdrop.WIDE_CONFIGS_ENV, "1:4:1,2:4:3,3:8:2")
    pairs, k = random_pairs(14, 300, max_flank=900)
    for scores in WIDE_SCORES[:4]:
        assert_same_as_cpu(pairs, k, report, **scores)


def test_gpu_mixes_wide_and_narrow_items(monkeypatch) -> None:
    # The default rule: long flanks go wide, short ones (and ones past the largest frame) stay.
    import warpdp.kernels.xdrop as gpu_xdrop

    for name in (gpu_xdrop.WIDE_ENV, gpu_xdrop.WIDE_MIN_WINDOW_ENV, gpu_xdrop.WIDE_CONFIGS_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, "0")
    pairs, k = random_pairs(15, 300, max_flank=6000)
    for report in ("longest", "best"):
        scores = dict(match=1, mismatch=-1, gap=-1, x=5000)
        frames = gpu_xdrop.wide_frames(*items_of(pairs, k), gpu_xdrop.Scores(k, best=report == "best", **scores))
        assert (frames >= 0).any() and (frames < 0).any()
        assert_same_as_cpu(pairs, k, report, **scores)


@pytest.mark.parametrize("shared", ["auto", "0"])
@pytest.mark.parametrize("x", [1000, 5000])
def test_gpu_wide_kernels_on_benchmark_like_pairs(monkeypatch, x, shared) -> None:
    # benchmarks/xdrop.py's shape (H = V with 15% errors, a 17-mer seed in the middle), default
    # rule: the shared-memory kernel, or with it off the register one.
    import warpdp.kernels.xdrop as gpu_xdrop

    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, shared)
    pairs = noisy_copies(16, 40, 5000)
    for report in ("longest", "best"):
        assert_same_as_cpu(pairs, 17, report, match=1, mismatch=-1, gap=-1, x=x)


# The shared-memory kernel (extend_shared_kernel: a warp per item, int16 cells in shared
# memory), which xdrop.py picks for large X when the values fit int16. WARPDP_XDROP_SHARED=1
# sends every item that fits to it; the others run on the other kernels in the same call.
@pytest.mark.parametrize("report", ["longest", "best"])
@pytest.mark.parametrize("scores", WIDE_SCORES, ids=lambda s: "{match}/{mismatch}/{gap}/x{x}".format(**s))
def test_gpu_shared_kernel_matches_cpu(monkeypatch, report, scores) -> None:
    import warpdp.kernels.xdrop as gpu_xdrop

    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, "1")
    pairs, k = random_pairs(17, 300, max_flank=4200)
    bins = gpu_xdrop.shared_items(*items_of(pairs, k), gpu_xdrop.Scores(k, best=report == "best", **scores))
    assert (bins >= 0).sum() > len(bins) // 2 and len(set(bins.tolist())) >= 4
    assert_same_as_cpu(pairs, k, report, **scores)


@pytest.mark.parametrize("report", ["longest", "best"])
def test_gpu_shared_kernel_at_the_int16_limit(monkeypatch, report) -> None:
    # Scores that take values to the edge of what fits_int16 lets through, and just past it.
    import warpdp.kernels.xdrop as gpu_xdrop

    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, "1")
    pairs = noisy_copies(18, 30, 3000)
    m, n = items_of(pairs, 17)
    for scores in (dict(match=4, mismatch=-9, gap=-7, x=10071), dict(match=1, mismatch=-1, gap=-1, x=14519),
                   dict(match=7, mismatch=-7, gap=-7, x=5633)):
        fits = gpu_xdrop.fits_int16(m, n, **scores)
        assert fits.any() and not fits.all()
        assert_same_as_cpu(pairs, 17, report, **scores)


def test_gpu_shared_kernel_longest_flanks(monkeypatch) -> None:
    # Flanks of ~11,000 bases: the last shared-memory bin (73 KB of shared memory per warp).
    import warpdp.kernels.xdrop as gpu_xdrop

    monkeypatch.setenv(gpu_xdrop.SHARED_ENV, "auto")
    pairs = noisy_copies(19, 3, 22000)
    scores = dict(match=1, mismatch=-1, gap=-1, x=3000)
    bins = gpu_xdrop.shared_items(*items_of(pairs, 17), gpu_xdrop.Scores(17, best=False, **scores))
    assert (bins == len(gpu_xdrop.SHARED_FLANK_BINS) - 1).all()
    for report in ("longest", "best"):
        assert_same_as_cpu(pairs, 17, report, **scores)
