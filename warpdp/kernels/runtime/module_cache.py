"""A family's CUDA module, loaded once per device, source, options and kernel list.

A module is loaded from the family's fatbin, compiled ahead of time with the package, when that
fatbin matches (:mod:`.prebuilt`); otherwise, or when the card cannot load it, it is compiled at
run time by NVRTC through CuPy (which keeps its own disk cache of the compiled code). Which way
each module came is kept for diagnostics (:func:`routes`). Every family's source defines
``extern "C" __global__ void <family>_struct_sizes(unsigned long long *out)``, writing the
``sizeof`` of each launch struct
in the order the launcher's dtypes are listed; a module is checked against them when it loads.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from . import prebuilt
from .launch_params import check_struct_sizes

__all__ = ["KERNEL_DIR", "Compiler", "CupyCompiler", "ModuleSpec", "load_module", "routes", "clear"]

KERNEL_DIR = Path(__file__).resolve().parent.parent  # where the families' .cu files lie


@dataclass(frozen=True)
class ModuleSpec:
    """What a family's module is built from."""

    family: str                       # the source is <family>.cu; its sizes kernel <family>_struct_sizes
    options: tuple[str, ...]          # NVRTC options (nvcc takes the same for the fatbin)
    name_expressions: tuple[str, ...]  # every kernel the launcher gets (C++ names, templates instantiated)
    structs: tuple[tuple[str, np.dtype], ...]  # the launch structs, in the sizes kernel's order

    @property
    def source_path(self) -> Path:
        return KERNEL_DIR / f"{self.family}.cu"

    @property
    def sizes_kernel(self) -> str:
        return f"{self.family}_struct_sizes"


class Compiler(Protocol):
    def compile(self, source: str, options: tuple[str, ...], name_expressions: tuple[str, ...]) -> Any: ...

    def load(self, path: Path, kernels: dict[str, str]) -> Any: ...

    def load_errors(self) -> tuple[type[BaseException], ...]: ...

    def struct_sizes(self, module: Any, kernel: str, count: int) -> list[int]: ...


class CupyCompiler:
    """NVRTC through CuPy, in the current device's context."""

    def compile(self, source: str, options: tuple[str, ...], name_expressions: tuple[str, ...]) -> Any:
        import cupy

        return cupy.RawModule(code=source, options=options, name_expressions=list(name_expressions))

    def load(self, path: Path, kernels: dict[str, str]) -> Any:
        """The fatbin at ``path`` (no NVRTC; CuPy loads it on the first get_function)."""
        import cupy

        return prebuilt.PrebuiltModule(cupy.RawModule(path=str(path)), kernels)

    def load_errors(self) -> tuple[type[BaseException], ...]:
        """What a fatbin the card cannot run raises (no code for it, PTX too new for the driver)."""
        import cupy

        return (cupy.cuda.driver.CUDADriverError, OSError)

    def struct_sizes(self, module: Any, kernel: str, count: int) -> list[int]:
        import cupy

        out = cupy.zeros(count, dtype=cupy.uint64)
        module.get_function(kernel)((1,), (1,), (out,))
        return [int(size) for size in out.get()]  # get() waits for the kernel


_MODULES: dict[tuple[int, str, ModuleSpec], Any] = {}
_ROUTES: dict[tuple[int, str], str] = {}  # (device, family) -> "fatbin" or "nvrtc", of the last load
_LOCK = threading.Lock()


def load_module(spec: ModuleSpec, device_id: int, compiler: Compiler | None = None) -> Any:
    """The module of ``spec`` on device ``device_id`` (call in that device's context), loaded
    from its fatbin or compiled, and checked, at the first call for that source text."""
    source = spec.source_path.read_text()
    key = (device_id, source, spec)
    with _LOCK:
        module = _MODULES.get(key)
        if module is None:
            compiler = compiler or CupyCompiler()
            module = _load_prebuilt(spec, source, compiler)
            route = "fatbin"
            if module is None:
                module = compiler.compile(source, spec.options, spec.name_expressions)
                route = "nvrtc"
                _check_sizes(spec, compiler, module)
            _MODULES[key] = module
            _ROUTES[device_id, spec.family] = route
        return module


def _load_prebuilt(spec: ModuleSpec, source: str, compiler: Compiler) -> Any | None:
    """The family's fatbin, loaded and checked, or None (logged once) to compile with NVRTC."""
    found = prebuilt.find_prebuilt(spec, source)
    if isinstance(found, str):
        prebuilt.log_once(f"{spec.family}: compiling with NVRTC: {found}")
        return None
    try:
        module = compiler.load(found.path, found.kernels)
        _check_sizes(spec, compiler, module)  # the first kernel fetched: CUDA loads the fatbin here
    except compiler.load_errors() as error:
        prebuilt.log_once(f"{spec.family}: compiling with NVRTC: this device cannot load {found.path.name}: {error}")
        return None
    return module


def _check_sizes(spec: ModuleSpec, compiler: Compiler, module: Any) -> None:
    sizes = compiler.struct_sizes(module, spec.sizes_kernel, len(spec.structs))
    check_struct_sizes(spec.family, dict(spec.structs), sizes)


def routes() -> dict[tuple[int, str], str]:
    """How each (device, family) module loaded last: "fatbin" or "nvrtc"."""
    with _LOCK:
        return dict(_ROUTES)


def clear() -> None:
    """Forget every module (tests)."""
    with _LOCK:
        _MODULES.clear()
        _ROUTES.clear()

