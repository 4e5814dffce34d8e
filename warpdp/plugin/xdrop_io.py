"""X-drop input and output formats: LOGAN's text format, FASTA/FASTQ pairs, result lines.

LOGAN text format (LOGAN's demo input; ``../shared/data/xdrop/*.tsv``): one pair per line,
``seqV posV seqH posH strand`` separated by tabs (any whitespace is accepted). The seed of
length k starts at posV in seqV and posH in seqH. Strand ``c`` is handled as LOGAN's demo does:
seqH is complemented (not reversed) and posH becomes ``len(seqH) - posH - k`` before extending,
and results are coordinates on that complemented seqH. Strand ``n`` leaves the pair as it is.

FASTA/FASTQ pairs: two files (FASTA or FASTQ, optionally gzipped, read with pysam) whose
records are paired in order (record i of the V file with record i of the H file), plus a
seeds file with one line per pair, ``posV posH [strand]`` (the LOGAN columns without the
sequences; strand defaults to ``n``). All three must hold the same number of pairs.

Results: one line per pair, in input order, ``score beginH endH beginV endV`` separated by
single spaces (the layout of ``*.seqan.out``).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import numpy as np

from .core.packed import offsets_of
from .core.text import PathOrFile, open_text, require_pysam, whole_input
from .xdrop import XdropPairs, XdropResults, check_k

_COMPLEMENT = bytes.maketrans(b"ACGTNacgtn", b"TGCANtgcan")
_BASES = b"ACGTNacgtn"
STRANDS = ("n", "c")


class _Pairs:
    """Collects pairs, applying the strand rule and checking each against k as it comes."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.h, self.v, self.h_pos, self.v_pos = [], [], [], []

    def add(self, seq_v: bytes, pos_v: str, seq_h: bytes, pos_h: str, strand: str, where: str) -> None:
        k = self.k
        try:
            pv, ph = int(pos_v), int(pos_h)
        except ValueError:
            raise ValueError(f"{where}: posV and posH must be integers, found {pos_v[:20]!r} {pos_h[:20]!r}") from None
        if strand not in STRANDS:
            raise ValueError(f"{where}: strand must be 'n' or 'c', found {strand[:20]!r}")
        for name, seq in (("seqV", seq_v), ("seqH", seq_h)):
            bad = seq.translate(None, _BASES)
            if bad:
                at = next(i for i, b in enumerate(seq) if b not in _BASES)
                raise ValueError(f"{where}: {name} has {chr(seq[at])!r} at position {at}; "
                                 "only A, C, G, T and N (either case) are allowed")
        if not 0 <= pv <= len(seq_v) - k:
            raise ValueError(f"{where}: the seed lies outside seqV (posV = {pv}, k = {k}, seqV has {len(seq_v)} bases)")
        if not 0 <= ph <= len(seq_h) - k:
            raise ValueError(f"{where}: the seed lies outside seqH (posH = {ph}, k = {k}, seqH has {len(seq_h)} bases)")
        if strand == "c":
            seq_h = seq_h.translate(_COMPLEMENT)
            ph = len(seq_h) - ph - k
        self.v.append(seq_v)
        self.h.append(seq_h)
        self.v_pos.append(pv)
        self.h_pos.append(ph)

    def packed(self) -> XdropPairs:
        return XdropPairs.from_arrays(
            h_bases=np.frombuffer(b"".join(self.h), dtype=np.uint8), h_offsets=offsets_of([len(h) for h in self.h]),
            v_bases=np.frombuffer(b"".join(self.v), dtype=np.uint8), v_offsets=offsets_of([len(v) for v in self.v]),
            h_pos=np.array(self.h_pos, dtype=np.int64), v_pos=np.array(self.v_pos, dtype=np.int64),
        )


def read_logan_text(source: PathOrFile, *, k: int) -> XdropPairs:
    """Parse LOGAN's text format (see the module doc) into packed pairs; blank lines are skipped.

    The C scanner reads it (warpdp/cython_cpu/parse_logan.c); where it declines (a malformed
    line, an unusual byte), the line-by-line reader below does, and names the fault."""
    k = check_k(k)
    with whole_input(source) as text:
        arrays = text.scanned("logan", k)
        if arrays is not None:
            return XdropPairs.from_arrays(**arrays)
        with text.lines() as (lines, name):
            return _logan_lines(lines, name, k)


def _logan_lines(lines: Iterable[str], name: str, k: int) -> XdropPairs:
    pairs = _Pairs(k)
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{name}, line {number}"
        if len(fields) != 5:
            raise ValueError(f"{where}: expected 5 fields (seqV posV seqH posH strand), found {len(fields)}")
        pairs.add(fields[0].encode("ascii", errors="replace"), fields[1],
                  fields[2].encode("ascii", errors="replace"), fields[3], fields[4], where)
    return pairs.packed()


def _fastx_sequences(path: str | os.PathLike) -> Iterator[tuple[str, bytes]]:
    pysam = require_pysam("reading FASTA/FASTQ")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    with pysam.FastxFile(os.fspath(path)) as records:
        for record in records:
            yield record.name, (record.sequence or "").encode("ascii", errors="replace")


def read_xdrop_fastx(seqs_v: str | os.PathLike, seqs_h: str | os.PathLike, seeds: PathOrFile, *,
                     k: int) -> XdropPairs:
    """Pairs from two FASTA/FASTQ files paired in order plus a seeds file (see the module doc)."""
    k = check_k(k)
    pairs = _Pairs(k)
    v_records, h_records = _fastx_sequences(seqs_v), _fastx_sequences(seqs_h)
    with open_text(seeds) as (stream, name):
        number = 0
        for number, line in enumerate(stream, start=1):
            fields = line.split()
            if not fields:
                continue
            where = f"{name}, line {number}"
            if len(fields) not in (2, 3):
                raise ValueError(f"{where}: expected 'posV posH [strand]', found {len(fields)} fields")
            v, h = next(v_records, None), next(h_records, None)
            if v is None or h is None:
                short = seqs_v if v is None else seqs_h
                raise ValueError(f"{where}: {short} has fewer records than {name} has seeds")
            pairs.add(v[1], fields[0], h[1], fields[1], fields[2] if len(fields) == 3 else "n",
                      f"{where} (records {v[0]!r} and {h[0]!r})")
    for path, rest in ((seqs_v, v_records), (seqs_h, h_records)):
        if next(rest, None) is not None:
            raise ValueError(f"{path} has more records than {name} has seeds ({len(pairs.h_pos)})")
    return pairs.packed()


def write_xdrop_results(results: XdropResults, destination: PathOrFile) -> None:
    """One line per pair: ``score beginH endH beginV endV``."""
    table = results.as_array()
    with open_text(destination, write=True) as (stream, _):
        stream.writelines(f"{s} {bh} {eh} {bv} {ev}\n" for s, bh, eh, bv, ev in table.tolist())


def read_xdrop_results(source: PathOrFile) -> np.ndarray:
    """An (n, 5) int64 array from result lines (e.g. ``*.seqan.out``)."""
    with open_text(source) as (stream, name):
        rows = [line.split() for line in stream if line.strip()]
    if any(len(row) != 5 for row in rows):
        raise ValueError(f"{name}: every line needs 5 integers (score beginH endH beginV endV)")
    return np.array(rows, dtype=np.int64).reshape(-1, 5)
