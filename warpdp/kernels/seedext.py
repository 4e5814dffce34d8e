"""GPU backend of seed extension (BWA ksw_extend2 semantics): the CuPy launcher for ``seedext.cu``.

The plugin layer (:func:`warpdp.plugin.seedext.seed_extend`) validates the packed pairs and the
parameters and calls :func:`extend`. This module

* bins the pairs by the widest window a row can have (the query length, or 2w+1 when the band
  is narrower), one templated kernel configuration per bin (subwarps of 4 to 16 lanes, tiles
  of 36 to 208 columns, see ``seedext.cu``), so that narrow and wide extensions each keep
  their subwarp's lanes busy; inside a bin the subwarps take pairs dynamically (an atomic
  counter); windows wider than a tile take several tiles per row,
* keeps each extension's row state in shared memory (global scratch for very long queries),
* copies the raw sequences (ASCII; the kernel makes the base codes) in chunks through pinned
  host buffers, two chunks in flight so that the host prepares and copies chunk c+1 while the
  GPU computes chunk c.

CuPy is imported only when a GPU function runs, so importing this module needs no GPU.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .chunk_slot import ChunkSlot, Held, SlotRing, cupy_pinned, round_up
from .host_copy import copy_arrays

__all__ = ["extend", "KERNEL_CONFIGS", "BINS", "GLOBAL_CONFIG"]

THREADS_PER_BLOCK = 128


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

PARAMS_BYTES = 128              # sizeof(struct Params), see seedext.cu
_N_COUNTERS = 16
_CHUNK_PAIRS = 1 << 20          # pairs per chunk (bounds pinned and device memory)
_CHUNK_BYTES = 256 << 20        # sequence bytes per chunk


def state_ints(qmax: int) -> int:
    """Ints of row state per subwarp: eh_h and eh_e (qmax + 2 each) and the query's codes."""
    return 2 * (qmax + 2) + (qmax + 3) // 4 + 1


def split_chunks(query_offsets: np.ndarray, target_offsets: np.ndarray,
                 chunk_pairs: int = _CHUNK_PAIRS, chunk_bytes: int = _CHUNK_BYTES) -> list[tuple[int, int]]:
    """Consecutive pair ranges of at most chunk_pairs pairs and about chunk_bytes of sequence."""
    n = len(query_offsets) - 1
    seq = query_offsets + target_offsets  # cumulative sequence bytes
    chunks, start = [], 0
    while start < n:
        stop = min(n, start + chunk_pairs)
        by_bytes = int(np.searchsorted(seq, seq[start] + chunk_bytes, side="right")) - 1
        stop = max(start + 1, min(stop, by_bytes))
        chunks.append((start, stop))
        start = stop
    return chunks


@dataclass
class _Launch:
    config: KernelConfig
    first: int        # into the chunk's order
    count: int
    qmax: int
    shared_bytes: int
    grid: int
    index: int        # params row and counter


class _ChunkPlan:
    """One chunk's launches and memory layout (host side, numpy only)."""

    def __init__(self, pairs: Any, start: int, stop: int, w: int, runner: _Runner) -> None:
        qo, to = pairs.query_offsets, pairs.target_offsets
        self.start, self.stop, self.n = start, stop, stop - start
        self.q0, self.q1 = int(qo[start]), int(qo[stop])
        self.t0, self.t1 = int(to[start]), int(to[stop])
        qlen = np.diff(qo[start:stop + 1])
        width = np.minimum(qlen, 2 * np.int64(w) + 1)
        bins = np.searchsorted(_BOUNDS, width, side="left").astype(np.uint8)
        self.order = np.argsort(bins, kind="stable").astype(np.int32)
        counts = np.bincount(bins, minlength=len(BINS))
        self.launches: list[_Launch] = []
        first, scratch_ints = 0, 0
        for b, config in enumerate(BINS):
            count = int(counts[b])
            if count == 0:
                continue
            qmax = int(qlen[self.order[first:first + count]].max())
            need = config.subwarps_per_block * state_ints(qmax) * 4
            if need > MAX_SHARED_BYTES:
                config, need = GLOBAL_CONFIG, 0
            resident = runner.resident_blocks(config, need)
            grid = max(1, min(-(-count // config.subwarps_per_block), resident))
            if not config.shared:
                scratch_ints = max(scratch_ints, grid * config.subwarps_per_block * state_ints(qmax))
            self.launches.append(_Launch(config, first, count, qmax, need, grid, len(self.launches)))
            first += count
        sections = {}
        off = 0
        for name, size in (("params", PARAMS_BYTES * max(1, len(self.launches))), ("counters", _N_COUNTERS * 4),
                           ("query", self.q1 - self.q0), ("target", self.t1 - self.t0),
                           ("qoff", 8 * (self.n + 1)), ("toff", 8 * (self.n + 1)), ("h0", 4 * self.n),
                           ("order", 4 * self.n)):
            sections[name] = off
            off = round_up(off + max(size, 1))
        self.blob_bytes = off
        for name, size in (("out", 24 * self.n), ("scratch", 4 * scratch_ints)):
            sections[name] = off
            off = round_up(off + max(size, 1))
        self.device_bytes = off
        self.at = sections

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
        for launch in self.launches:
            row = blob[at["params"] + PARAMS_BYTES * launch.index:at["params"] + PARAMS_BYTES * (launch.index + 1)]
            words, ints = row.view(np.int64), row.view(np.int32)
            words[0] = base + at["query"]
            words[1] = base + at["target"]
            words[2] = base + at["qoff"]
            words[3] = base + at["toff"]
            words[4] = base + at["h0"]
            words[5] = base + at["order"] + 4 * launch.first
            words[6] = base + at["counters"] + 4 * launch.index
            words[7] = base + at["out"]
            words[8] = base + at["scratch"]
            words[9] = state_ints(launch.qmax)
            ints[20:31] = (launch.count, launch.qmax, params.a, params.b, params.o_del, params.e_del,
                           params.o_ins, params.e_ins, params.w, params.end_bonus, params.zdrop)
            ints[31] = 0

    def params_address(self, base: int, launch: _Launch) -> int:
        return base + self.at["params"] + PARAMS_BYTES * launch.index


class _Runner:
    """Per-process GPU state: compiled kernels, streams and reusable buffers."""

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy
        device_id = cupy.cuda.runtime.getDevice()
        props = cupy.cuda.runtime.getDeviceProperties(device_id)
        self.sm_count = int(props["multiProcessorCount"])
        source = Path(__file__).with_name("seedext.cu").read_text()
        self.module = cupy.RawModule(code=source, options=NVRTC_OPTIONS,
                                     name_expressions=[c.name for c in KERNEL_CONFIGS])
        self.kernels = {c: self.module.get_function(c.name) for c in KERNEL_CONFIGS}
        for config in BINS:
            self.kernels[config].max_dynamic_shared_size_bytes = MAX_SHARED_BYTES
        self._resident: dict[tuple[KernelConfig, int], int] = {}
        self.ring = SlotRing()
        for slot in self.ring.slots:
            slot.stream = cupy.cuda.Stream(non_blocking=True)
        self.lock = threading.Lock()

    def resident_blocks(self, config: KernelConfig, shared_bytes: int) -> int:
        """Blocks of the configuration that fit on the whole device at once."""
        key = (config, shared_bytes)
        if key not in self._resident:
            kernel = self.kernels[config]
            try:
                from cupy.cuda import driver

                per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, THREADS_PER_BLOCK,
                                                                          shared_bytes)
            except Exception:  # older CuPy: a conservative estimate from registers
                regs = round_up(max(kernel.num_regs, 1), 8) * THREADS_PER_BLOCK
                per_sm = max(1, 65536 // regs)
            self._resident[key] = max(1, int(per_sm)) * self.sm_count
        return self._resident[key]

    def _ensure(self, slot: ChunkSlot, plan: _ChunkPlan) -> None:
        slot.ensure(plan.blob_bytes, 24 * plan.n, plan.device_bytes, lambda n: cupy_pinned(self.cupy, n),
                    self.cupy.cuda.alloc)

    def _enqueue(self, slot: ChunkSlot, plan: _ChunkPlan) -> None:
        runtime = self.cupy.cuda.runtime
        base = int(slot.device.ptr)
        stream = slot.stream
        runtime.memcpyAsync(base, slot.pinned_in.ctypes.data, plan.blob_bytes, 1, stream.ptr)
        for launch in plan.launches:
            self.kernels[launch.config]((launch.grid,), (THREADS_PER_BLOCK,),
                                        (np.uint64(plan.params_address(base, launch)),),
                                        shared_mem=launch.shared_bytes, stream=stream)
        runtime.memcpyAsync(slot.pinned_out.ctypes.data, base + plan.at["out"], 24 * plan.n, 2, stream.ptr)
        slot.done = self.cupy.cuda.Event(block=False, disable_timing=True)
        slot.done.record(stream)

    def run(self, pairs: Any, params: Any, table: np.ndarray) -> None:
        chunks = split_chunks(pairs.query_offsets, pairs.target_offsets, _CHUNK_PAIRS, _CHUNK_BYTES)
        mine: list[tuple[int, Held]] = []
        try:
            with self.lock:  # one call at a time enqueues; its chunks finish after it lets go
                for start, stop in chunks:
                    plan = _ChunkPlan(pairs, start, stop, int(params.w), self)
                    index, slot = self.ring.take()
                    self._ensure(slot, plan)
                    plan.fill(slot.pinned_in, pairs, params, int(slot.device.ptr))
                    self._enqueue(slot, plan)
                    mine.append((index, self.ring.hold(index, partial(_copy_out, table, start, plan.n))))
        finally:
            self.ring.collect(mine)  # also after an error: nothing enqueued is left running


def _copy_out(table: np.ndarray, start: int, n: int, slot: ChunkSlot) -> None:
    table[start:start + n] = slot.pinned_out[:24 * n].view(np.int32).reshape(n, 6)


_RUNNER: _Runner | None = None
_RUNNER_LOCK = threading.Lock()


def _runner() -> _Runner:
    global _RUNNER
    with _RUNNER_LOCK:
        if _RUNNER is None:
            _RUNNER = _Runner()
        return _RUNNER


def extend(pairs: Any, params: Any, table: np.ndarray) -> None:
    """Fill ``table`` (n_pairs x 6 int32: score, qle, tle, gtle, gscore, max_off) for every pair.

    ``pairs`` is a validated :class:`warpdp.plugin.seedext.SeedExtPairs` and ``params`` a
    validated :class:`warpdp.plugin.seedext.SeedExtParams` (the answers are those of the CPU
    backend, exactly).
    """
    if not isinstance(table, np.ndarray) or table.dtype != np.int32 or table.shape != (pairs.n_pairs, 6) \
            or not table.flags.c_contiguous:
        raise ValueError(f"table must be a C-contiguous ({pairs.n_pairs}, 6) int32 array")
    if pairs.n_pairs == 0:
        return
    _runner().run(pairs, params, table)
