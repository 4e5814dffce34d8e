"""The client half of same-host shared memory (``SharedFile`` in warpdp.proto; the server's
half and the security model are in :mod:`._shm_server`).

A client on the server's host connects to the Unix socket the server advertises
(``ServerInfo.shared_files.socket``, in the abstract namespace), and keeps a pool of memfds
(:class:`SharedFilePool`): each is created anonymous, allocated up front, sealed against
shrinking and growing, mapped, and handed to the server once (SCM_RIGHTS), which answers with
the handle that requests name it by. The client writes a request's arrays through its own
mapping (about twice as fast as write()), leaves room for the results after them, and reuses
the memfd from call to call (its pages need no faulting in, and a GPU server keeps it
page-locked). A memfd too small for a request is replaced by a new, larger one. Nothing has a
name: when the client exits, however it exits, the kernel closes its descriptors and its
connection, and the server then closes its own.
"""
from __future__ import annotations

import fcntl
import ipaddress
import mmap
import os
import socket
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..kernels.host_copy import copy_arrays
from . import _shm_protocol as protocol

# A client keeps memfds for reuse up to this many bytes in all; larger ones are closed after use.
# Enough for a stream's memfds in flight (client._SHARED_IN_FLIGHT of up to 64 MiB, with
# headroom): a memfd made anew is also page-locked anew by a GPU server.
KEEP_BYTES = 512 * 1024 * 1024
# Memfds are sized in steps of this many bytes (with an eighth of headroom).
_SIZE_STEP = 1 << 20
_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # map the pages at once, not at first touch
# A client writes a memfd of this many bytes or more with several threads. Lower than the GPU
# launchers' threshold: one writing thread is slower than a GPU server scores (BENCHMARKS.md),
# and a job's first chunks are 4-16 MiB.
WRITE_PARALLEL_FROM_BYTES = 4 * 1024 * 1024
# Seconds the client waits for the server's answer to a registration.
SOCKET_TIMEOUT_S = 30.0


def available() -> bool:
    """Whether this system has memfds (Linux)."""
    return hasattr(os, "memfd_create") and hasattr(socket, "send_fds")


def is_local_address(address: str) -> bool:
    """Whether a client's server address (``host:port``, ``unix:...``) names this host."""
    if address.startswith(("unix:", "unix-abstract:")):
        return True
    for scheme in ("ipv4:", "ipv6:", "dns:///", "dns:"):
        if address.startswith(scheme):
            address = address[len(scheme):]
            break
    host = address[1:].partition("]")[0] if address.startswith("[") else address.rpartition(":")[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Connection:
    """A client's connection to a server's shared-memory socket: registers memfds, one
    request at a time (any thread). OSError when the socket is not there (another host or
    network namespace) or the server refuses (:class:`._shm_protocol.Refused`)."""

    def __init__(self, name: str, timeout: float = SOCKET_TIMEOUT_S) -> None:
        if not name or "\0" in name:
            raise OSError(f"not a shared-memory socket name: {name!r}")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect("\0" + name)
        except OSError:
            self._sock.close()
            raise
        self._lock = threading.Lock()

    def register(self, fd: int) -> str:
        """Hand a sealed memfd to the server; its handle."""
        handle = self._ask(protocol.REGISTER, [fd])
        if not protocol.is_handle(handle):
            raise protocol.Refused(f"the server answered a registration with {handle[:80]!r}")
        return handle

    def unregister(self, handle: str) -> None:
        self._ask(protocol.unregister_request(handle))

    def close(self) -> None:
        self._sock.close()

    def _ask(self, request: bytes, fds: Sequence[int] = ()) -> str:
        with self._lock:
            try:
                socket.send_fds(self._sock, [request], list(fds))
                reply = self._sock.recv(protocol.MAX_MESSAGE_BYTES)
            except OSError:
                # A late answer would pass for the next request's: the connection is done.
                self._sock.close()
                raise
        if not reply:
            raise ConnectionResetError("the server closed its shared-memory socket")
        return protocol.parse_reply(reply)


@dataclass
class SharedFile:
    """One of a client's memfds: the server's handle for it, its size, and the client's own
    mapping of it (which holds the memfd open; the client keeps no other descriptor)."""

    handle: str
    capacity: int
    mapping: mmap.mmap

    def view(self, offset: int, nbytes: int) -> np.ndarray:
        """Bytes offset..offset+nbytes of the memfd, through the client's mapping (a view:
        drop it before the memfd is released, which may close it)."""
        return np.frombuffer(self.mapping, dtype=np.uint8, count=nbytes, offset=offset)


class SharedFilePool:
    """A client's memfds registered with one server, reused from call to call.

    ``acquire`` writes arrays into a free memfd (a new one when none is large enough) and
    hands it out until ``release``; the server has read it, and written the results it was
    asked to, once it has answered its request.
    """

    def __init__(self, connection: Connection, keep_bytes: int = KEEP_BYTES) -> None:
        self.connection = connection
        self._keep_bytes = keep_bytes
        self._free: list[SharedFile] = []
        self._lock = threading.Lock()
        # The connection goes with the pool even when the client is never closed (the server
        # then drops every memfd registered over it; the process's exit does the same).
        self._finalizer = weakref.finalize(self, connection.close)

    def acquire(self, arrays: Sequence[np.ndarray], reply_bytes: int = 0) -> tuple[SharedFile, list[int], int]:
        """A memfd holding the arrays (uint8 or int64 little-endian, C-contiguous) back to
        back and room for reply_bytes of results after them; the arrays' sizes in bytes; and
        where the results go (the request's reply_offset; 0 without reply_bytes). OSError when
        no memfd can be made or registered."""
        buffers = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
        sizes = [len(b) for b in buffers]
        total = sum(sizes)
        reply_offset = 0
        if reply_bytes:  # the results after the arrays, 8-byte aligned
            reply_offset = (total + 7) // 8 * 8
            total = reply_offset + reply_bytes
        too_small = None
        with self._lock:
            fitting = [f for f in self._free if f.capacity >= total]
            chosen = min(fitting, key=lambda f: f.capacity) if fitting else None
            if chosen is not None:
                self._free.remove(chosen)
            elif self._free:  # replace the largest free memfd rather than add one more
                too_small = max(self._free, key=lambda f: f.capacity)
                self._free.remove(too_small)
        if too_small is not None:
            self._delete(too_small)
        if chosen is None:
            chosen = self._create(total)
        try:
            _write_all(chosen, buffers)
        except BaseException:
            self._delete(chosen)
            raise
        return chosen, sizes, reply_offset

    def release(self, shared: SharedFile) -> None:
        with self._lock:
            kept = sum(f.capacity for f in self._free)
            if kept + shared.capacity <= self._keep_bytes and self._finalizer.alive:
                self._free.append(shared)
                return
        self._delete(shared)

    def discard(self, shared: SharedFile) -> None:
        """Close a handed-out memfd instead of reusing it: its request was not answered, so
        the server may still read it, and write results into it."""
        self._delete(shared)

    def close(self) -> None:
        """Close every memfd (those still handed out when released) and the connection."""
        with self._lock:
            free, self._free = self._free, []
        for shared in free:
            self._delete(shared)
        self._finalizer()

    def _create(self, nbytes: int) -> SharedFile:
        capacity = -(-(nbytes + nbytes // 8) // _SIZE_STEP) * _SIZE_STEP
        fd = os.memfd_create("warpdp-shared", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        mapping = None
        try:
            # Allocated up front: writing through the mapping when memory is short would be
            # SIGBUS, where fallocate raises OSError (the client then sends messages).
            os.posix_fallocate(fd, 0, capacity)
            # A fixed size: the server can map it without any risk of a fault past its end.
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, protocol.REQUIRED_SEALS | fcntl.F_SEAL_SEAL)
            mapping = mmap.mmap(fd, capacity, flags=mmap.MAP_SHARED | _MAP_POPULATE)
            handle = self.connection.register(fd)
        except BaseException:
            if mapping is not None:
                mapping.close()
            raise
        finally:
            os.close(fd)  # the mapping has a descriptor of its own, and the server its own
        return SharedFile(handle, capacity, mapping)

    def _delete(self, shared: SharedFile) -> None:
        try:
            self.connection.unregister(shared.handle)
        except OSError:
            pass  # the connection is gone: the server dropped the memfd with it
        shared.mapping.close()


def _write_all(shared: SharedFile, buffers: list[np.ndarray]) -> None:
    """The buffers back to back at the start of the memfd, through the client's mapping: a
    memory copy (spread over threads when large), where write() went at about half the speed."""
    view = np.frombuffer(shared.mapping, dtype=np.uint8)
    copies: list[tuple[np.ndarray, np.ndarray]] = []
    try:
        offset = 0
        for buffer in buffers:
            copies.append((view[offset:offset + len(buffer)], buffer))
            offset += len(buffer)
        copy_arrays(copies, WRITE_PARALLEL_FROM_BYTES)
    finally:
        del copies, view  # the mapping cannot close while arrays point into it

