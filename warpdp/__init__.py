"""warpdp: GPU and SIMD CPU dynamic-programming kernels for genomics.

The public API lives in :mod:`warpdp.plugin` and is re-exported here.
"""
from .plugin import *  # noqa: F401,F403
from .plugin import __all__ as _plugin_all

__version__ = "0.1.0"
__all__ = ["__version__", *_plugin_all]
