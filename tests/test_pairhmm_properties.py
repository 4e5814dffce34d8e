"""Property tests: every SIMD variant equals the scalar one, and all track the float64 reference."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import warpdp
from references.pairhmm import forward_log10

ISAS = warpdp.available_cpu_isas()
BASES = b"ACGTN"
# Below this the scaled double result nears the subnormal range, where the kernels flush to
# zero (as GKL does) and the reference does not; both are then astronomically unlikely.
COMPARABLE_LOG10 = -280.0
# Float path vs float64: the project's float tolerance (as against GKL's own outputs); seen
# here: at most 2.4e-6 over 300 random batches. Double mode: seen bit-identical.
FLOAT_TOLERANCE = 1e-4
DOUBLE_TOLERANCE = 1e-9


@st.composite
def read_for(draw, hap: bytes, min_len: int, max_len: int) -> warpdp.PairHmmRead:
    """A read copied from part of the haplotype with errors, or unrelated, with any qualities."""
    n = draw(st.integers(min_len, max_len))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()) and len(hap) >= 1:
        start = int(rng.integers(0, len(hap)))
        core = np.frombuffer((hap * (n // len(hap) + 2))[start:start + n], dtype=np.uint8).copy()
        flips = rng.random(n) < draw(st.sampled_from([0.0, 0.02, 0.1]))
        core[flips] = rng.choice(np.frombuffer(BASES, dtype=np.uint8), int(flips.sum()))
        bases = core.tobytes()
    else:
        bases = rng.choice(np.frombuffer(BASES, dtype=np.uint8), n).tobytes()
    # Qualities over the whole byte range: 0, GATK's usual values, and 127+ (masked & 127).
    qual_kind = draw(st.sampled_from(["any", "typical", "zero", "high"]))
    if qual_kind == "any":
        quals = [rng.integers(0, 256, n, dtype=np.uint8) for _ in range(4)]
    elif qual_kind == "typical":
        quals = [rng.integers(6, 41, n, dtype=np.uint8), rng.integers(40, 46, n, dtype=np.uint8),
                 rng.integers(40, 46, n, dtype=np.uint8), np.full(n, 10, dtype=np.uint8)]
    elif qual_kind == "zero":
        quals = [np.zeros(n, dtype=np.uint8) for _ in range(4)]
    else:
        quals = [rng.integers(120, 256, n, dtype=np.uint8) for _ in range(4)]
    return warpdp.PairHmmRead(bases, *quals)


@st.composite
def batch(draw, min_read: int, max_read: int, min_hap: int, max_hap: int, max_reads: int, max_haps: int):
    haps = [draw(st.binary(min_size=min_hap, max_size=max_hap).map(
        lambda b: bytes(BASES[x % 5] for x in b))) for _ in range(draw(st.integers(1, max_haps)))]
    reads = [draw(read_for(haps[0], min_read, max_read)) for _ in range(draw(st.integers(1, max_reads)))]
    return reads, haps


def reference_values(reads, haps) -> np.ndarray:
    return np.array([forward_log10(r.bases, h, r.quals, r.ins_quals, r.del_quals, r.gcp)
                     for r in reads for h in haps])


def check_batch(reads, haps) -> None:
    packed = warpdp.pack_batches([(reads, haps)])
    expected = reference_values(reads, haps)
    comparable = expected > COMPARABLE_LOG10
    for double, tolerance in ((False, FLOAT_TOLERANCE), (True, DOUBLE_TOLERANCE)):
        scalar = warpdp.pairhmm(packed, backend="cpu", double=double, cpu_isa="scalar")
        for isa in ISAS:
            got = warpdp.pairhmm(packed, backend="cpu", double=double, cpu_isa=isa)
            np.testing.assert_array_equal(got, scalar, err_msg=f"{isa} differs from scalar")
        np.testing.assert_allclose(scalar[comparable], expected[comparable], rtol=0, atol=tolerance)
        # Pairs beyond double range agree that they are (nearly) impossible.
        assert (scalar[~comparable] < COMPARABLE_LOG10 + 1).all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch(min_read=1, max_read=80, min_hap=1, max_hap=120, max_reads=4, max_haps=4))
def test_short_batches(data) -> None:
    check_batch(*data)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch(min_read=300, max_read=1000, min_hap=300, max_hap=1100, max_reads=2, max_haps=1))
def test_long_reads(data) -> None:
    check_batch(*data)


def test_pairs_needing_the_double_path() -> None:
    # 150 confident mismatches: a log10 likelihood far below the float path's floor.
    rng = np.random.default_rng(7)
    hap = rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8), 200).tobytes()
    read = bytes({ord("A"): ord("C"), ord("C"): ord("G"), ord("G"): ord("T"), ord("T"): ord("A")}[b]
                 for b in hap[20:170])
    quals = (bytes([30]) * 150, bytes([45]) * 150, bytes([45]) * 150, bytes([10]) * 150)
    reads = [warpdp.PairHmmRead(read, *quals), warpdp.PairHmmRead(hap[5:155], *quals)]
    packed = warpdp.pack_batches([(reads, [hap])])
    expected = reference_values(reads, [hap])
    assert expected[0] < -64.2 and expected[1] > -64  # one pair per path
    float_first = warpdp.pairhmm(packed, backend="cpu")
    double_only = warpdp.pairhmm(packed, backend="cpu", double=True)
    np.testing.assert_allclose(float_first, expected, rtol=0, atol=1e-6)
    # The low pair was recomputed in double: the same value as double-only mode, and finite.
    assert float_first[0] == double_only[0] and np.isfinite(float_first[0])


def test_thread_count_does_not_change_results() -> None:
    rng = np.random.default_rng(3)
    haps = [rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8), int(n)).tobytes() for n in rng.integers(50, 300, 6)]
    reads = [warpdp.PairHmmRead(h[:100], rng.integers(6, 41, min(100, len(h)), dtype=np.uint8)) for h in haps]
    packed = warpdp.pack_batches([(reads, haps)] * 3)
    one = warpdp.pairhmm(packed, backend="cpu", threads=1)
    two = warpdp.pairhmm(packed, backend="cpu", threads=2)
    np.testing.assert_array_equal(one, two)
