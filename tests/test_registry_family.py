"""A kernel family registered from a test, with no package file edited: "runs", the run-length
encoding of each sequence's bases as CIGAR-like ops (A C G T and others as M I D X and S) and
a column of the number of runs. Its ragged results go through the API entry, its `warpdp runs`
subcommand, a live server's unary and stream RPCs (proto messages built here) and the Python
client's generic call, through messages and through shared memory (requests and replies)."""
from __future__ import annotations

import argparse
import time
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from helpers.grpc_server import WAIT, metric_reaches, start_server
from warpdp import cli, registry
from warpdp.grpc import Client, _shm_client, _shm_server, client as client_module, warpdp_pb2
from warpdp.grpc._algorithms import Algorithm, InvalidRequest, Job
from warpdp.grpc._kernel import AlgorithmKernel
from warpdp.grpc.server import Batcher, Metrics
from warpdp.grpc._packing import CellLimit, packed_message, ragged_file_bytes, ragged_from_file
from warpdp.plugin.core import cigar
from warpdp.plugin.core.results import Results

# -- the family's messages, in package warpdp.v1 next to warpdp.proto's own ---------------


def _messages() -> tuple[type, type, type]:
    pool = descriptor_pool.Default()
    try:  # a second import of this module (pytest's rerun) finds them registered
        found = [pool.FindMessageTypeByName(f"warpdp.v1.{name}") for name in ("RunsSeqs", "RunsRequest", "RunsReply")]
    except KeyError:
        found = None
    if found is None:
        f = descriptor_pb2.FileDescriptorProto(name="tests/runs.proto", package="warpdp.v1", syntax="proto3",
                                               dependency=[warpdp_pb2.DESCRIPTOR.name])
        T = descriptor_pb2.FieldDescriptorProto

        def message(name: str, *fields: tuple[str, int, int, str]) -> None:
            m = f.message_type.add(name=name)
            for field, number, kind, type_name in fields:
                added = m.field.add(name=field, number=number, type=kind, label=T.LABEL_OPTIONAL)
                if type_name:
                    added.type_name = type_name

        message("RunsSeqs", ("bases", 1, T.TYPE_BYTES, ""), ("offsets", 2, T.TYPE_BYTES, ""))
        message("RunsRequest", ("seqs", 1, T.TYPE_MESSAGE, ".warpdp.v1.RunsSeqs"),
                ("shared_file", 2, T.TYPE_MESSAGE, ".warpdp.v1.SharedFile"))
        message("RunsReply", ("n_runs", 1, T.TYPE_BYTES, ""), ("cigar_ops", 2, T.TYPE_BYTES, ""),
                ("cigar_offsets", 3, T.TYPE_BYTES, ""), ("n_pairs", 4, T.TYPE_UINT64, ""),
                ("chunk", 5, T.TYPE_UINT64, ""), ("stats", 6, T.TYPE_MESSAGE, ".warpdp.v1.CallStats"))
        pool.Add(f)
        found = [pool.FindMessageTypeByName(f"warpdp.v1.{name}") for name in ("RunsSeqs", "RunsRequest", "RunsReply")]
    seqs, request, reply = (message_factory.GetMessageClass(d) for d in found)
    return seqs, request, reply


RunsSeqs, RunsRequest, RunsReply = _messages()

# -- the kernel and its API entry ----------------------------------------------------------

_OP_OF_BASE = np.full(256, cigar.OP_CODES["S"], dtype=np.int64)
for _base, _op in zip(b"ACGT", "MIDX"):
    _OP_OF_BASE[_base] = cigar.OP_CODES[_op]


@dataclass(frozen=True)
class RunsInput:
    """Sequences, concatenated: bases (uint8) and int64 offsets (n + 1, from 0)."""

    bases: np.ndarray
    offsets: np.ndarray

    @property
    def n_pairs(self) -> int:
        return len(self.offsets) - 1

    def select(self, i: int, j: int) -> RunsInput:
        return RunsInput(self.bases[self.offsets[i]:self.offsets[j]], self.offsets[i:j + 1] - self.offsets[i])


def pack_runs(sequences: list[str]) -> RunsInput:
    data = [s.encode() for s in sequences]
    return RunsInput(np.frombuffer(b"".join(data), dtype=np.uint8).copy(), cigar.offsets_of(len(d) for d in data))


def runs(payload: RunsInput) -> Results:
    """The API entry: each sequence's runs of one base as ops, and their count."""
    bases, offsets = payload.bases, payload.offsets
    starts = np.zeros(len(bases), dtype=bool)
    starts[1:] = bases[1:] != bases[:-1]
    starts[offsets[:-1][offsets[:-1] < len(bases)]] = True  # a sequence starts a run
    first = np.flatnonzero(starts)
    lengths = np.diff(np.append(first, len(bases)))
    counts = np.searchsorted(first, offsets[1:]) - np.searchsorted(first, offsets[:-1])
    return Results({"n_runs": counts.astype(np.int64)}, cigar.pack(lengths, _OP_OF_BASE[bases[first]]),
                   cigar.offsets_of(counts))


# -- its service description ----------------------------------------------------------------


class _Collected:
    """Where a client collects a job's ragged results, piece by piece (any order)."""

    def __init__(self) -> None:
        self.parts: dict[int, Results] = {}


class RunsAlgorithm(Algorithm):
    name = "runs"
    rpc = "Runs"
    payload_type = RunsInput
    request_type = RunsRequest
    reply_type = RunsReply
    packed_field = "seqs"
    packed_message = RunsSeqs
    sequences = (("bases", "offsets"),)  # how the memory budget counts a message's pairs
    reply_bytes_per_pair = 24            # the memory budget's estimate; reply_bytes() bounds it
    ragged = True
    result_columns = (("n_runs", "<i8"),)  # its results' layout in a shared file

    def key_fields(self, key: Hashable) -> dict[str, Any]:
        return {}

    def decode(self, request: Any, packed: Any = None) -> Job:
        message = request.seqs if packed is None else packed
        bases = np.frombuffer(message.bases, dtype=np.uint8)
        offsets = np.frombuffer(message.offsets, dtype="<i8")
        if len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(bases) or np.any(np.diff(offsets) < 0):
            raise InvalidRequest("RunsRequest.seqs", "offsets must rise from 0 to the number of bases")
        payload = RunsInput(bases, offsets)
        return Job(payload, None, payload.n_pairs, self.cells(payload, None))

    def cells(self, payload: RunsInput, key: Hashable) -> int:
        return len(payload.bases)

    def request_bytes(self, payload: RunsInput) -> int:
        return len(payload.bases) + 8 * len(payload.offsets)

    def reply_bytes(self, job: Job) -> int:
        # At most one op per base: count, ops and offsets.
        return 8 * job.n_pairs + 4 * job.cells + 8 * (job.n_pairs + 1)

    def merge(self, payloads: list[RunsInput]) -> RunsInput:
        sizes = [len(p.bases) for p in payloads]
        shifts = np.cumsum([0] + sizes[:-1])
        offsets = np.concatenate([[0]] + [p.offsets[1:] + s for p, s in zip(payloads, shifts)])
        return RunsInput(np.concatenate([p.bases for p in payloads]), offsets.astype(np.int64))

    def run(self, payload: RunsInput, key: Hashable, *, backend: str, threads: int, cancelled: Any = None) -> Results:
        return runs(payload)

    def slices(self, payload: RunsInput, key: Hashable, max_cells: Any) -> Iterator[RunsInput]:
        yield payload

    def reply(self, rows: Results | None, n_pairs: int, chunk: int, stats: warpdp_pb2.CallStats) -> Any:
        if rows is None:
            return RunsReply(n_pairs=n_pairs, chunk=chunk, stats=stats)
        return RunsReply(n_runs=rows.columns["n_runs"].astype("<i8").tobytes(),
                         cigar_ops=rows.cigar_ops.astype("<u4").tobytes(),
                         cigar_offsets=rows.cigar_offsets.astype("<i8").tobytes(),
                         n_pairs=n_pairs, chunk=chunk, stats=stats)

    def result_arrays(self, rows: Results) -> list[np.ndarray]:
        raise AssertionError("ragged results go into a shared file as file_arrays lays them out")

    def warmup_jobs(self) -> list[tuple[Any, Hashable]]:
        return [(pack_runs(["AAC"]), None)]

    def cpu_isas(self) -> list[str]:
        return ["numpy"]

    def client_key(self, payload: Any, params: Any) -> Hashable:
        if not isinstance(payload, RunsInput):
            raise TypeError(f"runs takes RunsInput, not {type(payload).__name__}")
        return None

    def new_output(self, n_pairs: int) -> _Collected:
        return _Collected()

    def store(self, reply: Any, out: _Collected, start: int, stop: int) -> None:
        counts = np.frombuffer(reply.n_runs, dtype="<i8")
        offsets = np.frombuffer(reply.cigar_offsets, dtype="<i8")
        if reply.n_pairs != stop - start or len(counts) != stop - start:
            raise ValueError(f"the server returned {len(counts)} results for {stop - start} pairs")
        out.parts[start] = Results({"n_runs": counts}, np.frombuffer(reply.cigar_ops, dtype="<u4"), offsets)

    def results_in_message(self, reply: Any) -> bool:
        return reply.n_pairs == 0 or len(reply.n_runs) > 0

    def store_results(self, results: Results, out: _Collected, start: int, stop: int) -> None:
        out.parts[start] = results

    def _store_arrays(self, data: np.ndarray, out: Any, start: int, stop: int) -> None:
        raise AssertionError("ragged results come from a shared file through store_results")

    def results(self, out: _Collected) -> Results:
        if not out.parts:
            return runs(pack_runs([]))
        return Results.concat([out.parts[start] for start in sorted(out.parts)])

    def iter_plan(self, payload: RunsInput, key: Hashable, max_cells: CellLimit, max_bytes: int,
                  first_bytes: int | None = None) -> Iterator[RunsInput]:
        cells = max_cells(len(payload.bases)) if callable(max_cells) else max_cells
        limit = max(1, min(cells, (max_bytes - 256) // 13))  # a base costs 1 byte in, 12 out at most
        start = 0
        while start < payload.n_pairs:
            stop = start + 1
            while stop < payload.n_pairs and payload.offsets[stop + 1] - payload.offsets[start] <= limit:
                stop += 1
            yield payload.select(start, stop)
            start = stop


# -- its CLI subcommand ---------------------------------------------------------------------


def add_runs_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("runs", help="runs of one base in each sequence, as CIGAR ops")
    p.add_argument("sequences", nargs="+")
    p.set_defaults(run=run_runs)


def run_runs(args: argparse.Namespace) -> int:
    found = registry.family("runs").entry_point()(pack_runs(args.sequences))
    for i in range(len(found)):
        print(f"{found.columns['n_runs'][i]}\t{found.cigarstring(i)}")
    return 0


RUNS = registry.Family(name="runs", rpc="Runs", service=RunsAlgorithm(), entry=runs, add_cli=add_runs_parser,
                       info=lambda: "runs: a test family (CPU only)",
                       workers={"cpu": 2}, max_batch_cells={"cpu": 50_000_000})

SEQUENCES = ["AACCCGT", "", "TTTTNNA", "G", "ACGTACGTTT" * 30, "CCA"]


@pytest.fixture
def runs_family():
    registry.register(RUNS)
    yield RUNS
    registry.unregister("runs")


def expected(sequences: list[str]) -> Results:
    """The runs, one sequence at a time in plain Python."""
    counts, ops = [], []
    for s in sequences:
        mine = []
        for base in s:
            op = "MIDX"["ACGT".index(base)] if base in "ACGT" else "S"
            if mine and mine[-1][2] == base:
                mine[-1][0] += 1
            else:
                mine.append([1, op, base])
        counts.append(len(mine))
        ops.append("".join(f"{n}{op}" for n, op, _ in mine))
    packed = [cigar.from_string(o) for o in ops]
    return Results({"n_runs": np.array(counts, dtype=np.int64)},
                   np.concatenate(packed) if packed else np.empty(0, np.uint32), cigar.offsets_of(counts))


def test_api_entry_and_cigar_helpers(runs_family):
    found = registry.family("runs").entry_point()(pack_runs(SEQUENCES))
    assert found == expected(SEQUENCES)
    assert found.cigarstring(0) == "2M3I1D1X" and found.cigarstring(1) == "*"
    assert found[2:4] == expected(SEQUENCES[2:4])
    assert Results.concat([found[:3], found[3:]]) == found


def test_cli_subcommand_and_info(runs_family, capsys):
    assert cli.main(["runs", "AACCCGT", "NNA"]) == 0
    assert capsys.readouterr().out == "4\t2M3I1D1X\n2\t2S1M\n"
    assert cli.main(["info"]) == 0
    assert "runs: a test family (CPU only)" in capsys.readouterr().out


def test_batcher_splits_a_merged_submission_of_ragged_results_per_request(runs_family):
    kernel = AlgorithmKernel(RUNS.algorithm(), "cpu", threads=1)
    batcher = Batcher(workers=1, batching=True, max_wait_s=60, max_batch_cells=10_000, metrics=Metrics())
    parts = [SEQUENCES[:2], SEQUENCES[2:3], SEQUENCES[3:]]
    try:
        batcher.arrive()  # the worker waits for this one, so all three are queued together
        items = [batcher.submit(kernel, None, pack_runs(part), cells=sum(map(len, part)), n_out=len(part))
                 for part in parts]
        batcher.drain()
        for item in items:
            assert item.event.wait(WAIT)
        assert [item.coalesced for item in items] == [3, 3, 3]
        assert [item.result for item in items] == [expected(part) for part in parts]
    finally:
        batcher.close()


def test_server_serves_the_family_unary_and_stream(runs_family):
    server = start_server()
    try:
        with Client(server.address, timeout=WAIT, shared_files=False) as client:
            info = client.server_info()
            assert [a.name for a in info.algorithms][-1] == "runs"
            # Its service settings: the most workers and the smallest submission cap of all families.
            assert server.workers == info.batching.workers == 2
            assert info.batching.max_batch_cells == 50_000_000
            assert client.call("runs", pack_runs(SEQUENCES)) == expected(SEQUENCES)
            # The stream RPC, called directly: one reply per chunk, in order.
            channel = grpc.insecure_channel(server.address)
            stream = channel.stream_stream("/warpdp.v1.Warpdp/RunsStream", request_serializer=RunsRequest.SerializeToString,
                                           response_deserializer=RunsReply.FromString)
            chunks = [SEQUENCES[:2], SEQUENCES[2:5], SEQUENCES[5:]]
            requests = [RunsRequest(seqs=packed_message(RunsSeqs, pack_runs(c))) for c in chunks]
            replies = list(stream(iter(requests), timeout=WAIT))
            assert [r.chunk for r in replies] == [0, 1, 2]
            algorithm = RUNS.algorithm()
            for reply, chunk in zip(replies, chunks):
                out = algorithm.new_output(len(chunk))
                algorithm.store(reply, out, 0, len(chunk))
                assert algorithm.results(out) == expected(chunk)
            channel.close()
        assert metric_reaches(server, "warpdp_requests_total", {"method": "Runs", "code": "OK"}, 1)
        # One stream or several (the client may spread a job over streams): at least one, all OK.
        streams_ok = {"method": "RunsStream", "code": "OK"}
        deadline = time.monotonic() + WAIT
        while server.metrics.sample("warpdp_requests_total", streams_ok) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.metrics.sample("warpdp_requests_total", streams_ok) >= 1
        assert server.metrics.sample("warpdp_requests_total", {"method": "RunsStream", "code": "INTERNAL"}) == 0
    finally:
        server.stop()


def test_client_splits_into_streams_when_over_the_limits(runs_family):
    server = start_server(max_request_cells=400)  # the longest sequence has 300 bases
    try:
        with Client(server.address, timeout=WAIT, shared_files=False) as client:
            assert client.call("runs", pack_runs(SEQUENCES * 3)) == expected(SEQUENCES * 3)
        # The first try, unary, was over the limit; the client learnt the limits and streamed.
        assert metric_reaches(server, "warpdp_requests_total", {"method": "Runs", "code": "RESOURCE_EXHAUSTED"}, 1)
        # One stream or several (the client may spread a job over streams): at least one, all OK.
        streams_ok = {"method": "RunsStream", "code": "OK"}
        deadline = time.monotonic() + WAIT
        while server.metrics.sample("warpdp_requests_total", streams_ok) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.metrics.sample("warpdp_requests_total", streams_ok) >= 1
        assert server.metrics.sample("warpdp_requests_total", {"method": "RunsStream", "code": "INTERNAL"}) == 0
    finally:
        server.stop()


@pytest.mark.skipif(not _shm_client.available(), reason="no memfd shared memory here")
@pytest.mark.parametrize("room", [True, False])
def test_client_call_through_shared_memory(runs_family, monkeypatch, room):
    """Requests in shared memory; ragged replies written back there when the client leaves
    room for the family's reply bound (the messages then carry no results), else in messages."""
    monkeypatch.setattr(client_module, "_SHARED_MIN_BYTES", 64)
    monkeypatch.setattr(client_module, "_SHARED_CHUNK_BYTES", 256)
    if not room:
        monkeypatch.setattr(RunsAlgorithm, "reply_bound", lambda self, payload, key: 0)
    read: list[str] = []
    real_read = _shm_server.read_arrays

    def spy_read(region, *args, **kwargs):
        read.append(region)
        return real_read(region, *args, **kwargs)

    from_file: list[Any] = []
    from_message: list[Any] = []
    real_file, real_message = RunsAlgorithm.store_file_results, RunsAlgorithm.store
    monkeypatch.setattr(_shm_server, "read_arrays", spy_read)
    monkeypatch.setattr(RunsAlgorithm, "store_file_results",
                        lambda self, reply, *a: (from_file.append(reply), real_file(self, reply, *a)))
    monkeypatch.setattr(RunsAlgorithm, "store", lambda self, reply, *a: (from_message.append(reply),
                                                                        real_message(self, reply, *a)))
    server = start_server()
    try:
        with Client(server.address, timeout=WAIT) as client:
            sequences = SEQUENCES * 4
            assert client.call("runs", pack_runs(sequences)) == expected(sequences)
        assert read  # the requests' arrays came in shared memory
        if room:
            assert from_file and not [r for r in from_message if r.n_pairs]
            assert sum(r.n_pairs for r in from_file) == len(sequences)
            assert all(not (r.n_runs or r.cigar_ops or r.cigar_offsets) for r in from_file)
        else:
            assert not from_file and sum(r.n_pairs for r in from_message) == len(sequences)
    finally:
        server.stop()


def test_ragged_file_layout_round_trip_and_checks():
    found = runs(pack_runs(SEQUENCES))
    columns = RunsAlgorithm.result_columns
    data = np.concatenate([a.view(np.uint8) for a in RUNS.algorithm().file_arrays(found)])
    assert len(data) == ragged_file_bytes(len(found), len(found.cigar_ops), columns)
    assert ragged_from_file(np.concatenate([data, np.zeros(5, np.uint8)]), len(found), columns) == found
    with pytest.raises(ValueError, match="past its"):
        ragged_from_file(data[:-4], len(found), columns)
    with pytest.raises(ValueError, match="too few"):
        ragged_from_file(data[:20], len(found), columns)


def test_other_servers_do_not_serve_an_unregistered_family():
    assert "runs" not in [f.name for f in registry.families()]
    with pytest.raises(KeyError):
        registry.family("runs")
