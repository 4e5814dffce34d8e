"""The plain-Python edit references against edlib's and Scrooge's outputs (../shared/data/edit)."""
from __future__ import annotations

import pytest

from helpers.data import shared_file
from references import edit
from references.genasm import genasm

SHORT = range(0, 300, 5)  # the full DP is quadratic in Python: a sample of the short pairs
LONG = range(300, 400, 20)


def _pairs() -> list[tuple[str, str]]:
    return [tuple(line.split()) for line in shared_file("edit", "pairs-400.tsv").read_text().splitlines()]


def _lines(name: str) -> list[list[str]]:
    return [line.split() for line in shared_file("edit", name).read_text().splitlines()]


@pytest.mark.parametrize("mode", edit.MODES)
def test_reference_distances_and_locations_equal_edlib(mode: str) -> None:
    pairs, expected = _pairs(), _lines(f"pairs-400.{mode}.edlib.out")
    for k in SHORT:
        query, target = pairs[k]
        dist, t_start, t_end, cigar, locs = expected[k]
        assert edit.distance(query, target, mode) == int(dist), k
        want = [tuple(int(x) for x in loc.split("-")) for loc in locs.split(",")]
        got = edit.locations(query, target, mode)
        assert got == want, k
        # Our CIGAR may differ from edlib's (ties) but must re-score on the same span.
        start, end = got[0]
        ours = edit.global_cigar(query, target[start:end + 1])
        assert edit.rescore(query, target, ours, start) == (int(dist), len(query), end + 1), k
        assert edit.rescore(query, target, cigar, int(t_start)) == (int(dist), len(query), int(t_end) + 1), k


@pytest.mark.parametrize(("window", "overlap"), [(64, 33), (32, 17)])
def test_genasm_reference_reproduces_scrooge(window: int, overlap: int) -> None:
    pairs, expected = _pairs(), _lines(f"pairs-400.scrooge-w{window}o{overlap}.out")
    for k in list(range(300)) + list(LONG):
        got = genasm(*pairs[k], window=window, overlap=overlap)
        assert got == (int(expected[k][0]), expected[k][1]), k
