"""The benchmark scripts still run (tiny settings, CPU): they use the client's internals."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def test_align_cpu_benchmark_runs_its_warpdp_rows():
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "align_cpu.py"), "--no-parasail", "--pairs", "20",
                          "--lengths", "60", "--modes", "global,extension", "--repeats", "1"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    for row in ("| 60 | global | score |", "| 60 | global | CIGAR |", "| 60 | extension | score |"):
        assert row in run.stdout
