"""The CPU backend against outputs of the real GKL (the native library GATK calls)."""
from __future__ import annotations

import numpy as np
import pytest

import warpdp
from helpers.data import shared_file
from references.pairhmm import forward_log10

ISAS = warpdp.available_cpu_isas()
# GKL computes the pair in double when its scaled float result is below 1e-28, i.e. when
# log10 likelihood < log10(1e-28) - log10(2^120).
DOUBLE_PATH_LOG10 = -28 - 120 * np.log10(2.0)


def load_gkl_testdata() -> tuple[list[warpdp.PairHmmRead], list[str], np.ndarray]:
    """GKL's unit-test rows, prepared as GKL's test does: quals - 33, read quals raised to 6."""
    reads, haps, expected = [], [], []
    for line in shared_file("pairhmm", "gkl-pairhmm-testdata.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        hap, bases, quals, ins, dels, gcp, value = line.split()

        def phred(text: str) -> np.ndarray:
            return np.frombuffer(text.encode(), dtype=np.uint8) - 33

        reads.append(warpdp.PairHmmRead(bases, np.maximum(phred(quals), 6), phred(ins), phred(dels), phred(gcp)))
        haps.append(hap)
        expected.append(float(value))
    return reads, haps, np.array(expected)


@pytest.mark.parametrize("isa", ISAS)
def test_gkl_unit_test_data(isa: str) -> None:
    reads, haps, expected = load_gkl_testdata()
    assert len(expected) > 50
    # Each row is its own (read, haplotype) batch.
    batches = warpdp.pack_batches([([read], [hap]) for read, hap in zip(reads, haps)])
    got = warpdp.pairhmm(batches, backend="cpu", cpu_isa=isa)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", ["tiny", "10s"])
def test_benchmark_inputs_match_gkl(name: str, isa: str) -> None:
    batches = warpdp.read_pairhmm_text(shared_file("pairhmm", f"{name}.in"))
    expected = np.loadtxt(shared_file("pairhmm", f"{name}.gkl.out"))
    got = warpdp.pairhmm(batches, backend="cpu", cpu_isa=isa)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)
    needs_double = expected < DOUBLE_PATH_LOG10
    if needs_double.any():
        np.testing.assert_allclose(got[needs_double], expected[needs_double], rtol=0, atol=1e-6)


def test_double_mode_matches_gkl_10s() -> None:
    batches = warpdp.read_pairhmm_text(shared_file("pairhmm", "10s.in"))
    expected = np.loadtxt(shared_file("pairhmm", "10s.gkl.out"))
    got = warpdp.pairhmm(batches, backend="cpu", double=True)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)


def test_10s_in_one_call_equals_batch_by_batch() -> None:
    batches = warpdp.read_pairhmm_text(shared_file("pairhmm", "10s.in"))
    whole = warpdp.pairhmm(batches, backend="cpu")
    parts = np.concatenate([warpdp.pairhmm(batches.select(b, b + 1), backend="cpu")
                            for b in range(batches.n_batches)])
    np.testing.assert_array_equal(whole, parts)


def test_reference_implementation_agrees_with_gkl_on_10s_sample() -> None:
    # Guards the test reference itself: it must reproduce GKL before it judges the kernels.
    batches = warpdp.read_pairhmm_text(shared_file("pairhmm", "10s.in"))
    expected = np.loadtxt(shared_file("pairhmm", "10s.gkl.out"))
    sample = batches.select(0, 2)
    ro, ho = sample.read_offsets, sample.hap_offsets
    k = 0
    for b in range(sample.n_batches):
        for r in range(sample.batch_reads[b], sample.batch_reads[b + 1]):
            s, e = ro[r], ro[r + 1]
            for h in range(sample.batch_haps[b], sample.batch_haps[b + 1]):
                value = forward_log10(sample.read_bases[s:e], sample.hap_bases[ho[h]:ho[h + 1]],
                                      sample.read_quals[s:e], sample.read_ins[s:e], sample.read_del[s:e],
                                      sample.read_gcp[s:e])
                assert value == pytest.approx(expected[k], abs=1e-4)
                k += 1
    assert k == sample.n_pairs
