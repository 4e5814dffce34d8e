"""X-drop CPU variants against the plain-Python reference on random pairs, both reporting modes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warpdp.plugin.xdrop import XdropPairs, pack_xdrop_pairs, xdrop, xdrop_cpu_isas
from references.xdrop import extend_direction, extend_pair, full_matrix_scores

ISAS = xdrop_cpu_isas()
ALPHABETS = ["AC", "ACGT", "ACGTN", "acgtnACGTN"]


@st.composite
def pair_sets(draw, max_flank: int = 40):
    """1..4 pairs sharing k: identical, mutated, unrelated or poly-N flanks, seeds anywhere
    (including the very ends, so flanks may be empty)."""
    k = draw(st.integers(1, 5))
    alphabet = draw(st.sampled_from(ALPHABETS))
    seq = st.text(alphabet, max_size=max_flank)
    pairs = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["identical", "mutated", "unrelated", "n-rich"]))
        left_v, right_v = draw(seq), draw(seq)
        seed = draw(st.text(alphabet, min_size=k, max_size=k))
        if kind == "identical":
            left_h, right_h = left_v, right_v
        elif kind == "mutated":
            def mutate(s: str) -> str:
                out = list(s)
                for _ in range(draw(st.integers(0, 4))):
                    op = draw(st.sampled_from(["sub", "ins", "del"]))
                    at = draw(st.integers(0, len(out)))
                    if op == "ins" or not out:
                        out.insert(at, draw(st.sampled_from(alphabet)))
                    elif op == "del":
                        del out[min(at, len(out) - 1)]
                    else:
                        out[min(at, len(out) - 1)] = draw(st.sampled_from(alphabet))
                return "".join(out)
            left_h, right_h = mutate(left_v), mutate(right_v)
        elif kind == "unrelated":
            left_h, right_h = draw(seq), draw(seq)
        else:
            left_h, right_h = "N" * len(left_v), draw(st.text("N", max_size=max_flank))
        pairs.append((left_h + seed + right_h, len(left_h), left_v + seed + right_v, len(left_v)))
    scores = dict(match=draw(st.integers(1, 4)), mismatch=draw(st.integers(-5, -1)),
                  gap=draw(st.integers(-5, -1)), x=draw(st.integers(0, 25)))
    return k, pairs, scores


def reference(k: int, pairs: list, scores: dict, report: str) -> np.ndarray:
    return np.array([extend_pair(h.encode(), ph, v.encode(), pv, k=k, report=report, **scores)
                     for h, ph, v, pv in pairs], dtype=np.int64).reshape(-1, 5)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=pair_sets(), report=st.sampled_from(["longest", "best"]))
def test_every_cpu_variant_matches_the_reference(case, report) -> None:
    k, pairs, scores = case
    packed = pack_xdrop_pairs(pairs)
    expected = reference(k, pairs, scores, report)
    for isa in ISAS:
        got = xdrop(packed, k=k, report=report, backend="cpu", cpu_isa=isa, threads=1, **scores).as_array()
        np.testing.assert_array_equal(got, expected, err_msg=f"{isa} {report} {scores} {pairs}")


@settings(max_examples=200, deadline=None)
@given(case=pair_sets(), report=st.sampled_from(["longest", "best"]), factor=st.sampled_from([700, 2**20]))
def test_scaling_scores_and_x_scales_only_the_score(case, report, factor) -> None:
    # Every comparison X-drop makes is linear in (scores, X): scaling them all by a factor keeps
    # the coordinates and multiplies the score. The scaled values leave the int16 kernels' range,
    # so this drives the int32 kernels on the same random pairs.
    k, pairs, scores = case
    packed = pack_xdrop_pairs(pairs)
    scaled = {name: value * factor for name, value in scores.items()}
    expected = reference(k, pairs, scores, report)
    expected[:, 0] *= factor
    for isa in ISAS:
        got = xdrop(packed, k=k, report=report, backend="cpu", cpu_isa=isa, threads=1, **scaled).as_array()
        np.testing.assert_array_equal(got, expected, err_msg=f"{isa} x{factor}")


@settings(max_examples=100, deadline=None)
@given(case=pair_sets(max_flank=25), report=st.sampled_from(["longest", "best"]))
def test_scores_beyond_int32_are_exact(case, report) -> None:
    # SeqAn's int arithmetic would overflow here; every variant must fall back to exact int64.
    k, pairs, _ = case
    big = 2**31 - 1
    scores = dict(match=big, mismatch=-big, gap=-(big // 2), x=2**40)
    packed = pack_xdrop_pairs(pairs)
    expected = reference(k, pairs, scores, report)
    for isa in ISAS:
        got = xdrop(packed, k=k, report=report, backend="cpu", cpu_isa=isa, threads=1, **scores).as_array()
        np.testing.assert_array_equal(got, expected, err_msg=isa)


@pytest.mark.parametrize("match", [2**26, 2**27 - 1, 2**28])
def test_values_at_the_int32_kernel_limit(match: int) -> None:
    # match * shorter flank crosses 2^29 here: some pairs take the int32 kernels, some the int64 one.
    rng = np.random.default_rng(match)
    pairs = []
    for _ in range(30):
        v = "".join(rng.choice(list("ACGT"), int(rng.integers(2, 9))))
        h = "".join(c if rng.random() > 0.2 else "A" for c in v)
        pairs.append((h, int(rng.integers(0, len(h))), v, int(rng.integers(0, len(v)))))
    pairs = [(h, min(ph, len(h) - 1), v, min(pv, len(v) - 1)) for h, ph, v, pv in pairs]
    scores = dict(match=match, mismatch=-(2**29 - 1), gap=-(2**28), x=2**29 - 1)
    packed = pack_xdrop_pairs(pairs)
    for report in ("longest", "best"):
        expected = reference(1, pairs, scores, report)
        for isa in ISAS:
            got = xdrop(packed, k=1, report=report, backend="cpu", cpu_isa=isa, **scores).as_array()
            np.testing.assert_array_equal(got, expected, err_msg=f"{isa} {report}")


@settings(max_examples=60, deadline=None)
@given(q=st.text("ACGT", max_size=14), t=st.text("ACGT", max_size=14), match=st.integers(1, 3),
       mismatch=st.integers(-4, -1), gap=st.integers(-4, -1))
def test_reference_without_drops_is_plain_alignment(q, t, match, mismatch, gap) -> None:
    # With an X no cell can fall below, nothing is dropped: "longest" reaches the corner with the
    # global alignment score, "best" is the best prefix alignment (first in anti-diagonal order).
    s = full_matrix_scores(q.encode(), t.encode(), match=match, mismatch=mismatch, gap=gap)
    x = 10**6
    scores = dict(match=match, mismatch=mismatch, gap=gap, x=x)
    if q and t:
        assert extend_direction(q.encode(), t.encode(), **scores) == (s[len(q), len(t)], len(q), len(t))
    cells = [(d, c) for d in range(len(q) + len(t) + 1) for c in range(len(q) + 1) if 0 <= d - c <= len(t)]
    best = max(s[c, d - c] for d, c in cells)
    d, c = next((d, c) for d, c in cells if s[c, d - c] == best)
    expected_best = (best, c, d - c) if q and t else (0, 0, 0)
    assert extend_direction(q.encode(), t.encode(), report="best", **scores) == expected_best
    # ... and the CPU kernels agree with that too.
    packed = pack_xdrop_pairs([("G" + t, 0, "G" + q, 0)])
    got = xdrop(packed, k=1, report="best", backend="cpu", **scores).as_array()[0]
    assert tuple(got) == (match + expected_best[0], 0, 1 + expected_best[2], 0, 1 + expected_best[1])


def test_x_zero_stops_at_the_first_drop() -> None:
    # X = 0: the matching base left of the seed is taken, the mismatch right of it drops everything.
    # The seed's own bases are not compared (CC against CG scores k * match all the same).
    packed = pack_xdrop_pairs([("AAAC", 1, "AAAG", 1), ("ACCA", 1, "ACGT", 1)])
    for isa in ISAS:
        got = xdrop(packed, k=2, x=0, backend="cpu", cpu_isa=isa).as_array()
        np.testing.assert_array_equal(got, [[3, 0, 3, 0, 3], [3, 0, 3, 0, 3]])


def test_seqan_finds_nothing_defined() -> None:
    # With mismatch < gap, SeqAn's longest-extension search can find no defined cell where it looks
    # (it then returns its int32 "undefined"): that side of the seed stays as it is, scored 0.
    packed = pack_xdrop_pairs([("GCCCA", 0, "GCAAA", 0)])
    for isa in ISAS:
        got = xdrop(packed, k=1, x=10, match=3, mismatch=-6, gap=-5, backend="cpu", cpu_isa=isa).as_array()[0]
        assert tuple(got) == (3, 0, 1, 0, 1)
    assert extend_pair(b"GCCCA", 0, b"GCAAA", 0, k=1, x=10, match=3, mismatch=-6, gap=-5) == (3, 0, 1, 0, 1)


def test_n_matches_n_and_case_is_ignored() -> None:
    packed = pack_xdrop_pairs([("NNNNacgtNNNN", 4, "NNNNACGTNNNN", 4), ("ACGTAAAA", 0, "ACGTNNNN", 0)])
    got = xdrop(packed, k=4, x=3, backend="cpu").as_array()
    assert tuple(got[0]) == (12, 0, 12, 0, 12)
    # N against A mismatches; "longest" follows SeqAn into the mismatches as far as X allows
    # (three of them, score 4 - 3), "best" stops at the seed.
    assert tuple(got[1]) == (1, 0, 7, 0, 7)
    assert tuple(xdrop(packed, k=4, x=3, report="best", backend="cpu").as_array()[1]) == (4, 0, 4, 0, 4)


def test_megabase_sequences_and_threads_agree() -> None:
    rng = np.random.default_rng(7)
    length = 1_000_000
    v = rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8), length)
    h = v.copy()
    flips = rng.random(length) < 0.05
    h[flips] = np.where(h[flips] == ord("A"), ord("C"), ord("A"))
    seed_at = length // 2
    h[seed_at:seed_at + 17] = v[seed_at:seed_at + 17]
    pairs = XdropPairs.from_arrays(h_bases=np.concatenate([v, h]), h_offsets=[0, length, 2 * length],
                                   v_bases=np.concatenate([v, v]), v_offsets=[0, length, 2 * length],
                                   h_pos=[0, seed_at], v_pos=[0, seed_at])
    results = {isa: xdrop(pairs, k=17, x=40, backend="cpu", cpu_isa=isa, threads=2).as_array() for isa in ISAS}
    identical = results[ISAS[0]][0]
    assert tuple(identical) == (length, 0, length, 0, length)
    for isa in ISAS[1:]:
        np.testing.assert_array_equal(results[isa], results[ISAS[0]], err_msg=isa)
    # 5% substitutions at X = 40: the extension runs far in both directions.
    score, begin_h, end_h, begin_v, end_v = results[ISAS[0]][1]
    assert begin_h < seed_at - 100_000 and end_h > seed_at + 100_000 and score > 100_000
    assert begin_h == begin_v and end_h == end_v  # substitutions only: the path stays on the diagonal
