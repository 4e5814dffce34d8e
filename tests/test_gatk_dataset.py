"""The GATK test's data set generator and checker (tests/gatk/): the data are self-consistent, and the
checks fail on a difference."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pysam = pytest.importorskip("pysam")

GATK_TESTS = Path(__file__).resolve().parent / "gatk"
sys.path.insert(0, str(GATK_TESTS))
import compare  # noqa: E402


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("gatk-data")
    subprocess.run([sys.executable, str(GATK_TESTS / "make_dataset.py"), str(out), "--length", "30000",
                    "--depth", "10", "--somatic", "--somatic-length", "20000", "--seed", "3"],
                   check=True, capture_output=True)
    return out


def test_files_and_indexes(dataset):
    for name in ("ref.fasta", "ref.fasta.fai", "ref.dict", "truth.vcf.gz", "truth.vcf.gz.tbi", "sample.bam",
                 "sample.bam.bai", "tumor.bam", "normal.bam", "somatic_truth.vcf.gz"):
        assert (dataset / name).stat().st_size > 0, name
    assert "@SQ\tSN:chrS\tLN:30000\tM5:" in (dataset / "ref.dict").read_text()
    with pysam.AlignmentFile(str(dataset / "tumor.bam")) as bam:
        assert bam.header["RG"][0]["SM"] == "tumor"


def test_truth_matches_the_reference_and_has_all_kinds(dataset):
    ref = pysam.FastaFile(str(dataset / "ref.fasta"))
    kinds, gts = set(), set()
    with pysam.VariantFile(str(dataset / "truth.vcf.gz")) as vcf:
        for r in vcf:
            assert ref.fetch("chrS", r.pos - 1, r.pos - 1 + len(r.ref)) == r.ref
            kinds.add("snv" if len(r.ref) == len(r.alts[0]) else ("ins" if len(r.alts[0]) > len(r.ref) else "del"))
            gts.add(tuple(sorted(r.samples[0]["GT"])))
    assert kinds == {"snv", "ins", "del"}
    assert gts == {(0, 1), (1, 1)}


def test_reads_align_where_the_bam_says(dataset):
    """Aligned bases agree with the reference up to sequencing errors and the variants."""
    ref = pysam.FastaFile(str(dataset / "ref.fasta")).fetch("chrS")
    mismatches = aligned = reads = 0
    with pysam.AlignmentFile(str(dataset / "sample.bam")) as bam:
        assert bam.header["HD"]["SO"] == "coordinate"
        last = -1
        for a in bam.fetch("chrS"):
            assert a.reference_start >= last and a.is_paired and a.mapping_quality in (0, 60)
            last = a.reference_start
            reads += 1
            seq = a.query_sequence
            for q, r in a.get_aligned_pairs(matches_only=True):
                aligned += 1
                mismatches += seq[q] != ref[r]
    assert reads > 1500
    assert 0.0005 < mismatches / aligned < 0.01


def _write_vcf(path: Path, pl: str) -> str:
    path.write_text("##fileformat=VCFv4.2\n##contig=<ID=chrS,length=100>\n"
                    '##FORMAT=<ID=GT,Number=1,Type=String,Description="x">\n'
                    '##FORMAT=<ID=PL,Number=G,Type=Integer,Description="x">\n'
                    "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts\n"
                    f"chrS\t5\t.\tA\tC\t50\t.\t.\tGT:PL\t0/1:{pl}\n")
    return str(path)


def test_checks_fail_on_differences(tmp_path):
    compare.RESULTS.clear()
    a = _write_vcf(tmp_path / "a.vcf", "50,0,60")
    compare.identical_vcfs("same", a, _write_vcf(tmp_path / "b.vcf", "50,0,60"))
    compare.identical_vcfs("PL differs", a, _write_vcf(tmp_path / "c.vcf", "51,0,60"))
    header = "# hap-bases read-bases read-qual read-ins-qual read-del-qual gcp expected-result\n"
    (tmp_path / "h1.txt").write_text(header + "ACGT ACG +++ +++ +++ +++ -1.234567e+02\n")
    (tmp_path / "h2.txt").write_text(header + "ACGT ACG +++ +++ +++ +++ -1.234568e+02\n")
    (tmp_path / "h3.txt").write_text(header + "ACGT ACG +++ +++ +++ +++ -1.234570e+02\n")
    compare.hmm_files("one printed unit", str(tmp_path / "h1.txt"), str(tmp_path / "h2.txt"), 1e-4)
    compare.hmm_files("three units", str(tmp_path / "h1.txt"), str(tmp_path / "h3.txt"), 1e-4)
    assert [ok for ok, _ in compare.RESULTS] == [True, False, True, False]
    compare.RESULTS.clear()


def test_smith_waterman_count_check_needs_server_work():
    # The Smith-Waterman shim check must fail when the server computed nothing (a vacuous pass) or a count
    # other than the shim's own.
    compare.RESULTS.clear()
    compare.sw_count_check("counted by both", 3197, 3197)
    compare.sw_count_check("no shim count logged", 12, None)
    compare.sw_count_check("nothing on the server", 0, None)
    compare.sw_count_check("nothing on the server, shim agrees", 0, 0)
    compare.sw_count_check("counts differ", 3197, 3000)
    assert [ok for ok, _ in compare.RESULTS] == [True, True, False, False, False]
    compare.RESULTS.clear()
