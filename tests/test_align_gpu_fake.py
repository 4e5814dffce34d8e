"""The align GPU launcher's host side on the CPU, over the logging stand-in for CuPy
(tests/fake_cupy.py): the module loads and is checked against the launch struct, each GPU chunk
is one upload, one dp launch (and a traceback launch with a CIGAR) and its copies back, a pair
over the traceback bound goes to the CPU backend, and a cancel check stops between chunks."""
from __future__ import annotations

import numpy as np
import pytest

from fake_cupy import install_fake_cupy
from warpdp.kernels import align as gpu_align
from warpdp.kernels.runtime import module_cache
from warpdp.plugin.align import AlignPairs, AlignParams, AlignResults, align
from warpdp.plugin.cancel import JobCancelled

SIZES = {"align_struct_sizes": [dtype.itemsize for _, dtype in gpu_align.MODULE.structs]}


def _forget() -> None:
    module_cache.clear()
    gpu_align._RUNNERS.clear()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    _forget()
    yield install_fake_cupy(monkeypatch, SIZES)
    _forget()


def _pairs(n: int, seed: int = 0) -> AlignPairs:
    rng = np.random.default_rng(seed)
    acgt = np.array(list("ACGT"))
    return AlignPairs.from_sequences([("".join(rng.choice(acgt, int(rng.integers(1, 120)))),
                                       "".join(rng.choice(acgt, int(rng.integers(1, 120))))) for _ in range(n)])


def test_struct_size_matches_the_source() -> None:
    text = gpu_align.MODULE.source_path.read_text()
    assert f"sizeof(Params) == {gpu_align.PARAMS.itemsize}" in text


def test_nvcc_check_list_matches_the_launcher() -> None:
    text = gpu_align.MODULE.source_path.read_text()
    block = text[text.index("#ifdef WARPDP_NVCC_CHECK"):]
    for name in gpu_align.MODULE.name_expressions:
        assert name.split("::")[1] in block.replace("template __global__ void ", "").replace("(const Params *)", "")


@pytest.mark.parametrize("cigar", [False, True])
def test_chunks_launch_and_a_big_pair_goes_to_the_cpu(fake, monkeypatch, cigar: bool) -> None:
    monkeypatch.setattr(gpu_align, "CHUNK_PAIRS", 25)
    monkeypatch.setattr(gpu_align, "TRACE_CHUNK_BYTES", 300_000)
    items = [(_pairs(1, k).query(0), _pairs(1, k).target(0)) for k in range(60)]
    items[30] = (b"ACGT" * 300, b"ACGA" * 300)  # traceback over the bound
    pairs = AlignPairs.from_sequences(items)
    params = AlignParams(mode="local", cigar=cigar)
    results = AlignResults.empty(pairs.n_pairs)
    found = gpu_align.run(pairs, params, results)
    launches = [entry for entry in fake if entry[0] == "launch"]
    dp = [entry for entry in launches if "dp_kernel" in entry[1]]
    traceback = [entry for entry in launches if "traceback_kernel" in entry[1]]
    chunks = gpu_align.plan_chunks(np.diff(pairs.query_offsets), np.diff(pairs.target_offsets), cigar, False,
                                   25, gpu_align.CHUNK_BYTES, 300_000)
    on_gpu = [c for c in chunks if c.on_gpu]
    assert len(dp) == len(on_gpu) and len(traceback) == (len(on_gpu) if cigar else 0)
    assert all(entry[3] == gpu_align.THREADS_PER_BLOCK for entry in dp)
    assert [entry[2] for entry in dp] == [-(-(c.stop - c.start) // gpu_align.WARPS_PER_BLOCK) for c in on_gpu]
    # the fake computes nothing (zeros); the CPU pair holds the CPU backend's answer
    want = align(pairs.select(30, 31), params, backend="cpu")
    if cigar:
        assert any(not c.on_gpu for c in chunks)
        assert results.columns["score"][30] == want.columns["score"][0]
        ops, counts = found
        assert counts[30] == want.cigar_offsets[1] and counts.sum() == len(ops)
    else:
        assert found is None and all(c.on_gpu for c in chunks)


def test_cancel_stops_between_chunks(fake, monkeypatch) -> None:
    monkeypatch.setattr(gpu_align, "CHUNK_PAIRS", 10)
    checks: list[int] = []
    with pytest.raises(JobCancelled):
        gpu_align.run(_pairs(50), AlignParams(), AlignResults.empty(50),
                      cancelled=lambda: checks.append(1) or len(checks) > 2)
    assert len([entry for entry in fake if entry[0] == "launch" and "dp_kernel" in entry[1]]) == 2
