"""Alignment inputs and outputs.

Inputs:
- TSV: one pair per line, ``query <TAB> target`` (blank lines and lines starting with ``#`` are
  skipped; lines without a tab may separate the two fields by spaces).
- FASTA/FASTQ (read with pysam, plain or gzipped): the k-th record of the queries file aligns with the
  k-th record of the targets file; both must hold the same number of records.
Outputs:
- TSV with a header line naming the columns: ``score query_begin query_end target_begin target_end``
  (0-based, end exclusive) and ``cigar`` when the results carry CIGARs; with names, ``query_name`` and
  ``target_name`` first.
- SAM (pysam) for query-vs-target: one record per pair, the target as the reference, POS at
  target_begin, the CIGAR with the unaligned query ends as soft clips.
"""
from __future__ import annotations


from .align import COLUMNS, AlignPairs, AlignResults
from .core import cigar
from .core.text import PathOrFile, open_text, require_pysam


def _packed(queries: list[bytes], targets: list[bytes]) -> AlignPairs:
    return AlignPairs.from_sequences(zip(queries, targets))


def read_align_tsv(source: PathOrFile) -> AlignPairs:
    """Read ``query <TAB> target`` lines into packed pairs (ValueError naming the line)."""
    queries, targets = [], []
    with open_text(source) as (stream, name):
        for number, line in enumerate(stream, 1):
            line = line.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t") if "\t" in line else line.split()
            if len(fields) != 2:
                raise ValueError(f"{name}, line {number}: expected 2 fields (query, target), found {len(fields)}")
            query, target = (field.strip() for field in fields)
            if not query or not target:
                raise ValueError(f"{name}, line {number}: the {'query' if not query else 'target'} is empty")
            queries.append(query.encode("ascii", errors="replace"))
            targets.append(target.encode("ascii", errors="replace"))
    return _packed(queries, targets)


def read_align_fastx(queries: str, targets: str) -> tuple[AlignPairs, list[str], list[str]]:
    """Pairs of the k-th query record with the k-th target record, and the records' names."""
    pysam = require_pysam("reading FASTA/FASTQ")
    found: list[tuple[list[str], list[bytes]]] = []
    for path in (queries, targets):
        names, seqs = [], []
        with pysam.FastxFile(path) as records:
            for record in records:
                if not record.sequence:
                    raise ValueError(f"{path}: record {record.name} has an empty sequence")
                names.append(record.name)
                seqs.append(record.sequence.encode("ascii", errors="replace"))
        found.append((names, seqs))
    (q_names, q_seqs), (t_names, t_seqs) = found
    if len(q_seqs) != len(t_seqs):
        raise ValueError(f"{queries} holds {len(q_seqs)} records but {targets} holds {len(t_seqs)}: "
                         "the k-th query aligns with the k-th target")
    return _packed(q_seqs, t_seqs), q_names, t_names


def write_align_tsv(results: AlignResults, target: PathOrFile, query_names: list[str] | None = None,
                    target_names: list[str] | None = None) -> None:
    """Results as TSV with a header line (module doc)."""
    names = query_names is not None and target_names is not None
    header = (["query_name", "target_name"] if names else []) + list(COLUMNS) + (["cigar"] if results.has_cigar else [])
    columns = [results.columns[name].tolist() for name in COLUMNS]
    with open_text(target, write=True) as (stream, _):
        stream.write("\t".join(header) + "\n")
        for i in range(len(results)):
            fields = [query_names[i], target_names[i]] if names else []  # type: ignore[index]
            fields += [str(column[i]) for column in columns]
            if results.has_cigar:
                fields.append(results.cigarstring(i))
            stream.write("\t".join(fields) + "\n")


def write_align_sam(results: AlignResults, pairs: AlignPairs, path: str, query_names: list[str] | None = None,
                    target_names: list[str] | None = None) -> None:
    """One SAM record per pair (module doc); needs CIGARs. Unmapped (flag 4) when the alignment is empty."""
    pysam = require_pysam("writing SAM")
    if not results.has_cigar:
        raise ValueError("SAM output needs CIGARs: align with cigar=True")
    n = len(results)
    query_names = query_names or [f"q{i}" for i in range(n)]
    target_names = target_names or [f"t{i}" for i in range(n)]
    # One @SQ per distinct target name (the first record of a name gives its length).
    lengths: dict[str, int] = {}
    for i, name in enumerate(target_names):
        lengths.setdefault(name, len(pairs.target(i)))
    header = {"HD": {"VN": "1.6", "SO": "unsorted"},
              "SQ": [{"SN": name, "LN": length} for name, length in lengths.items()],
              "PG": [{"ID": "warpdp", "PN": "warpdp", "CL": "warpdp align"}]}
    index = {name: k for k, name in enumerate(lengths)}
    c = results.columns
    with pysam.AlignmentFile(path, "w", header=header) as out:
        for i in range(n):
            record = pysam.AlignedSegment(out.header)
            record.query_name = query_names[i]
            record.query_sequence = pairs.query(i).decode("ascii", errors="replace")
            ops = results.cigar(i)
            if len(ops) == 0:
                record.flag = 4
            else:
                q_begin, q_end, length = int(c["query_begin"][i]), int(c["query_end"][i]), len(pairs.query(i))
                clip = cigar.OP_CODES["S"]
                runs = cigar.tuples(ops)
                # GATK mode's CIGARs carry their soft clips already
                if q_begin and runs[0][0] != clip:
                    runs.insert(0, (clip, q_begin))
                if q_end < length and runs[-1][0] != clip:
                    runs.append((clip, length - q_end))
                if int(c["target_begin"][i]) < 0:
                    raise ValueError(f"pair {i} starts before its target (GATK IGNORE offset "
                                     f"{int(c['target_begin'][i])}): not expressible in SAM")
                record.reference_id = index[target_names[i]]
                record.reference_start = int(c["target_begin"][i])
                record.cigartuples = runs
                record.mapping_quality = 255
                record.set_tag("AS", int(c["score"][i]))
            out.write(record)


__all__ = ["read_align_fastx", "read_align_tsv", "write_align_sam", "write_align_tsv"]
