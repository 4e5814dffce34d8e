"""The align family's CPU backend against the shared reference data: parasail's scores (every mode and
gap model; CIGARs must re-score to the score, they need not equal parasail's) and GKL's native
Smith-Waterman output (CIGAR and offset exactly, every case)."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from helpers.align import (GAP_MODELS, GAPS, MATCH, MISMATCH, MODES, align_pairs, intra_pair_from, parasail_out,
                           sw_cases, sw_expected)
from references import align as ref
from warpdp.plugin.align import align, align_cpu_isas, gatk_smith_waterman, gatk_smith_waterman_batch

SHORT = 320  # the pairs up to ~1,000 bp; the last 80 are 2-10 kb


def _check(mode: str, gaps: str, first_pair: int, stop: int, isa: str | None = None) -> None:
    pairs, expected = align_pairs()[first_pair:stop], parasail_out(mode, gaps)[first_pair:stop]
    gap_open, gap_extend = GAPS[gaps]
    params = dict(mode=mode, gaps=gaps, match=MATCH, mismatch=MISMATCH, gap_open=gap_open, gap_extend=gap_extend,
                  cpu_isa=isa)
    with_cigar = align(pairs, cigar=True, backend="cpu", threads=2, **params)
    score_only = align(pairs, backend="cpu", threads=2, **params)
    scores = with_cigar.columns["score"]
    want = np.array([row[0] for row in expected])
    assert np.array_equal(scores, want), np.flatnonzero(scores != want)[:5]
    # the score-only path reports the same coordinates as the traceback (one tie rule)
    assert score_only == type(score_only)(with_cigar.columns)
    matrix = ref.simple_matrix(MATCH, MISMATCH)
    first, ext = ref.gap_costs(gap_open, gap_extend, gaps)
    for k, found in enumerate(with_cigar.alignments()):
        query, target = pairs[k]
        assert ref.rescore(query, target, found.query_begin, found.ref_begin, found.cigarstring, matrix, first,
                           ext) == (found.score, found.query_end, found.ref_end), first_pair + k
        if mode != "local":
            assert (found.query_begin, found.query_end) == (0, len(query))
        if mode == "global":
            assert (found.ref_begin, found.ref_end) == (0, len(target))


@pytest.mark.parametrize("gaps", GAP_MODELS)
@pytest.mark.parametrize("mode", MODES)
def test_cpu_matches_parasail(mode: str, gaps: str) -> None:
    _check(mode, gaps, 0, SHORT)


@pytest.mark.parametrize("isa", align_cpu_isas())
@pytest.mark.parametrize("mode", MODES)
def test_every_cpu_variant_matches_parasail(mode: str, isa: str) -> None:
    # each variant forced (the test above runs the best one): affine gaps, the pairs up to ~1,000 bp
    _check(mode, "affine", 0, SHORT, isa)


SIMD_ISAS = [isa for isa in align_cpu_isas() if isa != "scalar"]


@pytest.mark.parametrize("isa", SIMD_ISAS)
@pytest.mark.parametrize("mode", MODES)
def test_every_simd_variant_matches_parasail_through_the_intra_pair_kernel(mode: str, isa: str) -> None:
    # the pairs up to ~1,000 bp, every one sent to the intra-pair kernel (score-only and with CIGAR)
    with intra_pair_from(1):
        _check(mode, "affine", 0, SHORT, isa)


@pytest.mark.parametrize("isa", SIMD_ISAS)
@pytest.mark.parametrize("mode", MODES)
def test_every_simd_variant_matches_parasail_long_pairs(mode: str, isa: str) -> None:
    # 2-10 kb pairs, which take the intra-pair kernel with a CIGAR by default; 10 per mode and variant
    start = SHORT + MODES.index(mode) * 20 + 10 * SIMD_ISAS.index(isa)
    _check(mode, "affine", start, start + 10, isa)


@pytest.mark.parametrize("mode", MODES)
def test_cpu_matches_parasail_long_pairs(mode: str) -> None:
    # 2-10 kb pairs; a quarter of them per mode (the DP is quadratic, the machine shared)
    for start in range(SHORT + MODES.index(mode) * 20, SHORT + MODES.index(mode) * 20 + 20, 10):
        _check(mode, "affine", start, start + 10)


def test_cpu_reproduces_gkl_smith_waterman_exactly() -> None:
    cases, expected = sw_cases(), sw_expected()
    by_parameters: dict[tuple, list[int]] = defaultdict(list)
    for k, case in enumerate(cases):
        by_parameters[case[2:]].append(k)
    checked = 0
    for parameters, indices in by_parameters.items():
        results = gatk_smith_waterman_batch([cases[k][:2] for k in indices], *parameters, threads=2)
        for n, k in enumerate(indices):
            got = (results.cigarstring(n), int(results.columns["target_begin"][n]))
            assert got == expected[k], (k, parameters)
            checked += 1
    assert checked == 600
    # the single-pair form gives the same
    assert gatk_smith_waterman(*cases[0]) == expected[0]
