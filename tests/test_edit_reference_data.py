"""The CPU backend of edit against edlib's and Scrooge's outputs (../shared/data/edit), all 400 pairs."""
from __future__ import annotations

import pytest

from helpers.data import shared_file
from references.edit import rescore
from warpdp.plugin.edit import EditPairs, edit, edit_cpu_isas, pack_edit_pairs


def _pairs() -> tuple[list[tuple[str, str]], EditPairs]:
    text = [tuple(line.split()) for line in shared_file("edit", "pairs-400.tsv").read_text().splitlines()]
    return text, pack_edit_pairs(text)


def _lines(name: str) -> list[list[str]]:
    return [line.split() for line in shared_file("edit", name).read_text().splitlines()]


@pytest.mark.parametrize("isa", edit_cpu_isas())
@pytest.mark.parametrize("mode", ["nw", "shw", "hw"])
def test_exact_equals_edlib(mode: str, isa: str) -> None:
    text, pairs = _pairs()
    expected = _lines(f"pairs-400.{mode}.edlib.out")
    results = edit(pairs, mode=mode, task="path", backend="cpu", threads=2, cpu_isa=isa)
    for i, (query, target) in enumerate(text):
        dist, t_start, t_end, _, locs = expected[i]
        want = [(int(b), int(e) + 1) for b, e in (loc.split("-") for loc in locs.split(","))]
        assert results.distance[i] == int(dist), i
        assert results.pair_locations(i) == want, i
        assert (results.target_begin[i], results.target_end[i]) == (int(t_start), int(t_end) + 1), i
        # edlib's CIGAR is one of several optimal ones: ours must re-score to the distance on the span.
        assert rescore(query, target, results.cigarstring(i), int(t_start)) == (int(dist), len(query),
                                                                                 int(t_end) + 1), i


@pytest.mark.parametrize(("window", "overlap"), [(64, 33), (32, 17)])
def test_windowed_equals_scrooge(window: int, overlap: int) -> None:
    _, pairs = _pairs()
    expected = _lines(f"pairs-400.scrooge-w{window}o{overlap}.out")
    results = edit(pairs, method="windowed", mode="shw", window=window, overlap=overlap, task="path",
                   backend="cpu", threads=2)
    got = [(int(results.distance[i]), results.cigarstring(i)) for i in range(len(pairs))]
    assert got == [(int(d), c) for d, c in expected]


@pytest.mark.parametrize(("window", "overlap"), [(64, 33), (32, 17)])
def test_windowed_suboptimal_count_matches_the_data_readme(window: int, overlap: int) -> None:
    # The data README's counts of windowed distances above edlib's SHW optimum (BENCHMARKS.md).
    _, pairs = _pairs()
    exact = edit(pairs, mode="shw", backend="cpu", threads=2).distance
    windowed = edit(pairs, method="windowed", mode="shw", window=window, overlap=overlap, backend="cpu",
                    threads=2).distance
    assert (windowed >= exact).all()
    short, long = (windowed > exact)[:300].sum(), (windowed > exact)[300:].sum()
    assert (short, long) == ((0, 61) if window == 64 else (46, 95))
