"""Stopping a large job between its pieces once nobody waits for its results any more.

Every backend runs a large job in bounded pieces: the GPU launchers in their chunks, the
gRPC server's CPU path in slices of pairs (:func:`run_in_slices`). Between two pieces each of
them calls :func:`check_cancelled` with the job's cancel check, a function that says whether
the job's callers have all gone (cancelled, or past their deadline); it raises
:class:`JobCancelled` then, and the job's output is left partly filled. A piece that has
started always finishes: a native kernel cannot be interrupted half-way.

Results do not depend on the slicing: every pair is scored on its own, so a job cut into
slices of pairs gives, pair for pair, the same bits as the job run whole.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

CancelCheck = Callable[[], bool]

__all__ = ["CancelCheck", "JobCancelled", "SliceSizer", "check_cancelled", "iter_slice_ranges", "run_in_slices",
           "slice_ranges"]

# A slice size: a number of cells, or a function giving the size of the next slice.
SliceCells = int | Callable[[], int]


class JobCancelled(Exception):
    """A job stopped between two pieces because its cancel check said so."""


def check_cancelled(cancelled: CancelCheck | None) -> None:
    """Raise JobCancelled when the cancel check (None: there is none) says the job is unwanted."""
    if cancelled is not None and cancelled():
        raise JobCancelled("stopped between pieces: nobody waits for this job's results any more")


def iter_slice_ranges(cells: np.ndarray, max_cells: SliceCells) -> Iterator[tuple[int, int]]:
    """Consecutive ranges [i, j) over units (pairs, batches, reads) with these cells each,
    each range of at most max_cells cells (asked again for each range when a function), except
    that a unit larger than that is a range alone."""
    n = len(cells)
    if n == 0:
        return
    cum = np.concatenate([[0], np.cumsum(cells, dtype=np.int64)])
    i = 0
    while i < n:
        limit = max_cells() if callable(max_cells) else max_cells
        j = int(np.searchsorted(cum, cum[i] + limit, side="right")) - 1
        j = min(max(j, i + 1), n)
        yield i, j
        i = j


def slice_ranges(cells: np.ndarray, max_cells: int) -> list[tuple[int, int]]:
    """All of :func:`iter_slice_ranges` at once."""
    return list(iter_slice_ranges(cells, max_cells))


class SliceSizer:
    """Cells per slice, adapted so that a slice takes about ``target_s``: a kernel's rate
    depends on the input (pair lengths, float or double) and on the machine's load, and each
    slice costs a parallel region's start and end, which on a loaded machine can wait for a
    descheduled thread. Starts at ``initial``; after each slice, the rate it ran at sets the
    next size, at most twice the last, within [minimum, maximum]."""

    def __init__(self, initial: int, target_s: float, minimum: int, maximum: int) -> None:
        self.cells = initial
        self.target_s = target_s
        self.minimum, self.maximum = minimum, maximum

    def __call__(self) -> int:
        return self.cells

    def observe(self, cells: int, seconds: float) -> None:
        if cells <= 0 or seconds <= 0:
            return
        wanted = int(cells / seconds * self.target_s)
        self.cells = max(self.minimum, min(wanted, 2 * self.cells, self.maximum))

    def timed(self, run: Callable[[Any], np.ndarray], cells_of: Callable[[Any], int]) -> Callable[[Any], np.ndarray]:
        """``run`` for :func:`run_in_slices` that feeds each slice's duration back here."""
        def timed_run(piece: Any) -> np.ndarray:
            start = time.perf_counter()
            rows = run(piece)
            self.observe(cells_of(piece), time.perf_counter() - start)
            return rows
        return timed_run


def run_in_slices(pieces: Iterable[Any], run: Callable[[Any], np.ndarray], n_rows: int,
                  cancelled: CancelCheck | None = None,
                  on_piece: Callable[[], None] | None = None) -> np.ndarray:
    """Run consecutive pieces of a job one after another and return their result rows in one
    array of n_rows rows (each piece's rows written in place, in order), or, for results that
    are not arrays (warpdp.plugin.core.results.Results, ragged), their ``concat``; checking the
    cancel check before each piece. ``on_piece`` is called after each piece (counters)."""
    out: np.ndarray | None = None
    position = 0
    ragged: list[Any] = []  # the pieces' results when they are not rows of an array (a Results)
    for piece in pieces:
        check_cancelled(cancelled)
        rows = run(piece)
        if isinstance(rows, np.ndarray):
            if out is None:
                out = np.empty((n_rows,) + rows.shape[1:], dtype=rows.dtype)
            out[position:position + len(rows)] = rows
        else:
            ragged.append(rows)
        position += len(rows)
        if on_piece is not None:
            on_piece()
    if position != n_rows:
        raise RuntimeError(f"the slices returned {position} result rows for {n_rows} pairs")
    if ragged:
        return type(ragged[0]).concat(ragged)
    assert out is not None or n_rows == 0
    return out if out is not None else np.empty(0)
