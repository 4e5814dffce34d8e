"""The one list of kernel families and their parts.

A :class:`Family` names what each part of warpdp needs to know about a kernel family: the gRPC
service registers its ``<rpc>`` and ``<rpc>Stream`` methods and lists it in ServerInfo, the
Python client gets its ``call``, ``warpdp`` its subcommand and its ``warpdp info`` line, and
the benchmark harness its name. Adding a family is one :func:`register` call (a test may
register one of its own); no other module lists the families.

Parts are referenced lazily ("module:attribute" strings, or functions returning the object),
so importing this module imports neither gRPC, the CPU extensions nor CuPy: a part is loaded
when it is first used.
"""
from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

# A part given lazily as "package.module:attribute" (dots within the attribute walk into it),
# or the part itself.
Ref = Union[str, Any]


def resolve(ref: Ref) -> Any:
    """The object a reference names (anything but a string is the part itself)."""
    if not isinstance(ref, str):
        return ref
    module_name, _, attribute = ref.partition(":")
    found: Any = importlib.import_module(module_name)
    for name in attribute.split(".") if attribute else ():
        found = getattr(found, name)
    return found


@dataclass(frozen=True)
class Family:
    """One kernel family and its parts.

    ``service`` is the family's service description, an object with the interface of
    ``warpdp.grpc._algorithms.Algorithm``: its request message class, how a request decodes into
    a job, how a job is merged, run, sliced and answered, and how a client splits a job and
    collects its results. Its ``request_type`` and ``reply_type`` are the family's proto
    messages; its ``payload_type`` the packed input class the client dispatches on.
    """

    name: str                       # CLI subcommand, ServerInfo algorithm name, metrics label
    rpc: str                        # the unary RPC's method name; the stream's is rpc + "Stream"
    service: Ref                    # the service description (see above)
    entry: Ref | None = None        # the in-process API function (warpdp.<name>)
    # Backend submissions a server runs at once by default, by backend; None: the server's
    # default (warpdp.grpc._config.DEFAULT_WORKERS). A server runs the most any of its
    # families asks for on the backend it runs that family on.
    workers: Mapping[str, int] | None = None
    # Submission cap in DP cells by backend; None: the server's default. A server caps at
    # the smallest of its families' caps.
    max_batch_cells: Mapping[str, int] | None = None
    # Adds the family's `warpdp <name>` subparser to argparse's subparsers action (setting
    # `run` to a function of the parsed arguments returning the exit status); None: none.
    add_cli: Ref | None = None
    # The subcommand's one-line help in `warpdp --help`, so that listing the subcommands loads
    # none of them (start-up time); None: add_cli is called to list it.
    summary: str | None = None
    # The family's line(s) of `warpdp info`; None: whether its GPU kernel is usable here.
    info: Ref | None = None
    # A function listing the CPU variants of the family's kernel this host runs, slowest
    # first. `warpdp info` and ServerInfo's CPU device show the first family's that has one.
    cpu_variants: Ref | None = None

    @property
    def stream_rpc(self) -> str:
        return self.rpc + "Stream"

    def algorithm(self) -> Any:
        """The service description (loaded on first use)."""
        return _cached(self, "service")

    def entry_point(self) -> Callable[..., Any]:
        if self.entry is None:
            raise LookupError(f"family {self.name!r} has no in-process entry point")
        return _cached(self, "entry")

    @property
    def request_type(self) -> type:
        return self.algorithm().request_type

    @property
    def reply_type(self) -> type:
        return self.algorithm().reply_type

    def info_lines(self) -> list[str]:
        """This family's lines of `warpdp info`."""
        if self.info is not None:
            text = _cached(self, "info")()
            return text.splitlines() if isinstance(text, str) else list(text)
        from .plugin.backend import gpu_status

        usable, reason = gpu_status(self.name)
        return [f"GPU ({self.name}): {'usable' if usable else 'not usable'}: {reason}"]


_lock = threading.Lock()
_families: dict[str, Family] = {}
_loaded: dict[tuple[str, str], Any] = {}


def _cached(family: Family, part: str) -> Any:
    key = (family.name, part)
    if key not in _loaded:
        _loaded[key] = resolve(getattr(family, part))
    return _loaded[key]


def register(family: Family, *, replace: bool = False) -> Family:
    """Add a family (after those registered before it). ValueError when its name or RPC is
    taken, unless ``replace``."""
    with _lock:
        for other in _families.values():
            if other.name != family.name and other.rpc == family.rpc:
                raise ValueError(f"RPC {family.rpc!r} is already family {other.name!r}'s")
        if family.name in _families and not replace:
            raise ValueError(f"a family named {family.name!r} is already registered")
        _families[family.name] = family
        for key in [key for key in _loaded if key[0] == family.name]:
            del _loaded[key]
    return family


def unregister(name: str) -> None:
    """Remove a family (tests that registered one of their own)."""
    with _lock:
        _families.pop(name, None)
        for key in [key for key in _loaded if key[0] == name]:
            del _loaded[key]


def families() -> tuple[Family, ...]:
    """The registered families, in registration order."""
    with _lock:
        return tuple(_families.values())


def family(name: str) -> Family:
    """The family of a name; KeyError naming the families otherwise."""
    with _lock:
        found = _families.get(name)
        if found is None:
            raise KeyError(f"no kernel family {name!r} (registered: {', '.join(_families)})")
        return found


def host_cpu_variants() -> list[str]:
    """The CPU variants `warpdp info` and ServerInfo show (see Family.cpu_variants)."""
    for candidate in families():
        if candidate.cpu_variants is not None:
            return list(_cached(candidate, "cpu_variants")())
    return ["scalar"]


def family_for_payload(payload: object) -> Family:
    """The family whose packed input class ``payload`` is."""
    for candidate in families():
        if isinstance(payload, candidate.algorithm().payload_type):
            return candidate
    raise TypeError(f"no algorithm takes {type(payload).__name__}")


# The built-in families. Pair-HMM comes first: ServerInfo's headline backend is the first
# family's, and its CPU variants are those `warpdp info` shows.
register(Family(name="pairhmm", rpc="PairHmm", service="warpdp.grpc._algorithms:PAIRHMM",
                entry="warpdp.plugin.pairhmm:pairhmm", add_cli="warpdp.cli:add_pairhmm_parser",
                summary="Pair-HMM forward likelihoods (GATK/GKL numerics)",
                cpu_variants="warpdp.plugin.pairhmm:available_cpu_isas"))
register(Family(name="xdrop", rpc="Xdrop", service="warpdp.grpc._algorithms:XDROP",
                entry="warpdp.plugin.xdrop:xdrop", add_cli="warpdp.cli:add_xdrop_parser",
                summary="gapped X-drop seed extension (SeqAn 2 / BELLA / LOGAN semantics)"))
register(Family(name="seedext", rpc="SeedExtend", service="warpdp.grpc._algorithms:SEEDEXT",
                entry="warpdp.plugin.seedext:seed_extend", add_cli="warpdp.cli:add_seedext_parser",
                summary="seed extension (BWA-MEM ksw_extend2 semantics)"))
# Pairwise alignment with CIGAR and GATK's Smith-Waterman (issue #26): CPU (scalar, AVX2, AVX-512) and GPU.
register(Family(name="align", rpc="Align", service="warpdp.grpc._align:ALIGN", entry="warpdp.plugin.align:align",
                add_cli="warpdp.cli_align:add_align_parser", summary="pairwise alignment with CIGAR; GATK's Smith-Waterman"))
# Edit distance (issue #27): GPU kernels (warpdp/kernels/edit.py) and a scalar CPU backend.
register(Family(name="edit", rpc="Edit", service="warpdp.grpc._edit:EDIT", entry="warpdp.plugin.edit:edit",
                add_cli="warpdp.cli_edit:add_edit_parser",
                summary="edit distance + CIGAR (edlib's NW/SHW/HW, Scrooge's windowed GenASM)"))

__all__ = ["Family", "Ref", "family", "family_for_payload", "families", "host_cpu_variants", "register", "resolve", "unregister"]
