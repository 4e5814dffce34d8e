"""Pairwise alignment with an optional CIGAR, and GATK's Smith-Waterman as Intel GKL computes it.

Modes (``AlignParams.mode``):

- ``"global"``: Needleman-Wunsch, both sequences end to end.
- ``"semiglobal"``: the whole query inside the target (target ends free: "glocal").
- ``"local"``: Smith-Waterman (0 floor; the empty alignment, score 0, when nothing scores above 0).
- ``"extension"``: anchored at both starts, ending at the best cell (as ksw2's extension), with an
  optional z-drop (``zdrop``): after query row i the DP stops when best - rowmax > zdrop +
  gap_extend * |(i - bi) - (j - bj)| (rowmax at (i, j), best at (bi, bj)).
- ``"gatk"``: GKL's ``IntelSmithWaterman.align(ref=target, alt=query, ...)`` exactly (see below).

Scoring: a 5x5 matrix over A, C, G, T, N (``matrix``, rows = query base, columns = target base), or
``match`` on equal A/C/G/T and ``mismatch`` elsewhere (N against anything, N included, is a
mismatch). Bases are case-insensitive; any byte other than A, C, G, T scores as N.

Gaps (penalties are positive and subtracted): ``gaps="affine"``: a gap of length L costs
``gap_open + (L-1)*gap_extend`` with ``gap_convention="L-1"`` (the default: parasail, GATK/GKL, the
reference data) or ``gap_open + L*gap_extend`` with ``gap_convention="L"`` (BWA, ksw2). An insertion run
next to a deletion run is two gaps. ``gaps="linear"``: L * gap_extend (gap_open is not used).
``gap_open >= gap_extend`` is required for "L-1" (else splitting a gap would pay).

Output per pair: ``score``, ``query_begin``, ``query_end``, ``target_begin``, ``target_end`` (0-based,
end exclusive) and, with ``cigar=True``, a CIGAR of ``=``, ``X`` (N never counts as ``=``), ``I``
(query base against a gap) and ``D`` (target base against a gap). Without ``cigar`` the score-only
path keeps no traceback matrix (linear memory) and reports the same coordinates.

Tie-breaking (one rule, every backend): the end cell is global (m, n); semiglobal the highest of the
last query row, smallest target end among equals; local and extension the highest cell, smallest query
end then smallest target end among equals (extension counts the empty alignment, score 0). From there
the traceback prefers, in a match/mismatch cell, the diagonal, then a D gap, then an I gap (local stops
on a 0 cell first); inside a gap it prefers the cell where the gap opens over extending it.

GATK mode (``mode="gatk"``): ``match`` > 0 and ``mismatch``, ``gap_open``, ``gap_extend`` <= 0 as GATK's
``SWParameters`` hold them (added to the score; a gap of length L adds gap_open + (L-1)*gap_extend),
``overhang`` one of SOFTCLIP, INDEL, LEADING_INDEL, IGNORE. Bytes are compared as they are (no case
folding, N matches N). The CIGAR (M, I, D, S) and offset are GKL's: ``target_begin`` is GKL's
``alignment_offset`` (negative possible with IGNORE), ``score`` the best cell's score, ``target_end``
its ref row, ``query_begin`` the leading soft clip, ``query_end`` the query length less the trailing one.

Backends: the CPU (C kernels) and the GPU (``warpdp/kernels/align.py``: one warp per pair, the same
results exactly; a pair whose traceback is over the GPU's per-chunk bound is aligned on the CPU).

Memory: a CIGAR needs one byte per DP cell of a pair; pairs over ``max_traceback_cells`` are refused with
:class:`TracebackTooLarge` (a MemoryError; RESOURCE_EXHAUSTED over gRPC), before any work.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cancel import CancelCheck
from .core import cigar as cigar_ops
from .core.backend import check_devices, choose_backend, resolve_cpu_isa, resolve_threads
from .core.packed import QueryTargetPairs, SequenceInput, check_array, check_int, check_offsets
from .core.params import Params
from .core.results import Results

MODES = ("global", "semiglobal", "local", "extension", "gatk")
GAP_MODELS = ("affine", "linear")
GAP_CONVENTIONS = ("L-1", "L")
OVERHANGS = ("SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE")
COLUMNS = ("score", "query_begin", "query_end", "target_begin", "target_end")
# The C kernels' bound on any score parameter (ALIGN_MAX_PARAMETER): int32 DP values never overflow.
MAX_PARAMETER = 65536
DEFAULT_MAX_TRACEBACK_CELLS = 1 << 28  # one byte each


class TracebackTooLarge(MemoryError):
    """A pair's traceback matrix would exceed ``max_traceback_cells``: refused before any work."""


@dataclass(frozen=True)
class AlignParams(Params):
    """Alignment parameters (module doc). Defaults: global, affine, match 2, mismatch -3, open 5,
    extend 2, convention "L-1" (how ../shared/data/align was made)."""

    mode: str = "global"
    match: int = 2
    mismatch: int = -3
    matrix: tuple[tuple[int, ...], ...] | None = None
    gaps: str = "affine"
    gap_open: int = 5
    gap_extend: int = 2
    gap_convention: str = "L-1"
    zdrop: int | None = None
    overhang: str = "SOFTCLIP"
    cigar: bool = False
    max_traceback_cells: int = DEFAULT_MAX_TRACEBACK_CELLS

    def validate(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.gaps not in GAP_MODELS:
            raise ValueError(f"gaps must be one of {', '.join(GAP_MODELS)}, not {self.gaps!r}")
        if self.gap_convention not in GAP_CONVENTIONS:
            raise ValueError(f"gap_convention must be one of {', '.join(GAP_CONVENTIONS)} (a gap of length L costs "
                             f"open + (L-1)*extend or open + L*extend), not {self.gap_convention!r}")
        if self.overhang not in OVERHANGS:
            raise ValueError(f"overhang must be one of {', '.join(OVERHANGS)}, not {self.overhang!r}")
        if not isinstance(self.cigar, (bool, np.bool_)):
            raise TypeError(f"cigar must be a bool, not {type(self.cigar).__name__}")
        bound = MAX_PARAMETER
        checked = {name: check_int(getattr(self, name), name, -bound, bound)
                   for name in ("match", "mismatch", "gap_open", "gap_extend")}
        checked["max_traceback_cells"] = check_int(self.max_traceback_cells, "max_traceback_cells", 1, 2**62)
        if self.mode == "gatk":
            # GATK's SWParameters: match positive, the others added to the score (<= 0)
            if checked["match"] <= 0:
                raise ValueError(f"match must be positive, not {checked['match']}")
            for name in ("mismatch", "gap_open", "gap_extend"):
                if checked[name] > 0:
                    raise ValueError(f"{name} must be <= 0 in mode 'gatk' (GATK's SWParameters add it to the "
                                     f"score), not {checked[name]}")
        else:
            if self.matrix is None:
                if checked["match"] <= 0:
                    raise ValueError(f"match must be positive, not {checked['match']}")
                if checked["mismatch"] >= 0:
                    raise ValueError(f"mismatch must be negative, not {checked['mismatch']}")
            for name in ("gap_open", "gap_extend"):
                if checked[name] < 0:
                    raise ValueError(f"{name} must be >= 0 (a penalty, subtracted), not {checked[name]}")
            if self.gaps == "affine" and self.gap_convention == "L-1" and checked["gap_open"] < checked["gap_extend"]:
                raise ValueError(f"gap_open ({checked['gap_open']}) must be at least gap_extend "
                                 f"({checked['gap_extend']}) with gap_convention 'L-1'")
        if self.zdrop is not None:
            checked["zdrop"] = check_int(self.zdrop, "zdrop", 0, 2**31 - 1)
            if self.mode != "extension":
                raise ValueError(f"zdrop applies to mode 'extension' only, not {self.mode!r}")
        if self.matrix is not None:
            rows = np.asarray(self.matrix)
            if rows.shape != (5, 5) or rows.dtype.kind not in "iu":
                raise ValueError("matrix must be 5x5 integers (rows = query A C G T N, columns = target A C G T N)")
            if np.abs(rows).max() > bound:
                raise ValueError(f"matrix entries must be within -{bound}..{bound}")
            object.__setattr__(self, "matrix", tuple(tuple(int(v) for v in row) for row in rows))
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "cigar", bool(self.cigar))

    def score_matrix(self) -> tuple[tuple[int, ...], ...]:
        """The 5x5 scores (A C G T N) the generic modes use."""
        if self.matrix is not None:
            return self.matrix
        return tuple(tuple(self.match if a == b and a < 4 else self.mismatch for b in range(5)) for a in range(5))

    def gap_costs(self) -> tuple[int, int]:
        """(first, ext): a gap of length L costs first + (L-1)*ext (generic modes)."""
        if self.gaps == "linear":
            return self.gap_extend, self.gap_extend
        if self.gap_convention == "L":
            return self.gap_open + self.gap_extend, self.gap_extend
        return self.gap_open, self.gap_extend

    @property
    def traceback(self) -> bool:
        """Whether the kernel keeps a traceback matrix (CIGAR asked for, or GATK mode)."""
        return self.cigar or self.mode == "gatk"


@dataclass(frozen=True)
class AlignPairs(QueryTargetPairs):
    """Pairs in packed form: pair i aligns ``query_bases[query_offsets[i]:query_offsets[i+1]]`` with
    ``target_bases[target_offsets[i]:target_offsets[i+1]]`` (ASCII bytes; no sequence may be empty)."""

    def cells(self) -> np.ndarray:
        """(len_q + 1) * (len_t + 1) per pair: the DP cells, and the traceback bytes with a CIGAR."""
        return (np.diff(self.query_offsets) + 1) * (np.diff(self.target_offsets) + 1)

    def validate(self) -> None:
        """TypeError/ValueError naming the field when the arrays are inconsistent or a sequence is empty."""
        super().validate()
        check_offsets(self.query_offsets, "query_offsets", len(self.query_bases), "query", nonempty=True)
        check_offsets(self.target_offsets, "target_offsets", len(self.target_bases), "target", nonempty=True)


class AlignResults(Results):
    """Columns score, query_begin, query_end, target_begin, target_end (int64; 0-based, end exclusive)
    and, when asked for, the ragged CIGAR (``cigar_ops``, ``cigar_offsets``)."""

    @classmethod
    def empty(cls, n_pairs: int) -> AlignResults:
        return cls({name: np.zeros(n_pairs, dtype=np.int64) for name in COLUMNS})

    def __getattr__(self, name: str) -> np.ndarray:
        columns = self.__dict__.get("columns", {})
        if name in columns:
            return columns[name]
        raise AttributeError(name)

    def alignments(self) -> list[cigar_ops.Alignment]:
        """One :class:`~warpdp.plugin.core.cigar.Alignment` per pair (pysam/mappy style: ``score``,
        ``cigarstring``, ``cigartuples``; ref = the target)."""
        if not self.has_cigar:
            raise ValueError("these results carry no CIGAR: align with cigar=True")
        c = self.columns
        return [cigar_ops.Alignment(int(c["score"][i]), int(c["query_begin"][i]), int(c["query_end"][i]),
                                    int(c["target_begin"][i]), int(c["target_end"][i]), self.cigar(i))
                for i in range(self.n_pairs)]


def check_traceback(pairs: AlignPairs, params: AlignParams) -> None:
    """Refuse (TracebackTooLarge) a pair whose traceback matrix exceeds params.max_traceback_cells."""
    if not params.traceback or pairs.n_pairs == 0:
        return
    cells = pairs.cells()
    over = np.flatnonzero(cells > params.max_traceback_cells)
    if len(over):
        i = int(over[0])
        raise TracebackTooLarge(f"pair {i}: its traceback needs {int(cells[i])} cells (bytes), over "
                                f"max_traceback_cells = {params.max_traceback_cells}; align it without a CIGAR "
                                "(score only) or raise the limit")


def check_lengths(pairs: AlignPairs, params: AlignParams) -> None:
    """ValueError naming the pair whose DP values could overflow int32 with these parameters (the C
    driver's bound: (len_q + len_t + 2) * largest |parameter| <= 2^29)."""
    if pairs.n_pairs == 0:
        return
    if params.mode == "gatk":
        largest = max(abs(params.match), abs(params.mismatch), abs(params.gap_open), abs(params.gap_extend))
    else:
        largest = max(max(abs(v) for row in params.score_matrix() for v in row), params.gap_costs()[0])
    sizes = np.diff(pairs.query_offsets) + np.diff(pairs.target_offsets) + 2
    over = np.flatnonzero(sizes > (1 << 29) // max(largest, 1))
    if len(over):
        i = int(over[0])
        raise ValueError(f"pair {i}: query and target lengths ({int(sizes[i]) - 2} bases together) are too long for "
                         f"int32 scores with a parameter of magnitude {largest}")


def _as_pairs(pairs: object) -> AlignPairs:
    if isinstance(pairs, AlignPairs):
        pairs.validate()
        return pairs
    if isinstance(pairs, (list, tuple)) or hasattr(pairs, "__iter__") and not isinstance(pairs, (str, bytes)):
        return AlignPairs.from_sequences(pairs)  # type: ignore[arg-type]
    raise TypeError(f"pairs must be AlignPairs or (query, target) pairs, not {type(pairs).__name__}")


def align(
    pairs: AlignPairs | Iterable[tuple[SequenceInput, SequenceInput]],
    params: AlignParams | None = None,
    *,
    backend: str = "auto",
    threads: int | None = None,
    cpu_isa: str | None = None,
    out: AlignResults | None = None,
    devices: Sequence[int] | None = None,
    cancelled: CancelCheck | None = None,
    **keywords: Any,
) -> AlignResults:
    """Align every pair (module doc). ``params`` is an :class:`AlignParams`, or its fields as keywords
    (``align(pairs, mode="local", cigar=True)``). ``backend``: "auto" (GPU if usable, else CPU), "cpu" or
    "gpu" (the same results on each). ``cpu_isa`` forces a CPU variant ("scalar", "avx2", "avx512";
    default: the environment variable WARPDP_CPU_ISA, else the best this CPU runs; the same results on each).
    ``out``: an AlignResults of n_pairs whose columns are filled in place (its CIGAR is replaced).
    ``devices`` lists the GPUs to spread the pairs over (default: every GPU this process sees;
    the CPU backend ignores it). ``cancelled`` is checked between GPU chunks (see
    warpdp.plugin.cancel)."""
    params = AlignParams.from_kwargs(params, **keywords)
    packed = _as_pairs(pairs)
    n_threads = resolve_threads(threads)
    device_ids = check_devices(devices)
    check_lengths(packed, params)
    check_traceback(packed, params)
    if out is None:
        results = AlignResults.empty(packed.n_pairs)
    elif isinstance(out, AlignResults):
        for name in COLUMNS:
            column = out.columns.get(name)
            if column is None:
                raise ValueError(f"out has no column {name}")
            check_array(column, f"out.{name}", np.int64)
            if len(column) != packed.n_pairs:
                raise ValueError(f"out.{name} has {len(column)} entries but there are {packed.n_pairs} pairs")
        results = out
    else:
        raise TypeError(f"out must be AlignResults, not {type(out).__name__}")
    if choose_backend(backend, "align") == "gpu":
        from ..kernels import align as gpu_align

        found = gpu_align.run(packed, params, results, threads=n_threads, cancelled=cancelled, devices=device_ids)
    else:
        from ..cython_cpu import align as cpu_align

        isa = resolve_cpu_isa(cpu_isa, tuple(cpu_align.family_isas()))
        found = cpu_align.run(packed, params, results, threads=n_threads, isa=isa)
    if found is None:
        results.cigar_ops = results.cigar_offsets = None
    else:
        ops, counts = found
        results.cigar_ops = ops
        results.cigar_offsets = cigar_ops.offsets_of(counts)
    return results


def align_cpu_isas() -> list[str]:
    """The CPU variants of the align kernels this CPU runs, slowest first."""
    from ..cython_cpu import align as cpu_align

    return cpu_align.family_isas()


def gatk_smith_waterman(ref: SequenceInput, alt: SequenceInput, match: int = 200, mismatch: int = -150,
                        gap_open: int = -260, gap_extend: int = -11, overhang: str = "SOFTCLIP") -> tuple[str, int]:
    """GKL's ``IntelSmithWaterman.align(ref, alt, SWParameters(match, mismatch, gap_open, gap_extend),
    overhang)``: ``(cigar string, alignment offset)``. Defaults: GATK's NEW_SW_PARAMETERS."""
    results = gatk_smith_waterman_batch([(ref, alt)], match, mismatch, gap_open, gap_extend, overhang)
    return results.cigarstring(0), int(results.columns["target_begin"][0])


def gatk_smith_waterman_batch(pairs: Iterable[tuple[SequenceInput, SequenceInput]] | AlignPairs, match: int = 200,
                              mismatch: int = -150, gap_open: int = -260, gap_extend: int = -11,
                              overhang: str = "SOFTCLIP", *, threads: int | None = None) -> AlignResults:
    """Many ``(ref, alt)`` pairs at once (AlignPairs: query = alt, target = ref); the CIGAR and
    ``target_begin`` (the alignment offset) of each as in :func:`gatk_smith_waterman`."""
    if isinstance(pairs, AlignPairs):
        packed = pairs
    else:
        packed = AlignPairs.from_sequences([(alt, ref) for ref, alt in pairs])
    params = AlignParams(mode="gatk", match=match, mismatch=mismatch, gap_open=gap_open, gap_extend=gap_extend,
                         overhang=overhang, cigar=True)
    return align(packed, params, backend="cpu", threads=threads)


__all__ = ["AlignPairs", "AlignParams", "AlignResults", "COLUMNS", "MODES", "OVERHANGS", "TracebackTooLarge",
           "align", "align_cpu_isas", "gatk_smith_waterman", "gatk_smith_waterman_batch"]
