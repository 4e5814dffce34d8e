"""The gRPC service on the GPU backend: its workers, overlapping large submissions and
batching concurrent callers, with every caller getting exactly its own results."""
from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest

import warpdp
from helpers.grpc_server import WAIT, start_server
from helpers.pairhmm import make_batches
from helpers.seedext import assert_seedext_equal, make_seed_pairs
from helpers.shm import job_bytes, sealed_memfd
from helpers.xdrop import K, assert_xdrop_equal, make_xdrop_pairs
from warpdp.grpc import Client
from warpdp.grpc import _shm_client, _shm_server
from warpdp.grpc import client as client_module
from warpdp.grpc import _handlers as _handlers_module
from warpdp.grpc import server as server_module
from warpdp.grpc._algorithms import PAIRHMM
from warpdp.grpc._packing import decode_pairhmm
from warpdp.kernels.runtime.slots import register_read_only
from warpdp.plugin.backend import gpu_status

_GPU_OK, _GPU_WHY = gpu_status("pairhmm")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _GPU_OK, reason=f"GPU Pair-HMM backend not usable here: {_GPU_WHY}"),
]


def test_concurrent_callers_and_overlapping_large_jobs_on_the_gpu(monkeypatch):
    # A small submission cap makes "large" small enough for a test: jobs of over a quarter of
    # it (10 M cells) overlap a running submission, smaller ones are batched.
    monkeypatch.setattr(client_module, "_SHARED_MIN_BYTES", 64 * 1024)     # large jobs via shared memory
    monkeypatch.setattr(client_module, "_SHARED_CHUNK_BYTES", 512 * 1024)
    srv = start_server(backend="gpu", max_batch_cells=40_000_000, max_wait_ms=5)
    try:
        assert srv.backend == "gpu" and srv.workers == server_module.DEFAULT_WORKERS["gpu"] == 3
        small = [make_batches(500 + k, int(1 + k % 4), reads=(5, 40), haps=(1, 4)) for k in range(24)]
        large = [make_batches(600 + k, 40, reads=(10, 40), haps=(2, 5), read_len=(100, 150), hap_len=(200, 400))
                 for k in range(3)]
        assert all(job.n_cells > 60_000_000 for job in large)  # several chunks each, each over 10 M cells
        jobs = small + large
        expected = [warpdp.pairhmm(job, backend="gpu") for job in jobs]
        n_threads, rounds = 32, 3

        def caller(t: int) -> list[tuple[int, np.ndarray]]:
            got = []
            with Client(srv.address, timeout=WAIT) as client:
                for r in range(rounds):
                    k = (t * rounds + r) % len(jobs)
                    got.append((k, client.pairhmm(jobs[k])))
            return got

        with ThreadPoolExecutor(n_threads) as pool:
            results = [item for part in pool.map(caller, range(n_threads)) for item in part]
        assert len(results) == n_threads * rounds
        for k, values in results:
            np.testing.assert_array_equal(values, expected[k], err_msg=f"job {k}")
        assert srv.batcher.submissions < len(results)  # concurrent small requests were batched
        assert srv.batcher.dropped == 0
    finally:
        srv.stop()


def test_xdrop_and_seed_extension_through_a_gpu_server():
    srv = start_server(backend="gpu")
    try:
        xdrop_pairs, seed_pairs = make_xdrop_pairs(11, 300), make_seed_pairs(12, 300)
        with Client(srv.address, timeout=WAIT) as client, ThreadPoolExecutor(8) as pool:
            xdrop = list(pool.map(lambda _: client.xdrop(xdrop_pairs, k=K, x=50), range(8)))
            seed = list(pool.map(lambda _: client.seed_extend(seed_pairs), range(8)))
        for got in xdrop:
            assert_xdrop_equal(got, warpdp.xdrop(xdrop_pairs, k=K, x=50, backend="gpu"))
        for got in seed:
            assert_seedext_equal(got, warpdp.seed_extend(seed_pairs, backend="gpu"))
    finally:
        srv.stop()


def test_shared_memory_is_mapped_page_locked_once_and_released(monkeypatch):
    # The server reads no Pair-HMM input on the host: it page-locks a mapping of each client
    # memfd once and the launcher uploads from it, request after request; the mappings are
    # released once the client has closed its memfds (unregistered, or its connection closed).
    monkeypatch.setattr(client_module, "_SHARED_CHUNK_BYTES", 4 << 20)
    monkeypatch.setattr(client_module, "_SHARED_FIRST_CHUNK_BYTES", 2 << 20)
    monkeypatch.setattr(_shm_server, "_SWEEP_S", 0.05)
    counts, lock = {"registered": 0, "unregistered": 0, "sized": 0, "requests": 0}, threading.Lock()

    def count(what: str) -> None:
        with lock:
            counts[what] += 1

    def counting_register(address: int, nbytes: int):
        unregister = register_read_only(address, nbytes)
        count("registered")

        def counted_unregister() -> None:
            unregister()
            count("unregistered")
        return counted_unregister

    def counting_create(self, nbytes: int):  # the client makes a memfd
        count("sized")
        return create(self, nbytes)

    def counting_arrays(self, *args, **kwargs):
        count("requests")
        return arrays(self, *args, **kwargs)

    def no_reading(*args, **kwargs):
        raise AssertionError("a GPU server read Pair-HMM input from shared memory")

    create, arrays = _shm_client.SharedFilePool._create, _shm_server.MappedFiles.arrays
    monkeypatch.setattr(_handlers_module, "register_read_only", counting_register)
    monkeypatch.setattr(_shm_client.SharedFilePool, "_create", counting_create)
    monkeypatch.setattr(_shm_server.MappedFiles, "arrays", counting_arrays)
    monkeypatch.setattr(_shm_server, "read_arrays", no_reading)
    job = make_batches(21, 700, reads=(10, 40), haps=(2, 5), read_len=(100, 150), hap_len=(200, 400))
    assert PAIRHMM.request_bytes(job) > 8 << 20  # several chunks
    expected = warpdp.pairhmm(job, backend="gpu")
    srv = start_server(backend="gpu")
    try:
        with Client(srv.address, timeout=WAIT) as client:
            for _ in range(3):
                np.testing.assert_array_equal(client.pairhmm(job), expected)
        assert counts["registered"] == counts["sized"] < counts["requests"], counts
        deadline = time.monotonic() + WAIT
        while counts["unregistered"] != counts["registered"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert counts["unregistered"] == counts["registered"], counts
        assert srv._servicer._mapped_files.mapped_bytes() == 0 and srv.shared_memory.registered() == (0, 0)
    finally:
        srv.stop()


def test_memory_rewritten_after_its_offsets_were_copied_cannot_misdirect_the_gpu():
    # The offsets are the server's own copies, taken before they are checked: a client that
    # rewrites its memfd after sending it (here: every byte, offsets included) changes only
    # the bases and qualities the GPU copies from its pages, never where the launcher reads.
    job = make_batches(22, 200, reads=(10, 40), haps=(2, 5), read_len=(100, 150), hap_len=(200, 400))
    expected = warpdp.pairhmm(job, backend="gpu")
    wire = PAIRHMM.wire_arrays(job)
    fields = [field.name for field in PAIRHMM.packed_message.DESCRIPTOR.fields]
    assert list(wire) == fields
    data = job_bytes(wire.values())
    fd = sealed_memfd(data)
    mapped_files = _shm_server.MappedFiles(register_read_only)
    try:
        region = _shm_server.Region("c" * 32, fd, len(data), True)
        arrays = mapped_files.arrays(region, [array.nbytes for array in wire.values()], fields, 1 << 30,
                                     PAIRHMM.mapped_file_host_fields)
        batches, _, _ = decode_pairhmm(SimpleNamespace(**arrays))
        np.testing.assert_array_equal(warpdp.pairhmm(batches, backend="gpu"), expected)
        os.pwrite(fd, b"\xff" * len(data), 0)  # offsets of -1, qualities of 255, bases of no base
        got = warpdp.pairhmm(batches, backend="gpu")  # reads the rewritten bytes: a result for each pair
        assert got.shape == expected.shape
        np.testing.assert_array_equal(batches.read_offsets, np.frombuffer(wire["read_offsets"], "<i8"))
        del arrays, batches
    finally:
        mapped_files.close()
        os.close(fd)


def test_a_server_whose_mappings_are_refused_reads_the_files(monkeypatch):
    # A refusal reads that file instead; three in a row, and the server reads every file.
    monkeypatch.setattr(client_module, "_SHARED_CHUNK_BYTES", 4 << 20)
    monkeypatch.setattr(client_module, "_SHARED_FIRST_CHUNK_BYTES", 2 << 20)
    refusals = []

    def refuse(address: int, nbytes: int):
        refusals.append(nbytes)
        raise RuntimeError("cudaErrorNotSupported")

    monkeypatch.setattr(_handlers_module, "register_read_only", refuse)
    job = make_batches(23, 700, reads=(10, 40), haps=(2, 5), read_len=(100, 150), hap_len=(200, 400))
    assert PAIRHMM.request_bytes(job) > 8 << 20  # three chunks or more
    expected = warpdp.pairhmm(job, backend="gpu")
    srv = start_server(backend="gpu")
    try:
        with Client(srv.address, timeout=WAIT) as client:
            np.testing.assert_array_equal(client.pairhmm(job), expected)
            refused = len(refusals)  # chunks decoded at once may each be refused
            assert refused >= server_module._MAP_FAILURES_BEFORE_READING
            assert srv._servicer._mapped_files is None
            np.testing.assert_array_equal(client.pairhmm(job), expected)
            assert len(refusals) == refused
    finally:
        srv.stop()
