"""Results of a batch: named numpy columns, one value per pair, and an optional ragged CIGAR
(see cigar.py and docs/design.md, "Data model"). Families' result classes build on :class:`Results`;
the service splits, merges and sends them without knowing the family."""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from . import cigar


class Results:
    """Columns of equal length (one row per pair), plus ``cigar_ops`` (uint32, ``len << 4 | op``)
    and ``cigar_offsets`` (int64, n_pairs + 1, from 0) when the family reports alignments.

    Slicing by pairs (``results[a:b]``) gives a Results of those pairs (the CIGAR's offsets
    rebased to 0), and :meth:`concat` joins results back, so a batch split for the backend or
    the wire is reassembled exactly.
    """

    def __init__(self, columns: Mapping[str, np.ndarray], cigar_ops: np.ndarray | None = None,
                 cigar_offsets: np.ndarray | None = None) -> None:
        self.columns = {name: np.asarray(values) for name, values in columns.items()}
        lengths = {len(values) for values in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"result columns differ in length: {sorted(lengths)}")
        if (cigar_ops is None) != (cigar_offsets is None):
            raise ValueError("cigar_ops and cigar_offsets come together")
        self.n_pairs = lengths.pop() if lengths else (0 if cigar_offsets is None else len(cigar_offsets) - 1)
        self.cigar_ops = None if cigar_ops is None else np.ascontiguousarray(cigar_ops, dtype=np.uint32)
        self.cigar_offsets = None if cigar_offsets is None else np.ascontiguousarray(cigar_offsets, dtype=np.int64)
        if self.cigar_offsets is not None:
            self._check_cigar()

    def _check_cigar(self) -> None:
        offsets, ops = self.cigar_offsets, self.cigar_ops
        assert offsets is not None and ops is not None
        if len(offsets) != self.n_pairs + 1 or offsets[0] != 0 or offsets[-1] != len(ops):
            raise ValueError(f"cigar_offsets must hold n_pairs + 1 = {self.n_pairs + 1} offsets from 0 to "
                             f"len(cigar_ops) = {len(ops)}")
        if np.any(offsets[1:] < offsets[:-1]):  # no int64 temporary (results of 10^6 pairs and more)
            raise ValueError("cigar_offsets must not decrease")

    @property
    def has_cigar(self) -> bool:
        return self.cigar_ops is not None

    def __len__(self) -> int:
        return self.n_pairs

    def __getitem__(self, index: slice) -> Results:
        if not isinstance(index, slice):
            raise TypeError("Results are sliced by pairs (results[a:b]); see pair() for one")
        start, stop, step = index.indices(self.n_pairs)
        if step != 1:
            raise ValueError("Results slices take consecutive pairs")
        stop = max(start, stop)
        columns = {name: values[start:stop] for name, values in self.columns.items()}
        if self.cigar_offsets is None:
            return self._like(columns, None, None)
        assert self.cigar_ops is not None
        first, last = int(self.cigar_offsets[start]), int(self.cigar_offsets[stop])
        return self._like(columns, self.cigar_ops[first:last], self.cigar_offsets[start:stop + 1] - first)

    def _like(self, columns: dict[str, np.ndarray], ops: np.ndarray | None, offsets: np.ndarray | None) -> Results:
        """A Results of this one's class (a subclass taking other arguments overrides this)."""
        return type(self)(columns, ops, offsets)

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Results):
            return NotImplemented
        if self.columns.keys() != other.columns.keys() or self.has_cigar != other.has_cigar:
            return False
        same = all(np.array_equal(self.columns[name], other.columns[name]) for name in self.columns)
        if self.has_cigar:
            same = (same and np.array_equal(self.cigar_ops, other.cigar_ops)
                    and np.array_equal(self.cigar_offsets, other.cigar_offsets))
        return same

    __hash__ = None  # type: ignore[assignment]  # mutable arrays

    def cigar(self, i: int) -> np.ndarray:
        """Pair i's packed CIGAR ops."""
        if self.cigar_offsets is None or self.cigar_ops is None:
            raise ValueError("these results carry no CIGAR")
        return self.cigar_ops[int(self.cigar_offsets[i]):int(self.cigar_offsets[i + 1])]

    def cigarstring(self, i: int) -> str:
        return cigar.to_string(self.cigar(i))

    def row(self, i: int) -> dict[str, Any]:
        """Pair i's column values (and its CIGAR string, when there is one)."""
        found: dict[str, Any] = {name: values[i].item() for name, values in self.columns.items()}
        if self.has_cigar:
            found["cigar"] = self.cigarstring(i)
        return found

    @classmethod
    def concat(cls, parts: Sequence[Results]) -> Results:
        """One Results holding the parts' pairs in order (parts of one class and shape)."""
        if not parts:
            raise ValueError("nothing to concatenate")
        first = parts[0]
        columns = {name: np.concatenate([part.columns[name] for part in parts]) for name in first.columns}
        if not first.has_cigar:
            return first._like(columns, None, None)
        ops = np.concatenate([part.cigar_ops for part in parts])  # type: ignore[misc]
        return first._like(columns, ops, join_offsets([part.cigar_offsets for part in parts]))  # type: ignore[misc]

    def nbytes(self) -> int:
        """Bytes of the arrays (what a reply carries of them)."""
        total = sum(values.nbytes for values in self.columns.values())
        if self.cigar_ops is not None and self.cigar_offsets is not None:
            total += self.cigar_ops.nbytes + self.cigar_offsets.nbytes
        return total


def join_offsets(parts: Sequence[np.ndarray]) -> np.ndarray:
    """The offsets of ragged parts laid end to end (each part's offsets from 0, n_i + 1 of them)."""
    joined = np.empty(1 + sum(len(offsets) - 1 for offsets in parts), dtype=np.int64)
    joined[0], at, base = 0, 1, 0
    for offsets in parts:
        np.add(offsets[1:], base, out=joined[at:at + len(offsets) - 1])
        at += len(offsets) - 1
        base += int(offsets[-1])
    return joined


__all__ = ["Results", "join_offsets"]
