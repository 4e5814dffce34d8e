"""Edit distance (unit costs): exact as edlib defines it, and Scrooge's windowed GenASM.

Exact (``method="exact"``): the Levenshtein distance of the whole query against

- ``mode="nw"``: the whole target (global);
- ``mode="shw"``: a prefix of the target (the query's end is free in the target);
- ``mode="hw"``: any substring of the target (both target ends free).

``k`` >= 0 bounds the distance: a pair above it reports distance -1 (no location, no CIGAR);
``k=-1`` (default) means no bound. ``task`` says how much is reported, as edlib's tasks:
``"distance"`` (distance and the span of the first optimal location), ``"locations"`` (also every
optimal location) or ``"path"`` (also the CIGAR of the first location). Distances and locations
equal edlib's: locations are every optimal target end in increasing order, each with the start of
the longest optimal alignment ending there (0 for nw/shw); shw, and hw when the distance is the
query's length, also count the empty target prefix (location (0, 0), edlib's end -1).

Coordinates are 0-based, ends exclusive: ``target_begin``/``target_end`` is the target span of the
first location (``-1`` when the distance is above k); the whole query is always aligned.

The CIGAR uses ``=``, ``X``, ``I`` (a query base against a gap) and ``D`` (a target base against a
gap), packed as the data model says (core/cigar.py). Several alignments can be optimal; every
backend returns the one of this rule: Hirschberg's recursion splits the query at row floor(m/2)
at the leftmost target column minimising forward + backward cost; a one-base query aligns to its
leftmost equal target base (else a substitution on the first target base) with the other target
bases deleted.

Windowed (``method="windowed"``, ``mode="shw"`` only): Scrooge's GenASM with window ``window``
(W, 2..64) and overlap ``overlap`` (O, 0 <= O < W): the same distance and CIGAR Scrooge's CPU code
produces, including where its greedy windowing is worse than the exact prefix distance. Defaults
W=64, O=33 (long reads); Scrooge's short-read configuration is W=32, O=17. Bases must be A, C, G or
T (either case) for it; the exact method compares any bytes, case-sensitively (as edlib).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cancel import CancelCheck
from .core import cigar as core_cigar
from .core.backend import check_devices, choose_backend, resolve_cpu_isa, resolve_threads
from .core.packed import QueryTargetPairs, SequenceInput, check_int, check_offsets
from .core.params import Params
from .core.results import Results, join_offsets

MODES = ("nw", "shw", "hw")
TASKS = ("distance", "locations", "path")
METHODS = ("exact", "windowed")
MAX_WINDOW = 64
# A CIGAR run length has 28 bits, so no sequence may be longer.
MAX_EDIT_LENGTH = core_cigar.MAX_LENGTH
LONG_READ_WINDOW = (64, 33)
SHORT_READ_WINDOW = (32, 17)


@dataclass(frozen=True)
class EditParams(Params):
    """Edit-distance parameters (see the module doc): ``mode`` nw|shw|hw, ``k`` (-1: no bound),
    ``task`` distance|locations|path, ``method`` exact|windowed, ``window`` W and ``overlap`` O
    of the windowed method."""

    mode: str = "nw"
    k: int = -1
    task: str = "distance"
    method: str = "exact"
    window: int = LONG_READ_WINDOW[0]
    overlap: int = LONG_READ_WINDOW[1]

    def validate(self) -> None:
        for name, allowed in (("mode", MODES), ("task", TASKS), ("method", METHODS)):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
        k = check_int(self.k, "k")
        if k < -1:
            raise ValueError(f"k must be -1 (no bound) or at least 0, not {k}")
        window = check_int(self.window, "window")
        overlap = check_int(self.overlap, "overlap")
        if self.method == "windowed":
            if self.mode != "shw":
                raise ValueError(f"mode must be 'shw' with method='windowed' (GenASM solves the prefix problem), "
                                 f"not {self.mode!r}")
            if not 2 <= window <= MAX_WINDOW:
                raise ValueError(f"window must be within 2..{MAX_WINDOW}, not {window}")
            if not 0 <= overlap < window:
                raise ValueError(f"overlap must be within 0..window-1 = {window - 1}, not {overlap}")
        for name, value in (("k", k), ("window", window), ("overlap", overlap)):
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class EditPairs(QueryTargetPairs):
    """Pairs in packed form: pair i is ``query_bases[query_offsets[i]:query_offsets[i+1]]`` against
    ``target_bases[target_offsets[i]:target_offsets[i+1]]`` (ASCII bytes, none empty)."""

    def validate(self) -> None:
        """TypeError/ValueError naming the field: dtypes, offsets, empty or over-long sequences."""
        super().validate()
        for name, bases in (("query_offsets", self.query_bases), ("target_offsets", self.target_bases)):
            offsets = getattr(self, name)
            if check_offsets(offsets, name, len(bases), "pair", nonempty=True) > MAX_EDIT_LENGTH:
                i = int(np.argmax(np.diff(offsets)))
                raise ValueError(f"{name}: pair {i} is longer than {MAX_EDIT_LENGTH} bases (the CIGAR's run limit)")


# Bytes the windowed method takes (Scrooge's alphabet, either case).
_WINDOWED_BYTES = np.zeros(256, dtype=bool)
_WINDOWED_BYTES[np.frombuffer(b"ACGTacgt", dtype=np.uint8)] = True


def check_windowed_bases(pairs: EditPairs) -> None:
    """ValueError naming the first pair with a byte other than A, C, G, T (either case), which
    the windowed method refuses: the service checks this before queueing a request, as the
    backends do when they run."""
    worst = pairs.n_pairs
    for bases, offsets in ((pairs.query_bases, pairs.query_offsets), (pairs.target_bases, pairs.target_offsets)):
        other = np.flatnonzero(~_WINDOWED_BYTES[bases])
        if len(other):
            worst = min(worst, int(np.searchsorted(offsets, other[0], side="right")) - 1)
    if worst < pairs.n_pairs:
        raise ValueError(f"pair {worst} has a byte other than A, C, G, T (the windowed method takes only those)")


def pack_edit_pairs(pairs: Iterable[tuple[SequenceInput, SequenceInput]]) -> EditPairs:
    """Pack ``(query, target)`` tuples (str, bytes or uint8 arrays)."""
    return EditPairs.from_sequences(pairs)


class EditResults(Results):
    """Columns ``distance`` (-1 above k), ``target_begin``, ``target_end`` (the first location,
    0-based, end exclusive; -1 above k), the optional ragged CIGAR (task path) and, for tasks
    locations and path, every optimal location as a second ragged array: ``loc_begin``,
    ``loc_end`` (int64) with ``loc_offsets`` (n_pairs + 1), pair i's from loc_offsets[i]."""

    COLUMNS = ("distance", "target_begin", "target_end")

    def __init__(self, columns: dict[str, np.ndarray], cigar_ops: np.ndarray | None = None,
                 cigar_offsets: np.ndarray | None = None,
                 locations: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
        super().__init__(columns, cigar_ops, cigar_offsets)
        self.locations = locations
        if locations is not None:
            begin, end, offsets = locations
            if (len(offsets) != self.n_pairs + 1 or offsets[0] != 0 or offsets[-1] != len(begin)
                    or len(begin) != len(end)):
                raise ValueError("loc_offsets must hold n_pairs + 1 offsets from 0 to len(loc_begin)")

    @property
    def distance(self) -> np.ndarray:
        return self.columns["distance"]

    @property
    def target_begin(self) -> np.ndarray:
        return self.columns["target_begin"]

    @property
    def target_end(self) -> np.ndarray:
        return self.columns["target_end"]

    def pair_locations(self, i: int) -> list[tuple[int, int]]:
        """Pair i's optimal locations [(begin, end)], end exclusive."""
        if self.locations is None:
            raise ValueError("these results carry no locations (task 'locations' or 'path')")
        begin, end, offsets = self.locations
        a, b = int(offsets[i]), int(offsets[i + 1])
        return list(zip(begin[a:b].tolist(), end[a:b].tolist()))

    def alignment(self, i: int, query_length: int) -> core_cigar.Alignment:
        """Pair i as an :class:`Alignment` (score = the distance; the whole query is aligned)."""
        return core_cigar.Alignment(int(self.distance[i]), 0, query_length, int(self.target_begin[i]),
                                    int(self.target_end[i]), self.cigar(i))

    def alignments(self, pairs: EditPairs) -> list[core_cigar.Alignment]:
        """Every pair as an :class:`Alignment` (task path)."""
        lengths = np.diff(pairs.query_offsets)
        return [self.alignment(i, int(lengths[i])) for i in range(self.n_pairs)]

    def __getitem__(self, index: slice) -> EditResults:
        part = super().__getitem__(index)
        assert isinstance(part, EditResults)
        if self.locations is not None:
            start, stop, _ = index.indices(self.n_pairs)
            stop = max(start, stop)
            begin, end, offsets = self.locations
            a, b = int(offsets[start]), int(offsets[stop])
            part.locations = (begin[a:b], end[a:b], offsets[start:stop + 1] - a)
        return part

    @classmethod
    def concat(cls, parts: Sequence[Results]) -> EditResults:
        joined = super().concat(parts)
        assert isinstance(joined, EditResults)
        if all(isinstance(p, EditResults) and p.locations is not None for p in parts):
            begin = np.concatenate([p.locations[0] for p in parts])  # type: ignore[union-attr]
            end = np.concatenate([p.locations[1] for p in parts])  # type: ignore[union-attr]
            joined.locations = (begin, end, join_offsets([p.locations[2] for p in parts]))  # type: ignore[union-attr]
        return joined

    def __eq__(self, other: object) -> bool:
        same = super().__eq__(other)
        if same is not True or not isinstance(other, EditResults):
            return same
        if (self.locations is None) != (other.locations is None):
            return False
        return self.locations is None or all(np.array_equal(a, b) for a, b in zip(self.locations,
                                                                                 other.locations))  # type: ignore[arg-type]

    __hash__ = None  # type: ignore[assignment]


def edit(
    pairs: EditPairs | Iterable[tuple[SequenceInput, SequenceInput]],
    params: EditParams | None = None,
    *,
    backend: str = "auto",
    threads: int | None = None,
    cpu_isa: str | None = None,
    out: None = None,
    devices: Sequence[int] | None = None,
    cancelled: CancelCheck | None = None,
    **keywords: Any,
) -> EditResults:
    """Edit distance of every pair (see the module doc); ``params`` or its fields as keywords
    (``edit(pairs, mode="hw", task="path")``). ``pairs`` is :class:`EditPairs` or an iterable of
    ``(query, target)``. ``cpu_isa`` forces a CPU variant ("scalar", "avx2", "avx512"; default: the
    environment variable ``WARPDP_CPU_ISA`` if set, else the best one this CPU supports). ``out``
    is reserved (results are ragged, so they are always allocated here). ``cancelled`` is
    checked between GPU chunks (see warpdp.plugin.cancel). The GPU backend
    (warpdp/kernels/edit.py) gives the CPU's answers exactly; exact pairs too large for one GPU
    thread run on the CPU backend (logged). ``devices`` lists the GPUs to spread the pairs over
    (default: every GPU this process sees; the CPU backend ignores it)."""
    params = EditParams.from_kwargs(params, **keywords)
    if isinstance(pairs, EditPairs):
        pairs.validate()
    else:
        pairs = pack_edit_pairs(pairs)  # validated as it is packed
    if out is not None:
        raise TypeError("out is not supported by edit (its results are ragged)")
    n_threads = resolve_threads(threads)
    device_ids = check_devices(devices)
    chosen = choose_backend(backend, "edit")
    if chosen == "gpu":
        from ..kernels import edit as gpu_edit

        return gpu_edit.edit(pairs, params, threads=n_threads, cancelled=cancelled, devices=device_ids)
    from ..cython_cpu import edit as cpu_edit

    cpu_isa = resolve_cpu_isa(cpu_isa, cpu_edit.ISA_NAMES)
    # The backend's ragged scratch (CIGAR and location room) grows with the bases it is handed,
    # so a large job runs in chunks of consecutive pairs and the parts are joined.
    ends = np.cumsum(np.diff(pairs.query_offsets) + np.diff(pairs.target_offsets))  # bases up to each pair
    parts, start = [], 0
    while start < pairs.n_pairs or not parts:
        done = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, done + CHUNK_BASES, side="right")))
        stop = min(stop, pairs.n_pairs)
        parts.append(_run_cpu(cpu_edit, pairs.select(start, stop), params, n_threads, cpu_isa, start))
        start = stop
    if len(parts) == 1:
        return parts[0]
    joined = EditResults.concat(parts)
    assert isinstance(joined, EditResults)
    return joined


# Bases (query + target) of one backend call: bounds its scratch to a few hundred MiB.
CHUNK_BASES = 1 << 24


def _run_cpu(cpu_edit: Any, pairs: EditPairs, params: EditParams, threads: int, cpu_isa: str | None,
             first: int) -> EditResults:
    n = pairs.n_pairs
    columns = {name: np.zeros(n, dtype=np.int64) for name in EditResults.COLUMNS}

    class _Out:
        distance, t_begin, t_end = columns["distance"], columns["target_begin"], columns["target_end"]

    bad, locations, cigar = cpu_edit.run(pairs, params, _Out, threads=threads, isa=cpu_isa)
    if bad >= 0:
        raise ValueError(f"pair {first + bad} has a byte other than A, C, G, T (the windowed method takes only those)")
    ops, offsets = cigar if cigar is not None else (None, None)
    return EditResults(columns, ops, offsets, locations)


def edit_cpu_isas() -> list[str]:
    """CPU variants this machine can run for edit distance, slowest first (the last is the default)."""
    from ..cython_cpu import edit as cpu_edit

    return cpu_edit.edit_isas()
