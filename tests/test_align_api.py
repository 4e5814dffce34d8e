"""The align family's front doors: the Python API (params, packed pairs, results, Alignment objects),
random pairs against the independent reference (tests/references/align.py), bad input (ValueError
naming the field, `warpdp: error:` exit 2, INVALID_ARGUMENT), the CLI (TSV, FASTA, SAM) and a live
CPU server (unary and stream, ragged CIGARs)."""
from __future__ import annotations

import random

import grpc
import numpy as np
import pytest

from helpers.grpc_server import WAIT, start_server
from references import align as ref
from references.gatk_sw import gatk_sw
from warpdp import cli
from warpdp.grpc import Client, warpdp_pb2
from warpdp.grpc._packing import packed_message
from warpdp.plugin.align import (AlignPairs, AlignParams, AlignResults, TracebackTooLarge, align, align_cpu_isas,
                                 gatk_smith_waterman, gatk_smith_waterman_batch)
from warpdp.plugin.core.cigar import Alignment

GENERIC = ("global", "semiglobal", "local", "extension")


def _random_pairs(rng: random.Random, n: int, longest: int = 40, alphabet: str = "ACGT") -> list[tuple[str, str]]:
    pairs = []
    for _ in range(n):
        query = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest)))
        if rng.random() < 0.5:  # related: the target is a mutated copy
            target = "".join(c if rng.random() > 0.2 else rng.choice(alphabet) for c in query)
            target = target[:rng.randint(0, len(target))] + "".join(rng.choice(alphabet) for _ in range(3)) + \
                target[rng.randint(0, len(target)):]
        else:
            target = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest)))
        pairs.append((query, target or "A"))
    return pairs


PARAMETER_SETS = [
    dict(gaps="affine", gap_open=5, gap_extend=2, gap_convention="L-1", match=2, mismatch=-3),
    dict(gaps="affine", gap_open=4, gap_extend=2, gap_convention="L", match=1, mismatch=-4),
    dict(gaps="linear", gap_open=0, gap_extend=3, match=2, mismatch=-3),
    dict(gaps="affine", gap_open=3, gap_extend=1, gap_convention="L-1",
         matrix=[[2, -3, -1, -3, -1], [-3, 2, -3, -1, -1], [-1, -3, 2, -3, -1], [-3, -1, -3, 2, -1],
                 [-1, -1, -1, -1, 1]]),
]


@pytest.mark.parametrize("scores", range(len(PARAMETER_SETS)))
@pytest.mark.parametrize("mode", GENERIC)
def test_random_pairs_equal_the_reference(mode: str, scores: int) -> None:
    rng = random.Random(26 * 10 + scores)
    pairs = _random_pairs(rng, 60, alphabet="ACGTN" if scores == 3 else "ACGT")
    fields = dict(PARAMETER_SETS[scores])
    if mode == "extension" and scores == 0:
        fields["zdrop"] = 6
    params = AlignParams(mode=mode, cigar=True, **fields)
    results = align(pairs, params, backend="cpu", threads=2)
    score_only = align(pairs, params.replace(cigar=False), backend="cpu", threads=1)
    matrix = np.array(params.score_matrix())
    first, ext = params.gap_costs()
    for k, (query, target) in enumerate(pairs):
        want = ref.align(query, target, matrix, first, ext, mode, -1 if params.zdrop is None else params.zdrop)
        got = results.row(k)
        # one tie rule: the same coordinates and CIGAR as the reference, on both paths
        assert (got["score"], got["query_begin"], got["query_end"], got["target_begin"], got["target_end"],
                got["cigar"]) == (*want[:5], want[5] or "*"), (k, query, target)
        assert score_only.row(k) == {name: got[name] for name in score_only.columns}
        if want[5]:
            assert ref.rescore(query, target, want[1], want[3], want[5], matrix, first, ext) == (want[0], want[2],
                                                                                                want[4])


def test_random_gatk_cases_equal_the_reference() -> None:
    rng = random.Random(2600)
    for overhang in ("SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE"):
        for match, mismatch, gap_open, gap_extend in ((200, -150, -260, -11), (10, -15, -30, -5), (25, -50, -110, -6),
                                                      (3, -1, -4, -1)):
            pairs = _random_pairs(rng, 25, longest=30, alphabet="ACGTN")
            results = gatk_smith_waterman_batch([(t, q) for q, t in pairs], match, mismatch, gap_open, gap_extend,
                                                overhang, threads=2)
            for k, (alt, ref_seq) in enumerate(pairs):
                want = gatk_sw(ref_seq.encode(), alt.encode(), match, mismatch, gap_open, gap_extend, overhang)
                assert (results.cigarstring(k), int(results.columns["target_begin"][k])) == want


def test_results_alignments_and_columns() -> None:
    results = align([("ACGTACGT", "TTACGTTACGTAA"), ("GGGG", "GGGG")], mode="local", cigar=True, backend="cpu")
    assert isinstance(results, AlignResults) and len(results) == 2
    first = results.alignments()[0]
    assert isinstance(first, Alignment)
    assert first.cigarstring == results.cigarstring(0)
    assert first.cigartuples == [(op, n) for op, n in first.cigartuples]
    assert results.alignments()[1].cigarstring == "4=" and results.alignments()[1].cigartuples == [(7, 4)]
    assert list(results.score) == [int(s) for s in results.columns["score"]]
    # slices and concat keep the ragged CIGAR
    assert AlignResults.concat([results[:1], results[1:]]) == results
    with pytest.raises(ValueError, match="no CIGAR"):
        align([("A", "A")], backend="cpu").alignments()
    assert align_cpu_isas()[0] == "scalar"


def test_gatk_single_pair_and_parameter_sets() -> None:
    # alt an exact substring of ref: GATK/GKL give len(alt)M at the (last) occurrence
    assert gatk_smith_waterman("TTTACGTACGGG", "ACGTACG") == ("7M", 3)
    for parameters in ((200, -150, -260, -11), (10, -15, -30, -5), (25, -50, -110, -6)):
        cigar, offset = gatk_smith_waterman("AAACCCGGGTTT", "CCCGGATTT", *parameters, overhang="INDEL")
        assert offset == 0 and cigar.endswith("M")


def test_empty_local_alignment_and_extension_anchor() -> None:
    results = align([("AAAA", "CCCC")], mode="local", cigar=True, backend="cpu")
    assert results.row(0) == dict(score=0, query_begin=0, query_end=0, target_begin=0, target_end=0, cigar="*")
    results = align([("ACGTTTTTTT", "ACGAAAAAAA")], mode="extension", cigar=True, backend="cpu")
    assert results.row(0)["cigar"] == "3=" and results.row(0)["score"] == 6


@pytest.mark.parametrize(("fields", "named"), [
    (dict(mode="fancy"), "mode"),
    (dict(gaps="cubic"), "gaps"),
    (dict(gap_open=-5), "gap_open"),
    (dict(gap_extend=-1), "gap_extend"),
    (dict(mismatch=3), "mismatch"),
    (dict(match=0), "match"),
    (dict(gap_convention="L+1"), "gap_convention"),
    (dict(mode="gatk", gap_open=260), "gap_open"),
    (dict(mode="gatk", overhang="CLIP"), "overhang"),
    (dict(zdrop=10), "zdrop"),
    (dict(match=10**9), "match"),
    (dict(gap_open=1, gap_extend=2), "gap_open"),
    (dict(matrix=[[1, 2], [3, 4]]), "matrix"),
])
def test_bad_parameters_name_the_field(fields: dict, named: str) -> None:
    with pytest.raises((ValueError, TypeError), match=named):
        align([("ACGT", "ACGT")], backend="cpu", **fields)


def test_bad_pairs_name_the_field() -> None:
    with pytest.raises(ValueError, match="query 1 is empty"):
        align([("ACGT", "ACGT"), ("", "ACGT")], backend="cpu")
    with pytest.raises(ValueError, match="target 0 is empty"):
        align([("ACGT", "")], backend="cpu")
    with pytest.raises(ValueError, match="query_offsets"):
        AlignPairs.from_arrays(query_bases=b"ACGT", query_offsets=[0, 5], target_bases=b"AC", target_offsets=[0, 2])
    with pytest.raises(TypeError, match="pair 0"):
        align([("ACGT",)], backend="cpu")
    # an absurd length for int32 scores with these parameters: refused by the driver, naming the pair
    with pytest.raises(ValueError, match="pair 0: query and target lengths"):
        align([("A" * 20_000, "A")], match=65536, mismatch=-65536, backend="cpu")


def test_traceback_over_the_budget_is_refused_score_only_is_not() -> None:
    pairs = [("ACGT" * 50, "ACGT" * 50)]
    with pytest.raises(TracebackTooLarge, match="pair 0.*max_traceback_cells"):
        align(pairs, cigar=True, max_traceback_cells=1000, backend="cpu")
    assert align(pairs, max_traceback_cells=1000, backend="cpu").row(0)["score"] == 400


def test_cli_tsv_fasta_sam_and_errors(tmp_path, capsys) -> None:
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("ACGTACGTTT\tACGTTACGTTT\nGGGACGT\tTTTGGGACGTAAA\n")
    assert cli.main(["align", str(tsv), "--mode", "semiglobal", "--cigar"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t") == ["score", "query_begin", "query_end", "target_begin", "target_end", "cigar"]
    assert lines[2].split("\t") == ["14", "0", "7", "3", "10", "7="]
    assert cli.main(["align", str(tsv), "--mode", "warp"]) == 2
    assert "warpdp: error: mode must be one of" in capsys.readouterr().err
    assert cli.main(["align", str(tsv), "--gap-open", "-1"]) == 2
    assert "warpdp: error: gap_open" in capsys.readouterr().err
    empty = tmp_path / "empty.tsv"
    empty.write_text("ACGT\t\n")
    assert cli.main(["align", str(empty)]) == 2
    assert "line 1" in capsys.readouterr().err
    pysam = pytest.importorskip("pysam")
    (tmp_path / "q.fa").write_text(">r1\nGGGACGT\n>r2\nACGTACGTTT\n")
    (tmp_path / "t.fa").write_text(">chrA\nTTTGGGACGTAAA\n>chrB\nACGTTACGTTT\n")
    assert cli.main(["align", str(tmp_path / "q.fa"), "--targets", str(tmp_path / "t.fa"), "--mode", "local",
                     "--cigar"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("query_name\ttarget_name\tscore") and lines[1].startswith("r1\tchrA\t14\t0\t7\t3\t10")
    sam = tmp_path / "out.sam"
    assert cli.main(["align", str(tmp_path / "q.fa"), "--targets", str(tmp_path / "t.fa"), "--mode", "local",
                     "--sam", "-o", str(sam)]) == 0
    with pysam.AlignmentFile(str(sam)) as records:
        found = [(r.query_name, r.reference_name, r.reference_start, r.cigarstring) for r in records]
    assert found[0] == ("r1", "chrA", 3, "7=")
    assert found[1][:2] == ("r2", "chrB")


def test_live_server_unary_stream_and_errors() -> None:
    pairs = AlignPairs.from_sequences(_random_pairs(random.Random(7), 30))
    server = start_server()
    try:
        with Client(server.address, timeout=WAIT, shared_files=False) as client:
            for fields in (dict(mode="local", cigar=True), dict(mode="semiglobal"),
                           dict(mode="gatk", match=10, mismatch=-15, gap_open=-30, gap_extend=-5, overhang="IGNORE",
                                cigar=True)):
                assert client.call("align", pairs, fields) == align(pairs, backend="cpu", **fields)
        channel = grpc.insecure_channel(server.address)
        try:
            stream = channel.stream_stream("/warpdp.v1.Warpdp/AlignStream",
                                           request_serializer=warpdp_pb2.AlignRequest.SerializeToString,
                                           response_deserializer=warpdp_pb2.AlignReply.FromString)
            chunks = [pairs.select(0, 10), pairs.select(10, 30)]
            requests = [warpdp_pb2.AlignRequest(pairs=packed_message(warpdp_pb2.AlignPairs, chunk), mode="global",
                                                cigar=True) for chunk in chunks]
            replies = list(stream(iter(requests), timeout=WAIT))
            assert [r.chunk for r in replies] == [0, 1]
            for reply, chunk in zip(replies, chunks):
                want = align(chunk, mode="global", cigar=True, backend="cpu")
                assert np.frombuffer(reply.score, dtype="<i8").tolist() == want.columns["score"].tolist()
                assert np.array_equal(np.frombuffer(reply.cigar_ops, dtype="<u4"), want.cigar_ops)
                assert np.array_equal(np.frombuffer(reply.cigar_offsets, dtype="<i8"), want.cigar_offsets)
            unary = channel.unary_unary("/warpdp.v1.Warpdp/Align",
                                        request_serializer=warpdp_pb2.AlignRequest.SerializeToString,
                                        response_deserializer=warpdp_pb2.AlignReply.FromString)
            good = packed_message(warpdp_pb2.AlignPairs, chunks[0])
            for request, named in ((warpdp_pb2.AlignRequest(pairs=good, mode="sideways"), "mode"),
                                   (warpdp_pb2.AlignRequest(pairs=good, gap_open=-3), "gap_open"),
                                   (warpdp_pb2.AlignRequest(pairs=warpdp_pb2.AlignPairs(
                                       query_bases=b"AC", query_offsets=np.array([0, 2], "<i8").tobytes(),
                                       target_bases=b"", target_offsets=np.array([0, 0], "<i8").tobytes())),
                                    "target")):
                with pytest.raises(grpc.RpcError) as failure:
                    unary(request, timeout=WAIT)
                assert failure.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert named in failure.value.details()
            long_pair = AlignPairs.from_sequences([("ACGT" * 5000, "ACGT" * 5000)])
            with pytest.raises(grpc.RpcError) as failure:
                unary(warpdp_pb2.AlignRequest(pairs=packed_message(warpdp_pb2.AlignPairs, long_pair), cigar=True),
                      timeout=WAIT)
            assert failure.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "max_traceback_cells" in failure.value.details()  # the reason, not a generic one
        finally:
            channel.close()
    finally:
        server.stop()


def test_help_explains_columns_coordinates_gaps_and_ties(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["align", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for phrase in ("score, query_begin, query_end, target_begin, target_end", "0-based, end exclusive",
                   "gap_open + (L-1)*gap_extend", "gap_open + L*gap_extend", "Ties:", "alignment offset"):
        assert phrase in text, phrase


def test_out_is_filled_in_place() -> None:
    pairs = [("ACGT", "ACGT"), ("ACCT", "AGGT")]
    out = AlignResults.empty(2)
    found = align(pairs, out=out, backend="cpu")
    assert found is out and out.columns["score"].tolist() == [8, -2]
    with pytest.raises(ValueError, match="out.score"):
        align(pairs, out=AlignResults.empty(3), backend="cpu")


def test_c_driver_refuses_bad_arrays_naming_the_field() -> None:
    # Straight to the CPU backend, past the plugin's checks: the driver checks before it reads.
    from types import SimpleNamespace

    from warpdp.cython_cpu import align as cpu_align

    out = AlignResults.empty(1)
    params = AlignParams(cigar=True)
    bad_offsets = SimpleNamespace(query_bases=np.frombuffer(b"ACGT", np.uint8), query_offsets=np.array([0, 9]),
                                  target_bases=np.frombuffer(b"ACGT", np.uint8), target_offsets=np.array([0, 4]))
    with pytest.raises(ValueError, match="query_offsets is out of range"):
        cpu_align.run(bad_offsets, params, out, threads=1)
    empty_target = SimpleNamespace(query_bases=np.frombuffer(b"ACGT", np.uint8), query_offsets=np.array([0, 4]),
                                   target_bases=np.frombuffer(b"", np.uint8), target_offsets=np.array([0, 0]))
    with pytest.raises(ValueError, match="target_offsets is out of range"):
        cpu_align.run(empty_target, params, out, threads=1)
    good = AlignPairs.from_sequences([("ACGT", "ACGT")])
    with pytest.raises(ValueError, match="max_traceback_cells is out of range"):
        cpu_align.run(good, SimpleNamespace(**{**params.__dict__, "max_traceback_cells": 3,
                                               "score_matrix": params.score_matrix,
                                               "gap_costs": params.gap_costs}), out, threads=1)
