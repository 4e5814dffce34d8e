"""GPU backend of the align family: the CuPy launcher for ``align.cu``.

The plugin layer (:func:`warpdp.plugin.align.align`) validates the pairs and the parameters and
calls :func:`run`, which gives exactly the CPU backend's results (the five columns and, with
``cigar=True`` or in GATK mode, the CIGARs by the same tie rules). This module

* cuts the pairs into chunks (consecutive ranges) bounded in pairs, sequence bytes and, when
  a traceback is kept, traceback bytes (4 bits per DP cell, padded to whole stripes of 32
  rows; ``traceback_bytes``); a pair whose traceback alone exceeds the per-chunk bound
  (``TRACE_CHUNK_BYTES``, over 1 GiB of cells: only with ``max_traceback_cells`` raised past
  its default) is aligned by the CPU backend instead, and logged;
* per chunk uploads the raw sequences and offsets with the launch struct through a pinned
  buffer, runs ``dp_kernel`` (one warp per pair, see ``align.cu``) and, with a traceback,
  ``traceback_kernel`` (one thread per pair), and copies the result records and CIGAR ops back;
  two chunks are in flight (the shared :class:`ChunkRunner`), and ``cancelled`` is checked
  between chunks;
* spreads the chunks over several GPUs when given a device list (runtime.devices), the CIGARs
  merged in input order.

CuPy is imported only when a GPU function runs, so importing this module needs no GPU.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..plugin.cancel import CancelCheck
from .runtime.devices import in_order, plan_spread, resolve_devices, spread
from .runtime.launch_params import POINTER, launch_struct, set_row, struct_rows
from .runtime.layout import sections
from .runtime.module_cache import ModuleSpec, load_module
from .runtime.runner import CopyOut, CupyChunkRunner, Runners
from .runtime.slots import ChunkSlot

__all__ = ["run", "plan_chunks", "pair_traceback_bytes", "traceback_bytes", "DP_KERNELS", "TRACEBACK_KERNELS", "Chunk"]

logger = logging.getLogger("warpdp")

THREADS_PER_BLOCK = 128         # four warps: four pairs per block
WARPS_PER_BLOCK = THREADS_PER_BLOCK // 32
TRACEBACK_THREADS = 128
ROWS_PER_LANE = 4               # rows of a stripe per lane (align.cu's ROWS_PER_LANE)
STRIPE_ROWS = 32 * ROWS_PER_LANE
RECORD_INTS = 8                 # per pair: score q_begin q_end t_begin t_end end_row end_col n_ops
MAX_SHARED_BYTES = 96 * 1024    # boundary rows of a block's warps in shared memory up to this
CHUNK_PAIRS = 1 << 18
CHUNK_BYTES = 64 << 20          # sequence bytes per chunk
TRACE_CHUNK_BYTES = 1 << 30     # traceback bytes per chunk
_SLOTS = 2
MODE_CODES = {"global": 0, "semiglobal": 1, "local": 2, "extension": 3}
OVERHANG_CODES = {"SOFTCLIP": 0, "INDEL": 1, "LEADING_INDEL": 2, "IGNORE": 3}

# dp_kernel<GATK, TRACE, ORIGIN>: ORIGIN carries traceback ends (score-only local/semiglobal).
DP_KERNELS = {(gatk, trace, origin): f"warpdp_align::dp_kernel<{str(gatk).lower()}, {str(trace).lower()}, "
              f"{str(origin).lower()}>"
              for gatk, trace, origin in ((False, False, False), (False, False, True), (False, True, False),
                                          (True, True, False))}
TRACEBACK_KERNELS = {gatk: f"warpdp_align::traceback_kernel<{str(gatk).lower()}>" for gatk in (False, True)}

# struct Params of align.cu.
PARAMS = launch_struct([
    *((name, POINTER) for name in ("query", "target", "query_offsets", "target_offsets", "trace_offsets", "out",
                                   "trace", "scratch", "ops")),
    ("matrix", np.int32, 25),
    *((name, np.int32) for name in ("n", "mode", "first", "ext", "zdrop", "overhang", "match", "mismatch",
                                    "gap_open", "gap_extend", "shared_boundary", "max_cols"))])
MODULE = ModuleSpec("align", ("-std=c++17",), tuple(DP_KERNELS.values()) + tuple(TRACEBACK_KERNELS.values()),
                    (("Params", PARAMS),))


def boundary_bytes(origin: bool) -> int:
    """Bytes per column of a warp's boundary row (align.cu's boundary_bytes)."""
    return 24 if origin else 8


def traceback_words(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """32-bit words of 4-bit cells per pair: whole stripes of STRIPE_ROWS rows, per row of a lane
    8 anti-diagonal steps a word (align.cu's stripe_words)."""
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    return (rows + STRIPE_ROWS - 1) // STRIPE_ROWS * ROWS_PER_LANE * ((cols + 38) // 8 * 32)


def traceback_bytes(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return 4 * traceback_words(rows, cols)


@dataclass(frozen=True)
class Chunk:
    start: int
    stop: int
    on_gpu: bool  # False: one pair whose traceback exceeds the chunk bound, for the CPU


def pair_traceback_bytes(q_lens: np.ndarray, t_lens: np.ndarray, traceback: bool, gatk: bool) -> np.ndarray:
    """Traceback bytes of each pair (zeros without a traceback); GATK mode's rows are the target."""
    q_lens, t_lens = np.asarray(q_lens, np.int64), np.asarray(t_lens, np.int64)
    if not traceback:
        return np.zeros(len(q_lens), np.int64)
    rows, cols = (t_lens, q_lens) if gatk else (q_lens, t_lens)
    return traceback_bytes(rows, cols)


def plan_chunks(q_lens: np.ndarray, t_lens: np.ndarray, traceback: bool, gatk: bool,
                chunk_pairs: int = CHUNK_PAIRS, chunk_bytes: int = CHUNK_BYTES,
                trace_bytes: int = TRACE_CHUNK_BYTES, cpu_trace_bytes: int | None = None) -> list[Chunk]:
    """Consecutive ranges covering every pair once, each within chunk_pairs pairs, about
    chunk_bytes of sequence and (with a traceback) trace_bytes of traceback (a pair over a
    bound alone is a chunk of its own); a pair over cpu_trace_bytes (default trace_bytes) is a
    chunk of its own for the CPU."""
    q_lens, t_lens = np.asarray(q_lens, np.int64), np.asarray(t_lens, np.int64)
    cpu_trace_bytes = trace_bytes if cpu_trace_bytes is None else cpu_trace_bytes
    n = len(q_lens)
    seq = np.concatenate(([0], np.cumsum(q_lens + t_lens)))
    per_pair = pair_traceback_bytes(q_lens, t_lens, traceback, gatk)
    trace = np.concatenate(([0], np.cumsum(per_pair)))
    chunks: list[Chunk] = []
    start = 0
    while start < n:
        if per_pair[start] > cpu_trace_bytes:
            chunks.append(Chunk(start, start + 1, False))
            start += 1
            continue
        stop = min(n, start + chunk_pairs)
        stop = min(stop, max(start + 1, int(np.searchsorted(seq, seq[start] + chunk_bytes, side="right")) - 1))
        stop = min(stop, max(start + 1, int(np.searchsorted(trace, trace[start] + trace_bytes, side="right")) - 1))
        over = np.flatnonzero(per_pair[start:stop] > cpu_trace_bytes)
        if len(over):
            stop = start + int(over[0])
        chunks.append(Chunk(start, stop, True))
        start = stop
    return chunks


class _ChunkPlan:
    """One GPU chunk's memory layout (upload blob, then device-only sections)."""

    def __init__(self, pairs: Any, params: Any, chunk: Chunk) -> None:
        qo, to = pairs.query_offsets, pairs.target_offsets
        s, e = chunk.start, chunk.stop
        self.start, self.n = s, e - s
        self.q0, self.q1, self.t0, self.t1 = int(qo[s]), int(qo[e]), int(to[s]), int(to[e])
        self.qoff = qo[s:e + 1] - self.q0
        self.toff = to[s:e + 1] - self.t0
        self.gatk = params.mode == "gatk"
        self.trace = params.traceback
        self.origin = not self.trace and params.mode in ("local", "semiglobal")
        q_lens, t_lens = np.diff(self.qoff), np.diff(self.toff)
        rows, cols = (t_lens, q_lens) if self.gatk else (q_lens, t_lens)
        words = traceback_words(rows, cols) if self.trace else np.zeros(self.n, np.int64)
        self.trace_offsets = np.concatenate(([0], np.cumsum(words)))
        self.max_cols = int(cols.max())
        bb = boundary_bytes(self.origin)
        self.shared_bytes = WARPS_PER_BLOCK * (self.max_cols + 1) * bb
        self.shared = self.shared_bytes <= MAX_SHARED_BYTES
        scratch = 0 if self.shared else (int(cols.sum()) + self.n) * bb
        self.ops_ints = (self.q1 - self.q0) + (self.t1 - self.t0) + 2 * self.n if self.trace else 0
        self.at, self.blob_bytes = sections(
            (("params", PARAMS.itemsize), ("query", self.q1 - self.q0), ("target", self.t1 - self.t0),
             ("qoff", 8 * (self.n + 1)), ("toff", 8 * (self.n + 1)), ("trace_offsets", 8 * (self.n + 1))),
            min_size=1)
        self.out_bytes = 4 * RECORD_INTS * self.n
        device_at, self.device_bytes = sections(
            (("out", self.out_bytes), ("ops", 4 * self.ops_ints), ("trace", 4 * int(self.trace_offsets[-1])),
             ("scratch", scratch)), start=self.blob_bytes, min_size=1)
        self.at.update(device_at)
        self.pinned_out_bytes = self.out_bytes + 4 * self.ops_ints

    def fill(self, blob: np.ndarray, pairs: Any, params: Any, base: int) -> None:
        """Write the upload part of the chunk into ``blob`` (pinned), pointing at ``base``."""
        at = self.at
        blob[at["query"]:at["query"] + self.q1 - self.q0] = pairs.query_bases[self.q0:self.q1]
        blob[at["target"]:at["target"] + self.t1 - self.t0] = pairs.target_bases[self.t0:self.t1]
        for name, values in (("qoff", self.qoff), ("toff", self.toff), ("trace_offsets", self.trace_offsets)):
            blob[at[name]:at[name] + 8 * (self.n + 1)].view(np.int64)[:] = values
        blob[at["params"]:at["params"] + PARAMS.itemsize] = 0
        rows = struct_rows(blob, at["params"], PARAMS, 1)
        matrix = np.array(params.score_matrix(), np.int32).reshape(25) if not self.gatk else np.zeros(25, np.int32)
        first, ext = params.gap_costs() if not self.gatk else (0, 0)
        set_row(rows, 0, {
            "query": base + at["query"], "target": base + at["target"], "query_offsets": base + at["qoff"],
            "target_offsets": base + at["toff"], "trace_offsets": base + at["trace_offsets"],
            "out": base + at["out"], "trace": base + at["trace"], "scratch": base + at["scratch"],
            "ops": base + at["ops"], "matrix": matrix, "n": self.n, "mode": MODE_CODES.get(params.mode, 0),
            "first": first, "ext": ext, "zdrop": -1 if params.zdrop is None else params.zdrop,
            "overhang": OVERHANG_CODES[params.overhang], "match": params.match, "mismatch": params.mismatch,
            "gap_open": params.gap_open, "gap_extend": params.gap_extend, "shared_boundary": int(self.shared),
            "max_cols": self.max_cols})

    def collect(self, pinned_out: np.ndarray, columns: dict[str, np.ndarray], want_ops: bool) -> Any:
        """Copy the chunk's records into the result columns; its first pair and its CIGAR ops
        and counts (or None)."""
        records = pinned_out[:self.out_bytes].view(np.int32).reshape(self.n, RECORD_INTS)
        s, e = self.start, self.start + self.n
        for k, name in enumerate(("score", "query_begin", "query_end", "target_begin", "target_end")):
            columns[name][s:e] = records[:, k]
        if not want_ops:
            return s, None
        counts = records[:, 7].astype(np.int64)
        ops = pinned_out[self.out_bytes:self.out_bytes + 4 * self.ops_ints].view(np.uint32)
        starts = self.qoff[:-1] + self.toff[:-1] + 2 * np.arange(self.n, dtype=np.int64)
        total = int(counts.sum())
        index = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total)
        return s, (ops[index].copy(), counts)


class _Runner(CupyChunkRunner):
    """Per-process GPU state: the compiled kernels, streams and reusable chunk buffers."""

    def __init__(self) -> None:
        import cupy

        super().__init__(cupy, _SLOTS, cupy.cuda.runtime.getDevice())
        module = load_module(MODULE, self.device_id)
        self.dp = {key: module.get_function(name) for key, name in DP_KERNELS.items()}
        for kernel in self.dp.values():
            kernel.max_dynamic_shared_size_bytes = MAX_SHARED_BYTES
        self.traceback = {key: module.get_function(name) for key, name in TRACEBACK_KERNELS.items()}

    def _enqueue(self, slot: ChunkSlot, plan: _ChunkPlan) -> None:
        cupy = self.cupy
        runtime = cupy.cuda.runtime
        stream = slot.stream
        base = slot.upload(runtime, plan.blob_bytes)
        params = (np.uint64(base + plan.at["params"]),)
        grid = -(-plan.n // WARPS_PER_BLOCK)
        self.dp[(plan.gatk, plan.trace, plan.origin)]((grid,), (THREADS_PER_BLOCK,), params,
                                                      shared_mem=plan.shared_bytes if plan.shared else 0,
                                                      stream=stream)
        if plan.trace:
            self.traceback[plan.gatk]((-(-plan.n // TRACEBACK_THREADS),), (TRACEBACK_THREADS,), params,
                                      stream=stream)
        runtime.memcpyAsync(slot.pinned_out.ctypes.data, base + plan.at["out"], plan.out_bytes, 2, stream.ptr)
        if plan.ops_ints:
            runtime.memcpyAsync(slot.pinned_out.ctypes.data + plan.out_bytes, base + plan.at["ops"],
                                4 * plan.ops_ints, 2, stream.ptr)
        slot.done = cupy.cuda.Event(block=False, disable_timing=True)
        slot.done.record(stream)

    def run(self, pairs: Any, params: Any, columns: dict[str, np.ndarray], chunks: Iterable[Chunk],
            cancelled: CancelCheck | None) -> list[tuple[int, Any]]:
        """Align the pairs of ``chunks`` into ``columns``; each chunk's first pair and CIGARs."""
        def plan(chunk: Chunk) -> _ChunkPlan:
            return _ChunkPlan(pairs, params, chunk)

        def enqueue(plan: _ChunkPlan, index: int, slot: ChunkSlot) -> CopyOut:
            self.grow(slot, plan.blob_bytes, plan.pinned_out_bytes, plan.device_bytes)
            plan.fill(slot.pinned_in, pairs, params, int(slot.device.ptr))
            self._enqueue(slot, plan)
            return lambda slot: plan.collect(slot.pinned_out, columns, params.cigar)

        return self.run_chunks(chunks, plan, enqueue, cancelled)


_RUNNERS: Runners[_Runner] = Runners(lambda device_id: _Runner())


def _runner(device_id: int | None = None) -> _Runner:
    return _RUNNERS.on_device(device_id)  # one per device (default: the current one)


def run(pairs: Any, params: Any, results: Any, *, threads: int = 0, cancelled: CancelCheck | None = None,
        devices: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Fill ``results``' five int64 columns for every pair (a validated AlignPairs) with ``params``
    (a validated AlignParams), as :func:`warpdp.cython_cpu.align.run` does, and return the same:
    ``(ops, counts)`` with ``params.cigar``, else None. A pair whose traceback exceeds the
    per-chunk bound goes to the CPU backend (``threads`` CPU threads), logged. ``cancelled`` is
    checked before each chunk is enqueued (JobCancelled; see warpdp.plugin.cancel). ``devices``
    lists the GPUs to spread the chunks over (default: every GPU this process sees; see
    runtime.devices)."""
    device_ids = resolve_devices(devices)
    n = pairs.n_pairs
    if n == 0:
        return (np.zeros(0, np.uint32), np.zeros(0, np.int64)) if params.cigar else None
    q_lens, t_lens = np.diff(pairs.query_offsets), np.diff(pairs.target_offsets)
    gatk = params.mode == "gatk"
    trace_total = int(pair_traceback_bytes(q_lens, t_lens, params.traceback, gatk).sum())
    device_ids, (chunk_pairs, chunk_bytes, trace_bytes) = plan_spread(
        device_ids, (CHUNK_PAIRS, n), (CHUNK_BYTES, int(pairs.query_offsets[-1]) + int(pairs.target_offsets[-1])),
        (TRACE_CHUNK_BYTES, trace_total))
    # Smaller chunks for several devices, but the same pairs for the CPU as on one device.
    chunks = plan_chunks(q_lens, t_lens, params.traceback, gatk, chunk_pairs, chunk_bytes, trace_bytes,
                         TRACE_CHUNK_BYTES)
    gpu_chunks = [c for c in chunks if c.on_gpu]
    found = spread(device_ids, gpu_chunks, lambda device, share: _runner(device).run(
        pairs, params, results.columns, share, cancelled)) if gpu_chunks else []
    on_cpu = [(c.start, _cpu_pair(pairs, params, results, c.start, threads)) for c in chunks if not c.on_gpu]
    parts = in_order([*found, on_cpu])
    if not params.cigar:
        return None
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _cpu_pair(pairs: Any, params: Any, results: Any, k: int, threads: int) -> Any:
    """Pair k on the CPU backend (its traceback is over the GPU chunk bound)."""
    from ..cython_cpu import align as cpu_align
    from ..plugin.align import AlignResults

    logger.info("warpdp align: pair %d's traceback (%d x %d cells) is over the GPU chunk bound; aligned on the CPU",
                k, pairs.query_offsets[k + 1] - pairs.query_offsets[k], pairs.target_offsets[k + 1] - pairs.target_offsets[k])
    one = pairs.select(k, k + 1)
    out = AlignResults.empty(1)
    found = cpu_align.run(one, params, out, threads=max(threads, 1), isa=None)
    for name, column in out.columns.items():
        results.columns[name][k] = column[0]
    return found

