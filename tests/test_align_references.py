"""The independent references of the align family against the shared reference data: the NumPy
Gotoh DP (tests/references/align.py) against parasail, the GATK SW reference (tests/references/gatk_sw.py)
against GKL's native output."""
from __future__ import annotations

import pytest

from helpers.align import GAP_MODELS, GAPS, MATCH, MISMATCH, MODES, align_pairs, parasail_out, sw_cases, sw_expected
from references import align as ref
from references.gatk_sw import gatk_sw


@pytest.mark.parametrize("gaps", GAP_MODELS)
@pytest.mark.parametrize("mode", MODES)
def test_gotoh_reference_matches_parasail(mode: str, gaps: str) -> None:
    pairs, expected = align_pairs(), parasail_out(mode, gaps)
    matrix = ref.simple_matrix(MATCH, MISMATCH)
    first, ext = ref.gap_costs(*GAPS[gaps], gaps=gaps)
    # Every 8th of the 320 pairs up to ~1,000 bp: the C backend's tests take all 400.
    for k in range(0, 320, 8):
        query, target = pairs[k]
        score, qb, qe, tb, te, cigar = ref.align(query, target, matrix, first, ext, mode)
        want = expected[k]
        assert score == want[0], (k, score, want[:5])
        assert ref.rescore(query, target, qb, tb, cigar, matrix, first, ext) == (score, qe, te), k
        # parasail's own CIGAR re-scores the same way (checks rescore() and the gap convention)
        assert ref.rescore(query, target, want[1], want[3], want[5], matrix, first, ext) == (score, want[2], want[4])
        if mode != "local":
            assert qb == 0 and qe == len(query), k
        if mode == "global":
            assert tb == 0 and te == len(target), k


def test_gatk_sw_reference_matches_gkl() -> None:
    cases, expected = sw_cases(), sw_expected()
    assert len(cases) == len(expected) == 600
    # every case up to 400 bp of ref (the rest is the C backend's test; pure Python is slow there)
    checked = 0
    for case, want in zip(cases, expected):
        if len(case[0]) <= 400:
            assert gatk_sw(*case) == want, case[2:]
            checked += 1
    assert checked > 200
