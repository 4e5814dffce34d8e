"""Seed-extension inputs and outputs as text.

Inputs:
- TSV: one pair per line, ``query <TAB> target <TAB> h0`` (lines that are blank or start with
  ``#`` are skipped; an empty query or target is an empty field). Lines without a tab may
  separate the three fields by spaces instead.
- FASTA/FASTQ pairs (read with pysam, plain or gzipped): the k-th record of the queries file is
  extended against the k-th record of the targets file; both files must hold the same number
  of records. h0 comes from a ``h0=N`` word in the query record's comment (the header after the
  name), else from the ``h0`` argument.
Output: one line per pair, in input order: ``score qle tle gtle gscore max_off``.
"""
from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable

import numpy as np

from .core.packed import offsets_of
from .core.text import PathOrFile, open_text, require_pysam, whole_input
from .seedext import MAX_SCORE, SeedExtPairs, SeedExtResults

_H0_WORD = re.compile(r"(?:^|\s)h0=(\S+)")


def _packed(queries: list[bytes], targets: list[bytes], h0s: list[int]) -> SeedExtPairs:
    return SeedExtPairs.from_arrays(
        query=np.frombuffer(b"".join(queries), dtype=np.uint8).copy(),
        query_offsets=offsets_of([len(q) for q in queries]),
        target=np.frombuffer(b"".join(targets), dtype=np.uint8).copy(),
        target_offsets=offsets_of([len(t) for t in targets]),
        h0=np.array(h0s, dtype=np.int64))


def _parse_h0(text: str, where: str) -> int:
    try:
        h0 = int(text)
    except ValueError:
        raise ValueError(f"{where}: h0 must be an integer, not {text!r}") from None
    if not 0 <= h0 <= MAX_SCORE:
        raise ValueError(f"{where}: h0 must be within 0..{MAX_SCORE}, not {h0}")
    return h0


def read_seedext_tsv(source: PathOrFile) -> SeedExtPairs:
    """Read ``query <TAB> target <TAB> h0`` lines into packed pairs.

    The C scanner reads them (warpdp/cython_cpu/parse_seedext.c); where it declines (a malformed
    line, an unusual byte), the line-by-line reader below does, and names the fault."""
    with whole_input(source) as text:
        arrays = text.scanned("seedext", MAX_SCORE)
        if arrays is not None:
            return SeedExtPairs.from_arrays(**arrays)
        with text.lines() as (lines, name):
            return _seedext_lines(lines, name)


def _seedext_lines(lines: Iterable[str], name: str) -> SeedExtPairs:
    queries, targets, h0s = [], [], []
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        where = f"{name}, line {number}"
        if len(fields) != 3:
            raise ValueError(f"{where}: expected 3 fields (query, target, h0), found {len(fields)}")
        query, target, h0 = fields
        queries.append(query.strip().encode("ascii", errors="replace"))
        targets.append(target.strip().encode("ascii", errors="replace"))
        h0s.append(_parse_h0(h0.strip(), where))
    return _packed(queries, targets, h0s)


def read_seedext_fasta(queries: str | os.PathLike, targets: str | os.PathLike, *, h0: int | None = None) -> SeedExtPairs:
    """Pair the k-th record of ``queries`` with the k-th record of ``targets`` (FASTA/FASTQ)."""
    pysam = require_pysam("reading FASTA pairs")
    for path in (queries, targets):
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such file: {path}")
    if h0 is not None and not 0 <= h0 <= MAX_SCORE:
        raise ValueError(f"h0 must be within 0..{MAX_SCORE}, not {h0}")
    query_seqs, target_seqs, h0s = [], [], []
    with pysam.FastxFile(str(queries)) as query_file, pysam.FastxFile(str(targets)) as target_file:
        for k, (query, target) in enumerate(_zip_records(query_file, target_file, queries, targets)):
            match = _H0_WORD.search(query.comment or "")
            if match:
                value = _parse_h0(match.group(1), f"{queries}, record {k + 1} ({query.name})")
            elif h0 is not None:
                value = h0
            else:
                raise ValueError(f"{queries}, record {k + 1} ({query.name}): no h0=N in its header and no "
                                 "default h0 given (--h0)")
            query_seqs.append((query.sequence or "").encode("ascii", errors="replace"))
            target_seqs.append((target.sequence or "").encode("ascii", errors="replace"))
            h0s.append(value)
    return _packed(query_seqs, target_seqs, h0s)


def _zip_records(query_file, target_file, queries, targets):
    query_iter, target_iter = iter(query_file), iter(target_file)
    while True:
        query, target = next(query_iter, None), next(target_iter, None)
        if query is None and target is None:
            return
        if query is None or target is None:
            longer = targets if query is None else queries
            raise ValueError(f"{queries} and {targets} hold different numbers of records ({longer} has more)")
        yield query, target


def format_seedext_results(results: SeedExtResults) -> str:
    """The output text: ``score qle tle gtle gscore max_off`` per pair, one line each."""
    if len(results) == 0:
        return ""
    buffer = io.StringIO()
    np.savetxt(buffer, results.table, fmt="%d", delimiter=" ")
    return buffer.getvalue()


def write_seedext_results(results: SeedExtResults, destination: PathOrFile) -> None:
    """Write :func:`format_seedext_results` to a path or an open text file."""
    text = format_seedext_results(results)
    with open_text(destination, write=True) as (stream, _):
        stream.write(text)
