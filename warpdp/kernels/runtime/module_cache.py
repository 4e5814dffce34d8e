"""A family's CUDA module, compiled once per device, source, options and kernel list.

Modules are compiled at run time by NVRTC through CuPy (which keeps its own disk cache of the
compiled code). Every family's source defines ``extern "C" __global__ void
<family>_struct_sizes(unsigned long long *out)``, writing the ``sizeof`` of each launch struct
in the order the launcher's dtypes are listed; a module is checked against them when it loads.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .launch_params import check_struct_sizes

__all__ = ["KERNEL_DIR", "Compiler", "CupyCompiler", "ModuleSpec", "load_module", "clear"]

KERNEL_DIR = Path(__file__).resolve().parent.parent  # where the families' .cu files lie


@dataclass(frozen=True)
class ModuleSpec:
    """What a family's module is built from."""

    family: str                       # the source is <family>.cu; its sizes kernel <family>_struct_sizes
    options: tuple[str, ...]          # NVRTC options
    name_expressions: tuple[str, ...]  # template instantiations to compile (C++ names)
    structs: tuple[tuple[str, np.dtype], ...]  # the launch structs, in the sizes kernel's order

    @property
    def source_path(self) -> Path:
        return KERNEL_DIR / f"{self.family}.cu"

    @property
    def sizes_kernel(self) -> str:
        return f"{self.family}_struct_sizes"


class Compiler(Protocol):
    def compile(self, source: str, options: tuple[str, ...], name_expressions: tuple[str, ...]) -> Any: ...

    def struct_sizes(self, module: Any, kernel: str, count: int) -> list[int]: ...


class CupyCompiler:
    """NVRTC through CuPy, in the current device's context."""

    def compile(self, source: str, options: tuple[str, ...], name_expressions: tuple[str, ...]) -> Any:
        import cupy

        return cupy.RawModule(code=source, options=options, name_expressions=list(name_expressions))

    def struct_sizes(self, module: Any, kernel: str, count: int) -> list[int]:
        import cupy

        out = cupy.zeros(count, dtype=cupy.uint64)
        module.get_function(kernel)((1,), (1,), (out,))
        return [int(size) for size in out.get()]  # get() waits for the kernel


_MODULES: dict[tuple[int, str, ModuleSpec], Any] = {}
_LOCK = threading.Lock()


def load_module(spec: ModuleSpec, device_id: int, compiler: Compiler | None = None) -> Any:
    """The compiled module of ``spec`` on device ``device_id`` (call in that device's context),
    compiled and checked at the first call for that source text."""
    source = spec.source_path.read_text()
    key = (device_id, source, spec)
    with _LOCK:
        module = _MODULES.get(key)
        if module is None:
            compiler = compiler or CupyCompiler()
            module = compiler.compile(source, spec.options, spec.name_expressions)
            sizes = compiler.struct_sizes(module, spec.sizes_kernel, len(spec.structs))
            check_struct_sizes(spec.family, dict(spec.structs), sizes)
            _MODULES[key] = module
        return module


def clear() -> None:
    """Forget every module (tests)."""
    with _LOCK:
        _MODULES.clear()

