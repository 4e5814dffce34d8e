"""Several real GPUs: every family spread over all visible devices gives one device's answers
bit for bit (and the CPU backend's: exactly for X-drop, seed extension, align and edit, CIGARs
included, within the float tolerance for Pair-HMM), and a GPU server runs on every device and lists them in ServerInfo.

Skipped where the GPU backend is not usable, or fewer than two GPUs are visible (tests without
a GPU: tests/test_multi_device.py)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import warpdp
from helpers.edit_gpu import random_pairs
from helpers.grpc_server import WAIT, start_server
from helpers.pairhmm import make_batches
from helpers.seedext import assert_seedext_equal, make_seed_pairs
from helpers.xdrop import K, assert_xdrop_equal, make_xdrop_pairs
from warpdp.grpc import Client
from warpdp.kernels import align as gpu_align
from warpdp.kernels import edit as gpu_edit
from warpdp.kernels import pairhmm as gpu_pairhmm
from warpdp.kernels import seedext as gpu_seedext
from warpdp.kernels import xdrop as gpu_xdrop
from warpdp.plugin.align import AlignPairs, AlignParams
from warpdp.plugin.backend import gpu_status
from warpdp.plugin.edit import EditParams

_GPU_OK, _GPU_WHY = gpu_status("pairhmm")


def _gpu_count() -> int:
    if not _GPU_OK:
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


N_GPUS = _gpu_count()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _GPU_OK, reason=f"GPU backend not usable here: {_GPU_WHY}"),
    pytest.mark.skipif(_GPU_OK and N_GPUS < 2, reason=f"needs 2 or more GPUs; {N_GPUS} visible"),
]
ALL = list(range(N_GPUS))
FLOAT_TOL = 1e-3  # |log10| between the GPU's float path and the CPU's (GKL's own rounding)


def test_pairhmm_on_every_device_matches_one_device_and_the_cpu() -> None:
    batches = make_batches(31, 400, reads=(5, 40), haps=(1, 5), read_len=(50, 150), hap_len=(100, 300))
    one = np.empty(batches.n_pairs)
    gpu_pairhmm.forward(batches, one, devices=[0], chunk_cells=2_000_000)
    spread = np.empty(batches.n_pairs)
    gpu_pairhmm.forward(batches, spread, devices=ALL, chunk_cells=2_000_000)  # many chunks per device
    np.testing.assert_array_equal(spread, one)
    np.testing.assert_array_equal(warpdp.pairhmm(batches, backend="gpu"), one)  # default: every device
    np.testing.assert_allclose(one, warpdp.pairhmm(batches, backend="cpu"), rtol=0, atol=FLOAT_TOL)
    double = warpdp.pairhmm(batches, backend="gpu", double=True, devices=ALL[::-1])
    np.testing.assert_array_equal(double, warpdp.pairhmm(batches, backend="gpu", double=True, devices=[0]))


def test_xdrop_on_every_device_matches_one_device_and_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = make_xdrop_pairs(32, 3000, length=(0, 2000))
    monkeypatch.setattr(gpu_xdrop, "_CHUNK_PAIRS", 97)
    cpu = warpdp.xdrop(pairs, k=K, x=60, backend="cpu")
    for devices in ([0], ALL, ALL[::-1], [ALL[-1], 0, ALL[-1]]):
        assert_xdrop_equal(warpdp.xdrop(pairs, k=K, x=60, backend="gpu", devices=devices), cpu)


def test_seed_extension_on_every_device_matches_one_device_and_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = make_seed_pairs(33, 20_000)
    monkeypatch.setattr(gpu_seedext, "_CHUNK_PAIRS", 1500)
    cpu = warpdp.seed_extend(pairs, backend="cpu")
    for devices in ([0], ALL, None):
        assert_seedext_equal(warpdp.seed_extend(pairs, backend="gpu", devices=devices), cpu)
    # A bad pair in a late chunk: the error names it, whichever device planned that chunk.
    bad = make_seed_pairs(34, 20_000)
    bad.h0[17_000] = -1
    with pytest.raises(ValueError, match="17000"):
        warpdp.seed_extend(bad, backend="gpu", devices=ALL)


def test_align_on_every_device_matches_one_device_and_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    edits = random_pairs(37, 2000, (30, 300), (0.01, 0.15))
    long = random_pairs(38, 1, (3000, 3000), (0.05, 0.05))
    # A pair whose traceback is over the (lowered) bound aligns on the CPU, between GPU chunks.
    pairs = AlignPairs.from_sequences([(edits.query(k), edits.target(k)) for k in range(1000)]
                                      + [(long.query(0), long.target(0))]
                                      + [(edits.query(k), edits.target(k)) for k in range(1000, 2000)])
    monkeypatch.setattr(gpu_align, "CHUNK_PAIRS", 97)
    monkeypatch.setattr(gpu_align, "TRACE_CHUNK_BYTES", 2_000_000)
    for params in (AlignParams(mode="local", cigar=True), AlignParams(mode="global", cigar=True),
                   AlignParams(mode="semiglobal")):
        one = warpdp.align(pairs, params, backend="gpu", devices=[0])
        assert one == warpdp.align(pairs, params, backend="cpu"), params
        for devices in (ALL, ALL[::-1], [ALL[-1], 0, ALL[-1]], None):
            assert warpdp.align(pairs, params, backend="gpu", devices=devices) == one, (params, devices)


def test_edit_on_every_device_matches_one_device_and_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = random_pairs(39, 3000, (50, 400), (0.01, 0.15))
    monkeypatch.setattr(gpu_edit, "_CHUNK_PAIRS", 97)
    for params in (EditParams(mode="hw", task="path"), EditParams(mode="nw", task="path"),
                   EditParams(method="windowed", mode="shw", task="path"), EditParams(mode="shw", task="locations")):
        one = warpdp.edit(pairs, params, backend="gpu", devices=[0])
        _assert_edit_equal(one, warpdp.edit(pairs, params, backend="cpu"))
        for devices in (ALL, ALL[::-1], [ALL[-1], 0, ALL[-1]], None):
            _assert_edit_equal(warpdp.edit(pairs, params, backend="gpu", devices=devices), one)


def _assert_edit_equal(got: warpdp.EditResults, want: warpdp.EditResults) -> None:
    assert got == want  # the columns and the CIGARs
    assert (got.locations is None) == (want.locations is None)
    for got_part, want_part in zip(got.locations or (), want.locations or ()):
        np.testing.assert_array_equal(got_part, want_part)


def test_unknown_device_is_refused() -> None:
    pairs = make_xdrop_pairs(35, 10)
    with pytest.raises(ValueError, match=f"no GPU {N_GPUS} here"):
        warpdp.xdrop(pairs, k=K, x=10, backend="gpu", devices=[0, N_GPUS])
    with pytest.raises(ValueError, match=f"no GPU {N_GPUS} here"):
        warpdp.align([("ACGT", "ACGT")], backend="gpu", devices=[N_GPUS])
    with pytest.raises(ValueError, match=f"no GPU {N_GPUS} here"):
        warpdp.edit([("ACGT", "ACGT")], backend="gpu", devices=[0, N_GPUS])


def test_server_runs_on_every_gpu_and_lists_them() -> None:
    srv = start_server(backend="gpu", max_batch_cells=40_000_000, max_wait_ms=2)
    try:
        assert srv.devices == ALL
        jobs = [make_batches(700 + k, 30, reads=(5, 40), haps=(1, 4)) for k in range(16)]
        expected = [warpdp.pairhmm(job, backend="gpu", devices=[0]) for job in jobs]
        with Client(srv.address, timeout=WAIT) as client:
            info = client.server_info()
            assert [d.index for d in info.devices] == ALL and all(d.kind == "gpu" for d in info.devices)
            assert info.batching.workers == srv.workers * N_GPUS

            def call(k: int) -> np.ndarray:
                return client.pairhmm(jobs[k % len(jobs)])

            with ThreadPoolExecutor(32) as pool:
                got = list(pool.map(call, range(96)))
        for k, values in enumerate(got):
            np.testing.assert_array_equal(values, expected[k % len(jobs)], err_msg=f"call {k}")
        assert srv.batcher.dropped == 0
    finally:
        srv.stop()


def test_server_on_chosen_devices() -> None:
    srv = start_server(backend="gpu", devices=[N_GPUS - 1])
    try:
        pairs = make_seed_pairs(36, 500)
        with Client(srv.address, timeout=WAIT) as client:
            assert [d.index for d in client.server_info().devices] == [N_GPUS - 1]
            assert_seedext_equal(client.seed_extend(pairs), warpdp.seed_extend(pairs, backend="cpu"))
    finally:
        srv.stop()
