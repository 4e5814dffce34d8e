"""The PairHMM / gpuPairHMM text format, read and written.

One record per batch: a line ``R H``; R read lines ``bases quals insGOP delGOP GCP``
(qualities as phred+33 text); then H haplotype lines. Every read of a record is scored
against every haplotype of that record.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .core.packed import check_int, offsets_of
from .core.text import NumberedLines, PathOrFile, open_text, whole_input
from .pairhmm import PairHmmBatches

# The test harnesses that come with the format (GATK's and GKL's) raise base qualities
# below 6 to 6 before scoring; the published reference outputs were made that way.
FORMAT_MIN_BASE_QUAL = 6


def read_pairhmm_text(source: PathOrFile, *, min_base_qual: int = FORMAT_MIN_BASE_QUAL) -> PairHmmBatches:
    """Parse the whole input into packed batches.

    ``min_base_qual`` raises lower base qualities to it (6 by default, as the format's
    harnesses and the reference outputs do; 0 leaves them unchanged).
    """
    min_base_qual = check_int(min_base_qual, "min_base_qual", 0, 127)
    with whole_input(source) as text:
        arrays = text.scanned("pairhmm", min_base_qual)
        if arrays is not None:
            return PairHmmBatches.from_arrays(**arrays)
        with text.lines() as (stream, name):
            return _batches_from_lines(NumberedLines(stream, name), min_base_qual)


def _batches_from_lines(lines: NumberedLines, min_base_qual: int) -> PairHmmBatches:
    """The line-by-line reader: slower than the C scanner, but it names what is wrong."""
    name = lines.name
    bases, quals, ins, dels, gcps, read_lens = [], [], [], [], [], []
    haps, hap_lens, batch_reads, batch_haps = [], [], [], []
    for n_reads, n_haps in _records(lines):
        for _ in range(n_reads):
            line = lines.next()
            if line is None:
                raise lines.error(f"the input ended inside a record: expected {n_reads} read lines")
            fields = line.split()
            if len(fields) != 5:
                raise lines.error(f"a read line needs 5 fields (bases quals insGOP delGOP GCP), found {len(fields)}")
            # Lower-case (soft-masked) bases read as upper case, as in every other input format.
            read = fields[0].upper().encode("ascii", errors="replace")
            for label, text in zip(("quals", "insGOP", "delGOP", "GCP"), fields[1:]):
                if len(text) != len(read):
                    raise lines.error(f"{label} has {len(text)} characters but the read has {len(read)} bases")
            bases.append(read)
            quals.append(fields[1].encode("ascii", errors="replace"))
            ins.append(fields[2].encode("ascii", errors="replace"))
            dels.append(fields[3].encode("ascii", errors="replace"))
            gcps.append(fields[4].encode("ascii", errors="replace"))
            read_lens.append(len(read))
        for _ in range(n_haps):
            line = lines.next()
            if line is None:
                raise lines.error(f"the input ended inside a record: expected {n_haps} haplotype lines")
            fields = line.split()
            if len(fields) != 1:
                raise lines.error(f"a haplotype line needs 1 field, found {len(fields)}")
            haps.append(fields[0].upper().encode("ascii", errors="replace"))
            hap_lens.append(len(fields[0]))
        batch_reads.append(n_reads)
        batch_haps.append(n_haps)

    def phred(parts: list[bytes], what: str) -> np.ndarray:
        raw = np.frombuffer(b"".join(parts), dtype=np.uint8)
        if len(raw) and raw.min() < 33:
            raise ValueError(f"{name}: a {what} character is below '!' (phred+33 expected)")
        return raw - np.uint8(33)

    base_quals = phred(quals, "base quality")
    np.maximum(base_quals, np.uint8(min_base_qual), out=base_quals)
    return PairHmmBatches.from_arrays(
        read_bases=np.frombuffer(b"".join(bases), dtype=np.uint8),
        read_quals=base_quals,
        read_ins=phred(ins, "insertion GOP"),
        read_del=phred(dels, "deletion GOP"),
        read_gcp=phred(gcps, "GCP"),
        read_offsets=offsets_of(read_lens),
        hap_bases=np.frombuffer(b"".join(haps), dtype=np.uint8),
        hap_offsets=offsets_of(hap_lens),
        batch_reads=offsets_of(batch_reads),
        batch_haps=offsets_of(batch_haps),
    )


def _records(lines: NumberedLines) -> Iterator[tuple[int, int]]:
    while (line := lines.next()) is not None:
        fields = line.split()
        if len(fields) != 2 or not all(f.isdigit() for f in fields):
            raise lines.error(f"expected a record header 'R H' (two counts), found {line.strip()[:60]!r}")
        n_reads, n_haps = int(fields[0]), int(fields[1])
        if n_reads < 1 or n_haps < 1:
            raise lines.error(f"a record needs at least one read and one haplotype, found {n_reads} {n_haps}")
        yield n_reads, n_haps


def write_pairhmm_text(batches: PairHmmBatches, destination: PathOrFile) -> None:
    """Write packed batches in the text format (qualities as phred+33)."""
    batches.validate()
    for name in ("read_quals", "read_ins", "read_del", "read_gcp"):
        values = getattr(batches, name)
        if len(values) and values.max() > 93:
            raise ValueError(f"{name} has a value above 93, which phred+33 text cannot hold")
    if (np.diff(batches.batch_reads) < 1).any() or (np.diff(batches.batch_haps) < 1).any():
        raise ValueError("the text format cannot hold a batch without reads or haplotypes")
    with open_text(destination, write=True) as (stream, _):
        ro, ho = batches.read_offsets, batches.hap_offsets

        def text(array: np.ndarray, start: int, stop: int, shift: int = 0) -> str:
            return (array[start:stop] + np.uint8(shift)).tobytes().decode("ascii")

        for b in range(batches.n_batches):
            r0, r1 = batches.batch_reads[b], batches.batch_reads[b + 1]
            h0, h1 = batches.batch_haps[b], batches.batch_haps[b + 1]
            stream.write(f"{r1 - r0} {h1 - h0}\n")
            for r in range(r0, r1):
                s, e = ro[r], ro[r + 1]
                stream.write(" ".join([
                    text(batches.read_bases, s, e), text(batches.read_quals, s, e, 33),
                    text(batches.read_ins, s, e, 33), text(batches.read_del, s, e, 33),
                    text(batches.read_gcp, s, e, 33)]) + "\n")
            for h in range(h0, h1):
                stream.write(text(batches.hap_bases, ho[h], ho[h + 1]) + "\n")


LAYOUTS = ("lines", "records", "tsv")
TSV_HEADER = "read\thaplotype\tlog10_likelihood"


def write_likelihoods(values: np.ndarray, destination: PathOrFile, *, layout: str = "lines",
                      batches: PairHmmBatches | None = None, read_names: Sequence[str] | None = None,
                      hap_names: Sequence[str] | None = None) -> None:
    """Write log10 likelihoods (read-major within each batch, as :func:`pairhmm` returns them).

    ``lines``: one value per line (the .gkl.out layout). ``records``: gpuPairHMM's layout, per
    batch a line ``R H`` then R lines of H values. ``tsv``: a header line ``read haplotype
    log10_likelihood`` (tab separated), then one line per pair naming its read and haplotype:
    ``read_names``/``hap_names`` (one per read/haplotype of ``batches``, e.g. from BAM and
    FASTA), else ``rec<b>.read<i>`` and ``rec<b>.hap<j>``, 0-based within batch b.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    if layout != "lines" and batches is None:
        raise ValueError(f"the {layout!r} layout needs the batches to know each record's shape")
    with open_text(destination, write=True) as (stream, _):
        if layout == "lines":
            stream.writelines(f"{v:.8f}\n" for v in values)
            return
        assert batches is not None
        start = 0
        if layout == "tsv":
            stream.write(TSV_HEADER + "\n")
        for b, (n_reads, n_haps) in enumerate(zip(np.diff(batches.batch_reads), np.diff(batches.batch_haps))):
            block = values[start:start + n_reads * n_haps].reshape(n_reads, n_haps)
            start += n_reads * n_haps
            if layout == "records":
                stream.write(f"{n_reads} {n_haps}\n")
                stream.writelines(" ".join(f"{v:.8f}" for v in row) + "\n" for row in block)
                continue
            reads = _names(read_names, int(batches.batch_reads[b]), n_reads, f"rec{b}.read")
            haps = _names(hap_names, int(batches.batch_haps[b]), n_haps, f"rec{b}.hap")
            stream.writelines(f"{read}\t{hap}\t{v:.8f}\n"
                              for read, row in zip(reads, block) for hap, v in zip(haps, row))


def _names(names: Sequence[str] | None, first: int, count: int, prefix: str) -> Sequence[str]:
    if names is None:
        return [f"{prefix}{i}" for i in range(count)]
    if first + count > len(names):
        raise ValueError(f"{len(names)} names given, but the batches have more ({prefix.split('.')[-1]}s)")
    return names[first:first + count]
