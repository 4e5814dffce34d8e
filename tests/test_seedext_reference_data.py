"""Seed extension reproduces BWA's ksw_extend2 outputs exactly, in every CPU variant."""
from __future__ import annotations

import numpy as np
import pytest

import warpdp
from helpers.data import shared_file
from references.seedext import ksw_extend2

ISAS = warpdp.seedext_cpu_isas()
# The data README's two parameter sets.
PARAMETER_SETS = {
    "bwamem-like-500.ksw_extend2.out": {},
    "bwamem-like-500.alt.ksw_extend2.out": dict(a=2, b=5, o_del=5, e_del=2, o_ins=7, e_ins=1, w=30,
                                                end_bonus=0, zdrop=50),
}


@pytest.fixture(scope="module")
def pairs() -> warpdp.SeedExtPairs:
    return warpdp.read_seedext_tsv(shared_file("seedext", "bwamem-like-500.tsv"))


def expected(name: str) -> np.ndarray:
    return np.loadtxt(shared_file("seedext", name), dtype=np.int32, ndmin=2)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", sorted(PARAMETER_SETS))
def test_every_variant_matches_bwa(pairs, name: str, isa: str) -> None:
    want = expected(name)
    got = warpdp.seed_extend(pairs, backend="cpu", threads=1, cpu_isa=isa, **PARAMETER_SETS[name]).table
    bad = np.flatnonzero((got != want).any(axis=1))
    assert len(bad) == 0, f"{len(bad)} pairs differ, first {bad[0]}: got {got[bad[0]]}, want {want[bad[0]]}"


@pytest.mark.parametrize("name", sorted(PARAMETER_SETS))
def test_threads_and_default_variant(pairs, name: str) -> None:
    got = warpdp.seed_extend(pairs, backend="cpu", threads=2, **PARAMETER_SETS[name])
    np.testing.assert_array_equal(got.table, expected(name))


@pytest.mark.parametrize("name", sorted(PARAMETER_SETS))
def test_python_reference_matches_bwa(pairs, name: str) -> None:
    """The tests' own reference agrees with BWA (on a sample: it is plain Python)."""
    want = expected(name)
    for k in range(0, pairs.n_pairs, 25):
        q0, q1 = pairs.query_offsets[k:k + 2]
        t0, t1 = pairs.target_offsets[k:k + 2]
        got = ksw_extend2(pairs.query[q0:q1].tobytes(), pairs.target[t0:t1].tobytes(), int(pairs.h0[k]),
                          **PARAMETER_SETS[name])
        assert tuple(got) == tuple(want[k]), f"pair {k}"
