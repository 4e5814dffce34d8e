"""Edit-distance formats: pairs as TSV or two FASTA/FASTQ files; results as TSV or SAM.

TSV pairs (``../shared/data/edit/pairs-400.tsv``): one pair per line, ``query target`` separated
by whitespace; blank lines are skipped. FASTA/FASTQ pairs: two files (optionally gzipped, read with
pysam) whose records pair in order, queries first.

TSV results: a header line, then one line per pair in input order, tab-separated:
``distance target_begin target_end`` (-1 above k; the first optimal location, 0-based, end
exclusive), then ``cigar`` (``*`` when none) for task path and ``locations`` (``begin-end`` pairs,
end exclusive, comma-separated; ``*`` when none) for tasks locations and path.

SAM (pysam): each pair's target is a reference sequence of its own (``target<i>`` unless names are
given), the query a record aligned at target_begin with the CIGAR and ``NM`` = the distance;
pairs above k are unmapped records.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

from .core import cigar as core_cigar
from .core.text import PathOrFile, open_text, require_pysam
from .edit import EditPairs, EditResults, pack_edit_pairs


def read_edit_tsv(source: PathOrFile) -> EditPairs:
    """Pairs from ``query target`` lines (see the module doc)."""
    pairs = []
    with open_text(source) as (stream, name):
        for number, line in enumerate(stream, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 2:
                raise ValueError(f"{name}, line {number}: expected 2 fields (query target), found {len(fields)}")
            pairs.append((fields[0], fields[1]))
    return pack_edit_pairs(pairs)


def _fastx(path: str | os.PathLike) -> list[tuple[str, str]]:
    pysam = require_pysam("reading FASTA/FASTQ")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    with pysam.FastxFile(os.fspath(path)) as records:
        return [(record.name, record.sequence or "") for record in records]


def read_edit_fastx(queries: str | os.PathLike, targets: str | os.PathLike) -> tuple[EditPairs, list[str], list[str]]:
    """Pairs from two FASTA/FASTQ files paired in order, with the query and target names."""
    q, t = _fastx(queries), _fastx(targets)
    if len(q) != len(t):
        raise ValueError(f"{queries} has {len(q)} records but {targets} has {len(t)}: they pair in order")
    for i, ((qname, qseq), (tname, tseq)) in enumerate(zip(q, t)):
        if not qseq or not tseq:
            raise ValueError(f"pair {i} ({qname!r}, {tname!r}) has an empty sequence")
    return (pack_edit_pairs([(qs, ts) for (_, qs), (_, ts) in zip(q, t)]), [n for n, _ in q], [n for n, _ in t])


def write_edit_tsv(results: EditResults, destination: PathOrFile) -> None:
    """The TSV results format (see the module doc)."""
    header = ["distance", "target_begin", "target_end"]
    if results.has_cigar:
        header.append("cigar")
    if results.locations is not None:
        header.append("locations")
    with open_text(destination, write=True) as (stream, _):
        stream.write("\t".join(header) + "\n")
        for i in range(len(results)):
            fields = [str(int(results.distance[i])), str(int(results.target_begin[i])), str(int(results.target_end[i]))]
            if results.has_cigar:
                fields.append(results.cigarstring(i) or "*")
            if results.locations is not None:
                fields.append(",".join(f"{b}-{e}" for b, e in results.pair_locations(i)) or "*")
            stream.write("\t".join(fields) + "\n")


def write_edit_sam(results: EditResults, pairs: EditPairs, path: str | os.PathLike,
                   query_names: Sequence[str] | None = None, target_names: Sequence[str] | None = None) -> None:
    """SAM records of task-path results (see the module doc)."""
    pysam = require_pysam("writing SAM")
    if not results.has_cigar:
        raise ValueError("task must be 'path' to write SAM (the records need CIGARs)")
    n = len(pairs)
    query_names = list(query_names) if query_names is not None else [f"query{i}" for i in range(n)]
    target_names = list(target_names) if target_names is not None else [f"target{i}" for i in range(n)]
    # SAM needs one name per reference; paired targets may repeat a name, so those get the pair's index.
    seen: set[str] = set()
    unique = []
    for i, name in enumerate(target_names):
        unique.append(name if name not in seen else f"{name}.{i}")
        seen.add(unique[-1])
    lengths = (pairs.target_offsets[1:] - pairs.target_offsets[:-1]).tolist()
    header = {"HD": {"VN": "1.6", "SO": "unsorted"}, "SQ": [{"SN": s, "LN": int(ln)} for s, ln in zip(unique, lengths)],
              "PG": [{"ID": "warpdp", "PN": "warpdp", "CL": "warpdp edit"}]}
    with pysam.AlignmentFile(os.fspath(path), "w", header=header) as out:
        for i in range(n):
            record = pysam.AlignedSegment(out.header)
            record.query_name = query_names[i]
            record.query_sequence = pairs.query(i).decode("ascii")
            if results.distance[i] < 0:
                record.flag = 4
            else:
                record.reference_id = i
                record.reference_start = int(results.target_begin[i])
                record.mapping_quality = 255
                record.cigartuples = core_cigar.tuples(results.cigar(i))
                record.set_tag("NM", int(results.distance[i]))
            out.write(record)
