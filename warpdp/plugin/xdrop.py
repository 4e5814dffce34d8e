"""Gapped X-drop seed extension: packed data model, validation and the entry points.

Semantics are SeqAn 2's ``extendSeed(seed, seqH, seqV, EXTEND_BOTH, Score<int, Simple>(match,
mismatch, gap), X, GappedXDrop())`` as BELLA and LOGAN call it (docs/semantics.md, "X-drop seed
extension"): the seed of length ``k`` at ``(pos_h, pos_v)`` is extended to the left on the
prefixes and to the right on the suffixes, each on anti-diagonals with linear gaps, cells
more than ``x`` below the best score so far being dropped.

Two reporting modes:

- ``"longest"`` (default): SeqAn's longest extension and its score, reproduced exactly
  (score and all four coordinates). The total is ``left + right + k * match`` as BELLA and
  LOGAN report it. Computed in int64 where int32 could overflow, so any scores work. One
  deliberate difference: with some scores (mismatch < gap) SeqAn can find no defined cell at
  the place it looks and returns its int32 "undefined" as that direction's score; warpdp then
  leaves that side of the seed unchanged, as SeqAn does, and scores it 0.
- ``"best"``: the best-scoring cell of each direction (the classic X-drop result); among
  equal scores the one on the earliest anti-diagonal, then the smallest V offset. The empty
  extension (score 0) counts, so a direction never scores below 0.

Bases are compared for equality, case-insensitively: N matches N (as SeqAn's Simple score on
Dna5 does) and mismatches A, C, G, T. Bytes other than A, C, G, T, N (either case) are errors.
The seed itself is not checked: it scores ``k * match`` whatever its bases.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cancel import CancelCheck
from .core.backend import check_devices, choose_backend, resolve_cpu_isa, resolve_threads
from .core.packed import (INT64_MAX, MAX_SEQUENCE_LENGTH, SequenceInput, byte_array, check_array, check_int,
                          check_offsets, concat, int64_array, offsets_of, sequence_bytes)
from .core.params import Params
from .core.results import Results

REPORTS = ("longest", "best")

# Scores must fit int32 (as SeqAn's Score<int>); x and lengths keep every int64 sum exact.
_MAX_SCORE = 2**31 - 1
_MAX_X = 2**62

# Allowed sequence bytes.
_IS_BASE = np.zeros(256, dtype=bool)
_BASES = b"ACGTNacgtn"
_IS_BASE[np.frombuffer(_BASES, dtype=np.uint8)] = True


@dataclass(frozen=True)
class XdropPairs:
    """Seed-extension pairs in packed form (the project's data model, docs/design.md).

    Pair ``i`` extends a seed starting at ``h_pos[i]`` in
    ``H = h_bases[h_offsets[i]:h_offsets[i+1]]`` (SeqAn's database, "horizontal") and at
    ``v_pos[i]`` in ``V = v_bases[v_offsets[i]:v_offsets[i+1]]`` (the query, "vertical").
    The seed length ``k`` is a parameter of :func:`xdrop`. Bases are ASCII bytes.
    """

    h_bases: np.ndarray
    h_offsets: np.ndarray
    v_bases: np.ndarray
    v_offsets: np.ndarray
    h_pos: np.ndarray
    v_pos: np.ndarray

    @property
    def n_pairs(self) -> int:
        return len(self.h_pos)

    def __len__(self) -> int:
        return self.n_pairs

    def h_lengths(self) -> np.ndarray:
        return np.diff(self.h_offsets)

    def v_lengths(self) -> np.ndarray:
        return np.diff(self.v_offsets)

    def h_sequence(self, i: int) -> bytes:
        return self.h_bases[self.h_offsets[i]:self.h_offsets[i + 1]].tobytes()

    def v_sequence(self, i: int) -> bytes:
        return self.v_bases[self.v_offsets[i]:self.v_offsets[i + 1]].tobytes()

    def select(self, start: int, stop: int) -> XdropPairs:
        """Pairs ``start:stop`` as a new packed set (for chunking long inputs)."""
        h0, h1 = int(self.h_offsets[start]), int(self.h_offsets[stop])
        v0, v1 = int(self.v_offsets[start]), int(self.v_offsets[stop])
        return XdropPairs(
            h_bases=self.h_bases[h0:h1], h_offsets=self.h_offsets[start:stop + 1] - h0,
            v_bases=self.v_bases[v0:v1], v_offsets=self.v_offsets[start:stop + 1] - v0,
            h_pos=self.h_pos[start:stop], v_pos=self.v_pos[start:stop],
        )

    @classmethod
    def from_arrays(cls, **arrays: object) -> XdropPairs:
        """Build from arrays of any integer layout (bases as uint8 or bytes), then :meth:`validate`."""
        converted: dict[str, np.ndarray] = {}
        for name in _BYTE_FIELDS:
            if name not in arrays:
                raise TypeError(f"XdropPairs.from_arrays is missing {name}")
            converted[name] = byte_array(arrays.pop(name), name)
        for name in _INT_FIELDS:
            if name not in arrays:
                raise TypeError(f"XdropPairs.from_arrays is missing {name}")
            converted[name] = int64_array(arrays.pop(name), name)
        if arrays:
            raise TypeError(f"unexpected field(s) for XdropPairs: {', '.join(sorted(arrays))}")
        pairs = cls(**converted)
        pairs.validate()
        return pairs

    def validate(self, params: XdropParams | int | None = None) -> None:
        """Raise TypeError/ValueError naming the field when the arrays are inconsistent.

        With ``params`` (or just the seed length k), also check that every seed lies inside
        both its sequences. Bases are checked during extension (where they are read anyway), or
        by :meth:`check_bases`.
        """
        k = params.k if isinstance(params, XdropParams) else params
        for name in _BYTE_FIELDS:
            check_array(getattr(self, name), name, np.uint8)
        for name in _INT_FIELDS:
            check_array(getattr(self, name), name, np.int64)
        n = len(self.h_pos)
        if len(self.v_pos) != n:
            raise ValueError(f"v_pos has {len(self.v_pos)} entries but h_pos has {n}")
        for name, bases in (("h_offsets", self.h_bases), ("v_offsets", self.v_bases)):
            offsets = getattr(self, name)
            if len(offsets) != n + 1:
                raise ValueError(f"{name} must have n_pairs + 1 = {n + 1} entries, not {len(offsets)}")
            check_offsets(offsets, name, len(bases), "pair")
        for name in ("h_pos", "v_pos"):
            pos = getattr(self, name)
            if n and int(pos.min()) < 0:
                i = int(np.flatnonzero(pos < 0)[0])
                raise ValueError(f"seed of pair {i} lies outside its sequence: {name}[{i}] = {pos[i]} is negative")
        if k is not None:
            k = check_k(k)
            for name, lengths in (("h_pos", self.h_lengths()), ("v_pos", self.v_lengths())):
                pos = getattr(self, name)
                # pos > length - k, not pos + k > length: pos may be near 2^63 (k and the
                # lengths are at most 2^31 - 1 here, so length - k cannot wrap).
                outside = np.flatnonzero(pos > lengths - k)
                if len(outside):
                    i = int(outside[0])
                    seq = name[0].upper()
                    raise ValueError(f"seed of pair {i} lies outside {seq}: {name}[{i}] = {pos[i]} with k = {k} "
                                     f"needs {int(pos[i]) + k} bases but {seq} has {lengths[i]}")

    def check_bases(self) -> None:
        """Raise ValueError naming the first byte that is not A, C, G, T or N (either case)."""
        for field, offsets in (("h_bases", self.h_offsets), ("v_bases", self.v_offsets)):
            bases = getattr(self, field)
            # bytes.translate scans several times faster than a NumPy table lookup (a server
            # checks every request's bases); the lookup runs only to name a bad byte. It takes
            # bytes: blocks are copied out one at a time, in cache, not the whole array at once.
            view = memoryview(np.ascontiguousarray(bases, dtype=np.uint8))
            if not any(view[at:at + _CHECK_BLOCK].tobytes().translate(None, _BASES)
                       for at in range(0, len(view), _CHECK_BLOCK)):
                continue
            bad = np.flatnonzero(~_IS_BASE[bases])
            if len(bad):
                at = int(bad[0])
                pair = int(np.searchsorted(offsets, at, side="right")) - 1
                byte = int(bases[at])
                shown = repr(chr(byte)) if 32 <= byte < 127 else f"byte {byte}"
                raise ValueError(f"{field}: pair {pair} has {shown} at position {at - int(offsets[pair])}; "
                                 "only A, C, G, T and N (either case) are allowed")


_BYTE_FIELDS = ("h_bases", "v_bases")
_CHECK_BLOCK = 1 << 16  # bytes per block of check_bases's scan
_INT_FIELDS = ("h_offsets", "v_offsets", "h_pos", "v_pos")


def check_k(k: object) -> int:
    """The seed length k as an int within 1..MAX_SEQUENCE_LENGTH; TypeError/ValueError naming k."""
    k = check_int(k, "k")
    if k <= 0:
        raise ValueError(f"k (the seed length) must be at least 1, not {k}")
    if k > MAX_SEQUENCE_LENGTH:  # no seed fits then; also keeps k * match and pos + k exact
        raise ValueError(f"k (the seed length) must be at most {MAX_SEQUENCE_LENGTH}, not {k}")
    return k


_check_k = check_k  # the name warpdp.grpc imports


def check_scores(match: object, mismatch: object, gap: object, x: object) -> tuple[int, int, int, int]:
    """Validated (match, mismatch, gap, x): match > 0 > mismatch, gap; 0 <= x <= 2^62."""
    match, mismatch, gap, x = (check_int(v, n) for v, n in ((match, "match"), (mismatch, "mismatch"),
                                                             (gap, "gap"), (x, "x")))
    if match <= 0:
        raise ValueError(f"match must be positive, not {match}")
    if mismatch >= 0:
        raise ValueError(f"mismatch must be negative, not {mismatch}")
    if gap >= 0:
        raise ValueError(f"gap must be negative, not {gap}")
    for name, value in (("match", match), ("mismatch", mismatch), ("gap", gap)):
        if abs(value) > _MAX_SCORE:
            raise ValueError(f"{name} must be within -{_MAX_SCORE}..{_MAX_SCORE}, not {value}")
    if not 0 <= x <= _MAX_X:
        raise ValueError(f"x (the X-drop) must be within 0..2^62, not {x}")
    return match, mismatch, gap, x


@dataclass(frozen=True)
class XdropParams(Params):
    """X-drop parameters: ``k`` the seed length, ``x`` the X-drop, linear scores ``match`` > 0 >
    ``mismatch``, ``gap``; ``report`` "longest" (SeqAn/BELLA/LOGAN) or "best" (module doc)."""

    k: int
    x: int
    match: int = 1
    mismatch: int = -1
    gap: int = -1
    report: str = "longest"

    def validate(self) -> None:
        checked = {"k": check_k(self.k)}
        checked["match"], checked["mismatch"], checked["gap"], checked["x"] = check_scores(
            self.match, self.mismatch, self.gap, self.x)
        if self.report not in REPORTS:
            raise ValueError(f"report must be one of {', '.join(REPORTS)}, not {self.report!r}")
        for name, value in checked.items():  # numpy ints become ints, as the kernels' launch structs want
            object.__setattr__(self, name, value)

    @property
    def best(self) -> bool:
        return self.report == "best"


@dataclass(frozen=True)
class XdropPair:
    """One pair for the convenience API: a seed at ``pos_h`` in ``seq_h`` and ``pos_v`` in ``seq_v``."""

    seq_h: SequenceInput
    pos_h: int
    seq_v: SequenceInput
    pos_v: int


def pack_xdrop_pairs(pairs: Iterable[XdropPair | tuple[SequenceInput, int, SequenceInput, int]]) -> XdropPairs:
    """Pack pairs given as :class:`XdropPair` or ``(seq_h, pos_h, seq_v, pos_v)`` tuples.

    Sequences are str, bytes or 1-D uint8 arrays; bases are checked here.
    """
    h_parts, v_parts, h_pos, v_pos = [], [], [], []
    for i, pair in enumerate(pairs):
        if isinstance(pair, XdropPair):
            seq_h, pos_h, seq_v, pos_v = pair.seq_h, pair.pos_h, pair.seq_v, pair.pos_v
        elif isinstance(pair, tuple) and len(pair) == 4:
            seq_h, pos_h, seq_v, pos_v = pair
        else:
            raise TypeError(f"pair {i}: expected XdropPair or (seq_h, pos_h, seq_v, pos_v), not {type(pair).__name__}")
        h_parts.append(sequence_bytes(seq_h, f"pair {i} seq_h"))
        v_parts.append(sequence_bytes(seq_v, f"pair {i} seq_v"))
        # Within int64 here (the packed arrays' type); validate() then places them in the sequences.
        h_pos.append(check_int(pos_h, f"pair {i} pos_h", -INT64_MAX - 1, INT64_MAX))
        v_pos.append(check_int(pos_v, f"pair {i} pos_v", -INT64_MAX - 1, INT64_MAX))
    packed = XdropPairs.from_arrays(
        h_bases=concat(h_parts), h_offsets=offsets_of([len(p) for p in h_parts]),
        v_bases=concat(v_parts), v_offsets=offsets_of([len(p) for p in v_parts]),
        h_pos=np.array(h_pos, dtype=np.int64), v_pos=np.array(v_pos, dtype=np.int64),
    )
    packed.check_bases()
    return packed


class XdropResults(Results):
    """Per-pair results, int64 columns in input order (a :class:`Results` without CIGAR).

    ``score`` is left + right + k * match; ``[begin_h, end_h)`` and ``[begin_v, end_v)`` are the
    extended seed in H and V (0-based, end exclusive, SeqAn's seed positions); ``cells`` counts
    the DP cells computed for the pair (both directions), for GCUPS.
    """

    COLUMNS = ("score", "begin_h", "end_h", "begin_v", "end_v")
    _ALL = COLUMNS + ("cells",)

    def __init__(self, score: np.ndarray, begin_h: np.ndarray, end_h: np.ndarray, begin_v: np.ndarray,
                 end_v: np.ndarray, cells: np.ndarray) -> None:
        # The arrays are kept as given (not copied): out= is filled in place.
        super().__init__(dict(zip(self._ALL, (score, begin_h, end_h, begin_v, end_v, cells))))

    def _like(self, columns: dict[str, np.ndarray], ops: np.ndarray | None,
              offsets: np.ndarray | None) -> XdropResults:
        return XdropResults(**columns)

    @property
    def score(self) -> np.ndarray:
        return self.columns["score"]

    @property
    def begin_h(self) -> np.ndarray:
        return self.columns["begin_h"]

    @property
    def end_h(self) -> np.ndarray:
        return self.columns["end_h"]

    @property
    def begin_v(self) -> np.ndarray:
        return self.columns["begin_v"]

    @property
    def end_v(self) -> np.ndarray:
        return self.columns["end_v"]

    @property
    def cells(self) -> np.ndarray:
        return self.columns["cells"]

    @property
    def n_cells(self) -> int:
        return int(self.cells.sum())

    def as_array(self) -> np.ndarray:
        """An (n_pairs, 5) int64 array with columns score, begin_h, end_h, begin_v, end_v."""
        return np.stack([getattr(self, c) for c in self.COLUMNS], axis=1) if len(self) else \
            np.zeros((0, 5), dtype=np.int64)

    @classmethod
    def empty(cls, n_pairs: int) -> XdropResults:
        return cls(*(np.zeros(n_pairs, dtype=np.int64) for _ in range(6)))

    def check_output(self, n_pairs: int) -> None:
        """TypeError/ValueError naming the column unless every column can take n_pairs results."""
        for name in self._ALL:
            column = self.columns[name]
            check_array(column, f"out.{name}", np.int64)
            if not column.flags.writeable:
                raise ValueError(f"out.{name} must be writeable")
            if len(column) != n_pairs:
                raise ValueError(f"out.{name} has {len(column)} entries but there are {n_pairs} pairs")


def xdrop(
    pairs: XdropPairs,
    params: XdropParams | None = None,
    *,
    backend: str = "auto",
    threads: int | None = None,
    cpu_isa: str | None = None,
    out: XdropResults | None = None,
    devices: Sequence[int] | None = None,
    cancelled: CancelCheck | None = None,
    **legacy: Any,
) -> XdropResults:
    """Extend the seed of every pair in both directions with gapped X-drop (see the module doc).

    ``params`` is an :class:`XdropParams`; its fields may be given as keywords instead
    (``xdrop(pairs, k=17, x=20)``). ``threads`` bounds CPU threads (default: all cores).
    ``cpu_isa`` forces a CPU variant ("scalar", "avx2", "avx512"; default: the environment
    variable ``WARPDP_CPU_ISA`` if set, else the best one this CPU supports). ``out`` may be an
    :class:`XdropResults` of ``n_pairs`` to fill. ``devices`` lists the GPUs to spread the pairs
    over (default: every GPU this process sees; the CPU backend ignores it). Both backends give the same results. ``cancelled`` is
    checked between GPU chunks (see warpdp.plugin.cancel).
    """
    if not isinstance(pairs, XdropPairs):
        raise TypeError(f"pairs must be XdropPairs, not {type(pairs).__name__} (see pack_xdrop_pairs)")
    params = XdropParams.from_kwargs(params, **legacy)
    k, x, match, mismatch, gap, report = (params.k, params.x, params.match, params.mismatch, params.gap,
                                          params.report)
    pairs.validate(params)
    n_threads = resolve_threads(threads)
    device_ids = check_devices(devices)
    if out is None:
        results = XdropResults.empty(pairs.n_pairs)
    elif isinstance(out, XdropResults):
        out.check_output(pairs.n_pairs)
        results = out
    else:
        raise TypeError(f"out must be XdropResults, not {type(out).__name__}")
    chosen = choose_backend(backend, "xdrop")
    if chosen == "gpu":
        from ..kernels import xdrop as gpu_xdrop

        gpu_xdrop.extend(pairs, results, k=k, x=x, match=match, mismatch=mismatch, gap=gap,
                         best=report == "best", devices=device_ids, cancelled=cancelled)
        return results
    from ..cython_cpu import xdrop as cpu_xdrop

    cpu_isa = resolve_cpu_isa(cpu_isa, cpu_xdrop.ISA_NAMES)
    bad = cpu_xdrop.run(pairs, params, results, threads=n_threads, isa=cpu_isa)
    if bad >= 0:
        pairs.check_bases()  # names the byte; the kernel only knows the pair
        raise ValueError(f"pair {bad} has a byte other than A, C, G, T and N")
    return results


def xdrop_pair(
    seq_h: SequenceInput,
    pos_h: int,
    seq_v: SequenceInput,
    pos_v: int,
    params: XdropParams | None = None,
    *,
    backend: str = "cpu",
    **legacy: Any,
) -> tuple[int, int, int, int, int]:
    """One pair: ``(score, begin_h, end_h, begin_v, end_v)`` (``params`` or its fields as
    keywords, as for :func:`xdrop`)."""
    params = XdropParams.from_kwargs(params, **legacy)
    results = xdrop(pack_xdrop_pairs([(seq_h, pos_h, seq_v, pos_v)]), params, backend=backend, threads=1)
    return tuple(int(v) for v in results.as_array()[0])  # type: ignore[return-value]


def xdrop_cpu_isas() -> list[str]:
    """CPU variants this machine can run for X-drop, slowest first (the last is the default)."""
    from ..cython_cpu import xdrop as cpu_xdrop

    return cpu_xdrop.available_isas()
