"""The `warpdp` command: text input, BAM/CRAM input, layouts and error reporting."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import warpdp
from warpdp.cli import main
from helpers.data import shared_file


def test_pairhmm_text_input_matches_gkl(tmp_path, capsys) -> None:
    out = tmp_path / "tiny.out"
    assert main(["pairhmm", str(shared_file("pairhmm", "tiny.in")), "-o", str(out), "--backend", "cpu",
                 "--threads", "2"]) == 0
    np.testing.assert_allclose(np.loadtxt(out), np.loadtxt(shared_file("pairhmm", "tiny.gkl.out")), atol=1e-4)


def test_records_layout_and_double(tmp_path) -> None:
    out = tmp_path / "tiny.records"
    assert main(["pairhmm", str(shared_file("pairhmm", "tiny.in")), "-o", str(out), "--backend", "cpu",
                 "--layout", "records", "--double"]) == 0
    lines = out.read_text().splitlines()
    values, i = [], 0
    while i < len(lines):
        n_reads, n_haps = map(int, lines[i].split())
        rows = [list(map(float, line.split())) for line in lines[i + 1:i + 1 + n_reads]]
        assert all(len(row) == n_haps for row in rows)
        values.extend(v for row in rows for v in row)
        i += 1 + n_reads
    np.testing.assert_allclose(values, np.loadtxt(shared_file("pairhmm", "tiny.gkl.out")), atol=1e-4)


def test_stdin_and_progress_chunks(tmp_path, monkeypatch, capsys) -> None:
    text = "1 1\nACGT IIII IIII IIII ++++\nACGT\n2 1\nAC II II II ++\nGT II II II ++\nACGT\n"
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(text))
    monkeypatch.setattr("warpdp.cli.PROGRESS_CHUNK_CELLS", 1)  # one chunk per record
    assert main(["pairhmm", "-", "--backend", "cpu", "--progress", "always"]) == 0
    captured = capsys.readouterr()
    values = [float(v) for v in captured.out.split()]
    assert len(values) == 3 and all(v < 0 for v in values)
    assert "pairhmm" in captured.err  # the progress bar


def test_errors_are_reported_without_traceback(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.in"
    bad.write_text("1 1\nACGT IIII IIII IIII\nACGT\n")
    assert main(["pairhmm", str(bad), "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "bad.in, line 2: a read line needs 5 fields" in err and "Traceback" not in err
    assert main(["pairhmm", "--backend", "cpu"]) == 2
    assert "no input" in capsys.readouterr().err
    assert main(["pairhmm", str(bad), "--reads", str(bad)]) == 2
    assert "either INPUT or --reads" in capsys.readouterr().err


def test_entry_point_runs_as_a_module() -> None:
    result = subprocess.run([sys.executable, "-m", "warpdp", "info"], capture_output=True, text=True, check=True)
    assert "variants: scalar" in result.stdout and "GPU (xdrop)" in result.stdout
    assert "\nGPU kernels: " in result.stdout  # fatbin or NVRTC, per family (tests/test_fatbin.py)


def _write_bam_fixture(tmp_path):
    pysam = pytest.importorskip("pysam", reason="BAM input needs pysam (pip install 'warpdp[bam]')")
    rng = np.random.default_rng(11)
    contig = rng.choice(list("ACGT"), 2000).tolist()
    hap_a = "".join(contig[900:1200])
    hap_b = hap_a[:150] + "T" + hap_a[151:]
    fasta = tmp_path / "haps.fa"
    fasta.write_text(f">hapA\n{hap_a}\n>hapB\n{hap_b.lower()}\n")
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": "chr1", "LN": 2000}]}
    unsorted = tmp_path / "reads.unsorted.bam"
    expected_reads = []
    with pysam.AlignmentFile(str(unsorted), "wb", header=header) as bam:
        for k, start in enumerate(range(950, 1100, 10)):
            read = pysam.AlignedSegment()
            read.query_name = f"r{k}"
            seq = "".join(contig[start:start + 100])
            read.query_sequence = seq
            read.flag = 0
            read.reference_id = 0
            read.reference_start = start
            read.mapping_quality = 60 if k != 3 else 5  # r3 is filtered by mapping quality
            read.cigartuples = [(0, 100)]
            quals = rng.integers(10, 41, 100).tolist()
            read.query_qualities = pysam.qualitystring_to_array("".join(chr(q + 33) for q in quals))
            ins = dels = [45] * 100
            if k % 2 == 0:
                ins = rng.integers(30, 46, 100).tolist()
                dels = rng.integers(30, 46, 100).tolist()
                read.set_tag("BI", "".join(chr(q + 33) for q in ins))
                read.set_tag("BD", "".join(chr(q + 33) for q in dels))
            if k == 5:
                read.flag = 1024  # duplicates are skipped
            bam.write(read)
            if k not in (3, 5):
                expected_reads.append(warpdp.PairHmmRead(seq, bytes(quals), bytes(ins), bytes(dels), bytes([10] * 100)))
    bam_path = tmp_path / "reads.bam"
    pysam.sort("-o", str(bam_path), str(unsorted))
    pysam.index(str(bam_path))
    return bam_path, fasta, expected_reads, [hap_a, hap_b.upper()]


def test_bam_region_input(tmp_path) -> None:
    bam_path, fasta, expected_reads, haps = _write_bam_fixture(tmp_path)
    out = tmp_path / "bam.out"
    assert main(["pairhmm", "--reads", str(bam_path), "--region", "chr1:900-1300", "--haplotypes", str(fasta),
                 "--backend", "cpu", "-o", str(out)]) == 0
    expected = warpdp.score_reads(expected_reads, haps, backend="cpu").reshape(-1)
    # BAM input names every pair by default (--layout tsv): read name, haplotype name, value.
    lines = out.read_text().splitlines()
    assert lines[0] == "read\thaplotype\tlog10_likelihood"
    rows = [line.split("\t") for line in lines[1:]]
    read_names = [f"r{k}" for k in range(15) if k not in (3, 5)]  # r3 (low MAPQ) and r5 (duplicate) skipped
    assert [(r, h) for r, h, _ in rows] == [(r, h) for r in read_names for h in ("hapA", "hapB")]
    np.testing.assert_array_equal([float(v) for _, _, v in rows], np.round(expected, 8))
    lines_out = tmp_path / "bam.lines"
    assert main(["pairhmm", "--reads", str(bam_path), "--region", "chr1:900-1300", "--haplotypes", str(fasta),
                 "--backend", "cpu", "--layout", "lines", "-o", str(lines_out)]) == 0
    np.testing.assert_array_equal(np.loadtxt(lines_out), np.round(expected, 8))


def test_tsv_layout_for_the_text_format(tmp_path) -> None:
    out = tmp_path / "tiny.tsv"
    source = shared_file("pairhmm", "tiny.in")
    assert main(["pairhmm", str(source), "--backend", "cpu", "--layout", "tsv", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "read\thaplotype\tlog10_likelihood"
    rows = [line.split("\t") for line in lines[1:]]
    np.testing.assert_allclose([float(v) for _, _, v in rows], np.loadtxt(shared_file("pairhmm", "tiny.gkl.out")),
                               atol=1e-4)
    # Names from the record shapes of the input itself: rec<b>.read<i> x rec<b>.hap<j>, read-major.
    expected, text = [], source.read_text().split()
    position, record = 0, 0
    while position < len(text):
        n_reads, n_haps = int(text[position]), int(text[position + 1])
        expected += [(f"rec{record}.read{i}", f"rec{record}.hap{j}") for i in range(n_reads) for j in range(n_haps)]
        position += 2 + 5 * n_reads + n_haps
        record += 1
    assert [(r, h) for r, h, _ in rows] == expected


def test_bam_errors(tmp_path, capsys) -> None:
    bam_path, fasta, _, _ = _write_bam_fixture(tmp_path)
    assert main(["pairhmm", "--reads", str(bam_path), "--region", "chr9:1-10", "--haplotypes", str(fasta)]) == 2
    assert "cannot fetch region 'chr9:1-10'" in capsys.readouterr().err
    assert main(["pairhmm", "--reads", str(bam_path), "--region", "chr1:1-10", "--haplotypes", str(fasta)]) == 2
    assert "no usable reads in region" in capsys.readouterr().err
    assert main(["pairhmm", "--reads", str(bam_path), "--region", "chr1:900-1300"]) == 2
    assert "needs all of --reads, --region and --haplotypes" in capsys.readouterr().err


def test_scoring_through_a_server_equals_in_process(tmp_path) -> None:
    from warpdp.grpc import Server

    with Server(host="127.0.0.1", port=0, backend="cpu") as server:
        through = tmp_path / "server.out"
        local = tmp_path / "local.out"
        assert main(["pairhmm", str(shared_file("pairhmm", "tiny.in")), "--server", f"127.0.0.1:{server.port}",
                     "-o", str(through)]) == 0
        assert main(["pairhmm", str(shared_file("pairhmm", "tiny.in")), "--backend", "cpu", "-o", str(local)]) == 0
        assert through.read_text() == local.read_text()
