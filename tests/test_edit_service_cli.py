"""The edit family's front doors besides the API: `warpdp edit`, its formats, and a live CPU
server's Edit/EditStream RPCs through the registry's generic client call."""
from __future__ import annotations

import grpc
import numpy as np
import pytest

from helpers.grpc_server import WAIT, start_server
from warpdp import cli, registry
from warpdp.grpc import Client, warpdp_pb2
from warpdp.grpc._packing import packed_message
from warpdp.plugin.edit import EditParams, edit, pack_edit_pairs
from warpdp.plugin.edit_io import read_edit_fastx

PAIRS = [("ACGTACGT", "TTACGTACGAA"), ("AAAA", "AAAC"), ("GATTACA", "GATTACA"), ("CCCC", "GGGGGGG")]


def test_cli_writes_tsv_with_a_header(tmp_path, capsys) -> None:
    source = tmp_path / "pairs.tsv"
    source.write_text("".join(f"{q}\t{t}\n" for q, t in PAIRS))
    assert cli.main(["edit", str(source), "--mode", "hw", "--task", "path", "-k", "3", "--backend", "cpu"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "distance\ttarget_begin\ttarget_end\tcigar\tlocations"
    expected = edit(PAIRS, mode="hw", task="path", k=3)
    for i, line in enumerate(lines[1:]):
        fields = line.split("\t")
        assert [int(x) for x in fields[:3]] == [int(expected.distance[i]), int(expected.target_begin[i]),
                                                int(expected.target_end[i])]
        assert fields[3] == (expected.cigarstring(i) if expected.distance[i] >= 0 else "*")
    assert lines[4].split("\t")[0] == "-1"  # CCCC vs GGGGGGG is above k


def test_cli_reads_fasta_and_writes_sam(tmp_path, capsys) -> None:
    pysam = pytest.importorskip("pysam")
    (tmp_path / "q.fa").write_text("".join(f">q{i}\n{q}\n" for i, (q, _) in enumerate(PAIRS)))
    (tmp_path / "t.fa").write_text("".join(f">t{i}\n{t}\n" for i, (_, t) in enumerate(PAIRS)))
    pairs, qnames, tnames = read_edit_fastx(tmp_path / "q.fa", tmp_path / "t.fa")
    assert pairs.query(0) == b"ACGTACGT" and qnames[1] == "q1" and tnames[2] == "t2"
    out = tmp_path / "out.sam"
    assert cli.main(["edit", str(tmp_path / "q.fa"), "--targets", str(tmp_path / "t.fa"), "--mode", "shw",
                     "--task", "path", "--sam", "-o", str(out), "--backend", "cpu"]) == 0
    expected = edit(PAIRS, mode="shw", task="path")
    with pysam.AlignmentFile(str(out)) as sam:
        records = list(sam)
    assert [r.query_name for r in records] == ["q0", "q1", "q2", "q3"]
    for i, record in enumerate(records):
        assert record.reference_name == f"t{i}" and record.reference_start == expected.target_begin[i]
        assert record.cigarstring == expected.cigarstring(i) and record.get_tag("NM") == expected.distance[i]


@pytest.mark.parametrize(("argv", "field"), [
    (["--mode", "local"], "mode"), (["-k", "-2"], "k"), (["--task", "all"], "task"),
    (["--method", "windowed", "--mode", "shw", "--window", "65"], "window"),
    (["--method", "windowed", "--mode", "shw", "--window", "32", "--overlap", "32"], "overlap"),
    (["--method", "fast"], "method"),
])
def test_cli_bad_input_is_an_error_naming_the_field(tmp_path, capsys, argv, field) -> None:
    source = tmp_path / "pairs.tsv"
    source.write_text("ACGT\tACGT\n")
    assert cli.main(["edit", str(source), *argv, "--backend", "cpu"]) == 2
    assert capsys.readouterr().err.startswith(f"warpdp: error: {field} ")


def test_cli_empty_sequence_and_bad_lines(tmp_path, capsys) -> None:
    source = tmp_path / "pairs.tsv"
    source.write_text("ACGT\n")
    assert cli.main(["edit", str(source), "--backend", "cpu"]) == 2
    assert "line 1: expected 2 fields" in capsys.readouterr().err
    (tmp_path / "q.fa").write_text(">q\n\n")
    (tmp_path / "t.fa").write_text(">t\nACGT\n")
    assert cli.main(["edit", str(tmp_path / "q.fa"), "--targets", str(tmp_path / "t.fa"), "--backend", "cpu"]) == 2
    assert "empty sequence" in capsys.readouterr().err


def test_help_explains_columns_coordinates_and_ties(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["edit", "--help"])
    text = capsys.readouterr().out
    for words in ("target_end", "EXCLUSIVE", "0-based", "leftmost", "W=64 O=33", "W=32 O=17"):
        assert words in text


def test_registry_lists_edit() -> None:
    family = registry.family("edit")
    assert family.rpc == "Edit" and family.stream_rpc == "EditStream"
    assert family.entry_point() is edit


def test_server_unary_stream_and_invalid_argument() -> None:
    server = start_server()
    try:
        pairs = pack_edit_pairs(PAIRS * 5)
        params = EditParams(mode="hw", task="path")
        with Client(server.address, timeout=WAIT, shared_files=False) as client:
            assert "edit" in [a.name for a in client.server_info().algorithms]
            assert client.call("edit", pairs, params) == edit(pairs, params)
            windowed = {"method": "windowed", "mode": "shw", "window": 32, "overlap": 17, "task": "path"}
            assert client.call("edit", pairs, windowed) == edit(pairs, **windowed)
        channel = grpc.insecure_channel(server.address)
        try:
            stream = channel.stream_stream("/warpdp.v1.Warpdp/EditStream",
                                           request_serializer=warpdp_pb2.EditRequest.SerializeToString,
                                           response_deserializer=warpdp_pb2.EditReply.FromString)
            chunks = [PAIRS[:2], PAIRS[2:]]
            requests = [warpdp_pb2.EditRequest(pairs=packed_message(warpdp_pb2.EditPairs, pack_edit_pairs(c)),
                                               mode="shw", task="locations") for c in chunks]
            replies = list(stream(iter(requests), timeout=WAIT))
            assert [r.chunk for r in replies] == [0, 1]
            algorithm = registry.family("edit").algorithm()
            for reply, chunk in zip(replies, chunks):
                out = algorithm.new_output(len(chunk))
                algorithm.store(reply, out, 0, len(chunk))
                assert algorithm.results(out) == edit(chunk, mode="shw", task="locations")
            unary = channel.unary_unary("/warpdp.v1.Warpdp/Edit",
                                        request_serializer=warpdp_pb2.EditRequest.SerializeToString,
                                        response_deserializer=warpdp_pb2.EditReply.FromString)
            good = packed_message(warpdp_pb2.EditPairs, pack_edit_pairs(PAIRS))
            for fields, name in (({"mode": "local"}, "mode"), ({"k": -7}, "k"),
                                 ({"method": "windowed", "mode": "shw", "window": 99}, "window")):
                with pytest.raises(grpc.RpcError) as caught:
                    unary(warpdp_pb2.EditRequest(pairs=good, **fields), timeout=WAIT)
                assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert f"{name} " in caught.value.details()
            empty = warpdp_pb2.EditPairs(query_bases=b"A", query_offsets=np.array([0, 1, 1], "<i8").tobytes(),
                                         target_bases=b"AC", target_offsets=np.array([0, 1, 2], "<i8").tobytes())
            with pytest.raises(grpc.RpcError) as caught:
                unary(warpdp_pb2.EditRequest(pairs=empty), timeout=WAIT)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "pair 1 is empty" in caught.value.details()
        finally:
            channel.close()
    finally:
        server.stop()


def test_server_splits_jobs_over_the_limits_and_refuses_a_pair_over_them() -> None:
    from warpdp.grpc import ServiceError

    server = start_server(max_request_cells=2_000)  # each PAIRS pair is at most 77 cells
    try:
        with Client(server.address, timeout=WAIT, shared_files=False) as client:
            pairs = pack_edit_pairs(PAIRS * 40)
            params = EditParams(mode="shw", task="path")
            assert client.call("edit", pairs, params) == edit(pairs, params)  # streamed in pieces
            long_pair = pack_edit_pairs([("ACGT" * 30, "ACGT" * 30)])  # 14,400 cells: no piece can hold it
            with pytest.raises(ServiceError) as caught:
                client.call("edit", long_pair, params)
            assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        server.stop()


def test_client_call_through_shared_memory(monkeypatch) -> None:
    from warpdp.grpc import _shm_client
    from warpdp.grpc import client as client_module

    if not _shm_client.available():
        pytest.skip("no memfd shared memory here")
    monkeypatch.setattr(client_module, "_SHARED_MIN_BYTES", 64)
    server = start_server()
    try:
        pairs = pack_edit_pairs(PAIRS * 5)
        params = EditParams(mode="hw", task="path")
        with Client(server.address, timeout=WAIT) as client:
            assert client.call("edit", pairs, params) == edit(pairs, params)
        assert server.metrics.sample("warpdp_requests_total", {"method": "Edit", "code": "INVALID_ARGUMENT"}) == 0
    finally:
        server.stop()


def test_plan_gives_a_cell_limit_function_the_whole_jobs_cells() -> None:
    from warpdp.grpc._edit import EDIT

    pairs = pack_edit_pairs(PAIRS * 10)
    cells = np.diff(pairs.query_offsets) * np.diff(pairs.target_offsets)
    seen: list[int] = []

    def limit(total: int) -> int:
        seen.append(total)
        return 100

    pieces = EDIT.plan(pairs, EditParams(mode="nw"), limit, 1 << 20)
    assert seen == [int(cells.sum())]  # asked once, for the whole job
    assert sum(piece.n_pairs for piece in pieces) == pairs.n_pairs
    for piece in pieces:
        piece_cells = np.diff(piece.query_offsets) * np.diff(piece.target_offsets)
        assert piece.n_pairs == 1 or piece_cells.sum() <= 100


def test_results_refuse_locations_whose_offsets_do_not_cover_them() -> None:
    from warpdp.plugin.edit import EditResults

    columns = {name: np.zeros(1, dtype=np.int64) for name in EditResults.COLUMNS}
    two = np.array([0, 2], dtype=np.int64)
    EditResults(columns, locations=(np.zeros(2, np.int64), np.ones(2, np.int64), two))
    # loc_end shorter than loc_begin, offsets right for loc_begin (a chained != let this through).
    with pytest.raises(ValueError, match="loc_offsets"):
        EditResults(columns, locations=(np.zeros(2, np.int64), np.ones(1, np.int64), two))
    with pytest.raises(ValueError, match="loc_offsets"):
        EditResults(columns, locations=(np.zeros(3, np.int64), np.ones(3, np.int64), two))


def test_server_refuses_a_windowed_pair_with_other_bases_before_queueing_it(caplog) -> None:
    from warpdp.plugin.edit import check_windowed_bases

    # Pair 2's target has an N (its query a lower-case base, which the method takes).
    pairs = pack_edit_pairs([("ACGT", "ACGT"), ("acgt", "ACGA"), ("ACGT", "ACNT"), ("NNNN", "ACGT")])
    with pytest.raises(ValueError, match="pair 2 has a byte other than A, C, G, T"):
        check_windowed_bases(pairs)
    check_windowed_bases(pairs.select(0, 2))
    server = start_server()
    channel = grpc.insecure_channel(server.address)
    try:
        unary = channel.unary_unary("/warpdp.v1.Warpdp/Edit",
                                    request_serializer=warpdp_pb2.EditRequest.SerializeToString,
                                    response_deserializer=warpdp_pb2.EditReply.FromString)
        request = warpdp_pb2.EditRequest(pairs=packed_message(warpdp_pb2.EditPairs, pairs), method="windowed",
                                         mode="shw", window=32, overlap=17)
        with caplog.at_level("WARNING", logger="warpdp.grpc"):
            with pytest.raises(grpc.RpcError) as caught:
                unary(request, timeout=WAIT)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "pair 2 has a byte other than A, C, G, T" in caught.value.details()
        assert not [r for r in caplog.records if r.name == "warpdp.grpc" and r.levelname in ("WARNING", "ERROR")]
    finally:
        channel.close()
        server.stop()
