"""Pair-HMM input straight from aligned reads (BAM/CRAM via pysam) and haplotypes (FASTA).

Reads overlapping a region form one batch, scored against every haplotype of the FASTA.
Insertion/deletion qualities come from GATK's BI/BD tags (phred+33 text) when a read has
them, GATK's defaults (45) otherwise; the gap continuation penalty is GATK's constant 10.
"""
from __future__ import annotations

import logging
import os

import numpy as np

from .core.packed import offsets_of
from .core.text import GZIP_MAGIC, require_pysam
from .pairhmm import DEFAULT_DELETION_QUAL, DEFAULT_GCP, DEFAULT_INSERTION_QUAL, PairHmmBatches

logger = logging.getLogger("warpdp")

# HaplotypeCaller's default mapping-quality read filter.
DEFAULT_MIN_MAPPING_QUALITY = 20


def _tag_quals(read, tag: str, default: int, length: int) -> bytes:
    if not read.has_tag(tag):
        return bytes([default]) * length
    text = read.get_tag(tag)
    raw = text.encode("ascii") if isinstance(text, str) else bytes(text)
    if len(raw) != length:
        raise ValueError(f"read {read.query_name}: tag {tag} has {len(raw)} values but the read has {length} bases")
    if raw and min(raw) < 33:
        raise ValueError(f"read {read.query_name}: tag {tag} has a character below '!' (phred+33 expected)")
    return bytes(c - 33 for c in raw)


def read_haplotypes_fasta(path: str | os.PathLike) -> tuple[list[str], list[bytes]]:
    """Names and upper-cased sequences of every record of a FASTA (plain or gzipped)."""
    pysam = require_pysam("reading FASTA")
    names, sequences = [], []
    with pysam.FastxFile(os.fspath(path)) as fasta:
        for record in fasta:
            if not record.sequence:
                raise ValueError(f"{path}: haplotype {record.name!r} is empty")
            names.append(record.name)
            sequences.append(record.sequence.upper().encode("ascii"))
    if not sequences:
        raise ValueError(f"{path}: no haplotypes found (expected FASTA records)")
    return names, sequences


def alignment_file_kind(path: str | os.PathLike) -> str:
    """"BAM" or "CRAM" from the file's first bytes; ValueError naming the file for anything else
    (a FASTA given as reads, a SAM text file)."""
    with open(path, "rb") as probe:
        head = probe.read(1 << 16)
    if head.startswith(b"CRAM"):
        return "CRAM"
    if head.startswith(GZIP_MAGIC):  # BGZF: a gzip member; a BAM's data starts with "BAM\1"
        import zlib

        try:
            data = zlib.decompressobj(31).decompress(head, 4)
        except zlib.error:
            data = b""
        if data.startswith(b"BAM\x01"):
            return "BAM"
    raise ValueError(f"{path}: not a BAM or CRAM file (aligned reads are needed here; "
                     "haplotypes go in a FASTA of their own)")


def read_bam_region(
    reads_path: str | os.PathLike,
    region: str,
    haplotypes_path: str | os.PathLike,
    *,
    reference: str | os.PathLike | None = None,
    min_mapping_quality: int = DEFAULT_MIN_MAPPING_QUALITY,
) -> tuple[PairHmmBatches, list[str], list[str]]:
    """One batch: the reads of ``region`` (e.g. ``chr20:10000-10500``) against the FASTA's haplotypes.

    Unmapped, secondary, supplementary, duplicate and QC-failed reads are skipped, as
    are reads below ``min_mapping_quality`` and reads without base qualities. Whole reads
    are scored (no clipping to the region). Returns the batch, read names and haplotype names.
    """
    pysam = require_pysam("reading BAM/CRAM")
    hap_names, haplotypes = read_haplotypes_fasta(haplotypes_path)
    columns: dict[str, list[bytes]] = {"bases": [], "quals": [], "ins": [], "del": []}
    read_names, skipped_no_quals = [], 0
    kind = alignment_file_kind(reads_path)
    if kind == "CRAM" and not reference:
        raise ValueError(f"{reads_path}: CRAM needs --reference (the FASTA the file was compressed against)")
    try:
        alignments = pysam.AlignmentFile(os.fspath(reads_path), "rc" if kind == "CRAM" else "rb",
                                         reference_filename=os.fspath(reference) if reference else None)
    except (ValueError, OSError) as exc:
        raise ValueError(f"{reads_path}: cannot read this {kind} file ({exc})") from None
    with alignments:
        try:
            fetched = alignments.fetch(region=region)
        except ValueError as exc:
            raise ValueError(f"{reads_path}: cannot fetch region {region!r} ({exc}); "
                             "the file needs an index (samtools index) and the contig must exist") from None
        for read in fetched:
            if (read.is_unmapped or read.is_secondary or read.is_supplementary or read.is_duplicate
                    or read.is_qcfail or read.mapping_quality < min_mapping_quality):
                continue
            bases = read.query_sequence
            quals = read.query_qualities
            if not bases:
                continue
            if quals is None:
                skipped_no_quals += 1
                continue
            n = len(bases)
            columns["bases"].append(bases.upper().encode("ascii"))
            columns["quals"].append(bytes(quals))
            columns["ins"].append(_tag_quals(read, "BI", DEFAULT_INSERTION_QUAL, n))
            columns["del"].append(_tag_quals(read, "BD", DEFAULT_DELETION_QUAL, n))
            read_names.append(read.query_name)
    if skipped_no_quals:
        logger.warning("skipped %d read(s) without base qualities", skipped_no_quals)
    if not read_names:
        raise ValueError(f"{reads_path}: no usable reads in region {region!r}")
    lengths = [len(b) for b in columns["bases"]]
    n_bases = sum(lengths)

    def packed(parts: list[bytes]) -> np.ndarray:
        return np.frombuffer(b"".join(parts), dtype=np.uint8)

    batches = PairHmmBatches.from_arrays(
        read_bases=packed(columns["bases"]), read_quals=packed(columns["quals"]),
        read_ins=packed(columns["ins"]), read_del=packed(columns["del"]),
        read_gcp=np.full(n_bases, DEFAULT_GCP, dtype=np.uint8),
        read_offsets=offsets_of(lengths),
        hap_bases=packed(haplotypes),
        hap_offsets=offsets_of([len(h) for h in haplotypes]),
        batch_reads=np.array([0, len(read_names)]), batch_haps=np.array([0, len(haplotypes)]),
    )
    return batches, read_names, hap_names
