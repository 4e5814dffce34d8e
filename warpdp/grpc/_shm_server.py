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
answers (:func:`write_results`), instead of sending them through gRPC's message path, which
ran at about 1 GB/s.
"""
from __future__ import annotations

import ctypes
import fcntl
import ipaddress
import logging
import mmap
import os
import resource
import secrets
import selectors
import socket
import stat
import struct
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import grpc
import numpy as np

from . import _shm_protocol as protocol

# Buffers one preadv() call fills at most (Linux's IOV_MAX); it moves at most 2 GiB - 4 KiB.
_IOV_MAX = 1024
# A request's arrays are read by up to _READ_THREADS threads, each taking at least _READ_PART_BYTES.
_READ_THREADS = 4
_READ_PART_BYTES = 1 << 20
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # map the pages at once, not at first touch
# A GPU server keeps page-locked mappings of memfds (MappedFiles) up to this many bytes in
# all, drops one unused this long, and checks them every _SWEEP_S seconds.
MAPPED_BYTES = 1 << 30
MAPPED_IDLE_S = 60.0
_SWEEP_S = 1.0
# Registrations: at most this many descriptors over one connection and in all, and
# connections at once (each is a descriptor of the server's own); lower where the process may
# open few files (gRPC needs its share).
MAX_FDS_PER_CONNECTION = 256
MAX_FDS = 4096
MAX_CONNECTIONS = 1024
_TMPFS_MAGIC = 0x01021994  # the file system of (non-huge-page) memfds
logger = logging.getLogger("warpdp.grpc")


class SharedFileRejected(Exception):
    """The server cannot take a request's shared memory; ``code`` is the status to answer."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def is_local_peer(peer: str) -> bool:
    """Whether a gRPC peer string (ServicerContext.peer()) is a client on this host."""
    if peer.startswith(("unix:", "unix-abstract:")):
        return True
    scheme, _, rest = peer.partition(":")
    if scheme == "ipv4":
        host = rest.rsplit(":", 1)[0]
    elif scheme == "ipv6":
        host = rest.rsplit(":", 1)[0].strip("[]")
    else:
        return False
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def check_reply_offset(offset: int, sizes: Sequence[int]) -> None:
    """SharedFileRejected (INVALID_ARGUMENT) unless a request's reply_offset is 0 (results in
    the reply message) or a multiple of 8 at or past the end of its arrays."""
    end = sum(int(size) for size in sizes)
    if offset and (offset % 8 or offset < end):
        raise SharedFileRejected(grpc.StatusCode.INVALID_ARGUMENT,
                                 f"invalid shared_file.reply_offset {offset}: it must be 0 or a multiple of 8 "
                                 f"at or past the end of the arrays (byte {end})")


@dataclass(frozen=True)
class Region:
    """A registered memfd, opened for one use: ``fd`` is the server's own duplicate, closed
    when the use ends (see :meth:`Registry.open`)."""

    handle: str
    fd: int
    size: int        # fixed: the memfd is sealed against shrinking and growing
    writable: bool   # the client handed it over open for writing (results may go into it)


@dataclass(eq=False)
class _Registration:
    handle: str
    fd: int
    size: int
    writable: bool
    connection: _Connection


@dataclass(eq=False)
class _Connection:
    sock: socket.socket
    uid: int
    pid: int
    handles: set[str] = field(default_factory=set)


class Registry:
    """The server's Unix socket (abstract namespace) where same-host clients register memfds,
    and the memfds registered, by handle.

    One thread of its own accepts connections and answers their requests (they are short:
    fstat and fcntl calls). It records each connection's peer credentials (SO_PEERCRED) for
    the log, checks every descriptor (:func:`check_memfd`), and closes everything registered
    over a connection when the connection closes. ``on_forget`` is called with the handles
    that stop being valid (the GPU server drops their mappings).
    """

    def __init__(self, max_message_bytes: int, on_forget: Callable[[list[str]], None] | None = None) -> None:
        self.name = f"warpdp-{os.getpid()}-{secrets.token_hex(8)}"
        self.on_forget = on_forget
        # A request's arrays and its results each stay within the message limit; clients
        # size their memfds with some headroom.
        self._max_region_bytes = max(4 * max_message_bytes, 64 << 20)
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        limit = soft if soft != resource.RLIM_INFINITY else 1 << 20
        self._max_fds = max(16, min(MAX_FDS, limit // 4))
        self._max_fds_per_connection = min(MAX_FDS_PER_CONNECTION, self._max_fds)
        self._max_connections = max(4, min(MAX_CONNECTIONS, limit // 8))
        self._lock = threading.Lock()
        self._handles: dict[str, _Registration] = {}
        self._connections: set[_Connection] = set()
        self._bytes = 0
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        try:
            self._listener.bind("\0" + self.name)
            self._listener.listen(64)
            self._listener.setblocking(False)
            self._wake_r, self._wake_w = socket.socketpair()
        except BaseException:
            self._listener.close()
            raise
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="warpdp-shared-memory", daemon=True)
        self._thread.start()

    # -- what the gRPC handlers use --

    @contextmanager
    def open(self, handle: str) -> Iterator[Region]:
        """The memfd registered under handle, as a duplicate descriptor that stays valid for
        the block even if the client unregisters it or goes meanwhile. SharedFileRejected
        (INVALID_ARGUMENT) for an unknown handle."""
        with self._lock:
            registration = self._handles.get(handle) if protocol.is_handle(handle) else None
            if registration is None:
                raise SharedFileRejected(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "invalid shared_file.handle: not a handle of memory registered with this server (register a "
                    "memfd over the Unix socket in ServerInfo.shared_files.socket; file names are not accepted)")
            # Under the lock: the registration's descriptor is closed only under it.
            fd = os.dup(registration.fd)
        try:
            yield Region(handle, fd, registration.size, registration.writable)
        finally:
            os.close(fd)

    def is_registered(self, handle: str) -> bool:
        with self._lock:
            return handle in self._handles

    def registered(self) -> tuple[int, int]:
        """Memfds registered now, and their bytes."""
        with self._lock:
            return len(self._handles), self._bytes

    def connections(self) -> int:
        with self._lock:
            return len(self._connections)

    def close(self) -> None:
        """Stop accepting, close every connection and every registered descriptor."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._wake_w.send(b"x")
        self._thread.join()
        for connection in list(self._connections):
            self._drop(connection)
        self._selector.close()
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    # -- the socket's thread --

    def _serve(self) -> None:
        while True:
            for key, _events in self._selector.select():
                if key.fileobj is self._wake_r:
                    return
                try:
                    if key.fileobj is self._listener:
                        self._accept()
                    else:
                        self._receive(key.data)
                except Exception:  # a bug: lose this connection, keep serving the others
                    logger.exception("shared memory: a request over the Unix socket failed")
                    if key.data is not None:
                        self._drop(key.data)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. out of descriptors: the client's connect fails or waits
                logger.warning("shared memory: cannot accept a connection: %s", exc)
                return
            try:
                sock.setblocking(False)
                pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                     struct.calcsize("3i")))
            except OSError:  # gone already
                sock.close()
                continue
            connection = _Connection(sock, uid, pid)
            with self._lock:
                full = len(self._connections) >= self._max_connections
                if not full:
                    self._connections.add(connection)
            if full:
                self._send(connection, protocol.error(f"this server takes at most {self._max_connections} "
                                                      f"shared-memory connections at once"))
                sock.close()
                continue
            self._selector.register(sock, selectors.EVENT_READ, connection)

    def _receive(self, connection: _Connection) -> None:
        try:
            data, fds, flags, _ = socket.recv_fds(connection.sock, protocol.MAX_MESSAGE_BYTES, 1)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(connection)
            return
        try:
            if not data and not fds:  # the client closed the connection (or sent nothing at all)
                self._drop(connection)
                return
            reply = self._answer(connection, data, fds, flags)
        finally:
            for fd in fds:  # those not taken over by a registration
                os.close(fd)
        if not self._send(connection, reply):
            self._drop(connection)

    def _answer(self, connection: _Connection, data: bytes, fds: list[int], flags: int) -> bytes:
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            return protocol.error(f"message over {protocol.MAX_MESSAGE_BYTES} bytes or with more than one descriptor")
        if data == protocol.REGISTER:
            if len(fds) != 1:
                return protocol.error("register takes exactly one descriptor")
            return self._register(connection, fds.pop())
        if fds:
            return protocol.error("only register takes a descriptor")
        verb, _, handle = data.partition(b" ")
        if verb == protocol.UNREGISTER:
            return self._unregister(connection, handle.decode("ascii", "replace"))
        return protocol.error("unknown request")

    def _register(self, connection: _Connection, fd: int) -> bytes:
        try:
            size, writable = check_memfd(fd, self._max_region_bytes)
        except ValueError as exc:
            os.close(fd)
            return protocol.error(str(exc))
        handle = secrets.token_hex(protocol.HANDLE_HEX_CHARS // 2)
        with self._lock:
            refusal = None
            if len(connection.handles) >= self._max_fds_per_connection:
                refusal = f"this connection holds {len(connection.handles)} memfds, this server's limit"
            elif len(self._handles) >= self._max_fds or self._closed or connection not in self._connections:
                refusal = f"this server holds {len(self._handles)} memfds, its limit"
            else:
                self._handles[handle] = _Registration(handle, fd, size, writable, connection)
                connection.handles.add(handle)
                self._bytes += size
        if refusal is not None:
            os.close(fd)
            return protocol.error(refusal)
        return protocol.ok(handle)

    def _unregister(self, connection: _Connection, handle: str) -> bytes:
        with self._lock:
            registration = self._handles.get(handle)
            if registration is None or registration.connection is not connection:
                return protocol.error("unknown handle")
            self._forget_locked(registration)
        self._notify([handle])
        return protocol.ok()

    def _drop(self, connection: _Connection) -> None:
        """A connection is over: everything registered over it goes."""
        try:
            self._selector.unregister(connection.sock)
        except (KeyError, ValueError, RuntimeError):
            pass
        connection.sock.close()
        with self._lock:
            self._connections.discard(connection)
            handles = list(connection.handles)
            for handle in handles:
                self._forget_locked(self._handles[handle])
        if handles:
            logger.debug("shared memory: %d memfd(s) of pid %d (uid %d) dropped with its connection", len(handles),
                         connection.pid, connection.uid)
            self._notify(handles)

    def _forget_locked(self, registration: _Registration) -> None:
        del self._handles[registration.handle]
        registration.connection.handles.discard(registration.handle)
        self._bytes -= registration.size
        os.close(registration.fd)  # requests using it hold duplicates (see open)

    def _notify(self, handles: list[str]) -> None:
        if self.on_forget is not None:
            try:
                self.on_forget(handles)
            except Exception:
                logger.exception("shared memory: dropping the mappings of unregistered memfds failed")

    @staticmethod
    def _send(connection: _Connection, data: bytes) -> bool:
        """False when the answer cannot go (the client does not read its answers, or is gone)."""
        try:
            connection.sock.send(data, socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
            return True
        except OSError:
            return False


def check_memfd(fd: int, max_bytes: int) -> tuple[int, bool]:
    """The size of a memfd a client hands over, and whether it is open for writing;
    ValueError saying why when it is not a memfd sealed against shrinking and growing, or is
    empty or larger than max_bytes."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or _file_system(fd) != _TMPFS_MAGIC:
        raise ValueError("not a memfd (one from memfd_create, without MFD_HUGETLB, is needed)")
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        raise ValueError("not a memfd (it has no seals)") from None
    if seals & protocol.REQUIRED_SEALS != protocol.REQUIRED_SEALS:
        raise ValueError("the memfd must be sealed with F_SEAL_SHRINK and F_SEAL_GROW")
    mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    if mode not in (os.O_RDONLY, os.O_RDWR):
        raise ValueError("the memfd must be open for reading")
    if not 0 < info.st_size <= max_bytes:
        raise ValueError(f"the memfd holds {info.st_size} bytes; this server takes 1 to {max_bytes}")
    return info.st_size, mode == os.O_RDWR


_libc = ctypes.CDLL(None, use_errno=True)


def _file_system(fd: int) -> int:
    """The file system type (statfs' f_type) of an open file; -1 when unknown."""
    buffer = ctypes.create_string_buffer(256)  # struct statfs: 120 bytes on 64-bit Linux, f_type first
    if _libc.fstatfs(fd, buffer) != 0:
        return -1
    return ctypes.c_long.from_buffer(buffer).value


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
    # The memfd holds the arrays back to back. One thread reads about 5 GB/s from shared
    # memory: large requests are read in parts by several threads at once.
    joined = [a for a in arrays.values() if len(a)]
    parts = min(_READ_THREADS, total // _READ_PART_BYTES)
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
    nbytes)``, which returns the function that unregisters it; about 2 ms per 32 MiB, longer
    than reading the arrays) and the GPU then copies every later request's arrays straight from
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
