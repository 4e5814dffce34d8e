"""The edit family's GPU backend on a device: exactly the CPU backend's distances, locations,
CIGARs and windowed CIGARs (and Scrooge's and edlib's on ../shared/data/edit), every mode, task
and k. Device buffers are poisoned (0xA5) before every run, so an output the kernels fail to
write shows. Skipped, with the reason, where no GPU is usable; test_edit_gpu_host.py runs the
same kernels' host build on any machine."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from helpers.data import shared_file
from helpers.edit_gpu import edge_pairs, random_pairs
from references.edit import rescore
from warpdp.plugin.backend import gpu_status
from warpdp.plugin.cancel import JobCancelled
from warpdp.plugin.edit import EditPairs, EditParams, edit, pack_edit_pairs

_GPU_OK, _GPU_WHY = gpu_status("edit")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _GPU_OK, reason=f"GPU edit backend not usable here: {_GPU_WHY}")]

MODES = ("nw", "shw", "hw")
TASKS = ("distance", "locations", "path")
POISON = 0xA5


def _data(name: str) -> Path:
    """A reference file: $WARPDP_EDIT_DATA (a copy carried to a device), else ../shared/data/edit."""
    folder = os.environ.get("WARPDP_EDIT_DATA")
    if folder and (Path(folder) / name).exists():
        return Path(folder) / name
    return shared_file("edit", name)


@pytest.fixture(autouse=True)
def poisoned(monkeypatch):
    """Every device and pinned buffer of the edit runners (one per device) filled with POISON
    before each run."""
    import cupy

    from warpdp.kernels import edit as gpu_edit

    def alloc_poisoned(nbytes: int):
        memory = cupy.cuda.alloc(nbytes)
        cupy.cuda.runtime.memset(memory.ptr, POISON, nbytes)
        return memory

    def poison(runner) -> None:
        real_run = runner.run

        def run_poisoned(*args, **kwargs):  # in the runner's device context (runtime.devices.spread)
            cupy.cuda.runtime.deviceSynchronize()
            for slot in runner.ring.slots:
                if slot.device is not None:
                    cupy.cuda.runtime.memset(slot.device.ptr, POISON, slot.device_bytes)
                if slot.pinned_out is not None:
                    slot.pinned_out[:] = POISON
            cupy.cuda.runtime.deviceSynchronize()
            return real_run(*args, **kwargs)

        monkeypatch.setattr(runner, "alloc_device", alloc_poisoned)
        monkeypatch.setattr(runner, "run", run_poisoned)

    for device in range(cupy.cuda.runtime.getDeviceCount()):
        poison(gpu_edit._runner(device))


def _same(pairs: EditPairs, **fields) -> None:
    params = EditParams(**fields)
    want = edit(pairs, params, backend="cpu")
    got = edit(pairs, params, backend="gpu")
    assert got == want, fields


@pytest.mark.parametrize("mode", MODES)
def test_reference_data_exact_equals_edlib_and_the_cpu(mode):
    text = [tuple(line.split()) for line in _data("pairs-400.tsv").read_text().splitlines()]
    pairs = pack_edit_pairs(text)
    expected = [line.split() for line in _data(f"pairs-400.{mode}.edlib.out").read_text().splitlines()]
    for task in TASKS:
        for k in (-1, 10, 300):
            _same(pairs, mode=mode, task=task, k=k)
    got = edit(pairs, mode=mode, task="path", backend="gpu")
    for i, (query, target) in enumerate(text):
        dist, t_start, t_end, _, locs = expected[i]
        assert got.distance[i] == int(dist), i
        assert got.pair_locations(i) == [(int(b), int(e) + 1) for b, e in (x.split("-") for x in locs.split(","))]
        assert rescore(query, target, got.cigarstring(i), int(t_start)) == (int(dist), len(query), int(t_end) + 1)


@pytest.mark.parametrize(("window", "overlap"), [(64, 33), (32, 17)])
def test_reference_data_windowed_equals_scrooge_and_the_cpu(window, overlap):
    pairs = pack_edit_pairs([tuple(line.split()) for line in _data("pairs-400.tsv").read_text().splitlines()])
    expected = [line.split() for line in _data(f"pairs-400.scrooge-w{window}o{overlap}.out").read_text().splitlines()]
    got = edit(pairs, method="windowed", mode="shw", window=window, overlap=overlap, task="path", backend="gpu")
    assert [(int(got.distance[i]), got.cigarstring(i)) for i in range(len(pairs))] == \
        [(int(d), c) for d, c in expected]
    for task in TASKS:
        for k in (-1, 20):
            _same(pairs, method="windowed", mode="shw", window=window, overlap=overlap, task=task, k=k)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("task", TASKS)
def test_random_short_and_edge_pairs(mode, task):
    short = random_pairs(11, 400, (100, 250), (0.01, 0.05))
    for pairs in (short, edge_pairs()):
        for k in (-1, 0, 5, 40):
            _same(pairs, mode=mode, task=task, k=k)


@pytest.mark.parametrize("mode", MODES)
def test_random_long_indel_rich_pairs(mode):
    pairs = random_pairs(12, 6, (5000, 20000), (0.05, 0.15), indel_rich=True)
    for task in TASKS:
        for k in (-1, 500):
            _same(pairs, mode=mode, task=task, k=k)


def test_thread_kernel_on_long_pairs(monkeypatch):
    from warpdp.kernels import edit as gpu_edit

    monkeypatch.setattr(gpu_edit, "WARP_MIN_QUERY", 10**9)  # long queries go to the warp kernel otherwise
    pairs = random_pairs(22, 3, (5000, 20000), (0.05, 0.15), indel_rich=True)
    for mode in MODES:
        for task in TASKS:
            _same(pairs, mode=mode, task=task, k=-1 if task != "locations" else 700)


@pytest.mark.parametrize("mode", MODES)
def test_warp_kernel_on_short_and_edge_pairs(monkeypatch, mode):
    from warpdp.kernels import edit as gpu_edit

    monkeypatch.setattr(gpu_edit, "WARP_MIN_QUERY", 0)  # short queries go to the thread kernel otherwise
    for pairs in (random_pairs(23, 300, (100, 250), (0.01, 0.05)), edge_pairs()):
        for task in TASKS:
            for k in (-1, 0, 5, 40):
                _same(pairs, mode=mode, task=task, k=k)


@pytest.mark.parametrize(("window", "overlap"), [(64, 33), (32, 17), (16, 0), (2, 1), (64, 63), (40, 8), (64, 16)])
def test_random_windowed(window, overlap):
    short = random_pairs(13, 400, (100, 250), (0.01, 0.05))
    long = random_pairs(14, 6, (5000, 20000), (0.05, 0.15), indel_rich=True)
    rng = np.random.default_rng(14)
    acgt = np.frombuffer(b"ACGT", np.uint8)
    edges = pack_edit_pairs([("A", "A"), ("A", "C"), ("acgt", "ACGT"), ("T", "T" * 70),
                             (rng.choice(acgt, 700), rng.choice(acgt, 800))])  # unrelated: every tier
    for pairs in (short, long, edges):
        for task in TASKS:
            for k in (-1, 0, 60):
                _same(pairs, method="windowed", mode="shw", window=window, overlap=overlap, task=task, k=k)


def test_many_pairs_over_several_chunks():
    from warpdp.kernels import edit as gpu_edit

    pairs = random_pairs(15, 3000, (100, 250), (0.01, 0.05))
    old = gpu_edit._CHUNK_PAIRS
    gpu_edit._CHUNK_PAIRS = 700
    try:
        for fields in (dict(mode="hw", task="path"), dict(method="windowed", mode="shw", task="path")):
            _same(pairs, **fields)
    finally:
        gpu_edit._CHUNK_PAIRS = old


def test_auto_picks_the_gpu_and_windowed_refuses_other_bytes():
    pairs = random_pairs(16, 50, (100, 250), (0.01, 0.05))
    assert edit(pairs, mode="hw", task="path", backend="auto") == edit(pairs, mode="hw", task="path", backend="cpu")
    with pytest.raises(ValueError, match="pair 1 has a byte other than A, C, G, T"):
        edit([("ACGT", "ACGT"), ("ACNT", "ACGT"), ("N", "A")], method="windowed", mode="shw", backend="gpu")


def test_pairs_too_large_for_one_thread_go_to_the_cpu(monkeypatch):
    from warpdp.kernels import edit as gpu_edit

    pairs = random_pairs(17, 60, (20, 300), (0.01, 0.1))
    monkeypatch.setattr(gpu_edit, "GPU_MAX_BLOCK_CELLS", 200)
    assert 0 < len(gpu_edit.cpu_fallback_pairs(pairs.query_offsets, pairs.target_offsets, EditParams())) < 60
    for task in TASKS:
        _same(pairs, mode="hw", task=task)


def test_cancelled_between_chunks():
    from warpdp.kernels import edit as gpu_edit

    pairs = random_pairs(18, 2000, (100, 250), (0.01, 0.05))
    old = gpu_edit._CHUNK_PAIRS
    gpu_edit._CHUNK_PAIRS = 500
    calls = []
    try:
        with pytest.raises(JobCancelled):  # one device: its one thread checks before each chunk
            edit(pairs, backend="gpu", devices=[0], cancelled=lambda: calls.append(1) or len(calls) >= 2)
        assert len(calls) == 2
        assert edit(pairs, backend="gpu", cancelled=lambda: False) == edit(pairs, backend="cpu")
    finally:
        gpu_edit._CHUNK_PAIRS = old


def test_a_gpu_server_runs_edit_on_the_gpu(monkeypatch):
    # gRPC is imported here, so that the kernels' tests run where its generated code and the
    # installed grpcio disagree (this test then errors, saying so).
    from helpers.grpc_server import WAIT, start_server
    from warpdp.grpc import Client
    from warpdp.kernels import edit as gpu_edit

    calls = []
    real = gpu_edit.edit
    monkeypatch.setattr(gpu_edit, "edit", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    pairs = random_pairs(19, 100, (100, 250), (0.01, 0.05))
    srv = start_server(backend="gpu")
    try:
        with Client(srv.address, timeout=WAIT) as client:
            got = client.call("edit", pairs, EditParams(mode="hw", task="path"))
    finally:
        srv.stop()
    assert calls and got == edit(pairs, mode="hw", task="path", backend="cpu")
