"""Kept so that imports of this path keep working: the code lives in
:mod:`warpdp.plugin.core.backend`."""
from .core.backend import (
    BACKENDS,
    MAX_THREADS,
    BackendUnavailableError,
    choose_backend,
    cpu_name,
    gpu_status,
    logger,
    resolve_cpu_isa,
    resolve_threads,
)

__all__ = [
    "BACKENDS", "MAX_THREADS", "BackendUnavailableError", "choose_backend", "cpu_name",
    "gpu_status", "logger", "resolve_cpu_isa", "resolve_threads",
]
