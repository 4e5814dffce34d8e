"""Copies of packed input arrays into the GPU launchers' pinned host buffers.

One thread copies host memory well below the pinned-to-device transfer rate, eight threads come
close to it (BENCHMARKS.md, the table at the top), so a chunk's copies are shared out: the bytes
of all its arrays are cut into one contiguous share per thread, the calling thread takes the
first share itself, and pool threads the others (numpy releases the GIL while it copies plain
arrays).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["copy_arrays"]

PARALLEL_FROM_BYTES = 16 << 20  # below this one thread copies: waking the pool threads costs more
SHARE_BYTES = 1 << 20           # no thread gets less than this
MAX_THREADS = 8                 # more hardly add bandwidth on the GPU machine's host

_THREADS = max(1, min(MAX_THREADS, len(os.sched_getaffinity(0))))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()

Copy = tuple[np.ndarray, np.ndarray]


def _copy_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, _THREADS - 1), thread_name_prefix="warpdp-copy")
        return _pool


def _run(share: list[Copy]) -> None:
    for dst, src in share:
        np.copyto(dst, src)


def _shares(copies: Sequence[Copy], n_shares: int, total: int) -> list[list[Copy]]:
    """The copies cut into n_shares runs of about total / n_shares bytes each."""
    per = -(-total // n_shares)
    shares: list[list[Copy]] = [[]]
    room = per
    for dst, src in copies:
        dst, src = dst.reshape(-1), src.reshape(-1)
        start, n = 0, len(src)
        while start < n:
            take = min(n - start, max(1, room // src.itemsize))
            shares[-1].append((dst[start:start + take], src[start:start + take]))
            start += take
            room -= take * src.itemsize
            if room <= 0 and len(shares) < n_shares:
                shares.append([])
                room = per
    return [share for share in shares if share]


def copy_arrays(copies: Sequence[Copy], parallel_from_bytes: int | None = None) -> None:
    """``dst[:] = src`` for every (dst, src) pair of equal-shape contiguous arrays, totals of
    ``parallel_from_bytes`` (default PARALLEL_FROM_BYTES) or more spread over threads."""
    total = sum(src.nbytes for _, src in copies)
    n_shares = min(_THREADS, total // SHARE_BYTES)
    threshold = PARALLEL_FROM_BYTES if parallel_from_bytes is None else parallel_from_bytes
    if total < threshold or n_shares < 2:
        _run(list(copies))
        return
    first, *rest = _shares(copies, n_shares, total)
    futures = [_copy_pool().submit(_run, share) for share in rest]
    _run(first)
    for future in futures:
        future.result()
