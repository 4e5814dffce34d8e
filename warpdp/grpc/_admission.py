"""Admission control: the server's memory budget for requests, from their receipt to their reply.

Every scoring request holds a :class:`Reservation` on the server's :class:`MemoryBudget` while
it is handled. Before its message is read (the unary methods are served as client streams of
one message, so that the server decides when a message is received) a call reserves what the
largest message would take while it is received and parsed; once read, the reservation is set
to the request's own estimate (:func:`request_cost`): its message, the copy decoding makes,
the copy coalescing may make, the arrays of a shared file, and its results with their copies
on the way out. A request that can never fit (larger than the whole budget) is refused at once;
one that does not fit now waits in line, first come first served, for a bounded time, then is
refused. Both answers are RESOURCE_EXHAUSTED with a message saying why.

The budget is only ever used from the server's event loop thread, so it takes no locks.
"""
from __future__ import annotations

import asyncio
import collections
import ctypes
import ctypes.util
import logging
import os
import re
from typing import Any


logger = logging.getLogger("warpdp.grpc")

# Copies of a message in memory while it is received: gRPC's buffers, the bytes handed to
# Python (built up, then copied once more) and the parsed message, plus one for slack: the
# peak RSS a large request adds is measured in BENCHMARKS.md ("Memory budget").
RECEIVE_COPIES = 5
# Copies of an admitted request's message: the received bytes, the arrays decoding takes out of
# them, the input of a coalesced submission, and the transient copies decoding makes. (Since
# _wire reads a message's arrays where they lie, decoding copies little: an upper bound, kept.)
MESSAGE_COPIES = 4
# Copies of a request's results: the backend's rows, the reply's arrays, the reply message and
# its serialized bytes (now the rows and the serialized bytes: an upper bound, kept).
RESULT_COPIES = 4
# Default budget: half the memory available when the server starts, at most this much.
DEFAULT_BUDGET_CAP = 32 << 30
# The default never goes below this (a small machine still serves a few full-size messages).
DEFAULT_BUDGET_FLOOR = 1 << 30

_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(text: str) -> int:
    """A byte count with an optional binary suffix: "1073741824", "512M", "4G", "1.5GiB" (K = 1024)."""
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", text.lower())
    if not found:
        raise ValueError(f"not a byte count: {text!r} (e.g. 4G, 512M, 1073741824)")
    number = float(found.group(1)) * _SUFFIXES.get(found.group(2), 1)
    if number < 1:
        raise ValueError(f"a byte count must be at least 1: {text!r}")
    return int(number)


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo (bytes), else free pages; None when unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def default_memory_budget() -> int:
    """Half the memory available now, within [DEFAULT_BUDGET_FLOOR, DEFAULT_BUDGET_CAP]."""
    available = available_memory()
    if available is None:
        return DEFAULT_BUDGET_FLOOR
    return max(DEFAULT_BUDGET_FLOOR, min(available // 2, DEFAULT_BUDGET_CAP))


def receive_bytes(max_message_bytes: int) -> int:
    """What a call reserves before its message is read (the largest message being received)."""
    return RECEIVE_COPIES * max_message_bytes


def _pairs_in_message(algorithm: Any, request: Any, packed: Any = None) -> int | None:
    """Pairs of a request, counted from its message's offsets without decoding it (None when
    the fields are malformed: decoding refuses the request then). ``packed``: its packed
    input's arrays when they were read out of the message."""
    try:
        return algorithm.pairs_in_message(getattr(request, algorithm.packed_field) if packed is None else packed)
    except (ValueError, OverflowError):
        return None


def _pairs_in_shared_file(algorithm: Any, sizes: list[int], max_pairs: int) -> int:
    """An upper bound of a shared file's pairs from its arrays' sizes (the file is not read yet)."""
    fields = [field.name for field in algorithm.packed_message.DESCRIPTOR.fields]
    return min(algorithm.pairs_in_sizes(dict(zip(fields, sizes))), max_pairs)


def request_cost(algorithm: Any, request: Any, message: int, max_message_bytes: int, packed: Any = None) -> int:
    """Estimated peak bytes of server memory a received request (of `message` bytes on the
    wire) takes until it is answered (``packed``: its packed input's arrays when they were read
    out of the message).

    Results over the reply limit are refused after decoding, so max_message_bytes bounds them.
    """
    max_pairs = max_message_bytes // algorithm.reply_bytes_per_pair
    if request.HasField("shared_file"):
        sizes = [int(s) for s in request.shared_file.sizes]
        # The file's arrays are read into server memory (a request of a shared file is never
        # coalesced, so no further copy); more than the message limit is refused on reading.
        inputs = message + min(sum(sizes), max_message_bytes)
        pairs = _pairs_in_shared_file(algorithm, sizes, max_pairs)
    else:
        inputs = MESSAGE_COPIES * message
        counted = _pairs_in_message(algorithm, request, packed)
        pairs = max_pairs if counted is None else min(counted, max_pairs)
    return inputs + RESULT_COPIES * algorithm.reply_bytes_per_pair * pairs


class AdmissionRefused(Exception):
    """The budget cannot take a request (now, or ever); the message says which and why."""


class MemoryBudget:
    """Bytes the requests being handled may hold, and the line of those waiting for room."""

    def __init__(self, limit: int, metrics: Any = None, executor: Any = None) -> None:
        self.limit = limit
        self._executor = executor  # where malloc_trim runs (off the event loop)
        self.used = 0
        self.peak = 0
        self._metrics = metrics
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()
        self._released_since_trim = 0
        self._trim = _malloc_trim()
        self.trims = 0

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def acquire(self, nbytes: int, wait_s: float, what: str, first: bool = False,
                      total: int | None = None) -> None:
        """Reserve nbytes more for a request that then holds `total` bytes (default nbytes),
        waiting up to wait_s seconds for room; AdmissionRefused otherwise. ``first``: go ahead
        of the line (a request already admitted that needs more)."""
        total = nbytes if total is None else total
        if nbytes <= 0:
            return
        if total > self.limit:
            self._refused("too_large")
            raise AdmissionRefused(
                f"{what} needs about {total} bytes of server memory, more than this server's whole memory "
                f"budget of {self.limit} bytes (warpdp serve --memory-budget); split it into smaller requests")
        if (first or not self._waiting) and self.used + nbytes <= self.limit:
            self._take(nbytes)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (nbytes, waiter)
        if first:
            self._waiting.appendleft(entry)
        else:
            self._waiting.append(entry)
        try:
            await asyncio.wait((waiter,), timeout=max(0.0, wait_s))
        except asyncio.CancelledError:
            self._leave(entry)
            raise
        if not waiter.done():
            self._leave(entry)
            self._refused("busy")
            raise AdmissionRefused(
                f"the server is busy: {what} needs about {total} bytes of server memory and waited {wait_s:.3g} s "
                f"for room in its memory budget of {self.limit} bytes ({self.used} bytes held by requests in "
                f"progress); retry later or on another server")

    def release(self, nbytes: int, freed: bool = True) -> None:
        """Give back nbytes; ``freed=False`` when they were reserved but never allocated (an
        estimate cut down), so they do not count towards the next malloc_trim."""
        if nbytes <= 0:
            return
        self.used -= nbytes
        if freed:
            self._released_since_trim += nbytes
        self._admit_waiting()
        if self.used == 0 and not self._waiting:
            self._maybe_trim()

    def _take(self, nbytes: int) -> None:
        self.used += nbytes
        self.peak = max(self.peak, self.used)

    def _leave(self, entry: tuple[int, asyncio.Future[None]]) -> None:
        nbytes, waiter = entry
        if waiter.done():  # admitted just as it gave up: hand the bytes back
            self.release(nbytes)
            return
        waiter.cancel()
        self._waiting.remove(entry)
        self._admit_waiting()  # those behind it may fit now

    def _admit_waiting(self) -> None:
        while self._waiting and self.used + self._waiting[0][0] <= self.limit:
            nbytes, waiter = self._waiting.popleft()
            self._take(nbytes)
            waiter.set_result(None)

    def _refused(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.admission_refused.labels(reason).inc()

    def _maybe_trim(self) -> None:
        # The budget has gone idle after work that freed much memory: glibc keeps freed memory
        # in its arenas (RSS stays high after a burst) unless asked to give it back.
        if self._trim is None or self._released_since_trim < _TRIM_AFTER_BYTES:
            return
        self._released_since_trim = 0
        self.trims += 1
        try:
            asyncio.get_running_loop().run_in_executor(self._executor, self._trim, 0)
        except RuntimeError:  # no running loop (a test using the budget directly)
            self._trim(0)


class Reservation:
    """One request's bytes on the budget; :meth:`resize` up (may wait) or down, then :meth:`release`."""

    __slots__ = ("budget", "held")

    def __init__(self, budget: MemoryBudget) -> None:
        self.budget = budget
        self.held = 0

    async def resize(self, nbytes: int, wait_s: float, what: str) -> None:
        if nbytes <= self.held:
            # Shrinking from what a message being received might have needed: nothing was freed.
            self.budget.release(self.held - nbytes, freed=False)
            self.held = nbytes
            return
        # An admitted request that needs more goes ahead of those not yet admitted.
        await self.budget.acquire(nbytes - self.held, wait_s, what, first=self.held > 0, total=nbytes)
        self.held = nbytes

    def release(self) -> None:
        self.budget.release(self.held)
        self.held = 0


# Memory freed since the last trim that makes the next idle moment worth a malloc_trim.
_TRIM_AFTER_BYTES = 64 << 20


def _malloc_trim() -> Any:
    """glibc's malloc_trim, or None where there is none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim
