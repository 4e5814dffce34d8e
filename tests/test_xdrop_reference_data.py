"""X-drop "longest" mode against SeqAn 2.4's extendSeed(..., GappedXDrop()) outputs, every CPU variant."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.data import shared_file
from warpdp.plugin.xdrop import xdrop, xdrop_cpu_isas
from warpdp.plugin.xdrop_io import read_logan_text, read_xdrop_results
from references.xdrop import extend_pair

K = 17
CASES = [("logan-example", 5), ("logan-example", 21), ("logan-example", 100),
         ("synthetic-300", 10), ("synthetic-300", 50), ("synthetic-300", 200)]


@pytest.mark.parametrize("isa", xdrop_cpu_isas())
@pytest.mark.parametrize(("name", "x"), CASES)
def test_cpu_reproduces_seqan_exactly(name: str, x: int, isa: str) -> None:
    pairs = read_logan_text(shared_file("xdrop", f"{name}.tsv"), k=K)
    expected = read_xdrop_results(shared_file("xdrop", f"{name}.x{x}.seqan.out"))
    results = xdrop(pairs, k=K, x=x, backend="cpu", cpu_isa=isa, threads=2)
    got = results.as_array()
    mismatched = np.flatnonzero((got != expected).any(axis=1))
    assert len(mismatched) == 0, (f"{len(mismatched)} pairs differ, first: pair {mismatched[0]}: "
                                  f"got {got[mismatched[0]]}, SeqAn {expected[mismatched[0]]}")
    assert results.n_cells > 0


def test_python_reference_reproduces_seqan() -> None:
    # The reference the property tests trust, checked on the first pairs of the SeqAn data.
    pairs = read_logan_text(shared_file("xdrop", "synthetic-300.tsv"), k=K)
    expected = read_xdrop_results(shared_file("xdrop", "synthetic-300.x10.seqan.out"))
    for i in range(12):
        got = extend_pair(pairs.h_sequence(i), int(pairs.h_pos[i]), pairs.v_sequence(i), int(pairs.v_pos[i]),
                          k=K, x=10)
        assert got == tuple(expected[i]), i


def test_strand_c_is_complemented_not_reversed() -> None:
    # LOGAN's demo complements seqH and moves posH to len - posH - k; pair 0 of its example is 'c'.
    path = shared_file("xdrop", "logan-example.tsv")
    fields = path.read_text().splitlines()[0].split("\t")
    assert fields[4] == "c"
    pairs = read_logan_text(path, k=K)
    seq_h = fields[2].encode()
    assert pairs.h_sequence(0) == seq_h.translate(bytes.maketrans(b"ACGT", b"TGCA"))
    assert pairs.h_pos[0] == len(seq_h) - int(fields[3]) - K
    assert pairs.v_sequence(0) == fields[0].encode() and pairs.v_pos[0] == int(fields[1])
