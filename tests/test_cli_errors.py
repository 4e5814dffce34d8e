"""The `warpdp` command as a user meets it (issue #30): every bad input gives one line
`warpdp: error: <what, naming the file or option>` and exit status 2, never a traceback;
Ctrl-C gives 130; empty input a warning; gzipped and lower-case input read as plain upper case."""
from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers.data import shared_file

REPO = Path(__file__).resolve().parents[1]


def warpdp(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
           cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m warpdp ARGS` with this checkout's package, as a user runs it."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "warpdp", *args], input=stdin, capture_output=True,
                          env=full_env, cwd=cwd or REPO, timeout=120)


def assert_usage_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    err = result.stderr.decode()
    assert result.returncode == 2, (result.returncode, err)
    assert err.startswith("warpdp: error: "), err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_a_directory_as_input(tmp_path) -> None:
    assert_usage_error(warpdp("pairhmm", str(tmp_path), "--backend", "cpu"), str(tmp_path), "is a directory")
    assert_usage_error(warpdp("xdrop", str(tmp_path), "-k", "17", "-x", "5"), "INPUT", "is a directory")


def test_missing_files_name_their_option(tmp_path) -> None:
    reads = tmp_path / "reads.bam"
    reads.write_bytes(b"")
    result = warpdp("pairhmm", "--reads", str(reads), "--region", "chr1:1-10", "--haplotypes", "missing.fa")
    assert_usage_error(result, "--haplotypes missing.fa: no such file")
    assert_usage_error(warpdp("seedext", "nothing-here.tsv"), "INPUT nothing-here.tsv: no such file")
    assert_usage_error(warpdp("align", str(reads), "--targets", "no-targets.fa"), "--targets no-targets.fa")


def test_thread_counts_out_of_range() -> None:
    example = str(REPO / "examples" / "example.in")
    assert_usage_error(warpdp("pairhmm", example, "--backend", "cpu", "--threads", "99999999999"),
                       "threads must be at most 1024, not 99999999999")
    assert_usage_error(warpdp("pairhmm", example, "--backend", "cpu", "--threads", "0"), "threads must be at least 1")
    # Without --threads, OMP_NUM_THREADS is the count (checked like --threads).
    assert_usage_error(warpdp("pairhmm", example, "--backend", "cpu", env={"OMP_NUM_THREADS": "lots"}),
                       "OMP_NUM_THREADS must be a whole number")


def test_api_threads_out_of_range_is_a_value_error() -> None:
    import warpdp as api

    pairs = api.pack_xdrop_pairs([api.XdropPair("ACGTACGTACGTACGTACGT", 0, "ACGTACGTACGTACGTACGT", 0)])
    with pytest.raises(ValueError, match="threads must be at most 1024, not 1000000000000"):
        api.xdrop(pairs, k=17, x=10, backend="cpu", threads=10**12)


def test_omp_num_threads_is_honoured_without_threads(monkeypatch) -> None:
    from warpdp.plugin.core.backend import resolve_threads

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert resolve_threads(None) == 3
    assert resolve_threads(5) == 5  # an explicit count wins
    monkeypatch.setenv("OMP_NUM_THREADS", "2,1")  # one count per nesting level: the first is ours
    assert resolve_threads(None) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "0")
    with pytest.raises(ValueError, match="OMP_NUM_THREADS"):
        resolve_threads(None)
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert resolve_threads(None) == len(os.sched_getaffinity(0))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_names_the_output() -> None:
    example = str(REPO / "examples" / "example.in")
    assert_usage_error(warpdp("pairhmm", example, "--backend", "cpu", "-o", "/dev/full"),
                       "/dev/full: no space left on the device")
    with open("/dev/full", "wb") as full:
        result = subprocess.run([sys.executable, "-m", "warpdp", "pairhmm", example, "--backend", "cpu"],
                                stdout=full, stderr=subprocess.PIPE, cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert result.returncode == 2
    assert result.stderr.decode() == "warpdp: error: standard output: no space left on the device\n"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_stdout_sent_to_devnull_leaves_no_descriptor_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from warpdp import cli

    with open(tmp_path / "out", "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        before = sorted(os.listdir("/proc/self/fd"))
        cli._stdout_to_devnull()  # after a failed write to standard output
        assert sorted(os.listdir("/proc/self/fd")) == before
        assert os.path.realpath(f"/proc/self/fd/{stdout.fileno()}") == os.devnull


def _fasta_and_cram(tmp_path: Path) -> tuple[Path, Path, Path]:
    pysam = pytest.importorskip("pysam", reason="BAM/CRAM input needs pysam (pip install 'warpdp[bam]')")
    reference = tmp_path / "ref.fa"
    reference.write_text(">chr1\n" + "ACGTTGCA" * 250 + "\n")
    pysam.faidx(str(reference))
    haplotypes = tmp_path / "haps.fa"
    haplotypes.write_text(">h1\n" + "ACGTTGCA" * 8 + "\n")
    cram = tmp_path / "reads.cram"
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": "chr1", "LN": 2000}]}
    with pysam.AlignmentFile(str(cram), "wc", header=header, reference_filename=str(reference)) as out:
        read = pysam.AlignedSegment()
        read.query_name, read.query_sequence, read.flag = "r0", "ACGTTGCA" * 5, 0
        read.reference_id, read.reference_start, read.mapping_quality = 0, 96, 60
        read.cigartuples = [(0, 40)]
        read.query_qualities = pysam.qualitystring_to_array("I" * 40)
        out.write(read)
    pysam.index(str(cram))
    return reference, haplotypes, cram


def test_cram_needs_a_reference_and_fasta_is_not_reads(tmp_path) -> None:
    reference, haplotypes, cram = _fasta_and_cram(tmp_path)
    region = ["--region", "chr1:1-500", "--haplotypes", str(haplotypes), "--backend", "cpu"]
    assert_usage_error(warpdp("pairhmm", "--reads", str(cram), *region), "CRAM needs --reference")
    assert_usage_error(warpdp("pairhmm", "--reads", str(haplotypes), *region), f"{haplotypes}: not a BAM or CRAM file")
    scored = warpdp("pairhmm", "--reads", str(cram), "--reference", str(reference), *region)
    assert scored.returncode == 0, scored.stderr.decode()
    assert scored.stdout.decode().splitlines()[1].split("\t")[:2] == ["r0", "h1"]


# read(2)'s number, by machine: what /proc/PID/syscall shows while a process waits in it.
_READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}


def _waiting_to_read_stdin(pid: int) -> bool:
    with open(f"/proc/{pid}/syscall") as syscall:
        fields = syscall.read().split()
    return len(fields) > 1 and fields[0] == _READ_SYSCALL[os.uname().machine] and fields[1] == "0x0"


@pytest.mark.skipif(not os.path.exists("/proc/self/syscall") or os.uname().machine not in _READ_SYSCALL,
                    reason="needs /proc/PID/syscall (Linux, x86_64 or aarch64)")
def test_ctrl_c_exits_130_with_a_short_message() -> None:
    # The command waits on stdin, which stays open; SIGINT goes once it waits in read(0, ...)
    # (seen in /proc, not guessed by a sleep).
    process = subprocess.Popen([sys.executable, "-m", "warpdp", "pairhmm", "-", "--backend", "cpu"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        process.stdin.write(b"1 1\n")
        process.stdin.flush()
        while not _waiting_to_read_stdin(process.pid):
            assert process.poll() is None, process.stderr.read()
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130
    assert err.decode() == "warpdp: interrupted\n"


@pytest.mark.parametrize("command", [["pairhmm"], ["xdrop", "-k", "17", "-x", "10"], ["seedext"], ["align"],
                                     ["edit"]])
def test_empty_input_warns_and_exits_0(tmp_path, command) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    result = warpdp(command[0], str(empty), *command[1:], "--backend", "cpu")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode() == f"warpdp: warning: {empty} holds no {command[0]} input; the output is empty\n"
    # The TSV formats with a header still write it; the others write nothing.
    assert len(result.stdout.decode().splitlines()) <= 1


def _gzip_copy(source: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    target.write_bytes(gzip.compress(source.read_bytes()))
    return target


def _first_lines(source: Path, tmp_path: Path, n: int = 25) -> Path:
    """The first n lines of a reference input (the whole files take seconds to align)."""
    target = tmp_path / f"head-{source.name}"
    target.write_text("".join(source.read_text().splitlines(keepends=True)[:n]))
    return target


def test_gzipped_inputs_read_as_plain(tmp_path) -> None:
    tiny = shared_file("pairhmm", "tiny.in")
    expected = np.loadtxt(shared_file("pairhmm", "tiny.gkl.out"))
    # Recognised by content, not name: ".in" though gzipped.
    for source in (["pairhmm", str(_gzip_copy(tiny, tmp_path, "tiny.in"))], ["pairhmm", "-"]):
        stdin = gzip.compress(tiny.read_bytes()) if source[-1] == "-" else None
        result = warpdp(*source, "--backend", "cpu", stdin=stdin)
        assert result.returncode == 0, result.stderr.decode()
        np.testing.assert_allclose(np.loadtxt(result.stdout.decode().splitlines()), expected, atol=1e-4)
    cases = [
        (["xdrop", "-k", "17", "-x", "21"], shared_file("xdrop", "logan-example.tsv")),
        (["seedext"], shared_file("seedext", "bwamem-like-500.tsv")),
        (["align"], shared_file("align", "pairs-400.tsv")),
        (["edit"], shared_file("edit", "pairs-400.tsv")),
    ]
    for command, source in cases:
        source = _first_lines(source, tmp_path)
        plain = warpdp(command[0], str(source), *command[1:], "--backend", "cpu")
        packed = warpdp(command[0], str(_gzip_copy(source, tmp_path, source.name + ".gz")), *command[1:],
                        "--backend", "cpu")
        assert plain.returncode == packed.returncode == 0, packed.stderr.decode()
        assert packed.stdout == plain.stdout and plain.stdout


def test_xdrop_reference_from_gzipped_input(tmp_path) -> None:
    source = _gzip_copy(shared_file("xdrop", "logan-example.tsv"), tmp_path, "logan.tsv.gz")
    result = warpdp("xdrop", str(source), "-k", "17", "-x", "21", "--backend", "cpu")
    expected = np.loadtxt(shared_file("xdrop", "logan-example.x21.seqan.out"), dtype=np.int64, ndmin=2)
    got = np.array([line.split() for line in result.stdout.decode().splitlines()], dtype=np.int64)
    np.testing.assert_array_equal(got, expected)


def test_damaged_gzip_is_named_without_binary(tmp_path) -> None:
    damaged = tmp_path / "damaged.in"
    damaged.write_bytes(gzip.compress(b"1 1\nACGT IIII IIII IIII ++++\nACGT\n")[:20])
    assert_usage_error(warpdp("pairhmm", str(damaged), "--backend", "cpu"), f"{damaged}: damaged gzip data")


def test_gzip_with_trailing_garbage_is_named_as_damaged(tmp_path) -> None:
    damaged = tmp_path / "trailing.in.gz"
    damaged.write_bytes(gzip.compress(b"1 1\nACGT IIII IIII IIII ++++\nACGT\n") + b"junk")
    assert_usage_error(warpdp("pairhmm", str(damaged), "--backend", "cpu"), f"{damaged}: damaged gzip data")


def test_lower_case_bases_score_as_upper_case(tmp_path) -> None:
    """The Pair-HMM text format folds case as xdrop, seedext, align, edit and BAM input do
    (lower case used to become N there): tiny.in lower-cased still matches GKL's answers."""
    lines = shared_file("pairhmm", "tiny.in").read_text().splitlines()
    lowered = []
    for line in lines:
        fields = line.split()
        if len(fields) == 5:
            fields[0] = fields[0].lower()
        elif len(fields) == 1:
            fields[0] = fields[0].lower()
        lowered.append(" ".join(fields))
    source = tmp_path / "tiny.lower.in"
    source.write_text("\n".join(lowered) + "\n")
    assert any(c.islower() for c in source.read_text())
    result = warpdp("pairhmm", str(source), "--backend", "cpu")
    assert result.returncode == 0, result.stderr.decode()
    np.testing.assert_allclose(np.loadtxt(result.stdout.decode().splitlines()),
                               np.loadtxt(shared_file("pairhmm", "tiny.gkl.out")), atol=1e-4)


@pytest.mark.parametrize("command, source, columns", [
    (["xdrop", "-k", "17", "-x", "21"], ("xdrop", "logan-example.tsv"), (0, 2)),
    (["seedext"], ("seedext", "bwamem-like-500.tsv"), (0, 1)),
    (["align"], ("align", "pairs-400.tsv"), (0, 1)),
    (["edit"], ("edit", "pairs-400.tsv"), (0, 1)),
])
def test_lower_case_is_folded_in_every_text_format(tmp_path, command, source, columns) -> None:
    path = _first_lines(shared_file(*source), tmp_path)
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    for row in rows:
        for column in columns:
            row[column] = row[column].lower()
    lowered = tmp_path / "lower.tsv"
    lowered.write_text("".join("\t".join(row) + ("" if row[-1].endswith("\n") else "\n") for row in rows))
    plain = warpdp(command[0], str(path), *command[1:], "--backend", "cpu")
    folded = warpdp(command[0], str(lowered), *command[1:], "--backend", "cpu")
    assert plain.returncode == folded.returncode == 0, folded.stderr.decode()
    assert folded.stdout == plain.stdout


@pytest.mark.parametrize("command, words", [
    ("pairhmm", ["log10_likelihood", "read-major", "--layout tsv", "default for BAM/CRAM"]),
    ("xdrop", ["beginH", "endH", "beginV", "endV", "0-based", "EXCLUSIVE"]),
    ("seedext", ["qle", "tle", "gtle", "gscore", "max_off", "0-based", "end exclusive"]),
    ("align", ["query_begin", "target_end", "0-based", "end exclusive"]),
    ("edit", ["distance", "target_begin", "0-based", "EXCLUSIVE"]),
])
def test_every_subcommand_help_explains_its_output(command, words) -> None:
    result = warpdp(command, "--help")
    assert result.returncode == 0
    text = result.stdout.decode()
    for word in words:
        assert word in text, (command, word)


def test_serve_help_states_the_real_worker_defaults() -> None:
    from warpdp.grpc._config import DEFAULT_WORKERS

    text = " ".join(warpdp("serve", "--help").stdout.decode().split())
    assert (f"default {DEFAULT_WORKERS['cpu']} on the CPU; {DEFAULT_WORKERS['gpu']} on the GPU") in text
