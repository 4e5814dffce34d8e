"""The benchmark scripts still run (tiny settings, CPU): they use the client's internals."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def test_grpc_load_runs_every_path_and_writes_its_section(tmp_path):
    out = tmp_path / "section.md"
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "grpc_load.py"), "--backend", "cpu",
                          "--clients", "1", "--duration", "0.3", "--rounds", "1", "--large-cells", "1e8",
                          "--repeats", "1", "--content", "gatk", "--out", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    section = out.read_text()
    for path in ("in-process `warpdp.pairhmm`", "`Client.pairhmm`", "`PairHmmStream`, arrays in messages"):
        assert path in section
    assert "| on | 1 |" in section and "| off | 1 |" in section


def test_grpc_large_times_every_stage_both_ways_and_end_to_end(tmp_path):
    out = tmp_path / "section.md"
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "grpc_large.py"), "--mb", "0.3", "--repeats", "1",
                          "--end-to-end", "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    section = out.read_text()
    for family in ("pairhmm", "xdrop", "seedext", "align", "edit"):
        for path in ("library", "wire"):
            assert f"| {family} | {path} | client build |" in section
            assert f"| {family} | {path} | server decode |" in section
    assert "| pairhmm | wire | server reply |" in section and "| seedext | library | client store |" in section
    for path in ("in-process", "remote client", "streamed"):
        assert f"| {path} |" in section


def test_fuzz_server_runs_a_short_fuzz_and_passes(tmp_path):
    out = tmp_path / "fuzz.md"
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "fuzz_server.py"), "--requests", "300",
                          "--seed", "5", "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = out.read_text()
    assert "- requests: 300 in" in report and "result: PASS" in report


def test_align_benchmark_runs_its_cpu_rows():
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "align.py"), "--no-gpu", "--pairs", "0",
                          "--cigar-pairs", "0", "--cpu-pairs", "20", "--lengths", "60"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "| 60 | CPU, 1 thread (" in run.stdout and ") | score only | 20 |" in run.stdout
    assert ") | CIGAR | 20 |" in run.stdout


def test_parsing_benchmark_times_every_reader(tmp_path):
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "parsing.py"), "--mb", "1", "1", "1",
                          "--repeats", "1", "--dir", str(tmp_path)],
                         cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr[-3000:]
    for fmt in ("logan", "seedext", "pairhmm"):
        assert f"| {fmt} | 1 | C scanner |" in run.stdout and f"| {fmt} | 1 | line by line (before) |" in run.stdout


def test_xdrop_cli_times_whole_processes_on_the_cpu():
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "xdrop_cli.py"), "--backend", "cpu",
                          "--threads", "1", "--pairs", "30", "--x", "10", "100", "--repeats", "1",
                          "--check-pairs", "5"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "workload: 30 pairs" in run.stdout
    assert re.search(r"^\| 10 \| [0-9.]+ \| [0-9.]+ \| - \|", run.stdout, re.MULTILINE)
    assert re.search(r"^\| 100 \| [0-9.]+ \| [0-9.]+ \| - \|", run.stdout, re.MULTILINE)
    assert "scores: not compared" in run.stdout


def test_xdrop_cli_writes_the_workload_as_logan_text_the_cli_reads_back(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from xdrop import SEED_LENGTH, make_workload
        from xdrop_cli import write_logan_text
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    from warpdp.plugin.xdrop_io import read_logan_text

    pairs = make_workload(7, seed=3, min_len=40, max_len=90)
    path = tmp_path / "pairs.txt"
    write_logan_text(pairs, path)
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(line.count(b"\t") == 4 and line.endswith(b"\tn") for line in lines[:-1])
    back = read_logan_text(path, k=SEED_LENGTH)
    for name in ("h_bases", "h_offsets", "v_bases", "v_offsets", "h_pos", "v_pos"):
        assert np.array_equal(getattr(back, name), getattr(pairs, name)), name


def test_align_cpu_benchmark_runs_its_warpdp_rows():
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "align_cpu.py"), "--no-parasail", "--pairs", "20",
                          "--lengths", "60", "--modes", "global,extension", "--repeats", "1"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    for row in ("| 60 | global | score |", "| 60 | global | CIGAR |", "| 60 | extension | score |"):
        assert row in run.stdout


def test_gatk_sw_benchmark_runs_its_warpdp_rows_and_checks_them():
    from helpers.data import shared_file

    data = shared_file("sw", "gatk-sw-600.tsv").parent
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gatk_sw.py"), "--no-gkl", "--calls", "40",
                          "--repeats", "1", "--data", str(data)],
                         cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "| NEW_SW_PARAMETERS | " in run.stdout and "| all | 40 | scalar |" in run.stdout
    assert "results: every call equal to GKL's" in run.stdout
