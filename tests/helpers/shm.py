"""What the shared-memory tests and their user processes share about memfds."""
from __future__ import annotations

import fcntl
import os

import numpy as np


ALL_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW


def sealed_memfd(data: bytes, room: int = 0, seals: int = ALL_SEALS) -> int:
    """A memfd holding data and room more zero bytes, with these seals (what a client registers)."""
    fd = os.memfd_create("warpdp-test", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, len(data) + room)
    os.pwrite(fd, data, 0)
    if seals:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def job_bytes(arrays) -> bytes:
    return b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)
