"""Server hardening (issue #23, parts 3-5): CPU submissions in slices with cancellation between
them, the memory budget's admission control, shutdown signals and health, /metrics and
authorization metadata."""
from __future__ import annotations

import http.client
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import warpdp
from helpers.data import shared_file
from helpers.grpc_server import WAIT, parse_serve_args, start_server, stub_for
from helpers.pairhmm import local, make_batches, request_for
from helpers.seedext import make_seed_pairs
from helpers.xdrop import K, make_xdrop_pairs
from warpdp.grpc._algorithms import PAIRHMM, SEEDEXT, XDROP, XdropKey
from warpdp.grpc.server import AlgorithmKernel
from warpdp.plugin.cancel import JobCancelled, run_in_slices, slice_ranges
from warpdp.plugin.seedext import SeedExtParams

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------
# slices


def test_slice_ranges_bound_cells_and_keep_large_units_alone():
    cells = np.array([3, 3, 3, 10, 1, 1, 0, 4], dtype=np.int64)
    ranges = slice_ranges(cells, 6)
    assert ranges == [(0, 2), (2, 3), (3, 4), (4, 8)]
    assert slice_ranges(np.zeros(0, dtype=np.int64), 6) == []
    # Consecutive, covering everything, each within the bound unless one unit alone.
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])) and ranges[0][0] == 0 and ranges[-1][1] == len(cells)
    assert all(cells[i:j].sum() <= 6 or j == i + 1 for i, j in ranges)


def test_run_in_slices_checks_before_every_slice():
    calls = []
    checks = iter([False, False, True])
    with pytest.raises(JobCancelled):
        run_in_slices([np.arange(2), np.arange(3), np.arange(4)], lambda piece: calls.append(len(piece)) or piece,
                      9, cancelled=lambda: next(checks))
    assert calls == [2, 3]  # the third slice never started
    out = run_in_slices([np.arange(2), np.arange(3)], lambda piece: piece * 2, 5)
    np.testing.assert_array_equal(out, [0, 2, 0, 2, 4])


def _pairhmm_jobs():
    batches = warpdp.read_pairhmm_text(shared_file("pairhmm", "10s.in"))
    # One large batch too: it is cut into ranges of reads.
    big = make_batches(7, 1, reads=(40, 40), haps=(3, 3), read_len=(100, 150), hap_len=(200, 300))
    return [(batches, False), (batches, True), (big, False), (make_batches(3, 30), True)]


def _xdrop_jobs():
    logan = warpdp.read_logan_text(shared_file("xdrop", "logan-example.tsv"), k=K)
    return [(logan, XdropKey.make(k=K, x=21)), (logan, XdropKey.make(k=K, x=100, report="best")),
            (make_xdrop_pairs(5, 200), XdropKey.make(k=K, x=30, match=2, mismatch=-3, gap=-5))]


def _seedext_jobs():
    pairs = warpdp.read_seedext_tsv(shared_file("seedext", "bwamem-like-500.tsv"))
    return [(pairs, SeedExtParams()), (make_seed_pairs(6, 300), SeedExtParams(w=30, zdrop=50))]


@pytest.mark.parametrize("algorithm, jobs", [(PAIRHMM, _pairhmm_jobs), (XDROP, _xdrop_jobs),
                                             (SEEDEXT, _seedext_jobs)], ids=["pairhmm", "xdrop", "seedext"])
def test_sliced_cpu_submissions_are_bit_identical(algorithm, jobs):
    for payload, key in jobs():
        whole = algorithm.run(payload, key, backend="cpu", threads=2)
        cells = algorithm.cells(payload, key)
        for slice_cells in (cells // 7 + 1, 50_000):
            kernel = AlgorithmKernel(algorithm, "cpu", 2, slice_cells=slice_cells)
            sliced = kernel.run(payload, key)
            assert kernel.slices_run > 1
            assert sliced.dtype == whole.dtype and sliced.shape == whole.shape
            # Every column, X-drop's cells count included, bit for bit.
            assert sliced.tobytes() == whole.tobytes()


# ---------------------------------------------------------------------------------------
# cancellation of running work


def _poll(predicate) -> bool:
    """Whether predicate() holds within WAIT seconds (for what no batcher event announces)."""
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _large_pairhmm_job(n_batches: int = 66) -> warpdp.PairHmmBatches:
    """About 3e8 cells per batch (20e9 by default: far more than a small machine scores in the
    tests' time) in a small message."""
    return make_batches(11, n_batches, reads=(100, 100), haps=(50, 50), read_len=(150, 150), hap_len=(400, 400))


def test_expired_and_cancelled_running_jobs_free_the_worker():
    slice_cells = 5_000_000
    srv = start_server(cpu_slice_cells=slice_cells, max_wait_ms=0, max_request_cells=10**11)
    try:
        batcher, kernel = srv.batcher, srv._servicer._kernels["pairhmm"]
        big = _large_pairhmm_job()
        total_slices = big.n_cells // slice_cells
        small = make_batches(12, 3)
        channel, stub = stub_for(srv)
        with channel:
            # A deadline passes while the job runs: it stops at the next slice.
            with pytest.raises(grpc.RpcError) as err:
                stub.PairHmm(request_for(big), timeout=0.5)
            assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            # Submitted just after: runs once the worker is free, long before the big job's end.
            reply = stub.PairHmm(request_for(small), timeout=WAIT)
            np.testing.assert_array_equal(np.frombuffer(reply.log10_likelihoods), local(small))
            assert batcher.wait_for(lambda b: b.stopped == 1 and b.running == 0, WAIT)
            assert batcher.completed == 1  # the small request; the large one never completed
            assert kernel.slices_run < total_slices
            assert srv.metrics.sample("warpdp_stopped_submissions_total", {"reason": "deadline"}) == 1

            # The caller cancels a unary call while it runs.
            before = kernel.slices_run
            future = stub.PairHmm.future(request_for(big), timeout=WAIT)
            assert _poll(lambda: batcher.running == 1 and kernel.slices_run > before)
            future.cancel()
            assert batcher.wait_for(lambda b: b.stopped == 2 and b.running == 0, WAIT)
            # ... and a stream.
            before = kernel.slices_run
            gate = threading.Event()

            def chunks():
                yield request_for(big)
                gate.wait(WAIT)

            stream = stub.PairHmmStream(chunks(), timeout=WAIT)
            assert _poll(lambda: batcher.running == 1 and kernel.slices_run > before)
            stream.cancel()
            gate.set()
            assert batcher.wait_for(lambda b: b.stopped == 3 and b.running == 0, WAIT)
        assert srv.metrics.sample("warpdp_stopped_submissions_total", {"reason": "cancelled"}) == 2
        assert batcher.completed == 1
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------
# /metrics and authorization metadata


def test_metrics_need_the_token_when_one_is_set():
    srv = start_server(metrics_port=0, tokens=("m3trics-token", "other-token"))
    url = f"http://127.0.0.1:{srv.metrics_port}/metrics"
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "m3trics-token"}):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=WAIT)
            assert err.value.code == 401
            assert "bearer token is required" in err.value.read().decode()
        # Two Authorization headers, both accepted tokens: refused as well.
        connection = http.client.HTTPConnection("127.0.0.1", srv.metrics_port, timeout=WAIT)
        connection.putrequest("GET", "/metrics")
        connection.putheader("Authorization", "Bearer m3trics-token")
        connection.putheader("Authorization", "Bearer other-token")
        connection.endheaders()
        assert connection.getresponse().status == 401
        connection.close()
        for token in ("m3trics-token", "other-token"):
            reply = urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}),
                                           timeout=WAIT)
            assert reply.status == 200 and "warpdp_requests_total" in reply.read().decode()
    finally:
        srv.stop()


def test_several_authorization_entries_are_refused():
    srv = start_server(tokens=("s3cret-token",))
    batches = make_batches(13, 2)
    try:
        channel, stub = stub_for(srv)
        with channel:
            for metadata in ((("authorization", "Bearer s3cret-token"), ("authorization", "Bearer s3cret-token")),
                             (("authorization", "Bearer s3cret-token"), ("authorization", "Bearer wrong"))):
                with pytest.raises(grpc.RpcError) as err:
                    stub.PairHmm(request_for(batches), metadata=metadata, timeout=WAIT)
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
                assert "2 'authorization' metadata entries; exactly one is allowed" in err.value.details()
            reply = stub.PairHmm(request_for(batches), metadata=(("authorization", "Bearer s3cret-token"),),
                                 timeout=WAIT)
            assert reply.n_pairs == batches.n_pairs
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------
# shutdown


def _start_serve_process(*options: str) -> tuple[subprocess.Popen, queue.Queue, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen([sys.executable, "-m", "warpdp.grpc.cli", "--port", "0", "--backend", "cpu",
                                *options], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    return process, lines, []


def _wait_for_line(lines: queue.Queue, log: list[str], pattern: str) -> re.Match:
    while True:
        line = lines.get(timeout=WAIT)
        log.append(line)
        found = re.search(pattern, line)
        if found:
            return found


def test_health_says_not_serving_during_the_grace_and_a_second_sigterm_exits_at_once():
    process, lines, log = _start_serve_process("--grace-s", "600", "--metrics-port", "0",
                                               "--max-request-cells", "100G")
    try:
        address = _wait_for_line(lines, log, r"listening on (127\.0\.0\.1:\d+)").group(1)
        metrics_url = _wait_for_line(lines, log, r"metrics on (http://\S+/metrics)").group(1)
        channel = grpc.insecure_channel(address)
        health = health_pb2_grpc.HealthStub(channel)
        assert health.Check(health_pb2.HealthCheckRequest(), timeout=WAIT).status == \
            health_pb2.HealthCheckResponse.SERVING
        from warpdp.grpc import warpdp_pb2_grpc

        stub = warpdp_pb2_grpc.WarpdpStub(channel)
        huge = _large_pairhmm_job(170)  # 5e10 cells: far more than the machine scores in this test's time
        call = stub.PairHmm.future(request_for(huge), timeout=600)
        assert _poll(lambda: "warpdp_in_flight_requests 1.0" in urllib.request.urlopen(metrics_url).read().decode())

        process.send_signal(signal.SIGTERM)
        _wait_for_line(lines, log, r"stopping \(finishing in-flight calls")
        # The grace period: connected clients see NOT_SERVING, for the server and the service,
        # and new scoring calls are refused.
        for service in ("", "warpdp.v1.Warpdp"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=WAIT)
            assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
        with pytest.raises(grpc.RpcError) as err:
            stub.PairHmm(request_for(make_batches(14, 2)), timeout=WAIT)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE and "shutting down" in err.value.details()
        assert not call.done()

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=WAIT) == 128 + signal.SIGTERM
        # The running call ended without its results.
        assert call.exception(timeout=WAIT).code() in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE)
        channel.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    _wait_for_line(lines, log, r"second SIGTERM, cancelling in-flight calls and exiting now")


# ---------------------------------------------------------------------------------------
# memory budget


def test_memory_budget_is_first_come_first_served_and_bounded():
    import asyncio

    from warpdp.grpc._admission import AdmissionRefused, MemoryBudget, Reservation

    async def scenario():
        budget = MemoryBudget(100)
        first, second, third = Reservation(budget), Reservation(budget), Reservation(budget)
        await first.resize(60, 0, "first")
        with pytest.raises(AdmissionRefused, match="more than this server's whole memory budget of 100 bytes"):
            await second.resize(101, 10, "huge")
        with pytest.raises(AdmissionRefused, match="the server is busy"):
            await second.resize(50, 0.01, "second")
        assert budget.used == 60 and budget.waiting == 0
        waiting = asyncio.ensure_future(second.resize(50, WAIT, "second"))
        await asyncio.sleep(0)
        assert budget.waiting == 1
        # A small request does not overtake the one waiting in line ...
        with pytest.raises(AdmissionRefused, match="busy"):
            await third.resize(10, 0.01, "third")
        # ... but an admitted request that needs more goes first.
        await first.resize(70, 0, "first, grown")
        await first.resize(40, 0, "first, shrunk")  # room for the second now
        await waiting
        assert budget.used == 90 and second.held == 50
        # One that gives up while waiting leaves no trace.
        task = asyncio.ensure_future(third.resize(20, WAIT, "third"))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        first.release()
        second.release()
        third.release()
        assert budget.used == 0 and budget.waiting == 0 and budget.peak == 90

    asyncio.run(scenario())


def _hold_backend(monkeypatch):
    """Make every backend submission wait for the returned event (set it to let them go)."""
    from warpdp.grpc import server as server_module

    release, started = threading.Event(), threading.Event()
    original_run = server_module.AlgorithmKernel.run

    def held_run(self, payload, key, cancelled=None):
        started.set()
        assert release.wait(WAIT)
        return original_run(self, payload, key, cancelled)

    monkeypatch.setattr(server_module.AlgorithmKernel, "run", held_run)
    return release, started


def test_requests_over_the_budget_or_finding_no_room_get_resource_exhausted(monkeypatch):
    mib = 1 << 20
    srv = start_server(max_message_mb=1, memory_budget=6 * mib, admission_wait_s=0.2, max_wait_ms=0)
    budget = srv._servicer.budget
    try:
        channel, stub = stub_for(srv)
        with channel:
            # Never fits: refused at once, naming the budget and the request's size.
            # (long sequences, and a batch of many pairs: large results)
            large = PAIRHMM.merge([
                make_batches(15, 200, reads=(5, 5), haps=(2, 2), read_len=(150, 150), hap_len=(150, 150)),
                make_batches(16, 1, reads=(350, 350), haps=(350, 350), read_len=(10, 10), hap_len=(10, 10))])
            request = request_for(large)
            assert request.ByteSize() < mib and large.n_pairs * 8 < mib  # within the message limits
            with pytest.raises(grpc.RpcError) as err:
                stub.PairHmm(request, timeout=WAIT)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert re.search(r"the request needs about \d+ bytes of server memory, more than this server's whole "
                             rf"memory budget of {6 * mib} bytes", err.value.details())

            # Fits, but not beside a request in progress: waits, then is refused as busy.
            release, started = _hold_backend(monkeypatch)
            medium = make_batches(16, 110, reads=(5, 5), haps=(2, 2), read_len=(150, 150), hap_len=(150, 150))
            held = stub.PairHmm.future(request_for(medium), timeout=WAIT)
            assert started.wait(WAIT)
            with pytest.raises(grpc.RpcError) as err:
                stub.PairHmm(request_for(make_batches(17, 2)), timeout=WAIT)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "the server is busy" in err.value.details() and "waited 0.2 s" in err.value.details()
            # With time to wait, it runs once the other is done.
            srv.config.admission_wait_s = WAIT
            small = make_batches(18, 2)
            waiting = stub.PairHmm.future(request_for(small), timeout=WAIT)
            assert _poll(lambda: budget.waiting == 1)
            release.set()
            np.testing.assert_array_equal(np.frombuffer(held.result().log10_likelihoods), local(medium))
            np.testing.assert_array_equal(np.frombuffer(waiting.result().log10_likelihoods), local(small))
        assert _poll(lambda: budget.used == 0 and budget.waiting == 0)
        assert budget.peak <= budget.limit
        assert srv.metrics.sample("warpdp_admission_refused_total", {"reason": "too_large"}) == 1
        assert srv.metrics.sample("warpdp_admission_refused_total", {"reason": "busy"}) == 1
        assert srv.metrics.sample("warpdp_requests_total", {"method": "PairHmm", "code": "RESOURCE_EXHAUSTED"}) == 2
    finally:
        srv.stop()


def test_streams_hold_the_budget_per_chunk_and_give_it_back():
    srv = start_server(max_message_mb=1, memory_budget=8 << 20, max_wait_ms=0)
    budget = srv._servicer.budget
    try:
        batches = [make_batches(20 + k, 4) for k in range(5)]
        channel, stub = stub_for(srv)
        with channel:
            replies = list(stub.PairHmmStream(iter(request_for(b) for b in batches), timeout=WAIT))
            for reply, job in zip(replies, batches):
                np.testing.assert_array_equal(np.frombuffer(reply.log10_likelihoods), local(job))
            assert _poll(lambda: budget.used == 0)
            # A stream the client cancels, with a chunk being waited for, gives everything back.
            gate = threading.Event()

            def chunks():
                yield request_for(batches[0])
                gate.wait(WAIT)

            stream = stub.PairHmmStream(chunks(), timeout=WAIT)
            next(stream)
            assert budget.used > 0  # the next chunk's receipt is reserved
            stream.cancel()
            gate.set()
            assert _poll(lambda: budget.used == 0 and budget.waiting == 0)
    finally:
        srv.stop()


def test_memory_errors_are_resource_exhausted(monkeypatch):
    from warpdp.grpc import server as server_module

    srv = start_server()
    batches = make_batches(19, 3)
    try:
        channel, stub = stub_for(srv)
        with channel:
            def no_memory(*args, **kwargs):
                raise MemoryError()

            for target, name in ((server_module.AlgorithmKernel, "run"), (type(PAIRHMM), "decode")):
                with monkeypatch.context() as patch:
                    patch.setattr(target, name, no_memory)
                    for call in (lambda: stub.PairHmm(request_for(batches), timeout=WAIT),
                                 lambda: list(stub.PairHmmStream(iter([request_for(batches)]), timeout=WAIT))):
                        with pytest.raises(grpc.RpcError) as err:
                            call()
                        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, name
                        assert "ran out of memory" in err.value.details()
            assert stub.PairHmm(request_for(batches), timeout=WAIT).n_pairs == batches.n_pairs
        assert _poll(lambda: srv._servicer.budget.used == 0)
    finally:
        srv.stop()


def test_serve_options_of_the_budget_and_slices():
    from warpdp.grpc.cli import config_from_args
    from warpdp.grpc.server import ServerConfig

    config = config_from_args(parse_serve_args())
    assert config.memory_budget is None and config.cpu_slice_cells is None and config.admission_wait_s == 2.0
    assert config.memory_budget_bytes() >= 1 << 30  # the default: half the available memory, 1..32 GiB
    config = config_from_args(parse_serve_args("--memory-budget", "1.5G", "--admission-wait-s", "0.5", "--cpu-slice-cells", "4M"))
    assert (config.memory_budget, config.admission_wait_s, config.cpu_slice_cells) == (3 << 29, 0.5, 4_000_000)
    assert config.memory_budget_bytes() == 3 << 29
    for bad in ("0", "lots", "-1G"):
        with pytest.raises(SystemExit):
            parse_serve_args("--memory-budget", bad)
    # The budget must hold one message being received.
    with pytest.raises(ValueError, match="memory_budget must hold at least one request being received"):
        config_from_args(parse_serve_args("--memory-budget", "256M", "--max-message-mb", "64"))
    with pytest.raises(ValueError, match="cpu_slice_cells must be at least 1"):
        ServerConfig(cpu_slice_cells=0).check()


def test_slice_sizer_follows_the_rate_within_bounds():
    from warpdp.plugin.cancel import SliceSizer, iter_slice_ranges

    sizer = SliceSizer(100, 0.04, 10, 1000)
    assert sizer() == 100
    sizer.observe(100, 0.01)  # 10,000 cells/s: 400 wanted, at most twice the last
    assert sizer() == 200
    sizer.observe(200, 0.01)
    assert sizer() == 400
    sizer.observe(400, 1.0)  # slow: 16 wanted
    assert sizer() == 16
    sizer.observe(16, 10.0)
    assert sizer() == 10  # the minimum
    # Ranges are cut as they are asked for, each with the size of that moment.
    sizes = iter([2, 5, 1])
    assert list(iter_slice_ranges(np.ones(8, dtype=np.int64), lambda: next(sizes, 10))) == [(0, 2), (2, 7), (7, 8)]
    # A default kernel slices with a sizer and stays bit-identical.
    batches = make_batches(21, 40)
    kernel = AlgorithmKernel(PAIRHMM, "cpu", 2)
    kernel.slice_cells.cells = 20_000  # small slices from the start, then adapted
    assert kernel.run(batches, False).tobytes() == local(batches).tobytes()
    assert kernel.slices_run > 1
