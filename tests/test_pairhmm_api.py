"""The Python API: packing, the GKL facade, the text format, and clear errors on bad input."""
from __future__ import annotations

import io

import numpy as np
import pytest

import warpdp
from references.pairhmm import forward_log10

HAP = "ACGTACGTTAGCATGCAGT"
READ = "CGTACGTTAGC"


def good_arrays() -> dict:
    read = np.frombuffer(READ.encode(), dtype=np.uint8)
    return dict(
        read_bases=read, read_quals=np.full(len(read), 30, np.uint8), read_ins=np.full(len(read), 45, np.uint8),
        read_del=np.full(len(read), 45, np.uint8), read_gcp=np.full(len(read), 10, np.uint8),
        read_offsets=np.array([0, len(read)]), hap_bases=np.frombuffer(HAP.encode(), dtype=np.uint8),
        hap_offsets=np.array([0, len(HAP)]), batch_reads=np.array([0, 1]), batch_haps=np.array([0, 1]),
    )


def test_score_reads_matches_reference_and_defaults() -> None:
    reads = [warpdp.PairHmmRead(READ, "I" * len(READ)), warpdp.PairHmmRead("ACGNT", bytes([20] * 5))]
    got = warpdp.score_reads(reads, [HAP, HAP[::-1].encode()], backend="cpu")
    assert got.shape == (2, 2)
    # str qualities are phred+33 ('I' = 40); missing ins/del/gcp take GATK's 45/45/10.
    expected = forward_log10(READ.encode(), HAP.encode(), bytes([40] * len(READ)),
                             bytes([45] * len(READ)), bytes([45] * len(READ)), bytes([10] * len(READ)))
    assert got[0, 0] == pytest.approx(expected, abs=1e-4)
    assert got[1, 1] == pytest.approx(forward_log10(b"ACGNT", HAP[::-1].encode(), bytes([20] * 5),
                                                    bytes([45] * 5), bytes([45] * 5), bytes([10] * 5)), abs=1e-4)


def test_packed_arrays_and_many_batches() -> None:
    one = warpdp.PairHmmBatches.from_arrays(**good_arrays())
    single = warpdp.pairhmm(one, backend="cpu")
    three = warpdp.pack_batches([([warpdp.PairHmmRead(READ, bytes([30] * len(READ)))], [HAP])] * 3)
    assert three.n_batches == 3 and three.n_pairs == 3 and three.n_cells == 3 * len(READ) * len(HAP)
    np.testing.assert_array_equal(warpdp.pairhmm(three, backend="cpu"), np.repeat(single, 3))


def test_caller_provided_output_is_filled() -> None:
    batches = warpdp.PairHmmBatches.from_arrays(**good_arrays())
    out = np.zeros(1)
    result = warpdp.pairhmm(batches, backend="cpu", out=out)
    assert result is out and out[0] < 0


def test_gkl_facade_fills_read_major() -> None:
    reads = [warpdp.ReadDataHolder(READ.encode(), bytes([30] * 11), bytes([45] * 11), bytes([45] * 11), bytes([10] * 11)),
             warpdp.ReadDataHolder(b"TTAGCATG", bytes([25] * 8), bytes([40] * 8), bytes([42] * 8), bytes([10] * 8))]
    haps = [warpdp.HaplotypeDataHolder(HAP.encode()), warpdp.HaplotypeDataHolder(b"GGGGCCCCAAAATTTT")]
    likelihoods = np.full(4, np.nan)
    warpdp.GklPairHmm(backend="cpu").compute_likelihoods(reads, haps, likelihoods)
    for r, read in enumerate(reads):
        for h, hap in enumerate(haps):
            expected = forward_log10(read.readBases, hap.haplotypeBases, read.readQuals, read.insertionGOP,
                                     read.deletionGOP, read.overallGCP)
            assert likelihoods[r * 2 + h] == pytest.approx(expected, abs=1e-4)
    double = np.zeros(4)
    warpdp.GklPairHmm(use_double_precision=True, backend="cpu").compute_likelihoods(reads, haps, double)
    np.testing.assert_allclose(double, likelihoods, atol=1e-4)


def test_quality_masking_and_any_base_as_n() -> None:
    # GKL masks every quality with & 127; non-ACGT bytes behave as N (match everything).
    low = warpdp.score_reads([warpdp.PairHmmRead(READ, bytes([30] * 11), bytes([45] * 11), bytes([45] * 11),
                                                 bytes([10] * 11))], [HAP], backend="cpu")
    high = warpdp.score_reads([warpdp.PairHmmRead(READ, bytes([158] * 11), bytes([173] * 11), bytes([173] * 11),
                                                  bytes([138] * 11))], [HAP], backend="cpu")
    assert low[0, 0] == high[0, 0]
    as_n = warpdp.score_reads([warpdp.PairHmmRead("NNNN", "IIII")], ["ACGT"], backend="cpu")
    as_x = warpdp.score_reads([warpdp.PairHmmRead("XRYK", "IIII")], ["ACGT"], backend="cpu")
    assert as_n[0, 0] == as_x[0, 0]


def test_text_format_round_trip(tmp_path) -> None:
    reads = [warpdp.PairHmmRead(READ, "5" * 11, "I" * 11, "H" * 11, "+" * 11), warpdp.PairHmmRead("ACGT", "####")]
    batches = warpdp.pack_batches([(reads, [HAP, "ACGTT"]), (reads[:1], [HAP])])
    path = tmp_path / "x.in"
    warpdp.write_pairhmm_text(batches, path)
    again = warpdp.read_pairhmm_text(path, min_base_qual=0)
    for field in ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp", "read_offsets",
                  "hap_bases", "hap_offsets", "batch_reads", "batch_haps"):
        np.testing.assert_array_equal(getattr(again, field), getattr(batches, field), err_msg=field)
    raised = warpdp.read_pairhmm_text(path)  # default: base quals raised to 6, as the format's harnesses do
    assert raised.read_quals.min() == 6 and again.read_quals.min() == 2


def test_records_layout() -> None:
    batches = warpdp.pack_batches([([warpdp.PairHmmRead("ACG", "III")] * 2, ["ACGT", "TTT", "GG"]),
                                   ([warpdp.PairHmmRead("A", "I")], ["A"])])
    values = np.arange(7, dtype=np.float64) - 10
    text = io.StringIO()
    warpdp.write_likelihoods(values, text, layout="records", batches=batches)
    lines = text.getvalue().splitlines()
    assert lines[0] == "2 3" and lines[3] == "1 1"
    assert [float(v) for v in lines[2].split()] == [-7.0, -6.0, -5.0]
    assert len(lines) == 5


# ---- bad input ---------------------------------------------------------------------------

def test_quality_length_mismatch_is_named() -> None:
    with pytest.raises(ValueError, match="batch 0 read 0 quals has 3 values but the read has 4 bases"):
        warpdp.pack_batches([([warpdp.PairHmmRead("ACGT", "III")], ["ACGT"])])
    with pytest.raises(ValueError, match="del_quals has 5 values"):
        warpdp.pack_batches([([warpdp.PairHmmRead("ACGT", "IIII", del_quals=bytes(5))], ["ACGT"])])
    arrays = good_arrays()
    arrays["read_gcp"] = arrays["read_gcp"][:-1]
    with pytest.raises(ValueError, match="read_gcp has 10 values but read_bases has 11"):
        warpdp.PairHmmBatches.from_arrays(**arrays)


def test_empty_reads_and_haplotypes_are_rejected() -> None:
    with pytest.raises(ValueError, match="batch 0 read 0 is empty"):
        warpdp.pack_batches([([warpdp.PairHmmRead("", "")], ["ACGT"])])
    with pytest.raises(ValueError, match="batch 0 haplotype 1 is empty"):
        warpdp.pack_batches([([warpdp.PairHmmRead("A", "I")], ["ACGT", ""])])
    arrays = good_arrays()
    arrays["hap_offsets"] = np.array([0, 0, len(HAP)])
    arrays["batch_haps"] = np.array([0, 2])
    with pytest.raises(ValueError, match="haplotype 0 is empty"):
        warpdp.PairHmmBatches.from_arrays(**arrays)


@pytest.mark.parametrize("field,value,error,message", [
    ("read_bases", np.zeros(11, dtype=np.int32), TypeError, "read_bases must have dtype uint8"),
    ("read_quals", [30] * 11, TypeError, "read_quals must be a numpy uint8 array or bytes"),
    ("read_offsets", np.array([0.0, 11.0]), TypeError, "read_offsets must hold integers"),
    ("read_offsets", np.array([1, 11]), ValueError, "read_offsets must start at 0"),
    ("read_offsets", np.array([0, 12]), ValueError, "read_offsets must end at 11"),
    ("hap_offsets", np.array([0, 12, 5, 19]), ValueError, "hap_offsets must not decrease"),
    ("batch_reads", np.array([0, 2]), ValueError, "batch_reads must end at 1"),
    ("batch_haps", np.array([0, 0, 1]), ValueError, "batch_reads describes 1 batches but batch_haps describes 2"),
])
def test_bad_packed_arrays(field, value, error, message) -> None:
    arrays = good_arrays()
    arrays[field] = value
    with pytest.raises(error, match=message):
        warpdp.PairHmmBatches.from_arrays(**arrays)


def test_bad_output_arrays_and_options() -> None:
    batches = warpdp.PairHmmBatches.from_arrays(**good_arrays())
    with pytest.raises(ValueError, match="the output array has 2 entries but there are 1 pairs"):
        warpdp.pairhmm(batches, backend="cpu", out=np.zeros(2))
    with pytest.raises(TypeError, match="dtype float64, not float32"):
        warpdp.pairhmm(batches, backend="cpu", out=np.zeros(1, dtype=np.float32))
    with pytest.raises(ValueError, match="backend must be one of auto, cpu, gpu"):
        warpdp.pairhmm(batches, backend="tpu")
    with pytest.raises(ValueError, match="threads must be at least 1"):
        warpdp.pairhmm(batches, backend="cpu", threads=0)
    with pytest.raises(TypeError, match="threads must be an int"):
        warpdp.pairhmm(batches, backend="cpu", threads="2")
    with pytest.raises(ValueError, match=r"cpu_isa \(or WARPDP_CPU_ISA\) must be one of"):
        warpdp.pairhmm(batches, backend="cpu", cpu_isa="neon")
    with pytest.raises(TypeError, match="batches must be PairHmmBatches"):
        warpdp.pairhmm(good_arrays(), backend="cpu")


def test_gpu_backend_without_gpu_is_a_clear_error() -> None:
    usable, reason = warpdp.gpu_status("pairhmm")
    if usable:
        pytest.skip("a GPU is usable here; this test is about machines without one")
    batches = warpdp.PairHmmBatches.from_arrays(**good_arrays())
    with pytest.raises(warpdp.BackendUnavailableError, match="backend='gpu' was requested"):
        warpdp.pairhmm(batches, backend="gpu")
    # auto falls back to the CPU and still scores.
    assert np.isfinite(warpdp.pairhmm(batches, backend="auto")[0])


def test_gkl_facade_checks_like_gkl() -> None:
    hmm = warpdp.GklPairHmm(backend="cpu")
    read = warpdp.ReadDataHolder(b"ACGT", bytes([30] * 4), bytes([45] * 4), bytes([45] * 4), bytes([10] * 4))
    hap = warpdp.HaplotypeDataHolder(b"ACGTT")
    with pytest.raises(TypeError, match="must not be None"):
        hmm.compute_likelihoods(None, [hap], np.zeros(1))
    with pytest.raises(ValueError, match="has 2 entries but there are 1 pairs"):
        hmm.compute_likelihoods([read], [hap], np.zeros(2))
    bad = warpdp.ReadDataHolder(b"ACGT", bytes([30] * 3), bytes([45] * 4), bytes([45] * 4), bytes([10] * 4))
    with pytest.raises(ValueError, match=r"read_data\[0\].readQuals has 3 values but readBases has 4"):
        hmm.compute_likelihoods([bad], [hap], np.zeros(1))
    with pytest.raises(ValueError, match=r"haplotype_data\[0\].haplotypeBases is empty"):
        hmm.compute_likelihoods([read], [warpdp.HaplotypeDataHolder(b"")], np.zeros(1))
    with pytest.raises(TypeError, match=r"read_data\[0\] has no attribute 'readBases'"):
        hmm.compute_likelihoods([object()], [hap], np.zeros(1))


@pytest.mark.parametrize("text,message", [
    ("1 x\nACGT IIII IIII IIII ++++\nACGT\n", "line 1: expected a record header 'R H'"),
    ("1 1\nACGT IIII IIII IIII\nACGT\n", "line 2: a read line needs 5 fields"),
    ("1 1\nACGT III IIII IIII ++++\nACGT\n", "line 2: quals has 3 characters but the read has 4 bases"),
    ("2 1\nACGT IIII IIII IIII ++++\n", "line 2: the input ended inside a record: expected 2 read lines"),
    ("1 1\nACGT IIII IIII IIII ++++\nACGT TT\n", "line 3: a haplotype line needs 1 field"),
    ("1 0\nACGT IIII IIII IIII ++++\n", "line 1: a record needs at least one read and one haplotype"),
])
def test_malformed_text_names_the_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        warpdp.read_pairhmm_text(io.StringIO(text))


def test_params_object_and_keyword_give_the_same_likelihoods() -> None:
    batches = warpdp.PairHmmBatches.from_arrays(**good_arrays())
    by_keyword = warpdp.pairhmm(batches, double=True, backend="cpu")
    by_params = warpdp.pairhmm(batches, warpdp.PairHmmParams(double=True), backend="cpu")
    assert isinstance(by_params, warpdp.PairHmmResults) and by_params.dtype == np.float64
    np.testing.assert_array_equal(by_params, by_keyword)
    with pytest.raises(TypeError, match="double must be a bool"):
        warpdp.PairHmmParams(double="yes")
    with pytest.raises(TypeError, match="either params or keyword parameters"):
        warpdp.pairhmm(batches, warpdp.PairHmmParams(), double=True, backend="cpu")
