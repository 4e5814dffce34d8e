"""Seed-extension API: data model, results, parameter and input validation, backend choice."""
from __future__ import annotations

import numpy as np
import pytest

import warpdp
from helpers.seedext import BROKEN_PAIR_CASES, broken_pairs
from warpdp.plugin.core.results import Results
from warpdp.plugin.seedext import SeedExtParams, seedext_cells

ITEMS = [(b"ACGTACGTAC", b"ACGTACGTACGG", 20), ("ACGGT", "ACGT", 5), (b"", b"ACG", 9)]


def packed() -> warpdp.SeedExtPairs:
    return warpdp.pack_seed_pairs(ITEMS)


def test_packed_layout_and_results() -> None:
    pairs = packed()
    assert pairs.n_pairs == len(pairs) == 3
    assert pairs.query_lengths().tolist() == [10, 5, 0]
    assert pairs.target_lengths().tolist() == [12, 4, 3]
    assert pairs.h0.dtype == np.int32 and pairs.h0.tolist() == [20, 5, 9]
    results = warpdp.seed_extend(pairs, backend="cpu")
    assert isinstance(results, warpdp.SeedExtResults) and len(results) == 3
    assert results.table.shape == (3, 6) and results.table.dtype == np.int32
    for k, name in enumerate(("score", "qle", "tle", "gtle", "gscore", "max_off")):
        np.testing.assert_array_equal(getattr(results, name), results.table[:, k])
    # Ten matches on the diagonal from h0 = 20; the query end is reached at target length 10.
    assert results.table[0].tolist() == [30, 10, 10, 10, 30, 0]



def test_results_are_shared_results_columns() -> None:
    results = warpdp.seed_extend(packed(), backend="cpu")
    assert isinstance(results, Results) and not results.has_cigar
    assert list(results) == ["score", "qle", "tle", "gtle", "gscore", "max_off"]
    assert results.row(0) == dict(zip(results, [30, 10, 10, 10, 30, 0]))
    part = results[1:]
    assert isinstance(part, warpdp.SeedExtResults) and part.table.flags.c_contiguous
    np.testing.assert_array_equal(part.table, results.table[1:])
    assert warpdp.SeedExtResults.concat([results[:1], part]) == results

def test_select_and_from_arrays_round_trip() -> None:
    pairs = packed()
    part = pairs.select(1, 3)
    assert part.query.tobytes() == b"ACGGT" and part.target.tobytes() == b"ACGTACG"
    rebuilt = warpdp.SeedExtPairs.from_arrays(query=part.query, query_offsets=part.query_offsets.astype(np.int32),
                                              target=part.target.tobytes(), target_offsets=list(part.target_offsets),
                                              h0=part.h0.astype(np.uint8))
    np.testing.assert_array_equal(warpdp.seed_extend(rebuilt, backend="cpu").table,
                                  warpdp.seed_extend(pairs, backend="cpu").table[1:])


def test_empty_batch() -> None:
    pairs = warpdp.pack_seed_pairs([])
    assert warpdp.seed_extend(pairs, backend="cpu").table.shape == (0, 6)


def test_seed_extend_with_params_object() -> None:
    params = SeedExtParams(a=2, b=3, w=5)
    np.testing.assert_array_equal(warpdp.seed_extend_with(packed(), params, backend="cpu").table,
                                  warpdp.seed_extend(packed(), a=2, b=3, w=5, backend="cpu").table)


def test_cells_counted() -> None:
    cells = seedext_cells(packed())
    assert cells.dtype == np.int64 and cells[0] > 0 and cells[2] == 0


@pytest.mark.parametrize(("option", "value", "error", "message"), [
    ("a", -1, ValueError, "a must be within 0..127"),
    ("b", 128, ValueError, "b must be within 0..127"),
    ("o_del", -1, ValueError, "o_del must be within"),
    ("e_del", 0, ValueError, "e_del must be within 1.."),
    ("o_ins", 20000, ValueError, "o_ins must be within"),
    ("e_ins", 0, ValueError, "e_ins must be within 1.."),
    ("w", -1, ValueError, "w must be within"),
    ("end_bonus", -5, ValueError, "end_bonus must be within"),
    ("zdrop", -1, ValueError, "0 disables z-drop"),
    ("a", 1.5, TypeError, "a must be an int"),
    ("w", True, TypeError, "w must be an int"),
])
def test_bad_parameters(option, value, error, message) -> None:
    with pytest.raises(error, match=message):
        warpdp.seed_extend(packed(), backend="cpu", **{option: value})


def test_bad_arrays() -> None:
    good = packed()
    fields = dict(query=good.query, query_offsets=good.query_offsets, target=good.target,
                  target_offsets=good.target_offsets, h0=good.h0)
    cases = [
        (dict(h0=np.array([1, -2, 3])), ValueError, "h0 must be >= 0.*pair 1 has -2"),
        (dict(h0=np.array([1.0, 2.0, 3.0])), TypeError, "h0 must hold integers"),
        (dict(h0=np.array([1, 2**31, 3])), ValueError, "h0 must be at most"),
        (dict(h0=np.array([1, 2])), ValueError, "query_offsets has 4 entries but h0 has 2 pairs"),
        (dict(query=np.zeros(3, dtype=np.int16)), TypeError, "query must have dtype uint8"),
        (dict(target="ACGT"), TypeError, "target must be a numpy uint8 array or bytes"),
        (dict(query_offsets=np.array([0, 10, 5, 15])), ValueError, "query_offsets must not decrease"),
        (dict(query_offsets=np.array([1, 10, 15, 15])), ValueError, "query_offsets must start at 0"),
        (dict(target_offsets=np.array([0, 12, 16, 20])), ValueError, "target_offsets must end at 19"),
        (dict(query_offsets=np.array([0.0, 10, 15, 15])), TypeError, "query_offsets must hold integers"),
    ]
    for change, error, message in cases:
        with pytest.raises(error, match=message):
            warpdp.SeedExtPairs.from_arrays(**(fields | change))


def test_validate_catches_swapped_dtypes() -> None:
    pairs = packed()
    broken = warpdp.SeedExtPairs(query=pairs.query, query_offsets=pairs.query_offsets.astype(np.int32),
                                 target=pairs.target, target_offsets=pairs.target_offsets, h0=pairs.h0)
    with pytest.raises(TypeError, match="query_offsets must be a 1-D numpy array of int64"):
        warpdp.seed_extend(broken, backend="cpu")
    with pytest.raises(TypeError, match="pairs must be SeedExtPairs"):
        warpdp.seed_extend(ITEMS, backend="cpu")


def test_scores_that_could_overflow_are_refused() -> None:
    pairs = warpdp.pack_seed_pairs([(b"A" * 100, b"A" * 100, 2**30 - 50)])
    with pytest.raises(ValueError, match=r"pair 0: h0 \+ a \* min\(query length, target length\)"):
        warpdp.seed_extend(pairs, backend="cpu")


@pytest.mark.parametrize(("kind", "message"), BROKEN_PAIR_CASES)
def test_range_checks_name_pairs_by_their_index(kind, message) -> None:
    """The per-pair checks run on a range of pairs (the GPU launcher's chunks) name a bad pair
    as the whole-job check does, and pass ranges without it."""
    from warpdp.plugin.seedext import SeedExtParams, check_pair_range, check_seed_extension, check_seed_job

    pairs, params = broken_pairs(100, 70, kind), SeedExtParams()
    check_seed_job(pairs, params)
    for start, stop in ((0, 70), (71, 100), (30, 30)):
        check_pair_range(pairs, params, start, stop)
    for start, stop in ((60, 71), (70, 71), (0, 100)):
        with pytest.raises(ValueError, match=message):
            check_pair_range(pairs, params, start, stop)
    with pytest.raises(ValueError, match=message):
        check_seed_extension(pairs, params)
    with pytest.raises(ValueError, match=message):
        warpdp.seed_extend(pairs, backend="cpu")


def test_pack_errors() -> None:
    with pytest.raises(TypeError, match="pair 0: expected"):
        warpdp.pack_seed_pairs([(b"ACGT", b"ACGT")])
    with pytest.raises(TypeError, match="pair 1: h0 must be an int"):
        warpdp.pack_seed_pairs([(b"A", b"A", 1), (b"A", b"A", True)])
    with pytest.raises(ValueError, match="pair 0: h0 must be within"):
        warpdp.pack_seed_pairs([(b"A", b"A", -1)])
    with pytest.raises(TypeError, match="pair 0 query must be str, bytes"):
        warpdp.pack_seed_pairs([(1234, b"A", 1)])


def test_backend_and_isa_choice(monkeypatch) -> None:
    with pytest.raises(ValueError, match="backend must be one of"):
        warpdp.seed_extend(packed(), backend="tpu")
    with pytest.raises(ValueError, match="cpu_isa .* must be one of"):
        warpdp.seed_extend(packed(), backend="cpu", cpu_isa="sse9")
    monkeypatch.setenv("WARPDP_CPU_ISA", "scalar")
    np.testing.assert_array_equal(warpdp.seed_extend(packed(), backend="cpu").table,
                                  warpdp.seed_extend(packed(), backend="cpu", cpu_isa=warpdp.seedext_cpu_isas()[-1]).table)
    with pytest.raises(ValueError, match="threads must be at least 1"):
        warpdp.seed_extend(packed(), backend="cpu", threads=0)


def test_gpu_request_without_gpu_kernel() -> None:
    usable, reason = warpdp.gpu_status("seedext")
    if usable:
        pytest.skip("a GPU backend is usable here")
    with pytest.raises(warpdp.BackendUnavailableError, match="seedext"):
        warpdp.seed_extend(packed(), backend="gpu")
    # auto falls back to the CPU
    np.testing.assert_array_equal(warpdp.seed_extend(packed()).table,
                                  warpdp.seed_extend(packed(), backend="cpu").table)


def test_results_table_is_checked() -> None:
    with pytest.raises(TypeError, match=r"\(n_pairs, 6\)"):
        warpdp.SeedExtResults(np.zeros((2, 5), dtype=np.int32))


def test_params_object_keywords_and_seed_extend_with_agree() -> None:
    pairs, params = packed(), SeedExtParams(a=2, w=5)
    expected = warpdp.seed_extend(pairs, a=2, w=5, backend="cpu").table
    np.testing.assert_array_equal(warpdp.seed_extend(pairs, params, backend="cpu").table, expected)
    np.testing.assert_array_equal(warpdp.seed_extend_with(pairs, params, backend="cpu").table, expected)
    out = warpdp.SeedExtResults(np.zeros((len(pairs), 6), np.int32))
    assert warpdp.seed_extend(pairs, params, backend="cpu", out=out) is out
    np.testing.assert_array_equal(out.table, expected)
    with pytest.raises(ValueError, match="out.table has 2 rows but there are 3 pairs"):
        warpdp.seed_extend(pairs, params, backend="cpu", out=warpdp.SeedExtResults(np.zeros((2, 6), np.int32)))
    with pytest.raises(ValueError, match="e_del must be within 1..16383, not 0"):
        SeedExtParams(e_del=0)
    assert pairs.validate(params) == 10  # the longest query
    with pytest.raises(TypeError, match="out must be SeedExtResults, not ndarray"):
        warpdp.seed_extend(pairs, params, backend="cpu", out=np.zeros((3, 6), np.int32))
