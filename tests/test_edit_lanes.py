"""The SIMD variants of the exact edit distance (inter-pair lanes for short pairs, AVX2 and
AVX-512) against the scalar variant and the plain-Python reference: whole batches, so that lanes
of one vector hold pairs of different query and target lengths (within the same word count),
partly filled vectors, queries at the word edges (64, 65, 128, 256, 257 bases), targets past the
lanes' limit, arbitrary bytes and every mode, task and bound k. Results must be identical:
distance, span, every location, every CIGAR."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers.sequences import mutate_text
from references import edit as ref
from warpdp.plugin.edit import EditResults, edit, edit_cpu_isas

SIMD = [isa for isa in edit_cpu_isas() if isa != "scalar"]
MODES = ["nw", "shw", "hw"]
TASKS = ["distance", "locations", "path"]

pytestmark = pytest.mark.skipif(not SIMD, reason="this CPU runs no SIMD variant")


def _mutated(rng: random.Random, alphabet: str, length: int, rate: float, flank: int) -> tuple[str, str]:
    query = "".join(rng.choice(alphabet) for _ in range(length))
    body = mutate_text(query, rng, alphabet, rate, 4)
    left = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, flank)))
    right = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, flank)))
    return query, (left + body + right) or alphabet[0]


def _batch(seed: int, count: int, lengths: list[int]) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        alphabet = rng.choice(["ACGT", "AC", "ACGTN", "acgtACGT", "#~z"])
        length = rng.choice(lengths) if rng.random() < 0.5 else rng.randint(1, 260)
        pairs.append(_mutated(rng, alphabet, length, rng.choice([0.0, 0.03, 0.1, 0.4]), rng.choice([0, 5, 40])))
    return pairs


def _same(a: EditResults, b: EditResults, task: str) -> None:
    for name in ("distance", "target_begin", "target_end"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for i in range(len(a.distance)):
        if task != "distance":
            assert a.pair_locations(i) == b.pair_locations(i), i
        if task == "path":
            assert a.cigarstring(i) == b.cigarstring(i), i


EDGES = [1, 2, 63, 64, 65, 127, 128, 129, 192, 255, 256, 257]


@pytest.mark.parametrize("isa", SIMD)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("task", TASKS)
def test_batches_equal_the_scalar_variant(isa: str, mode: str, task: str) -> None:
    pairs = _batch(3 * MODES.index(mode) + TASKS.index(task), 300, EDGES)
    for k in (-1, 0, 3, 25):
        scalar = edit(pairs, mode=mode, task=task, k=k, backend="cpu", cpu_isa="scalar", threads=2)
        simd = edit(pairs, mode=mode, task=task, k=k, backend="cpu", cpu_isa=isa, threads=2)
        _same(simd, scalar, task)


@pytest.mark.parametrize("isa", SIMD)
@pytest.mark.parametrize("mode", MODES)
def test_batches_equal_the_python_reference(isa: str, mode: str) -> None:
    pairs = _batch(5, 80, [1, 64, 65, 100, 130])
    results = edit(pairs, mode=mode, task="path", backend="cpu", cpu_isa=isa, threads=1)
    for i, (query, target) in enumerate(pairs):
        distance = ref.distance(query, target, mode)
        locations = [(b, e + 1) for b, e in ref.locations(query, target, mode)]
        assert results.distance[i] == distance, i
        assert results.pair_locations(i) == locations, i
        assert (results.target_begin[i], results.target_end[i]) == locations[0], i
        assert results.cigarstring(i) == ref.hirschberg_cigar(query, target[locations[0][0]:locations[0][1]]), i


@pytest.mark.parametrize("isa", SIMD)
def test_long_targets_and_queries_beside_short_ones(isa: str) -> None:
    # Targets past the lanes' limit and queries past their words run in the per-pair body, in
    # the same call as lane pairs; a repetitive query has hundreds of HW locations.
    rng = random.Random(3)
    pairs = _batch(9, 20, EDGES)
    pairs.append(("ACGTAC", "".join(rng.choice("ACGT") for _ in range(17000))))
    pairs.append(("A" * 40, "A" * 300))
    pairs.append(_mutated(rng, "ACGT", 700, 0.05, 30))
    pairs.append(_mutated(rng, "ACGT", 257, 0.05, 30))
    for mode in MODES:
        for task in TASKS:
            scalar = edit(pairs, mode=mode, task=task, backend="cpu", cpu_isa="scalar", threads=1)
            _same(edit(pairs, mode=mode, task=task, backend="cpu", cpu_isa=isa, threads=1), scalar, task)


@st.composite
def batches(draw) -> list[tuple[str, str]]:
    alphabet = draw(st.sampled_from(["AC", "ACGT", "ACGTN"]))
    count = draw(st.integers(1, 20))
    pairs = []
    for _ in range(count):
        query = draw(st.text(alphabet=alphabet, min_size=1, max_size=draw(st.sampled_from([8, 70, 140, 270]))))
        target = draw(st.text(alphabet=alphabet, min_size=0, max_size=40))
        rng = draw(st.randoms(use_true_random=False))
        cut = rng.randint(0, len(query))
        pairs.append((query, (target[:rng.randint(0, len(target))] + query[:cut] + query[cut + 1:] + target)
                      or alphabet[0]))
    return pairs


@settings(max_examples=120, deadline=None)
@given(pairs=batches(), mode=st.sampled_from(MODES), task=st.sampled_from(TASKS),
       k=st.sampled_from([-1, 0, 2, 10]), isa=st.sampled_from(SIMD or ["scalar"]))
def test_random_batches_equal_the_scalar_variant(pairs, mode: str, task: str, k: int, isa: str) -> None:
    scalar = edit(pairs, mode=mode, task=task, k=k, backend="cpu", cpu_isa="scalar", threads=1)
    _same(edit(pairs, mode=mode, task=task, k=k, backend="cpu", cpu_isa=isa, threads=1), scalar, task)


def test_the_variant_follows_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("WARPDP_CPU_ISA", "bogus")
    with pytest.raises(ValueError, match="WARPDP_CPU_ISA"):
        edit([("ACGT", "ACGT")], backend="cpu")
    monkeypatch.setenv("WARPDP_CPU_ISA", SIMD[0])
    assert edit([("ACGT", "AGGT")], backend="cpu").distance[0] == 1
