"""The large `bytes` fields of warpdp.v1 messages in protobuf's wire format, written straight
from numpy arrays and read as views of the received bytes.

Building a message object from arrays and serializing it copies each array five times (its
tobytes(), the message's copy, the parent message's copy of the nested one, which the protobuf
library makes by serializing and parsing it, the serialized bytes); parsing it and reading its
fields, twice more. Here an array is copied once on the way out, into the serialized message,
and read where it lies on the way in (BENCHMARKS.md, "gRPC message path: copies"). The small fields (parameters,
counts, CallStats, a SharedFile) still go through the protobuf library: a message's fields may
come in any order, so its serialization followed by the encoded arrays is one valid message.

Reading takes only what protobuf's own parser would read the same way (each array field at
most once, with its wire type, inside the message); anything else (a field repeated, an unknown
field among the arrays, a malformed varint, a truncated field) is parsed by the protobuf library
as before, with the same result or error.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

_LENGTH_DELIMITED = 2
_MAX_TAG = 0xFFFFFFFF  # protobuf's tags are 32-bit


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _header(number: int, length: int) -> bytes:
    """The tag and length of a length-delimited field."""
    return _varint(number << 3 | _LENGTH_DELIMITED) + _varint(length)


def _field_pieces(fields: Iterable[tuple[int, np.ndarray]]) -> tuple[list[Any], int]:
    """Headers and data of `bytes` fields (field number, C-contiguous array), empty ones left out
    as proto3 leaves them out, and their total size in bytes."""
    pieces: list[Any] = []
    size = 0
    for number, array in fields:
        data = memoryview(array).cast("B")
        if len(data):
            header = _header(number, len(data))
            pieces += (header, data)
            size += len(header) + len(data)
    return pieces, size


def encode(message: Any, arrays: dict[str, np.ndarray]) -> bytes:
    """The serialized message with these `bytes` fields (name -> C-contiguous array) set too."""
    fields = type(message).DESCRIPTOR.fields_by_name
    pieces, _ = _field_pieces((fields[name].number, array) for name, array in arrays.items())
    return b"".join([message.SerializeToString(), *pieces])


def encode_nested(message: Any, field: str, arrays: dict[str, np.ndarray]) -> bytes:
    """The serialized message whose message field `field` holds exactly these `bytes` fields
    (name -> C-contiguous array); the field is set (present) even when they are all empty."""
    descriptor = type(message).DESCRIPTOR.fields_by_name[field]
    nested = descriptor.message_type.fields_by_name
    pieces, size = _field_pieces((nested[name].number, array) for name, array in arrays.items())
    return b"".join([message.SerializeToString(), _header(descriptor.number, size), *pieces])


def serialize(message: Any) -> bytes:
    """A serializer for gRPC: bytes from :func:`encode` as they are, a message serialized."""
    return message if type(message) is bytes else message.SerializeToString()


# -- reading ---------------------------------------------------------------------------------


def _read_varint(data: bytes, at: int, end: int, max_bytes: int = 10) -> tuple[int, int] | None:
    value = shift = 0
    while at < end and shift < 7 * max_bytes:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
    return None


class _Record(NamedTuple):
    number: int
    wire_type: int
    start: int   # of the tag
    value: int   # of the value (after a length-delimited field's length)
    end: int


def _records(data: bytes, start: int, end: int) -> list[_Record] | None:
    """The fields of data[start:end] (None unless they are well formed, without groups)."""
    records = []
    at = start
    while at < end:
        # Tags and lengths longer than 5 bytes are corrupt to protobuf's parser (upb): left to it.
        tag = _read_varint(data, at, end, max_bytes=5)
        if tag is None or tag[0] > _MAX_TAG or tag[0] >> 3 == 0:
            return None
        (tag_value, value) = tag
        wire_type = tag_value & 7
        if wire_type == 0:
            read = _read_varint(data, value, end)
            if read is None:
                return None
            after = read[1]
        elif wire_type == 1 or wire_type == 5:
            after = value + (8 if wire_type == 1 else 4)
        elif wire_type == _LENGTH_DELIMITED:
            read = _read_varint(data, value, end, max_bytes=5)
            if read is None or read[0] >= 1 << 31:
                return None
            length, value = read
            after = value + length
        else:  # groups, or no wire type at all
            return None
        if after > end:
            return None
        records.append(_Record(tag_value >> 3, wire_type, at, value, after))
        at = after
    return records


class ArrayFields:
    """How a request's packed input (its message field ``nested``, whose fields are all `bytes`)
    is read as views of the received bytes. ``aligned``: fields that hold int64 values, copied
    when the message has them at an address that is not 8-byte aligned, since an unaligned view
    would reach the kernels; the others (bases, qualities) are used where they lie."""

    def __init__(self, message_type: type, nested: str, aligned: Sequence[str]) -> None:
        self.message_type = message_type
        field = message_type.DESCRIPTOR.fields_by_name[nested]
        self.nested_number = field.number
        self.by_number = {f.number: f.name for f in field.message_type.fields}
        self.names = list(self.by_number.values())
        # Otherwise the protobuf library reads every request (the field in a oneof, or not all bytes).
        self.usable = field.containing_oneof is None and all(
            f.type == FieldDescriptor.TYPE_BYTES for f in field.message_type.fields)
        self.aligned = frozenset(aligned)

    def parse(self, data: bytes) -> tuple[Any, SimpleNamespace | None]:
        """The message of data, and its packed input's arrays as read-only uint8 arrays by
        field name (None: they are in the message, which the protobuf library parsed whole)."""
        split = self._split(data) if self.usable else None
        if split is not None:
            rest, arrays = split
            try:
                return self.message_type.FromString(rest), arrays
            except DecodeError:  # the other fields are malformed: parsing it whole says how
                pass
        return self.message_type.FromString(data), None

    def _split(self, data: bytes) -> tuple[bytes, SimpleNamespace] | None:
        """data without its packed input, and that input's arrays; None unless the packed
        input is there once, each of its fields at most once with its wire type (as protobuf
        reads it then: nothing merged, nothing unknown kept)."""
        records = _records(data, 0, len(data))
        if records is None:
            return None
        outer = [r for r in records if r.number == self.nested_number]
        if len(outer) != 1 or outer[0].wire_type != _LENGTH_DELIMITED:
            return None
        inner = _records(data, outer[0].value, outer[0].end)
        if inner is None or any(r.number not in self.by_number or r.wire_type != _LENGTH_DELIMITED for r in inner):
            return None
        if len({r.number for r in inner}) != len(inner):
            return None
        arrays = dict.fromkeys(self.names, _EMPTY)
        for record in inner:
            name = self.by_number[record.number]
            view = np.frombuffer(data, dtype=np.uint8, count=record.end - record.value, offset=record.value)
            if name in self.aligned and view.ctypes.data % 8:
                view = view.copy()
            arrays[name] = view
        rest = b"".join(data[r.start:r.end] for r in records if r is not outer[0])
        return rest, SimpleNamespace(**arrays)


_EMPTY = np.zeros(0, dtype=np.uint8)
_EMPTY.flags.writeable = False
