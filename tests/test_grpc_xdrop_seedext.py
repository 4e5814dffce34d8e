"""The Xdrop / SeedExtend RPCs, the Client's xdrop / seed_extend and the CLI's --server path:
the same results as local scoring (and the shared reference outputs), INVALID_ARGUMENT naming
the field, limits, splitting and streaming, batching by parameters, cancellation, concurrency."""
from __future__ import annotations

import re
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest

import warpdp
from helpers.data import shared_file
from helpers.grpc_server import WAIT, client, metric_reaches, server, start_server, stub, stub_for  # noqa: F401 (fixtures)
from helpers.seedext import assert_seedext_equal, make_seed_pairs
from helpers.xdrop import K, assert_xdrop_equal, local_xdrop, make_xdrop_pairs
from warpdp.cli import main
from warpdp.grpc import Client, Server, ServerConfig
from warpdp.grpc import warpdp_pb2, warpdp_pb2_grpc
from warpdp.grpc._algorithms import SEEDEXT, XDROP, XdropKey
from warpdp.plugin.xdrop_io import read_xdrop_results

ALT = dict(a=2, b=5, o_del=5, e_del=2, o_ins=7, e_ins=1, w=30, end_bonus=0, zdrop=50)
LIMITED = dict(max_request_cells=2_000_000, max_message_mb=0.25)


# ---------------------------------------------------------------------------------------
# helpers


@pytest.fixture(scope="module")
def limited_server():
    srv = start_server(**LIMITED)
    yield srv
    srv.stop()


# ---------------------------------------------------------------------------------------
# results equal local scoring and the reference outputs


@pytest.mark.parametrize("name, x", [("logan-example", 5), ("logan-example", 21), ("logan-example", 100),
                                     ("synthetic-300", 10), ("synthetic-300", 50), ("synthetic-300", 200)])
def test_xdrop_reference_data(client, name, x):
    pairs = warpdp.read_logan_text(shared_file("xdrop", f"{name}.tsv"), k=K)  # strand c as LOGAN does
    got = client.xdrop(pairs, k=K, x=x)
    assert_xdrop_equal(got, local_xdrop(pairs, k=K, x=x))
    np.testing.assert_array_equal(got.as_array(), read_xdrop_results(shared_file("xdrop", f"{name}.x{x}.seqan.out")))


@pytest.mark.parametrize("params", [dict(x=30), dict(x=0, report="best"), dict(x=40, match=2, mismatch=-3, gap=-5),
                                    dict(x=25, match=1, mismatch=-4, gap=-1, report="best")])
def test_xdrop_generated_pairs_and_parameters(client, params):
    pairs = make_xdrop_pairs(1, 120)
    assert_xdrop_equal(client.xdrop(pairs, k=K, **params), local_xdrop(pairs, k=K, **params))


@pytest.mark.parametrize("params, reference", [({}, "bwamem-like-500.ksw_extend2.out"),
                                               (ALT, "bwamem-like-500.alt.ksw_extend2.out")])
def test_seedext_reference_data(client, params, reference):
    pairs = warpdp.read_seedext_tsv(shared_file("seedext", "bwamem-like-500.tsv"))
    got = client.seed_extend(pairs, **params)
    assert_seedext_equal(got, warpdp.seed_extend(pairs, backend="cpu", **params))
    expected = np.loadtxt(shared_file("seedext", reference), dtype=np.int64, ndmin=2)
    np.testing.assert_array_equal(got.table, expected)


def test_seedext_generated_pairs(client):
    pairs = make_seed_pairs(2, 300)
    params = warpdp.SeedExtParams(a=1, b=4, w=20, zdrop=40, end_bonus=3)
    assert_seedext_equal(client.seed_extend_with(pairs, params),
                         warpdp.seed_extend_with(pairs, params, backend="cpu"))


def test_empty_jobs_make_no_call(server, client):
    before = server.batcher.submissions
    empty = client.xdrop(make_xdrop_pairs(3, 0), k=K, x=10)
    assert len(empty) == 0 and empty.score.dtype == np.int64
    assert client.seed_extend(make_seed_pairs(3, 0)).table.shape == (0, 6)
    assert server.batcher.submissions == before


def test_unset_parameters_take_the_local_defaults(stub):
    pairs = make_xdrop_pairs(4, 20)
    request = XDROP.request(pairs, XdropKey.make(k=K, x=20))
    for name in ("match", "mismatch", "gap"):
        request.ClearField(name)
    reply = stub.Xdrop(request, timeout=WAIT)
    np.testing.assert_array_equal(np.frombuffer(reply.score, "<i8"), local_xdrop(pairs, k=K, x=20).score)
    assert reply.n_pairs == 20 and reply.stats.backend == "cpu" and reply.stats.cells > 0

    seeds = make_seed_pairs(4, 20)
    request = warpdp_pb2.SeedExtendRequest(pairs=SEEDEXT.request(seeds, warpdp.SeedExtParams()).pairs)
    reply = stub.SeedExtend(request, timeout=WAIT)
    expected = warpdp.seed_extend(seeds, backend="cpu")
    for c, name in enumerate(SEEDEXT.columns):
        np.testing.assert_array_equal(np.frombuffer(getattr(reply, name), "<i8"), expected.table[:, c])


def test_streams_answer_each_chunk_in_order(stub):
    jobs = [make_xdrop_pairs(5 + i, n) for i, n in enumerate((10, 0, 25))]
    key = XdropKey.make(k=K, x=15, report="best")
    replies = list(stub.XdropStream(iter([XDROP.request(j, key) for j in jobs]), timeout=WAIT))
    assert [r.chunk for r in replies] == [0, 1, 2] and [r.n_pairs for r in replies] == [10, 0, 25]
    for job, reply in zip(jobs, replies):
        expected = local_xdrop(job, k=K, x=15, report="best")
        np.testing.assert_array_equal(np.frombuffer(reply.end_v, "<i8"), expected.end_v)

    seeds = [make_seed_pairs(8 + i, n) for i, n in enumerate((7, 12))]
    params = warpdp.SeedExtParams(**ALT)
    replies = list(stub.SeedExtendStream(iter([SEEDEXT.request(s, params) for s in seeds]), timeout=WAIT))
    assert [r.chunk for r in replies] == [0, 1]
    for job, reply in zip(seeds, replies):
        np.testing.assert_array_equal(np.frombuffer(reply.gscore, "<i8"),
                                      warpdp.seed_extend_with(job, params, backend="cpu").gscore)


# ---------------------------------------------------------------------------------------
# errors


def _i64(*values: int) -> bytes:
    return np.array(values, dtype="<i8").tobytes()


def _xdrop_request(**changes) -> warpdp_pb2.XdropRequest:
    pairs = warpdp.pack_xdrop_pairs([("ACGTACGTACGTACGTACGTAC", 2, "ACGTACGTACGTACGTACGTAC", 2),
                                     ("TTTTACGTACGTACGTACGTACGTT", 4, "ACGTACGTACGTACGTACG", 0)])
    request = XDROP.request(pairs, XdropKey.make(k=K, x=10))
    for name, value in changes.items():
        if name in request.pairs.DESCRIPTOR.fields_by_name:
            setattr(request.pairs, name, value)
        elif value is None:
            request.ClearField(name)
        else:
            setattr(request, name, value)
    return request


def _seed_request(**changes) -> warpdp_pb2.SeedExtendRequest:
    request = SEEDEXT.request(warpdp.pack_seed_pairs([("ACGTAC", "ACGTACGG", 20), ("ACGT", "ACGA", 7)]),
                              warpdp.SeedExtParams())
    for name, value in changes.items():
        setattr(request.pairs if name in request.pairs.DESCRIPTOR.fields_by_name else request, name, value)
    return request


BAD_XDROP = [
    ("x missing", dict(x=None), "invalid XdropRequest: x is required"),
    ("k missing", dict(k=None), "invalid XdropRequest: k is required"),
    ("k zero", dict(k=0), r"invalid XdropRequest: k \(the seed length\) must be at least 1, not 0"),
    ("negative x", dict(x=-1), r"invalid XdropRequest: x \(the X-drop\) must be within"),
    ("match zero", dict(match=0), "invalid XdropRequest: match must be positive, not 0"),
    ("positive gap", dict(gap=2), "invalid XdropRequest: gap must be negative, not 2"),
    ("unknown report", dict(report=7), "invalid XdropRequest: report must be XDROP_REPORT_LONGEST"),
    ("offsets not int64", dict(h_offsets=_i64(0, 22, 47) + b"\x00"),
     "invalid XdropRequest.pairs: h_offsets has 25 bytes, not a multiple of 8"),
    ("offset past the end", dict(v_offsets=_i64(0, 22, 99)), "invalid XdropRequest.pairs: v_offsets must end at 41"),
    ("positions missing", dict(v_pos=_i64(2)), "invalid XdropRequest.pairs: v_pos has 1 entries but h_pos has 2"),
    ("seed outside H", dict(h_pos=_i64(2, 9)),
     r"invalid XdropRequest.pairs: seed of pair 1 lies outside H: h_pos\[1\] = 9"),
    ("negative seed", dict(v_pos=_i64(-1, 0)), r"invalid XdropRequest.pairs: seed of pair 0 lies outside .*v_pos\[0\]"),
    ("bad base", dict(h_bases=b"ACGTACGTACGTACGTACGTAC" + b"TTTTACGTACXTACGTACGTACGTT"),
     "invalid XdropRequest.pairs: h_bases: pair 1 has 'X' at position 10"),
    ("nothing at all", dict(h_bases=b"", h_offsets=b"", v_bases=b"", v_offsets=b"", h_pos=b"", v_pos=b""),
     "invalid XdropRequest.pairs: h_offsets must have n_pairs \\+ 1 = 1 entries, not 0"),
]


@pytest.mark.parametrize("case, changes, message", BAD_XDROP, ids=[c[0] for c in BAD_XDROP])
def test_bad_xdrop_input_is_invalid_argument(stub, case, changes, message):
    with pytest.raises(grpc.RpcError) as err:
        stub.Xdrop(_xdrop_request(**changes), timeout=WAIT)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert re.match(message, err.value.details()), err.value.details()


BAD_SEEDEXT = [
    ("e_del zero", dict(e_del=0), "invalid SeedExtendRequest: e_del must be within 1..16383"),
    ("a too large", dict(a=300), "invalid SeedExtendRequest: a must be within 0..127"),
    ("negative w", dict(w=-1), "invalid SeedExtendRequest: w must be within"),
    ("negative h0", dict(h0=_i64(20, -3)), "invalid SeedExtendRequest.pairs: h0 must be >= 0"),
    ("h0 not int64", dict(h0=b"\x01\x02"), "invalid SeedExtendRequest.pairs: h0 has 2 bytes, not a multiple of 8"),
    ("query offsets short", dict(query_offsets=_i64(0, 6)),
     "invalid SeedExtendRequest.pairs: query_offsets has 2 entries but h0 has 2 pairs"),
    ("decreasing offsets", dict(target_offsets=_i64(0, 13, 12)),
     "invalid SeedExtendRequest.pairs: target_offsets must not decrease"),
    ("score out of range", dict(h0=_i64(2**30, 1)), "invalid SeedExtendRequest.pairs: pair 0: h0 \\+ a \\* min"),
]


@pytest.mark.parametrize("case, changes, message", BAD_SEEDEXT, ids=[c[0] for c in BAD_SEEDEXT])
def test_bad_seedext_input_is_invalid_argument(stub, case, changes, message):
    with pytest.raises(grpc.RpcError) as err:
        stub.SeedExtend(_seed_request(**changes), timeout=WAIT)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert re.match(message, err.value.details()), err.value.details()


def test_bad_stream_chunk_names_the_chunk(stub):
    good, bad = _xdrop_request(), _xdrop_request(gap=0)
    with pytest.raises(grpc.RpcError) as err:
        list(stub.XdropStream(iter([good, good, bad]), timeout=WAIT))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == "chunk 2: invalid XdropRequest: gap must be negative, not 0"
    with pytest.raises(grpc.RpcError) as err:
        list(stub.SeedExtendStream(iter([_seed_request(h0=b"\x01")]), timeout=WAIT))
    assert err.value.details().startswith("chunk 0: invalid SeedExtendRequest.pairs: h0 has 1 bytes")


def test_client_checks_input_like_local_scoring(client):
    pairs = make_xdrop_pairs(10, 5)
    for kwargs, error in [(dict(k=0, x=5), ValueError), (dict(k=K, x=5, report="widest"), ValueError),
                          (dict(k=K, x=5, match=1.5), TypeError), (dict(k=10**6, x=5), ValueError)]:
        with pytest.raises(error) as local_error:
            warpdp.xdrop(pairs, backend="cpu", **kwargs)
        with pytest.raises(error) as remote_error:
            client.xdrop(pairs, **kwargs)
        assert str(remote_error.value) == str(local_error.value)
    with pytest.raises(TypeError, match="pairs must be XdropPairs"):
        client.xdrop(make_seed_pairs(10, 2), k=K, x=5)
    with pytest.raises(ValueError, match="zdrop must be within"):
        client.seed_extend(make_seed_pairs(10, 2), zdrop=-1)
    with pytest.raises(TypeError, match="params must be SeedExtParams"):
        client.seed_extend_with(make_seed_pairs(10, 2), {"a": 1})


def test_over_the_limits_is_resource_exhausted(limited_server):
    channel, stub = stub_for(limited_server)
    with channel:
        pairs = make_xdrop_pairs(11, 40, length=(400, 500))
        key = XdropKey.make(k=K, x=200)
        cells = XDROP.cells(pairs, key)
        assert cells > LIMITED["max_request_cells"]
        with pytest.raises(grpc.RpcError) as err:
            stub.Xdrop(XDROP.request(pairs, key), timeout=WAIT)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert f"{cells} cells, over this server's limit of 2000000" in err.value.details()
        assert "or use XdropStream" in err.value.details()

        many = warpdp.pack_seed_pairs([("A", "A", 1)] * 6000)  # a small request, a reply over 0.25 MiB
        with pytest.raises(grpc.RpcError) as err:
            stub.SeedExtend(SEEDEXT.request(many, warpdp.SeedExtParams()), timeout=WAIT)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "the reply would hold 6000 pairs (288000 bytes)" in err.value.details()

    with pytest.raises(ValueError, match="pair 1 alone"):  # pair 0 has empty flanks
        XDROP.plan(make_xdrop_pairs(12, 2, length=(3000, 3000)), XdropKey.make(k=K, x=5000), 2_000_000, 1 << 20)


def test_large_jobs_are_split_and_streamed(limited_server):
    pairs = make_xdrop_pairs(13, 200, length=(800, 1200))
    key = XdropKey.make(k=K, x=50)
    chunks = XDROP.plan(pairs, key, LIMITED["max_request_cells"], int(LIMITED["max_message_mb"] * 2**20))
    assert len(chunks) > 5
    seeds = make_seed_pairs(14, 1500, query=(100, 250))
    assert len(SEEDEXT.plan(seeds, warpdp.SeedExtParams(), LIMITED["max_request_cells"], 1 << 20)) > 5
    with Client(limited_server.address, timeout=WAIT) as c:
        assert_xdrop_equal(c.xdrop(pairs, k=K, x=50), local_xdrop(pairs, k=K, x=50))
        assert_seedext_equal(c.seed_extend(seeds), warpdp.seed_extend(seeds, backend="cpu"))
    metrics = limited_server.metrics
    for method in ("XdropStream", "SeedExtendStream"):
        assert metric_reaches(limited_server, "warpdp_requests_total", {"method": method, "code": "OK"}, 1)
    assert metrics.sample("warpdp_pairs_total", {"algorithm": "xdrop"}) == pairs.n_pairs
    assert metrics.sample("warpdp_pairs_total", {"algorithm": "seedext"}) == seeds.n_pairs


# ---------------------------------------------------------------------------------------
# batching by parameters, cancellation, concurrency


def test_requests_coalesce_only_with_equal_parameters_and_cancelled_ones_never_run():
    srv = start_server(max_wait_ms=60_000)
    try:
        batcher = srv.batcher
        batcher.arrive()  # a phantom arrival: the batcher waits (up to 60 s) so the requests below queue up
        channel, stub = stub_for(srv)
        with channel:
            # Cancelled while queued: dropped, never run.
            future = stub.Xdrop.future(_xdrop_request(), timeout=WAIT)
            assert batcher.wait_for(lambda b: b.queued == 1, WAIT)
            future.cancel()
            assert batcher.wait_for(lambda b: b.dropped == 1 and b.queued == 0, WAIT)
            assert batcher.submissions == 0
            # A stream's chunk is a submission of its own: it does not wait for the arrival.
            gate = threading.Event()

            def chunks():
                yield _seed_request()
                gate.wait(WAIT)  # keep the request side open

            stream = stub.SeedExtendStream(chunks(), timeout=WAIT)
            first = next(stream)
            assert first.chunk == 0 and first.stats.coalesced_requests == 1
            stream.cancel()
            gate.set()
            assert batcher.wait_for(lambda b: b.submissions == 1 and b.completed == 1 and b.queued == 0, WAIT)

            jobs = [("x10", stub.Xdrop, _xdrop_request(x=10)) for _ in range(3)]
            jobs += [("x50", stub.Xdrop, _xdrop_request(x=50)) for _ in range(2)]
            jobs += [("best", stub.Xdrop, _xdrop_request(x=10, report=warpdp_pb2.XDROP_REPORT_BEST))]
            jobs += [("seed", stub.SeedExtend, _seed_request()) for _ in range(2)]
            jobs += [("seed-w", stub.SeedExtend, _seed_request(w=5))]
            futures = [(group, call.future(request, timeout=WAIT)) for group, call, request in jobs]
            assert batcher.wait_for(lambda b: b.queued == len(jobs), WAIT)
            batcher.drain()  # submit now instead of waiting 60 s
            replies = [(group, future.result(timeout=WAIT)) for group, future in futures]
        sizes = {"x10": 3, "x50": 2, "best": 1, "seed": 2, "seed-w": 1}
        assert [r.stats.coalesced_requests for _, r in replies] == [sizes[group] for group, _ in replies]
        assert batcher.submissions == 1 + len(sizes)
        for group, reply in replies:  # every caller got its own results
            if group.startswith("seed"):
                params = warpdp.SeedExtParams(w=5) if group == "seed-w" else warpdp.SeedExtParams()
                expected = warpdp.seed_extend_with(SEEDEXT.decode(_seed_request()).payload, params, backend="cpu")
                np.testing.assert_array_equal(np.frombuffer(reply.score, "<i8"), expected.score)
            else:
                x, report = (50, "longest") if group == "x50" else (10, "best" if group == "best" else "longest")
                expected = local_xdrop(XDROP.decode(_xdrop_request()).payload, k=K, x=x, report=report)
                np.testing.assert_array_equal(np.frombuffer(reply.end_h, "<i8"), expected.end_h)
        assert srv.metrics.sample("warpdp_dropped_requests_total", {"reason": "cancelled"}) == 1
        batcher.depart()
    finally:
        srv.stop()


def test_concurrent_mixed_algorithms_all_equal_local():
    srv = start_server(max_wait_ms=5)
    n_threads, per_thread = 12, 4
    tiny = warpdp.read_pairhmm_text(shared_file("pairhmm", "tiny.in"))
    jobs = {}
    for t in range(n_threads):
        for k in range(per_thread):
            seed = 100 + t * per_thread + k
            kind = (t + k) % 3
            if kind == 0:
                batches = tiny
                jobs[t, k] = ("pairhmm", batches, {}, warpdp.pairhmm(batches, backend="cpu"))
            elif kind == 1:
                pairs = make_xdrop_pairs(seed, 30)
                params = dict(x=(10, 60)[k % 2], report=("longest", "best")[t % 2])
                jobs[t, k] = ("xdrop", pairs, params, local_xdrop(pairs, k=K, **params))
            else:
                pairs = make_seed_pairs(seed, 40)
                params = ALT if k % 2 else {}
                jobs[t, k] = ("seed_extend", pairs, params, warpdp.seed_extend(pairs, backend="cpu", **params))
    results: dict = {}
    start = threading.Barrier(n_threads)

    def worker(t: int) -> None:
        with Client(srv.address, timeout=WAIT) as c:
            start.wait(WAIT)
            for k in range(per_thread):
                method, payload, params, _ = jobs[t, k]
                if method == "xdrop":
                    params = dict(params, k=K)
                results[t, k] = getattr(c, method)(payload, **params)

    try:
        with ThreadPoolExecutor(n_threads) as pool:
            for future in [pool.submit(worker, t) for t in range(n_threads)]:
                future.result(timeout=2 * WAIT)
        for key, (method, _, _, expected) in jobs.items():
            got = results[key]
            if method == "pairhmm":
                np.testing.assert_array_equal(got, expected)
            elif method == "xdrop":
                assert_xdrop_equal(got, expected)
            else:
                assert_seedext_equal(got, expected)
        assert srv.batcher.completed == len(jobs) and srv.batcher.dropped == 0
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------
# CLI


def test_cli_server_option(server, tmp_path):
    address = ["--server", server.address, "--server-timeout", str(WAIT)]
    logan = str(shared_file("xdrop", "logan-example.tsv"))
    out = tmp_path / "xdrop.out"
    assert main(["xdrop", logan, "-k", str(K), "-x", "21", "-o", str(out), *address]) == 0
    assert out.read_text() == shared_file("xdrop", "logan-example.x21.seqan.out").read_text()
    best, local_best = tmp_path / "best.out", tmp_path / "local-best.out"
    options = ["-k", str(K), "-x", "30", "--report", "best", "--match", "2", "--gap", "-3"]
    assert main(["xdrop", logan, *options, "-o", str(best), *address]) == 0
    assert main(["xdrop", logan, *options, "-o", str(local_best), "--backend", "cpu"]) == 0
    assert best.read_text() == local_best.read_text()

    tsv = str(shared_file("seedext", "bwamem-like-500.tsv"))
    out = tmp_path / "seedext.out"
    assert main(["seedext", tsv, "-o", str(out), *address]) == 0
    assert out.read_text() == shared_file("seedext", "bwamem-like-500.ksw_extend2.out").read_text()
    alt = ["-a", "2", "-b", "5", "--o-del", "5", "--e-del", "2", "--o-ins", "7", "--e-ins", "1", "-w", "30",
           "--end-bonus", "0", "--zdrop", "50"]
    assert main(["seedext", tsv, *alt, "-o", str(out), *address]) == 0
    assert out.read_text() == shared_file("seedext", "bwamem-like-500.alt.ksw_extend2.out").read_text()


def test_cli_server_errors(capsys, tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        free_port = sock.getsockname()[1]
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("ACGTACGTACGTACGTACGT\t0\tACGTACGTACGTACGTACGT\t0\tn\n")
    assert main(["xdrop", str(pairs), "-k", str(K), "-x", "5", "--server", f"127.0.0.1:{free_port}",
                 "--server-timeout", "5"]) == 2
    assert "UNAVAILABLE" in capsys.readouterr().err
