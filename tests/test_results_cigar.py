"""Results (columns plus an optional ragged CIGAR), the CIGAR helpers and the registry's import cost."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from warpdp import registry
from warpdp.plugin.core import cigar
from warpdp.plugin.core.results import Results


def test_cigar_strings_round_trip_through_packed_ops():
    ops = cigar.from_string("3S10M2I5M1D4=1X")
    assert ops.dtype == np.uint32 and len(ops) == 7
    assert int(ops[0]) == 3 << 4 | 4 and int(ops[1]) == 10 << 4 | 0
    assert cigar.to_string(ops) == "3S10M2I5M1D4=1X"
    assert cigar.tuples(ops)[:2] == [(4, 3), (0, 10)]
    assert cigar.spans(ops) == (3 + 10 + 2 + 5 + 4 + 1, 10 + 5 + 1 + 4 + 1)
    assert cigar.to_string(cigar.from_string("*")) == "*"
    for bad in ("10", "M", "3Q", "4M3"):
        with pytest.raises(ValueError):
            cigar.from_string(bad)
    with pytest.raises(ValueError):
        cigar.pack([1 << 28], [0])


def test_alignment_convenience_object():
    one = cigar.Alignment(score=7, query_begin=0, query_end=5, ref_begin=2, ref_end=6, ops=cigar.from_string("2M1I2M"))
    assert one.cigarstring == "2M1I2M" and one.cigartuples == [(0, 2), (1, 1), (0, 2)]
    assert one == cigar.Alignment(7, 0, 5, 2, 6, cigar.from_string("2M1I2M"))


def make(counts: list[int]) -> Results:
    ops = cigar.pack(np.arange(1, sum(counts) + 1), np.arange(sum(counts)) % 9)
    return Results({"score": np.arange(len(counts), dtype=np.int64) * 3}, ops, cigar.offsets_of(counts))


def test_results_slice_and_concat_exactly():
    results = make([2, 0, 3, 1])
    assert len(results) == 4 and results.has_cigar
    part = results[1:3]
    assert part.columns["score"].tolist() == [3, 6]
    assert part.cigar_offsets.tolist() == [0, 0, 3]
    assert part.cigarstring(1) == cigar.to_string(results.cigar(2))
    assert Results.concat([results[:1], results[1:1], results[1:]]) == results
    assert results.row(0) == {"score": 0, "cigar": "1M2I"}
    plain = Results({"score": np.arange(3)})
    assert not plain.has_cigar and Results.concat([plain[:2], plain[2:]]) == plain


def test_results_refuse_inconsistent_arrays():
    with pytest.raises(ValueError):
        Results({"a": np.zeros(2), "b": np.zeros(3)})
    with pytest.raises(ValueError):
        Results({"a": np.zeros(2)}, np.zeros(3, np.uint32), np.array([0, 1, 2]))  # offsets end short
    with pytest.raises(ValueError):
        Results({"a": np.zeros(2)}, np.zeros(3, np.uint32), None)


def test_registry_lists_the_built_in_families_and_imports_lightly():
    assert [f.name for f in registry.families()][:3] == ["pairhmm", "xdrop", "seedext"]
    assert registry.family("xdrop").rpc == "Xdrop" and registry.family("xdrop").stream_rpc == "XdropStream"
    with pytest.raises(ValueError):
        registry.register(registry.Family(name="other", rpc="Xdrop", service="x:y"))
    code = ("import sys, warpdp.registry; "
            "print(sorted(m for m in sys.modules if m.startswith(('grpc', 'cupy', 'warpdp.grpc', 'warpdp.cython'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
