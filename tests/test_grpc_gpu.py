"""The gRPC service on the GPU backend: its two workers, overlapping large submissions and
batching concurrent callers, with every caller getting exactly its own results."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import warpdp
from grpc_support import WAIT, start_server
from test_grpc_service import make_batches
from test_grpc_xdrop_seedext import K, assert_seedext_equal, assert_xdrop_equal, make_seed_pairs, make_xdrop_pairs
from warpdp.grpc import Client
from warpdp.grpc import client as client_module
from warpdp.plugin.backend import gpu_status

_GPU_OK, _GPU_WHY = gpu_status("pairhmm")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _GPU_OK, reason=f"GPU Pair-HMM backend not usable here: {_GPU_WHY}"),
]


def test_concurrent_callers_and_overlapping_large_jobs_on_the_gpu(tmp_path, monkeypatch):
    # A small submission cap makes "large" small enough for a test: jobs of over a quarter of
    # it (10 M cells) overlap a running submission, smaller ones are batched.
    monkeypatch.setattr(client_module, "_SHARED_MIN_BYTES", 64 * 1024)     # large jobs via shared files
    monkeypatch.setattr(client_module, "_SHARED_CHUNK_BYTES", 512 * 1024)
    srv = start_server(backend="gpu", max_batch_cells=40_000_000, max_wait_ms=5, shared_dir=tmp_path)
    try:
        assert srv.backend == "gpu" and srv.workers == 2
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
