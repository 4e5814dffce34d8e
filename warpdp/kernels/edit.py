"""GPU backend of edit distance: the CuPy launcher for ``edit.cu``.

The plugin layer (:func:`warpdp.plugin.edit.edit`) validates the packed pairs and the parameters
and calls :func:`edit`, which gives the CPU backend's answers exactly. This module

* cuts the pairs into chunks of consecutive pairs (bounded pairs and bases), copied through
  pinned host buffers, two chunks in flight on their own streams, cancellation checked between
  chunks (the shared runtime's chunk loop), spread over several GPUs when given a device list
  (runtime.devices), the results merged in input order;
* windowed method: one launch per tier of ``windowed_kernel<D>`` (D = 8, 24, 64 edits per
  window); a chunk's pairs, longest query first, go to the first tier, and a pair one of whose
  windows needs more than D edits goes on to the next tier (an overflow list in device memory,
  so the tiers follow each other on the stream without the host), which carries it on from the
  window that needed more;
* exact method: pairs sorted by length, longest first, in groups whose lengths are within a
  factor of two; one launch per group, ``exact_kernel`` (a thread per pair) or, when the group's
  longest query passes WARP_MIN_QUERY, ``exact_warp_kernel`` (a warp per pair), each thread's or
  warp's scratch sized for the group's longest pair (linear in its lengths; at most
  SCRATCH_BUDGET per launch);
* leaves to the CPU backend, and logs, the exact pairs too large for the GPU kernels (more than
  GPU_MAX_BLOCK_CELLS 64-row blocks x columns for a thread, 32 times that for a warp, or a
  scratch over MAX_SLOT_BYTES counted for any alphabet): their answers are the CPU's, spliced in
  place.

CuPy is imported only when a GPU function runs, so importing this module needs no GPU.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..plugin.cancel import CancelCheck
from ..plugin.core.packed import offsets_of
from .host_copy import copy_arrays
from .runtime.devices import in_order, plan_spread, resolve_devices, spread
from .runtime.launch_params import POINTER, launch_struct, set_row, struct_rows
from .runtime.layout import sections
from .runtime.module_cache import ModuleSpec, load_module
from .runtime.runner import CopyOut, CupyChunkRunner, Runners
from .runtime.slots import ChunkSlot

__all__ = ["edit", "cpu_fallback_pairs", "ChunkPlan", "plan_chunk", "split_chunks", "WINDOW_TIERS", "EXACT_KERNEL",
           "EXACT_WARP_KERNEL", "COMPACT_KERNEL"]

logger = logging.getLogger("warpdp")

THREADS = 128                     # per block (the kernels' __launch_bounds__)
WINDOW_TIERS = (8, 24, 64)        # edits per window each windowed tier keeps in registers
TIER_SLOTS = (1 << 16, 1 << 14, 1 << 12)  # threads of each tier's launch (its scratch follows)
EXACT_KERNEL = "warpdp_edit::exact_kernel"            # a thread per pair
EXACT_WARP_KERNEL = "warpdp_edit::exact_warp_kernel"  # a warp per pair: queries over WARP_MIN_QUERY
COMPACT_KERNEL = "warpdp_edit::compact_cigars"        # the CIGARs packed together for the copy back
WARP_MIN_QUERY = 512
MAX_EXACT_SLOTS = 1 << 16         # threads of one exact launch
SCRATCH_BUDGET = 2 << 30          # bytes of scratch of one exact launch
GPU_MAX_BLOCK_CELLS = 1 << 27     # ceil(m / 64) * n of a pair above this (x32 for a warp): the CPU backend
MAX_SLOT_BYTES = 64 << 20         # one exact thread's scratch above this: the CPU backend
OUT_COLUMNS = 5                   # distance, target_begin, target_end, n_locations, n_cigar
RESUME_VALUES = 5                 # int64s of a windowed pair's resume record (edit.cu: RESUME)
BAD_BASE = -2                     # the windowed kernel's distance of a pair with a byte not ACGT
_CHUNK_PAIRS = 1 << 18
_CHUNK_BASES = 128 << 20          # long reads: enough pairs in flight (BENCHMARKS.md, edit GPU speed)
_SLOTS = 2


def window_kernel_name(d: int) -> str:
    return f"warpdp_edit::windowed_kernel<{d}>"


# struct Params of edit.cu (one launch).
PARAMS = launch_struct([
    *((name, POINTER) for name in (
        "query", "target", "query_offsets", "target_offsets", "order", "count", "overflow", "overflow_count",
        "symbols", "out", "loc_begin", "loc_end", "cigar", "words", "ints", "bytes", "resume")),
    ("k", np.int64), ("words_per_lane", np.int64), ("ints_per_slot", np.int64), ("bytes_per_slot", np.int64),
    *((name, np.int32) for name in (
        "n_chunk", "slots", "alphabet", "mode", "task", "window", "overlap", "trace_rows", "resume_in"))])
MODULE = ModuleSpec("edit", ("-std=c++17",),
                    tuple(window_kernel_name(d) for d in WINDOW_TIERS) + (EXACT_KERNEL, EXACT_WARP_KERNEL,
                                                                          COMPACT_KERNEL),
                    (("Params", PARAMS),))
_MODES = ("nw", "shw", "hw")
_TASKS = ("distance", "locations", "path")


def cpu_fallback_pairs(query_offsets: np.ndarray, target_offsets: np.ndarray, params: Any) -> np.ndarray:
    """Indices of the pairs the GPU leaves to the CPU backend: exact pairs of more than
    GPU_MAX_BLOCK_CELLS block-columns (32 times that for the warp kernel's) or of a scratch over
    MAX_SLOT_BYTES (none windowed)."""
    if params.method == "windowed":
        return np.zeros(0, np.int64)
    m, n = np.diff(query_offsets), np.diff(target_offsets)
    too_long = ((m + 63) // 64) * n > np.where(m > WARP_MIN_QUERY, 32 * GPU_MAX_BLOCK_CELLS, GPU_MAX_BLOCK_CELLS)
    too_big = slot_bytes(m, n, 256) > MAX_SLOT_BYTES
    return np.flatnonzero(too_long | too_big)


def slot_words(m: Any, alphabet: int) -> Any:
    """Scratch words of one exact thread: the match masks of each symbol (and 0), pv, mv, bottom."""
    return (alphabet + 4) * ((m + 63) // 64)


def lane_words(m: Any, alphabet: int) -> Any:
    """Scratch words of one lane of the warp kernel: its blocks' match masks, pv and mv."""
    return (alphabet + 3) * (((m + 63) // 64 + 31) // 32)


def slot_bytes(m: Any, n: Any, alphabet: int) -> Any:
    """Scratch bytes of one exact thread or warp: words, two rows of int32, reversed copies."""
    return 8 * np.maximum(slot_words(m, alphabet), 32 * lane_words(m, alphabet)) + 8 * (n + 1) + (m + n + 8)


def split_chunks(query_offsets: np.ndarray, target_offsets: np.ndarray, chunk_pairs: int = _CHUNK_PAIRS,
                 chunk_bases: int = _CHUNK_BASES) -> list[tuple[int, int]]:
    """Consecutive pair ranges of at most chunk_pairs pairs and about chunk_bases bases (at least one pair)."""
    n = len(query_offsets) - 1
    bases = query_offsets + target_offsets  # bases before each pair
    chunks, start = [], 0
    while start < n:
        stop = int(np.searchsorted(bases, bases[start] + chunk_bases, side="right")) - 1
        stop = max(start + 1, min(stop, start + chunk_pairs, n))
        chunks.append((start, stop))
        start = stop
    return chunks


@dataclass
class _Launch:
    kernel: str
    index: int          # params row
    grid: int
    slots: int
    order: str          # section holding its pair list
    order_from: int     # first entry of that list
    count: int          # counter index
    overflow: str | None
    words_per_slot: int = 0
    ints_per_slot: int = 0
    bytes_per_slot: int = 0
    trace_rows: int = 0
    words_per_lane: int = 0
    resume_in: int = 0  # windowed tiers after the first carry their pairs on from the resume records


def longest_first(size: np.ndarray) -> np.ndarray:
    """Indices that sort ``size`` (non-negative) in decreasing order, ties in index order; as 16-bit
    keys when they fit (numpy sorts those by radix: short reads' lengths, several times faster)."""
    top = int(size.max()) if len(size) else 0
    key = (top - size).astype(np.uint16) if top < 1 << 16 else -size
    return np.argsort(key, kind="stable").astype(np.int32)


def _group_by_size(size: np.ndarray) -> list[tuple[int, int]]:
    """Runs [a, b) of a descending array whose values are above half the run's first."""
    groups, a = [], 0
    while a < len(size):
        b = int(np.searchsorted(-size, -(size[a] // 2), side="left"))
        b = max(a + 1, b)
        groups.append((a, b))
        a = b
    return groups


class ChunkPlan:
    """One chunk's launches, memory layout, upload (:meth:`fill`) and results (:meth:`decode`).
    Pure host work (numpy), so that it runs and is tested without a GPU."""

    def __init__(self, pairs: Any, params: Any, start: int, stop: int, skip: np.ndarray) -> None:
        qo, to = pairs.query_offsets, pairs.target_offsets
        self.start, self.stop, self.n = start, stop, stop - start
        self.q0, self.q1, self.t0, self.t1 = int(qo[start]), int(qo[stop]), int(to[start]), int(to[stop])
        self.qoff = qo[start:stop + 1] - self.q0
        self.toff = to[start:stop + 1] - self.t0
        self.skip = skip  # chunk indices left to the CPU backend
        self.params = params
        m = np.diff(self.qoff)
        self.symbols = np.zeros(256, np.uint16)
        self.alphabet = 0
        self.want_locations = params.task != "distance"
        self.want_cigar = params.task == "path"
        self.launches: list[_Launch] = []
        if params.method == "windowed":
            self.order = longest_first(m)
            rows = params.window - params.overlap + 1
            for tier, d in enumerate(WINDOW_TIERS):
                slots = min(TIER_SLOTS[tier], -(-self.n // THREADS) * THREADS)
                last = tier == len(WINDOW_TIERS) - 1
                self.launches.append(_Launch(window_kernel_name(d), tier, slots // THREADS, slots,
                                             "order" if tier == 0 else f"list{tier}", 0, tier,
                                             None if last else f"list{tier + 1}", rows * (d + 1), trace_rows=rows,
                                             resume_in=int(tier > 0)))
            self.counts = np.array([self.n, 0, 0], np.int32)
            lists = (("list1", 4 * self.n), ("list2", 4 * self.n), ("resume", 8 * RESUME_VALUES * self.n))
        else:
            n = np.diff(self.toff)
            on_gpu = np.ones(self.n, bool)
            on_gpu[skip] = False
            queries = pairs.query_bases[self.q0:self.q1]
            present = np.bincount(queries, minlength=256) > 0
            self.alphabet = int(present.sum())
            self.symbols[present] = np.arange(1, self.alphabet + 1, dtype=np.uint16)
            gpu = np.flatnonzero(on_gpu)
            size = (m + n)[gpu]
            sorted_here = longest_first(size)
            self.order = gpu[sorted_here].astype(np.int32)
            size = size[sorted_here]
            counts = []
            for a, b in _group_by_size(size):
                self.launches.append(self._exact_launch(m, n, a, b, len(counts)))
                counts.append(b - a)
            self.counts = np.array(counts or [0], np.int32)
            lists = ()
        self.at, self.blob_bytes = sections(
            (("params", PARAMS.itemsize * max(1, len(self.launches))), ("counts", 4 * len(self.counts)),
             ("symbols", 512), ("query", self.q1 - self.q0), ("target", self.t1 - self.t0),
             ("qoff", 8 * (self.n + 1)), ("toff", 8 * (self.n + 1)), ("order", 4 * len(self.order))), min_size=1)
        # Windowed and NW: one location per pair (at the pair's index); else n + 1 at most.
        self.one_location = params.method == "windowed" or params.mode == "nw"
        loc_room = (self.n if self.one_location else self.t1 - self.t0 + self.n) if self.want_locations else 0
        cigar_room = (self.q1 - self.q0 + self.t1 - self.t0) if self.want_cigar else 0
        words = max([launch.slots * launch.words_per_slot for launch in self.launches], default=0)
        ints = max([launch.slots * launch.ints_per_slot for launch in self.launches], default=0)
        scratch_bytes = max([launch.slots * launch.bytes_per_slot for launch in self.launches], default=0)
        device_at, self.device_bytes = sections(
            (("out", 8 * OUT_COLUMNS * self.n), ("loc_begin", 8 * loc_room), ("loc_end", 8 * loc_room),
             ("cigar", 4 * cigar_room), *lists, ("words", 8 * words), ("ints", 4 * ints), ("bytes", scratch_bytes)),
            start=self.blob_bytes, min_size=1)
        self.at.update(device_at)
        self.loc_room, self.cigar_room = loc_room, cigar_room
        # What comes back: the columns, the locations and the CIGARs (contiguous from "out"); the
        # device runner copies the columns and locations (head_bytes), then the CIGARs packed.
        self.out_bytes = self.at["cigar"] + 4 * cigar_room - self.at["out"]
        self.head_bytes = self.at["cigar"] - self.at["out"] if self.want_cigar else self.out_bytes

    def _exact_launch(self, m: np.ndarray, n: np.ndarray, a: int, b: int, counter: int) -> _Launch:
        """The launch of order[a:b]: a warp per pair when the longest query passes
        WARP_MIN_QUERY, else a thread; as many as SCRATCH_BUDGET holds, up to MAX_EXACT_SLOTS
        threads."""
        group = self.order[a:b]
        mmax, nmax = int(m[group].max()), int(n[group].max())
        per_slot = int(slot_bytes(mmax, nmax, self.alphabet))
        lanes = 32 if mmax > WARP_MIN_QUERY else 1
        fit = max(THREADS, SCRATCH_BUDGET // per_slot * lanes // THREADS * THREADS)
        threads = min(-(-(b - a) * lanes // THREADS) * THREADS, MAX_EXACT_SLOTS, fit)
        words = int(lane_words(mmax, self.alphabet))
        return _Launch(EXACT_WARP_KERNEL if lanes == 32 else EXACT_KERNEL, len(self.launches), threads // THREADS,
                       threads // lanes, "order", a, counter, None,
                       32 * words if lanes == 32 else int(slot_words(mmax, self.alphabet)), 2 * (nmax + 1),
                       (mmax + nmax + 8) // 8 * 8, words_per_lane=words if lanes == 32 else 0)

    def fill(self, blob: np.ndarray, pairs: Any, base: int) -> None:
        """Write the upload part of the chunk into ``blob``, its device copy at address ``base``."""
        at, p = self.at, self.params
        blob[at["counts"]:at["counts"] + 4 * len(self.counts)].view(np.int32)[:] = self.counts
        blob[at["symbols"]:at["symbols"] + 512].view(np.uint16)[:] = self.symbols
        copy_arrays([(blob[at["query"]:at["query"] + self.q1 - self.q0], pairs.query_bases[self.q0:self.q1]),
                     (blob[at["target"]:at["target"] + self.t1 - self.t0], pairs.target_bases[self.t0:self.t1])])
        blob[at["qoff"]:at["qoff"] + 8 * (self.n + 1)].view(np.int64)[:] = self.qoff
        blob[at["toff"]:at["toff"] + 8 * (self.n + 1)].view(np.int64)[:] = self.toff
        blob[at["order"]:at["order"] + 4 * len(self.order)].view(np.int32)[:] = self.order
        blob[at["params"]:at["params"] + PARAMS.itemsize * len(self.launches)] = 0  # the padding too
        rows = struct_rows(blob, at["params"], PARAMS, len(self.launches))
        for launch in self.launches:
            set_row(rows, launch.index, {
                "query": base + at["query"], "target": base + at["target"], "query_offsets": base + at["qoff"],
                "target_offsets": base + at["toff"], "order": base + at[launch.order] + 4 * launch.order_from,
                "count": base + at["counts"] + 4 * launch.count,
                "overflow": base + at[launch.overflow] if launch.overflow else 0,
                "overflow_count": base + at["counts"] + 4 * (launch.count + 1) if launch.overflow else 0,
                "symbols": base + at["symbols"], "out": base + at["out"],
                "loc_begin": base + at["loc_begin"] if self.want_locations else 0,
                "loc_end": base + at["loc_end"] if self.want_locations else 0,
                "cigar": base + at["cigar"] if self.want_cigar else 0,
                "words": base + at["words"], "ints": base + at["ints"], "bytes": base + at["bytes"],
                "resume": base + at["resume"] if "resume" in at else 0, "resume_in": launch.resume_in,
                "k": p.k, "words_per_lane": launch.words_per_lane, "ints_per_slot": launch.ints_per_slot,
                "bytes_per_slot": launch.bytes_per_slot,
                "n_chunk": self.n, "slots": launch.slots, "alphabet": self.alphabet, "mode": _MODES.index(p.mode),
                "task": _TASKS.index(p.task), "window": p.window, "overlap": p.overlap,
                "trace_rows": launch.trace_rows})

    def params_address(self, base: int, launch: _Launch) -> int:
        return base + self.at["params"] + PARAMS.itemsize * launch.index

    def cigar_offsets(self, out: np.ndarray) -> np.ndarray:
        """The offsets of the chunk's CIGARs packed in pair order (from their run counts in the
        bytes that came back; none for the pairs left to the CPU)."""
        counts = out[8 * 4 * self.n:8 * 5 * self.n].view(np.int64)
        if len(self.skip):
            counts = counts.copy()
            counts[self.skip] = 0
        return offsets_of(counts)

    def decode(self, out: np.ndarray, cigar_ops: np.ndarray | None = None,
               cigar_offsets: np.ndarray | None = None) -> Any:
        """The chunk's EditResults from the bytes that came back (``out_bytes`` from "out", or
        ``head_bytes`` and the CIGARs' runs already packed in pair order, ``cigar_ops``, with
        their :meth:`cigar_offsets` when known); pairs left to the CPU have placeholders (no
        locations, no CIGAR). Copies what it keeps: ``out`` is a reused buffer."""
        from ..plugin.edit import EditResults

        n, at0 = self.n, self.at["out"]
        # The three result columns in one copy (their views keep it); the counts are read in place.
        columns_copy = out[:8 * 3 * n].view(np.int64).reshape(3, n).copy()
        columns_copy[:, self.skip] = 0
        columns = {"distance": columns_copy[0], "target_begin": columns_copy[1], "target_end": columns_copy[2]}
        locations = ops = offsets = None
        if self.want_locations:
            counts = out[8 * 3 * n:8 * 4 * n].view(np.int64)
            if len(self.skip):
                counts = counts.copy()
                counts[self.skip] = 0
            begin_at, end_at = self.at["loc_begin"] - at0, self.at["loc_end"] - at0
            begin = out[begin_at:begin_at + 8 * self.loc_room].view(np.int64)
            end = out[end_at:end_at + 8 * self.loc_room].view(np.int64)
            locations = self._locations(begin, end, counts)
        if self.want_cigar and cigar_ops is not None:
            ops, offsets = cigar_ops, self.cigar_offsets(out) if cigar_offsets is None else cigar_offsets
        elif self.want_cigar:
            cigar_at = self.at["cigar"] - at0
            ops, offsets = compact(out[cigar_at:cigar_at + 4 * self.cigar_room].view(np.uint32),
                                   self.qoff[:n] + self.toff[:n], np.diff(self.cigar_offsets(out)))
        return EditResults(columns, ops, offsets, locations)

    def _locations(self, begin: np.ndarray, end: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, ...]:
        """Every pair's locations, packed: (loc_begin, loc_end, loc_offsets)."""
        if not self.one_location:
            starts = np.arange(self.n, dtype=np.int64) + self.toff[:self.n]
            loc_begin, loc_offsets = compact(begin, starts, counts)
            return loc_begin, compact(end, starts, counts)[0], loc_offsets
        # At most one location per pair, at the pair's index: no gather unless some pair has none.
        if bool((counts == 1).all()):
            return begin[:self.n].copy(), end[:self.n].copy(), np.arange(self.n + 1, dtype=np.int64)
        found = counts > 0
        return begin[:self.n][found], end[:self.n][found], offsets_of(found)


def compact(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's first counts[i] values from starts[i], concatenated, and their offsets."""
    offsets = offsets_of(counts)
    total = int(offsets[len(counts)])
    index = np.repeat(starts - offsets[:len(counts)], counts) + np.arange(total, dtype=np.int64)
    return values[index].copy(), offsets


def take_runs(values: np.ndarray, offsets: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """The runs of the given pairs (ragged: pair i's values[offsets[i]:offsets[i+1]]), concatenated."""
    return compact(values, offsets[pairs], np.diff(offsets)[pairs])[0]


def take_pairs(pairs: Any, indices: np.ndarray) -> Any:
    """The given pairs as a new packed set of the same type."""
    qo, to = pairs.query_offsets, pairs.target_offsets
    return type(pairs)(take_runs(pairs.query_bases, qo, indices), offsets_of(np.diff(qo)[indices]),
                       take_runs(pairs.target_bases, to, indices), offsets_of(np.diff(to)[indices]))


def splice(results: Any, indices: np.ndarray, replacement: Any) -> Any:
    """``results`` with the pairs at ``indices`` (increasing) replaced by ``replacement``'s, in order."""
    from ..plugin.edit import EditResults

    if len(indices) == 0:
        return results
    columns = {name: results.columns[name].copy() for name in EditResults.COLUMNS}
    for name in EditResults.COLUMNS:
        columns[name][indices] = replacement.columns[name]

    def ragged(values: np.ndarray, offsets: np.ndarray, new_values: np.ndarray,
               new_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        counts = np.diff(offsets)
        counts[indices] = np.diff(new_offsets)
        joined = offsets_of(counts)
        out = np.empty(int(joined[-1]) if len(joined) else 0, dtype=values.dtype)
        keep = np.ones(len(counts), bool)
        keep[indices] = False
        kept = np.flatnonzero(keep)
        out[take_runs(np.arange(len(out)), joined, kept)] = take_runs(values, offsets, kept)
        out[take_runs(np.arange(len(out)), joined, indices)] = new_values
        return out, joined

    ops = offsets = locations = None
    if results.cigar_ops is not None:
        ops, offsets = ragged(results.cigar_ops, results.cigar_offsets, replacement.cigar_ops,
                              replacement.cigar_offsets)
    if results.locations is not None:
        begin, loc_offsets = ragged(results.locations[0], results.locations[2], replacement.locations[0],
                                    replacement.locations[2])
        end, _ = ragged(results.locations[1], results.locations[2], replacement.locations[1],
                        replacement.locations[2])
        locations = (begin, end, loc_offsets)
    return EditResults(columns, ops, offsets, locations)


class _Runner(CupyChunkRunner):
    """Per-process GPU state: the compiled kernels, streams and reusable buffers."""

    def __init__(self) -> None:
        import cupy

        super().__init__(cupy, _SLOTS, cupy.cuda.runtime.getDevice())
        self.module = load_module(MODULE, self.device_id)
        self.kernels = {name: self.module.get_function(name) for name in MODULE.name_expressions}

    def _enqueue(self, slot: ChunkSlot, plan: ChunkPlan) -> None:
        cupy = self.cupy
        runtime = cupy.cuda.runtime
        stream = slot.stream
        base = slot.upload(runtime, plan.blob_bytes)
        for launch in plan.launches:
            self.kernels[launch.kernel]((launch.grid,), (THREADS,), (np.uint64(plan.params_address(base, launch)),),
                                        stream=stream)
        runtime.memcpyAsync(slot.pinned_out.ctypes.data, base + plan.at["out"], plan.head_bytes, 2, stream.ptr)
        slot.done = cupy.cuda.Event(block=False, disable_timing=True)
        slot.done.record(stream)

    def run(self, pairs: Any, params: Any, skip: np.ndarray, chunks: Iterable[tuple[int, int]],
            cancelled: CancelCheck | None) -> list[tuple[int, Any]]:
        """Each chunk's first pair and EditResults (pairs in ``skip`` left as placeholders)."""

        def enqueue(chunk_plan: ChunkPlan, index: int, slot: ChunkSlot) -> CopyOut:
            self.grow(slot, chunk_plan.blob_bytes, chunk_plan.out_bytes, chunk_plan.device_bytes)
            chunk_plan.fill(slot.pinned_in, pairs, int(slot.device.ptr))
            self._enqueue(slot, chunk_plan)
            return partial(self._copy_out, chunk_plan)

        return self.run_chunks(chunks, partial(plan_chunk, pairs, params, skip), enqueue, cancelled)

    def _copy_out(self, plan: ChunkPlan, slot: ChunkSlot) -> tuple[int, Any]:
        """The chunk's first pair and results, its kernels done and its head copied back: the
        CIGARs' runs are packed on the device (COMPACT_KERNEL) and only those copied back."""
        head = slot.pinned_out[:plan.head_bytes]
        if not plan.want_cigar:
            return plan.start, plan.decode(head)
        offsets = plan.cigar_offsets(head)
        total = int(offsets[-1])
        if total == 0:
            return plan.start, plan.decode(head, np.zeros(0, np.uint32), offsets)
        runtime, stream, base = self.cupy.cuda.runtime, slot.stream, int(slot.device.ptr)
        packed = self.cupy.cuda.alloc(8 * len(offsets) + 4 * total)
        runtime.memcpyAsync(packed.ptr, offsets.ctypes.data, 8 * len(offsets), 1, stream.ptr)
        self.kernels[COMPACT_KERNEL]((min(-(-plan.n * 32 // THREADS), 1 << 16),), (THREADS,), (
            np.uint64(base + plan.at["cigar"]), np.uint64(base + plan.at["qoff"]), np.uint64(base + plan.at["toff"]),
            np.uint64(packed.ptr), np.uint64(packed.ptr + 8 * len(offsets)), np.int32(plan.n)), stream=stream)
        runtime.memcpyAsync(slot.pinned_out.ctypes.data + plan.head_bytes, packed.ptr + 8 * len(offsets), 4 * total,
                            2, stream.ptr)
        stream.synchronize()
        ops = slot.pinned_out[plan.head_bytes:plan.head_bytes + 4 * total].view(np.uint32).copy()
        return plan.start, plan.decode(head, ops, offsets)


def plan_chunk(pairs: Any, params: Any, skip: np.ndarray, chunk: tuple[int, int]) -> ChunkPlan:
    """The plan of pairs start..stop-1, those of ``skip`` (indices into all pairs) left to the CPU."""
    start, stop = chunk
    return ChunkPlan(pairs, params, start, stop, skip[(skip >= start) & (skip < stop)] - start)


_RUNNERS: Runners[_Runner] = Runners(lambda device_id: _Runner())


def _runner(device_id: int | None = None) -> _Runner:
    return _RUNNERS.on_device(device_id)  # one per device (default: the current one)


def edit(pairs: Any, params: Any, *, threads: int = 1, cancelled: CancelCheck | None = None,
         devices: Sequence[int] | None = None, runner: Any = None) -> Any:
    """EditResults of every pair (validated :class:`~warpdp.plugin.edit.EditPairs` and
    :class:`~warpdp.plugin.edit.EditParams`), exactly the CPU backend's. Exact pairs too large
    for the GPU kernel run on the CPU backend with ``threads`` (logged). ``cancelled`` is checked
    before each chunk is enqueued (JobCancelled). ``devices`` lists the GPUs to spread the
    chunks over (default: every GPU this process sees; see runtime.devices). ``runner``:
    anything with the runner's ``run``, run on this thread for every chunk instead of the
    devices' runners (tests run the kernels' host build through it)."""
    from ..plugin.edit import EditResults

    skip = cpu_fallback_pairs(pairs.query_offsets, pairs.target_offsets, params)
    if len(skip):
        logger.info("warpdp edit: %d pair(s) too large for one GPU thread run on the CPU backend", len(skip))
    device_ids = resolve_devices(devices) if runner is None else [0]
    device_ids, (chunk_pairs, chunk_bases) = plan_spread(
        device_ids, (_CHUNK_PAIRS, pairs.n_pairs),
        (_CHUNK_BASES, int(pairs.query_offsets[-1]) + int(pairs.target_offsets[-1])))
    chunks = split_chunks(pairs.query_offsets, pairs.target_offsets, chunk_pairs, chunk_bases)
    if runner is not None:
        found = [runner.run(pairs, params, skip, chunks, cancelled)]
    else:
        found = spread(device_ids, chunks, lambda device, share: _runner(device).run(
            pairs, params, skip, share, cancelled)) if chunks else []
    parts = in_order(found)
    results = parts[0] if len(parts) == 1 else EditResults.concat(parts) if parts else _empty(params)
    bad = np.flatnonzero(results.distance == BAD_BASE) if params.method == "windowed" else ()
    if len(bad):
        raise ValueError(f"pair {int(bad[0])} has a byte other than A, C, G, T (the windowed method takes only those)")
    if len(skip):
        from ..plugin.edit import edit as edit_any

        results = splice(results, skip, edit_any(take_pairs(pairs, skip), params, backend="cpu", threads=threads))
    return results


def _empty(params: Any) -> Any:
    from ..plugin.edit import EditResults

    columns = {name: np.zeros(0, np.int64) for name in EditResults.COLUMNS}
    empty = np.zeros(1, np.int64)
    locations = (np.zeros(0, np.int64), np.zeros(0, np.int64), empty) if params.task != "distance" else None
    if params.task == "path":
        return EditResults(columns, np.zeros(0, np.uint32), empty, locations)
    return EditResults(columns, None, None, locations)
