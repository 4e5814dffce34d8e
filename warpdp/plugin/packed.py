"""Kept so that imports of this path keep working: the code lives in
:mod:`warpdp.plugin.core.packed`."""
from .core.packed import (
    INT64_MAX,
    MAX_SEQUENCE_LENGTH,
    SequenceInput,
    byte_array,
    check_array,
    check_int,
    check_offset_ends,
    check_offset_steps,
    check_offsets,
    concat,
    int64_array,
    offsets_of,
    sequence_bytes,
)

__all__ = [
    "INT64_MAX", "MAX_SEQUENCE_LENGTH", "SequenceInput", "byte_array", "check_array", "check_int",
    "check_offset_ends", "check_offset_steps", "check_offsets", "concat", "int64_array",
    "offsets_of", "sequence_bytes",
]
