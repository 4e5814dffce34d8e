"""X-drop GPU backend: SeqAn's outputs and the CPU backend's answers, exactly. Needs a CUDA device."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import shared_file
from warpdp.plugin.backend import gpu_status

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_status("xdrop")[0], reason=f"GPU backend not usable: {gpu_status('xdrop')[1]}"),
]

from warpdp.plugin.xdrop import XdropPairs, pack_xdrop_pairs, xdrop  # noqa: E402
from warpdp.plugin.xdrop_io import read_logan_text, read_xdrop_results  # noqa: E402

CASES = [("logan-example", 5), ("logan-example", 21), ("logan-example", 100),
         ("synthetic-300", 10), ("synthetic-300", 50), ("synthetic-300", 200)]


@pytest.mark.parametrize(("name", "x"), CASES)
def test_gpu_reproduces_seqan_exactly(name: str, x: int) -> None:
    pairs = read_logan_text(shared_file("xdrop", f"{name}.tsv"), k=17)
    expected = read_xdrop_results(shared_file("xdrop", f"{name}.x{x}.seqan.out"))
    gpu = xdrop(pairs, k=17, x=x, backend="gpu")
    np.testing.assert_array_equal(gpu.as_array(), expected)
    np.testing.assert_array_equal(gpu.cells, xdrop(pairs, k=17, x=x, backend="cpu").cells)


def random_pairs(seed: int, count: int, max_flank: int = 300) -> tuple[XdropPairs, int]:
    rng = np.random.default_rng(seed)
    k = 5
    pairs = []
    for i in range(count):
        alphabet = list("ACGTN") if i % 7 == 0 else list("ACGT")
        v = "".join(rng.choice(alphabet, int(rng.integers(k, max_flank))))
        kind = i % 4
        if kind == 0:
            h = v
        elif kind == 1:
            h = "".join(rng.choice(alphabet, int(rng.integers(k, max_flank))))
        else:
            h = "".join(c if rng.random() > 0.1 else str(rng.choice(alphabet)) for c in v)
            h = h.lower() if kind == 3 else h
        pv = int(rng.integers(0, len(v) - k + 1)) if i % 5 else (0 if i % 2 else len(v) - k)
        ph = min(pv, len(h) - k)
        pairs.append((h, ph, v, pv))
    return pack_xdrop_pairs(pairs), k


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
