"""Property tests: every CPU variant equals the plain-Python ksw_extend2 reference.

Batches mix lengths, related and unrelated sequences, N and other bytes, and parameters
that stress the band (tiny w), z-drop (tiny and disabled), h0 (0, small, large enough for the
32-bit lanes) and empty queries/targets, so SIMD lanes run different windows side by side.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import warpdp
from references.seedext import ksw_extend2

ISAS = warpdp.seedext_cpu_isas()
PARAM_NAMES = ("a", "b", "o_del", "e_del", "o_ins", "e_ins", "w", "end_bonus", "zdrop")


@st.composite
def parameters(draw) -> dict[str, int]:
    if draw(st.booleans()):
        return {}  # BWA-MEM's defaults
    return dict(
        a=draw(st.sampled_from([0, 1, 2, 5, 127])),
        b=draw(st.sampled_from([0, 1, 4, 9, 127])),
        o_del=draw(st.sampled_from([0, 1, 6, 20])),
        e_del=draw(st.sampled_from([1, 2, 7])),
        o_ins=draw(st.sampled_from([0, 1, 6, 20])),
        e_ins=draw(st.sampled_from([1, 3, 5])),
        w=draw(st.sampled_from([0, 1, 2, 5, 30, 100, 2**31 - 1])),
        end_bonus=draw(st.sampled_from([0, 5, 50])),
        zdrop=draw(st.sampled_from([0, 1, 5, 20, 100])),
    )


@st.composite
def pair(draw, max_query: int, max_target: int) -> tuple[bytes, bytes, int]:
    """A target, and a query copied from its start with errors (or unrelated, or empty)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    alphabet = np.frombuffer(draw(st.sampled_from([b"ACGT", b"ACGTN", b"acgtACGTNx-"])), dtype=np.uint8)
    tlen = int(draw(st.integers(0, max_target)))
    qlen = int(draw(st.integers(0, max_query)))
    target = rng.choice(alphabet, tlen)
    if draw(st.booleans()) and tlen:
        query = np.resize(target, qlen).copy()
        flips = rng.random(qlen) < draw(st.sampled_from([0.0, 0.03, 0.15, 0.4]))
        query[flips] = rng.choice(alphabet, int(flips.sum()))
        if qlen > 4 and draw(st.booleans()):  # an indel
            cut = int(rng.integers(1, qlen - 1))
            size = int(rng.integers(1, 4))
            query = np.concatenate([query[:cut], rng.choice(alphabet, size), query[cut:]])[:qlen] \
                if draw(st.booleans()) else np.concatenate([query[:cut], query[cut + size:]])
    else:
        query = rng.choice(alphabet, qlen)
    h0 = draw(st.sampled_from([0, 1, 5, 19, 40, 60, 120]))
    return query.astype(np.uint8).tobytes(), target.astype(np.uint8).tobytes(), h0


def reference_table(items, params) -> np.ndarray:
    return np.array([tuple(ksw_extend2(q, t, h0, **params)) for q, t, h0 in items], dtype=np.int32).reshape(-1, 6)


def assert_all_variants(items, params, threads: int = 1) -> None:
    pairs = warpdp.pack_seed_pairs(items)
    want = reference_table(items, params)
    for isa in ISAS:
        got = warpdp.seed_extend(pairs, backend="cpu", threads=threads, cpu_isa=isa, **params).table
        bad = np.flatnonzero((got != want).any(axis=1))
        assert len(bad) == 0, (f"{isa}: pair {bad[0]} {items[bad[0]]!r} params {params}: "
                               f"got {got[bad[0]]}, want {want[bad[0]]}")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=parameters(), items=st.lists(pair(40, 60), min_size=1, max_size=40))
def test_variants_equal_reference(params, items) -> None:
    assert_all_variants(items, params)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=parameters(), items=st.lists(pair(12, 20), min_size=1, max_size=20),
       big=st.integers(31_000, 100_000))
def test_large_scores_use_32_bit_lanes(params, items, big) -> None:
    """h0 near or above the 16-bit lanes' limit: those pairs run in 32-bit lanes."""
    items = [(q, t, big + h0) for q, t, h0 in items]
    assert_all_variants(items, params)


def test_mixed_batch_many_groups_and_threads() -> None:
    """More pairs than lanes, 16- and 32-bit pairs and empty ones mixed, two threads."""
    rng = np.random.default_rng(7)
    items = []
    for k in range(150):
        tlen = int(rng.integers(0, 90))
        target = rng.choice(np.frombuffer(b"ACGTN", dtype=np.uint8), tlen, p=[0.24, 0.24, 0.24, 0.24, 0.04])
        query = np.resize(target, int(rng.integers(0, 70))).copy()
        flips = rng.random(len(query)) < 0.05
        query[flips] = rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8), int(flips.sum()))
        h0 = int(rng.integers(0, 80)) + (40_000 if k % 7 == 0 else 0)
        items.append((query.tobytes(), target.tobytes(), h0))
    assert_all_variants(items, {}, threads=2)
    assert_all_variants(items, dict(w=3, zdrop=10, a=2, b=3), threads=2)


def test_long_pairs_all_variants_agree() -> None:
    """Query 1,000 and target 2,000 (the issue's minimum), every variant against the scalar one;
    one medium pair against the Python reference."""
    rng = np.random.default_rng(11)
    items = []
    for k in range(6):
        target = rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8), 2000)
        query = np.resize(target, 1000).copy()
        flips = rng.random(1000) < [0.0, 0.02, 0.05, 0.1, 0.3, 0.75][k]
        query[flips] = rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8), int(flips.sum()))
        query = np.concatenate([query[:500], query[503:], query[:3]])  # a 3-base deletion
        items.append((query.tobytes(), target.tobytes(), 30 + 5 * k))
    pairs = warpdp.pack_seed_pairs(items)
    scalar = warpdp.seed_extend(pairs, backend="cpu", threads=1, cpu_isa="scalar").table
    for isa in ISAS:
        np.testing.assert_array_equal(warpdp.seed_extend(pairs, backend="cpu", cpu_isa=isa).table, scalar)
    # Error-free but for the deletion: 997 matches less the 3-base deletion (6 + 3).
    assert scalar[0, 0] >= 30 + 997 - 9 and scalar[0, 1] >= 997
    q, t, h0 = items[2]
    medium = [(q[:300], t[:600], h0)]
    assert_all_variants(medium, {})
    assert_all_variants(medium, dict(w=10, zdrop=20))


EMPTY_AND_EDGE_CASES = [
    (b"", b"ACGT", 30),
    (b"ACGT", b"", 30),
    (b"", b"", 30),
    (b"ACGT", b"ACGT", 0),
    (b"NNNN", b"NNNNNN", 10),
    (b"ACGTACGT", b"acgtacgt", 10),
    (b"AC-T", b"ACXT", 10),
    (b"A" * 50, b"C" * 50, 3),
    (b"ACGT" * 30, b"ACGT" * 30, 1),
]


@pytest.mark.parametrize("params", [{}, dict(w=0), dict(w=1, zdrop=0), dict(end_bonus=0, o_ins=0, o_del=0)])
@pytest.mark.parametrize("item", EMPTY_AND_EDGE_CASES, ids=range(len(EMPTY_AND_EDGE_CASES)))
def test_edge_cases(item, params) -> None:
    assert_all_variants([item], params)


def test_empty_query_and_target_as_bwa() -> None:
    """What ksw_extend2's code does for them: an empty target never enters the row loop; an
    empty query ends at once, its only cell being the first column (h0 - o_del - e_del)."""
    pairs = warpdp.pack_seed_pairs([(b"", b"ACGT", 30), (b"ACGT", b"", 30), (b"", b"A", 3)])
    table = warpdp.seed_extend(pairs, backend="cpu").table
    assert table.tolist() == [[30, 0, 0, 1, 23, 0], [30, 0, 0, 0, -1, 0], [3, 0, 0, 1, 0, 0]]


def test_lowercase_and_other_bytes() -> None:
    upper = warpdp.pack_seed_pairs([(b"ACGTTGCA" * 5, b"ACGTTGCA" * 6, 20), (b"ACGTNNAC", b"ACGTNNAC", 9)])
    lower = warpdp.pack_seed_pairs([(b"acgttgca" * 5, b"acgtTGCA" * 6, 20), (b"acgt.-ac", b"ACGT*?AC", 9)])
    for isa in ISAS:
        np.testing.assert_array_equal(warpdp.seed_extend(upper, backend="cpu", cpu_isa=isa).table,
                                      warpdp.seed_extend(lower, backend="cpu", cpu_isa=isa).table)


def test_very_long_sequences_take_the_right_kernels() -> None:
    """A query past the 16-bit lanes' length limit (32-bit lanes) and one past the SIMD kernels'
    limit (scalar), among ordinary pairs: every variant equals the scalar one."""
    rng = np.random.default_rng(13)
    acgt = np.frombuffer(b"ACGT", dtype=np.uint8)
    items = []
    for qlen in (70_000, 33_000, 150, 0, 90):
        target = acgt[rng.integers(0, 4, qlen + 100)]
        query = np.resize(target, qlen).copy()
        flips = rng.random(qlen) < 0.03
        query[flips] = acgt[rng.integers(0, 4, int(flips.sum()))]
        items.append((query.tobytes(), target.tobytes(), 30))
    pairs = warpdp.pack_seed_pairs(items)
    scalar = warpdp.seed_extend(pairs, backend="cpu", cpu_isa="scalar").table
    assert scalar[1, 0] > 25_000  # a long extension really happened
    for isa in ISAS:
        np.testing.assert_array_equal(warpdp.seed_extend(pairs, backend="cpu", cpu_isa=isa, threads=2).table, scalar)
