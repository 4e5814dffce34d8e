"""The Pair-HMM GPU launcher's host-side plan (see :mod:`warpdp.kernels.pairhmm`): the kernel
configurations and their read-length bins, the launch-struct dtypes, and how the input is cut
into chunks (:func:`split_work`) and each chunk laid out in its pinned blob and device buffer
(:class:`_ChunkPlan`). No CuPy here: the plan is numpy only.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .host_copy import copy_arrays
from .runtime.launch_params import POINTER, launch_struct, set_row, struct_rows
from .runtime.layout import sections
from .runtime.slots import round_up

# Tuning knobs, read once at import (for experiments; the defaults are the measured best):
# WARPDP_PAIRHMM_WARPS = warps per block for every configuration (2 or 4),
# WARPDP_PAIRHMM_NVRTC_OPTIONS = extra NVRTC options (e.g. -DWARPDP_STEP_UNROLL=2),
# WARPDP_PAIRHMM_FLOAT_BINS = the float bins (see _bins_from_env).
_WARPS_OVERRIDE = int(os.environ.get("WARPDP_PAIRHMM_WARPS", "0"))


@dataclass(frozen=True)
class KernelConfig:
    """One template instantiation of ``forward_kernel<Real, G, T, MULTI>``."""

    real: str           # "float" or "double"
    lanes: int          # G: lanes of a subwarp (one work item per subwarp)
    rows: int           # T: read rows per lane
    multi: bool         # reads longer than G*T are computed strip after strip
    max_read_len: int   # longest read this bin takes (0: no limit)
    block_warps: int = 4  # warps per block: 2 where shared memory, not registers, limits occupancy

    @property
    def warps(self) -> int:
        return _WARPS_OVERRIDE or self.block_warps

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def name(self) -> str:
        return (f"warpdp_pairhmm::forward_kernel<{self.real}, {self.lanes}, {self.rows}, "
                f"{'true' if self.multi else 'false'}>")

    @property
    def strip_rows(self) -> int:
        return self.lanes * self.rows

    @property
    def real_bytes(self) -> int:
        return 4 if self.real == "float" else 8

    @property
    def shared_bytes(self) -> int:
        # Two tables (e*MM, e*GapM) x 5 hap codes x T rows x 32 lanes, per warp.
        return self.warps * 2 * 5 * self.rows * 32 * self.real_bytes

    @property
    def subwarps_per_block(self) -> int:
        return self.warps * (32 // self.lanes)

    @property
    def cell_bytes(self) -> int:
        # One scratch cell (M, X, Y, unused) per column for MULTI strips.
        return 4 * self.real_bytes


# Float bins by read length (each takes reads up to max_read_len, in one strip of G*T rows), then
# the general multi-strip configuration that takes any longer read. Kept in step with the
# WARPDP_NVCC_CHECK list in the .cu. T=16 configurations (and 16 x 12) use 2-warp blocks: their
# shared memory, not registers, limits occupancy, and smaller blocks pack the SM better (the
# choice of bins is measured in BENCHMARKS.md, Pair-HMM GPU backend).
FLOAT_BINS: tuple[KernelConfig, ...] = (
    KernelConfig("float", 4, 8, False, 32),
    KernelConfig("float", 8, 8, False, 64),
    KernelConfig("float", 8, 12, False, 96),
    KernelConfig("float", 8, 16, False, 128, block_warps=2),
    KernelConfig("float", 8, 20, False, 160),
    KernelConfig("float", 16, 12, False, 192, block_warps=2),
    KernelConfig("float", 16, 16, False, 256, block_warps=2),
    KernelConfig("float", 32, 16, False, 512, block_warps=2),
    KernelConfig("float", 8, 16, True, 0, block_warps=2),
)


def _bins_from_env(text: str) -> tuple[KernelConfig, ...]:
    """WARPDP_PAIRHMM_FLOAT_BINS="8x8:64,8x20:160/2,..." (lanes x rows : longest read [/ warps]):
    replaces the one-strip float bins, for tuning experiments; the multi-strip bin stays."""
    bins = []
    for spec in text.split(","):
        match = re.fullmatch(r"\s*(\d+)x(\d+):(\d+)(?:/(\d+))?\s*", spec)
        if not match:
            raise ValueError(f"WARPDP_PAIRHMM_FLOAT_BINS: cannot read {spec!r} (expected GxT:MAXLEN[/WARPS])")
        lanes, rows, longest, warps = match.groups()
        bins.append(KernelConfig("float", int(lanes), int(rows), False, int(longest), int(warps or 4)))
    return tuple(sorted(bins, key=lambda c: c.max_read_len)) + (FLOAT_BINS[-1],)


if os.environ.get("WARPDP_PAIRHMM_FLOAT_BINS"):
    FLOAT_BINS = _bins_from_env(os.environ["WARPDP_PAIRHMM_FLOAT_BINS"])
# Double precision (GKL's fallback pass and the double-only mode): one general configuration.
DOUBLE_CONFIG = KernelConfig("double", 8, 4, True, 0)
KERNEL_CONFIGS: tuple[KernelConfig, ...] = FLOAT_BINS + (DOUBLE_CONFIG,)
_FLOAT_BOUNDS = np.array([c.max_read_len for c in FLOAT_BINS[:-1]], dtype=np.int64)
MAX_BINS = 16                # bins the planner kernels know (pairhmm.cu)
# struct Params of pairhmm.cu: one launch of forward_kernel.
PARAMS = launch_struct([
    ("items", POINTER), ("n_items", POINTER), ("work_counter", POINTER), ("reads", POINTER),
    ("read_plane", np.int64), ("codes", POINTER), ("hap_starts", POINTER), ("ph2pr", POINTER), ("mm", POINTER),
    ("out", POINTER), ("fb_items", POINTER), ("fb_count", POINTER), ("scratch", POINTER),
    ("scratch_stride", np.int64), ("initial", np.float64), ("log10_initial", np.float64),
    ("items_offset", POINTER), ("unused", np.int64)])
# struct PlanParams of pairhmm.cu: the planner kernels' input.
PLAN_PARAMS = launch_struct([
    ("read_offsets", POINTER), ("batch_reads", POINTER), ("batch_haps", POINTER), ("pair_base", POINTER),
    ("hap_starts", POINTER), ("items", POINTER), ("bin_count", POINTER), ("bin_start", POINTER),
    ("bucket_count", POINTER), ("bucket_cursor", POINTER), ("bucket_start", POINTER),
    ("n_reads", np.int64), ("n_batches", np.int64), ("n_bins", np.int64), ("cap", np.int64),
    ("multi_from", np.int64), ("strip_rows", np.int64), ("columns", np.float64), ("mean_hap_len", np.float64),
    ("bucket_scale", np.float64), ("bounds", np.int64, MAX_BINS)])
_HELPER_KERNELS = ("warpdp_pairhmm::hap_codes_kernel", "warpdp_pairhmm::plan_count_kernel",
                   "warpdp_pairhmm::plan_prefix_kernel", "warpdp_pairhmm::plan_scatter_kernel")

_READ_FIELDS = ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp")  # the read planes, in order
_UPLOADED_FIELDS = (*_READ_FIELDS, "hap_bases")  # the input arrays a chunk uploads
PLAN_BUCKETS = 64            # item-length buckets per bin (pairhmm.cu)
ITEM_INTS = 8                # int32 fields of struct Item
CODE_NONE = 0x84            # "no column" code (pairhmm.cu), pads the stream
CODE_PAD = 128               # lane 0 reads the stream up to G + 12 bytes past an item's end
MAX_HAP_LEN = (1 << 24) - 1  # a haplotype length travels in 24 bits of the column word
NVRTC_OPTIONS = ("-std=c++17", "--fmad=false", "--ftz=true", "--prec-div=true", "--prec-sqrt=true",
                 *os.environ.get("WARPDP_PAIRHMM_NVRTC_OPTIONS", "").split())

# Counters block (int32) of a chunk. The first _N_RESET are zero before every run of the kernels.
_C_WORK = 0          # +bin: items handed out by the bin's launch
_C_FB_COUNT = 16     # pairs queued for the double pass
_C_FB_WORK = 17      # items of the queue handed out
_N_RESET = 18
_C_BIN_COUNT = 32    # +bin: items in the bin (planner)
_C_BIN_START = 48    # +bin: first item of the bin (planner)
_C_BUCKET_COUNT = 64                              # per (bin, length bucket), planner
_C_BUCKET_CURSOR = _C_BUCKET_COUNT + 16 * PLAN_BUCKETS
_C_BUCKET_START = _C_BUCKET_CURSOR + 16 * PLAN_BUCKETS
_N_COUNTERS = _C_BUCKET_START + 16 * PLAN_BUCKETS

_DEFAULT_CHUNK_BYTES = 1 << 30      # device bytes of one chunk's input and outputs
_DEFAULT_CHUNK_CELLS = 4_000_000_000  # largest chunk; the first ones are smaller (split_work)
# Largest chunk of page-locked input (the gRPC server's, where the client already sends the
# first pieces small): every chunk costs the host planning, filling and enqueueing, which a
# busy server does under an interpreter lock shared with its other threads (BENCHMARKS.md).
_PAGE_LOCKED_CHUNK_CELLS = 8_000_000_000
_FIRST_CHUNK_DIVISOR = 4            # the first chunk is smaller: the GPU starts sooner
_CHUNK_GROWTH = 1.5                 # and the next ones grow (see split_work)
# Chunks in flight. Two keep one call's GPU busy. The gRPC server runs a large job's chunks as
# consecutive calls on three workers, and the third slot lets a chunk be enqueued (and its
# upload start) while the two before it still compute: with two, the next chunk's upload
# often waited for the GPU to finish the one before (BENCHMARKS.md, gRPC service).
_SLOTS = 3
_ITEMS_PER_SM = 512                 # target work items per SM before runs of haplotypes are split
_MAX_ITEM_STREAM = 16384            # columns of one item (bounds the MULTI scratch per subwarp)
# Item latency model, its constants fitted on the H200: a subwarp's time per column step, the
# whole input's cells per second, and an item should take at most a quarter of the input's time.
_SECONDS_PER_COLUMN = 0.3e-6
_EXPECTED_CELLS_PER_SECOND = 2e12
_ITEM_SHARE_OF_TIME = 4.0


# --------------------------------------------------------------------------------------------
# Host-side planning (numpy only, per batch or per read: the per-item work is on the GPU)
# --------------------------------------------------------------------------------------------

def item_limits(n_pairs: int, longest_hap: int, mean_hap: float, total_cells: int,
                sm_count: int) -> tuple[int, float]:
    """How many haplotypes one work item may carry, and how many column steps it should take.

    Longer runs amortise an item's setup, but an item's columns (times its strips) run one
    after another, so its length bounds the time of the launch it is in: runs are split until
    every SM has enough items and no item takes more than a fraction of the whole input's
    expected time. The planner kernel applies the step budget per read (by its strips).
    """
    by_count = max(1, -(-n_pairs // max(1, sm_count * _ITEMS_PER_SM)))
    by_length = max(1, _MAX_ITEM_STREAM // max(1, longest_hap))
    columns = float(total_cells) / _EXPECTED_CELLS_PER_SECOND / _SECONDS_PER_COLUMN / _ITEM_SHARE_OF_TIME
    return min(by_count, by_length), max(columns, float(longest_hap))


def _reads_per_float_bin(read_lens: np.ndarray) -> np.ndarray:
    """How many reads each float bin takes (bin b: lengths up to its max_read_len, over the bin
    before's; the last bin: the rest). Counted through a histogram of the lengths, clipped
    above the last bound: a binary search per read was slower (BENCHMARKS.md, gRPC service)."""
    if not len(_FLOAT_BOUNDS):  # one bin takes every read
        return np.array([len(read_lens)])
    top = int(_FLOAT_BOUNDS[-1])
    at_most = np.cumsum(np.bincount(np.minimum(read_lens, top + 1), minlength=top + 2))[_FLOAT_BOUNDS]
    return np.diff(at_most, prepend=0, append=len(read_lens))


@dataclass(frozen=True)
class _Chunk:
    """Batches b0..b1-1, or (r_lo is not None) reads r_lo..r_hi-1 of the single batch b0."""

    b0: int
    b1: int
    r_lo: int | None
    r_hi: int | None
    out_lo: int
    n_out: int


def split_work(batches: Any, chunk_bytes: int, chunk_cells: int, first_smaller: bool = True) -> list[_Chunk]:
    """Consecutive pieces of the input (whole batches, or read ranges of one large batch) whose
    device footprint and cell count stay under the limits. With first_smaller, the first piece
    is smaller, so the GPU starts sooner, and each next one grows by _CHUNK_GROWTH (up to
    chunk_cells): the host prepares a piece while the GPU computes the one before, and the GPU
    is the faster."""
    br, bh, ro, ho = batches.batch_reads, batches.batch_haps, batches.read_offsets, batches.hap_offsets
    nr, nh = np.diff(br), np.diff(bh)
    pairs = nr * nh
    read_bytes = ro[br[1:]] - ro[br[:-1]]
    hap_bytes = ho[bh[1:]] - ho[bh[:-1]]
    # Read planes, offsets, haplotypes, and per pair an item, the output and a fallback slot.
    cost = 5 * read_bytes + 4 * nr + hap_bytes + 4 * nh + 72 * pairs + 256
    cells = read_bytes * hap_bytes
    cum_bytes, cum_cells = np.cumsum(cost), np.cumsum(cells)
    out_base = np.concatenate(([0], np.cumsum(pairs)))
    chunks: list[_Chunk] = []
    n_batches, b = len(nr), 0

    def cell_limit() -> int:
        if not first_smaller:
            return chunk_cells
        return max(1, min(chunk_cells, int(chunk_cells / _FIRST_CHUNK_DIVISOR * _CHUNK_GROWTH ** len(chunks))))

    while b < n_batches:
        limit_cells = cell_limit()
        base_b = cum_bytes[b - 1] if b else 0
        base_c = cum_cells[b - 1] if b else 0
        stop = min(int(np.searchsorted(cum_bytes, base_b + chunk_bytes, side="right")),
                   int(np.searchsorted(cum_cells, base_c + limit_cells, side="right")))
        if stop > b:
            chunks.append(_Chunk(b, stop, None, None, int(out_base[b]), int(out_base[stop] - out_base[b])))
            b = stop
            continue
        # Batch b alone is over a limit: cut it into runs of reads.
        r0, r1, h = int(br[b]), int(br[b + 1]), int(nh[b])
        lens = ro[r0 + 1:r1 + 1] - ro[r0:r1]
        read_cost = np.cumsum(5 * lens + 72 * h + 36)
        read_cells = np.cumsum(lens * int(hap_bytes[b]))
        room_b = max(1, chunk_bytes - int(hap_bytes[b]) - 4 * h - 256)
        r = 0
        while r < len(lens):
            cb = read_cost[r - 1] if r else 0
            cc = read_cells[r - 1] if r else 0
            limit_cells = cell_limit()
            stop = min(int(np.searchsorted(read_cost, cb + room_b, side="right")),
                       int(np.searchsorted(read_cells, cc + limit_cells, side="right")))
            stop = max(stop, r + 1)
            chunks.append(_Chunk(b, b + 1, r0 + r, r0 + stop, int(out_base[b]) + r * h, (stop - r) * h))
            r = stop
        b += 1
    return [c for c in chunks if c.n_out > 0]


@dataclass
class _Launch:
    config: KernelConfig
    grid: int
    param_index: int
    reads: int = -1


class _ChunkPlan:
    """One chunk: its launches and the layout of its pinned blob / device buffer. The work items
    themselves are made on the GPU (plan_count/prefix/scatter kernels) from the offsets."""

    def __init__(self, batches: Any, chunk: _Chunk, use_double: bool, runner: Any,
                 total_cells: int, longest_hap: int, mean_hap: float) -> None:
        br, bh, ro, ho = batches.batch_reads, batches.batch_haps, batches.read_offsets, batches.hap_offsets
        self.chunk = chunk
        b0, b1 = chunk.b0, chunk.b1
        self.r_lo, self.r_hi = (int(br[b0]), int(br[b1])) if chunk.r_lo is None else (chunk.r_lo, chunk.r_hi)
        self.h_lo, self.h_hi = int(bh[b0]), int(bh[b1])
        self.n_reads, self.n_haps = self.r_hi - self.r_lo, self.h_hi - self.h_lo
        self.n_batches = b1 - b0
        self.out_lo, self.n_out = chunk.out_lo, chunk.n_out
        self.read_bytes = int(ro[self.r_hi] - ro[self.r_lo])
        self.code_bytes = int(ho[self.h_hi] - ho[self.h_lo])
        haps_per_batch = np.diff(bh[b0:b1 + 1])
        max_haps = int(haps_per_batch.max())
        # The item budget follows this chunk's expected time: its kernels are what an item's
        # latency competes with (the next chunk's kernels queue behind them).
        chunk_cells = int(self.read_bytes) * int(self.code_bytes) if chunk.r_lo is not None else \
            int(np.dot(ro[br[b0 + 1:b1 + 1]] - ro[br[b0:b1]], ho[bh[b0 + 1:b1 + 1]] - ho[bh[b0:b1]]))
        self.cap, self.columns = item_limits(self.n_out, longest_hap, mean_hap, min(total_cells, chunk_cells),
                                             runner.sm_count)
        self.mean_hap = mean_hap
        self.configs = (DOUBLE_CONFIG,) if use_double else FLOAT_BINS
        read_lens = ro[self.r_lo + 1:self.r_hi + 1] - ro[self.r_lo:self.r_hi]
        if use_double:
            per_bin = np.array([self.n_reads])
        else:
            per_bin = _reads_per_float_bin(read_lens)

        # Launches: the bins that have reads, then (float) the double pass over the queue.
        # Grids are bounded by what the bin can hold (each read gives at most max_haps items).
        self.launches: list[_Launch] = []
        scratch_f = scratch_d = 0
        self.stride_f = self.stride_d = 0
        most_items = max(1, max_haps)
        self.longest_item = min(self.cap, max_haps) * longest_hap
        for b, config in enumerate(self.configs):
            reads = int(per_bin[b])
            if reads == 0:
                continue
            grid = min(-(-(reads * most_items) // config.subwarps_per_block), runner.resident_blocks(config))
            if config.multi:
                stride = round_up(min(self.cap, max_haps) * longest_hap + config.lanes + 16, 4)
                size = grid * config.subwarps_per_block * stride * config.cell_bytes
                if config.real == "float":
                    self.stride_f, scratch_f = stride, size
                else:
                    self.stride_d, scratch_d = stride, size
            self.launches.append(_Launch(config, max(1, grid), b, reads))
        # Launched in this order on concurrent streams. The blocks of a bin stay resident until
        # its items run out, so a bin launched after the biggest one would wait for it and then
        # add its own item latency to the end: small bins go first (their few items start at
        # once, on a few SMs) and the biggest bin last, filling the rest of the GPU.
        self.launches.sort(key=lambda launch: launch.reads)
        self.fallback: _Launch | None = None
        if not use_double:
            # The queue's size is known only on the device: size the pass for all of it.
            grid = max(1, min(runner.resident_blocks(DOUBLE_CONFIG),
                              -(-self.n_out // DOUBLE_CONFIG.subwarps_per_block)))
            self.stride_d = round_up(longest_hap + DOUBLE_CONFIG.lanes + 16, 4)
            scratch_d = grid * DOUBLE_CONFIG.subwarps_per_block * self.stride_d * DOUBLE_CONFIG.cell_bytes
            self.fallback = _Launch(DOUBLE_CONFIG, grid, len(self.configs))
        self.n_params = len(self.configs) + 1

        plane = round_up(max(self.read_bytes, 1), 16)
        self.at, self.blob_bytes = sections(
            (("params", self.n_params * PARAMS.itemsize), ("plan", PLAN_PARAMS.itemsize),
             ("counters", _N_COUNTERS * 4),
             ("read_offsets", (self.n_reads + 1) * 4), ("batch_reads", (self.n_batches + 1) * 4),
             ("batch_haps", (self.n_batches + 1) * 4), ("pair_base", (self.n_batches + 1) * 4),
             ("hap_starts", (self.n_haps + 2) * 4),
             ("reads", 5 * plane), ("codes", self.code_bytes + CODE_PAD)))
        device_at, self.device_bytes = sections(
            (("items", self.n_out * ITEM_INTS * 4), ("out", self.n_out * 8),
             ("fb_items", (0 if use_double else self.n_out) * ITEM_INTS * 4),
             ("scratch_f", scratch_f), ("scratch_d", scratch_d)), start=self.blob_bytes)
        self.at.update(device_at)
        self.read_plane = plane

    def fill(self, blob: np.ndarray, batches: Any, device_base: int, tables: dict[str, Any],
             page_locked: frozenset[str] = frozenset()) -> None:
        """Write the upload part of the chunk into ``blob`` (pinned), pointing at ``device_base``.
        Haplotypes go as raw bytes; hap_codes_kernel turns them into column codes on the GPU.

        Sets ``uploads``: the (device offset, host array) copies that move the chunk to the GPU.
        The input fields named in ``page_locked`` (the gRPC server's shared files, mapped and
        page-locked) go to the GPU from where they are instead of through the blob."""
        self._fill_offsets(blob, batches)
        self._fill_inputs(blob, batches, page_locked)
        self._fill_plan_params(blob, device_base)
        self._fill_launch_params(blob, device_base, tables)

    def _fill_offsets(self, blob: np.ndarray, batches: Any) -> None:
        """The chunk's counters (zeroed) and its offsets, rebased to the chunk, as int32."""
        at = self.at
        br, bh, ro, ho = batches.batch_reads, batches.batch_haps, batches.read_offsets, batches.hap_offsets

        def ints(name: str, count: int) -> np.ndarray:
            return blob[at[name]:at[name] + 4 * count].view(np.int32)

        ints("counters", _N_COUNTERS)[:] = 0
        np.subtract(ro[self.r_lo:self.r_hi + 1], ro[self.r_lo], out=ints("read_offsets", self.n_reads + 1),
                    casting="unsafe")
        starts = ints("hap_starts", self.n_haps + 2)
        np.subtract(ho[self.h_lo:self.h_hi + 1], ho[self.h_lo], out=starts[:-1], casting="unsafe")
        starts[-1] = starts[-2]
        b0, b1 = self.chunk.b0, self.chunk.b1
        if self.chunk.r_lo is None:
            batch_reads = br[b0:b1 + 1]
            np.subtract(batch_reads, batch_reads[0], out=ints("batch_reads", self.n_batches + 1), casting="unsafe")
            np.subtract(bh[b0:b1 + 1], bh[b0], out=ints("batch_haps", self.n_batches + 1), casting="unsafe")
            pairs = np.diff(batch_reads) * np.diff(bh[b0:b1 + 1])
            base = ints("pair_base", self.n_batches + 1)
            base[0] = 0
            np.cumsum(pairs, out=base[1:], dtype=np.int32)
        else:
            ints("batch_reads", 2)[:] = (0, self.n_reads)
            ints("batch_haps", 2)[:] = (0, self.n_haps)
            ints("pair_base", 2)[:] = (0, self.n_out)

    def _fill_inputs(self, blob: np.ndarray, batches: Any, page_locked: frozenset[str]) -> None:
        """The read planes and haplotype bytes (those not page-locked) into the blob; sets ``uploads``."""
        at, ro, ho = self.at, batches.read_offsets, batches.hap_offsets
        r0 = int(ro[self.r_lo])
        c0 = int(ho[self.h_lo])
        sources = [(name, at["reads"] + k * self.read_plane, getattr(batches, name)[r0:r0 + self.read_bytes])
                   for k, name in enumerate(_READ_FIELDS)]
        sources.append(("hap_bases", at["codes"], batches.hap_bases[c0:c0 + self.code_bytes]))
        copy_arrays([(blob[offset:offset + len(src)], src) for name, offset, src in sources
                     if name not in page_locked])
        pad_at = at["codes"] + self.code_bytes
        blob[pad_at:pad_at + CODE_PAD] = CODE_NONE
        # The blob (the page-locked inputs' places in it are overwritten by their own copies,
        # which follow on the same stream), then the page-locked inputs from where they lie.
        self.uploads = [(0, blob[:self.blob_bytes])]
        self.uploads += [(offset, src) for name, offset, src in sources if name in page_locked and len(src)]

    def _fill_plan_params(self, blob: np.ndarray, device_base: int) -> None:
        """The planner kernels' launch struct."""
        at = self.at
        counters = device_base + at["counters"]
        bounds = [c.max_read_len for c in self.configs[:-1]]
        set_row(struct_rows(blob, at["plan"], PLAN_PARAMS, 1), 0, {
            "read_offsets": device_base + at["read_offsets"], "batch_reads": device_base + at["batch_reads"],
            "batch_haps": device_base + at["batch_haps"], "pair_base": device_base + at["pair_base"],
            "hap_starts": device_base + at["hap_starts"], "items": device_base + at["items"],
            "bin_count": counters + 4 * _C_BIN_COUNT, "bin_start": counters + 4 * _C_BIN_START,
            "bucket_count": counters + 4 * _C_BUCKET_COUNT, "bucket_cursor": counters + 4 * _C_BUCKET_CURSOR,
            "bucket_start": counters + 4 * _C_BUCKET_START,
            "n_reads": self.n_reads, "n_batches": self.n_batches, "n_bins": len(self.configs), "cap": self.cap,
            "multi_from": FLOAT_BINS[-2].max_read_len, "strip_rows": FLOAT_BINS[-1].strip_rows,
            "columns": self.columns, "mean_hap_len": max(self.mean_hap, 1.0),
            "bucket_scale": PLAN_BUCKETS / (self.longest_item + 1.0),
            "bounds": bounds + [0] * (MAX_BINS - len(bounds))})

    def _fill_launch_params(self, blob: np.ndarray, device_base: int, tables: dict[str, Any]) -> None:
        """One launch struct per launch (the double pass's last)."""
        at = self.at
        counters = device_base + at["counters"]
        params = struct_rows(blob, at["params"], PARAMS, self.n_params)
        for launch in self.launches + ([self.fallback] if self.fallback else []):
            config, row = launch.config, launch.param_index
            if launch is self.fallback:  # the queue the float launches filled
                items, n_items, work_counter, items_offset = (
                    device_base + at["fb_items"], counters + 4 * _C_FB_COUNT, counters + 4 * _C_FB_WORK, 0)
            else:
                items, n_items, work_counter, items_offset = (
                    device_base + at["items"], counters + 4 * (_C_BIN_COUNT + row), counters + 4 * (_C_WORK + row),
                    counters + 4 * (_C_BIN_START + row))
            suffix = "f" if config.real == "float" else "d"
            set_row(params, row, {
                "items": items, "n_items": n_items, "work_counter": work_counter,
                "reads": device_base + at["reads"], "read_plane": self.read_plane, "codes": device_base + at["codes"],
                "hap_starts": device_base + at["hap_starts"],
                "ph2pr": tables["ph2pr_" + suffix], "mm": tables["mm_" + suffix], "out": device_base + at["out"],
                "fb_items": device_base + at["fb_items"], "fb_count": counters + 4 * _C_FB_COUNT,
                "scratch": device_base + at["scratch_" + suffix],
                "scratch_stride": self.stride_f if config.real == "float" else self.stride_d,
                "initial": float(tables["initial_" + suffix]), "log10_initial": float(tables["log10_initial_" + suffix]),
                "items_offset": items_offset, "unused": 0})

    def param_address(self, device_base: int, launch: _Launch) -> int:
        return device_base + self.at["params"] + launch.param_index * PARAMS.itemsize
