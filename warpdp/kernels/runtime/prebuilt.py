"""Kernels compiled ahead of time: a family's fatbin, shipped with the package, and the checks
that decide whether it may stand in for an NVRTC compile.

The package build (``setup.py build_ext``, :mod:`warpdp.kernels.runtime.fatbin_build`) compiles
each ``<family>.cu`` with nvcc into ``fatbin/<family>.fatbin`` (SASS for every architecture of
:data:`TARGETS`, PTX for the newest) and writes ``fatbin/<family>.json`` beside it: the hash of
the source it was built from, the options, and each kernel's name expression with its mangled
name. A fatbin is used only when that record matches the source installed beside it, the
launcher's options and every kernel the launcher asks for; otherwise (or when
``WARPDP_NO_FATBIN`` is set, or the card cannot load it) the module is compiled by NVRTC.
No CuPy at import.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .module_cache import ModuleSpec

__all__ = ["PREBUILT_DIR", "NO_FATBIN_ENV", "TARGETS", "MANIFEST_FORMAT", "Prebuilt", "PrebuiltModule",
           "default_specs", "find_prebuilt", "summary", "source_digest", "log_once"]

PREBUILT_DIR = Path(__file__).resolve().parent.parent / "fatbin"  # warpdp/kernels/fatbin
NO_FATBIN_ENV = "WARPDP_NO_FATBIN"  # set (not "0"): always compile with NVRTC
# nvcc code targets: SASS for Ampere, Hopper and Blackwell, and PTX of the newest for later cards
# (their driver compiles it when the module loads).
TARGETS = ("sm_80", "sm_90", "sm_100", "compute_100")
MANIFEST_FORMAT = 1

_log = logging.getLogger("warpdp.kernels")
_logged: set[str] = set()
_logged_lock = threading.Lock()


def log_once(message: str) -> None:
    """Log ``message`` at debug level the first time it is seen in this process."""
    with _logged_lock:
        if message in _logged:
            return
        _logged.add(message)
    _log.debug(message)


def default_specs() -> list[ModuleSpec]:
    """Every family's module spec as its launcher uses it by default (no tuning overrides from
    the environment): the kernels the fatbins are built with."""
    from .. import align, edit, pairhmm, seedext, xdrop

    return [pairhmm.MODULE, xdrop.module_spec(xdrop.WIDE_CONFIGS), seedext.MODULE, align.MODULE, edit.MODULE]


def summary() -> str:
    """One line for `warpdp info`: which families' kernels load from a fatbin, which compile."""
    prebuilt: list[str] = []
    compiled: dict[str, list[str]] = {}  # why -> families
    for spec in default_specs():
        found = find_prebuilt(spec, spec.source_path.read_text())
        if isinstance(found, str):
            compiled.setdefault(found, []).append(spec.family)
        else:
            prebuilt.append(spec.family)
    parts = [f"prebuilt fatbin ({', '.join(TARGETS)}) for {', '.join(prebuilt)}"] if prebuilt else []
    parts += [f"NVRTC at first use for {', '.join(families)} ({why})" for why, families in compiled.items()]
    return "GPU kernels: " + "; ".join(parts)


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


@dataclass(frozen=True)
class Prebuilt:
    """A fatbin that matches a launcher's module spec."""

    path: Path
    kernels: dict[str, str]  # name expression -> mangled name in the fatbin


def find_prebuilt(spec: ModuleSpec, source: str, directory: Path | None = None) -> Prebuilt | str:
    """The fatbin of ``spec`` in ``directory`` (default :data:`PREBUILT_DIR`) when it was built
    from ``source`` with the spec's options and holds every kernel it names; else why not."""
    if os.environ.get(NO_FATBIN_ENV, "0") not in ("", "0"):
        return f"{NO_FATBIN_ENV} is set"
    directory = PREBUILT_DIR if directory is None else directory
    manifest_path = directory / f"{spec.family}.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        return f"no prebuilt {manifest_path.name} (the package was built without nvcc)"
    except (OSError, ValueError) as error:
        return f"unreadable {manifest_path.name}: {error}"
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return f"{manifest_path.name} is not of format {MANIFEST_FORMAT}"
    if manifest.get("source_sha256") != source_digest(source):
        return f"stale: {spec.family}.cu changed since its fatbin was built"
    if manifest.get("options") != list(spec.options):
        return f"built with options {manifest.get('options')}, the launcher asks for {list(spec.options)}"
    kernels = manifest.get("kernels")
    if not isinstance(kernels, dict):
        return f"{manifest_path.name} lists no kernels"
    missing = [name for name in spec.name_expressions if name not in kernels]
    if missing:
        return f"the fatbin lacks {', '.join(missing)}"
    fatbin = directory / f"{spec.family}.fatbin"
    try:
        data = fatbin.read_bytes()
    except OSError as error:
        return f"cannot read {fatbin.name}: {error}"
    if hashlib.sha256(data).hexdigest() != manifest.get("fatbin_sha256"):
        return f"{fatbin.name} is not the file {manifest_path.name} describes"
    return Prebuilt(fatbin, {name: str(kernels[name]) for name in spec.name_expressions})


class PrebuiltModule:
    """A loaded fatbin that answers ``get_function`` by name expression, as an NVRTC-compiled
    ``cupy.RawModule`` with name expressions does."""

    def __init__(self, module: Any, kernels: dict[str, str]) -> None:
        self.module = module
        self.kernels = kernels

    def get_function(self, name: str) -> Any:
        return self.module.get_function(self.kernels.get(name, name))
