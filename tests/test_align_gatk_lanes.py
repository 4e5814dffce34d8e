"""GATK mode on the align family's SIMD variants (inter-pair lanes, int16 where GATK's bound fits, else
int32): GKL's results on ../shared/data/sw with every CPU variant, and the scalar variant's results
(CIGAR, offset and every column) on random pairs and parameters, including lengths and parameters at
the int16 lanes' bound, pairs of 1,024-2,047 bases (int32 lanes) and longer (scalar kernel) in the same
call, and bytes other than ACGT (GATK compares bytes as they are). The scalar variant is checked against
the independent reference (tests/references/gatk_sw.py) here and in test_align_api.py."""
from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.align import sw_cases, sw_expected
from references.gatk_sw import STRATEGIES, gatk_sw
from warpdp.plugin.align import AlignPairs, AlignParams, align, align_cpu_isas

SIMD_ISAS = [isa for isa in align_cpu_isas() if isa != "scalar"]
# HaplotypeCaller's three sets (NEW_SW_PARAMETERS, ALIGNMENT_TO_BEST_HAPLOTYPE, STANDARD_NGS)
HC_PARAMETERS = ((200, -150, -260, -11), (10, -15, -30, -5), (25, -50, -110, -6))


def gatk_params(scores: tuple[int, int, int, int], overhang: str) -> AlignParams:
    match, mismatch, gap_open, gap_extend = scores
    return AlignParams(mode="gatk", match=match, mismatch=mismatch, gap_open=gap_open, gap_extend=gap_extend,
                       overhang=overhang, cigar=True)


def run(pairs: list[tuple[bytes, bytes]], params: AlignParams, isa: str, threads: int = 2):
    """(ref, alt) pairs; the results of alt (query) against ref (target)."""
    packed = AlignPairs.from_sequences([(alt, ref) for ref, alt in pairs])
    return align(packed, params, backend="cpu", cpu_isa=isa, threads=threads)


def assert_variants_agree(pairs: list[tuple[bytes, bytes]], params: AlignParams) -> None:
    want = run(pairs, params, "scalar", threads=1)
    for isa in SIMD_ISAS:
        got = run(pairs, params, isa)
        assert got == want, (isa, params, [k for k in range(len(pairs)) if got.row(k) != want.row(k)][:5])


@pytest.mark.parametrize("isa", align_cpu_isas())
def test_every_cpu_variant_reproduces_gkl(isa: str) -> None:
    cases, expected = sw_cases(), sw_expected()
    groups: dict[tuple, list[int]] = defaultdict(list)
    for k, case in enumerate(cases):
        groups[case[2:]].append(k)
    checked = 0
    for (*scores, overhang), indices in groups.items():
        # twice over, so that the lanes' batches hold pairs of several shapes
        results = run([cases[k][:2] for k in indices] * 2, gatk_params(tuple(scores), overhang), isa)
        for n, k in enumerate(indices * 2):
            assert (results.cigarstring(n), int(results.columns["target_begin"][n])) == expected[k], (isa, k)
            checked += 1
    assert checked == 1200


sequences = st.binary(min_size=1, max_size=60).map(lambda b: bytes(b"ACGTNa"[x % 6] for x in b))


@st.composite
def gatk_pairs(draw) -> list[tuple[bytes, bytes]]:
    """(ref, alt): unrelated, or alt a copy of a part of ref with a few edits."""
    pairs = []
    for _ in range(draw(st.integers(1, 70))):
        ref = draw(sequences)
        if draw(st.booleans()):
            start = draw(st.integers(0, len(ref) - 1))
            alt = ref[start:start + draw(st.integers(1, len(ref)))]
            for at, text in draw(st.lists(st.tuples(st.integers(0, len(alt)), st.sampled_from([b"", b"A", b"GG"])),
                                          max_size=3)):
                alt = alt[:at] + text + alt[at + 1:]
            alt = alt or b"T"
        else:
            alt = draw(sequences)
        pairs.append((ref, alt))
    return pairs


@st.composite
def gatk_parameters(draw) -> AlignParams:
    # up to 700: short pairs fit the int16 lanes with small values, some pairs need int32 with large ones
    scores = (draw(st.integers(1, 700)), draw(st.integers(-700, 0)), draw(st.integers(-700, 0)),
              draw(st.integers(-700, 0)))
    return gatk_params(scores, draw(st.sampled_from(STRATEGIES)))


@pytest.mark.skipif(not SIMD_ISAS, reason="this CPU runs only the scalar variant")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs=gatk_pairs(), params=gatk_parameters())
def test_simd_variants_equal_scalar(pairs: list[tuple[bytes, bytes]], params: AlignParams) -> None:
    assert_variants_agree(pairs, params)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs=gatk_pairs(), params=gatk_parameters())
def test_every_variant_equals_the_independent_reference(pairs: list[tuple[bytes, bytes]],
                                                        params: AlignParams) -> None:
    scores = (params.match, params.mismatch, params.gap_open, params.gap_extend)
    want = [gatk_sw(ref, alt, *scores, params.overhang) for ref, alt in pairs]
    for isa in align_cpu_isas():
        got = run(pairs, params, isa)
        assert [(got.cigarstring(k), int(got.columns["target_begin"][k])) for k in range(len(pairs))] == want, isa


@pytest.mark.skipif(not SIMD_ISAS, reason="this CPU runs only the scalar variant")
@pytest.mark.parametrize("overhang", STRATEGIES)
def test_int16_bound_and_the_lane_limit(overhang: str) -> None:
    # NEW_SW_PARAMETERS: an identical m x m pair reaches 200m, so the int16 lanes take it up to about
    # m = 160 (align_gatk_fits_int16), the int32 lanes above; unrelated pairs reach the low end
    # (gaps of -11 per base, mismatches of -150); pairs of 1,024-2,047 bases take the int32 lanes,
    # longer ones the scalar kernel
    pairs = []
    for length in (158, 159, 160, 161, 162, 163):
        pairs += [(b"A" * length, b"A" * length), (b"A" * length, b"C" * length), (b"AC" * length, b"G" * 9),
                  (b"T" * 5, b"GA" * length)]
    pairs += [(b"ACGT" * 256, b"ACGT" * 200), (b"ACGTT" * 205, b"ACGT" * 255), (b"ACGT" * 255, b"ACGTA" * 205),
              (b"ACGT" * 512, b"ACGA" * 100), (b"ACGT" * 512 + b"G", b"CGTA" * 300), (b"GT" * 20, b"ACGT" * 513)]
    for scores in (*HC_PARAMETERS, (700, -700, -700, -700)):
        assert_variants_agree(pairs * 3, gatk_params(scores, overhang))
    got = run(pairs[:24], gatk_params(HC_PARAMETERS[0], overhang), SIMD_ISAS[-1])
    for k, (ref, alt) in enumerate(pairs[:24]):
        want = gatk_sw(ref, alt, *HC_PARAMETERS[0], overhang)
        assert (got.cigarstring(k), int(got.columns["target_begin"][k])) == want, k
