"""CIGAR operations as warpdp stores them: one uint32 per run, ``length << 4 | op``, with SAM's
op codes (M I D N S H P = X as 0..8, as BAM and htslib number them), and per-pair int64
offsets into the ops (see docs/design.md, "Data model")."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .packed import offsets_of  # the ragged CIGAR's offsets are the data model's offsets

OPS = "MIDNSHP=X"
OP_CODES = {op: code for code, op in enumerate(OPS)}
MAX_LENGTH = (1 << 28) - 1  # what 28 bits hold
# Ops that consume the query (read) and the reference, as SAM defines them.
_QUERY = frozenset((0, 1, 4, 7, 8))
_REFERENCE = frozenset((0, 2, 3, 7, 8))
_CIGAR_RUN = re.compile(r"(\d+)([MIDNSHP=X])")


def pack(lengths: Sequence[int] | np.ndarray, ops: Sequence[int] | np.ndarray) -> np.ndarray:
    """Packed uint32 ops of run lengths and op codes; ValueError for a length or op out of range."""
    lengths = np.asarray(lengths, dtype=np.int64)
    codes = np.asarray(ops, dtype=np.int64)
    if lengths.shape != codes.shape or lengths.ndim != 1:
        raise ValueError("lengths and ops must be 1-d arrays of one length")
    if lengths.size and (lengths.min() < 0 or lengths.max() > MAX_LENGTH):
        raise ValueError(f"CIGAR run lengths must be within 0..{MAX_LENGTH}")
    if codes.size and (codes.min() < 0 or codes.max() >= len(OPS)):
        raise ValueError(f"CIGAR op codes must be within 0..{len(OPS) - 1}")
    return ((lengths << 4) | codes).astype(np.uint32)


def unpack(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(run lengths, op codes) of packed ops."""
    packed = np.asarray(packed, dtype=np.uint32)
    return (packed >> 4).astype(np.int64), (packed & 0xF).astype(np.int64)


def from_string(cigar: str) -> np.ndarray:
    """Packed ops of a CIGAR string ("" or "*": none); ValueError when it is not one."""
    if cigar in ("", "*"):
        return np.empty(0, dtype=np.uint32)
    runs = _CIGAR_RUN.findall(cigar)
    if "".join(length + op for length, op in runs) != cigar:
        raise ValueError(f"not a CIGAR string: {cigar!r}")
    return pack([int(length) for length, _ in runs], [OP_CODES[op] for _, op in runs])


def to_string(packed: np.ndarray) -> str:
    """The CIGAR string of packed ops ("*" when there are none, as SAM writes it)."""
    lengths, codes = unpack(packed)
    return "".join(f"{length}{OPS[code]}" for length, code in zip(lengths.tolist(), codes.tolist())) or "*"


def tuples(packed: np.ndarray) -> list[tuple[int, int]]:
    """(op code, length) pairs, as pysam's cigartuples."""
    lengths, codes = unpack(packed)
    return list(zip(codes.tolist(), lengths.tolist()))


def spans(packed: np.ndarray) -> tuple[int, int]:
    """(query bases, reference bases) the ops cover."""
    lengths, codes = unpack(packed)
    query = int(lengths[np.isin(codes, list(_QUERY))].sum())
    reference = int(lengths[np.isin(codes, list(_REFERENCE))].sum())
    return query, reference


@dataclass(frozen=True)
class Alignment:
    """One pair's alignment: its score, where it begins and ends on the query and the
    reference (0-based, end exclusive) and its CIGAR ops."""

    score: int
    query_begin: int
    query_end: int
    ref_begin: int
    ref_end: int
    ops: np.ndarray

    @property
    def cigarstring(self) -> str:
        return to_string(self.ops)

    @property
    def cigartuples(self) -> list[tuple[int, int]]:
        return tuples(self.ops)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Alignment):
            return NotImplemented
        return ((self.score, self.query_begin, self.query_end, self.ref_begin, self.ref_end)
                == (other.score, other.query_begin, other.query_end, other.ref_begin, other.ref_end)
                and np.array_equal(self.ops, other.ops))

    __hash__ = None  # type: ignore[assignment]  # holds an array


__all__ = ["Alignment", "MAX_LENGTH", "OPS", "OP_CODES", "from_string", "offsets_of", "pack", "spans", "to_string",
           "tuples", "unpack"]
