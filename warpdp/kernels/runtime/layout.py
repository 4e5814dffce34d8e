"""The sections of a chunk's packed buffers: each starts on an ALIGN boundary."""
from __future__ import annotations

from collections.abc import Iterable

from .slots import round_up

__all__ = ["sections"]


def sections(sizes: Iterable[tuple[str, int]], start: int = 0, min_size: int = 0) -> tuple[dict[str, int], int]:
    """Offsets of the named sections laid out one after another from ``start`` (each takes at
    least ``min_size`` bytes), and the aligned end of the last one."""
    at: dict[str, int] = {}
    off = start
    for name, size in sizes:
        at[name] = off
        off = round_up(off + max(size, min_size))
    return at, off
