"""A stand-in for CuPy that logs the device calls the GPU launchers make, so that their host
side (module loading, occupancy, slots, streams, enqueueing, collecting) runs on the CPU.
Nothing is computed: device memory is address arithmetic and results stay zero."""
from __future__ import annotations

import threading
import types
from typing import Any

import numpy as np


def make_fake_cupy(struct_sizes: dict[str, list[int]], n_devices: int = 1,
                   fatbin_loads: bool = False) -> tuple[types.ModuleType, list[tuple]]:
    """The fake ``cupy`` module and the list it logs to. ``struct_sizes``: what each
    ``<family>_struct_sizes`` kernel reports; ``n_devices``: the logical GPUs it shows (each
    thread has its current device, as with CUDA; its context is the device id + 1);
    ``fatbin_loads``: whether a module given by path (a prebuilt fatbin) loads, else its first
    get_function fails as CUDA does on a card the file has no code for (the launchers then
    compile with NVRTC, whether or not this checkout has fatbins)."""
    log: list[tuple] = []
    counters = {"address": 1 << 44, "stream": 0, "event": 0}
    current = threading.local()

    class CUDARuntimeError(Exception):
        pass

    def get_device() -> int:
        return getattr(current, "device", 0)

    def count(name: str) -> int:
        counters[name] += 1
        return counters[name]

    class Memory:
        def __init__(self, nbytes: int) -> None:
            self.ptr = counters["address"]
            counters["address"] += (nbytes // 4096 + 2) * 4096
            log.append(("alloc", nbytes, get_device()))

    class Device:
        def __init__(self, device_id: int = 0) -> None:
            if not 0 <= device_id < n_devices:
                raise CUDARuntimeError(f"invalid device ordinal {device_id}")
            self.device_id = device_id
            self.previous: list[int] = []

        def __enter__(self) -> Device:
            self.previous.append(get_device())
            current.device = self.device_id
            return self

        def __exit__(self, *exc: object) -> bool:
            current.device = self.previous.pop()
            return False

    class Stream:
        def __init__(self, non_blocking: bool = False) -> None:
            self.ptr = 0x5000 + count("stream")

        def wait_event(self, event: Event) -> None:
            log.append(("wait", self.ptr, event.ptr))

    class Event:
        def __init__(self, block: bool = False, disable_timing: bool = True) -> None:
            self.ptr = 0x90000 + count("event")

        def record(self, stream: Stream) -> None:
            log.append(("record", self.ptr, stream.ptr))

        def synchronize(self) -> None:
            log.append(("sync", self.ptr))

    class Array:
        def __init__(self, values: np.ndarray) -> None:
            self.values = values
            self.data = types.SimpleNamespace(ptr=Memory(values.nbytes).ptr)

        def get(self) -> np.ndarray:
            return self.values

    class Kernel:
        def __init__(self, name: str) -> None:
            self.name = name
            self.kernel = types.SimpleNamespace(ptr=0x100 + sum(map(ord, name)) % 997)
            self.num_regs = 64
            self.attributes: dict[str, int] = {}

        def __call__(self, grid: tuple, block: tuple, args: tuple, stream: Stream | None = None,
                     shared_mem: int = 0) -> None:
            if self.name.endswith("_struct_sizes"):
                args[0].values[:] = struct_sizes[self.name]
                return
            log.append(("launch", self.name, grid[0], block[0], tuple(int(a) for a in args), shared_mem,
                        get_device()))

    class RawModule:
        def __init__(self, code: str | None = None, options: tuple = (), name_expressions: list | None = None,
                     path: str | None = None) -> None:
            self.path = path
            if path is None:
                log.append(("compile", tuple(options), tuple(name_expressions or ()), get_device()))
            else:
                log.append(("load", path, get_device()))

        def get_function(self, name: str) -> Kernel:
            if self.path is not None and not fatbin_loads:
                raise driver.CUDADriverError("CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available")
            return Kernel(name)

    def memcpy(dst: int, src: int, nbytes: int, kind: int, stream: int) -> None:
        log.append(("memcpy", kind, nbytes, stream, get_device()))

    def pointer_attributes(address: int) -> Any:
        raise CUDARuntimeError("unknown memory")

    runtime = types.SimpleNamespace(
        getDevice=get_device, getDeviceCount=lambda: n_devices, memcpyAsync=memcpy, deviceSynchronize=lambda: None,
        memsetAsync=lambda dst, value, nbytes, stream: log.append(("memset", nbytes, stream)),
        getDeviceProperties=lambda device_id: {"multiProcessorCount": 132, "sharedMemPerMultiprocessor": 233472,
                                               "regsPerMultiprocessor": 65536},
        CUDARuntimeError=CUDARuntimeError, pointerGetAttributes=pointer_attributes)
    driver = types.SimpleNamespace(
        CUDADriverError=type("CUDADriverError", (Exception,), {}), ctxGetCurrent=lambda: get_device() + 1,
        occupancyMaxActiveBlocksPerMultiprocessor=lambda function, threads, shared: 2)
    cuda = types.SimpleNamespace(
        Device=Device, Stream=Stream, Event=Event, runtime=runtime, driver=driver,
        alloc=Memory, alloc_pinned_memory=lambda nbytes: bytearray(nbytes))
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda
    cupy.RawModule = RawModule
    cupy.uint64 = np.uint64
    cupy.zeros = lambda n, dtype=None: Array(np.zeros(n, np.uint64))
    cupy.asarray = lambda values: Array(np.asarray(values))
    return cupy, log


def install_fake_cupy(monkeypatch: Any, struct_sizes: dict[str, list[int]], n_devices: int = 1) -> list[tuple]:
    """make_fake_cupy's module imported as ``cupy`` (with ``cupy.cuda`` and ``cupy.cuda.driver``) and
    cuda_calls.CallList logging to the same list, until ``monkeypatch`` undoes it; the log."""
    import sys

    from warpdp.kernels.runtime import cuda_calls

    cupy, log = make_fake_cupy(struct_sizes, n_devices)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cupy.cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.driver", cupy.cuda.driver)
    monkeypatch.setattr(cuda_calls, "CallList", lambda: FakeCallList(log))
    return log


class FakeCallList:
    """cuda_calls.CallList without the driver: issue logs the calls."""

    def __init__(self, log: list[tuple]) -> None:
        self.log = log
        self.calls: list[tuple] = []

    def __len__(self) -> int:
        return len(self.calls)

    def to_device(self, destination: int, source: int, nbytes: int, stream: int) -> None:
        self.calls.append(("to_device", nbytes, stream))

    def to_host(self, destination: int, source: int, nbytes: int, stream: int) -> None:
        self.calls.append(("to_host", nbytes, stream))

    def launch(self, function: int, grid: int, block: int, shared_bytes: int, stream: int, args: tuple) -> None:
        self.calls.append(("launch", function, grid, block, shared_bytes, stream, tuple(args)))

    def record(self, event: int, stream: int) -> None:
        self.calls.append(("record", event, stream))

    def wait(self, stream: int, event: int) -> None:
        self.calls.append(("wait", stream, event))

    def clear(self) -> None:
        self.calls.clear()

    def issue(self, context: int) -> None:
        self.log.append(("issue", context, len(self.calls)))
        self.log.extend(self.calls)
        self.calls.clear()
