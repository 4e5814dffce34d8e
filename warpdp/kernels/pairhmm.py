"""GPU backend of the Pair-HMM forward algorithm: the CuPy launcher for ``pairhmm.cu``.

The plugin layer (:func:`warpdp.plugin.pairhmm.pairhmm`) validates the packed batches and calls
:func:`forward`. This module

* cuts the input into chunks (whole batches, or runs of reads of one large batch) and copies
  each chunk's packed arrays through pinned host buffers; two chunks are in flight, so the host
  prepares and copies chunk c+1 while the GPU computes chunk c;
* on the GPU, per chunk: turns the haplotype bytes into column codes and the offsets into work
  items (one read against a run of its batch's haplotypes, whose pairs are consecutive in the
  output), grouped by read-length bin and longest first inside a bin;
* launches one templated kernel configuration per non-empty bin, each on its own stream (a
  chunk's copies, launches and stream waits are made in one go without the interpreter lock,
  see :mod:`warpdp.kernels.runtime.cuda_calls`); and
* runs GKL's float-then-double rule on the GPU: the float kernels queue the pairs whose result is
  below 1e-28 and one double-precision launch per chunk recomputes them.

CuPy is imported only when a GPU function runs, so importing this module needs no GPU.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np

from ..plugin.cancel import CancelCheck
from .pairhmm_plan import (  # noqa: F401  (DOUBLE_CONFIG, the chunking constants and helpers: read by tests)
    _CHUNK_GROWTH, _DEFAULT_CHUNK_BYTES, _DEFAULT_CHUNK_CELLS, _FIRST_CHUNK_DIVISOR, _FLOAT_BOUNDS,
    _HELPER_KERNELS, _N_RESET, _PAGE_LOCKED_CHUNK_CELLS, _SLOTS, _UPLOADED_FIELDS, DOUBLE_CONFIG, FLOAT_BINS,
    KERNEL_CONFIGS, MAX_HAP_LEN, NVRTC_OPTIONS, PARAMS, PLAN_PARAMS, KernelConfig, _Chunk, _ChunkPlan,
    _reads_per_float_bin, item_limits, split_work)
from .runtime.device import CupyDevice, device_info
from .runtime.devices import plan_spread, resolve_devices, spread
from .runtime.module_cache import ModuleSpec
from .runtime.occupancy import resident_blocks_per_sm
from .runtime.runner import ChunkRunner, CopyOut, Runners
from .runtime.slots import ChunkSlot

__all__ = ["forward", "device_info", "KERNEL_CONFIGS"]

# --------------------------------------------------------------------------------------------
# Device side (CuPy)
# --------------------------------------------------------------------------------------------

class _CupyDevice(CupyDevice):
    """The Pair-HMM module's kernels on the current device, launched through the recorded calls."""

    def __init__(self) -> None:
        super().__init__(MODULE)
        self.codes_kernel, self.count_kernel, self.prefix_kernel, self.scatter_kernel = (
            self.module.get_function(name) for name in _HELPER_KERNELS)
        self.kernels = {}
        for config in KERNEL_CONFIGS:
            kernel = self.module.get_function(config.name)
            if config.shared_bytes > 48 * 1024:
                kernel.max_dynamic_shared_size_bytes = config.shared_bytes
            self.kernels[config] = kernel
        self.functions = {config: self.kernels[config].kernel.ptr for config in KERNEL_CONFIGS}
        self.helper_functions = [kernel.kernel.ptr for kernel in
                                 (self.codes_kernel, self.count_kernel, self.prefix_kernel, self.scatter_kernel)]

    def resident_blocks(self, config: KernelConfig) -> int:
        return resident_blocks_per_sm(self.kernels[config], config.threads, config.shared_bytes,
                                      regs_per_sm=self.regs_per_sm, shared_per_sm=self.smem_per_sm)

    def kernel_attributes(self) -> dict[str, dict[str, int]]:
        return {c.name: dict(self.kernels[c].attributes, resident_blocks_per_sm=self.resident_blocks(c))
                for c in KERNEL_CONFIGS}

    def launch(self, config: KernelConfig, grid: int, params_address: int, stream: Any) -> None:
        self.calls.launch(self.functions[config], grid, config.threads, config.shared_bytes, stream.ptr,
                          (params_address,))

    def launch_codes(self, codes: int, hap_starts: int, n_haps: int, stream: Any) -> None:
        grid = max(1, min(4 * self.sm_count, -(-n_haps // 8)))  # 8 warps per block, a warp per haplotype
        self.calls.launch(self.helper_functions[0], grid, 256, 0, stream.ptr, (codes, hap_starts, n_haps))

    def launch_plan(self, plan_params: int, n_reads: int, stream: Any) -> None:
        grid = max(1, min(4 * self.sm_count, -(-n_reads // 256)))
        count, prefix, scatter = self.helper_functions[1:]
        self.calls.launch(count, grid, 256, 0, stream.ptr, (plan_params,))
        self.calls.launch(prefix, 1, 32, 0, stream.ptr, (plan_params,))
        self.calls.launch(scatter, grid, 256, 0, stream.ptr, (plan_params,))

    def upload_tables(self) -> tuple[dict[str, Any], dict[str, Any]]:
        from ..cython_cpu.pairhmm import gkl_tables

        tables = gkl_tables()
        keep = {}
        values: dict[str, Any] = {}
        for name in ("ph2pr_f", "mm_f", "ph2pr_d", "mm_d"):
            array = self.cupy.asarray(tables[name])
            keep[name] = array
            values[name] = int(array.data.ptr)
        for name in ("initial_f", "log10_initial_f", "initial_d", "log10_initial_d"):
            values[name] = tables[name]
        self.cupy.cuda.runtime.deviceSynchronize()
        return keep, values


MODULE = ModuleSpec("pairhmm", NVRTC_OPTIONS, tuple(c.name for c in KERNEL_CONFIGS) + _HELPER_KERNELS,
                    (("Params", PARAMS), ("PlanParams", PLAN_PARAMS)))


class _Runner(ChunkRunner):
    """Per-process GPU state: compiled kernels, tables, streams and reusable buffers."""

    def __init__(self, device: Any) -> None:
        super().__init__(_SLOTS, device.alloc_pinned, device.alloc_device)
        self.device = device
        self.sm_count = device.sm_count
        self._resident = {c: device.resident_blocks(c) * device.sm_count for c in KERNEL_CONFIGS}
        self._tables_keep, self.tables = device.upload_tables()
        self.copy_stream = device.stream()
        self.tail_stream = device.stream()
        # A set of bin streams per slot, taken in turn by chunks: a chunk's kernels then overlap
        # the tail of the previous chunk's instead of queueing behind them on the same stream.
        self.bin_streams = [[device.stream() for _ in FLOAT_BINS] for _ in range(_SLOTS)]
        # Events are re-recorded chunk after chunk (a wait uses the record made before it).
        self.uploaded_events = [device.event() for _ in range(_SLOTS)]
        self.bin_events = [[device.event() for _ in FLOAT_BINS] for _ in range(_SLOTS)]

    def resident_blocks(self, config: KernelConfig) -> int:
        return self._resident[config]

    def _ensure(self, slot: ChunkSlot, plan: _ChunkPlan) -> None:
        self.grow(slot, plan.blob_bytes, plan.n_out * 8, plan.device_bytes)

    def _enqueue(self, slot: ChunkSlot, plan: _ChunkPlan, parity: int) -> None:
        """Upload the slot's blob and launch the chunk's kernels (all asynchronous)."""
        try:
            self._record_chunk(slot, plan, parity)
            self.device.issue()
        except BaseException:
            self.device.discard()
            raise

    def _record_chunk(self, slot: ChunkSlot, plan: _ChunkPlan, parity: int) -> None:
        dev = self.device
        base = int(slot.device.ptr)
        streams = self.bin_streams[parity]
        for offset, host in plan.uploads:
            dev.h2d(base + offset, host, host.nbytes, self.copy_stream)
        self._prepare_on_device(plan, base, self.copy_stream)
        uploaded = self.uploaded_events[parity]
        dev.record(uploaded, self.copy_stream)
        finished = []
        for i, launch in enumerate(plan.launches):
            stream = streams[i % len(streams)]
            dev.wait(stream, uploaded)
            dev.launch(launch.config, launch.grid, plan.param_address(base, launch), stream)
            event = self.bin_events[parity][i % len(streams)]
            dev.record(event, stream)
            finished.append(event)
        tail = self.tail_stream
        dev.wait(tail, uploaded)
        for event in finished:
            dev.wait(tail, event)
        if plan.fallback is not None:
            dev.launch(plan.fallback.config, plan.fallback.grid, plan.param_address(base, plan.fallback), tail)
        dev.d2h(slot.pinned_out, base + plan.at["out"], plan.n_out * 8, tail)
        if slot.done is None:
            slot.done = dev.event()
        dev.record(slot.done, tail)

    def _prepare_on_device(self, plan: _ChunkPlan, base: int, stream: Any) -> None:
        """After the upload: haplotype codes and the work items, made on the GPU."""
        dev = self.device
        dev.launch_codes(base + plan.at["codes"], base + plan.at["hap_starts"], plan.n_haps, stream)
        dev.launch_plan(base + plan.at["plan"], plan.n_reads, stream)

    def run(self, batches: Any, chunks: Iterable[_Chunk], page_locked: frozenset[str], out: np.ndarray,
            use_double: bool, cancelled: CancelCheck | None = None) -> None:
        """Score the pairs of ``chunks`` (see :func:`forward`) into ``out``."""
        stats = _input_stats(batches)

        def plan(chunk: _Chunk) -> _ChunkPlan:
            # Planned chunk by chunk, not up front: the GPU works on the previous chunk meanwhile.
            return _ChunkPlan(batches, chunk, use_double, self, *stats)

        def enqueue(plan: _ChunkPlan, index: int, slot: ChunkSlot) -> CopyOut:
            self._ensure(slot, plan)
            plan.fill(slot.pinned_in, batches, int(slot.device.ptr), self.tables, page_locked)
            self._enqueue(slot, plan, index)
            return partial(_copy_out, out, plan.out_lo, plan.n_out)

        self.run_chunks(chunks, plan, enqueue, cancelled)

    # Benchmark support: the kernels alone, on data already on the device.
    def kernel_seconds(self, batches: Any, use_double: bool = False, repeats: int = 5,
                       per_launch: bool = False) -> list[Any]:
        n_out = int(np.sum(np.diff(batches.batch_reads) * np.diff(batches.batch_haps)))
        if n_out == 0:
            return []
        chunk = _Chunk(0, len(batches.batch_reads) - 1, None, None, 0, n_out)
        with self.lock:
            _index, slot = self.ring.take()
            plan = _ChunkPlan(batches, chunk, use_double, self, *_input_stats(batches))
            self._ensure(slot, plan)
            base = int(slot.device.ptr)
            plan.fill(slot.pinned_in, batches, base, self.tables)
            dev = self.device
            dev.discard()  # nothing half-recorded goes out with these calls
            stream = self.copy_stream
            dev.h2d(base, slot.pinned_in, plan.blob_bytes, stream)
            self._prepare_on_device(plan, base, stream)
            counters = plan.at["counters"]
            launches = plan.launches + ([plan.fallback] if plan.fallback else [])
            times = []
            for _ in range(repeats + 1):
                # Reset the work counters, then run every launch back to back on one stream.
                dev.h2d(base + counters, slot.pinned_in[counters:], _N_RESET * 4, stream)
                events = [dev.timing_event() for _ in range(len(launches) + 1)]
                dev.record(events[0], stream)
                for launch, event in zip(launches, events[1:]):
                    dev.launch(launch.config, launch.grid, plan.param_address(base, launch), stream)
                    dev.record(event, stream)
                dev.issue()
                events[-1].synchronize()
                elapsed = dev.cupy.cuda.get_elapsed_time
                if per_launch:
                    times.append([(launch.config.name, launch.reads, launch.grid, elapsed(a, b) / 1000.0)
                                  for launch, a, b in zip(launches, events[:-1], events[1:])])
                else:
                    times.append(elapsed(events[0], events[-1]) / 1000.0)
            return times[1:]


def _copy_out(out: np.ndarray, out_lo: int, n_out: int, slot: ChunkSlot) -> None:
    out[out_lo:out_lo + n_out] = slot.pinned_out[:n_out * 8].view(np.float64)


def _page_locked_fields(batches: Any, device: Any) -> frozenset[str]:
    """The input fields in page-locked memory; CUDA is asked once per memory owner (the gRPC
    server's arrays of a request all lie in one buffer). Fields over ``bytes`` (a decoded
    message's) are Python's own memory: the server's uncoalesced requests then cost no query,
    each of which gives up the interpreter lock."""
    answers: dict[int, bool] = {}
    locked = []
    for name in _UPLOADED_FIELDS:
        array = getattr(batches, name)
        owner = array.base if array.base is not None else array
        if isinstance(owner, bytes):
            continue
        if id(owner) not in answers:
            answers[id(owner)] = device.page_locked(array)
        if answers[id(owner)]:
            locked.append(name)
    return frozenset(locked)


def _input_stats(batches: Any) -> tuple[int, int, float]:
    """Whole-input numbers every chunk plans with: cells, longest and mean haplotype."""
    hap_lens = np.diff(batches.hap_offsets)
    if not len(hap_lens):
        return 0, 1, 1.0
    return int(batches.n_cells), int(hap_lens.max()), float(hap_lens.mean())


def _device() -> Any:
    """The device backend (tests on machines without a GPU may substitute an emulator)."""
    return _CupyDevice()


_RUNNERS: Runners[_Runner] = Runners(lambda device_id: _Runner(_device()))


def _runner(device_id: int | None = None) -> _Runner:
    return _RUNNERS.on_device(device_id)  # one per device (default: the current one)


def _check_inputs(batches: Any, out: np.ndarray) -> None:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, not {type(out).__name__}")
    if out.dtype != np.float64:
        raise TypeError(f"out must have dtype float64, not {out.dtype}")
    if out.ndim != 1 or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be 1-D, C-contiguous and writeable")
    n_pairs = int(np.sum(np.diff(batches.batch_reads) * np.diff(batches.batch_haps)))
    if len(out) != n_pairs:
        raise ValueError(f"out has {len(out)} entries but the batches have {n_pairs} pairs")
    hap_lens = np.diff(batches.hap_offsets)
    if len(hap_lens) and int(hap_lens.max()) > MAX_HAP_LEN:
        raise ValueError(f"a haplotype is longer than {MAX_HAP_LEN} bases, the GPU backend's limit")


def forward(batches: Any, out: np.ndarray, *, use_double: bool = False,
            chunk_bytes: int | None = None, chunk_cells: int | None = None,
            devices: Sequence[int] | None = None, cancelled: CancelCheck | None = None) -> None:
    """Fill ``out`` (float64, one per pair, batch after batch, read-major) with log10 likelihoods.

    ``batches`` is a validated :class:`warpdp.plugin.pairhmm.PairHmmBatches`. ``use_double``
    computes every pair in double; otherwise float with GKL's double fallback below 1e-28.
    ``chunk_bytes`` / ``chunk_cells`` bound one chunk's device footprint and work (defaults:
    1 GiB, 4e9 cells, the first chunks smaller; 8e9 cells, all full-size, when every uploaded
    array is page-locked); larger inputs are processed chunk after chunk. ``cancelled`` is
    checked before each chunk is enqueued: JobCancelled once it returns True, after the chunks
    already enqueued have finished (see warpdp.plugin.cancel). ``devices`` lists the GPUs to
    spread the chunks over (default: every GPU this process sees; see runtime.devices).
    """
    _check_inputs(batches, out)
    for name, value in (("chunk_bytes", chunk_bytes), ("chunk_cells", chunk_cells)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive int or None, not {value!r}")
    device_ids = resolve_devices(devices)
    if len(out) == 0:
        return
    page_locked = _page_locked_fields(batches, _runner(device_ids[0]).device)
    # Smaller first chunks let the GPU start while the host copies the next ones' input.
    # Page-locked input (the gRPC server's) is uploaded as it lies, with no such copy, and
    # every chunk costs host work of its own: its chunks are all full-size, and larger.
    all_locked = len(page_locked) == len(_UPLOADED_FIELDS)
    default_cells = _PAGE_LOCKED_CHUNK_CELLS if all_locked else _DEFAULT_CHUNK_CELLS
    device_ids, (spread_cells,) = plan_spread(device_ids, (chunk_cells or default_cells, int(batches.n_cells)))
    chunks = split_work(batches, chunk_bytes or _DEFAULT_CHUNK_BYTES, chunk_cells or spread_cells,
                        first_smaller=not all_locked)
    spread(device_ids, chunks, lambda device, share: _runner(device).run(batches, share, page_locked, out,
                                                                         bool(use_double), cancelled))


def kernel_seconds(batches: Any, *, use_double: bool = False, repeats: int = 5,
                   per_launch: bool = False) -> list[Any]:
    """Benchmark helper: seconds of the kernels alone (input already on the device), per repeat;
    with ``per_launch``, per repeat a list of (kernel, items, grid, seconds) for each launch."""
    return _runner().kernel_seconds(batches, use_double=use_double, repeats=repeats,
                                    per_launch=per_launch)
