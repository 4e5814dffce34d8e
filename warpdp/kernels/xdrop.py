"""GPU backend of gapped X-drop seed extension: the CuPy launcher for ``xdrop.cu``.

The plugin layer (:func:`warpdp.plugin.xdrop.xdrop`) validates the packed pairs and the scores
and calls :func:`extend`. This module

* turns every pair into two work items, its left and its right extension (independent, as in
  LOGAN, but in the same launches so that neither waits for the other),
* picks int32 cells for the items whose values provably fit (the CPU backend's rule) and int64
  cells for the others, and bins the items by the length of their V flank, which sizes each
  warp's scratch (three anti-diagonals indexed by column); inside a launch the items go longest
  first and warps take them from an atomic counter,
* sends the items whose values fit int16 and whose window is expected to span many columns
  (large X, see :func:`shared_items`) to ``extend_shared_kernel``: a warp per item with its
  anti-diagonals in shared memory, two cells per operation, binned by V flank
  (``SHARED_FLANK_BINS``, which size each warp's shared memory),
* sends the other int32 items whose window is expected to be wide (see :func:`wide_frames`)
  to ``extend_wide_kernel``, one block per item with the cells in registers, binned by the
  frame their V flank fits (``WIDE_CONFIGS``),
* uploads the pair arrays as they are (no reversed or re-encoded copies: the kernel walks the
  flanks in place) in chunks through pinned host buffers, two chunks in flight so that the
  host prepares and copies chunk c+1 while the GPU computes chunk c, and checks the bases on
  the GPU while it is at it,
* spreads chunks over several GPUs when given a device list.

CuPy is imported only when a GPU function runs, so importing this module needs no GPU.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
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
from .runtime.runner import CopyOut, CupyChunkRunner, Runners, device_properties
from .runtime.slots import ALIGN, ChunkSlot, round_up

__all__ = ["extend", "KERNEL_NAMES", "SHARED_FLANK_BINS", "SHARED_MIN_WINDOW", "WIDE_CONFIGS", "WIDE_MIN_WINDOW",
           "all_kernel_names", "fits_int16", "fits_int32", "shared_items", "wide_configs", "wide_frames"]

THREADS_PER_BLOCK = 256        # as __launch_bounds__ in xdrop.cu
WARPS_PER_BLOCK = THREADS_PER_BLOCK // 32
KERNEL_NAMES = {4: "warpdp_xdrop::extend_kernel<int>", 8: "warpdp_xdrop::extend_kernel<long long>"}
NVRTC_OPTIONS = ("-std=c++17",)
# struct Params of xdrop.cu (one launch: its work items and the scores).
PARAMS = launch_struct([
    ("h_bases", POINTER), ("v_bases", POINTER), ("h_offsets", POINTER), ("v_offsets", POINTER),
    ("h_pos", POINTER), ("v_pos", POINTER), ("order", POINTER), ("counter", POINTER), ("out", POINTER),
    ("scratch", POINTER), ("stride", np.int64), ("k", np.int64), ("match", np.int64), ("mismatch", np.int64),
    ("gap", np.int64), ("x", np.int64), ("n_items", np.int32), ("best_mode", np.int32)])
_PARAMS_STRIDE = 256           # a launch's Params row in the upload (rows stay ALIGN-aligned)
_INT32_LIMIT = 1 << 29         # xdrop_fits in warpdp/cython_cpu/xdrop_kernel.h
# Work items are binned by their V flank: the scratch of a warp holds 3 x (flank + 34) cells.
FLANK_BINS = np.array([1 << 11, 1 << 13, 1 << 15, 1 << 17, 1 << 19], dtype=np.int64)
_SCRATCH_BYTES = 2 << 30       # device scratch per chunk slot (bounds warps for very long flanks)
_CHUNK_PAIRS = 1 << 19
_CHUNK_BYTES = 512 << 20       # sequence bytes per chunk

# The wide-window kernel, extend_wide_kernel<W, T, B>: one block of W warps per item, each lane
# holding T consecutive columns of a frame of 32 * W * T columns, which must hold the item's
# columns 0..m+1 (m: its V flank); B is the blocks per SM asked of the compiler
# (__launch_bounds__), which caps the registers. Rows (frame, W, T, B), frames ascending; an
# item takes the smallest frame it fits, items too long for the last one stay on extend_kernel.
# T = 16 takes 128 registers (no spills): B * 32 * W * 128 = 65536, 16 warps per SM, for each
# row here. T = 8 takes 97 registers, or 80 with B = 3 at W = 8 (a 12-byte spill).
# Each row has its instantiation in xdrop.cu's WARPDP_NVCC_CHECK list
# (tests/test_xdrop_wide_emulation.py checks).
WIDE_CONFIGS = ((1024, 2, 16, 8), (2048, 4, 16, 4), (4096, 8, 16, 2))
# Items go wide when their window is expected to span at least this many columns. The wide
# kernel's time hardly depends on X (its cost is per anti-diagonal), the narrow one's grows with
# the window: the two cross between X = 1000 and 5000 (BENCHMARKS.md, X-drop).
WIDE_MIN_WINDOW = 1500
# Overrides for experiments and tests (read at each call):
#   WARPDP_XDROP_WIDE=auto|1|0       the rule of wide_frames (default) | every item that can | none
#   WARPDP_XDROP_WIDE_MIN_WINDOW=N   instead of WIDE_MIN_WINDOW
#   WARPDP_XDROP_WIDE_CONFIGS=W:T:B,...   instead of WIDE_CONFIGS (NVRTC instantiates any W, T, B)
WIDE_ENV = "WARPDP_XDROP_WIDE"
WIDE_MIN_WINDOW_ENV = "WARPDP_XDROP_WIDE_MIN_WINDOW"
WIDE_CONFIGS_ENV = "WARPDP_XDROP_WIDE_CONFIGS"
_WIDE_MAX_H = 1 << 30          # the wide kernel counts anti-diagonals in int32

# The shared-memory kernel, extend_shared_kernel: one warp (and block) per item, its three
# anti-diagonals of int16 cells in 3 * (stride + 8) cells of shared memory, stride >= m + 16.
# Items are binned by V flank m (upper bounds below), so that a launch asks for no more shared
# memory per warp than its longest item needs; longer flanks go to the other kernels.
SHARED_FLANK_BINS = np.array([256, 512, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 6144, 8192, 12288],
                             dtype=np.int64)
SHARED_KERNEL_NAME = "warpdp_xdrop::extend_shared_kernel"  # extern "C"
CHECK_KERNEL_NAME = "warpdp_xdrop::check_bases"  # extern "C"; flags a base other than ACGTN
_SHARED_PAD = 8                # SHARED_PAD in xdrop.cu
_INT16_LIMIT = 16000           # every value the shared kernel handles lies in [-16000, 16000]
# Items go to the shared kernel when their window is expected to span at least this many columns.
SHARED_MIN_WINDOW = 128
#   WARPDP_XDROP_SHARED=auto|1|0       the rule of shared_items (default) | every item that can | none
#   WARPDP_XDROP_SHARED_MIN_WINDOW=N   instead of SHARED_MIN_WINDOW
SHARED_ENV = "WARPDP_XDROP_SHARED"
SHARED_MIN_WINDOW_ENV = "WARPDP_XDROP_SHARED_MIN_WINDOW"


def fits_int32(m: np.ndarray, n: np.ndarray, match: int, mismatch: int, gap: int, x: int) -> np.ndarray:
    """Per work item: whether int32 cells hold every value (xdrop_fits with 2^29, vectorized)."""
    shorter = np.minimum(m, n)
    if not (x < _INT32_LIMIT and -mismatch < _INT32_LIMIT and -gap < _INT32_LIMIT and match < _INT32_LIMIT):
        return np.zeros(len(m), dtype=bool)
    return (shorter < _INT32_LIMIT) & (shorter * match < _INT32_LIMIT)


def fits_int16(m: np.ndarray, n: np.ndarray, match: int, mismatch: int, gap: int, x: int) -> np.ndarray:
    """Per work item: whether extend_shared_kernel's int16 cells hold every value with room to
    spare. Values lie in [-x, match * (min(m, n) + 1)]; an undefined cell is -16384, and
    sums and differences with the scores and the threshold must stay inside int16 (xdrop.cu)."""
    penalty = max(-mismatch, -gap)
    if not (x + match + penalty <= _INT16_LIMIT):
        return np.zeros(len(m), dtype=bool)
    return match * (np.minimum(m, n) + 1) + x + match + penalty <= _INT16_LIMIT


def shared_items(m: np.ndarray, n: np.ndarray, scores: Scores) -> np.ndarray:
    """Per work item (V flank m, H flank n): the bin of SHARED_FLANK_BINS to run it in on the
    shared-memory kernel, -1 for the other kernels.

    An item can go there when its values fit int16 (:func:`fits_int16`), its V flank fits the
    last bin and n < 2^30. With WARPDP_XDROP_SHARED=auto (the default) it does when its window is
    expected to span at least SHARED_MIN_WINDOW columns: min(expected_window, m + 1, n + 1). For
    narrower windows extend_kernel's scratch stays in L1 and its lanes take single columns.
    """
    chosen = np.searchsorted(SHARED_FLANK_BINS, m, side="left")
    can = (chosen < len(SHARED_FLANK_BINS)) & (n < _WIDE_MAX_H) & fits_int16(m, n, scores.match, scores.mismatch,
                                                                                scores.gap, scores.x)
    return np.where(_routed(can, m, n, scores, SHARED_ENV, SHARED_MIN_WINDOW_ENV, SHARED_MIN_WINDOW), chosen, -1)


def shared_bytes(stride: int) -> int:
    """Dynamic shared memory of one extend_shared_kernel block (one warp) for a stride."""
    return 3 * (stride + _SHARED_PAD) * 2


def wide_kernel_name(w: int, t: int, blocks: int) -> str:
    return f"warpdp_xdrop::extend_wide_kernel<{w}, {t}, {blocks}>"


def wide_configs() -> tuple[tuple[int, int, int, int], ...]:
    """The wide kernel's configurations (frame, W, T, B): WIDE_CONFIGS, or WARPDP_XDROP_WIDE_CONFIGS."""
    text = os.environ.get(WIDE_CONFIGS_ENV, "").strip()
    if not text:
        return WIDE_CONFIGS
    rows = []
    for part in text.split(","):
        try:
            w, t, b = (int(v) for v in part.split(":"))
        except ValueError:
            raise ValueError(f"{WIDE_CONFIGS_ENV}: expected W:T:B,... not {text!r}") from None
        if not (1 <= w <= 32 and t >= 4 and t % 4 == 0 and b >= 1):
            raise ValueError(f"{WIDE_CONFIGS_ENV}: {part!r} needs 1 <= W <= 32, T a multiple of 4, B >= 1")
        rows.append((32 * w * t, w, t, b))
    rows.sort()
    if len({r[0] for r in rows}) != len(rows):
        raise ValueError(f"{WIDE_CONFIGS_ENV}: two configurations with the same frame in {text!r}")
    return tuple(rows)


def all_kernel_names(configs: Sequence[tuple[int, int, int, int]] = WIDE_CONFIGS) -> list[str]:
    """Every kernel the launcher compiles (NVRTC name expressions)."""
    return list(KERNEL_NAMES.values()) + [wide_kernel_name(w, t, b) for _, w, t, b in configs]


def expected_window(match: int, gap: int, x: int) -> int:
    """Columns the live window is expected to span while two long, similar flanks align.

    A cell j columns along its anti-diagonal from the best path aligns 2j more bases of one flank
    than of the other: at least 2j gaps and j fewer matches, so it scores about
    j * (match + 2 |gap|) below the path and is dropped once that exceeds X. Mismatches only
    lower the path's own cells, so they are left out. A guide for choosing a kernel, not a bound
    (dissimilar flanks drop sooner). Match 1 / gap -1: 2X/3 columns.
    """
    return 2 * int(x) // (int(match) - 2 * int(gap)) + 1


def wide_frames(m: np.ndarray, n: np.ndarray, scores: Scores,
                configs: Sequence[tuple[int, int, int, int]] | None = None) -> np.ndarray:
    """Per work item (V flank m, H flank n): the row of ``configs`` (default :func:`wide_configs`)
    to run it with on the wide kernel, -1 for extend_kernel.

    An item can go wide when its cells fit int32 (:func:`fits_int32`), its V flank fits the
    largest frame (m + 2 <= frame) and n < 2^30. With WARPDP_XDROP_WIDE=auto (the default) it
    does when its window is expected to be wide:
    min(expected_window, m + 1, n + 1) >= WIDE_MIN_WINDOW (a window never spans more than m + 1
    columns, nor more than n + 1 cells). Narrow windows are cheaper on extend_kernel, whose
    warps work on the window only; the wide kernel's block steps its whole frame.
    """
    configs = wide_configs() if configs is None else configs
    frames = np.array([c[0] for c in configs], dtype=np.int64)
    chosen = np.searchsorted(frames, m + 2, side="left")
    can = (chosen < len(frames)) & (n < _WIDE_MAX_H) & fits_int32(m, n, scores.match, scores.mismatch,
                                                                       scores.gap, scores.x)
    return np.where(_routed(can, m, n, scores, WIDE_ENV, WIDE_MIN_WINDOW_ENV, WIDE_MIN_WINDOW), chosen, -1)


def _routed(can: np.ndarray, m: np.ndarray, n: np.ndarray, scores: Scores, mode_env: str, min_window_env: str,
            min_window_default: int) -> np.ndarray:
    """Of the items that can run on a kernel, those it takes under its environment variables
    (ValueError when they are bad): mode "0" none, "1" all, "auto" those whose window is
    expected to span at least the minimum window (min(expected_window, m + 1, n + 1) columns)."""
    mode = os.environ.get(mode_env, "auto").strip().lower()
    if mode not in ("auto", "0", "1"):
        raise ValueError(f"{mode_env} must be auto, 0 or 1, not {mode!r}")
    min_window = int(os.environ.get(min_window_env, "").strip() or min_window_default)
    if mode == "0":
        return np.zeros_like(can)
    if mode == "auto":
        window = expected_window(scores.match, scores.gap, scores.x)  # < 2^63: x <= 2^62
        return can & (np.minimum(np.minimum(m, n) + 1, window) >= min_window)
    return can


def split_chunks(h_offsets: np.ndarray, v_offsets: np.ndarray, chunk_pairs: int = _CHUNK_PAIRS,
                 chunk_bytes: int = _CHUNK_BYTES) -> list[tuple[int, int]]:
    """Consecutive pair ranges of at most chunk_pairs pairs and about chunk_bytes of sequence."""
    n = len(h_offsets) - 1
    seq = h_offsets + v_offsets
    chunks, start = [], 0
    while start < n:
        stop = min(n, start + chunk_pairs)
        by_bytes = int(np.searchsorted(seq, seq[start] + chunk_bytes, side="right")) - 1
        stop = max(start + 1, min(stop, by_bytes))
        chunks.append((start, stop))
        start = stop
    return chunks


@dataclass(frozen=True)
class Scores:
    k: int
    match: int
    mismatch: int
    gap: int
    x: int
    best: bool


@dataclass
class _Launch:
    kernel: Any       # 4 / 8: extend_kernel with int32 / int64 cells; ("wide", row of WIDE_CONFIGS);
                      # "shared": extend_shared_kernel
    first: int        # into the chunk's order
    count: int
    stride: int       # cells per anti-diagonal buffer (wide: the frame)
    grid: int
    threads: int      # per block
    index: int        # params row and counter
    shared_bytes: int = 0  # dynamic shared memory per block


class _ChunkPlan:
    """One chunk's launches and memory layout (host side, numpy only)."""

    def __init__(self, pairs: Any, start: int, stop: int, scores: Scores, resident_warps: int,
                 wide: Sequence[tuple[tuple[int, int, int, int], int]] = (),
                 shared_resident: Callable[[int], int] | None = None) -> None:
        ho, vo = pairs.h_offsets, pairs.v_offsets
        self.start, self.stop, self.n = start, stop, stop - start
        self.h0, self.h1 = int(ho[start]), int(ho[stop])
        self.v0, self.v1 = int(vo[start]), int(vo[stop])
        k = scores.k
        len_h, len_v = np.diff(ho[start:stop + 1]), np.diff(vo[start:stop + 1])
        h_pos, v_pos = pairs.h_pos[start:stop], pairs.v_pos[start:stop]
        # Item 2i is pair i's left extension, 2i+1 its right one; m = V flank, n = H flank.
        m = np.empty(2 * self.n, dtype=np.int64)
        n = np.empty(2 * self.n, dtype=np.int64)
        m[0::2], n[0::2] = v_pos, h_pos
        m[1::2], n[1::2] = len_v - v_pos - k, len_h - h_pos - k
        int64 = ~fits_int32(m, n, scores.match, scores.mismatch, scores.gap, scores.x)
        narrow_bins = len(FLANK_BINS) + 1
        bins = np.searchsorted(FLANK_BINS, m, side="left") + narrow_bins * int64
        # wide: the runner's (configuration, resident blocks) per row.
        frame = wide_frames(m, n, scores, [config for config, _ in wide]) if wide else np.full(len(m), -1)
        bins = np.where(frame >= 0, 2 * narrow_bins + frame, bins)
        # shared: the bin of SHARED_FLANK_BINS, before every other kernel.
        shared_first = 2 * narrow_bins + len(wide)
        shared = shared_items(m, n, scores) if shared_resident is not None else np.full(len(m), -1)
        bins = np.where(shared >= 0, shared_first + shared, bins)
        # Within a bin, the longest extensions first, so that the launch does not end on one.
        self.order = np.lexsort((-(m + n), bins)).astype(np.int32)
        counts = np.bincount(bins, minlength=shared_first + len(SHARED_FLANK_BINS))
        self.launches: list[_Launch] = []
        first, scratch = 0, 0
        for b, count in enumerate(counts):
            count = int(count)
            if count == 0:
                continue
            if b >= shared_first:  # a warp per item, its cells in shared memory
                items = self.order[first:first + count]
                stride = round_up(int(m[items].max()) + 16, 8)
                size = shared_bytes(stride)
                grid = max(1, min(count, shared_resident(size)))
                self.launches.append(_Launch("shared", first, count, stride, grid, 32, len(self.launches), size))
                first += count
                continue
            if b >= 2 * narrow_bins:  # one block per item, three frames of int32 scratch per block
                row = b - 2 * narrow_bins
                (stride, w, _, _), resident = wide[row]
                grid = max(1, min(count, resident))
                scratch = max(scratch, grid * 3 * stride * 4)
                self.launches.append(_Launch(("wide", row), first, count, stride, grid, 32 * w,
                                             len(self.launches)))
                first += count
                continue
            cell_bytes = 8 if b >= narrow_bins else 4
            items = self.order[first:first + count]
            stride = round_up(int(m[items].max()) + 34, 32)
            per_warp = 3 * stride * cell_bytes
            warps = max(1, min(count, resident_warps, _SCRATCH_BYTES // per_warp))
            grid = -(-warps // WARPS_PER_BLOCK)
            scratch = max(scratch, grid * WARPS_PER_BLOCK * per_warp)
            self.launches.append(_Launch(cell_bytes, first, count, stride, grid, THREADS_PER_BLOCK,
                                         len(self.launches)))
            first += count
        self.at, self.blob_bytes = sections(
            (("params", _PARAMS_STRIDE * max(1, len(self.launches))), ("counters", 4 * max(1, len(self.launches))),
             ("h_bases", self.h1 - self.h0), ("v_bases", self.v1 - self.v0),
             ("h_offsets", 8 * (self.n + 1)), ("v_offsets", 8 * (self.n + 1)),
             ("h_pos", 8 * self.n), ("v_pos", 8 * self.n), ("order", 4 * 2 * self.n)), min_size=1)
        # Device only: the bad-base flag and the results come back; the scratch stays.
        self.out_bytes = ALIGN + 32 * 2 * self.n
        device_at, scratch_at = sections((("out", self.out_bytes),), start=self.blob_bytes, min_size=1)
        self.at.update(device_at, scratch=scratch_at)
        self.device_bytes = scratch_at + max(scratch, 1)

    def fill(self, blob: np.ndarray, pairs: Any, scores: Scores, base: int) -> None:
        """Write the upload part of the chunk into ``blob`` (pinned), pointing at ``base``."""
        at, s, e = self.at, self.start, self.stop
        blob[at["counters"]:at["counters"] + 4 * max(1, len(self.launches))] = 0
        copy_arrays([(blob[at["h_bases"]:at["h_bases"] + self.h1 - self.h0], pairs.h_bases[self.h0:self.h1]),
                     (blob[at["v_bases"]:at["v_bases"] + self.v1 - self.v0], pairs.v_bases[self.v0:self.v1])])
        np.subtract(pairs.h_offsets[s:e + 1], self.h0, out=blob[at["h_offsets"]:at["h_offsets"] + 8 * (self.n + 1)]
                    .view(np.int64))
        np.subtract(pairs.v_offsets[s:e + 1], self.v0, out=blob[at["v_offsets"]:at["v_offsets"] + 8 * (self.n + 1)]
                    .view(np.int64))
        blob[at["h_pos"]:at["h_pos"] + 8 * self.n].view(np.int64)[:] = pairs.h_pos[s:e]
        blob[at["v_pos"]:at["v_pos"] + 8 * self.n].view(np.int64)[:] = pairs.v_pos[s:e]
        blob[at["order"]:at["order"] + 8 * self.n].view(np.int32)[:] = self.order
        rows = struct_rows(blob, at["params"], PARAMS, len(self.launches), _PARAMS_STRIDE)
        for launch in self.launches:
            set_row(rows, launch.index, {
                "h_bases": base + at["h_bases"], "v_bases": base + at["v_bases"],
                "h_offsets": base + at["h_offsets"], "v_offsets": base + at["v_offsets"],
                "h_pos": base + at["h_pos"], "v_pos": base + at["v_pos"],
                "order": base + at["order"] + 4 * launch.first, "counter": base + at["counters"] + 4 * launch.index,
                "out": base + at["out"] + ALIGN,  # after the bad-base flag
                "scratch": base + at["scratch"], "stride": launch.stride, "k": scores.k, "match": scores.match,
                "mismatch": scores.mismatch, "gap": scores.gap, "x": scores.x, "n_items": launch.count,
                "best_mode": int(scores.best)})

    def params_address(self, base: int, launch: _Launch) -> int:
        return base + self.at["params"] + _PARAMS_STRIDE * launch.index

    def store(self, out_bytes: np.ndarray, pairs: Any, scores: Scores, results: Any) -> bool:
        """Combine the two extensions of each pair into ``results``; False when a base was bad."""
        if out_bytes[:4].view(np.int32)[0] != 0:
            return False
        table = out_bytes[ALIGN:ALIGN + 32 * 2 * self.n].view(np.int64).reshape(self.n, 2, 4)
        left, right = table[:, 0], table[:, 1]
        s, e, k = self.start, self.stop, scores.k
        h_pos, v_pos = pairs.h_pos[s:e], pairs.v_pos[s:e]
        results.score[s:e] = left[:, 0] + right[:, 0] + k * scores.match
        results.begin_h[s:e] = h_pos - left[:, 2]
        results.end_h[s:e] = h_pos + k + right[:, 2]
        results.begin_v[s:e] = v_pos - left[:, 1]
        results.end_v[s:e] = v_pos + k + right[:, 1]
        results.cells[s:e] = left[:, 3] + right[:, 3]
        return True


def module_spec(configs: Sequence[tuple[int, int, int, int]]) -> ModuleSpec:
    return ModuleSpec("xdrop", NVRTC_OPTIONS, (*all_kernel_names(configs), CHECK_KERNEL_NAME, SHARED_KERNEL_NAME),
                      (("Params", PARAMS),))


class _Runner(CupyChunkRunner):
    """Per-device GPU state: compiled kernels, streams and reusable buffers."""

    def __init__(self, device_id: int, configs: Sequence[tuple[int, int, int, int]]) -> None:
        import cupy

        with cupy.cuda.Device(device_id):
            super().__init__(cupy, 2, device_id)
            self.sm_count = int(device_properties(device_id)["multiProcessorCount"])
            self.module = load_module(module_spec(configs), device_id)
            self.kernels: dict[Any, Any] = {size: self.module.get_function(name) for size, name in KERNEL_NAMES.items()}
            for row, (_, w, t, blocks) in enumerate(configs):
                self.kernels["wide", row] = self.module.get_function(wide_kernel_name(w, t, blocks))
            self.check = self.module.get_function(CHECK_KERNEL_NAME)
            self.kernels["shared"] = self.module.get_function(SHARED_KERNEL_NAME)
            self.kernels["shared"].max_dynamic_shared_size_bytes = shared_bytes(int(SHARED_FLANK_BINS[-1]) + 16)
            self._shared_resident: dict[int, int] = {}
            self.resident_warps = self._resident_blocks(self.kernels[4], THREADS_PER_BLOCK) * WARPS_PER_BLOCK
            # (configuration, blocks of it resident on the device) per row, for the plans
            self.wide = [(config, self._resident_blocks(self.kernels["wide", row], 32 * config[1]))
                         for row, config in enumerate(configs)]

    def shared_resident(self, shared_bytes: int) -> int:
        """Blocks of extend_shared_kernel with that much shared memory that fit on the device."""
        if shared_bytes not in self._shared_resident:
            self._shared_resident[shared_bytes] = self._resident_blocks(self.kernels["shared"], 32, shared_bytes)
        return self._shared_resident[shared_bytes]

    def _resident_blocks(self, kernel: Any, threads: int, shared_bytes: int = 0) -> int:
        """Blocks of ``kernel`` that fit on the whole device at once."""
        return resident_blocks_per_sm(kernel, threads, shared_bytes) * self.sm_count

    def _enqueue(self, slot: ChunkSlot, plan: _ChunkPlan) -> None:
        cupy = self.cupy
        runtime = cupy.cuda.runtime
        stream = slot.stream
        base = slot.upload(runtime, plan.blob_bytes)
        runtime.memsetAsync(base + plan.at["out"], 0, 4, stream.ptr)
        flag = np.uint64(base + plan.at["out"])
        for name in ("h_bases", "v_bases"):
            size = (plan.h1 - plan.h0) if name == "h_bases" else (plan.v1 - plan.v0)
            if size:
                grid = min(4 * self.sm_count, -(-size // THREADS_PER_BLOCK))
                self.check((grid,), (THREADS_PER_BLOCK,), (np.uint64(base + plan.at[name]), np.int64(size), flag),
                           stream=stream)
        for launch in plan.launches:
            self.kernels[launch.kernel]((launch.grid,), (launch.threads,),
                                        (np.uint64(plan.params_address(base, launch)),), stream=stream,
                                        shared_mem=launch.shared_bytes)
        runtime.memcpyAsync(slot.pinned_out.ctypes.data, base + plan.at["out"], plan.out_bytes, 2, stream.ptr)
        slot.done = cupy.cuda.Event(block=False, disable_timing=True)
        slot.done.record(stream)

    def run(self, pairs: Any, chunks: Iterable[tuple[int, int]], scores: Scores, results: Any,
            cancelled: CancelCheck | None = None) -> bool:
        """Extend the pairs of ``chunks`` into ``results``; False when some base was not ACGTN."""

        def plan(chunk: tuple[int, int]) -> _ChunkPlan:
            return _ChunkPlan(pairs, *chunk, scores, self.resident_warps, self.wide, self.shared_resident)

        def enqueue(plan: _ChunkPlan, _index: int, slot: ChunkSlot) -> CopyOut:
            self.grow(slot, plan.blob_bytes, plan.out_bytes, plan.device_bytes)
            plan.fill(slot.pinned_in, pairs, scores, int(slot.device.ptr))
            self._enqueue(slot, plan)
            return partial(_copy_out, plan, pairs, scores, results)

        with self.cupy.cuda.Device(self.device_id):
            return all(self.run_chunks(chunks, plan, enqueue, cancelled))


def _copy_out(plan: _ChunkPlan, pairs: Any, scores: Scores, results: Any, slot: ChunkSlot) -> bool:
    return plan.store(slot.pinned_out, pairs, scores, results)


_RUNNERS: Runners[_Runner] = Runners(_Runner)


def _runner(device_id: int) -> _Runner:
    # A runner per configuration set too (set by WARPDP_XDROP_WIDE_CONFIGS).
    return _RUNNERS.on_device(device_id, wide_configs())


def extend(pairs: Any, results: Any, *, k: int, x: int, match: int, mismatch: int, gap: int, best: bool,
           devices: Sequence[int] | None = None, cancelled: CancelCheck | None = None) -> None:
    """Fill ``results`` (a :class:`warpdp.plugin.xdrop.XdropResults`) for every pair.

    ``pairs`` is validated :class:`warpdp.plugin.xdrop.XdropPairs` (seeds inside their
    sequences; bases are checked here, on the GPU) and the scores are validated; the answers are
    those of the CPU backend, exactly. ``devices`` lists the GPUs to spread chunks over
    (default: every GPU this process sees; see runtime.devices). ``cancelled`` is checked before each chunk is enqueued:
    JobCancelled once it returns True (see warpdp.plugin.cancel).
    """
    if pairs.n_pairs == 0:
        return
    scores = Scores(int(k), int(match), int(mismatch), int(gap), int(x), bool(best))
    device_ids, (chunk_pairs, chunk_bytes) = plan_spread(
        resolve_devices(devices), (_CHUNK_PAIRS, pairs.n_pairs),
        (_CHUNK_BYTES, int(pairs.h_offsets[-1]) + int(pairs.v_offsets[-1])))
    chunks = split_chunks(pairs.h_offsets, pairs.v_offsets, chunk_pairs, chunk_bytes)
    ok = all(spread(device_ids, chunks,
                    lambda device, share: _runner(device).run(pairs, share, scores, results, cancelled)))
    if not ok:
        pairs.check_bases()  # names the first bad byte
        raise ValueError("a sequence has a byte other than A, C, G, T and N")
