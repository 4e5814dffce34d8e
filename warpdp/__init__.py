"""warpdp: GPU and SIMD CPU dynamic-programming kernels for genomics.

The public API lives in :mod:`warpdp.plugin` and is re-exported here. It is loaded on first
use (PEP 562), so ``import warpdp`` and ``warpdp --version``/``--help`` stay fast and import
neither NumPy's users nor gRPC, CuPy or pysam until a function needs them.
"""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

# The one place the version is written: pyproject.toml reads it from here (setuptools' attr:).
__version__ = "0.1.0"

if TYPE_CHECKING:  # type checkers see the whole API; at run time it loads lazily
    from .plugin import *  # noqa: F401,F403


def _plugin() -> Any:
    # import_module, not `from . import plugin`: the latter asks this module for `plugin` first,
    # which would land back in __getattr__.
    return importlib.import_module("warpdp.plugin")


def _is_submodule(name: str) -> bool:
    here = os.path.dirname(__file__)
    return os.path.exists(os.path.join(here, name + ".py")) or os.path.isdir(os.path.join(here, name))


def __getattr__(name: str) -> Any:
    if (name.startswith("__") and name != "__all__") or _is_submodule(name):
        # `from . import registry` asks for the attribute before importing the submodule:
        # answering it must not load the whole API.
        raise AttributeError(f"module 'warpdp' has no attribute {name!r}")
    plugin = _plugin()

    if name == "__all__":
        return ["__version__", *plugin.__all__]
    if name in plugin.__all__:
        value = getattr(plugin, name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'warpdp' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_plugin().__all__})
