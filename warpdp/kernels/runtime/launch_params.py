"""Launch structs as numpy structured dtypes.

A kernel reads its launch parameters from a struct in device memory that the host writes into
the chunk's pinned upload. Declaring the struct as a dtype with C alignment (``align=True``)
lets the launcher fill it by field name, and the module cache compares the dtype's itemsize
with the struct's ``sizeof`` as the compiled module reports it, so a struct changed on one
side only fails at load instead of corrupting launches.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

__all__ = ["POINTER", "launch_struct", "struct_rows", "set_row", "check_struct_sizes"]

POINTER = np.uint64  # a device address


def launch_struct(fields: Sequence[tuple[str, object] | tuple[str, object, int]]) -> np.dtype:
    """The dtype of a C struct whose fields are (name, scalar type[, array length]), in
    declaration order; offsets and trailing padding follow the C rules."""
    return np.dtype([tuple(field) for field in fields], align=True)


def struct_rows(blob: np.ndarray, offset: int, dtype: np.dtype, count: int, stride: int | None = None) -> np.ndarray:
    """``count`` structs of ``dtype`` over the uint8 array ``blob`` from ``offset``, one every
    ``stride`` bytes (default: packed); writing the rows writes the blob."""
    stride = dtype.itemsize if stride is None else stride
    if stride < dtype.itemsize:
        raise ValueError(f"stride {stride} is below the struct's {dtype.itemsize} bytes")
    if count and offset + stride * (count - 1) + dtype.itemsize > blob.nbytes:
        raise ValueError("the structs run past the end of the buffer")
    return np.ndarray((count,), dtype=dtype, buffer=blob, offset=offset, strides=(stride,))


def set_row(rows: np.ndarray, index: int, values: dict[str, object]) -> None:
    """Write struct ``index`` of ``rows`` from ``values``, which names every field (KeyError
    otherwise). One assignment of the whole record: field by field costs several times more,
    and launchers fill rows on the way to every launch."""
    names = rows.dtype.names
    in_order = _IN_ORDER.get(names)
    if in_order is None:
        in_order = _IN_ORDER.setdefault(names, operator.itemgetter(*names))
    if len(values) != len(names):
        raise KeyError(f"no field or no value for {sorted(set(names) ^ set(values))}")
    rows[index] = in_order(values)


_IN_ORDER: dict[tuple[str, ...], operator.itemgetter] = {}  # a struct's values in field order


def check_struct_sizes(family: str, dtypes: dict[str, np.dtype], reported: Sequence[int]) -> None:
    """Raise RuntimeError unless the compiled sizes (in the order of ``dtypes``) are the dtypes'."""
    wrong = [f"{name}: the device says {size} bytes, the launcher writes {dtype.itemsize}"
             for (name, dtype), size in zip(dtypes.items(), reported) if int(size) != dtype.itemsize]
    if len(reported) != len(dtypes) or wrong:
        raise RuntimeError(f"{family}: launch structs out of step with the CUDA source: "
                           + ("; ".join(wrong) or f"{len(reported)} sizes for {len(dtypes)} structs"))
