"""edit(): random pairs against the plain-Python reference, k bounds, results plumbing, bad input."""
from __future__ import annotations

import importlib
import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from references import edit as ref
from references.genasm import genasm
from warpdp.plugin.edit import EditParams, EditPairs, EditResults, edit, edit_cpu_isas, pack_edit_pairs


def _random_pairs(seed: int, count: int, alphabet: str = "ACGT") -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        query = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 150)))
        target = list(query)
        for _ in range(rng.randint(0, 20)):  # mutate a copy, sometimes into something unrelated
            at = rng.randrange(len(target) + 1)
            op = rng.random()
            if op < 0.4 and at < len(target):
                target[at] = rng.choice(alphabet)
            elif op < 0.7:
                target.insert(at, rng.choice(alphabet))
            elif at < len(target) and len(target) > 1:
                del target[at]
        flank = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        pairs.append((query, flank[:len(flank) // 2] + "".join(target) + flank[len(flank) // 2:]))
    return pairs


@pytest.mark.parametrize("mode", ["nw", "shw", "hw"])
def test_random_pairs_match_the_reference(mode: str) -> None:
    pairs = _random_pairs(7, 60, "ACGTN")
    results = edit(pairs, mode=mode, task="path", backend="cpu", threads=2)
    for i, (query, target) in enumerate(pairs):
        dist = ref.distance(query, target, mode)
        locations = [(b, e + 1) for b, e in ref.locations(query, target, mode)]
        assert results.distance[i] == dist
        assert results.pair_locations(i) == locations
        begin, end = locations[0]
        assert ref.rescore(query, target, results.cigarstring(i), begin) == (dist, len(query), end)


@pytest.mark.parametrize(("window", "overlap"), [(64, 33), (32, 17), (8, 3), (5, 0)])
def test_windowed_random_pairs_match_the_reference(window: int, overlap: int) -> None:
    pairs = _random_pairs(11, 60)
    results = edit(pairs, method="windowed", mode="shw", window=window, overlap=overlap, task="path",
                   backend="cpu", threads=2)
    for i, (query, target) in enumerate(pairs):
        assert (results.distance[i], results.cigarstring(i)) == genasm(query, target, window, overlap)


def test_k_bound_reports_minus_one_above_it() -> None:
    pairs = _random_pairs(3, 40)
    full = edit(pairs, mode="hw", task="path", backend="cpu")
    for k in (0, 2, 5):
        bounded = edit(pairs, mode="hw", k=k, task="path", backend="cpu")
        within = full.distance <= k
        assert np.array_equal(bounded.distance, np.where(within, full.distance, -1))
        assert np.array_equal(bounded.target_begin, np.where(within, full.target_begin, -1))
        for i in np.flatnonzero(~within):
            assert len(bounded.cigar(int(i))) == 0 and bounded.pair_locations(int(i)) == []


def test_tasks_add_locations_and_cigar() -> None:
    pairs = [("ACGT", "TTACGTTTACGT")]
    distance = edit(pairs, mode="hw", backend="cpu")
    assert distance.row(0) == {"distance": 0, "target_begin": 2, "target_end": 6}
    assert distance.locations is None and not distance.has_cigar
    located = edit(pairs, mode="hw", task="locations", backend="cpu")
    assert located.pair_locations(0) == [(2, 6), (8, 12)] and not located.has_cigar
    path = edit(pairs, mode="hw", task="path", backend="cpu")
    alignment = path.alignment(0, 4)
    assert (alignment.cigarstring, alignment.ref_begin, alignment.ref_end) == ("4=", 2, 6)


def test_tie_breaking_rule_is_the_documented_one() -> None:
    # One query base: the leftmost equal target base; none equal: a substitution on the first.
    assert edit([("A", "CACA")], task="path", backend="cpu").cigarstring(0) == "1D1=2D"
    assert edit([("G", "CAC")], task="path", backend="cpu").cigarstring(0) == "1X2D"


def test_results_slice_and_concat_keep_locations() -> None:
    results = edit(_random_pairs(5, 10), mode="hw", task="path", backend="cpu")
    again = EditResults.concat([results[0:4], results[4:10]])
    assert again == results
    assert results[3:5].pair_locations(1) == results.pair_locations(4)


def test_isas() -> None:
    isas = edit_cpu_isas()
    assert isas[0] == "scalar" and set(isas) <= {"scalar", "avx2", "avx512"}
    for isa in isas:
        assert edit([("ACGT", "AGT")], backend="cpu", cpu_isa=isa).distance[0] == 1
    with pytest.raises(ValueError, match="cpu_isa"):
        edit([("A", "A")], backend="cpu", cpu_isa="sse2")


@pytest.mark.parametrize(("fields", "name"), [
    ({"mode": "local"}, "mode"), ({"k": -2}, "k"), ({"task": "cigar"}, "task"), ({"method": "fast"}, "method"),
    ({"method": "windowed", "mode": "shw", "window": 65}, "window"),
    ({"method": "windowed", "mode": "shw", "window": 1}, "window"),
    ({"method": "windowed", "mode": "shw", "window": 32, "overlap": 32}, "overlap"),
    ({"method": "windowed", "mode": "shw", "overlap": -1}, "overlap"),
    ({"method": "windowed", "mode": "nw"}, "mode"),
])
def test_bad_params_name_the_field(fields: dict, name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} "):
        EditParams(**fields)
    with pytest.raises(ValueError, match=f"^{name} "):
        edit([("A", "A")], backend="cpu", **fields)


def test_bad_pairs_name_the_field() -> None:
    with pytest.raises(ValueError, match="pair 1 is empty"):
        edit([("A", "A"), ("", "A")], backend="cpu")
    with pytest.raises(ValueError, match="target_offsets"):
        edit([("A", "A"), ("A", "")], backend="cpu")
    with pytest.raises(ValueError, match="pair 0 has a byte other than A, C, G, T"):
        edit([("ACNT", "ACGT")], method="windowed", mode="shw", backend="cpu")
    with pytest.raises(TypeError, match="k must be an int"):
        edit([("A", "A")], k="3", backend="cpu")


def test_the_c_driver_refuses_bad_offsets_itself() -> None:
    # A caller that skips validation gets an error naming the field, never a wild read.
    from warpdp.cython_cpu import edit as cpu_edit

    pairs = EditPairs(np.frombuffer(b"ACGT", np.uint8), np.array([0, 9], np.int64),
                      np.frombuffer(b"ACGT", np.uint8), np.array([0, 4], np.int64))

    class Out:
        distance = np.zeros(1, np.int64)
        t_begin = np.zeros(1, np.int64)
        t_end = np.zeros(1, np.int64)

    with pytest.raises(ValueError, match="query_offsets is out of range"):
        cpu_edit.run(pairs, EditParams(), Out, threads=1)
    with pytest.raises(ValueError, match="k is out of range"):
        cpu_edit.run(pack_edit_pairs([("A", "A")]), type("P", (), {"mode": "nw", "task": "distance",
                                                                      "method": "exact", "k": -5, "window": 64,
                                                                      "overlap": 33}), Out, threads=1)


@pytest.mark.parametrize(("mode", "k"), [("nw", -1), ("shw", -1), ("hw", -1), ("hw", 4), ("nw", 6)])
def test_random_pairs_match_edlib_itself(mode: str, k: int) -> None:
    edlib = pytest.importorskip("edlib")
    pairs = _random_pairs(23, 80)
    results = edit(pairs, mode=mode, k=k, task="path", backend="cpu")
    for i, (query, target) in enumerate(pairs):
        found = edlib.align(query, target, mode=mode.upper(), task="path", k=k)
        assert results.distance[i] == found["editDistance"]
        if found["editDistance"] >= 0:
            assert results.pair_locations(i) == [(b, e + 1) for b, e in found["locations"]]
            begin, end = found["locations"][0]
            assert ref.rescore(query, target, results.cigarstring(i), begin) == (found["editDistance"], len(query),
                                                                                 end + 1)


@pytest.mark.parametrize("mode", ["nw", "shw", "hw"])
def test_k_cut_off_over_many_blocks_keeps_every_result_within_k(mode: str) -> None:
    # Pairs of 300-1200 bases (5-19 words of query bits) with 2-25% edits: the cut-off skips and
    # revisits blocks, and what it reports must equal the unbounded run wherever that is <= k.
    rng = random.Random(31)
    pairs = []
    for _ in range(24):
        query = "".join(rng.choice("ACGT") for _ in range(rng.randint(300, 1200)))
        target = list(query)
        for _ in range(int(len(query) * rng.uniform(0.02, 0.25))):
            at = rng.randrange(len(target))
            target[at:at + 1] = rng.choice([[rng.choice("ACGT")], [], [target[at], rng.choice("ACGT")]])
        pairs.append((query, "".join(rng.choice("ACGT") for _ in range(rng.randint(0, 40))) + "".join(target)))
    full = edit(pairs, mode=mode, task="locations", backend="cpu", threads=2)
    assert len(set(full.distance.tolist())) > 10
    for k in (0, 7, 40, 100, 250):
        bounded = edit(pairs, mode=mode, k=k, task="locations", backend="cpu", threads=2)
        within = full.distance <= k
        assert np.array_equal(bounded.distance, np.where(within, full.distance, -1)), k
        for i in np.flatnonzero(within):
            assert bounded.pair_locations(int(i)) == full.pair_locations(int(i)), (k, i)


def test_large_jobs_run_in_chunks_with_the_same_results(monkeypatch) -> None:
    edit_module = importlib.import_module("warpdp.plugin.edit")  # the attribute warpdp.plugin.edit is the function

    pairs = pack_edit_pairs(_random_pairs(41, 30) + [("ACGN", "ACGT")])
    whole = edit(pairs, mode="hw", task="path", backend="cpu")
    monkeypatch.setattr(edit_module, "CHUNK_BASES", 200)  # a few pairs per backend call
    assert edit(pairs, mode="hw", task="path", backend="cpu") == whole
    with pytest.raises(ValueError, match="pair 30 has a byte other than"):
        edit(pairs, method="windowed", mode="shw", backend="cpu")


def test_alignments_on_request() -> None:
    pairs = pack_edit_pairs([("ACGT", "TTACGATT"), ("GATTACA", "GATTTACA")])
    found = edit(pairs, mode="hw", task="path", backend="cpu").alignments(pairs)
    assert [(a.score, a.query_begin, a.query_end, a.ref_begin, a.ref_end, a.cigarstring) for a in found] == [
        (1, 0, 4, 2, 5, "3=1I"), (1, 0, 7, 0, 8, "4=1D3=")]


_small = st.text(alphabet="AC", min_size=1, max_size=40)  # two letters: many ties and repeats


@settings(max_examples=150, deadline=None)
@given(query=_small, target=_small, mode=st.sampled_from(["nw", "shw", "hw"]), k=st.integers(-1, 6))
def test_property_small_pairs(query: str, target: str, mode: str, k: int) -> None:
    found = edit([(query, target)], mode=mode, k=k, task="path", backend="cpu", threads=1)
    dist = ref.distance(query, target, mode)
    if k >= 0 and dist > k:
        assert found.distance[0] == -1 and found.pair_locations(0) == []
        return
    locations = [(b, e + 1) for b, e in ref.locations(query, target, mode)]
    assert (found.distance[0], found.pair_locations(0)) == (dist, locations)
    begin, end = locations[0]
    assert ref.rescore(query, target, found.cigarstring(0), begin) == (dist, len(query), end)


@settings(max_examples=100, deadline=None)
@given(query=st.text(alphabet="ACGT", min_size=1, max_size=90), target=st.text(alphabet="ACGT", min_size=1, max_size=90),
       window=st.integers(2, 64), data=st.data())
def test_property_windowed(query: str, target: str, window: int, data) -> None:
    overlap = data.draw(st.integers(0, window - 1))
    found = edit([(query, target)], method="windowed", mode="shw", window=window, overlap=overlap, task="path",
                 backend="cpu", threads=1)
    assert (found.distance[0], found.cigarstring(0)) == genasm(query, target, window, overlap)
