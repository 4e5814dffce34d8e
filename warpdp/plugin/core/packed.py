"""The packed data model's building blocks, shared by every algorithm (docs/design.md "Data model").

Sequences travel as concatenated uint8 bytes plus int64 offsets; these helpers convert
inputs to that form and check it, with errors that name the field.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

SequenceInput = str | bytes | bytearray | np.ndarray

# Kernels index one sequence with 32-bit integers.
MAX_SEQUENCE_LENGTH = 2**31 - 1
INT64_MAX = 2**63 - 1


def check_int(value: object, name: str, low: int | None = None, high: int | None = None) -> int:
    """An int (Python or numpy, not bool) within low..high (either bound may be None), as a
    Python int; TypeError/ValueError naming the field. Compared as Python ints, so no value
    from outside can wrap before it is checked."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        if high is None:
            raise ValueError(f"{name} must be at least {low}, not {value}")
        if low is None:
            raise ValueError(f"{name} must be at most {high}, not {value}")
        raise ValueError(f"{name} must be within {low}..{high}, not {value}")
    return value


def byte_array(value: object, name: str) -> np.ndarray:
    """bytes or a uint8 numpy array, as a contiguous 1-D uint8 array."""
    if isinstance(value, (bytes, bytearray)):
        return np.frombuffer(bytes(value), dtype=np.uint8)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy uint8 array or bytes, not {type(value).__name__}")
    if value.dtype != np.uint8:
        raise TypeError(f"{name} must have dtype uint8, not {value.dtype}")
    return np.ascontiguousarray(value.reshape(-1))


def int64_array(value: object, name: str) -> np.ndarray:
    """Any 1-D integer array-like (not bool) as a contiguous int64 array."""
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers (int32/int64), not {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, not {array.ndim}-D")
    if array.dtype == np.uint64 and len(array) and int(array.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{name} has values beyond int64")
    return np.ascontiguousarray(array, dtype=np.int64)


def check_array(array: object, name: str, dtype: type) -> None:
    """A field of a packed dataclass: 1-D, of exactly this dtype, C-contiguous."""
    if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != 1:
        raise TypeError(f"{name} must be a 1-D numpy array of {np.dtype(dtype).name}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")


def check_offsets(offsets: np.ndarray, name: str, total: int, item: str, *, nonempty: bool = False) -> int:
    """Offsets into an array of `total` entries: start at 0, end at `total`, never decrease
    (strictly increase when `nonempty`), and no `item` longer than MAX_SEQUENCE_LENGTH.
    Returns the longest item's length (0 when there are none)."""
    check_offset_ends(offsets, name, total)
    return check_offset_steps(offsets, name, item, 0, len(offsets) - 1, nonempty=nonempty)


def check_offset_ends(offsets: np.ndarray, name: str, total: int) -> None:
    """Offsets into an array of `total` entries start at 0 and end at `total`."""
    if len(offsets) < 1:
        raise ValueError(f"{name} must have at least one entry (0)")
    if offsets[0] != 0:
        raise ValueError(f"{name} must start at 0, not {offsets[0]}")
    if offsets[-1] != total:
        raise ValueError(f"{name} must end at {total} (the length it indexes), not {offsets[-1]}")


def check_offset_steps(offsets: np.ndarray, name: str, item: str, start: int, stop: int, *,
                       nonempty: bool = False) -> int:
    """Items start..stop-1 of the offsets never decrease (strictly increase when `nonempty`) and
    none is longer than MAX_SEQUENCE_LENGTH; errors name the item by its index in the whole
    array. Returns the longest item's length (0 when there are none)."""
    if stop <= start:
        return 0
    steps = np.diff(offsets[start:stop + 1])
    shortest, longest = int(steps.min()), int(steps.max())  # the usual case: two passes, no search
    if shortest < (1 if nonempty else 0):
        i = int(np.argmax(steps <= 0 if nonempty else steps < 0))
        k = start + i
        if steps[i] < 0:
            raise ValueError(f"{name} must not decrease ({item} {k}: {offsets[k]} -> {offsets[k + 1]})")
        raise ValueError(f"{item} {k} is empty ({name}[{k}] == {name}[{k + 1}] == {offsets[k]})")
    if longest > MAX_SEQUENCE_LENGTH:
        raise ValueError(f"{name}: {item} {start + int(np.argmax(steps))} is longer than {MAX_SEQUENCE_LENGTH}")
    return longest


def concat(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Concatenated uint8 parts (an empty array for none)."""
    return np.concatenate(parts).astype(np.uint8, copy=False) if len(parts) else np.zeros(0, dtype=np.uint8)


def offsets_of(lengths: Iterable[int] | np.ndarray) -> np.ndarray:
    """int64 offsets (n + 1 entries, starting at 0) of consecutive items of these lengths."""
    if not isinstance(lengths, np.ndarray):
        lengths = np.fromiter(lengths, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def sequence_bytes(value: object, what: str) -> np.ndarray:
    """Bases as uint8 (ASCII); str, bytes or a uint8 array."""
    if isinstance(value, str):
        try:
            return np.frombuffer(value.encode("ascii"), dtype=np.uint8)
        except UnicodeEncodeError:
            raise ValueError(f"{what} has non-ASCII characters") from None
    if isinstance(value, (bytes, bytearray)):
        return np.frombuffer(bytes(value), dtype=np.uint8)
    if isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 1:
        return value
    raise TypeError(f"{what} must be str, bytes or a 1-D uint8 array, not {type(value).__name__}")


_Pairs = TypeVar("_Pairs", bound="QueryTargetPairs")


@dataclass(frozen=True)
class QueryTargetPairs:
    """Pairs of a query and a target in packed form: pair i is
    ``query_bases[query_offsets[i]:query_offsets[i+1]]`` against
    ``target_bases[target_offsets[i]:target_offsets[i+1]]`` (ASCII bytes). The families that take
    such pairs (align, edit) subclass it and check what they need in ``validate``."""

    query_bases: np.ndarray
    query_offsets: np.ndarray
    target_bases: np.ndarray
    target_offsets: np.ndarray

    @property
    def n_pairs(self) -> int:
        return len(self.query_offsets) - 1

    def __len__(self) -> int:
        return self.n_pairs

    def query(self, i: int) -> bytes:
        return self.query_bases[self.query_offsets[i]:self.query_offsets[i + 1]].tobytes()

    def target(self, i: int) -> bytes:
        return self.target_bases[self.target_offsets[i]:self.target_offsets[i + 1]].tobytes()

    def select(self: _Pairs, start: int, stop: int) -> _Pairs:
        """Pairs ``start:stop`` as a new packed set of the same type."""
        q0, q1 = int(self.query_offsets[start]), int(self.query_offsets[stop])
        t0, t1 = int(self.target_offsets[start]), int(self.target_offsets[stop])
        return type(self)(self.query_bases[q0:q1], self.query_offsets[start:stop + 1] - q0,
                          self.target_bases[t0:t1], self.target_offsets[start:stop + 1] - t0)

    @classmethod
    def from_arrays(cls: type[_Pairs], *, query_bases: object, query_offsets: object, target_bases: object,
                    target_offsets: object) -> _Pairs:
        pairs = cls(byte_array(query_bases, "query_bases"), int64_array(query_offsets, "query_offsets"),
                    byte_array(target_bases, "target_bases"), int64_array(target_offsets, "target_offsets"))
        pairs.validate()
        return pairs

    @classmethod
    def from_sequences(cls: type[_Pairs], pairs: Iterable[tuple[SequenceInput, SequenceInput]]) -> _Pairs:
        """Pack ``(query, target)`` pairs (str, bytes or uint8 arrays)."""
        queries, targets = [], []
        for i, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"pair {i}: expected (query, target), not {type(pair).__name__}")
            queries.append(sequence_bytes(pair[0], f"pair {i} query"))
            targets.append(sequence_bytes(pair[1], f"pair {i} target"))
        return cls.from_arrays(query_bases=concat(queries), query_offsets=offsets_of([len(q) for q in queries]),
                               target_bases=concat(targets), target_offsets=offsets_of([len(t) for t in targets]))

    def validate(self) -> None:
        """TypeError/ValueError naming the field: dtypes and the two offset arrays' lengths."""
        for name in ("query_bases", "target_bases"):
            check_array(getattr(self, name), name, np.uint8)
        for name in ("query_offsets", "target_offsets"):
            check_array(getattr(self, name), name, np.int64)
        if len(self.query_offsets) < 1:
            raise ValueError("query_offsets must hold n_pairs + 1 offsets")
        if len(self.target_offsets) != len(self.query_offsets):
            raise ValueError(f"target_offsets has {len(self.target_offsets)} entries but query_offsets has "
                             f"{len(self.query_offsets)}")
