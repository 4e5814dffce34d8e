"""Backend choice shared by every algorithm: "auto" = GPU if usable, else CPU."""
from __future__ import annotations

import functools
import importlib.util
import logging
import os
from collections.abc import Iterable

logger = logging.getLogger("warpdp")

BACKENDS = ("auto", "cpu", "gpu")

# The most CPU threads one call may ask for; the C drivers refuse more (WARPDP_MAX_THREADS in
# cpu_common.h): OpenMP aborts the process when it cannot start the threads it is asked for.
MAX_THREADS = 1024


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run here (no GPU kernel, no CuPy, no usable device)."""


def has_gpu_kernel(algorithm: str) -> bool:
    """Whether this version of warpdp has a GPU kernel for `algorithm` at all (usable or not)."""
    try:
        return importlib.util.find_spec(f"warpdp.kernels.{algorithm}") is not None
    except ModuleNotFoundError:  # no warpdp.kernels package at all
        return False


@functools.cache
def gpu_status(algorithm: str) -> tuple[bool, str]:
    """Whether the GPU backend of `algorithm` can run here, and why not when it cannot."""
    if not has_gpu_kernel(algorithm):
        return False, f"this version of warpdp has no GPU kernel for {algorithm}"
    try:
        import cupy
    except Exception as exc:  # ImportError, or CUDA libraries that fail to load
        return False, f"CuPy is not usable ({exc.__class__.__name__}: {exc}); pip install 'warpdp[gpu]'"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no usable CUDA device ({exc})"
    if count < 1:
        return False, "no CUDA device found"
    return True, f"{count} CUDA device(s)"


def choose_backend(requested: str, algorithm: str) -> str:
    """Resolve "auto" | "cpu" | "gpu" to the backend that will run `algorithm`."""
    if requested not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {requested!r}")
    if requested == "cpu":
        return "cpu"
    usable, reason = gpu_status(algorithm)
    if requested == "gpu":
        if not usable:
            raise BackendUnavailableError(f"backend='gpu' was requested for {algorithm}, but {reason}")
        return "gpu"
    chosen = "gpu" if usable else "cpu"
    _log_auto_choice(algorithm, chosen, reason)
    return chosen


@functools.cache
def _log_auto_choice(algorithm: str, chosen: str, reason: str) -> None:
    # Said once per process and algorithm, not on every call.
    logger.info("warpdp %s: backend 'auto' picked %s (%s)", algorithm, chosen.upper(), reason)


def check_devices(devices: object) -> list[int] | None:
    """A family entry's ``devices=`` (the GPU ids to spread a job over; None: every GPU this
    process sees) as a list of ints, its shape checked whichever backend runs: TypeError /
    ValueError naming ``devices``. Ids are checked against the devices there are when the GPU
    backend runs (warpdp.kernels.runtime.devices.resolve_devices, ValueError naming the id);
    the CPU backend ignores them."""
    if devices is None:
        return None
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Iterable):
        raise TypeError(f"devices must be a list of GPU ids or None, not {type(devices).__name__}")
    ids = []
    for device in devices:
        if isinstance(device, bool) or not hasattr(device, "__index__"):
            raise TypeError(f"devices must hold ints, not {type(device).__name__} ({device!r})")
        device = int(device.__index__())
        if device < 0:
            raise ValueError(f"devices: {device} is not a GPU id (ids are 0 and up)")
        ids.append(device)
    if not ids:
        raise ValueError("devices must name at least one GPU (or be None for all of them)")
    return ids


def resolve_threads(threads: int | None) -> int:
    """CPU threads to use: ``threads``, else $OMP_NUM_THREADS where set (as OpenMP programs do),
    else all cores available to this process."""
    if threads is None:
        from_environment = os.environ.get("OMP_NUM_THREADS", "").strip()
        if from_environment:
            return _omp_num_threads(from_environment)
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be an int or None, not {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    if threads > MAX_THREADS:
        raise ValueError(f"threads must be at most {MAX_THREADS}, not {threads}")
    return threads


def _omp_num_threads(text: str) -> int:
    # OpenMP allows a list, one count per nesting level: the first is the one for us.
    first = text.split(",")[0].strip()
    if not first.isdigit() or not 1 <= int(first) <= MAX_THREADS:
        raise ValueError(f"OMP_NUM_THREADS must be a whole number from 1 to {MAX_THREADS}, not {text!r}")
    return int(first)


def resolve_cpu_isa(cpu_isa: str | None, isa_names: tuple[str, ...]) -> str | None:
    """The CPU variant asked for (argument, else $WARPDP_CPU_ISA), or None for the best one."""
    cpu_isa = cpu_isa or os.environ.get("WARPDP_CPU_ISA") or None
    if cpu_isa is not None and cpu_isa not in isa_names:
        raise ValueError(f"cpu_isa (or WARPDP_CPU_ISA) must be one of {', '.join(isa_names)}, not {cpu_isa!r}")
    return cpu_isa


def cpu_name() -> str:
    """The CPU's model name, for logs, server info and benchmark reports."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"
