"""Seed extension with BWA-MEM's ``ksw_extend2`` semantics: packed pairs, parameters, results
and the entry point :func:`seed_extend`.

For each (query, target, h0) — the read part past a seed, the reference window, the seed's
score — the extension is a banded affine-gap DP anchored at the start of both sequences,
with BWA's 5x5 matrix (a on the diagonal, -b off it, -1 against N), separate deletion and
insertion open/extend penalties, band w (narrowed as BWA narrows it), end bonus (only used to
narrow the band, as in ksw_extend2) and z-drop. The answers are exactly what ksw_extend2
returns; see docs/semantics.md "Seed extension" and :class:`SeedExtResults`.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .cancel import CancelCheck
from .core.backend import check_devices, choose_backend, resolve_cpu_isa, resolve_threads
from .core.packed import (SequenceInput, byte_array, check_array, check_int, check_offset_ends, check_offset_steps,
                          concat, int64_array, offsets_of, sequence_bytes)
from .core.params import Params
from .core.results import Results

# Bounds that keep every variant's arithmetic exact (BWA's own types: an int8 matrix, int scores).
MAX_MATCH_SCORE = 127
MAX_GAP_COST = 16383
MAX_SCORE = 2**30


@dataclass(frozen=True)
class SeedExtParams(Params):
    """Scoring and search parameters (BWA-MEM's defaults).

    a: match score; b: mismatch penalty (a pair with N scores -1); o_del/e_del and o_ins/e_ins:
    a deletion (insertion) of length k costs o + k*e; w: band width; end_bonus: bonus for
    reaching the query end (ksw_extend2 only uses it to narrow the band); zdrop: z-drop
    threshold (0 disables it).
    """

    a: int = 1
    b: int = 4
    o_del: int = 6
    e_del: int = 1
    o_ins: int = 6
    e_ins: int = 1
    w: int = 100
    end_bonus: int = 5
    zdrop: int = 100

    def validate(self) -> None:
        """Raise TypeError/ValueError naming the parameter that is out of range."""
        limits = {
            "a": (0, MAX_MATCH_SCORE), "b": (0, MAX_MATCH_SCORE),
            "o_del": (0, MAX_GAP_COST), "e_del": (1, MAX_GAP_COST),
            "o_ins": (0, MAX_GAP_COST), "e_ins": (1, MAX_GAP_COST),
            "w": (0, 2**31 - 1), "end_bonus": (0, MAX_SCORE), "zdrop": (0, MAX_SCORE),
        }
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if name == "zdrop":
                value = check_int(value, name)  # the type first, then the range with its hint
                if not low <= value <= high:
                    raise ValueError(f"{name} must be within {low}..{high} (0 disables z-drop), not {value}")
            else:
                value = check_int(value, name, low, high)
            object.__setattr__(self, name, value)  # numpy ints become ints


@dataclass(frozen=True)
class SeedExtPairs:
    """Many seed extensions in packed form (the project's data model, docs/design.md).

    Pair ``k`` extends ``query[query_offsets[k]:query_offsets[k+1]]`` against
    ``target[target_offsets[k]:target_offsets[k+1]]`` from a seed scoring ``h0[k]``.
    Sequences are ASCII bytes: A, C, G, T (either case); anything else is N. Queries and
    targets may be empty (the answer is then what ksw_extend2 gives for them).
    """

    query: np.ndarray
    query_offsets: np.ndarray
    target: np.ndarray
    target_offsets: np.ndarray
    h0: np.ndarray

    @property
    def n_pairs(self) -> int:
        return len(self.h0)

    def __len__(self) -> int:
        return len(self.h0)

    def query_lengths(self) -> np.ndarray:
        return np.diff(self.query_offsets)

    def target_lengths(self) -> np.ndarray:
        return np.diff(self.target_offsets)

    def select(self, start: int, stop: int) -> SeedExtPairs:
        """Pairs ``start:stop`` as a new packed set (used to chunk long inputs)."""
        q0, q1 = int(self.query_offsets[start]), int(self.query_offsets[stop])
        t0, t1 = int(self.target_offsets[start]), int(self.target_offsets[stop])
        return SeedExtPairs(
            query=self.query[q0:q1], query_offsets=self.query_offsets[start:stop + 1] - q0,
            target=self.target[t0:t1], target_offsets=self.target_offsets[start:stop + 1] - t0,
            h0=self.h0[start:stop],
        )

    @classmethod
    def from_arrays(cls, *, query: object, query_offsets: object, target: object, target_offsets: object,
                    h0: object) -> SeedExtPairs:
        """Build from arrays of any integer layout, checking dtypes and consistency."""
        h0_array = np.asarray(h0)
        if h0_array.dtype.kind not in "iu":
            raise TypeError(f"h0 must hold integers, not {h0_array.dtype}")
        if h0_array.ndim != 1:
            raise ValueError(f"h0 must be 1-D, not {h0_array.ndim}-D")
        _check_h0_range(h0_array)
        pairs = cls(
            query=byte_array(query, "query"), query_offsets=int64_array(query_offsets, "query_offsets"),
            target=byte_array(target, "target"), target_offsets=int64_array(target_offsets, "target_offsets"),
            h0=np.ascontiguousarray(h0_array, dtype=np.int32),
        )
        pairs.validate()
        return pairs

    def validate(self, params: SeedExtParams | None = None) -> int:
        """Raise ValueError/TypeError naming the field when the arrays are inconsistent, and,
        with ``params``, when a pair's best possible score could overflow; return the longest
        query's length."""
        self.validate_layout()
        longest_query = self.validate_range(0, self.n_pairs)
        if params is not None:
            check_score_range(self, params, longest_query)
        return longest_query

    def validate_layout(self) -> None:
        """The checks that do not look at every pair: dtypes, lengths, where the offsets start and end."""
        for name in ("query", "target"):
            check_array(getattr(self, name), name, np.uint8)
        for name in ("query_offsets", "target_offsets"):
            check_array(getattr(self, name), name, np.int64)
        check_array(self.h0, "h0", np.int32)
        n = len(self.h0)
        for name, data in (("query_offsets", self.query), ("target_offsets", self.target)):
            offsets = getattr(self, name)
            if len(offsets) != n + 1:
                raise ValueError(f"{name} has {len(offsets)} entries but h0 has {n} pairs (expected {n + 1})")
            check_offset_ends(offsets, name, len(data))

    def validate_range(self, start: int, stop: int) -> int:
        """The per-pair checks for pairs start..stop-1 (after validate_layout); return their
        longest query's length."""
        longest_query = check_offset_steps(self.query_offsets, "query_offsets", "pair", start, stop)
        check_offset_steps(self.target_offsets, "target_offsets", "pair", start, stop)
        _check_h0_range(self.h0[start:stop], start)
        return longest_query


def _check_h0_range(h0: np.ndarray, first: int = 0) -> None:
    """h0 of pairs first, first + 1, ...: within 0..MAX_SCORE."""
    if len(h0) == 0:
        return
    low, high = int(h0.min()), int(h0.max())
    if low < 0:
        raise ValueError(f"h0 must be >= 0 (the seed's score), but pair {first + int(np.argmin(h0))} has {low}")
    if high > MAX_SCORE:
        raise ValueError(f"h0 must be at most {MAX_SCORE}, but pair {first + int(np.argmax(h0))} has {high}")


RESULT_FIELDS = ("score", "qle", "tle", "gtle", "gscore", "max_off")


class SeedExtResults(Results):
    """What ksw_extend2 returns for each pair, as one (n_pairs, 6) int32 table (a :class:`Results`
    whose columns are views of the table's columns; no CIGAR).

    Columns (also available as attributes, each an int32 view of its column):
      score   best score (h0 when nothing beats the seed);
      qle     query length of the best extension (0: none);
      tle     target length of the best extension (0: none);
      gtle    target length where the extension reaching the query end scores best (0: none);
      gscore  that score (-1: the query end was never reached);
      max_off largest distance from the diagonal among the successive best cells.
    """

    def __init__(self, table: np.ndarray) -> None:
        if not isinstance(table, np.ndarray) or table.dtype != np.int32 or table.ndim != 2 or table.shape[1] != 6:
            raise TypeError("table must be an (n_pairs, 6) numpy array of int32")
        # The table is kept as given (not copied): out= is filled in place through it.
        self.table = table
        super().__init__({name: table[:, k] for k, name in enumerate(RESULT_FIELDS)})

    def _like(self, columns: dict[str, np.ndarray], ops: np.ndarray | None,
              offsets: np.ndarray | None) -> SeedExtResults:
        table = np.empty((len(columns["score"]), len(RESULT_FIELDS)), dtype=np.int32)
        for k, name in enumerate(RESULT_FIELDS):
            table[:, k] = columns[name]
        return SeedExtResults(table)

    @property
    def score(self) -> np.ndarray:
        return self.table[:, 0]

    @property
    def qle(self) -> np.ndarray:
        return self.table[:, 1]

    @property
    def tle(self) -> np.ndarray:
        return self.table[:, 2]

    @property
    def gtle(self) -> np.ndarray:
        return self.table[:, 3]

    @property
    def gscore(self) -> np.ndarray:
        return self.table[:, 4]

    @property
    def max_off(self) -> np.ndarray:
        return self.table[:, 5]

    def check_output(self, n_pairs: int) -> None:
        """ValueError unless the table can take n_pairs results (C-contiguous, writeable)."""
        if not self.table.flags.c_contiguous or not self.table.flags.writeable:
            raise ValueError("out.table must be C-contiguous and writeable")
        if len(self.table) != n_pairs:
            raise ValueError(f"out.table has {len(self.table)} rows but there are {n_pairs} pairs")


def pack_seed_pairs(items: Iterable[tuple[SequenceInput, SequenceInput, int]]) -> SeedExtPairs:
    """Pack ``[(query, target, h0), ...]`` (str, bytes or uint8 arrays) into the packed form."""
    queries, targets, h0s = [], [], []
    for k, item in enumerate(items):
        try:
            query, target, h0 = item
        except (TypeError, ValueError):
            raise TypeError(f"pair {k}: expected (query, target, h0), not {item!r:.80}") from None
        queries.append(sequence_bytes(query, f"pair {k} query"))
        targets.append(sequence_bytes(target, f"pair {k} target"))
        h0s.append(check_int(h0, f"pair {k}: h0", 0, MAX_SCORE))
    return SeedExtPairs.from_arrays(query=concat(queries), query_offsets=offsets_of([len(q) for q in queries]),
                                    target=concat(targets), target_offsets=offsets_of([len(t) for t in targets]),
                                    h0=np.array(h0s, dtype=np.int64))


def check_score_range(pairs: SeedExtPairs, params: SeedExtParams, longest_query: int | None = None,
                      start: int = 0, stop: int | None = None) -> None:
    """Every pair's best possible score must stay below MAX_SCORE (BWA's int arithmetic); pairs
    start..stop-1 only, when given. ``longest_query``: their longest query, when the caller knows it."""
    stop = pairs.n_pairs if stop is None else stop
    if stop <= start:
        return
    h0 = pairs.h0[start:stop]
    # Quick bound first (longest query, largest h0): the per-pair check only when it fails.
    if longest_query is None:
        longest_query = int(np.diff(pairs.query_offsets[start:stop + 1]).max())
    if int(h0.max()) + params.a * longest_query <= MAX_SCORE:
        return
    reach = np.minimum(np.diff(pairs.query_offsets[start:stop + 1]), np.diff(pairs.target_offsets[start:stop + 1]))
    bound = h0.astype(np.int64) + np.int64(params.a) * reach
    worst = int(np.argmax(bound))
    if bound[worst] > MAX_SCORE:
        raise ValueError(f"pair {start + worst}: h0 + a * min(query length, target length) = {int(bound[worst])} "
                         f"exceeds {MAX_SCORE}")


def seed_extend(
    pairs: SeedExtPairs,
    params: SeedExtParams | None = None,
    *,
    backend: str = "auto",
    threads: int | None = None,
    cpu_isa: str | None = None,
    out: SeedExtResults | None = None,
    devices: Sequence[int] | None = None,
    cancelled: CancelCheck | None = None,
    **legacy: Any,
) -> SeedExtResults:
    """Extend every pair as BWA's ``ksw_extend2`` does; results in input order.

    ``params`` is a :class:`SeedExtParams` (BWA-MEM's defaults); its fields may be given as
    keywords instead (``seed_extend(pairs, a=2, w=50)``). ``threads`` bounds CPU threads
    (default: all cores). ``cpu_isa`` forces a CPU variant ("scalar", "avx2", "avx512";
    default: the environment variable ``WARPDP_CPU_ISA`` if set, else the best one this CPU
    supports). ``out`` may be a :class:`SeedExtResults` of ``n_pairs`` to fill. Every backend
    and variant gives the same answers. ``devices`` lists the GPUs to spread the pairs over
    (default: every GPU this process sees; the CPU backend ignores it). ``cancelled`` is
    checked between GPU chunks (see warpdp.plugin.cancel).
    """
    params = SeedExtParams.from_kwargs(params, **legacy)
    check_seed_job(pairs, params)
    n_threads = resolve_threads(threads)
    device_ids = check_devices(devices)
    if out is None:
        results = SeedExtResults(np.empty((pairs.n_pairs, 6), dtype=np.int32))
    elif isinstance(out, SeedExtResults):
        out.check_output(pairs.n_pairs)
        results = out
    else:
        raise TypeError(f"out must be SeedExtResults, not {type(out).__name__}")
    table = results.table
    chosen = choose_backend(backend, "seedext")
    if chosen == "gpu":
        from ..kernels import seedext as gpu_seedext

        # The launcher checks each chunk's pairs on its planning threads, before that chunk's
        # launch, so that checking overlaps the GPU's work instead of coming before it all.
        gpu_seedext.extend(pairs, params, table, check_range=partial(check_pair_range, pairs, params),
                           cancelled=cancelled, devices=device_ids)
    else:
        from ..cython_cpu import seedext as cpu_seedext

        check_pair_range(pairs, params, 0, pairs.n_pairs)
        cpu_isa = resolve_cpu_isa(cpu_isa, cpu_seedext.ISA_NAMES)
        cpu_seedext.run(pairs, params, results, threads=n_threads, isa=cpu_isa)
    return results


def check_seed_extension(pairs: SeedExtPairs, params: SeedExtParams) -> None:
    """TypeError/ValueError naming what is wrong with a seed-extension job, before any work."""
    check_seed_job(pairs, params)
    check_pair_range(pairs, params, 0, pairs.n_pairs)


def check_seed_job(pairs: SeedExtPairs, params: SeedExtParams) -> None:
    """The part of check_seed_extension that does not look at every pair."""
    if not isinstance(pairs, SeedExtPairs):
        raise TypeError(f"pairs must be SeedExtPairs, not {type(pairs).__name__} (see pack_seed_pairs)")
    if not isinstance(params, SeedExtParams):
        raise TypeError(f"params must be SeedExtParams, not {type(params).__name__}")
    params.validate()
    pairs.validate_layout()


def check_pair_range(pairs: SeedExtPairs, params: SeedExtParams, start: int, stop: int) -> None:
    """The rest of check_seed_extension, for pairs start..stop-1 (after check_seed_job)."""
    longest_query = pairs.validate_range(start, stop)
    check_score_range(pairs, params, longest_query, start, stop)


def seed_extend_with(
    pairs: SeedExtPairs,
    params: SeedExtParams,
    *,
    backend: str = "auto",
    threads: int | None = None,
    cpu_isa: str | None = None,
    devices: Sequence[int] | None = None,
    cancelled: CancelCheck | None = None,
) -> SeedExtResults:
    """:func:`seed_extend` with ``params`` required (the form services and the CLI use)."""
    if not isinstance(params, SeedExtParams):
        raise TypeError(f"params must be SeedExtParams, not {type(params).__name__}")
    return seed_extend(pairs, params, backend=backend, threads=threads, cpu_isa=cpu_isa, devices=devices,
                       cancelled=cancelled)


def seedext_cpu_isas() -> list[str]:
    """CPU variants of seed extension this machine can run, slowest first (the last is the default)."""
    from ..cython_cpu import seedext as cpu_seedext

    return cpu_seedext.available_isas()


def seedext_cells(pairs: SeedExtPairs, params: SeedExtParams | None = None, *,
                  threads: int | None = None) -> np.ndarray:
    """The DP cells ksw_extend2 computes for each pair (int64): the work GCUPS figures count."""
    params = params or SeedExtParams()
    params.validate()
    pairs.validate(params)
    from ..cython_cpu import seedext as cpu_seedext

    return cpu_seedext.count_cells(pairs, params, threads=resolve_threads(threads))

