"""Moved to :mod:`warpdp.kernels.runtime.slots`; this name stays until the gRPC server imports
the new one (its package is being split in parallel, issue #25)."""
from .runtime.slots import *  # noqa: F401,F403
from .runtime.slots import __all__  # noqa: F401
