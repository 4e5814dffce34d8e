"""Same-host shared memory, registration side: the server's Unix socket where clients hand
memfds over (:class:`Registry`), the checks a memfd passes first, and a registered memfd
opened for one use (:class:`Region`). See _shm_server for what the server trusts and why.
"""
from __future__ import annotations

import ctypes
import fcntl
import ipaddress
import logging
import os
import resource
import secrets
import selectors
import socket
import stat
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import grpc

from . import _shm_protocol as protocol

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
