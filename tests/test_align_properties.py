"""The align family's SIMD variants (AVX2, AVX-512: pairs in int16 lanes, batched by length; long pairs
one at a time in the intra-pair anti-diagonal kernel) give the scalar variant's results exactly:
scores, coordinates and CIGARs, for random pairs and parameters of every generic mode, including
parameters that put some pairs past the int16 cells' bound (those take int32 cells) and pairs right
at it, batches of mixed shapes, and pairs on both sides of the intra-pair kernel's threshold (its
default, and lowered by the test hook so that short random pairs reach it). The scalar variant itself
is checked against the independent reference (tests/references/align.py) in test_align_api.py and
against parasail in test_align_reference_data.py; the same random pairs are checked against that
reference here too."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.align import intra_pair_from
from references import align as ref
from warpdp.plugin.align import AlignParams, align, align_cpu_isas

SIMD_ISAS = [isa for isa in align_cpu_isas() if isa != "scalar"]
MODES = ("global", "semiglobal", "local", "extension")
pytestmark = pytest.mark.skipif(not SIMD_ISAS, reason="this CPU runs only the scalar variant")

bases = st.text(alphabet="ACGTN", min_size=1, max_size=50)


@st.composite
def related_pairs(draw, longest: int = 50) -> list[tuple[str, str]]:
    """Pairs of unrelated sequences and of a sequence and a mutated copy (long matching runs,
    gaps), in batches over a lane count or two."""
    pairs = []
    for _ in range(draw(st.integers(1, 70))):
        query = draw(st.text(alphabet="ACGTN", min_size=1, max_size=longest))
        if draw(st.booleans()):
            edits = draw(st.lists(st.tuples(st.integers(0, len(query)), st.sampled_from(["", "A", "C", "GG"])),
                                  max_size=4))
            target = query
            for at, text in edits:
                target = target[:at] + text + target[at + 1:]
            target = target or "T"
        else:
            target = draw(st.text(alphabet="ACGTN", min_size=1, max_size=longest))
        pairs.append((query, target))
    return pairs


@st.composite
def parameters(draw, largest: int = 12) -> AlignParams:
    mode = draw(st.sampled_from(MODES))
    fields = dict(mode=mode, gaps=draw(st.sampled_from(["affine", "linear"])),
                  gap_open=draw(st.integers(0, largest)), gap_extend=draw(st.integers(0, largest)),
                  gap_convention=draw(st.sampled_from(["L-1", "L"])))
    if fields["gaps"] == "affine" and fields["gap_convention"] == "L-1" and fields["gap_open"] < fields["gap_extend"]:
        fields["gap_open"] = fields["gap_extend"]
    if draw(st.booleans()):
        fields["matrix"] = draw(st.lists(st.lists(st.integers(-largest, largest), min_size=5, max_size=5),
                                         min_size=5, max_size=5))
    else:
        fields["match"] = draw(st.integers(1, largest))
        fields["mismatch"] = draw(st.integers(-largest, -1))
    if mode == "extension" and draw(st.booleans()):
        fields["zdrop"] = draw(st.integers(0, 3 * largest))
    return AlignParams(**fields)


def assert_variants_agree(pairs: list[tuple[str, str]], params: AlignParams) -> None:
    for cigar in (False, True):
        want = align(pairs, params.replace(cigar=cigar), backend="cpu", cpu_isa="scalar", threads=1)
        for isa in SIMD_ISAS:
            got = align(pairs, params.replace(cigar=cigar), backend="cpu", cpu_isa=isa, threads=2)
            assert got == want, (isa, cigar, params, [k for k in range(len(pairs)) if got.row(k) != want.row(k)][:5])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs=related_pairs(), params=parameters())
def test_simd_variants_equal_scalar(pairs: list[tuple[str, str]], params: AlignParams) -> None:
    assert_variants_agree(pairs, params)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs=related_pairs(longest=60), params=parameters(largest=300))
def test_simd_variants_equal_scalar_near_the_int16_bound(pairs: list[tuple[str, str]], params: AlignParams) -> None:
    # |parameters| up to 300 (and AVX2's byte score table past 127): some pairs fit the int16
    # lanes (align_fits_int16) and some take the int32 lanes, in one call
    assert_variants_agree(pairs, params)


@pytest.mark.parametrize("mode", MODES)
def test_extreme_scores_at_the_int16_bound(mode: str) -> None:
    # identical and opposite sequences around the int16 lanes' bound: with every parameter 64, an
    # m x m pair fits while 2 * 64 + 2m * 64 + 2 * 64 <= 32767, i.e. up to m = 253, whose cells
    # then reach about -32,400 (all-gap paths) and +16,192 (all matches)
    match, mismatch, gap_open, gap_extend = 64, -64, 64, 64
    pairs = []
    for length in (252, 253, 254, 255):
        pairs += [("A" * length, "A" * length), ("A" * length, "C" * length), ("A" * length, "C" * (length // 3))]
    params = AlignParams(mode=mode, match=match, mismatch=mismatch, gap_open=gap_open, gap_extend=gap_extend)
    assert_variants_agree(pairs * 12, params)
    matrix = np.array(params.score_matrix())
    first, ext = params.gap_costs()
    got = align(pairs, params.replace(cigar=True), backend="cpu", threads=1)
    for k, (query, target) in enumerate(pairs):
        want = ref.align(query, target, matrix, first, ext, mode, -1)
        assert tuple(got.row(k)[c] for c in ("score", "query_begin", "query_end", "target_begin",
                                             "target_end")) == want[:5], k


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs=related_pairs(longest=30), params=parameters())
def test_simd_variants_equal_the_independent_reference(pairs: list[tuple[str, str]], params: AlignParams) -> None:
    matrix = np.array(params.score_matrix())
    first, ext = params.gap_costs()
    zdrop = -1 if params.zdrop is None else params.zdrop
    for isa in SIMD_ISAS:
        got = align(pairs, params.replace(cigar=True), backend="cpu", cpu_isa=isa, threads=1)
        for k, (query, target) in enumerate(pairs):
            want = ref.align(query, target, matrix, first, ext, params.mode, zdrop)
            row = got.row(k)
            assert (row["score"], row["query_begin"], row["query_end"], row["target_begin"], row["target_end"],
                    row["cigar"]) == (*want[:5], want[5] or "*"), (isa, k, query, target)


@pytest.mark.parametrize("mode", MODES)
def test_batches_of_mixed_shapes_and_the_lane_limits(mode: str) -> None:
    # long queries against short targets and the reverse in one batch (its traceback is sized by the
    # longest of each); pairs just over the CIGAR lanes' 1,023 bases per side (scalar kernel) among them
    rng = np.random.default_rng(26)

    def bases(n: int) -> str:
        return "".join("ACGT"[k] for k in rng.integers(0, 4, n))

    pairs = []
    for long_side in (900, 1023, 1024):
        long = bases(long_side)
        pairs += [(long, long[100:107]), (long[200:205], long), (long, long[:long_side // 2] + bases(3))]
    assert_variants_agree(pairs * 4, AlignParams(mode=mode, match=3, mismatch=-4, gap_open=4, gap_extend=1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs=related_pairs(longest=90), params=parameters(), threshold=st.integers(1, 90))
def test_intra_pair_kernel_equals_scalar(pairs: list[tuple[str, str]], params: AlignParams, threshold: int) -> None:
    # pairs whose longer sequence has at least `threshold` bases take the intra-pair kernel, the
    # others the lanes, in one call: both against the scalar variant
    with intra_pair_from(threshold):
        assert_variants_agree(pairs, params)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs=related_pairs(longest=70), params=parameters(largest=300))
def test_intra_pair_kernel_equals_scalar_near_the_int16_bound(pairs: list[tuple[str, str]],
                                                              params: AlignParams) -> None:
    # |parameters| up to 300: some pairs in int16 cells, some in int32 (and AVX2's byte score table)
    with intra_pair_from(1):
        assert_variants_agree(pairs, params)


@pytest.mark.parametrize("mode", MODES)
def test_intra_pair_kernel_at_the_int16_bound(mode: str) -> None:
    # the extreme pairs of test_extreme_scores_at_the_int16_bound, one at a time
    pairs = []
    for length in (252, 253, 254, 255):
        pairs += [("A" * length, "A" * length), ("A" * length, "C" * length), ("A" * length, "C" * (length // 3))]
    with intra_pair_from(1):
        assert_variants_agree(pairs, AlignParams(mode=mode, match=64, mismatch=-64, gap_open=64, gap_extend=64))


@pytest.mark.parametrize("mode", MODES)
def test_long_pairs_across_the_default_threshold(mode: str) -> None:
    # no hook: pairs of 850-1,100 bases, across the thresholds (896 AVX-512, 1,024 AVX2), with
    # a CIGAR and score-only (local and semi-global begins traced back), z-drop for extension
    rng = np.random.default_rng(2026)

    def bases(n: int) -> str:
        return "".join("ACGT"[k] for k in rng.integers(0, 4, n))

    def mutated(text: str) -> str:
        out = list(text)
        for at in sorted(rng.integers(0, len(out), len(out) // 12), reverse=True):
            out[at:at + 1] = [["", "A", "TT", "G"][rng.integers(0, 4)]]
        return "".join(out)

    pairs = []
    for length in (850, 900, 1000, 1030, 1100):
        long = bases(length)
        pairs += [(long, mutated(long)), (mutated(long)[100:], long), (long[:300], long)]
    params = AlignParams(mode=mode, match=2, mismatch=-3, gap_open=5, gap_extend=2,
                         zdrop=40 if mode == "extension" else None)
    assert_variants_agree(pairs, params)
