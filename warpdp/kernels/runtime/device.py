"""The current CUDA device over CuPy, for runners that record a chunk's asynchronous calls and
make them in one go without the interpreter lock (:class:`cuda_calls.CallList`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .module_cache import ModuleSpec, load_module
from .runner import device_properties, new_event, new_stream
from .slots import cupy_pinned

__all__ = ["CupyDevice", "device_info"]

_CUDA_MEMORY_TYPE_HOST = 1  # cudaMemoryTypeHost: page-locked host memory


class CupyDevice:
    """A family's compiled module on the current device, with the device operations a runner
    needs. Copies, launches, event records and stream waits are recorded (:meth:`h2d` ...
    :meth:`wait`) and made by :meth:`issue`, all at once; a runner records and issues under
    its lock."""

    def __init__(self, spec: ModuleSpec) -> None:
        import cupy

        from .cuda_calls import CallList

        self.cupy = cupy
        self.device_id = cupy.cuda.runtime.getDevice()
        props = device_properties(self.device_id)
        self.sm_count = int(props["multiProcessorCount"])
        self.smem_per_sm = int(props.get("sharedMemPerMultiprocessor", 228 * 1024))
        self.regs_per_sm = int(props.get("regsPerMultiprocessor", 65536))
        self.module = load_module(spec, self.device_id)
        self.calls = CallList()
        self.context = cupy.cuda.driver.ctxGetCurrent()  # the context CuPy loaded the module in

    def alloc_device(self, nbytes: int) -> Any:
        return self.cupy.cuda.alloc(max(nbytes, 1))

    def alloc_pinned(self, nbytes: int) -> tuple[Any, np.ndarray]:
        return cupy_pinned(self.cupy, nbytes)

    def stream(self) -> Any:
        return new_stream(self.cupy)

    def event(self) -> Any:
        return new_event(self.cupy)

    def timing_event(self) -> Any:
        return new_event(self.cupy, timing=True)

    def page_locked(self, array: np.ndarray) -> bool:
        """Whether CUDA knows the array's memory as page-locked: the GPU then copies it
        directly. (Asked of the first byte only: were the rest pageable, the copy from it would
        still be right, only synchronous.)"""
        if not array.nbytes:
            return False
        runtime = self.cupy.cuda.runtime
        try:
            return runtime.pointerGetAttributes(array.ctypes.data).type == _CUDA_MEMORY_TYPE_HOST
        except runtime.CUDARuntimeError:  # memory CUDA has never seen (older CUDA versions)
            return False

    def h2d(self, dst: int, src: np.ndarray, nbytes: int, stream: Any) -> None:
        self.calls.to_device(dst, src.ctypes.data, nbytes, stream.ptr)

    def d2h(self, dst: np.ndarray, src: int, nbytes: int, stream: Any) -> None:
        self.calls.to_host(dst.ctypes.data, src, nbytes, stream.ptr)

    def record(self, event: Any, stream: Any) -> None:
        self.calls.record(event.ptr, stream.ptr)

    def wait(self, stream: Any, event: Any) -> None:
        self.calls.wait(stream.ptr, event.ptr)

    def issue(self) -> None:
        """Make the calls recorded since the last issue (or discard)."""
        self.calls.issue(self.context)

    def discard(self) -> None:
        """Forget the calls recorded since the last issue (their enqueueing failed half-way)."""
        self.calls.clear()


def device_info() -> dict[str, Any]:
    """Name, memory and shape of the current CUDA device."""
    import cupy

    runtime = cupy.cuda.runtime
    device_id = runtime.getDevice()
    props = runtime.getDeviceProperties(device_id)
    free, total = runtime.memGetInfo()
    name = props["name"]
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "device_id": device_id,
        "compute_capability": f"{props['major']}.{props['minor']}",
        "multiprocessors": int(props["multiProcessorCount"]),
        "total_memory_bytes": int(total),
        "free_memory_bytes": int(free),
        "cuda_runtime_version": runtime.runtimeGetVersion(),
        "cupy_version": cupy.__version__,
    }
