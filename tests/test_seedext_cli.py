"""`warpdp seedext`: TSV and FASTA input, parameters as options, output format, errors."""
from __future__ import annotations

import io

import pytest

from helpers.data import shared_file
from warpdp.cli import main

ALT = ["-a", "2", "-b", "5", "--o-del", "5", "--e-del", "2", "--o-ins", "7", "--e-ins", "1", "-w", "30",
       "--end-bonus", "0", "--zdrop", "50"]


def test_tsv_matches_bwa_with_default_and_alt_parameters(tmp_path) -> None:
    pairs = str(shared_file("seedext", "bwamem-like-500.tsv"))
    out = tmp_path / "default.out"
    assert main(["seedext", pairs, "-o", str(out), "--backend", "cpu", "--threads", "2"]) == 0
    assert out.read_text() == shared_file("seedext", "bwamem-like-500.ksw_extend2.out").read_text()
    alt = tmp_path / "alt.out"
    assert main(["seedext", pairs, "-o", str(alt), "--backend", "cpu", *ALT]) == 0
    assert alt.read_text() == shared_file("seedext", "bwamem-like-500.alt.ksw_extend2.out").read_text()


def test_stdin_and_stdout(monkeypatch, capsys) -> None:
    text = "# a comment\nACGTACGTAC\tACGTACGTACGG\t20\n\n\tACGT\t30\nACGT ACGA 7\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["seedext", "-", "--backend", "cpu"]) == 0
    assert capsys.readouterr().out.splitlines() == ["30 10 10 10 30 0", "30 0 0 1 23 0", "10 3 3 4 6 0"]


def test_fasta_pairs(tmp_path, capsys) -> None:
    pytest.importorskip("pysam", reason="FASTA input needs pysam (pip install 'warpdp[bam]')")
    queries = tmp_path / "q.fa"
    targets = tmp_path / "t.fa"
    queries.write_text(">r1 h0=20\nACGTACGT\nAC\n>r2\nACGT\n>r3 other h0=7 words\nACGT\n")
    targets.write_text(">w1\nACGTACGTACGG\n>w2\nACGT\n>w3\nACGA\n")
    assert main(["seedext", str(queries), "--targets", str(targets), "--h0", "30", "--backend", "cpu"]) == 0
    assert capsys.readouterr().out.splitlines() == ["30 10 10 10 30 0", "34 4 4 4 34 0", "10 3 3 4 6 0"]


def test_fasta_errors(tmp_path, capsys) -> None:
    pytest.importorskip("pysam", reason="FASTA input needs pysam (pip install 'warpdp[bam]')")
    queries = tmp_path / "q.fa"
    targets = tmp_path / "t.fa"
    queries.write_text(">r1\nACGT\n>r2 h0=3\nACGT\n")
    targets.write_text(">w1\nACGT\n")
    assert main(["seedext", str(queries), "--targets", str(targets), "--h0", "5"]) == 2
    assert "different numbers of records" in capsys.readouterr().err
    targets.write_text(">w1\nACGT\n>w2\nACGT\n")
    assert main(["seedext", str(queries), "--targets", str(targets)]) == 2
    assert "record 1 (r1): no h0=N" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "options", "message"), [
    ("ACGT\tACGT\n", [], "line 1: expected 3 fields"),
    ("ACGT\tACGT\tx1\n", [], "line 1: h0 must be an integer"),
    ("ACGT\tACGT\t-4\n", [], "line 1: h0 must be within"),
    ("ACGT\tACGT\t4\n", ["--e-del", "0"], "e_del must be within 1"),
    ("ACGT\tACGT\t4\n", ["-w", "-1"], "w must be within"),
    ("ACGT\tACGT\t4\n", ["--h0", "3"], "--h0 applies to FASTA input"),
])
def test_errors_exit_2_with_a_message(tmp_path, capsys, text, options, message) -> None:
    path = tmp_path / "pairs.tsv"
    path.write_text(text)
    assert main(["seedext", str(path), "--backend", "cpu", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith("warpdp: error: ") and message in err


def test_missing_file(capsys) -> None:
    assert main(["seedext", "/nonexistent/pairs.tsv"]) == 2
    assert "warpdp: error:" in capsys.readouterr().err
