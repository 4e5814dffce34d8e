"""The server half of same-host shared memory (``SharedFile`` in warpdp.proto).

A client on the server's host puts a large request's arrays into a memfd of its own, hands
the descriptor over the server's Unix socket (:class:`Registry`, protocol in
:mod:`._shm_protocol`) and then sends only the handle it got back and the arrays' sizes.
Tens of megabytes then cost a memory copy instead of a trip through gRPC's message path,
which on the GPU backend took longer than the scoring itself.

What the server trusts (see docs/grpc.md, "Same-host transfer"): only memory that the
calling process handed over itself. There are no names to guess: a handle is a 128-bit
secret bound to the descriptor received on one connection, and everything registered over a
connection is closed when it closes (a killed client leaves nothing behind). A registered
descriptor must be a memfd sealed against shrinking and growing, so no mapping of it can
fault past its end (no SIGBUS), and the server writes results only inside it. The client can
still change its memory at any time, so the server copies every array that addresses memory
(the offsets) into its own memory before it checks them and uses only those copies; the bulk
arrays (bases, qualities) may be used in place, where any byte value is safe (the kernels
mask qualities to their tables' 128 entries and map any byte to a base code).

The server reads the arrays into its own memory while it decodes the request (a GPU server:
page-locked memory, which the GPU copies from directly). A GPU server whose launcher never
reads the input on the host (the Pair-HMM's) instead keeps a read-only, page-locked mapping of
each memfd (:class:`MappedFiles`): the GPU copies the bulk arrays straight from the client's
pages, and only the offsets are read into server memory.

Results can come back the same way (``SharedFile.reply_offset``): the client leaves room for
them after the arrays, and the server writes them there with one ``pwritev`` before it
answers (:func:`write_results`), instead of sending them through gRPC's slow message path
(figures in BENCHMARKS.md).
"""
from __future__ import annotations

import logging
import mmap
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import grpc
import numpy as np

from ._shm_registry import (  # noqa: F401 (re-exported: the server's shared-memory names, in one place)
    MAX_CONNECTIONS, MAX_FDS, MAX_FDS_PER_CONNECTION, Region, Registry, SharedFileRejected, check_memfd,
    check_reply_offset, is_local_peer)

# Buffers one preadv() call fills at most (Linux's IOV_MAX); it moves at most 2 GiB - 4 KiB.
_IOV_MAX = 1024
# A request's arrays are read by up to _READ_THREADS threads (no more than the cores this
# process may run on), each taking at least _READ_PART_BYTES: below that, handing a part to a
# thread costs more than reading it (BENCHMARKS.md, C/C++ section).
_READ_THREADS = 4
_READ_PART_BYTES = 4 << 20
_CORES = len(os.sched_getaffinity(0))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # map the pages at once, not at first touch
# A GPU server keeps page-locked mappings of memfds (MappedFiles) up to this many bytes in
# all, drops one unused this long, and checks them every _SWEEP_S seconds.
MAPPED_BYTES = 1 << 30
MAPPED_IDLE_S = 60.0
_SWEEP_S = 1.0
logger = logging.getLogger("warpdp.grpc")


def _check_sizes(region: Region, sizes: Sequence[int], fields: Sequence[str], max_bytes: int) -> int:
    """The arrays' total bytes after checking the sizes against the fields, max_bytes and the memfd."""
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    if len(sizes) != len(fields):
        raise SharedFileRejected(invalid, f"invalid shared_file.sizes: {len(sizes)} sizes for the {len(fields)} "
                                          f"arrays {', '.join(fields)}")
    total = sum(int(size) for size in sizes)
    if total > max_bytes:
        raise SharedFileRejected(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                 f"the shared memory's arrays hold {total} bytes, over this server's message limit "
                                 f"of {max_bytes} bytes; split the request")
    if total > region.size:
        raise SharedFileRejected(invalid, f"invalid shared_file.sizes: they add up to {total} bytes but the shared "
                                          f"memory holds {region.size}")
    return total


def read_arrays(region: Region, sizes: Sequence[int], fields: Sequence[str], max_bytes: int,
                empty: Callable[[int], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The arrays of a request's shared memory as uint8 arrays in server memory, by field
    name, all in one buffer from ``empty(nbytes)`` (a GPU server reads into page-locked memory).

    Raises SharedFileRejected: INVALID_ARGUMENT for sizes that do not match the fields or
    add up to more than the memfd holds; RESOURCE_EXHAUSTED over max_bytes.
    """
    total = _check_sizes(region, sizes, fields, max_bytes)
    # Each array starts 8-byte aligned in server memory, so int64 views need no copy.
    starts = np.concatenate([[0], np.cumsum([(int(size) + 7) // 8 * 8 for size in sizes])])
    buffer = (empty or _empty_bytes)(int(starts[-1]))
    arrays = {name: buffer[start:start + int(size)] for name, size, start in zip(fields, sizes, starts)}
    # The memfd holds the arrays back to back. One thread reads slower than a GPU scores, so
    # large requests are read in parts by several threads at once.
    joined = [a for a in arrays.values() if len(a)]
    parts = min(_READ_THREADS, _CORES, total // _READ_PART_BYTES)
    try:
        if parts < 2:
            _read_range(region, joined, 0, total)
        else:
            bounds = [total * k // parts for k in range(parts + 1)]
            list(_read_pool().map(lambda k: _read_range(region, joined, bounds[k], bounds[k + 1]), range(parts)))
    except OSError as exc:
        raise SharedFileRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"shared file unusable: cannot read the shared memory: {exc.strerror}") from None
    return arrays


def write_results(region: Region, offset: int, arrays: Sequence[np.ndarray]) -> bool:
    """Write the arrays back to back into a request's memfd from byte ``offset`` (see
    SharedFile.reply_offset). False, with nothing written, when the client handed it over
    read-only (or sealed against writes), or it has no room for them: the server then
    answers in the message."""
    buffers = [memoryview(np.ascontiguousarray(a)).cast("B") for a in arrays if a.nbytes]
    nbytes = sum(len(b) for b in buffers)
    if not region.writable or offset + nbytes > region.size:
        return False
    try:
        # One system call for all of them: each gives the interpreter lock up (see _read_range).
        while buffers:
            done = os.pwritev(region.fd, buffers[:_IOV_MAX], offset)
            if done == 0:
                return False
            offset += done
            while buffers and done >= len(buffers[0]):
                done -= len(buffers.pop(0))
            if done:
                buffers[0] = buffers[0][done:]
        return True
    except OSError:
        return False


class MappedFiles:
    """A GPU server's read-only, page-locked mappings of clients' memfds, kept from request to
    request, for a launcher that never reads its input on the host.

    A client reuses its memfds, so each is mapped and page-locked once (``register(address,
    nbytes)``, which returns the function that unregisters it; it takes longer than reading
    the arrays) and the GPU then copies every later request's arrays straight from
    the client's pages, with no copy on the host. A mapping is dropped when its memfd is
    unregistered (:meth:`forget`, or ``alive(handle)`` false), when it has not been used for
    ``idle_s`` seconds, and, least recently used first, when the mappings hold more than
    ``max_bytes`` (checked every ``_SWEEP_S`` seconds by a thread of its own while there are
    any); one still in use is unregistered once its last request is done.
    """

    def __init__(self, register: Callable[[int, int], Callable[[], None]], max_bytes: int = MAPPED_BYTES,
                 idle_s: float = MAPPED_IDLE_S, alive: Callable[[str], bool] = lambda handle: True) -> None:
        self._register = register
        self._max_bytes = max_bytes
        self._idle_s = idle_s
        self._alive = alive
        self._lock = threading.Lock()
        self._mappings: OrderedDict[str, _Mapping] = OrderedDict()  # by handle, least recently used first
        self._sweeper: threading.Thread | None = None
        self._closed = threading.Event()

    def arrays(self, region: Region, sizes: Sequence[int], fields: Sequence[str], max_bytes: int,
               private: Collection[str]) -> dict[str, np.ndarray]:
        """A request's arrays by field name: the ``private`` ones (the offsets, which the
        server checks and plans with) copied into server memory, the others uint8 views of the
        memfd's page-locked mapping, which the host never reads (the client may rewrite them
        at any time). Raises as :func:`read_arrays`, and whatever ``register`` raises when it
        refuses (the caller then reads the arrays instead)."""
        total = _check_sizes(region, sizes, fields, max_bytes)
        starts = np.concatenate([[0], np.cumsum([int(size) for size in sizes])])
        arrays: dict[str, np.ndarray] = {}
        try:
            for name, size, start in zip(fields, sizes, starts):
                if name in private:
                    arrays[name] = np.empty(int(size), dtype=np.uint8)
                    _read_range(region, [arrays[name]], int(start), int(start) + int(size), int(start))
        except OSError as exc:
            raise SharedFileRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                     f"shared file unusable: cannot read the shared memory: {exc.strerror}") from None
        # The whole memfd up to the message limit: the client's next, larger chunks fit too.
        mapped = self._lease(region, min(region.size, max_bytes))
        view = np.frombuffer(mapped.mapping, dtype=np.uint8, count=total)  # this request's lease
        weakref.finalize(view, self._give_back, mapped).atexit = False
        for name, size, start in zip(fields, sizes, starts):
            if name not in private:
                arrays[name] = view[int(start):int(start) + int(size)]
        return arrays

    def forget(self, handles: Collection[str]) -> None:
        """Drop the mappings of memfds that were unregistered (those in use once their requests are done)."""
        with self._lock:
            for handle in handles:
                mapped = self._mappings.get(handle)
                if mapped is not None:
                    self._retire_locked(mapped)

    def close(self) -> None:
        """Drop every mapping (those in use once their requests are done)."""
        self._closed.set()
        with self._lock:
            for mapped in list(self._mappings.values()):
                self._retire_locked(mapped)

    def mapped_bytes(self) -> int:
        with self._lock:
            return sum(mapped.nbytes for mapped in self._mappings.values())

    def _lease(self, region: Region, nbytes: int) -> _Mapping:
        with self._lock:
            mapped = self._mappings.get(region.handle)
            if mapped is not None and mapped.nbytes >= nbytes:
                self._mappings.move_to_end(region.handle)
                mapped.users += 1
                return mapped
        # Mapping and page-locking take milliseconds: not under the lock. The memfd cannot
        # shrink, so the mapping never faults past its end.
        mapping = mmap.mmap(region.fd, nbytes, flags=mmap.MAP_SHARED | _MAP_POPULATE, prot=mmap.PROT_READ)
        whole = np.frombuffer(mapping, dtype=np.uint8)
        address = whole.ctypes.data
        del whole  # the mapping cannot close while an array points into it
        try:
            unregister = self._register(address, nbytes)
        except BaseException:
            mapping.close()
            raise
        mapped = _Mapping(region.handle, nbytes, mapping, unregister, users=1, last_used=time.monotonic())
        with self._lock:
            previous = self._mappings.pop(region.handle, None)
            if previous is not None:  # a smaller one, or another request mapped it meanwhile
                self._retire_locked(previous)
            self._mappings[region.handle] = mapped
            if self._closed.is_set() or not self._alive(region.handle):  # unregistered meanwhile
                self._retire_locked(mapped)
            self._evict_locked(keep=mapped)
            if self._sweeper is None and not self._closed.is_set():
                self._sweeper = threading.Thread(target=self._sweep, name="warpdp-mapped-files", daemon=True)
                self._sweeper.start()
        return mapped

    def _give_back(self, mapped: _Mapping) -> None:
        """A request's views are gone (after the GPU's copies: the launcher returns only when
        its chunks are done)."""
        with self._lock:
            mapped.users -= 1
            mapped.last_used = time.monotonic()
            release = mapped.retired and mapped.users == 0
        if release:
            _release_mapping(mapped)

    def _retire_locked(self, mapped: _Mapping) -> None:
        if self._mappings.get(mapped.handle) is mapped:
            del self._mappings[mapped.handle]
        if not mapped.retired:
            mapped.retired = True
            if mapped.users == 0:
                _release_mapping(mapped)

    def _evict_locked(self, keep: _Mapping | None = None) -> None:
        held = sum(mapped.nbytes for mapped in self._mappings.values())
        for mapped in list(self._mappings.values()):  # least recently used first
            if held <= self._max_bytes:
                break
            if mapped is not keep:
                held -= mapped.nbytes
                self._retire_locked(mapped)

    def _sweep(self) -> None:
        while not self._closed.wait(_SWEEP_S):
            now = time.monotonic()
            with self._lock:
                for mapped in list(self._mappings.values()):
                    if not self._alive(mapped.handle) or (mapped.users == 0 and now - mapped.last_used > self._idle_s):
                        self._retire_locked(mapped)
                if not self._mappings:
                    self._sweeper = None
                    return


@dataclass(eq=False)
class _Mapping:
    """One memfd's page-locked mapping in MappedFiles."""

    handle: str
    nbytes: int           # bytes mapped
    mapping: mmap.mmap
    unregister: Callable[[], None]
    users: int = 0        # requests whose views are alive
    retired: bool = False
    last_used: float = 0.0  # when its last request was done (time.monotonic)


def _read_range(region: Region, arrays: list[np.ndarray], lo: int, hi: int, first: int = 0) -> None:
    """Read bytes lo..hi of the memfd into the arrays it holds back to back from byte
    ``first``. As few system calls as possible: each gives the interpreter lock up, and
    getting it back in a busy server can take longer than the read."""
    pending, start = [], first
    for array in arrays:  # the parts of the arrays within lo..hi
        end = start + len(array)
        if end > lo and start < hi:
            pending.append(array[max(lo - start, 0):min(hi, end) - start])
        start = end
    offset = lo
    while pending:
        got = os.preadv(region.fd, pending[:_IOV_MAX], offset)
        if got == 0:  # cannot happen to a memfd sealed against shrinking; refuse rather than loop
            raise SharedFileRejected(grpc.StatusCode.INVALID_ARGUMENT,
                                     f"invalid shared_file: the shared memory ended after {offset} bytes")
        offset += got
        while pending and got >= len(pending[0]):
            got -= len(pending.pop(0))
        if got:
            pending[0] = pending[0][got:]


def _release_mapping(mapped: _Mapping) -> None:
    """Unregister and unmap a mapping of MappedFiles, on another thread: the one that dropped
    its last view is often the server's event loop, and unregistering takes up to a few tenths
    of a millisecond."""
    def release() -> None:
        try:
            mapped.unregister()
        except Exception as exc:  # CuPy's CUDA errors have no common base with OSError
            logger.warning("could not unregister the mapping of shared memory %s...: %s", mapped.handle[:8], exc)
        mapped.mapping.close()
    try:
        _read_pool().submit(release)
    except RuntimeError:  # the pool is shut down (the interpreter is exiting)
        release()


def _read_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_READ_THREADS, thread_name_prefix="warpdp-shared-read")
        return _pool


def _empty_bytes(nbytes: int) -> np.ndarray:
    return np.empty(nbytes, dtype=np.uint8)
