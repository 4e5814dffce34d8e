"""Kept so that ``warpdp.plugin.backend`` imports keep working: the code lives in :mod:`warpdp.plugin.core.backend`."""
from .core.backend import (  # noqa: F401
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
