"""Same-host transfer of large requests through files on a memory file system (``SharedFile``
in warpdp.proto).

A client on the server's host writes a request's arrays back to back into a file in the
server's shared directory (``/dev/shm`` by default) and sends only the file's name and the
arrays' sizes. Tens of megabytes then cost two memory copies instead of a trip through gRPC's
message path, which on the GPU backend took longer than the scoring itself.

The server reads the file into its own memory while it decodes the request (a GPU server:
page-locked memory, which the GPU copies from directly). A GPU server whose launcher never
reads the input on the host (the Pair-HMM's) instead keeps a read-only, page-locked mapping of
each file (:class:`MappedFiles`): the GPU copies the bulk arrays straight from the client's
pages, and only the offsets are read into server memory. The host never reads such a mapping,
since a client that truncated its file would make that a SIGBUS, while the GPU's copies are
safe (page-locked pages stay until unregistered). Offsets are always the server's own copy,
so a client that rewrites its file meanwhile can change only its own results; so can one
that shrinks a file and grows it back to its old size between two requests (the GPU would
read the pages the file had before; the server remaps a file whose size changed, and this
client never shrinks its files).

Results can come back the same way (``SharedFile.reply_offset``): the client leaves room for
them after the arrays, and the server writes them there with one ``pwritev`` before it
answers (:func:`write_results`) instead of sending them through gRPC's message path, which
ran at about 1 GB/s. It does so only into a regular file of its own user; otherwise it
answers in the message. The client owns its files: it creates them
readable by its own user only, allocates them up front and writes through its own mapping
(about twice as fast as write()), reuses them from call to call (pages a file already has
need no faulting in), and deletes them when it closes. A client killed outright cannot; the
next pool of the same user removes such leftovers (:func:`remove_stale_files`).
"""
from __future__ import annotations

import ipaddress
import logging
import mmap
import os
import re
import secrets
import stat
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import grpc
import numpy as np

from ..kernels.host_copy import copy_arrays

DEFAULT_DIRECTORY = "/dev/shm"
NAME_PREFIX = "warpdp-"
_NAME = re.compile(r"warpdp-[A-Za-z0-9._-]{1,200}")
# A client keeps files for reuse up to this many bytes in all; larger ones are deleted after use.
# Enough for a stream's files in flight (client._SHARED_IN_FLIGHT of up to 64 MiB, with
# headroom): a file made anew is also page-locked anew by a GPU server.
KEEP_BYTES = 512 * 1024 * 1024
# Buffers one preadv() call fills at most (Linux's IOV_MAX); it moves at most 2 GiB - 4 KiB.
_IOV_MAX = 1024
# A file is read by up to _READ_THREADS threads, each taking at least _READ_PART_BYTES.
_READ_THREADS = 4
_READ_PART_BYTES = 1 << 20
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
# Client files grow in steps of this many bytes (with an eighth of headroom).
_GROW_STEP = 1 << 20
_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # map the pages at once, not at first touch
# A client writes a file of this many bytes or more with several threads. Lower than the GPU
# launchers' threshold: one thread writes about 5.5 GB/s, slower than a GPU server scores
# GATK-like input (about 9 GB/s on an H200), and a job's first files are 4-16 MiB
# (H200, GATK-like 4.3e9 / 2.1e10 cells: +30 % / +28-31 % over in-process, against +41-58 % /
# +35-37 % with the launchers' 16 MiB).
WRITE_PARALLEL_FROM_BYTES = 4 * 1024 * 1024
# A client's file left behind by a dead process is removed once unchanged this long: a live
# client in another PID namespace (whose PID looks dead here) writes its files at every call.
STALE_AFTER_S = 600.0
# A GPU server keeps page-locked mappings of shared files (MappedFiles) up to this many bytes
# in all, drops one unused this long, and checks them every _SWEEP_S seconds.
MAPPED_BYTES = 1 << 30
MAPPED_IDLE_S = 60.0
_SWEEP_S = 1.0
_OWN_NAME = re.compile(r"warpdp-(\d+)-[0-9a-f]{16}")
_swept: set[str] = set()
_swept_lock = threading.Lock()
logger = logging.getLogger("warpdp.grpc")


class SharedFileRejected(Exception):
    """The server cannot take a request's shared file; ``code`` is the status to answer."""

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


def check_reply_offset(offset: int, sizes: Sequence[int]) -> None:
    """SharedFileRejected (INVALID_ARGUMENT) unless a request's reply_offset is 0 (results in
    the reply message) or a multiple of 8 at or past the end of its arrays."""
    end = sum(int(size) for size in sizes)
    if offset and (offset % 8 or offset < end):
        raise SharedFileRejected(grpc.StatusCode.INVALID_ARGUMENT,
                                 f"invalid shared_file.reply_offset {offset}: it must be 0 or a multiple of 8 "
                                 f"at or past the end of the arrays (byte {end})")


def write_results(directory: str, name: str, offset: int, arrays: Sequence[np.ndarray]) -> bool:
    """Write the arrays back to back into a client's shared file from byte ``offset`` (see
    SharedFile.reply_offset). False, with nothing written, when the file is not a regular
    file of this process's user (a server run as root writes no other user's file), is too
    short for them or cannot be written: the server then answers in the message."""
    path = os.path.join(directory, name)
    buffers = [memoryview(np.ascontiguousarray(a)).cast("B") for a in arrays if a.nbytes]
    nbytes = sum(len(b) for b in buffers)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_size < offset + nbytes:
            return False
        # One system call for all of them: each gives the interpreter lock up (see _read_range).
        while buffers:
            done = os.pwritev(fd, buffers[:_IOV_MAX], offset)
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
    finally:
        os.close(fd)


def read_arrays(directory: str, name: str, sizes: Sequence[int], fields: Sequence[str],
                max_bytes: int, empty: Callable[[int], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The arrays of a shared file as uint8 arrays in server memory, by field name, all in one
    buffer from ``empty(nbytes)`` (a GPU server reads into page-locked memory).

    Raises SharedFileRejected: INVALID_ARGUMENT for a bad name, sizes that do not match the
    fields or a file shorter than they say; RESOURCE_EXHAUSTED over max_bytes;
    FAILED_PRECONDITION when the file cannot be opened (the client does not share this
    host's directory, or wrote it as another user).
    """
    fd, path, total, _ = _open_checked(directory, name, sizes, fields, max_bytes)
    try:
        # Each array starts 8-byte aligned in server memory, so int64 views need no copy.
        starts = np.concatenate([[0], np.cumsum([(int(size) + 7) // 8 * 8 for size in sizes])])
        buffer = (empty or _empty_bytes)(int(starts[-1]))
        arrays = {field: buffer[start:start + int(size)] for field, size, start in zip(fields, sizes, starts)}
        # The file holds the arrays back to back. One thread reads about 5 GB/s from a memory
        # file system: large files are read in parts by several threads at once.
        joined = [a for a in arrays.values() if len(a)]
        parts = min(_READ_THREADS, total // _READ_PART_BYTES)
        if parts < 2:
            _read_range(fd, path, total, joined, 0, total)
        else:
            bounds = [total * k // parts for k in range(parts + 1)]
            list(_read_pool().map(lambda k: _read_range(fd, path, total, joined, bounds[k], bounds[k + 1]),
                                  range(parts)))
    except OSError as exc:
        raise SharedFileRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"shared file unusable: cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    return arrays


class MappedFiles:
    """A GPU server's read-only, page-locked mappings of clients' shared files, kept from
    request to request, for a launcher that never reads its input on the host.

    A client reuses its files, so each is mapped and page-locked once (``register(address,
    nbytes)``, which returns the function that unregisters it; about 2 ms per 32 MiB, longer
    than reading the file) and the GPU then copies every later request's arrays straight from
    the client's pages, with no copy on the host. A mapping is dropped when its file is
    deleted, replaced or resized, when it has not been used for ``idle_s`` seconds, and, least
    recently used first, when the mappings hold more than ``max_bytes`` (checked every
    ``_SWEEP_S`` seconds by a thread of its own while there are any); one still in use is
    unregistered once its last request is done.
    """

    def __init__(self, register: Callable[[int, int], Callable[[], None]], max_bytes: int = MAPPED_BYTES,
                 idle_s: float = MAPPED_IDLE_S) -> None:
        self._register = register
        self._max_bytes = max_bytes
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._mappings: OrderedDict[tuple[int, int], _Mapping] = OrderedDict()  # least recently used first
        self._sweeper: threading.Thread | None = None
        self._closed = threading.Event()

    def arrays(self, directory: str, name: str, sizes: Sequence[int], fields: Sequence[str], max_bytes: int,
               private: Collection[str]) -> dict[str, np.ndarray]:
        """A shared file's arrays by field name: the ``private`` ones (the offsets, which the
        server checks and plans with) read into server memory, the others uint8 views of the
        file's page-locked mapping, which the host must never read (see the module's
        docstring). Raises as :func:`read_arrays`, and whatever ``register`` raises when it
        refuses (the caller then reads the file instead)."""
        fd, path, total, info = _open_checked(directory, name, sizes, fields, max_bytes)
        file_starts = np.concatenate([[0], np.cumsum([int(size) for size in sizes])])
        arrays: dict[str, np.ndarray] = {}
        try:
            for field, size, start in zip(fields, sizes, file_starts):
                if field in private:
                    arrays[field] = np.empty(int(size), dtype=np.uint8)
                    _read_range(fd, path, total, [arrays[field]], int(start), int(start) + int(size), int(start))
            # The whole file up to the message limit: the client's next, larger chunks fit too.
            mapped = self._lease(fd, path, info, min(info.st_size, max_bytes))
        except OSError as exc:
            raise SharedFileRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                     f"shared file unusable: cannot read {path}: {exc.strerror}") from None
        finally:
            os.close(fd)
        view = np.frombuffer(mapped.mapping, dtype=np.uint8, count=total)  # this request's lease
        weakref.finalize(view, self._give_back, mapped).atexit = False
        for field, size, start in zip(fields, sizes, file_starts):
            if field not in private:
                arrays[field] = view[int(start):int(start) + int(size)]
        return arrays

    def close(self) -> None:
        """Drop every mapping (those in use once their requests are done)."""
        self._closed.set()
        with self._lock:
            for mapped in list(self._mappings.values()):
                self._retire_locked(mapped)

    def mapped_bytes(self) -> int:
        with self._lock:
            return sum(mapped.nbytes for mapped in self._mappings.values())

    def _lease(self, fd: int, path: str, info: os.stat_result, nbytes: int) -> _Mapping:
        key = (info.st_dev, info.st_ino)
        with self._lock:
            mapped = self._mappings.get(key)
            if mapped is not None and mapped.file_size == info.st_size and mapped.nbytes >= nbytes:
                self._mappings.move_to_end(key)
                mapped.users += 1
                return mapped
        # Mapping and page-locking take milliseconds: not under the lock.
        mapping = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | _MAP_POPULATE, prot=mmap.PROT_READ)
        whole = np.frombuffer(mapping, dtype=np.uint8)
        address = whole.ctypes.data
        del whole  # the mapping cannot close while an array points into it
        try:
            unregister = self._register(address, nbytes)
        except BaseException:
            mapping.close()
            raise
        mapped = _Mapping(path, key, info.st_size, nbytes, mapping, unregister, users=1, last_used=time.monotonic())
        with self._lock:
            previous = self._mappings.pop(key, None)
            if previous is not None:  # the file changed, or another request mapped it meanwhile
                self._retire_locked(previous)
            self._mappings[key] = mapped
            if self._closed.is_set():
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
        if self._mappings.get(mapped.key) is mapped:
            del self._mappings[mapped.key]
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
            with self._lock:
                mappings = list(self._mappings.values())
            now = time.monotonic()
            for mapped in mappings:
                try:
                    info = os.stat(mapped.path, follow_symlinks=False)
                    current = (info.st_dev, info.st_ino) == mapped.key and info.st_size == mapped.file_size
                except OSError:
                    current = False
                with self._lock:
                    if not current or (mapped.users == 0 and now - mapped.last_used > self._idle_s):
                        self._retire_locked(mapped)
            with self._lock:
                if not self._mappings:
                    self._sweeper = None
                    return


@dataclass(eq=False)
class _Mapping:
    """One file's page-locked mapping in MappedFiles."""

    path: str
    key: tuple[int, int]  # the file's device and inode
    file_size: int        # its size when mapped
    nbytes: int           # bytes mapped
    mapping: mmap.mmap
    unregister: Callable[[], None]
    users: int = 0        # requests whose views are alive
    retired: bool = False
    last_used: float = 0.0  # when its last request was done (time.monotonic)


def _open_checked(directory: str, name: str, sizes: Sequence[int], fields: Sequence[str],
                  max_bytes: int) -> tuple[int, str, int, os.stat_result]:
    """An open descriptor of a request's shared file, its path, the arrays' total bytes and
    the file's status, after the checks :func:`read_arrays` documents."""
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    if not _NAME.fullmatch(name):
        raise SharedFileRejected(invalid, f"invalid shared_file.name {name!r}: it must be {NAME_PREFIX!r} followed "
                                          f"by letters, digits, '.', '_' or '-' (a name in {directory}, no path)")
    if len(sizes) != len(fields):
        raise SharedFileRejected(invalid, f"invalid shared_file.sizes: {len(sizes)} sizes for the {len(fields)} "
                                          f"arrays {', '.join(fields)}")
    total = sum(int(size) for size in sizes)
    if total > max_bytes:
        raise SharedFileRejected(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                 f"the shared file's arrays hold {total} bytes, over this server's message limit "
                                 f"of {max_bytes} bytes; split the request")
    path = os.path.join(directory, name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise SharedFileRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"shared file unusable: cannot open {path}: {exc.strerror} (client and server "
                                 f"must share this directory and the server's user must be able to read it)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SharedFileRejected(invalid, f"invalid shared_file.name: {path} is not a regular file")
        if info.st_size < total:
            raise SharedFileRejected(invalid, f"invalid shared_file.sizes: they add up to {total} bytes but {path} "
                                              f"holds {info.st_size}")
    except BaseException:
        os.close(fd)
        raise
    return fd, path, total, info


@dataclass
class SharedFile:
    """One of a client's files: its name in the directory, the bytes it has room for, and the
    client's own mapping of it."""

    name: str
    fd: int
    capacity: int
    mapping: mmap.mmap | None = None

    def view(self, offset: int, nbytes: int) -> np.ndarray:
        """Bytes offset..offset+nbytes of the file, through the client's mapping (a view:
        drop it before the file is released, which may remap it)."""
        assert self.mapping is not None
        return np.frombuffer(self.mapping, dtype=np.uint8, count=nbytes, offset=offset)


class SharedFilePool:
    """A client's files in a server's shared directory, reused from call to call.

    ``acquire`` writes arrays into a free file (a new one when none is free) and hands it
    out until ``release``; the server has read a file, and written the results it was asked
    to, once it has answered its request.
    """

    def __init__(self, directory: str, keep_bytes: int = KEEP_BYTES) -> None:
        self.directory = directory
        with _swept_lock:  # once per process and directory
            sweep = directory not in _swept
            _swept.add(directory)
        if sweep:
            removed = remove_stale_files(directory)
            if removed:
                logger.info("removed %d shared file(s) left in %s by ended processes", removed, directory)
        self._keep_bytes = keep_bytes
        self._free: list[SharedFile] = []
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        # Delete the files even when the client is never closed.
        self._finalizer = weakref.finalize(self, _unlink_all, self._paths)

    def acquire(self, arrays: Sequence[np.ndarray], reply_bytes: int = 0) -> tuple[SharedFile, list[int], int]:
        """A file holding the arrays (uint8 or int64 little-endian, C-contiguous) back to back
        and room for reply_bytes of results after them; the arrays' sizes in bytes; and where
        the results go (the request's reply_offset; 0 without reply_bytes). OSError when the
        directory cannot take them."""
        buffers = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
        sizes = [len(b) for b in buffers]
        total = sum(sizes)
        reply_offset = 0
        if reply_bytes:  # the results after the arrays, 8-byte aligned
            reply_offset = (total + 7) // 8 * 8
            total = reply_offset + reply_bytes
        with self._lock:
            fitting = [f for f in self._free if f.capacity >= total]
            chosen = min(fitting, key=lambda f: f.capacity) if fitting else None
            if chosen is None and self._free:  # grow the largest free file rather than start a new one
                chosen = max(self._free, key=lambda f: f.capacity)
            if chosen is not None:
                self._free.remove(chosen)
        if chosen is None:
            chosen = self._create()
        try:
            if chosen.capacity < total:
                _grow(chosen, total)
            _write_all(chosen, buffers)
        except OSError:
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
        """Delete a handed-out file instead of reusing it: its request was not answered, so
        the server may still read it, and write results into it."""
        self._delete(shared)

    def close(self) -> None:
        """Delete every file (files still handed out are deleted when released)."""
        with self._lock:
            free, self._free = self._free, []
        for shared in free:
            self._delete(shared)
        self._finalizer()

    def _create(self) -> SharedFile:
        name = f"{NAME_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
        path = os.path.join(self.directory, name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        with self._lock:
            self._paths.add(path)
        return SharedFile(name, fd, 0)

    def _delete(self, shared: SharedFile) -> None:
        path = os.path.join(self.directory, shared.name)
        with self._lock:
            self._paths.discard(path)
        if shared.mapping is not None:
            shared.mapping.close()
        try:
            os.close(shared.fd)
        except OSError:
            pass
        try:
            os.unlink(path)
        except OSError:
            pass


def remove_stale_files(directory: str, stale_after_s: float = STALE_AFTER_S) -> int:
    """Delete this user's client files (``warpdp-<pid>-<hex>``) in directory whose process has
    ended and which have not changed for stale_after_s seconds; returns how many."""
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    now = time.time()
    for name in names:
        match = _OWN_NAME.fullmatch(name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
            if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid()
                    or now - info.st_mtime < stale_after_s or _process_exists(int(match.group(1)))):
                continue
            os.unlink(path)
            removed += 1
        except OSError:
            continue  # gone meanwhile, or not ours to delete
    return removed


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or not a PID at all: leave the file alone)
    return True


def _read_range(fd: int, path: str, total: int, arrays: list[np.ndarray], lo: int, hi: int,
                first: int = 0) -> None:
    """Read bytes lo..hi of the file into the arrays it holds back to back from byte
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
        got = os.preadv(fd, pending[:_IOV_MAX], offset)
        if got == 0:  # shortened while we read
            raise SharedFileRejected(grpc.StatusCode.INVALID_ARGUMENT,
                                     f"invalid shared_file: {path} ended after {offset} of {total} bytes")
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
            logger.warning("could not unregister the mapping of %s: %s", mapped.path, exc)
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


def _grow(shared: SharedFile, nbytes: int) -> None:
    """Make the file and the client's mapping of it hold at least nbytes."""
    capacity = -(-(nbytes + nbytes // 8) // _GROW_STEP) * _GROW_STEP
    # Allocated up front: writing through a mapping into a full file system would be SIGBUS,
    # where fallocate raises OSError (ENOSPC), which the client turns into sending messages.
    os.posix_fallocate(shared.fd, 0, capacity)
    if shared.mapping is not None:
        shared.mapping.close()
        shared.mapping = None
    shared.mapping = mmap.mmap(shared.fd, capacity, flags=mmap.MAP_SHARED | _MAP_POPULATE)
    shared.capacity = capacity


def _write_all(shared: SharedFile, buffers: list[np.ndarray]) -> None:
    """The buffers back to back at the start of the file, through the client's mapping: a
    memory copy (spread over threads when large), where write() went at about half the speed."""
    assert shared.mapping is not None
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


def _unlink_all(paths: set[str]) -> None:
    for path in list(paths):
        try:
            os.unlink(path)
        except OSError:
            pass
    paths.clear()
