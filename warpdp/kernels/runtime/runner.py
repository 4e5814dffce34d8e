"""What every family's GPU runner shares: one runner per device (and configuration), the
chunk loop over the pinned slots with its cancel checks, and CuPy streams and events.
(Spreading one job's chunks over several devices: :mod:`.devices`.)"""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

from ...plugin.cancel import CancelCheck, check_cancelled
from .slots import ChunkSlot, Held, SlotRing, cupy_pinned

__all__ = ["ChunkRunner", "CupyChunkRunner", "Runners", "device_properties", "new_event", "new_stream", "pinned_allocator"]

C = TypeVar("C")  # a chunk as the launcher cuts its input
P = TypeVar("P")  # a chunk's plan
R = TypeVar("R")  # a runner

# How a chunk's results leave its slot once the GPU is done with it.
CopyOut = Callable[[ChunkSlot], Any]


class ChunkRunner:
    """A runner's chunk slots and the lock under which one call at a time enqueues.

    Slots are taken in turn by consecutive chunks, whichever call they belong to, so one call's
    last chunks overlap the next call's first: a call collects its results after letting go of
    the lock (see :class:`SlotRing`)."""

    def __init__(self, slots: int, alloc_pinned: Callable[[int], tuple[Any, Any]],
                 alloc_device: Callable[[int], Any]) -> None:
        self.ring = SlotRing(slots)
        self.lock = threading.Lock()
        self.alloc_pinned = alloc_pinned
        self.alloc_device = alloc_device

    def grow(self, slot: ChunkSlot, in_bytes: int, out_bytes: int, device_bytes: int) -> None:
        """Make the slot's buffers hold a chunk of these sizes."""
        slot.ensure(in_bytes, out_bytes, device_bytes, self.alloc_pinned, self.alloc_device)

    def run_chunks(self, chunks: Iterable[C], plan: Callable[[C], P],
                   enqueue: Callable[[P, int, ChunkSlot], CopyOut], cancelled: CancelCheck | None = None) -> list[Any]:
        """For each chunk: check for cancellation, plan it (before taking a slot, which waits for
        the chunk that had it: planning overlaps the GPU), take a slot and enqueue the chunk in
        it. Then wait for this call's chunks and return what their copy-outs returned, in order;
        after an error too, so that nothing enqueued is left running. JobCancelled, once
        ``cancelled`` says so, comes after the chunks already enqueued have finished."""
        mine: list[tuple[int, Held]] = []
        try:
            with self.lock:
                for chunk in chunks:
                    check_cancelled(cancelled)
                    chunk_plan = plan(chunk)
                    index, slot = self.ring.take()
                    copy_out = enqueue(chunk_plan, index, slot)
                    mine.append((index, self.ring.hold(index, copy_out)))
        finally:
            results = self.ring.collect(mine)
        return results


class CupyChunkRunner(ChunkRunner):
    """A :class:`ChunkRunner` on one CUDA device through CuPy: CuPy's pinned host and device
    buffers, and a stream per slot (made on the current device, which must be ``device_id``)."""

    def __init__(self, cupy: Any, slots: int, device_id: int) -> None:
        super().__init__(slots, pinned_allocator(cupy), cupy.cuda.alloc)
        self.cupy = cupy
        self.device_id = device_id
        for slot in self.ring.slots:
            slot.stream = new_stream(cupy)


class Runners(Generic[R]):
    """The runners of one family, made at first use: one per key (a device, a configuration)."""

    def __init__(self, make: Callable[..., R]) -> None:
        self._make = make
        self._runners: dict[Hashable, R] = {}
        self._lock = threading.Lock()

    def get(self, *key: Hashable) -> R:
        with self._lock:
            if key not in self._runners:
                self._runners[key] = self._make(*key)
            return self._runners[key]

    def on_device(self, device_id: int | None = None, *key: Hashable) -> R:
        """The runner of a device (default: the current one) and key, made at first use by
        ``make(device_id, *key)`` in that device's context: its module, slots and streams are
        that device's."""
        import cupy

        from .devices import current_device

        device_id = current_device() if device_id is None else device_id
        with cupy.cuda.Device(device_id):
            return self.get(device_id, *key)

    def clear(self) -> None:
        with self._lock:
            self._runners.clear()


def device_properties(device_id: int) -> dict[str, Any]:
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(device_id)


def pinned_allocator(cupy: Any) -> Callable[[int], tuple[Any, Any]]:
    return lambda nbytes: cupy_pinned(cupy, nbytes)


def new_stream(cupy: Any) -> Any:
    """A stream that does not synchronise with the legacy default stream."""
    return cupy.cuda.Stream(non_blocking=True)


def new_event(cupy: Any, timing: bool = False) -> Any:
    return cupy.cuda.Event(block=False, disable_timing=not timing)
