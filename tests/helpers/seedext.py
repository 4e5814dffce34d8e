"""Seed-extension inputs and checks the tests share."""
from __future__ import annotations

import numpy as np

import warpdp

from .sequences import mutate


def make_seed_pairs(seed: int, n: int, query: tuple[int, int] = (0, 250)) -> warpdp.SeedExtPairs:
    """BWA-MEM-like extensions: query of the given lengths, target = query with errors plus up to
    100 more bases, h0 19..60, some N."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"ACGTN", dtype=np.uint8)
    p = [0.245, 0.245, 0.245, 0.245, 0.02]
    items = []
    for _ in range(n):
        q = rng.choice(alphabet, int(rng.integers(*query, endpoint=True)), p=p)
        t = np.concatenate([mutate(q, rng, rng.uniform(0.01, 0.1)), rng.choice(alphabet, int(rng.integers(0, 100)))])
        items.append((q, t, int(rng.integers(19, 60, endpoint=True))))
    return warpdp.pack_seed_pairs(items)


def assert_seedext_equal(got: warpdp.SeedExtResults, expected: warpdp.SeedExtResults) -> None:
    assert isinstance(got, warpdp.SeedExtResults)
    assert got.table.dtype == np.int32 and got.table.flags.c_contiguous
    np.testing.assert_array_equal(got.table, expected.table)


def broken_pairs(n: int, bad: int, kind: str) -> warpdp.SeedExtPairs:
    """n one-base pairs, pair `bad` broken in one way (built without from_arrays' checks)."""
    query_offsets = np.arange(n + 1, dtype=np.int64)
    h0 = np.full(n, 10, dtype=np.int32)
    if kind == "decreasing":
        query_offsets[bad + 1] = query_offsets[bad] - 1
    elif kind == "h0":
        h0[bad] = -3
    elif kind == "score":
        h0[bad] = 2**30
    return warpdp.SeedExtPairs(query=np.full(n, ord("A"), np.uint8), query_offsets=query_offsets,
                               target=np.full(n, ord("A"), np.uint8),
                               target_offsets=np.arange(n + 1, dtype=np.int64), h0=h0)


# broken_pairs(100, 70, kind) and the error it must raise
BROKEN_PAIR_CASES = [("decreasing", r"query_offsets must not decrease \(pair 70: 70 -> 69\)"),
                     ("h0", "h0 must be >= 0.*pair 70 has -3"),
                     ("score", r"pair 70: h0 \+ a \* min")]
