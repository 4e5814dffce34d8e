"""GPU backend of seed extension (BWA ksw_extend2 semantics): the CuPy launcher for ``seedext.cu``.

The plugin layer (:func:`warpdp.plugin.seedext.seed_extend`) validates the packed pairs and the
parameters and calls :func:`extend`. This module

* sends short queries (up to LANE_MAX_QUERY bases, scores within 14 bits) to the lane kernel,
  one thread per extension, binned by query length (its shared memory per warp follows the
  bin's longest query) and sorted by query length, then target length, so a warp's 32
  extensions take about as long as each other;
* bins the other pairs by the widest window a row can have (the query length, or 2w+1 when
  the band is narrower), one templated subwarp configuration per bin (subwarps of 4 to 16
  lanes, tiles of 36 to 208 columns, see ``seedext.cu``); inside a bin the subwarps take
  pairs dynamically (an atomic counter); windows wider than a tile take several tiles per row,
  and very long queries keep their row state in global scratch;
* launches a chunk's bins on concurrent streams, so small bins fill the GPU beside big ones;
* copies the raw sequences (ASCII; the kernels make the base codes) in chunks through pinned
  host buffers, three chunks in flight so that the host prepares and copies chunk c+1 while the
  GPU computes chunks c and c-1. The first chunk is small, so the GPU starts soon, and the next
  ones grow. Chunks are checked and planned (binned and sorted) ahead on worker threads, so that
  filling and enqueuing is all the calling thread does between chunks.

CuPy is imported only when a GPU function runs, so importing this module needs no GPU.
"""
from __future__ import annotations

import os
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..plugin.cancel import CancelCheck
from .host_copy import copy_arrays
from .runtime.devices import plan_spread, resolve_devices, spread
from .runtime.launch_params import POINTER, launch_struct, set_row, struct_rows
from .runtime.layout import sections
from .runtime.module_cache import ModuleSpec, load_module
from .runtime.occupancy import resident_blocks_per_sm
from .runtime.ordering import KEY_VALUES, stable_order_u16
from .runtime.runner import CopyOut, CupyChunkRunner, Runners, device_properties, new_stream
from .runtime.slots import ChunkSlot

__all__ = ["extend", "KERNEL_CONFIGS", "BINS", "GLOBAL_CONFIG", "LANE_KERNEL", "LANE_BOUNDS"]

THREADS_PER_BLOCK = 128
RangeCheck = Callable[[int, int], None]  # raises for what is wrong with pairs start..stop-1


@dataclass(frozen=True)
class KernelConfig:
    """One template instantiation of ``extend_kernel<G, C, SHARED>``."""

    lanes: int        # G: lanes of a subwarp (one extension per subwarp)
    cols: int         # C: columns per lane per tile (odd: no shared-memory bank conflicts)
    shared: bool      # row state in shared memory (else in global scratch)
    max_width: int    # widest row window of the bin (0: no limit)

    @property
    def name(self) -> str:
        return f"warpdp_seedext::extend_kernel<{self.lanes}, {self.cols}, {'true' if self.shared else 'false'}>"

    @property
    def subwarps_per_block(self) -> int:
        return THREADS_PER_BLOCK // self.lanes


# Bins by row window width, min(query length, 2w + 1) (each takes widths up to max_width); the
# last takes any wider one, with the row state in shared memory while it fits, else in global
# scratch (GLOBAL_CONFIG). A first choice, to tune on the device: a tile of the last bin covers
# BWA-MEM's default band (w = 100) in one pass. Kept in step with WARPDP_NVCC_CHECK in the .cu.
BINS: tuple[KernelConfig, ...] = (
    KernelConfig(4, 9, True, 32),
    KernelConfig(4, 17, True, 64),
    KernelConfig(8, 17, True, 128),
    KernelConfig(16, 13, True, 0),
)
GLOBAL_CONFIG = KernelConfig(16, 13, False, 0)
KERNEL_CONFIGS: tuple[KernelConfig, ...] = BINS + (GLOBAL_CONFIG,)
_BOUNDS = np.array([c.max_width for c in BINS[:-1]], dtype=np.int64)
MAX_SHARED_BYTES = 96 * 1024    # dynamic shared memory one block may use
NVRTC_OPTIONS = ("-std=c++17", f"-DWARPDP_SEEDEXT_THREADS={THREADS_PER_BLOCK}")

# The lane kernel (one thread per extension; blocks of one warp): queries up to LANE_MAX_QUERY
# bases whose scores, h0 + a * qlen, fit in LANE_SCORE_BITS bits, when the match score a is at
# most LANE_MAX_MATCH (as seedext.cu). Bins by query length: a warp's shared memory is
# 128 * (longest query + 1) bytes, so short queries get more warps per SM.
LANE_KERNEL = "warpdp_seedext::extend_lane_kernel"
LANE_MAX_QUERY = 256
LANE_SCORE_BITS = 14
LANE_MAX_MATCH = 15
LANE_BOUNDS: tuple[int, ...] = (64, 96, 128, 160, 192, 224, LANE_MAX_QUERY)
_N_BINS = len(LANE_BOUNDS) + len(BINS)
# Chunks in flight: three, so the host fills one while the GPU finishes another and starts the
# next (a chunk's bins end unevenly). Threads planning chunks ahead of the one being filled.
_SLOTS = 3
_PLAN_WORKERS = max(1, min(3, len(os.sched_getaffinity(0)) - 1))
_SUBWARP_KEYS = 0xC000          # sort keys of subwarp pairs start here, after every lane key
# Bin of a subwarp pair by row width 0.._BOUNDS[-1] (+1: anything wider), and the first sort key
# of every bin (lane keys are query length << 7 | ...; subwarp keys as below), then the end.
_SUBWARP_BIN_OF_WIDTH = (np.searchsorted(_BOUNDS, np.arange(_BOUNDS[-1] + 2)) + len(LANE_BOUNDS)).astype(np.uint8)
_BIN_KEY_EDGES = np.array([0] + [(bound + 1) << 7 for bound in LANE_BOUNDS]
                          + [_SUBWARP_KEYS | b << 11 for b in range(1, len(BINS) + 1)], dtype=np.int64)

# struct Params of seedext.cu (one launch: its extensions and the scoring).
PARAMS = launch_struct([
    ("query", POINTER), ("target", POINTER), ("query_offsets", POINTER), ("target_offsets", POINTER),
    ("h0", POINTER), ("order", POINTER), ("counter", POINTER), ("out", POINTER), ("scratch", POINTER),
    ("state_ints", np.int64), *((name, np.int32) for name in (
        "n", "qmax", "a", "b", "o_del", "e_del", "o_ins", "e_ins", "w", "end_bonus", "zdrop"))])
_N_COUNTERS = 32
_CHUNK_PAIRS = 1 << 18          # pairs per chunk (bounds pinned and device memory)
_CHUNK_BYTES = 96 << 20         # sequence bytes per chunk
_FIRST_CHUNK_DIVISOR = 8        # the first chunk is this much smaller: the GPU starts sooner
_CHUNK_GROWTH = 2               # and each next one this much larger, up to the limits


def state_ints(qmax: int) -> int:
    """Ints of row state per subwarp: eh_h and eh_e (qmax + 2 each) and the query's codes."""
    return 2 * (qmax + 2) + (qmax + 3) // 4 + 1


def lane_shared_bytes(qmax: int) -> int:
    """Shared memory of one lane-kernel block (a warp): a word per column 0..qmax per lane."""
    return 32 * 4 * (qmax + 1)


def split_chunks(query_offsets: np.ndarray, target_offsets: np.ndarray,
                 chunk_pairs: int = _CHUNK_PAIRS, chunk_bytes: int = _CHUNK_BYTES) -> list[tuple[int, int]]:
    """Consecutive pair ranges of at most chunk_pairs pairs and about chunk_bytes of sequence;
    the first is _FIRST_CHUNK_DIVISOR times smaller and the next grow by _CHUNK_GROWTH."""
    n = len(query_offsets) - 1

    def sequence_bytes(k: int) -> int:  # of pairs 0..k-1 (a binary search key: no n-sized sum)
        return int(query_offsets[k]) + int(target_offsets[k])

    chunks, start = [], 0
    scale = 1.0 / _FIRST_CHUNK_DIVISOR
    while start < n:
        pairs_now = max(1, int(chunk_pairs * scale))
        bytes_now = max(1, int(chunk_bytes * scale))
        last = min(n, start + pairs_now)
        limit = sequence_bytes(start) + bytes_now
        stop = bisect_right(range(last + 1), limit, lo=start + 1, key=sequence_bytes) - 1
        stop = max(start + 1, stop)
        chunks.append((start, stop))
        start = stop
        scale = min(1.0, scale * _CHUNK_GROWTH)
    return chunks


@dataclass
class _Launch:
    config: KernelConfig | None  # None: the lane kernel
    first: int        # into the chunk's order
    count: int
    qmax: int
    shared_bytes: int
    grid: int
    index: int        # params row and counter
    scratch: int = 0  # byte offset of the launch's global scratch (launches run concurrently)

    @property
    def threads(self) -> int:
        return 32 if self.config is None else THREADS_PER_BLOCK

    @property
    def state(self) -> int:
        return 0 if self.config is None else state_ints(self.qmax)


class _ChunkPlan:
    """One chunk's launches and memory layout (host side: numpy, and a counting sort in C)."""

    def __init__(self, pairs: Any, params: Any, start: int, stop: int, runner: _Runner) -> None:
        qo, to = pairs.query_offsets, pairs.target_offsets
        self.start, self.stop, self.n = start, stop, stop - start
        self.q0, self.q1 = int(qo[start]), int(qo[stop])
        self.t0, self.t1 = int(to[start]), int(to[stop])
        # Lengths fit int32: validation caps them at MAX_SEQUENCE_LENGTH. Every array here is
        # narrow and written in place: fresh large temporaries cost page faults.
        qlen = np.empty(self.n, np.int32)
        np.subtract(qo[start + 1:stop + 1], qo[start:stop], out=qlen, casting="unsafe")
        tlen = np.empty(self.n, np.int32)
        np.subtract(to[start + 1:stop + 1], to[start:stop], out=tlen, casting="unsafe")
        # Bins 0..len(LANE_BOUNDS)-1: the lane kernel by query length; then the subwarp bins by
        # row width. The order (a stable counting sort of a uint16 key) puts a warp's 32 lanes
        # on pairs of one query length and similar target lengths (8-row steps), and a subwarp
        # bin's pairs longest target first; each bin is one run of keys, so the key counts give
        # the bins' sizes. This runs on a worker thread while the GPU computes earlier chunks,
        # and must take less time than that: narrow types, few passes, the sort in C.
        q_clip = np.empty(self.n, np.uint16)
        np.minimum(qlen, LANE_MAX_QUERY + 1, out=q_clip, casting="unsafe")
        h0 = pairs.h0[start:stop]
        if params.a > LANE_MAX_MATCH:
            q_clip[:] = LANE_MAX_QUERY + 1
        elif int(h0.max()) + params.a * int(q_clip.max()) >= 1 << LANE_SCORE_BITS:
            q_clip[h0 + np.int64(params.a) * q_clip >= 1 << LANE_SCORE_BITS] = LANE_MAX_QUERY + 1
        key = np.empty(self.n, np.uint16)
        np.minimum(tlen, 127 << 3, out=key, casting="unsafe")
        key >>= 3
        rest = np.flatnonzero(q_clip > LANE_MAX_QUERY)
        q_clip <<= 7
        key |= q_clip
        if len(rest):
            width = np.minimum(np.minimum(qlen[rest], 2 * np.int64(params.w) + 1), _BOUNDS[-1] + 1)
            subwarp_bin = _SUBWARP_BIN_OF_WIDTH[width].astype(np.int64) - len(LANE_BOUNDS)
            key[rest] = _SUBWARP_KEYS | subwarp_bin << 11 | (2047 - np.minimum(tlen[rest] >> 1, 2047))
        self.order = np.empty(self.n, np.int32)
        key_counts = np.empty(KEY_VALUES, np.int64)
        stable_order_u16(key, self.order, key_counts)
        keys_below = np.concatenate(([0], np.cumsum(key_counts)))
        counts = np.diff(keys_below[_BIN_KEY_EDGES])
        self.launches: list[_Launch] = []
        first, scratch_ints = 0, 0
        for b in range(_N_BINS):
            count = int(counts[b])
            if count == 0:
                continue
            if b < len(LANE_BOUNDS):  # sorted by query length: the bin's last is its longest
                qmax = int(qlen[self.order[first + count - 1]])
                need = lane_shared_bytes(qmax)
                grid = -(-count // 32)
                self.launches.append(_Launch(None, first, count, qmax, need, grid, len(self.launches)))
                first += count
                continue
            qmax = int(qlen[self.order[first:first + count]].max())
            config = BINS[b - len(LANE_BOUNDS)]
            need = config.subwarps_per_block * state_ints(qmax) * 4
            if need > MAX_SHARED_BYTES:
                config, need = GLOBAL_CONFIG, 0
            resident = runner.resident_blocks(config, need)
            grid = max(1, min(-(-count // config.subwarps_per_block), resident))
            launch = _Launch(config, first, count, qmax, need, grid, len(self.launches), 4 * scratch_ints)
            if not config.shared:
                scratch_ints += grid * config.subwarps_per_block * state_ints(qmax)
            self.launches.append(launch)
            first += count
        # Longest queries first: their warps take longest, so they start before the short ones.
        self.launches.reverse()
        self.at, self.blob_bytes = sections(
            (("params", PARAMS.itemsize * max(1, len(self.launches))), ("counters", _N_COUNTERS * 4),
             ("query", self.q1 - self.q0), ("target", self.t1 - self.t0),
             ("qoff", 8 * (self.n + 1)), ("toff", 8 * (self.n + 1)), ("h0", 4 * self.n), ("order", 4 * self.n)),
            min_size=1)
        device_at, self.device_bytes = sections((("out", 24 * self.n), ("scratch", 4 * scratch_ints)),
                                                start=self.blob_bytes, min_size=1)
        self.at.update(device_at)

    def fill(self, blob: np.ndarray, pairs: Any, params: Any, base: int) -> None:
        """Write the upload part of the chunk into ``blob`` (pinned), pointing at ``base``."""
        at, s, e = self.at, self.start, self.stop
        blob[at["counters"]:at["counters"] + _N_COUNTERS * 4] = 0
        copy_arrays([(blob[at["query"]:at["query"] + self.q1 - self.q0], pairs.query[self.q0:self.q1]),
                     (blob[at["target"]:at["target"] + self.t1 - self.t0], pairs.target[self.t0:self.t1])])
        qoff = blob[at["qoff"]:at["qoff"] + 8 * (self.n + 1)].view(np.int64)
        np.subtract(pairs.query_offsets[s:e + 1], self.q0, out=qoff)
        toff = blob[at["toff"]:at["toff"] + 8 * (self.n + 1)].view(np.int64)
        np.subtract(pairs.target_offsets[s:e + 1], self.t0, out=toff)
        blob[at["h0"]:at["h0"] + 4 * self.n].view(np.int32)[:] = pairs.h0[s:e]
        blob[at["order"]:at["order"] + 4 * self.n].view(np.int32)[:] = self.order
        blob[at["params"]:at["params"] + PARAMS.itemsize * len(self.launches)] = 0  # the padding too
        rows = struct_rows(blob, at["params"], PARAMS, len(self.launches))
        for launch in self.launches:
            set_row(rows, launch.index, {
                "query": base + at["query"], "target": base + at["target"],
                "query_offsets": base + at["qoff"], "target_offsets": base + at["toff"], "h0": base + at["h0"],
                "order": base + at["order"] + 4 * launch.first, "counter": base + at["counters"] + 4 * launch.index,
                "out": base + at["out"], "scratch": base + at["scratch"] + launch.scratch,
                "state_ints": launch.state, "n": launch.count, "qmax": launch.qmax, "a": params.a, "b": params.b,
                "o_del": params.o_del, "e_del": params.e_del, "o_ins": params.o_ins, "e_ins": params.e_ins,
                "w": params.w, "end_bonus": params.end_bonus, "zdrop": params.zdrop})

    def params_address(self, base: int, launch: _Launch) -> int:
        return base + self.at["params"] + PARAMS.itemsize * launch.index


MODULE = ModuleSpec("seedext", NVRTC_OPTIONS, tuple(c.name for c in KERNEL_CONFIGS) + (LANE_KERNEL,),
                    (("Params", PARAMS),))


class _Runner(CupyChunkRunner):
    """Per-process GPU state: compiled kernels, streams and reusable buffers."""

    def __init__(self) -> None:
        import cupy

        super().__init__(cupy, _SLOTS, cupy.cuda.runtime.getDevice())
        device_id = self.device_id
        self.sm_count = int(device_properties(device_id)["multiProcessorCount"])
        self.module = load_module(MODULE, device_id)
        self.kernels = {c: self.module.get_function(c.name) for c in KERNEL_CONFIGS}
        for config in BINS:
            self.kernels[config].max_dynamic_shared_size_bytes = MAX_SHARED_BYTES
        self.lane_kernel = self.module.get_function(LANE_KERNEL)
        self.lane_kernel.max_dynamic_shared_size_bytes = lane_shared_bytes(LANE_MAX_QUERY)
        try:  # the lane kernel's occupancy is bounded by shared memory: ask for all of it
            self.lane_kernel.preferred_shared_memory_carveout = 100
        except (AttributeError, cupy.cuda.driver.CUDADriverError):
            pass
        self._resident: dict[tuple[KernelConfig, int], int] = {}
        # Per slot, a stream per bin: a chunk's bins run side by side.
        self.bin_streams = [[new_stream(cupy) for _ in range(_N_BINS)] for _ in range(_SLOTS)]
        # Plans are made ahead, on threads, so that the calling thread only fills and enqueues
        # (the sort in C and numpy's big steps let go of the GIL; see BENCHMARKS.md).
        self.planners = ThreadPoolExecutor(max_workers=_PLAN_WORKERS, thread_name_prefix="warpdp-seedext-plan")

    def resident_blocks(self, config: KernelConfig, shared_bytes: int) -> int:
        """Blocks of the configuration that fit on the whole device at once."""
        key = (config, shared_bytes)
        if key not in self._resident:
            per_sm = resident_blocks_per_sm(self.kernels[config], THREADS_PER_BLOCK, shared_bytes)
            self._resident[key] = per_sm * self.sm_count
        return self._resident[key]

    def _enqueue(self, slot: ChunkSlot, plan: _ChunkPlan, index: int) -> None:
        cupy = self.cupy
        runtime = cupy.cuda.runtime
        stream = slot.stream
        base = slot.upload(runtime, plan.blob_bytes)
        uploaded = cupy.cuda.Event(block=False, disable_timing=True)
        uploaded.record(stream)
        finished = []
        for launch, bin_stream in zip(plan.launches, self.bin_streams[index]):
            bin_stream.wait_event(uploaded)
            kernel = self.lane_kernel if launch.config is None else self.kernels[launch.config]
            kernel((launch.grid,), (launch.threads,), (np.uint64(plan.params_address(base, launch)),),
                   shared_mem=launch.shared_bytes, stream=bin_stream)
            event = cupy.cuda.Event(block=False, disable_timing=True)
            event.record(bin_stream)
            finished.append(event)
        for event in finished:
            stream.wait_event(event)
        runtime.memcpyAsync(slot.pinned_out.ctypes.data, base + plan.at["out"], 24 * plan.n, 2, stream.ptr)
        slot.done = cupy.cuda.Event(block=False, disable_timing=True)
        slot.done.record(stream)

    def _plan(self, pairs: Any, params: Any, start: int, stop: int, check_range: RangeCheck | None) -> _ChunkPlan:
        if check_range is not None:
            check_range(start, stop)
        with self.cupy.cuda.Device(self.device_id):  # occupancy queries need the device's context
            return _ChunkPlan(pairs, params, start, stop, self)

    def run(self, pairs: Any, params: Any, table: np.ndarray, chunks: Iterable[tuple[int, int]],
            check_range: RangeCheck | None = None, cancelled: CancelCheck | None = None) -> None:
        upcoming = iter(chunks)
        planned: deque[Future[_ChunkPlan]] = deque()

        def plan_ahead(depth: int) -> None:
            while len(planned) < depth:
                chunk = next(upcoming, None)
                if chunk is None:
                    return
                planned.append(self.planners.submit(self._plan, pairs, params, *chunk, check_range))

        def planned_chunks() -> Iterator[Future[_ChunkPlan]]:
            # Chunks are taken from ``chunks`` here only: other devices' threads may share it.
            plan_ahead(1)  # the first chunk's plan alone: nothing competes with it
            while planned:
                yield planned.popleft()

        def plan(future: Future[_ChunkPlan]) -> _ChunkPlan:
            chunk_plan = future.result()
            plan_ahead(_PLAN_WORKERS)
            return chunk_plan

        def enqueue(plan: _ChunkPlan, index: int, slot: ChunkSlot) -> CopyOut:
            self.grow(slot, plan.blob_bytes, 24 * plan.n, plan.device_bytes)
            plan.fill(slot.pinned_in, pairs, params, int(slot.device.ptr))
            self._enqueue(slot, plan, index)
            return partial(_copy_out, table, plan.start, plan.n)

        try:
            self.run_chunks(planned_chunks(), plan, enqueue, cancelled)
        finally:
            for future in planned:
                future.cancel()


def _copy_out(table: np.ndarray, start: int, n: int, slot: ChunkSlot) -> None:
    table[start:start + n] = slot.pinned_out[:24 * n].view(np.int32).reshape(n, 6)


_RUNNERS: Runners[_Runner] = Runners(lambda device_id: _Runner())


def _runner(device_id: int | None = None) -> _Runner:
    return _RUNNERS.on_device(device_id)  # one per device (default: the current one)


def extend(pairs: Any, params: Any, table: np.ndarray, check_range: RangeCheck | None = None,
           cancelled: CancelCheck | None = None, devices: Sequence[int] | None = None) -> None:
    """Fill ``table`` (n_pairs x 6 int32: score, qle, tle, gtle, gscore, max_off) for every pair.

    ``params`` is a validated :class:`warpdp.plugin.seedext.SeedExtParams` and ``pairs`` a
    :class:`warpdp.plugin.seedext.SeedExtPairs` whose layout is validated; its pairs are
    validated too, unless ``check_range`` is given: ``check_range(start, stop)`` raises for
    what is wrong with pairs start..stop-1, and runs for each chunk before anything of that
    chunk is launched (chunks already enqueued finish, then the error propagates). The answers
    are those of the CPU backend, exactly. ``cancelled`` is checked before each chunk is
    enqueued: JobCancelled once it returns True (see warpdp.plugin.cancel). ``devices`` lists
    the GPUs to spread the chunks over (default: every GPU this process sees; see
    runtime.devices).
    """
    if not isinstance(table, np.ndarray) or table.dtype != np.int32 or table.shape != (pairs.n_pairs, 6) \
            or not table.flags.c_contiguous:
        raise ValueError(f"table must be a C-contiguous ({pairs.n_pairs}, 6) int32 array")
    device_ids = resolve_devices(devices)
    if pairs.n_pairs == 0:
        return
    device_ids, (chunk_pairs, chunk_bytes) = plan_spread(
        device_ids, (_CHUNK_PAIRS, pairs.n_pairs),
        (_CHUNK_BYTES, int(pairs.query_offsets[-1]) + int(pairs.target_offsets[-1])))
    chunks = split_chunks(pairs.query_offsets, pairs.target_offsets, chunk_pairs, chunk_bytes)
    spread(device_ids, chunks,
           lambda device, share: _runner(device).run(pairs, params, table, share, check_range, cancelled))
