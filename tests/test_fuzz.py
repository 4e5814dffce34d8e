"""Hardening against outside integers and bytes (issue #23, part 1).

In-process: hypothesis drives every family's API with arbitrary integers (around 0, 2^31, 2^32,
2^62, 2^63 and beyond int64), arrays, offsets and bytes; each call returns or raises
ValueError/TypeError, nothing else. Over gRPC: mutated serialized requests and messages with
extreme integer fields (benchmarks/fuzz_requests.py, shared with benchmarks/fuzz_server.py)
get OK, INVALID_ARGUMENT or RESOURCE_EXHAUSTED (FAILED_PRECONDITION for a shared file, which
this server does not take), and the server still answers correctly afterwards. Plus the
issue's reproducers as plain regression tests.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import io
import sys
from pathlib import Path

import grpc
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import warpdp
from helpers.grpc_server import WAIT, start_server
from warpdp.cli import main as cli_main
from warpdp.grpc import ServerConfig
from warpdp.grpc.cli import count
from warpdp.grpc._algorithms import XDROP, XdropKey
from warpdp.plugin.pairhmm import PairHmmBatches
from warpdp.plugin.seedext import SeedExtPairs
from warpdp.plugin.xdrop import XdropPairs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fuzz_requests  # noqa: E402  (benchmarks/, shared with fuzz_server.py)

INT64_MAX = 2**63 - 1
FUZZ = settings(max_examples=250, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Any integer, weighted towards the edges of int32 / uint32 / int64 and small values.
edge_ints = st.one_of(
    st.sampled_from(fuzz_requests.EXTREME_INTS),
    st.integers(-3, 40),
    st.integers(-2**64, 2**64),
)


def rarely(draw) -> bool:
    """True for about one draw in four: most calls keep valid values, to reach the kernels."""
    return draw(st.integers(0, 3)) == 0


def perturbed(draw, values: list[int]) -> list[int]:
    """The values, sometimes with one of them (or all) replaced by edge values."""
    values = list(values)
    if values and rarely(draw):
        values[draw(st.integers(0, len(values) - 1))] = draw(edge_ints)
    if draw(st.integers(0, 9)) == 0:
        values = draw(st.lists(edge_ints, max_size=4))
    return values


def offsets_of_lengths(lengths: list[int]) -> list[int]:
    return [0, *np.cumsum(lengths, dtype=np.int64).tolist()]


@st.composite
def offsets_for(draw, n_items: int, total: int) -> list[int]:
    """Offsets of n_items items over `total` entries, usually consistent, sometimes perturbed."""
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=max(n_items - 1, 0), max_size=max(n_items - 1, 0))))
    return perturbed(draw, [0, *cuts, total] if n_items else [0])


def maybe_edge(default: object) -> st.SearchStrategy:
    """The default value mostly, else an edge integer."""
    return st.integers(0, 4).flatmap(lambda i: edge_ints if i == 0 else st.just(default))


def per_pair(draw, n: int, usual: st.SearchStrategy[int]) -> list[int]:
    return perturbed(draw, draw(st.lists(usual, min_size=n, max_size=n)))


def returns_or_refuses(call) -> None:
    """The call returns, or raises ValueError/TypeError (nothing else: no OverflowError,
    IndexError, SystemError; a crash would end the test process)."""
    try:
        call()
    except (ValueError, TypeError) as error:
        event(f"refused: {type(error).__name__}")
    else:
        event("returned")


# ---------------------------------------------------------------------------------------
# in-process API, every family


@FUZZ
@given(data=st.data())
def test_xdrop_api_takes_any_integers(data) -> None:
    n = data.draw(st.integers(0, 3))
    h_lengths, v_lengths = (data.draw(st.lists(st.integers(4, 12), min_size=n, max_size=n)) for _ in range(2))
    h, v = (data.draw(st.binary(min_size=sum(lengths), max_size=sum(lengths))) for lengths in (h_lengths, v_lengths))
    if not rarely(data.draw):  # mostly real bases, so calls get past the base check too
        h, v = bytes(b"ACGTN"[b % 5] for b in h), bytes(b"ACGTN"[b % 5] for b in v)
    arrays = dict(h_bases=h, v_bases=v, h_offsets=perturbed(data.draw, offsets_of_lengths(h_lengths)),
                  v_offsets=perturbed(data.draw, offsets_of_lengths(v_lengths)),
                  h_pos=per_pair(data.draw, n, st.integers(0, 3)), v_pos=per_pair(data.draw, n, st.integers(0, 3)))
    params = {name: data.draw(maybe_edge(default))
              for name, default in (("k", 1), ("x", 5), ("match", 1), ("mismatch", -1), ("gap", -1))}
    threads = data.draw(maybe_edge(1))
    report = data.draw(st.sampled_from(("longest", "best")))

    def call() -> None:
        pairs = XdropPairs.from_arrays(**arrays)
        warpdp.xdrop(pairs, **params, report=report, backend="cpu", threads=threads)

    returns_or_refuses(call)
    returns_or_refuses(lambda: warpdp.xdrop_pair(h, data.draw(edge_ints), v, data.draw(edge_ints),
                                                 k=params["k"], x=5, backend="cpu"))


@FUZZ
@given(data=st.data())
def test_seed_extend_api_takes_any_integers(data) -> None:
    n = data.draw(st.integers(0, 3))
    query, target = data.draw(st.binary(max_size=30)), data.draw(st.binary(max_size=40))
    arrays = dict(query=query, target=target, query_offsets=data.draw(offsets_for(n, len(query))),
                  target_offsets=data.draw(offsets_for(n, len(target))), h0=per_pair(data.draw, n, st.integers(0, 50)))
    defaults = dict(a=1, b=4, o_del=6, e_del=1, o_ins=6, e_ins=1, w=100, end_bonus=5, zdrop=100)
    params = {name: data.draw(st.one_of(st.just(default), edge_ints) if rarely(data.draw) else st.just(default))
              for name, default in defaults.items()}
    threads = data.draw(maybe_edge(1))

    def call() -> None:
        pairs = SeedExtPairs.from_arrays(**arrays)
        warpdp.seed_extend(pairs, **params, backend="cpu", threads=threads)

    returns_or_refuses(call)
    returns_or_refuses(lambda: warpdp.pack_seed_pairs([(query, target, data.draw(edge_ints))]))


@FUZZ
@given(data=st.data())
def test_pairhmm_api_takes_any_integers(data) -> None:
    read_lengths = data.draw(st.lists(st.integers(1, 6), max_size=3))
    hap_lengths = data.draw(st.lists(st.integers(1, 8), max_size=3))
    n_batches = data.draw(st.integers(1, 2))
    read_bases, hap_bases = (bytes(b"ACGT"[b % 4] for b in data.draw(st.binary(min_size=n, max_size=n)))
                             for n in (sum(read_lengths), sum(hap_lengths)))
    quals = [data.draw(st.binary(min_size=len(read_bases), max_size=len(read_bases))) for _ in range(4)]
    if rarely(data.draw):
        quals[data.draw(st.integers(0, 3))] = data.draw(st.binary(max_size=20))
    arrays = dict(read_bases=read_bases, read_quals=quals[0], read_ins=quals[1], read_del=quals[2], read_gcp=quals[3],
                  hap_bases=hap_bases, read_offsets=perturbed(data.draw, offsets_of_lengths(read_lengths)),
                  hap_offsets=perturbed(data.draw, offsets_of_lengths(hap_lengths)),
                  batch_reads=data.draw(offsets_for(n_batches, len(read_lengths))),
                  batch_haps=data.draw(offsets_for(n_batches, len(hap_lengths))))
    threads = data.draw(maybe_edge(1))
    double = data.draw(st.booleans())

    def call() -> None:
        batches = PairHmmBatches.from_arrays(**arrays)
        warpdp.pairhmm(batches, backend="cpu", threads=threads, double=double)

    returns_or_refuses(call)


# ---------------------------------------------------------------------------------------
# the reproducers, in-process


def seed_at(h_pos: int) -> XdropPairs:
    return XdropPairs.from_arrays(h_bases=b"ACGTACGTAC", h_offsets=[0, 10], v_bases=b"ACGTACGTAC",
                                  v_offsets=[0, 10], h_pos=[h_pos], v_pos=[0])


def test_xdrop_seed_near_int64_max_is_refused_naming_h_pos() -> None:
    with pytest.raises(ValueError, match=r"h_pos\[0\] = 9223372036854775807 with k = 1"):
        warpdp.xdrop(seed_at(INT64_MAX), k=1, x=5, backend="cpu")


def test_xdrop_huge_k_is_refused_naming_k() -> None:
    with pytest.raises(ValueError, match="k .*must be at most 2147483647"):
        warpdp.xdrop(seed_at(1), k=INT64_MAX, x=5, backend="cpu")


def test_threads_beyond_any_machine_are_a_value_error_naming_threads() -> None:
    for call in (lambda: warpdp.xdrop(seed_at(1), k=2, x=5, backend="cpu", threads=10**12),
                 lambda: warpdp.seed_extend(warpdp.pack_seed_pairs([("ACGT", "ACGT", 5)]), backend="cpu",
                                            threads=2**31),
                 lambda: warpdp.score_reads([warpdp.PairHmmRead("ACGT", "IIII")], ["ACGT"], backend="cpu",
                                            threads=2**64)):
        with pytest.raises(ValueError, match="threads must be at most"):
            call()


def test_the_c_drivers_refuse_what_the_plugin_layer_would() -> None:
    """Arrays handed to the CPU module directly (the plugin layer's checks skipped): the C
    driver names the field instead of reading outside the buffers."""
    from warpdp.cython_cpu import xdrop as cpu_xdrop
    from warpdp.plugin.xdrop import XdropParams, XdropResults

    pairs = XdropPairs(h_bases=np.frombuffer(b"ACGT", np.uint8), h_offsets=np.array([0, 4]),
                       v_bases=np.frombuffer(b"ACGT", np.uint8), v_offsets=np.array([0, 4]),
                       h_pos=np.array([INT64_MAX]), v_pos=np.array([0]))
    out, params = XdropResults.empty(1), XdropParams(k=1, x=5)
    with pytest.raises(ValueError, match=r"h_pos is out of range \(pair 0\)"):
        cpu_xdrop.run(pairs, params, out, threads=1)
    wide = dataclasses.replace(pairs, h_pos=np.array([0]), v_offsets=np.array([0, 2**40]))
    with pytest.raises(ValueError, match=r"v_offsets is out of range \(pair 0\)"):
        cpu_xdrop.run(wide, params, out, threads=1)


def test_cli_threads_beyond_any_machine_exit_2_naming_threads(monkeypatch, capsys) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("ACGTACGTAC\tACGTACGTACGG\t20\n"))
    assert cli_main(["seedext", "-", "--backend", "cpu", "--threads", str(10**12)]) == 2
    assert "threads must be at most" in capsys.readouterr().err


@pytest.mark.parametrize("setting", ["threads", "workers", "port", "metrics_port"])
@pytest.mark.parametrize("value", [10**12, -1])
def test_server_settings_out_of_range_name_the_setting(setting, value) -> None:
    with pytest.raises(ValueError, match=f"^{setting} must be"):
        ServerConfig(**{setting: value}).check()


@pytest.mark.parametrize("text", ["inf", "nan", "1e400", "-3", "0.5"])
def test_serve_counts_refuse_non_finite_and_fractional_values(text) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        count(text)


# ---------------------------------------------------------------------------------------
# over gRPC


@pytest.fixture(scope="module")
def fuzz_server():
    server = start_server(shared_files=False)
    channel = grpc.insecure_channel(server.address, options=fuzz_requests.channel_options())
    yield server, fuzz_requests.RawCaller(channel), channel
    channel.close()
    server.stop()


def xdrop_request(h_pos: int, k: int) -> bytes:
    request = XDROP.request(seed_at(0), XdropKey.make(k=1, x=5))
    request.pairs.h_pos = np.array([h_pos], dtype="<i8").tobytes()
    request.k = k
    return request.SerializeToString()


@pytest.mark.parametrize("h_pos, k, field", [(INT64_MAX, 1, "h_pos"), (1, INT64_MAX, "k"), (-1, 1, "h_pos")])
@pytest.mark.parametrize("streamed", [False, True])
def test_xdrop_reproducers_over_grpc(fuzz_server, h_pos, k, field, streamed) -> None:
    _, caller, _ = fuzz_server
    case = fuzz_requests.Case("Xdrop", streamed, (xdrop_request(h_pos, k),), "extreme")
    code, details = caller.call(case, WAIT)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in details
    assert caller.answers_correctly(WAIT)


@pytest.mark.parametrize("method", fuzz_requests.METHODS)
@pytest.mark.parametrize("streamed", [False, True])
def test_corrupt_bytes_are_invalid_argument(fuzz_server, method, streamed) -> None:
    _, caller, _ = fuzz_server
    valid = fuzz_requests.valid_request(method, np.random.default_rng(0))
    chunks = (valid, b"\xff\xff\xff\xff") if streamed else (b"\x0a\xff\xff\xff\xff\x0f",)
    code, details = caller.call(fuzz_requests.Case(method, streamed, chunks, "mutated"), WAIT)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "corrupt" in details and (not streamed or details.startswith("chunk 1: "))


def test_corrupt_bytes_without_a_token_are_unauthenticated_first() -> None:
    server = start_server(tokens=("secret",), shared_files=False)
    try:
        with grpc.insecure_channel(server.address) as channel:
            call = channel.unary_unary(f"/{fuzz_requests.SERVICE}/Xdrop", request_serializer=lambda raw: raw,
                                       response_deserializer=lambda raw: raw)
            for metadata, expected in ((None, grpc.StatusCode.UNAUTHENTICATED),
                                       ((("authorization", "Bearer secret"),), grpc.StatusCode.INVALID_ARGUMENT)):
                with pytest.raises(grpc.RpcError) as error:
                    call(b"\x0a\xff\xff", timeout=WAIT, metadata=metadata)
                assert error.value.code() == expected
    finally:
        server.stop()


@pytest.mark.parametrize("method", fuzz_requests.METHODS)
def test_the_fuzzers_valid_requests_are_answered(fuzz_server, method) -> None:
    _, caller, _ = fuzz_server
    rng = np.random.default_rng(1)
    for streamed in (False, True):
        chunks = tuple(fuzz_requests.valid_request(method, rng) for _ in range(2 if streamed else 1))
        assert caller.call(fuzz_requests.Case(method, streamed, chunks, "valid"), WAIT) == (grpc.StatusCode.OK, "")


def test_mutated_and_extreme_requests_never_get_unknown_or_internal(fuzz_server) -> None:
    _, caller, _ = fuzz_server
    rng = np.random.default_rng(23)
    counts: collections.Counter[str] = collections.Counter()
    unexpected = []
    for _ in range(1000):
        case = fuzz_requests.random_case(rng)
        code, details = caller.call(case, WAIT)
        counts[code.name] += 1
        if code not in fuzz_requests.ACCEPTED:
            unexpected.append((case.method, case.streamed, case.kind, code.name, details[:200]))
    assert not unexpected, unexpected[:5]
    assert counts["INVALID_ARGUMENT"] > 0 and counts["OK"] > 0  # both refused and scored requests were sent
    assert caller.answers_correctly(WAIT)
