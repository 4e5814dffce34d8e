"""X-drop API shape, input validation, formats and the `warpdp xdrop` command."""
from __future__ import annotations

import io

import numpy as np
import pytest

import warpdp
from helpers.data import shared_file
from warpdp.cli import main
from warpdp.plugin.core.results import Results
from warpdp.plugin.backend import BackendUnavailableError, gpu_status
from warpdp.plugin.xdrop import XdropPair, XdropPairs, XdropResults, pack_xdrop_pairs, xdrop, xdrop_pair
from warpdp.plugin.xdrop_io import read_logan_text, read_xdrop_fastx, read_xdrop_results, write_xdrop_results


def small_pairs() -> XdropPairs:
    return pack_xdrop_pairs([("ACGTACGTAAAA", 4, "ACGTACGTAAAA", 4), XdropPair("TTTTGGGG", 2, "TTGGGG", 0)])


def test_results_layout_and_public_names() -> None:
    pairs = small_pairs()
    results = warpdp.xdrop(pairs, k=4, x=5, backend="cpu")
    assert isinstance(results, XdropResults) and len(results) == 2
    table = results.as_array()
    assert table.dtype == np.int64 and table.shape == (2, 5)
    assert tuple(table[0]) == (12, 0, 12, 0, 12)
    for i, column in enumerate(XdropResults.COLUMNS):
        np.testing.assert_array_equal(table[:, i], getattr(results, column))
    assert results.n_cells == int(results.cells.sum()) > 0
    assert xdrop_pair("ACGTACGTAAAA", 4, "ACGTACGTAAAA", 4, k=4, x=5) == (12, 0, 12, 0, 12)
    assert warpdp.xdrop_cpu_isas()[0] == "scalar"


def test_results_are_shared_results_columns() -> None:
    results = warpdp.xdrop(small_pairs(), k=4, x=5, backend="cpu")
    assert isinstance(results, Results) and not results.has_cigar
    assert list(results) == [*XdropResults.COLUMNS, "cells"]
    assert results.row(0)["score"] == 12
    part = results[1:]
    assert isinstance(part, XdropResults) and part.score.tolist() == results.score[1:].tolist()
    assert XdropResults.concat([results[:1], part]) == results


def test_select_and_empty_input() -> None:
    pairs = small_pairs()
    whole = xdrop(pairs, k=4, x=5, backend="cpu").as_array()
    np.testing.assert_array_equal(xdrop(pairs.select(1, 2), k=4, x=5, backend="cpu").as_array(), whole[1:])
    empty = pairs.select(0, 0)
    assert len(empty) == 0 and xdrop(empty, k=4, x=5, backend="cpu").as_array().shape == (0, 5)


def test_from_arrays_accepts_int32_and_bytes() -> None:
    pairs = XdropPairs.from_arrays(h_bases=b"ACGTACGT", h_offsets=np.array([0, 8], dtype=np.int32),
                                   v_bases=b"ACGTACGT", v_offsets=[0, 8], h_pos=[2], v_pos=[2])
    assert pairs.h_offsets.dtype == np.int64
    assert tuple(xdrop(pairs, k=3, x=2, backend="cpu").as_array()[0]) == (8, 0, 8, 0, 8)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    (dict(k=0), ValueError, "k (the seed length) must be at least 1"),
    (dict(k=-3), ValueError, "k (the seed length) must be at least 1"),
    (dict(k=True), TypeError, "k must be an int"),
    (dict(k=2.0), TypeError, "k must be an int"),
    (dict(k=5), ValueError, "seed of pair 1 lies outside H: h_pos[1] = 1 with k = 5 needs 6 bases but H has 5"),
    (dict(x=-1), ValueError, "x (the X-drop) must be within 0..2^62"),
    (dict(match=0), ValueError, "match must be positive"),
    (dict(mismatch=0), ValueError, "mismatch must be negative"),
    (dict(gap=1), ValueError, "gap must be negative"),
    (dict(match=2**31), ValueError, "match must be within"),
    (dict(report="first"), ValueError, "report must be one of longest, best"),
    (dict(backend="tpu"), ValueError, "backend must be one of"),
    (dict(cpu_isa="sse2"), ValueError, "cpu_isa (or WARPDP_CPU_ISA) must be one of"),
])
def test_bad_parameters(kwargs, error, message) -> None:
    pairs = pack_xdrop_pairs([("ACGTACGT", 0, "ACGTACGT", 0), ("ACGTA", 1, "ACGT", 0)])
    options = dict(k=2, x=5, backend="cpu") | kwargs
    with pytest.raises(error) as info:
        xdrop(pairs, **options)
    assert message in str(info.value)


def test_seed_outside_a_sequence() -> None:
    with pytest.raises(ValueError, match=r"seed of pair 0 lies outside H: h_pos\[0\] = 6 with k = 3 needs 9"):
        xdrop(pack_xdrop_pairs([("ACGTACGT", 6, "ACGTACGT", 0)]), k=3, x=5, backend="cpu")
    with pytest.raises(ValueError, match=r"seed of pair 0 lies outside V: v_pos\[0\] = 1 with k = 3 needs 4 bases"):
        xdrop(pack_xdrop_pairs([("ACGTACGT", 0, "ACG", 1)]), k=3, x=5, backend="cpu")
    with pytest.raises(ValueError, match=r"seed of pair 0 lies outside its sequence: v_pos\[0\] = -1"):
        pack_xdrop_pairs([("ACGTACGT", 0, "ACGTACGT", -1)])


def test_bases_other_than_acgtn_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"h_bases: pair 1 has 'R' at position 2; only A, C, G, T and N"):
        pack_xdrop_pairs([("ACGT", 0, "ACGT", 0), ("ACRT", 0, "ACGT", 0)])
    # Packed arrays are checked while the kernel reads them (also inside the seed).
    for bad in (b"ACGTAC-T", b"ACG\x00ACGT"):
        pairs = XdropPairs.from_arrays(h_bases=b"ACGTACGT" + bad, h_offsets=[0, 8, 16],
                                       v_bases=b"ACGTACGT" * 2, v_offsets=[0, 8, 16], h_pos=[0, 2], v_pos=[0, 2])
        for isa in warpdp.xdrop_cpu_isas():
            with pytest.raises(ValueError, match=r"h_bases: pair 1 has .* at position [36]"):
                xdrop(pairs, k=3, x=5, backend="cpu", cpu_isa=isa)


@pytest.mark.parametrize(("arrays", "error", "message"), [
    (dict(h_bases=np.zeros(8, dtype=np.int8)), TypeError, "h_bases must have dtype uint8"),
    (dict(h_bases=[65] * 8), TypeError, "h_bases must be a numpy uint8 array or bytes"),
    (dict(h_offsets=[0.0, 8.0]), TypeError, "h_offsets must hold integers"),
    (dict(v_pos=[True]), TypeError, "v_pos must hold integers"),
    (dict(h_offsets=[[0, 8]]), ValueError, "h_offsets must be 1-D"),
    (dict(h_offsets=[1, 8]), ValueError, "h_offsets must start at 0"),
    (dict(v_offsets=[0, 7]), ValueError, "v_offsets must end at 8"),
    (dict(h_offsets=[0, 9, 8]), ValueError, "h_offsets must have n_pairs + 1 = 2 entries"),
    (dict(v_pos=[0, 1]), ValueError, "v_pos has 2 entries but h_pos has 1"),
])
def test_bad_arrays(arrays, error, message) -> None:
    base = dict(h_bases=b"ACGTACGT", h_offsets=[0, 8], v_bases=b"ACGTACGT", v_offsets=[0, 8], h_pos=[0], v_pos=[0])
    with pytest.raises(error) as info:
        XdropPairs.from_arrays(**(base | arrays))
    assert message in str(info.value)
    with pytest.raises(TypeError, match="missing v_pos"):
        XdropPairs.from_arrays(**{k: v for k, v in base.items() if k != "v_pos"})
    with pytest.raises(TypeError, match="pairs must be XdropPairs"):
        xdrop([("ACGT", 0, "ACGT", 0)], k=2, x=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected XdropPair"):
        pack_xdrop_pairs(["ACGT"])  # type: ignore[list-item]


def test_decreasing_offsets_are_named() -> None:
    with pytest.raises(ValueError, match=r"h_offsets must not decrease \(pair 0: 0 -> 9\)|must not decrease"):
        XdropPairs.from_arrays(h_bases=b"ACGTACGT", h_offsets=[0, 9, 8], v_bases=b"ACGTACGT", v_offsets=[0, 4, 8],
                               h_pos=[0, 0], v_pos=[0, 0])


def test_gpu_backend_unavailable_is_reported() -> None:
    if gpu_status("xdrop")[0]:
        pytest.skip("a GPU is usable here")
    with pytest.raises(BackendUnavailableError, match="backend='gpu' was requested for xdrop"):
        xdrop(small_pairs(), k=4, x=5, backend="gpu")


def test_logan_text_errors_name_the_line(tmp_path) -> None:
    cases = {
        "ACGT\t0\tACGT\t0\n": "expected 5 fields",
        "ACGT\tzero\tACGT\t0\tn\n": "posV and posH must be integers",
        "ACGT\t0\tACGT\t0\tx\n": "strand must be 'n' or 'c'",
        "ACGT\t0\tACXT\t0\tn\n": "seqH has 'X' at position 2",
        "ACGT\t3\tACGT\t0\tn\n": "the seed lies outside seqV (posV = 3, k = 2, seqV has 4 bases)",
        "ACGT\t0\tACGT\t3\tc\n": "the seed lies outside seqH",
    }
    for text, message in cases.items():
        path = tmp_path / "bad.tsv"
        path.write_text("AAAA\t0\tAAAA\t0\tn\n\n" + text)
        with pytest.raises(ValueError) as info:
            read_logan_text(path, k=2)
        assert f"bad.tsv, line 3: {message}" in str(info.value)


def test_result_lines_round_trip() -> None:
    results = xdrop(small_pairs(), k=4, x=5, backend="cpu")
    out = io.StringIO()
    write_xdrop_results(results, out)
    assert out.getvalue().splitlines()[0] == "12 0 12 0 12"
    np.testing.assert_array_equal(read_xdrop_results(io.StringIO(out.getvalue())), results.as_array())


def write_fastx_inputs(tmp_path, lines: list[str]) -> tuple:
    """The LOGAN lines as V FASTA, H FASTQ and a seeds file (tests reading them need pysam)."""
    pytest.importorskip("pysam", reason="FASTA/FASTQ input needs pysam (pip install 'warpdp[bam]')")
    v_path, h_path, seeds = tmp_path / "v.fa", tmp_path / "h.fq", tmp_path / "seeds.txt"
    with open(v_path, "w") as v, open(h_path, "w") as h, open(seeds, "w") as s:
        for i, line in enumerate(lines):
            seq_v, pos_v, seq_h, pos_h, strand = line.split("\t")
            v.write(f">v{i} some comment\n{seq_v[:50]}\n{seq_v[50:]}\n")
            h.write(f"@h{i}\n{seq_h}\n+\n{'I' * len(seq_h)}\n")
            s.write(f"{pos_v} {pos_h} {strand}\n")
    return v_path, h_path, seeds


def test_fastx_pairs_match_the_text_format(tmp_path) -> None:
    path = shared_file("xdrop", "logan-example.tsv")
    lines = path.read_text().splitlines()[:6]
    v_path, h_path, seeds = write_fastx_inputs(tmp_path, lines)
    from_fastx = read_xdrop_fastx(v_path, h_path, seeds, k=17)
    from_text = read_logan_text(io.StringIO("\n".join(lines)), k=17)
    for field in ("h_bases", "h_offsets", "v_bases", "v_offsets", "h_pos", "v_pos"):
        np.testing.assert_array_equal(getattr(from_fastx, field), getattr(from_text, field))
    (tmp_path / "short.txt").write_text("".join(f"{ln.split()[1]} {ln.split()[3]}\n" for ln in lines[:5]))
    with pytest.raises(ValueError, match="has more records than"):
        read_xdrop_fastx(v_path, h_path, tmp_path / "short.txt", k=17)
    (tmp_path / "long.txt").write_text(seeds.read_text() + "0 0\n")
    with pytest.raises(ValueError, match=r"long.txt, line 7: .*v.fa has fewer records than"):
        read_xdrop_fastx(v_path, h_path, tmp_path / "long.txt", k=17)


def test_cli_text_input_matches_seqan(tmp_path) -> None:
    out = tmp_path / "out.txt"
    assert main(["xdrop", str(shared_file("xdrop", "logan-example.tsv")), "-k", "17", "-x", "5", "-o", str(out),
                 "--backend", "cpu", "--threads", "2"]) == 0
    assert out.read_text() == shared_file("xdrop", "logan-example.x5.seqan.out").read_text().rstrip("\n") + "\n"


def test_cli_fastx_stdin_best_and_scores(tmp_path, monkeypatch, capsys) -> None:
    lines = shared_file("xdrop", "synthetic-300.tsv").read_text().splitlines()[:8]
    v_path, h_path, seeds = write_fastx_inputs(tmp_path, lines)
    options = ["-k", "17", "-x", "30", "--match", "2", "--mismatch", "-3", "--gap", "-2", "--report", "best",
               "--backend", "cpu"]
    assert main(["xdrop", str(v_path), "--seqs-h", str(h_path), "--seeds", str(seeds), *options]) == 0
    from_fastx = capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["xdrop", "-", *options]) == 0
    from_text = capsys.readouterr().out
    assert from_fastx == from_text and len(from_text.splitlines()) == 8
    expected = xdrop(read_logan_text(io.StringIO("\n".join(lines)), k=17), k=17, x=30, match=2, mismatch=-3,
                     gap=-2, report="best", backend="cpu").as_array()
    assert [list(map(int, row.split())) for row in from_text.splitlines()] == expected.tolist()


def test_cli_errors(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("ACGT\t0\tACGT\t0\n")
    assert main(["xdrop", str(bad), "-k", "2", "-x", "5", "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "warpdp: error: " in err and "bad.tsv, line 1: expected 5 fields" in err and "Traceback" not in err
    assert main(["xdrop", str(bad), "-k", "0", "-x", "5"]) == 2
    assert "k (the seed length) must be at least 1" in capsys.readouterr().err
    assert main(["xdrop", str(bad), "-k", "2", "-x", "5", "--gap", "0"]) == 2
    assert "gap must be negative" in capsys.readouterr().err
    assert main(["xdrop", str(bad), "-k", "2", "-x", "5", "--seeds", str(bad)]) == 2
    assert "needs both --seqs-h and --seeds" in capsys.readouterr().err
    assert main(["xdrop", str(tmp_path / "missing.tsv"), "-k", "2", "-x", "5"]) == 2
    assert "missing.tsv" in capsys.readouterr().err


def test_params_object_and_keywords_give_the_same_results() -> None:
    pairs = small_pairs()
    params = warpdp.XdropParams(k=4, x=5, report="best")
    by_keywords = xdrop(pairs, k=4, x=5, report="best", backend="cpu")
    by_params = xdrop(pairs, params, backend="cpu")
    np.testing.assert_array_equal(by_params.as_array(), by_keywords.as_array())
    out = XdropResults.empty(len(pairs))
    assert xdrop(pairs, params, backend="cpu", out=out) is out
    np.testing.assert_array_equal(out.as_array(), by_keywords.as_array())
    assert xdrop_pair("ACGTACGTAAAA", 4, "ACGTACGTAAAA", 4, params) == tuple(by_params.as_array()[0])
    with pytest.raises(TypeError, match="either params or keyword parameters"):
        xdrop(pairs, params, x=6, backend="cpu")
    with pytest.raises(ValueError, match=r"out.score has 1 entries but there are 2 pairs"):
        xdrop(pairs, params, backend="cpu", out=XdropResults.empty(1))
    with pytest.raises(TypeError, match="out must be XdropResults, not ndarray"):
        xdrop(pairs, params, backend="cpu", out=np.zeros(2, np.int64))


def test_params_validate_themselves_naming_the_field() -> None:
    with pytest.raises(ValueError, match="k \\(the seed length\\) must be at least 1"):
        warpdp.XdropParams(k=0, x=5)
    with pytest.raises(ValueError, match="mismatch must be negative"):
        warpdp.XdropParams(k=4, x=5, mismatch=1)
    with pytest.raises(ValueError, match="report must be one of"):
        warpdp.XdropParams(k=4, x=5).replace(report="widest")
    with pytest.raises(TypeError, match="unexpected keyword argument.*: y"):
        xdrop(small_pairs(), k=4, x=5, y=1, backend="cpu")
    params = warpdp.XdropParams(k=np.int64(4), x=np.int32(5))
    assert type(params.k) is int and type(params.x) is int
    with pytest.raises(AttributeError):
        params.k = 5  # frozen
