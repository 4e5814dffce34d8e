"""The C scanners of the text readers (warpdp/cython_cpu/parse*.c) against the line-by-line
Python readers they fall back to (the readers as they were before the scanners, kept unchanged).

Whenever the line reader accepts an input, the scanner gives the same arrays or declines; whenever
the line reader rejects it, the scanner declines, so the public reader gives the line reader's
error message. Checked on the reference data and on generated inputs with the variations the
line reader accepts (CRLF, blank lines, extra whitespace, lower case, gzip, streams) and
corruptions it rejects."""
from __future__ import annotations

import dataclasses
import gzip
import io
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.data import shared_file
from warpdp.cython_cpu import parse
from warpdp.plugin import pairhmm_text, seedext_io, xdrop_io
from warpdp.plugin.core.text import NumberedLines, open_text
from warpdp.plugin.seedext import MAX_SCORE

K = 17
CPU_DIR = Path(__file__).resolve().parents[1] / "warpdp" / "cython_cpu"
DRIVER = Path(__file__).resolve().parent / "helpers" / "parse_driver.c"
CC = shutil.which("cc") or shutil.which("gcc")


def logan_lines(source, k=K):
    with open_text(source) as (lines, name):
        return xdrop_io._logan_lines(lines, name, k)


def seedext_lines(source):
    with open_text(source) as (lines, name):
        return seedext_io._seedext_lines(lines, name)


def pairhmm_lines(source, min_base_qual=pairhmm_text.FORMAT_MIN_BASE_QUAL):
    with open_text(source) as (lines, name):
        return pairhmm_text._batches_from_lines(NumberedLines(lines, name), min_base_qual)


def assert_same(a, b) -> None:
    assert type(a) is type(b)
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        assert x.dtype == y.dtype and np.array_equal(x, y), field.name


def outcome(read):
    """The reader's result, or its error as (type, message)."""
    try:
        return read()
    except (ValueError, TypeError) as error:
        return type(error), str(error)


def assert_same_outcome(a, b) -> None:
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert a == b
    else:
        assert_same(a, b)


@pytest.mark.parametrize("name", ["logan-example.tsv", "synthetic-300.tsv"])
def test_logan_reference_files_scan_as_the_line_reader_reads_them(name) -> None:
    path = shared_file("xdrop", name)
    assert parse.logan(path.read_bytes(), K) is not None  # the scanner reads it, no fallback
    assert_same(xdrop_io.read_logan_text(path, k=K), logan_lines(path))


def test_seedext_reference_file_scans_as_the_line_reader_reads_it() -> None:
    path = shared_file("seedext", "bwamem-like-500.tsv")
    assert parse.seedext(path.read_bytes(), MAX_SCORE) is not None
    assert_same(seedext_io.read_seedext_tsv(path), seedext_lines(path))


@pytest.mark.parametrize("name", ["tiny.in", "10s.in"])
@pytest.mark.parametrize("min_base_qual", [0, 6, 40])
def test_pairhmm_reference_files_scan_as_the_line_reader_reads_them(name, min_base_qual) -> None:
    path = shared_file("pairhmm", name)
    assert parse.pairhmm(path.read_bytes(), min_base_qual) is not None
    assert_same(pairhmm_text.read_pairhmm_text(path, min_base_qual=min_base_qual), pairhmm_lines(path, min_base_qual))


# Generated inputs: lines the line reader accepts, with its variations, and corruptions.
SPACES = st.sampled_from([" ", "\t", "  ", " \t", "\x0b", "\x0c", "\x1c", "\x1f"])
ENDS = st.sampled_from(["\n", "\n", "\r\n"])
BASES = "ACGTNacgtn"
CORRUPTIONS = ["\r", "\xe9", "\x00", "\x01", "#", "?", "X", "-", "+", " ", "\t", "\n", "7", "\x85", "\xa0"]


@st.composite
def corrupted(draw, text: str) -> str:
    """The text, or the text with a few characters inserted or replaced."""
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 1))
        text = text[:at] + draw(st.sampled_from(CORRUPTIONS)) + text[at + cut:]
    return text


@st.composite
def logan_texts(draw, k: int) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", " ", "\t\x0b"])) + draw(ENDS))
            continue
        v, h = (draw(st.text(BASES, min_size=k, max_size=40)) for _ in range(2))
        pv, ph = (draw(st.integers(0, len(s) - k)) for s in (v, h))
        fields = [v, str(pv), h, str(ph), draw(st.sampled_from("nnc"))]
        line = draw(SPACES).join(fields) if draw(st.booleans()) else "\t".join(fields)
        lines.append(draw(st.sampled_from(["", " "])) + line + draw(st.sampled_from(["", " ", "\t"])) + draw(ENDS))
    text = "".join(lines)
    return draw(corrupted(text.rstrip("\n") if draw(st.booleans()) else text))


@st.composite
def seedext_texts(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 6))
        if kind == 0:
            lines.append(draw(st.sampled_from(["", "  ", "# a comment\t", " # not one"])) + draw(ENDS))
            continue
        q = draw(st.text("ACGTNacgtnX ", max_size=30)) if kind < 4 else draw(st.text("ACGTN", min_size=1, max_size=30))
        t = draw(st.text("ACGTN", max_size=30)) if kind < 4 else draw(st.text("ACGT", min_size=1, max_size=30))
        h0 = str(draw(st.integers(0, 200)))
        pad = draw(st.sampled_from(["", " ", " \x0b"]))
        if kind < 4:
            line = "\t".join([pad + q, t + pad, pad + h0])
        else:
            line = draw(SPACES.filter(lambda s: "\t" not in s)).join([q, t, h0])
        lines.append(line + draw(ENDS))
    return draw(corrupted("".join(lines)))


@st.composite
def pairhmm_texts(draw) -> str:
    lines = []
    blank = st.sampled_from(["", "", "\n", " \n"])
    for _ in range(draw(st.integers(0, 3))):
        n_reads, n_haps = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        lines.append(draw(blank) + f"{n_reads}{draw(SPACES)}{n_haps}" + draw(ENDS))
        for _ in range(n_reads):
            read = draw(st.text("ACGTNacgtnRY", min_size=1, max_size=20))
            phred = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=len(read), max_size=len(read))
            quals = [draw(phred) for _ in range(4)]
            trailing = draw(st.sampled_from(["", " "]))
            lines.append(draw(blank) + draw(SPACES).join([read, *quals]) + trailing + draw(ENDS))
        for _ in range(n_haps):
            lines.append(draw(blank) + draw(st.text("ACGTNacgtn", min_size=1, max_size=30)) + draw(ENDS))
    return draw(corrupted("".join(lines)))


def check_agreement(text: str, scan, lines_reader, public_reader) -> None:
    """The scanner agrees with the line reader on the text as a file, a gzipped file and a stream;
    the public reader gives the line reader's result or error in each case."""
    data = text.encode("latin-1")  # one byte per character, non-ASCII ones included
    with tempfile.TemporaryDirectory() as folder:
        plain, packed = Path(folder) / "input.txt", Path(folder) / "input.gz"
        plain.write_bytes(data)
        packed.write_bytes(gzip.compress(data))
        expected = outcome(lambda: lines_reader(plain))
        scanned = scan(data)
        if isinstance(expected, tuple):
            assert scanned is None, expected
        elif scanned is not None:
            assert_same(type(expected).from_arrays(**scanned), expected)
        for source in (plain, packed):
            assert_same_outcome(outcome(lambda: public_reader(source)), outcome(lambda: lines_reader(source)))
    stream_text = data.decode("ascii", errors="replace")
    assert_same_outcome(outcome(lambda: public_reader(io.StringIO(stream_text))),
                        outcome(lambda: lines_reader(io.StringIO(stream_text))))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4).flatmap(lambda k: st.tuples(logan_texts(k), st.just(k))))
def test_logan_scanner_agrees_with_the_line_reader(text_and_k) -> None:
    text, k = text_and_k
    check_agreement(text, lambda data: parse.logan(data, k), lambda s: logan_lines(s, k),
                    lambda s: xdrop_io.read_logan_text(s, k=k))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seedext_texts())
def test_seedext_scanner_agrees_with_the_line_reader(text) -> None:
    check_agreement(text, lambda data: parse.seedext(data, MAX_SCORE), seedext_lines, seedext_io.read_seedext_tsv)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairhmm_texts(), st.sampled_from([0, 6, 30]))
def test_pairhmm_scanner_agrees_with_the_line_reader(text, min_base_qual) -> None:
    check_agreement(text, lambda data: parse.pairhmm(data, min_base_qual), lambda s: pairhmm_lines(s, min_base_qual),
                    lambda s: pairhmm_text.read_pairhmm_text(s, min_base_qual=min_base_qual))


def test_the_scanner_reads_the_variations_the_line_reader_accepts() -> None:
    """CRLF, blank and whitespace-only lines, mixed separators, lower case, no final newline:
    scanned (not declined), with the values written here."""
    logan = parse.logan(b"\r\nACGTAC 1\x0b acgtnA  2\tc \r\n \t\nAC 0 AC 0 n", 2)
    assert bytes(logan["v_bases"]) == b"ACGTACAC" and bytes(logan["h_bases"]) == b"tgcanTAC"
    assert logan["h_pos"].tolist() == [2, 0] and logan["v_pos"].tolist() == [1, 0]
    assert logan["h_offsets"].tolist() == [0, 6, 8]
    seedext = parse.seedext(b"# header\n\n acg \tTT\t 5 \r\nAC GT 7", MAX_SCORE)
    assert bytes(seedext["query"]) == b"acgAC" and bytes(seedext["target"]) == b"TTGT"
    assert seedext["h0"].tolist() == [5, 7] and seedext["query_offsets"].tolist() == [0, 3, 5]
    pairhmm = parse.pairhmm(b"1 2\r\n\nacgT +5!# !!!! #### ++++\nttA\n\x0cGg\n", 6)
    assert bytes(pairhmm["read_bases"]) == b"ACGT" and bytes(pairhmm["hap_bases"]) == b"TTAGG"
    assert pairhmm["read_quals"].tolist() == [10, 20, 6, 6] and pairhmm["read_gcp"].tolist() == [10] * 4
    assert pairhmm["hap_offsets"].tolist() == [0, 3, 5] and pairhmm["batch_haps"].tolist() == [0, 2]


@pytest.mark.parametrize("reader, text, message", [
    (lambda s: xdrop_io.read_logan_text(s, k=2), "ACGT 0 ACGT 0 n\nACGT 0 ACGT 0\n",
     "line 2: expected 5 fields (seqV posV seqH posH strand), found 4"),
    (lambda s: xdrop_io.read_logan_text(s, k=2), "\r\nACGT 0 ACXT 0 n\n",
     "line 2: seqH has 'X' at position 2; only A, C, G, T and N (either case) are allowed"),
    (lambda s: xdrop_io.read_logan_text(s, k=2), "ACGT 3 ACGT 0 n\n",
     "line 1: the seed lies outside seqV (posV = 3, k = 2, seqV has 4 bases)"),
    (lambda s: xdrop_io.read_logan_text(s, k=2), "ACGT 0 ACGT 0 x\n", "line 1: strand must be 'n' or 'c', found 'x'"),
    (seedext_io.read_seedext_tsv, "A\tC\t1\nA\tC\n", "line 2: expected 3 fields (query, target, h0), found 2"),
    (seedext_io.read_seedext_tsv, "A\tC\tx1\n", "line 1: h0 must be an integer, not 'x1'"),
    (pairhmm_text.read_pairhmm_text, "1 1\nACGT IIII III IIII IIII\nACGT\n",
     "line 2: insGOP has 3 characters but the read has 4 bases"),
    (pairhmm_text.read_pairhmm_text, "1 1\nACGT IIII IIII IIII IIII\n", "line 2: the input ended inside a record"),
    (pairhmm_text.read_pairhmm_text, "1 x\n", "line 1: expected a record header 'R H' (two counts), found '1 x'"),
])
def test_malformed_lines_give_the_line_readers_message(tmp_path, reader, text, message) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    for source, name in ((path, str(path)), (io.StringIO(text), "<stream>")):
        with pytest.raises(ValueError) as raised:
            reader(source)
        assert str(raised.value).startswith(f"{name}, {message}")


class LinesThenError:
    """A text stream that gives its lines, then fails as a damaged input does."""

    name = "<failing>"

    def __init__(self, lines: list[str], error: Exception) -> None:
        self.lines, self.error = lines, error

    def read(self, size: int = -1) -> str:
        raise AssertionError("the readers iterate streams by lines")

    def __iter__(self):
        yield from self.lines
        raise self.error


@pytest.mark.parametrize("lines, expected", [
    (["ACGT 0 ACGT 0 n\n", "ACGT 0 ACGT\n"], "<failing>, line 2: expected 5 fields"),  # the bad line comes first
    (["ACGT 0 ACGT 0 n\n"], "[Errno 5] I/O error: '<failing>'"),  # the read error, named as before
])
def test_a_stream_that_fails_gives_the_line_readers_error(lines, expected) -> None:
    errors = []
    for reader in (lambda s: xdrop_io.read_logan_text(s, k=2), lambda s: logan_lines(s, k=2)):
        with pytest.raises((ValueError, OSError)) as raised:
            reader(LinesThenError(lines, OSError(5, "I/O error")))
        errors.append((type(raised.value), str(raised.value)))
    assert errors[0] == errors[1] and errors[0][1].startswith(expected)


@pytest.mark.skipif(CC is None, reason="needs a C compiler (cc)")
def test_the_scanners_without_x86_simd_write_what_they_write_with_it(tmp_path) -> None:
    """The scalar paths (the only ones off x86) against the SSE2 ones, through a C driver that
    prints what each scanner accepted and a hash of what it wrote: the reference files, and slices
    of them with characters inserted or replaced."""
    rng, inputs = random.Random(5), []
    for folder, name in (("xdrop", "logan-example.tsv"), ("seedext", "bwamem-like-500.tsv"), ("pairhmm", "10s.in")):
        data = shared_file(folder, name).read_bytes()
        inputs.append(tmp_path / name)
        inputs[-1].write_bytes(data)
        for i in range(60):
            start = rng.randrange(len(data))
            piece = bytearray(data[start:start + rng.choice([50, 500, 5000, 50000])])
            for _ in range(rng.choice([0, 0, 1, 3])):
                at = rng.randrange(len(piece) + 1)
                piece[at:at + rng.randint(0, 1)] = rng.choice(CORRUPTIONS).encode("latin-1")
            inputs.append(tmp_path / f"{folder}-{i}.txt")
            inputs[-1].write_bytes(bytes(piece))
    outputs = []
    for flags in ([], ["-DWARPDP_NO_X86_SIMD"]):
        driver = tmp_path / f"driver{len(outputs)}"
        subprocess.run([CC, "-O2", "-std=gnu11", *flags, f"-I{CPU_DIR}", str(DRIVER),
                        *sorted(map(str, CPU_DIR.glob("parse_*.c"))), "-o", str(driver)],
                       check=True, capture_output=True, timeout=300)
        outputs.append(subprocess.run([str(driver), *map(str, inputs)], check=True, capture_output=True, text=True,
                                      timeout=300).stdout)
    assert outputs[0] == outputs[1]
    lines = outputs[0].splitlines()
    assert len(lines) == len(inputs)
    for name, accepted in (("logan-example.tsv", " logan(k=3) 0 "), ("bwamem-like-500.tsv", " seedext 0 "),
                           ("10s.in", " pairhmm 0 ")):
        assert accepted in next(line for line in lines if line.startswith(str(tmp_path / name)))
