"""A client's stream of chunks: taken one at a time from a plan (_ChunkFeed), and, on the
same host, handed over in memfds written ahead of sending (_SharedChunks)."""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from . import _shm_client, warpdp_pb2
from ._algorithm import Algorithm

# Chunks written to shared memory but not yet answered, per stream: bounds the memfds in use.
# A GPU server runs three at once (its workers); three more are written, read and queued
# meanwhile.
_SHARED_IN_FLIGHT = 6


class _SharedFilesUnusable(Exception):
    """Shared memory cannot carry this client's requests (the job is then sent in messages)."""


class _ChunkFeed:
    """A stream's chunks taken one at a time, in order, from a list or a lazy plan, with the
    output pairs each covers (``ranges``). ``count`` is known from the moment the last chunk
    is taken (one chunk is cut ahead), so the last reply can be recognised as such."""

    _END = object()

    def __init__(self, algorithm: Algorithm, chunks: Iterable[Any], first_pair: int) -> None:
        self.algorithm = algorithm
        self._chunks = iter(chunks)
        self._next = next(self._chunks, self._END)
        if self._next is self._END:
            raise ValueError("a stream needs at least one chunk")
        self.ranges: list[tuple[int, int]] = []
        self.count: int | None = None
        self._first_pair = first_pair

    def take(self) -> tuple[int, Any] | None:
        """The next chunk and its index; None after the last."""
        chunk = self._next
        if chunk is self._END:
            return None
        self._next = next(self._chunks, self._END)
        start = self.ranges[-1][1] if self.ranges else self._first_pair
        self.ranges.append((start, start + self.algorithm.n_pairs(chunk)))
        if self._next is self._END:
            self.count = len(self.ranges)
        return len(self.ranges) - 1, chunk


class _SharedChunks:
    """A stream's chunks handed over in memfds of the pool: each written (and its request
    queued) ahead of sending, at most _SHARED_IN_FLIGHT of them unanswered, since writing
    every chunk at once would need a memfd each."""

    def __init__(self, algorithm: Algorithm, key: Any, pool: _shm_client.SharedFilePool) -> None:
        self.algorithm, self.key, self.pool = algorithm, key, pool
        self.feed: _ChunkFeed | None = None
        # chunk -> its memfd and where the server writes its results, until answered
        self.in_files: dict[int, tuple[_shm_client.SharedFile, int]] = {}
        self.write_errors: list[OSError] = []
        self.plan_errors: list[Exception] = []
        self.room = threading.Semaphore(_SHARED_IN_FLIGHT)
        self.ended = threading.Event()
        self.written: queue.SimpleQueue[Any] = queue.SimpleQueue()  # requests ready to send; None ends them
        self.writer: threading.Thread | None = None

    def start(self, feed: _ChunkFeed) -> None:
        """Write the first chunk here, the others on a thread of their own."""
        self.feed = feed
        if self.write() and feed.count != 1:
            self.writer = threading.Thread(target=self.write_rest, name="warpdp-shared-writer", daemon=True)
            self.writer.start()
        else:
            self.written.put(None)

    def write(self) -> bool:
        """Write the next chunk's memfd and queue its request; False when the stream must end."""
        self.room.acquire()
        if self.ended.is_set():
            return False
        try:
            taken = self.feed.take()  # type: ignore[union-attr]
        except Exception as exc:  # a piece that cannot be cut (ValueError): the job fails
            self.plan_errors.append(exc)
            return False
        if taken is None:
            return False
        index, chunk = taken
        algorithm = self.algorithm
        # The results come back in the memfd too: gRPC's message path is slow for megabytes.
        # Room for the family's bound (ragged results: their size is known only once computed).
        reply_bytes = algorithm.reply_bound(chunk, self.key)
        try:
            shared, sizes, reply_offset = self.pool.acquire(list(algorithm.wire_arrays(chunk).values()), reply_bytes)
        except OSError as exc:  # e.g. out of memory, or the server refused it: end the stream here
            self.write_errors.append(exc)
            return False
        self.in_files[index] = (shared, reply_offset)
        self.written.put(algorithm.request(chunk, self.key, warpdp_pb2.SharedFile(
            handle=shared.handle, sizes=sizes, reply_offset=reply_offset)))
        return True

    def write_rest(self) -> None:
        try:
            while self.write():
                pass
        finally:
            self.written.put(None)

    def requests(self) -> Iterator[Any]:
        while (request := self.written.get()) is not None:
            yield request

    def answered(self, index: int) -> None:
        """A chunk's reply is in, so the server has read its memfd: it goes back to the pool."""
        if index in self.in_files:
            self.pool.release(self.in_files.pop(index)[0])
            self.room.release()

    def close(self) -> None:
        self.ended.set()
        self.written.put(None)  # ends the requests of a call whose chunks stopped early
        self.room.release(_SHARED_IN_FLIGHT + 1)  # a writer still waiting for room returns
        if self.writer is not None:
            self.writer.join()  # it adds no file after this
        for index in list(self.in_files):  # unanswered: the server may still write into them
            self.pool.discard(self.in_files.pop(index)[0])

    def raise_errors(self) -> None:
        if self.plan_errors:
            raise self.plan_errors[0]
        if self.write_errors:
            raise _SharedFilesUnusable(f"cannot hand a memfd to the server: {self.write_errors[0]}")
