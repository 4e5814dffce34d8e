"""Property tests of the exact CPU edit distance against edlib (PyPI) on random pairs: distances
and every location equal edlib's, with and without a bound k (small ones report -1), and the
CIGAR is the documented Hirschberg alignment (tests/references/edit.py), which re-scores to the
distance. Pairs are a random query and a mutated copy inside random flanks, so the band, the
bound passes and the block edges of the CPU backend all get exercised."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from helpers.sequences import mutate_text
from references import edit as ref
from warpdp.plugin.edit import edit

edlib = pytest.importorskip("edlib")

MODES = ["nw", "shw", "hw"]


@st.composite
def mutated_pairs(draw, max_length: int) -> tuple[str, str]:
    """(query, target): target = flanks around the query with substitutions, insertions and
    deletions (runs of 1-8 bases) at a drawn rate; a two- or four-letter alphabet."""
    alphabet = draw(st.sampled_from(["AC", "ACGT"]))
    query = draw(st.text(alphabet=alphabet, min_size=1, max_size=max_length))
    rng = draw(st.randoms(use_true_random=False))
    rate = draw(st.sampled_from([0.0, 0.02, 0.1, 0.3]))
    body = mutate_text(query, rng, alphabet, rate, 8)
    target = _flank(rng, alphabet, len(query)) + body + _flank(rng, alphabet, len(query))
    return query, target or rng.choice(alphabet)


def _flank(rng, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, max(1, length // 5))))


def _check(query: str, target: str, mode: str, k: int, cigar_reference: bool) -> None:
    found = edit([(query, target)], mode=mode, k=k, task="path", backend="cpu", threads=1)
    expected = edlib.align(query, target, mode=mode.upper(), task="path", k=k)
    distance = expected["editDistance"]
    assert found.distance[0] == distance
    if distance < 0:
        assert found.pair_locations(0) == [] and found.target_begin[0] == -1
        return
    locations = [(b, e + 1) for b, e in expected["locations"]]
    assert found.pair_locations(0) == locations
    begin, end = locations[0]
    assert (found.target_begin[0], found.target_end[0]) == (begin, end)
    cigar = found.cigarstring(0)
    assert ref.rescore(query, target, cigar, begin) == (distance, len(query), end)
    if cigar_reference:
        assert cigar == ref.hirschberg_cigar(query, target[begin:end])
    # The distance task reports the same distance and span.
    alone = edit([(query, target)], mode=mode, k=k, task="distance", backend="cpu", threads=1)
    assert (alone.distance[0], alone.target_begin[0], alone.target_end[0]) == (distance, begin, end)


@settings(max_examples=300, deadline=None)
@given(pair=mutated_pairs(90), mode=st.sampled_from(MODES), data=st.data())
def test_short_pairs_equal_edlib_and_the_tie_rule(pair: tuple[str, str], mode: str, data) -> None:
    query, target = pair
    k = data.draw(st.sampled_from([-1, 0, 1, 3, 10, 40]))
    _check(query, target, mode, k, cigar_reference=True)


@settings(max_examples=60, deadline=None)
@given(pair=mutated_pairs(1500), mode=st.sampled_from(MODES), data=st.data())
def test_multi_block_pairs_equal_edlib(pair: tuple[str, str], mode: str, data) -> None:
    query, target = pair
    exact = edlib.align(query, target, mode=mode.upper())["editDistance"]
    # No bound, one at the distance, just below it (-1) and a loose one.
    k = data.draw(st.sampled_from([-1, exact, max(exact - 1, 0), 2 * exact + 5]))
    _check(query, target, mode, k, cigar_reference=False)


@settings(max_examples=150, deadline=None)
@given(query=st.text(alphabet="ACG", min_size=1, max_size=3), target=st.text(alphabet="ACG", min_size=1, max_size=3),
       mode=st.sampled_from(MODES), k=st.integers(-1, 2))
def test_length_one_to_three_sequences(query: str, target: str, mode: str, k: int) -> None:
    _check(query, target, mode, k, cigar_reference=True)


@pytest.mark.parametrize("mode", MODES)
def test_long_pairs_cigar_follows_the_tie_rule(mode: str) -> None:
    # A few pairs of 150-400 bases: banded Hirschberg halves must split where the unbanded
    # recursion of the reference does.
    import random

    rng = random.Random(5)
    for _ in range(4):
        query = "".join(rng.choice("ACGT") for _ in range(rng.randint(150, 400)))
        target = "".join(c if rng.random() > 0.12 else rng.choice(["", "A", c + "T"]) for c in query)
        target = "".join(rng.choice("ACGT") for _ in range(rng.randint(0, 30))) + target
        _check(query, target, mode, -1, cigar_reference=True)
