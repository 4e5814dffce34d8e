"""What the handlers share about one call: failures to answer with, corrupt messages, the
stream's queued work, the periodic log line."""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, NamedTuple

import grpc
import numpy as np
from google.protobuf.message import DecodeError

from ..kernels.runtime.slots import pinned_empty
from ._admission import AdmissionRefused
from ._batcher import Batcher, WorkItem
from ._wire import ArrayFields

logger = logging.getLogger("warpdp.grpc")


def _page_locked_or_plain(nbytes: int) -> np.ndarray:
    """Memory for a GPU kernel's shared-file read: page-locked, or plain memory (slower to
    upload, as right) when CUDA cannot give more."""
    try:
        return pinned_empty(nbytes)
    except Exception as exc:  # CuPy's out-of-memory and CUDA errors have no common base
        logger.warning("no page-locked memory for a shared file of %d bytes (%s); using plain memory", nbytes, exc)
        return np.empty(nbytes, dtype=np.uint8)


class _Stream:
    """A stream call's chunks in flight. ``items``: those in the batcher and not yet answered;
    ``over`` is set when the stream ends: its queued chunks are then cancelled, and a chunk
    queued afterwards (by a thread that was decoding it) is cancelled at once by that thread.
    ``room`` bounds the chunks read and not yet answered (the stream window); ``entries``
    passes them, in order, from the reader task to the replying side; ``held``: their
    reservations on the memory budget not yet released."""

    END = object()  # the entry after the last chunk

    def __init__(self, window: int) -> None:
        self.items: set[WorkItem] = set()
        self.over = False
        self.room = asyncio.Semaphore(window)
        self.entries: asyncio.Queue[Any] = asyncio.Queue()
        self.held: set[Any] = set()


class _RpcFailure(Exception):
    """A status to answer with; raised inside handlers, turned into context.abort at the top."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class _Received(NamedTuple):
    """A received request message: the message, its size on the wire, and its packed input's
    arrays as views of the received bytes (None: they are in the message)."""

    request: Any
    nbytes: int
    packed: SimpleNamespace | None


def _sized(reader: ArrayFields) -> Callable[[bytes], _Received]:
    """A request deserializer that also gives the message's size (ByteSize() would take
    milliseconds to compute it again on a large message) and reads the packed input's arrays
    where they lie (see _wire). It never raises: grpc answers UNKNOWN when a deserializer does,
    so corrupt bytes come back as a _CorruptRequest, which the handler answers with
    INVALID_ARGUMENT."""
    def sized(data: bytes) -> _Received:
        try:
            request, packed = reader.parse(data)
        except DecodeError as exc:
            return _Received(_CorruptRequest(f"{type(exc).__name__}: {exc}"), len(data), None)
        return _Received(request, len(data), packed)

    return sized


def _check_parsed(request: Any, method: str, prefix: str) -> None:
    if isinstance(request, _CorruptRequest):
        raise _RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{prefix}corrupt {method} request message ({request.error})")


def out_of_memory_message(exc: MemoryError) -> str:
    """What a caller is told of a MemoryError: a kernel's own refusal of a too-large job (a
    subclass, e.g. align's traceback bound) says why; a plain one that memory ran out."""
    if type(exc) is not MemoryError:
        return str(exc)
    return "the server ran out of memory handling this request; retry later, or split it"


def _failure_status(method: str, exc: Exception) -> tuple[grpc.StatusCode, str]:
    """The status answering an exception: an _RpcFailure's own, or the one for an exception a
    handler did not expect to handle itself."""
    if isinstance(exc, _RpcFailure):
        return exc.code, exc.message
    if isinstance(exc, AdmissionRefused):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc)
    if isinstance(exc, MemoryError):
        if type(exc) is MemoryError:
            logger.warning("%s: out of memory (%s)", method, exc)
        return grpc.StatusCode.RESOURCE_EXHAUSTED, out_of_memory_message(exc)
    logger.exception("%s failed", method)  # a bug: answer INTERNAL, keep serving
    return grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}"


class _CallStats:
    """Counts for the one-line log every N requests."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.lock = threading.Lock()
        self.reset(time.monotonic())

    def reset(self, now: float) -> None:
        self.since, self.count, self.errors, self.cells, self.latency_sum, self.latency_max = now, 0, 0, 0, 0.0, 0.0

    def add(self, ok: bool, cells: int, latency: float, batcher: Batcher) -> None:
        if self.every <= 0:
            return
        with self.lock:
            self.count += 1
            self.errors += not ok
            self.cells += cells
            self.latency_sum += latency
            self.latency_max = max(self.latency_max, latency)
            if self.count < self.every:
                return
            now = time.monotonic()
            span = max(now - self.since, 1e-9)
            logger.info("%d requests in %.1f s (%d errors): %.1f req/s, %.2f GCUPS, latency mean %.1f ms max %.1f ms; "
                        "%d submissions so far, %d queued, %d dropped",
                        self.count, span, self.errors, self.count / span, self.cells / span / 1e9,
                        1e3 * self.latency_sum / self.count, 1e3 * self.latency_max,
                        batcher.submissions, batcher.queued, batcher.dropped)
            self.reset(now)


class _CorruptRequest(NamedTuple):
    """What a request deserializer returns for bytes that are not a valid message."""

    error: str
