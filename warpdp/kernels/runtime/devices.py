"""Several GPUs for one job: which devices a call runs on, and its chunks spread over them.

A launcher asks :func:`plan_spread` which of the devices :func:`resolve_devices` validated are
worth the job and what chunk size gives each several chunks, cuts its job into chunks as for
one device, and hands them to :func:`spread`. Each device is driven by a host thread of
its own, which enters the device's context and runs the launcher's per-device runner (its own
module, slots and streams: runners are made per device, see :class:`.runner.Runners`) over a
:class:`SharedChunks`: whichever device is ready takes the next chunk, so a device that is
faster, or less busy with other calls, takes more of them. Chunks write their results into the
caller's output at their own place, so the output is in input order whichever device ran
which chunk; the results are those of one device, bit for bit (each pair is scored alone).

One device takes the calling thread itself: no thread, no shared iterator.

A caller that places work on devices itself (the gRPC server's batcher) sets the devices a
thread's calls run on by default with :func:`use_devices`; a launcher that resolves its
``devices=None`` through :func:`resolve_devices` then follows it with no code of its own.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

__all__ = ["CHUNKS_PER_DEVICE", "SharedChunks", "chunk_limit", "current_device", "device_count", "in_order", "plan_spread", "resolve_devices", "spread", "use_devices"]

# A job spread over several devices is cut into at least this many chunks per device (when it
# is large enough), so that the devices finish about together: the last chunk each takes is
# then a small part of its work.
CHUNKS_PER_DEVICE = 6
# Chunks are never cut below this share of the launcher's own limit (each chunk costs host work),
# and a device is used only for two chunks of that size.
MIN_CHUNK_SHARE = 16

C = TypeVar("C")  # a chunk
T = TypeVar("T")  # what a device's run returns
R = TypeVar("R")  # a chunk's result


def device_count() -> int:
    """CUDA devices this process sees (those CUDA_VISIBLE_DEVICES leaves)."""
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def current_device() -> int:
    """The calling thread's current CUDA device."""
    import cupy

    return int(cupy.cuda.runtime.getDevice())


_DEFAULT_DEVICES: ContextVar[list[int] | None] = ContextVar("warpdp_default_devices", default=None)


@contextmanager
def use_devices(devices: Sequence[int]) -> Iterator[None]:
    """Within the block, calls of this thread (context) with ``devices=None`` run on ``devices``
    (ids as core.backend.check_devices returns them)."""
    token = _DEFAULT_DEVICES.set(list(devices))
    try:
        yield
    finally:
        _DEFAULT_DEVICES.reset(token)


def resolve_devices(devices: Sequence[int] | None) -> list[int]:
    """The GPU ids a call runs on: for None, those :func:`use_devices` set, else every device
    this process sees; else ``devices`` (ids as the entries' core.backend.check_devices returns
    them), each checked against the devices there are (ValueError naming an id this process
    does not see). An id listed twice gets two host threads, which share that device's runner."""
    ids = _DEFAULT_DEVICES.get() if devices is None else list(devices)
    count = device_count()
    if ids is None:
        if count < 1:
            raise ValueError("no CUDA device is visible to this process")
        return list(range(count))
    for device in ids:
        if not 0 <= device < count:
            raise ValueError(f"devices: there is no GPU {device} here (this process sees {count}: "
                             f"ids 0..{count - 1})")
    return ids


def chunk_limit(limit: int, total: int, n_devices: int) -> int:
    """A launcher's chunk size limit (in its own unit: pairs, bytes, cells) for a job of
    ``total`` of that unit spread over ``n_devices``: unchanged on one device, else small
    enough for CHUNKS_PER_DEVICE chunks per device, but not below MIN_CHUNK_SHARE of the limit
    (each chunk costs host work: a small job is not worth cutting finer, and leaves devices idle)."""
    if n_devices <= 1:
        return limit
    floor = max(1, limit // MIN_CHUNK_SHARE)
    return max(floor, min(limit, -(-int(total) // (CHUNKS_PER_DEVICE * n_devices))))


def plan_spread(device_ids: Sequence[int], *sizes: tuple[int, int]) -> tuple[list[int], list[int]]:
    """The devices worth spreading a job over, and the chunk limits to cut it with.

    ``sizes`` are the launcher's (chunk limit, the job's total) in each unit it cuts by (pairs,
    bytes, cells). A device is worth using while the job has two chunks of the smallest size
    (MIN_CHUNK_SHARE of a limit) for each device in some unit: a small job stays on the first
    device, as if it had been given alone, instead of paying for threads and smaller chunks
    (BENCHMARKS.md, "Several GPUs": a 2.4 ms Pair-HMM job took 4.1 ms over four GPUs)."""
    n = len(device_ids)
    if n > 1:
        worth = max(int(total) // (2 * max(1, limit // MIN_CHUNK_SHARE)) for limit, total in sizes)
        n = max(1, min(n, worth))
    return list(device_ids[:n]), [chunk_limit(limit, total, n) for limit, total in sizes]


class SharedChunks(Generic[C]):
    """One job's chunks, taken in order by several device threads (each ``next`` hands out
    one chunk once); :meth:`stop` ends the iteration for everyone (a device failed)."""

    def __init__(self, chunks: Iterable[C]) -> None:
        self._chunks = iter(chunks)
        self._lock = threading.Lock()
        self._stopped = False
        self.taken = 0  # chunks handed out so far

    def __iter__(self) -> Iterator[C]:
        return self

    def __next__(self) -> C:
        with self._lock:
            if self._stopped:
                raise StopIteration
            chunk = next(self._chunks)
            self.taken += 1
            return chunk

    def stop(self) -> None:
        with self._lock:
            self._stopped = True


def spread(device_ids: Sequence[int], chunks: Iterable[C], run_device: Callable[[int, Iterable[C]], T]) -> list[T]:
    """``run_device(device_id, chunks)`` on each device, in that device's context, each on a
    host thread of its own, all taking their chunks from one :class:`SharedChunks`; returns
    what each returned, in the order of ``device_ids``. When a device raises, the others take
    no more chunks, finish what they enqueued, and the first error raised is re-raised."""
    import cupy

    if len(device_ids) == 1:
        with cupy.cuda.Device(device_ids[0]):
            return [run_device(device_ids[0], chunks)]
    shared = SharedChunks(chunks)
    errors: list[BaseException] = []
    errors_lock = threading.Lock()

    def drive(device_id: int) -> Any:
        try:
            with cupy.cuda.Device(device_id):
                return run_device(device_id, shared)
        except BaseException as exc:
            shared.stop()
            with errors_lock:
                errors.append(exc)
            raise

    with ThreadPoolExecutor(len(device_ids), thread_name_prefix="warpdp-device") as pool:
        futures = [pool.submit(drive, device_id) for device_id in device_ids]
        for future in futures:
            future.exception()  # wait for every device, failed or not
    if errors:
        raise errors[0]
    return [future.result() for future in futures]


def in_order(per_device: Iterable[Iterable[tuple[int, R]]]) -> list[R]:
    """The chunk results each device's run returned, as (the chunk's first item, result), merged
    into input order: for results a launcher cannot write into place (ragged ones, CIGARs)."""
    return [result for _, result in sorted((item for results in per_device for item in results),
                                           key=lambda item: item[0])]
