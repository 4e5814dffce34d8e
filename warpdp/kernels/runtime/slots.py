"""The multi-buffered chunk memory the GPU launchers share.

Every launcher keeps two (or more) chunks in flight: while the GPU computes one, the host fills
another's pinned input buffer. A :class:`ChunkSlot` is one of them: pinned input and output
buffers, device memory, and what the launcher tracks about the chunk in it. Buffers only grow
(with a quarter of headroom), so steady work allocates nothing. A :class:`SlotRing` hands the
slots to chunks in turn, across calls, so that one call's last chunks overlap the next call's
first (the gRPC server runs two GPU submissions at once for large jobs).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ALIGN", "ChunkSlot", "Held", "SlotRing", "cupy_pinned", "pinned_empty", "register_read_only", "round_up"]

ALIGN = 256  # device sections start on this boundary (coalesced loads, 16-byte vectors)


def round_up(value: int, step: int = ALIGN) -> int:
    return (value + step - 1) // step * step


def cupy_pinned(cupy: Any, nbytes: int) -> tuple[Any, np.ndarray]:
    """Pinned host memory of nbytes and a uint8 array over it (keep both: the array does not own it)."""
    memory = cupy.cuda.alloc_pinned_memory(max(nbytes, 1))
    return memory, np.ndarray(max(nbytes, 1), dtype=np.uint8, buffer=memory)


def pinned_empty(nbytes: int) -> np.ndarray:
    """An uninitialised uint8 array of nbytes in page-locked host memory from CuPy's pinned
    pool; the GPU launchers upload such input without copying it first. The block is a power
    of two of at least 1 MiB: the pool reuses only blocks of the size asked for."""
    import cupy

    memory = cupy.cuda.alloc_pinned_memory(1 << max(20, (max(nbytes, 1) - 1).bit_length()))
    return np.ndarray(nbytes, dtype=np.uint8, buffer=memory)  # keeps the memory until it goes


# cudaHostRegisterReadOnly: the GPU only reads the memory (how a read-only mapping can be registered);
# cudaHostRegisterPortable: page-locked for every device's context, not only the current one's.
_HOST_REGISTER_READ_ONLY = 8
_HOST_REGISTER_PORTABLE = 1


def register_read_only(address: int, nbytes: int) -> Callable[[], None]:
    """Page-lock nbytes of host memory at address, which the GPU will only read (the gRPC
    server's mapping of a client's shared file), so that the launchers upload from it directly.
    Returns the function that unregisters it; raises CuPy's CUDARuntimeError when CUDA refuses."""
    import cupy

    runtime = cupy.cuda.runtime
    runtime.hostRegister(address, nbytes, _HOST_REGISTER_READ_ONLY | _HOST_REGISTER_PORTABLE)
    return lambda: runtime.hostUnregister(address)


class ChunkSlot:
    """One of the chunk buffers in flight: pinned input/output and device memory."""

    def __init__(self) -> None:
        self.pinned_in: np.ndarray | None = None
        self.pinned_in_mem: Any = None
        self.pinned_out: np.ndarray | None = None
        self.pinned_out_mem: Any = None
        self.device: Any = None
        self.device_bytes = 0
        self.stream: Any = None   # launchers with a stream per slot
        self.pending: Any = None  # what the launcher needs to collect the chunk's results
        self.done: Any = None     # event recorded after the chunk's last copy back

    def ensure(self, in_bytes: int, out_bytes: int, device_bytes: int,
               alloc_pinned: Callable[[int], tuple[Any, np.ndarray]], alloc_device: Callable[[int], Any]) -> None:
        """Grow the buffers to hold a chunk of these sizes."""
        if self.pinned_in is None or len(self.pinned_in) < in_bytes:
            self.pinned_in_mem, self.pinned_in = alloc_pinned(round_up(in_bytes + in_bytes // 4))
        if self.pinned_out is None or len(self.pinned_out) < out_bytes:
            self.pinned_out_mem, self.pinned_out = alloc_pinned(round_up(out_bytes + out_bytes // 4))
        if self.device is None or self.device_bytes < device_bytes:
            self.device = None  # free first: the pool can reuse it
            self.device_bytes = round_up(device_bytes + device_bytes // 4)
            self.device = alloc_device(self.device_bytes)

    def upload(self, runtime: Any, nbytes: int) -> int:
        """Enqueue the copy of the first nbytes of the pinned input to the device buffer on the
        slot's stream; the device buffer's address (where the launcher's offsets start)."""
        base = int(self.device.ptr)
        runtime.memcpyAsync(base, self.pinned_in.ctypes.data, nbytes, 1, self.stream.ptr)  # 1: host to device
        return base


class Held:
    """A chunk enqueued in a slot: how its results leave the slot, and what that returned."""

    __slots__ = ("copy_out", "result")

    def __init__(self, copy_out: Callable[[ChunkSlot], Any]) -> None:
        self.copy_out = copy_out
        self.result: Any = None


class SlotRing:
    """The chunk slots (two unless asked), taken in turn by consecutive chunks, whichever call
    they belong to.

    A launcher takes slots and enqueues under its own lock, one call at a time; it collects its
    call's results after letting go of that lock, so the next call's host work and kernels
    overlap them. Whoever needs a slot first finishes the chunk in it: waits for its ``done``
    event and runs its ``copy_out`` (the next chunk to take the slot, or the chunk's own call).
    """

    def __init__(self, count: int = 2) -> None:
        self.slots = [ChunkSlot() for _ in range(count)]
        self._locks = [threading.Lock() for _ in range(count)]
        self._next = 0

    def take(self) -> tuple[int, ChunkSlot]:
        """The next slot, its previous chunk finished (call under the launcher's lock)."""
        index = self._next
        self._next = (index + 1) % len(self.slots)
        self._finish(index)
        return index, self.slots[index]

    def hold(self, index: int, copy_out: Callable[[ChunkSlot], Any]) -> Held:
        """Mark the chunk just enqueued in slot `index` (its ``done`` event recorded)."""
        held = Held(copy_out)
        self.slots[index].pending = held
        return held

    def collect(self, chunks: list[tuple[int, Held]]) -> list[Any]:
        """Wait for a call's chunks (slot, Held) and return what their copy_out returned, in order."""
        for index, held in chunks:
            self._finish(index, held)
        return [held.result for _, held in chunks]

    def _finish(self, index: int, only: Held | None = None) -> None:
        slot = self.slots[index]
        with self._locks[index]:
            held = slot.pending
            if held is None or (only is not None and held is not only):
                return  # empty, or that chunk was finished already (by whoever took the slot)
            slot.pending = None  # free even if the wait below raises
            slot.done.synchronize()
            held.result = held.copy_out(slot)
