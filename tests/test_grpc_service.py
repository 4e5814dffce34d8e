"""The gRPC service: servers run in-process on ephemeral loopback ports, CPU backend."""
from __future__ import annotations

import datetime
import ipaddress
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import time
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import warpdp
from helpers.data import SHARED_DATA
from helpers.grpc_server import WAIT, client, metric_reaches, server, start_server, stub, stub_for  # noqa: F401 (fixtures)
from helpers.grpc_server import parse_serve_args
from helpers.pairhmm import local, make_batches, request_for
from warpdp.grpc import Client, InvalidRequestError, Server, ServerConfig, ServiceError
from warpdp.grpc import _packing, warpdp_pb2, warpdp_pb2_grpc
from warpdp.grpc import server as server_module
from warpdp.grpc.cli import config_from_args, count
from warpdp.grpc.server import Batcher, Metrics

REPO = Path(__file__).resolve().parents[1]
PAIRHMM_10S = SHARED_DATA / "pairhmm" / "10s.in"


# ---------------------------------------------------------------------------------------
# helpers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Small limits so that splitting and streaming are exercised with small inputs.
LIMITED = dict(max_request_cells=2_000_000, max_message_mb=0.25)


@pytest.fixture(scope="module")
def limited_server():
    srv = start_server(**LIMITED)
    yield srv
    srv.stop()


# ---------------------------------------------------------------------------------------
# results equal local scoring


@pytest.mark.skipif(not PAIRHMM_10S.exists(), reason=f"shared reference data not found at {PAIRHMM_10S}")
@pytest.mark.parametrize("double", [False, True])
def test_10s_equals_local(client, double):
    batches = warpdp.read_pairhmm_text(PAIRHMM_10S)
    got = client.pairhmm(batches, double=double)
    np.testing.assert_array_equal(got, local(batches, double))


@pytest.mark.parametrize("seed", range(4))
def test_generated_equals_local(client, seed):
    batches = make_batches(seed, n_batches=1 + 7 * seed, reads=(0, 10), haps=(0, 5))
    got = client.pairhmm(batches, double=seed % 2 == 1)
    expected = local(batches, seed % 2 == 1)
    assert got.dtype == np.float64 and got.shape == expected.shape and got.flags.writeable
    np.testing.assert_array_equal(got, expected)
    assert np.all(np.isfinite(got)) and np.all(got <= 0)


def test_out_argument_and_empty_jobs(client):
    batches = make_batches(11, 3)
    out = np.full(batches.n_pairs, np.nan)
    assert client.pairhmm(batches, out=out) is out
    np.testing.assert_array_equal(out, local(batches))
    nothing = make_batches(12, 0)
    assert nothing.n_batches == 0 and client.pairhmm(nothing).shape == (0,)
    no_haps = make_batches(13, 3, haps=(0, 0))
    assert client.pairhmm(no_haps).shape == (0,)


def test_client_checks_input_like_local_scoring(client):
    with pytest.raises(TypeError, match="PairHmmBatches"):
        client.pairhmm("ACGT")
    good = make_batches(14, 2)
    bad = warpdp.PairHmmBatches(**{**good.__dict__, "read_quals": good.read_quals[:-1]})
    with pytest.raises(ValueError, match="read_quals has"):
        client.pairhmm(bad)


def test_reply_stats(stub):
    batches = make_batches(15, 2)
    reply = stub.PairHmm(request_for(batches), timeout=WAIT)
    assert reply.n_pairs == batches.n_pairs
    np.testing.assert_array_equal(np.frombuffer(reply.log10_likelihoods, "<f8"), local(batches))
    assert reply.stats.backend == "cpu" and reply.stats.cells == batches.n_cells
    assert reply.stats.coalesced_requests >= 1 and reply.stats.submission_cells >= batches.n_cells


# ---------------------------------------------------------------------------------------
# streaming and splitting


def test_stream_rpc_answers_each_chunk_in_order(stub):
    jobs = [make_batches(20 + k, 1 + k) for k in range(4)] + [make_batches(30, 0)]
    replies = list(stub.PairHmmStream(iter([request_for(j) for j in jobs]), timeout=WAIT))
    assert [r.chunk for r in replies] == list(range(len(jobs)))
    for job, reply in zip(jobs, replies):
        assert reply.n_pairs == job.n_pairs
        np.testing.assert_array_equal(np.frombuffer(reply.log10_likelihoods, "<f8"), local(job))


def test_large_job_is_split_and_streamed(limited_server):
    # Over both limits, with batches larger than a request (split by reads) and one read
    # larger than a request (split by haplotypes).
    regular = make_batches(40, 40, reads=(1, 30), haps=(1, 6))
    huge_batch = make_batches(41, 1, reads=(200, 200), haps=(4, 4), read_len=(100, 150), hap_len=(300, 400))
    huge_read = make_batches(42, 1, reads=(1, 1), haps=(60, 60), read_len=(150, 150), hap_len=(300, 400))
    job = _packing.concat_pairhmm([regular, huge_batch, huge_read])
    assert job.n_cells > 10 * LIMITED["max_request_cells"]
    assert huge_read.n_cells > LIMITED["max_request_cells"]  # one read x its haplotypes is over the limit
    chunks = _packing.plan_pairhmm_chunks(job, LIMITED["max_request_cells"], int(LIMITED["max_message_mb"] * 2**20))
    assert all(c.n_cells <= LIMITED["max_request_cells"] for c in chunks)
    with Client(limited_server.address, timeout=WAIT) as c:
        np.testing.assert_array_equal(c.pairhmm(job), local(job))
        np.testing.assert_array_equal(c.pairhmm(job, double=True), local(job, double=True))
    assert metric_reaches(limited_server, "warpdp_requests_total", {"method": "PairHmmStream", "code": "OK"}, 2)


def test_streamed_chunks_start_small_and_double():
    # The client's chunks: a small first one (the server starts sooner), then doubling up to
    # the full size; together they are the job, batch after batch.
    job = make_batches(45, 400, reads=(5, 30), haps=(2, 5))
    max_bytes, first = 64 * 1024, 8 * 1024
    chunks = _packing.plan_pairhmm_chunks(job, 10**12, max_bytes, first)
    sizes = [int(_packing.pairhmm_request_bytes_per_batch(c).sum()) for c in chunks]
    budgets = [min(max_bytes, first << k) for k in range(len(chunks))]
    # (A batch over its budget is cut with the full one.)
    assert len(chunks) > 6 and all(size <= budget or c.n_batches == 1
                                   for c, size, budget in zip(chunks, sizes, budgets))
    assert sizes[0] < sizes[2] < sizes[4] and max(sizes) > max_bytes // 2
    np.testing.assert_array_equal(np.concatenate([local(c) for c in chunks]), local(job))
    # A pair over the first budgets (but within the limit) waits for a budget that holds it.
    pairs = _packing.plan_pair_ranges(
        np.array([1, 1, 1, 1]), np.array([100, 5000, 100, 100]), 8, 16, 10**6, 20_000, 1000)
    assert pairs[0] == (0, 1) and sum(j - i for i, j in pairs) == 4 and pairs[-1][1] == 4


def test_client_learns_smaller_limits(limited_server):
    # Fits the client's assumption for unknown servers, not this server's limits.
    job = make_batches(43, 30, reads=(10, 30), haps=(2, 6))
    assert LIMITED["max_request_cells"] < job.n_cells < 64_000_000
    with Client(limited_server.address, timeout=WAIT) as c:
        np.testing.assert_array_equal(c.pairhmm(job), local(job))
        assert c.server_info().limits.max_request_cells == LIMITED["max_request_cells"]


def test_a_single_pair_over_the_limit_is_refused():
    with pytest.raises(ValueError, match="exceeds the server's limits"):
        _packing.plan_pairhmm_chunks(make_batches(44, 1, reads=(1, 1), haps=(1, 1), read_len=(100, 100),
                                                  hap_len=(100, 100)), 5_000, 1 << 20)


# ---------------------------------------------------------------------------------------
# server info, health, reflection, metrics


def test_server_info(client):
    info = client.server_info()
    assert info.version == warpdp.__version__
    assert info.backend == "cpu" and info.requested_backend == "cpu"
    names = [(a.name, a.rpc) for a in info.algorithms]
    assert names[:3] == [("pairhmm", "PairHmm"), ("xdrop", "Xdrop"), ("seedext", "SeedExtend")]
    assert ("align", "Align") in names
    assert ("edit", "Edit") in names
    assert all(a.backend == "cpu" and a.detail.startswith("CPU ") for a in info.algorithms)
    assert info.devices and info.devices[0].kind == "cpu" and info.devices[0].cores >= 1
    assert info.limits.max_request_cells > 0 and info.limits.max_message_bytes > 0
    assert info.batching.enabled and info.batching.workers == 1 and not info.token_required


def test_health(server):
    with grpc.insecure_channel(server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "warpdp.v1.Warpdp"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=WAIT)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as err:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=WAIT)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_reflection_lists_and_describes_the_service(server):
    from google.protobuf.descriptor_pool import DescriptorPool
    from google.protobuf.message_factory import GetMessageClass
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

    with grpc.insecure_channel(server.address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = set(database.get_services())
        assert {"warpdp.v1.Warpdp", "grpc.health.v1.Health"} <= services
        pool = DescriptorPool(database)
        service = pool.FindServiceByName("warpdp.v1.Warpdp")
        assert service.methods_by_name["PairHmm"].input_type.full_name == "warpdp.v1.PairHmmRequest"
        fields = pool.FindMessageTypeByName("warpdp.v1.PairHmmBatches").fields_by_name
        assert fields["read_offsets"].type == fields["read_offsets"].TYPE_BYTES
        # Call it the way grpcurl does: with message classes built from reflection only.
        method = service.methods_by_name["ServerInfo"]
        request_class = GetMessageClass(method.input_type)
        reply_class = GetMessageClass(method.output_type)
        call = channel.unary_unary("/warpdp.v1.Warpdp/ServerInfo", request_serializer=request_class.SerializeToString,
                                   response_deserializer=reply_class.FromString)
        assert call(request_class(), timeout=WAIT).backend == "cpu"


def test_metrics_endpoint():
    srv = start_server(metrics_port=0)
    try:
        batches = make_batches(50, 3)
        with Client(srv.address, timeout=WAIT) as c:
            c.pairhmm(batches)
        text = urllib.request.urlopen(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=WAIT).read().decode()
        from prometheus_client.parser import text_string_to_metric_families

        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for family in text_string_to_metric_families(text) for s in family.samples}
        assert samples["warpdp_requests_total", (("code", "OK"), ("method", "PairHmm"))] == 1
        assert samples["warpdp_cells_total", (("algorithm", "pairhmm"),)] == batches.n_cells
        assert samples["warpdp_pairs_total", (("algorithm", "pairhmm"),)] == batches.n_pairs
        assert samples["warpdp_batch_requests_count", (("algorithm", "pairhmm"),)] == 1
        assert samples["warpdp_queue_wait_seconds_count", (("algorithm", "pairhmm"),)] == 1
        assert samples["warpdp_request_seconds_count", (("method", "PairHmm"),)] == 1
        assert samples["warpdp_queue_depth", ()] == 0
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------
# errors


def _mutated(field: str, value) -> warpdp_pb2.PairHmmRequest:
    request = request_for(make_batches(60, 3, reads=(2, 3), haps=(2, 2)))
    setattr(request.batches, field, value)
    return request


def _i64(*values: int) -> bytes:
    return np.array(values, dtype="<i8").tobytes()


GOOD = request_for(make_batches(60, 3, reads=(2, 3), haps=(2, 2))).batches
N_READ_BASES = len(GOOD.read_bases)
N_HAPS = len(GOOD.hap_offsets) // 8 - 1

BAD_INPUTS = [
    ("offsets not int64", _mutated("read_offsets", GOOD.read_offsets + b"\x00"),
     "read_offsets has .* bytes, not a multiple of 8"),
    ("batch_haps not int64", _mutated("batch_haps", GOOD.batch_haps[:-3]), "batch_haps has .* not a multiple of 8"),
    ("quals shorter than bases", _mutated("read_quals", GOOD.read_quals[:-1]), "read_quals has"),
    ("gcp longer than bases", _mutated("read_gcp", GOOD.read_gcp + b"\x0a"), "read_gcp has"),
    ("offset past the end", _mutated("read_offsets", GOOD.read_offsets[:-8] + _i64(N_READ_BASES + 5)),
     "read_offsets must end at"),
    ("offsets not starting at 0", _mutated("hap_offsets", _i64(3) + GOOD.hap_offsets[8:]), "hap_offsets must start at 0"),
    ("decreasing offsets", _mutated("batch_reads", _i64(0, 5, 2, 8)), "batch_reads must"),
    ("empty read", _mutated("read_offsets", _i64(0) + GOOD.read_offsets), "read 0 is empty"),
    ("empty haplotype", _mutated("hap_offsets", _i64(0) + GOOD.hap_offsets), "haplotype 0 is empty"),
    ("batch counts differ", _mutated("batch_haps", _i64(0, N_HAPS)), "batch_reads describes 3 batches"),
    ("batch_haps past the haplotypes", _mutated("batch_haps", GOOD.batch_haps[:-8] + _i64(N_HAPS + 1)),
     "batch_haps must end at"),
    ("nothing at all", warpdp_pb2.PairHmmRequest(), "read_offsets must have at least one entry"),
]


@pytest.mark.parametrize("case, request_message, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_invalid_argument(stub, case, request_message, message):
    with pytest.raises(grpc.RpcError) as err:
        stub.PairHmm(request_message, timeout=WAIT)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details().startswith("invalid PairHmmRequest.batches: ")
    assert re.search(message, err.value.details()), err.value.details()


def test_bad_stream_chunk_names_the_chunk(stub):
    good = request_for(make_batches(61, 2))
    bad = _mutated("read_del", b"")
    with pytest.raises(grpc.RpcError) as err:
        list(stub.PairHmmStream(iter([good, bad, good]), timeout=WAIT))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "chunk 1: invalid PairHmmRequest.batches: read_del has 0 values" in err.value.details()


def test_client_raises_value_error_for_invalid_argument(server):
    # A server-side rejection reaches Client users as a ValueError subclass.
    with Client(server.address, timeout=WAIT) as c:
        with pytest.raises(InvalidRequestError) as err:
            c._unary(warpdp.PairHmmBatches(**{**make_batches(62, 2).__dict__,
                                               "read_ins": np.zeros(3, np.uint8)}), False, np.empty(0), WAIT)
        assert isinstance(err.value, ValueError) and err.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_over_the_limits_is_resource_exhausted(limited_server):
    channel, stub = stub_for(limited_server)
    with channel:
        too_many_cells = make_batches(63, 1, reads=(100, 100), haps=(4, 4), read_len=(150, 150), hap_len=(400, 400))
        with pytest.raises(grpc.RpcError) as err:
            stub.PairHmm(request_for(too_many_cells), timeout=WAIT)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert f"{too_many_cells.n_cells} cells, over this server's limit of 2000000" in err.value.details()

        too_large = make_batches(64, 1, reads=(1, 1), haps=(1, 1), read_len=(300_000, 300_000), hap_len=(1, 1))
        with pytest.raises(grpc.RpcError) as err:
            stub.PairHmm(request_for(too_large), timeout=WAIT)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "larger than max" in err.value.details()

        # 100 x 400 one-base pairs: a small request whose reply is over the message limit.
        many_pairs = make_batches(65, 1, reads=(100, 100), haps=(400, 400), read_len=(1, 1), hap_len=(1, 1))
        with pytest.raises(grpc.RpcError) as err:
            stub.PairHmm(request_for(many_pairs), timeout=WAIT)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "the reply would hold 40000 pairs" in err.value.details()

        # The server is unaffected.
        fine = make_batches(66, 2)
        reply = stub.PairHmm(request_for(fine), timeout=WAIT)
        np.testing.assert_array_equal(np.frombuffer(reply.log10_likelihoods, "<f8"), local(fine))


def test_unreachable_server_is_unavailable():
    with Client(f"127.0.0.1:{free_port()}", timeout=5) as c:
        with pytest.raises(ServiceError) as err:
            c.pairhmm(make_batches(67, 1))
    assert err.value.code == grpc.StatusCode.UNAVAILABLE


# ---------------------------------------------------------------------------------------
# deadlines, cancellation, shutdown


def test_expired_and_cancelled_calls_never_reach_the_backend(monkeypatch):
    srv = start_server(max_wait_ms=60_000)
    try:
        batcher = srv.batcher
        # A request announced as arriving makes the batcher wait (up to 60 s) for it, so the
        # test's requests are still queued when their callers go.
        batcher.arrive()
        batches = make_batches(70, 2)
        with Client(srv.address) as c:
            with pytest.raises(ServiceError) as err:
                c.pairhmm(batches, timeout=0.3)
        assert err.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert batcher.wait_for(lambda b: b.dropped == 1 and b.queued == 0, WAIT)

        channel, stub = stub_for(srv)
        with channel:
            future = stub.PairHmm.future(request_for(batches), timeout=WAIT)
            assert batcher.wait_for(lambda b: b.queued == 1, WAIT)
            future.cancel()
            assert batcher.wait_for(lambda b: b.dropped == 2 and b.queued == 0, WAIT)
            assert batcher.submissions == 0 and batcher.completed == 0

            # A stream's chunks do not wait for company (each is a submission of its own):
            # the first runs, held here, and the second is queued behind it. Cancelling the
            # stream drops the queued one; the running one finishes and is not answered.
            release = threading.Event()
            original_run = server_module.AlgorithmKernel.run

            def held_run(self, payload, key, cancelled=None):
                assert release.wait(WAIT)
                return original_run(self, payload, key, cancelled)

            monkeypatch.setattr(server_module.AlgorithmKernel, "run", held_run)
            gate = threading.Event()

            def chunks():
                yield request_for(batches)
                yield request_for(batches)
                gate.wait(WAIT)  # keep the request side open until the test is done

            stream = stub.PairHmmStream(chunks(), timeout=WAIT)
            assert batcher.wait_for(lambda b: b.running == 1 and b.queued == 1, WAIT)
            stream.cancel()
            gate.set()
            assert batcher.wait_for(lambda b: b.dropped == 3 and b.queued == 0, WAIT)
            release.set()
            assert batcher.wait_for(lambda b: b.completed == 1 and b.running == 0, WAIT)
        assert batcher.submissions == 1
        assert srv.metrics.sample("warpdp_cells_total", {"algorithm": "pairhmm"}) == batches.n_cells
        assert srv.metrics.sample("warpdp_dropped_requests_total", {"reason": "cancelled"}) == 3
        batcher.depart()
    finally:
        srv.stop()


def test_shutdown_drains_in_flight_calls():
    srv = start_server(max_wait_ms=60_000)
    srv.batcher.arrive()  # the batcher waits for this phantom request: the calls stay queued
    jobs = [make_batches(80 + k, 1 + k) for k in range(6)]
    address = srv.address
    with Client(address, timeout=WAIT) as c, ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(c.pairhmm, job) for job in jobs]
        # All six are in the server, waiting for a batch, when shutdown starts.
        assert srv.batcher.wait_for(lambda b: b.queued == len(jobs), WAIT)
        srv.stop(grace=WAIT)
        for job, future in zip(jobs, futures):
            np.testing.assert_array_equal(future.result(timeout=WAIT), local(job))
    assert srv.batcher.submissions == 1  # drained as one coalesced submission
    with Client(address, timeout=5) as c:
        with pytest.raises(ServiceError) as err:
            c.pairhmm(jobs[0])
    assert err.value.code == grpc.StatusCode.UNAVAILABLE


# ---------------------------------------------------------------------------------------
# batching and concurrency


def test_concurrent_mixed_requests_all_equal_local():
    srv = start_server(max_wait_ms=5)
    sizes = [dict(n_batches=1, reads=(1, 1), haps=(1, 1)),               # one pair
             dict(n_batches=1, reads=(20, 40), haps=(2, 4)),              # a GATK active region
             dict(n_batches=6, reads=(5, 30), haps=(1, 5)),
             dict(n_batches=2, reads=(50, 80), haps=(4, 6), read_len=(100, 150), hap_len=(250, 400))]
    n_threads, per_thread = 32, 5
    jobs = {}
    for t in range(n_threads):
        for k in range(per_thread):
            job = make_batches(1000 + t * per_thread + k, **sizes[(t + k) % len(sizes)])
            double = (t + k) % 7 == 0
            jobs[t, k] = (job, double, local(job, double))
    bad = _mutated("hap_offsets", b"\x01" * 8)
    results: dict = {}
    errors: list = []
    start = threading.Barrier(n_threads)

    def worker(t: int) -> None:
        channel, stub = stub_for(srv)
        with Client(srv.address, timeout=WAIT) as c, channel:
            start.wait(WAIT)
            for k in range(per_thread):
                job, double, _ = jobs[t, k]
                results[t, k] = c.pairhmm(job, double=double)
                if t % 8 == 0 and k == 2:  # bad requests among the good ones
                    try:
                        stub.PairHmm(bad, timeout=WAIT)
                    except grpc.RpcError as exc:
                        errors.append(exc.code())

    try:
        with ThreadPoolExecutor(n_threads) as pool:
            for future in [pool.submit(worker, t) for t in range(n_threads)]:
                future.result(timeout=2 * WAIT)
        assert len(results) == n_threads * per_thread  # none lost
        for key, (job, double, expected) in jobs.items():
            np.testing.assert_array_equal(results[key], expected, err_msg=f"thread {key[0]} request {key[1]}")
        assert errors == [grpc.StatusCode.INVALID_ARGUMENT] * (n_threads // 8)
        batcher = srv.batcher
        assert batcher.completed == n_threads * per_thread and batcher.dropped == 0
        # Concurrent requests were coalesced: fewer backend submissions than requests.
        assert batcher.submissions < n_threads * per_thread
        assert srv.metrics.sample("warpdp_requests_total", {"method": "PairHmm", "code": "INVALID_ARGUMENT"}) == 4
    finally:
        srv.stop()


def test_batching_off_runs_each_request_alone():
    srv = start_server(batching=False)
    jobs = [make_batches(90 + k, 2) for k in range(8)]
    try:
        with Client(srv.address, timeout=WAIT) as c, ThreadPoolExecutor(8) as pool:
            got = list(pool.map(c.pairhmm, jobs))
        for job, values in zip(jobs, got):
            np.testing.assert_array_equal(values, local(job))
        assert srv.batcher.submissions == len(jobs)
        assert srv.metrics.sample("warpdp_batch_requests_count", {"algorithm": "pairhmm"}) == len(jobs)
        assert srv.metrics.sample("warpdp_batch_requests_sum", {"algorithm": "pairhmm"}) == len(jobs)
    finally:
        srv.stop()


class _ListKernel:
    """A fake kernel: payloads are lists of numbers, results are the numbers; 'poison' fails."""

    name, backend = "fake", "cpu"
    max_batch_cells = None  # the batcher's cap

    def __init__(self) -> None:
        self.submissions: list[list] = []

    def merge(self, payloads):
        return [x for p in payloads for x in p]

    def run(self, payload, key, cancelled=None):
        self.submissions.append(list(payload))
        if "poison" in payload:
            raise RuntimeError("poisoned")
        return np.array(payload, dtype=np.float64)


def test_batcher_coalesces_by_key_and_cap_and_isolates_failures():
    kernel = _ListKernel()
    batcher = Batcher(workers=1, batching=True, max_wait_s=60, max_batch_cells=10, metrics=Metrics())
    try:
        batcher.arrive()  # the worker waits for this one, so all five below are queued together
        items = [batcher.submit(kernel, key, payload, cells=cells, n_out=len(payload))
                 for key, payload, cells in [("f", [1, 2], 4), ("d", [3], 1), ("f", [4], 4), ("f", [5, 6], 4),
                                             ("d", [7], 1)]]
        batcher.drain()  # submit now instead of waiting 60 s
        for item in items:
            assert item.event.wait(WAIT)
        # Oldest first; "f" and "d" never mixed; at most 10 cells per submission.
        assert kernel.submissions == [[1, 2, 4], [3, 7], [5, 6]]
        assert [list(item.result) for item in items] == [[1, 2], [3], [4], [5, 6], [7]]
        assert [item.coalesced for item in items] == [2, 2, 2, 1, 2]

    finally:
        batcher.close(WAIT)

    batcher = Batcher(workers=1, batching=True, max_wait_s=60, max_batch_cells=10, metrics=Metrics())
    try:
        batcher.arrive()
        good = batcher.submit(kernel, "f", [8], cells=1, n_out=1)
        poisoned = batcher.submit(kernel, "f", ["poison"], cells=1, n_out=1)
        also_good = batcher.submit(kernel, "f", [9], cells=1, n_out=1, arrived=True)  # the awaited one
        for item in (good, poisoned, also_good):
            assert item.event.wait(WAIT)
        # The coalesced submission failed; each request then ran alone.
        assert kernel.submissions[-4:] == [[8, "poison", 9], [8], ["poison"], [9]]
        assert list(good.result) == [8] and list(also_good.result) == [9]
        assert poisoned.result is None and isinstance(poisoned.error, RuntimeError)
    finally:
        batcher.close(WAIT)


def test_a_kernel_with_its_own_cap_coalesces_only_up_to_it():
    # A GPU server's families left on the CPU cap their own submissions at the CPU's size, while
    # the GPU families coalesce up to the server's cap.
    capped, uncapped = _ListKernel(), _ListKernel()
    capped.max_batch_cells = 4
    batcher = Batcher(workers=1, batching=True, max_wait_s=60, max_batch_cells=10, metrics=Metrics())
    try:
        batcher.arrive()
        items = [batcher.submit(kernel, "k", [value], cells=2, n_out=1)
                 for kernel, value in [(capped, 1), (uncapped, 2), (capped, 3), (uncapped, 4), (capped, 5),
                                       (uncapped, 6)]]
        batcher.drain()
        for item in items:
            assert item.event.wait(WAIT)
        assert capped.submissions == [[1, 3], [5]]
        assert uncapped.submissions == [[2, 4, 6]]
    finally:
        batcher.close(WAIT)


class _GatedKernel(_ListKernel):
    """A _ListKernel whose submissions containing "hold" block until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.started: list[list] = []

    def run(self, payload, key, cancelled=None):
        self.started.append(list(payload))
        if "hold" in payload:
            assert self.release.wait(WAIT)
        return super().run([0 if x == "hold" else x for x in payload], key)


def test_only_large_work_overlaps_a_running_submission():
    # The GPU server's rule (overlap_cells): while one submission runs, a second worker starts
    # only once enough cells are queued; small requests wait and are batched.
    kernel = _GatedKernel()
    batcher = Batcher(workers=2, batching=True, max_wait_s=0, max_batch_cells=100, overlap_cells=10,
                      metrics=Metrics())
    try:
        running = batcher.submit(kernel, "f", ["hold"], cells=50, n_out=1)
        assert batcher.wait_for(lambda b: b.running == 1, WAIT)
        small = [batcher.submit(kernel, "f", [k], cells=1, n_out=1) for k in (1, 2)]
        time.sleep(0.3)  # the idle worker had time to take them, and must not have
        assert kernel.started == [["hold"]] and all(not item.event.is_set() for item in small)
        large = batcher.submit(kernel, "f", [3], cells=20, n_out=1)
        for item in (*small, large):  # 22 cells queued: they run while the first still holds
            assert item.event.wait(WAIT)
        assert kernel.started == [["hold"], [1, 2, 3]] and not running.event.is_set()
        kernel.release.set()
        assert running.event.wait(WAIT) and list(running.result) == [0]
    finally:
        kernel.release.set()
        batcher.close(WAIT)


def test_stream_chunks_run_alone_and_overlap():
    # A streamed job's chunk is a submission of its own: it does not wait for arriving
    # requests, is not coalesced, and may start while another submission runs.
    kernel = _GatedKernel()
    batcher = Batcher(workers=2, batching=True, max_wait_s=60, max_batch_cells=100, overlap_cells=10,
                      metrics=Metrics())
    try:
        batcher.arrive()  # an arriving request would make plain requests wait up to 60 s
        running = batcher.submit(kernel, "f", ["hold"], cells=1, n_out=1, streamed=True)
        assert batcher.wait_for(lambda b: b.running == 1, WAIT)
        chunks = [batcher.submit(kernel, "f", [k], cells=1, n_out=1, streamed=True) for k in (1, 2)]
        for item in chunks:  # 2 cells queued, under overlap_cells, yet they run beside "hold"
            assert item.event.wait(WAIT)
        assert kernel.started == [["hold"], [1], [2]] and not running.event.is_set()
        assert [item.coalesced for item in chunks] == [1, 1]
        kernel.release.set()
        assert running.event.wait(WAIT) and list(running.result) == [0]
    finally:
        kernel.release.set()
        batcher.close(WAIT)


def test_lone_request_is_not_delayed():
    # Nobody else is arriving, so a request does not wait max_wait for company.
    kernel = _ListKernel()
    batcher = Batcher(workers=1, batching=True, max_wait_s=60, max_batch_cells=10, metrics=Metrics())
    try:
        item = batcher.submit(kernel, "f", [1], cells=1, n_out=1)
        assert item.event.wait(WAIT) and list(item.result) == [1]
        assert item.queue_s < 30
    finally:
        batcher.close(WAIT)


# ---------------------------------------------------------------------------------------
# security


def test_bearer_token(tmp_path):
    srv = start_server(tokens=("s3cret-token", "next-token"))
    batches = make_batches(100, 2)
    try:
        for token, code in ((None, grpc.StatusCode.UNAUTHENTICATED), ("wrong", grpc.StatusCode.UNAUTHENTICATED)):
            with Client(srv.address, token=token, timeout=WAIT) as c:
                with pytest.raises(ServiceError) as err:
                    c.pairhmm(batches)
                assert err.value.code == code
                with pytest.raises(ServiceError) as err:
                    c.server_info()
                assert err.value.code == code
        channel, stub = stub_for(srv)
        with channel:  # streams are guarded too
            with pytest.raises(grpc.RpcError) as err:
                list(stub.PairHmmStream(iter([request_for(batches)]), timeout=WAIT))
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "bearer token is required" in err.value.details()
            # Health checks need no token (for load balancers and probes).
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=WAIT)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        for token in ("s3cret-token", "next-token"):
            with Client(srv.address, token=token, timeout=WAIT) as c:
                np.testing.assert_array_equal(c.pairhmm(batches), local(batches))
                assert c.server_info().token_required
        assert srv.metrics.sample("warpdp_requests_total", {"method": "PairHmm", "code": "UNAUTHENTICATED"}) == 2
    finally:
        srv.stop()


def _self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "warpdp test server")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "server.pem", directory / "server.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_tls_with_token(tmp_path):
    pytest.importorskip("cryptography", reason="the cryptography package makes the test certificate")
    cert, key = _self_signed_certificate(tmp_path)
    srv = start_server(tls_cert=cert, tls_key=key, tokens=("tls-token",))
    batches = make_batches(110, 3)
    try:
        with Client(srv.address, tls_ca=cert, token="tls-token", timeout=WAIT) as c:
            np.testing.assert_array_equal(c.pairhmm(batches), local(batches))
        with Client(srv.address, tls_ca=cert.read_bytes(), timeout=WAIT) as c:  # TLS, no token
            with pytest.raises(ServiceError) as err:
                c.pairhmm(batches)
            assert err.value.code == grpc.StatusCode.UNAUTHENTICATED
        with Client(srv.address, token="tls-token", timeout=5) as c:  # plaintext to a TLS port
            with pytest.raises(ServiceError) as err:
                c.pairhmm(batches)
            assert err.value.code == grpc.StatusCode.UNAVAILABLE
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------
# several servers


def test_round_robin_over_two_servers():
    servers = [start_server(), start_server()]
    addresses = [s.address for s in servers]
    job = make_batches(120, 2)
    expected = local(job)

    def served(srv: Server) -> float:
        return srv.metrics.sample("warpdp_requests_total", {"method": "PairHmm", "code": "OK"})

    try:
        with Client(",".join(addresses), timeout=WAIT) as c:
            assert c.target == "ipv4:" + ",".join(addresses)
            c.wait_ready(WAIT)
            # round_robin picks among connected servers; both connect within a few calls.
            for _ in range(200):
                np.testing.assert_array_equal(c.pairhmm(job), expected)
                if all(served(s) >= 1 for s in servers):
                    break
            assert all(served(s) >= 1 for s in servers), [served(s) for s in servers]
            before = [served(s) for s in servers]
            for _ in range(10):
                np.testing.assert_array_equal(c.pairhmm(job), expected)
            assert [served(s) - b for s, b in zip(servers, before)] == [5, 5]  # strictly alternating
    finally:
        for srv in servers:
            srv.stop()


def test_large_job_over_two_servers_streams_to_both():
    servers = [start_server(**LIMITED), start_server(**LIMITED)]
    job = make_batches(130, 60, reads=(5, 30), haps=(1, 6))
    try:
        with Client([s.address for s in servers], timeout=WAIT) as c:
            c.wait_ready(WAIT)
            for _ in range(50):  # until both subchannels are connected
                c._info = None  # ask again: each call goes to the next connected server
                c.server_info()
                if all(s.metrics.sample("warpdp_requests_total", {"method": "ServerInfo", "code": "OK"})
                       for s in servers):
                    break
            np.testing.assert_array_equal(c.pairhmm(job), local(job))
        for srv in servers:
            assert metric_reaches(srv, "warpdp_requests_total", {"method": "PairHmmStream", "code": "OK"}, 1)
    finally:
        for srv in servers:
            srv.stop()


def test_address_lists():
    from warpdp.grpc.client import _target

    assert _target(["127.0.0.1:1"]) == ("127.0.0.1:1", False, None)
    assert _target(["dns:///gpu-hosts:50051"]) == ("dns:///gpu-hosts:50051", True, None)
    assert _target(["127.0.0.1:1", "10.0.0.2:2"]) == ("ipv4:127.0.0.1:1,10.0.0.2:2", True, None)
    assert _target(["[::1]:1", "[::1]:2"]) == ("ipv6:[::1]:1,[::1]:2", True, None)
    assert _target(["localhost:7", "127.0.0.1:8"]) == ("ipv4:127.0.0.1:7,127.0.0.1:8", True, "localhost")
    with pytest.raises(ValueError, match="all IPv4 or all IPv6"):
        _target(["127.0.0.1:1", "[::1]:2"])
    with pytest.raises(ValueError, match="HOST:PORT"):
        _target(["127.0.0.1", "127.0.0.1:2"])
    with pytest.raises(ValueError, match="no server address"):
        Client(" , ")


# ---------------------------------------------------------------------------------------
# `warpdp serve`


def test_serve_options():
    args = parse_serve_args()
    config = config_from_args(args)
    assert (config.host, config.port, config.backend, config.workers) == ("127.0.0.1", 50051, "auto", None)
    assert config.batching and config.max_wait_ms > 0
    args = parse_serve_args("--max-batch-cells", "64M", "--max-request-cells", "2G", "--no-batching", "--max-wait-ms", "0.5")
    config = config_from_args(args)
    assert (config.max_batch_cells, config.max_request_cells, config.batching, config.max_wait_ms) == \
        (64_000_000, 2_000_000_000, False, 0.5)
    assert count("1_000") == 1000
    with pytest.raises(SystemExit):
        parse_serve_args("--workers", "0")
    with pytest.raises(ValueError, match="both a certificate and a key"):
        config_from_args(parse_serve_args("--tls-cert", "x.pem"))


def test_token_file(tmp_path):
    path = tmp_path / "tokens"
    path.write_text("# rotated weekly\nfirst\n\n  second  \n")
    assert config_from_args(parse_serve_args("--token-file", str(path))).tokens == ("first", "second")
    path.write_text("# nothing\n")
    with pytest.raises(ValueError, match="holds no token"):
        config_from_args(parse_serve_args("--token-file", str(path)))


def test_scoring_commands_server_option(server, tmp_path, monkeypatch):
    import argparse

    from warpdp.grpc.cli import add_client_arguments, client_from_args

    parser = argparse.ArgumentParser()
    add_client_arguments(parser)
    assert client_from_args(parser.parse_args([])) is None
    monkeypatch.delenv("WARPDP_TOKEN", raising=False)
    with client_from_args(parser.parse_args(["--server", server.address, "--server-timeout", "30"])) as c:
        batches = make_batches(150, 2)
        np.testing.assert_array_equal(c.pairhmm(batches), local(batches))
        assert c.timeout == 30 and c._metadata == ()
    (tmp_path / "token").write_text("abc\n")
    args = parser.parse_args(["--server", "127.0.0.1:1,127.0.0.1:2", "--server-token-file", str(tmp_path / "token")])
    with client_from_args(args) as c:
        assert c.target == "ipv4:127.0.0.1:1,127.0.0.1:2" and c._metadata == (("authorization", "Bearer abc"),)
    monkeypatch.setenv("WARPDP_TOKEN", "from-env")
    with client_from_args(parser.parse_args(["--server", "127.0.0.1:1"])) as c:
        assert c._metadata == (("authorization", "Bearer from-env"),)


def test_serve_process_logs_serves_and_stops_on_sigterm():
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen([sys.executable, "-m", "warpdp.grpc.cli", "--port", "0", "--backend", "cpu",
                                "--log-every", "2"], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True)
    reader.start()
    log = []
    try:
        while True:
            line = lines.get(timeout=WAIT)
            log.append(line)
            found = re.search(r"listening on (127\.0\.0\.1:\d+) \(plaintext\); backend CPU", line)
            if found:
                break
        batches = make_batches(140, 3)
        with Client(found.group(1), timeout=WAIT) as c:
            for _ in range(2):
                np.testing.assert_array_equal(c.pairhmm(batches), local(batches))
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=WAIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(WAIT)
    while not lines.empty():
        log.append(lines.get())
    text = "".join(log)
    assert "2 requests in" in text  # the --log-every line
    assert "SIGTERM received" in text and "stopped" in text


@pytest.mark.skipif(warpdp.gpu_status("pairhmm")[0], reason="a GPU is usable here, so --backend gpu would start")
def test_serve_refuses_an_unusable_gpu(capsys):
    from warpdp.grpc.cli import run_serve

    assert run_serve(parse_serve_args("--backend", "gpu", "--port", "0")) == 2
    assert "backend='gpu' was requested" in capsys.readouterr().err


def test_pairhmm_request_bytes_is_the_sum_over_batches():
    from warpdp.grpc._algorithms import PAIRHMM

    for seed in range(5):
        job = make_batches(900 + seed, 1 + 7 * seed, reads=(1, 12), haps=(1, 5))
        counted = PAIRHMM.request_bytes(job)
        assert counted == int(_packing.pairhmm_request_bytes_per_batch(job).sum()) + 32
        message = len(PAIRHMM.request(job, False).SerializeToString())
        assert counted <= message <= counted + _packing.REQUEST_FRAMING_BYTES


def test_a_gpu_server_runs_a_family_without_a_gpu_kernel_on_the_cpu() -> None:
    from warpdp.grpc.server import _family_backend

    # a family name with no warpdp.kernels module (align has one since issue 26)
    assert warpdp.plugin.core.backend.has_gpu_kernel("align")
    assert not warpdp.plugin.core.backend.has_gpu_kernel("no_such_family")
    assert _family_backend("gpu", "no_such_family") == "cpu"
    assert _family_backend("cpu", "pairhmm") == "cpu"
