"""AlgorithmKernel: one algorithm on the chosen backend, as the batcher runs it."""
from __future__ import annotations

import contextlib
import threading
from typing import Any

import numpy as np

from ..plugin.cancel import CancelCheck, SliceSizer, run_in_slices
from ._algorithm import Algorithm
from ._config import DEFAULT_MAX_REQUEST_CELLS


class AlgorithmKernel:
    """One algorithm (see _algorithms.Algorithm) on the chosen backend: what the batcher runs.
    Its batching key is the request's parameters, so requests coalesce only when they are
    equal (float and double Pair-HMM, X-drop with different X, ... never mix)."""

    # Starting CPU threads costs more than a small submission's work, so small submissions use
    # fewer threads: at least this many cells per thread.
    MIN_CELLS_PER_THREAD = 1_000_000
    # A CPU submission runs in slices of pairs and stops between two slices once all its
    # callers are gone, so a slice must take well under 100 ms; but each slice costs a parallel
    # region's start and end, which on a loaded machine waits for descheduled threads. So
    # slices are sized from the rate the kernel just ran at, to take about SLICE_TARGET_S
    # (SliceSizer), starting from SLICE_CELLS_PER_THREAD per thread.
    SLICE_TARGET_S = 0.04
    SLICE_CELLS_PER_THREAD = 8_000_000
    MIN_SLICE_CELLS_PER_THREAD = 1_000_000

    def __init__(self, algorithm: Algorithm, backend: str, threads: int, slice_cells: int | None = None,
                 max_batch_cells: int | None = None) -> None:
        self.algorithm = algorithm
        self.name = algorithm.name
        self.backend = backend
        self.threads = threads
        # This kernel's own cap on a coalesced submission (None: the batcher's): a family left on
        # the CPU by a GPU server keeps the CPU's cap without lowering the GPU families' cap.
        self.max_batch_cells = max_batch_cells
        # A setting gives slices of that size; else they adapt (one sizer per kernel, so what
        # it learns of the rate carries over from one submission to the next).
        self.slice_cells: int | SliceSizer = slice_cells or SliceSizer(
            self.SLICE_CELLS_PER_THREAD * threads, self.SLICE_TARGET_S,
            self.MIN_SLICE_CELLS_PER_THREAD * threads, DEFAULT_MAX_REQUEST_CELLS)
        self.slices_run = 0  # CPU slices of sliced submissions (for tests and tools)
        self._slices_lock = threading.Lock()

    def merge(self, payloads: list[Any]) -> Any:
        return self.algorithm.merge(payloads)

    def run(self, payload: Any, key: Any, cancelled: CancelCheck | None = None,
            devices: list[int] | None = None) -> np.ndarray:
        """Result rows of a submission. ``cancelled`` (see warpdp.plugin.cancel) is checked
        between CPU slices and GPU chunks: JobCancelled once it returns True. ``devices``: the
        GPUs the batcher placed it on (the family's GPU launcher takes them as its default
        devices, warpdp.kernels.runtime.devices.use_devices; the CPU backend ignores them)."""
        if self.backend != "cpu":
            from ..kernels.runtime.devices import use_devices

            with use_devices(devices) if devices is not None else contextlib.nullcontext():
                return self.algorithm.run(payload, key, backend=self.backend, threads=self.threads,
                                          cancelled=cancelled)
        cells = self.algorithm.cells(payload, key)
        sizer = self.slice_cells
        if cells <= (sizer() if callable(sizer) else sizer):
            return self._run_cpu(payload, key, cells)
        # Slicing pairs changes no pair's result (each is scored on its own).
        run = lambda piece: self._run_cpu(piece, key, self.algorithm.cells(piece, key))  # noqa: E731
        if isinstance(sizer, SliceSizer):
            run = sizer.timed(run, lambda piece: self.algorithm.cells(piece, key))
        return run_in_slices(self.algorithm.slices(payload, key, sizer), run, self.algorithm.n_pairs(payload),
                             cancelled, self._count_slice)

    def _run_cpu(self, payload: Any, key: Any, cells: int) -> np.ndarray:
        threads = max(1, min(self.threads, cells // self.MIN_CELLS_PER_THREAD, self.algorithm.n_pairs(payload)))
        return self.algorithm.run(payload, key, backend="cpu", threads=threads)

    def _count_slice(self) -> None:
        with self._slices_lock:
            self.slices_run += 1

    def warmup(self, devices: list[int] | None = None) -> None:
        # Loads the backend (for the GPU, on each of the devices: its prebuilt fatbin, else an
        # NVRTC compile) before the first caller pays for it. One device at a time: a job as
        # small as a warm-up job given several devices runs on the first alone
        # (runtime.devices.plan_spread).
        placements = [[device] for device in devices] if devices and self.backend != "cpu" else [None]
        for placed in placements:
            for payload, key in self.algorithm.warmup_jobs():
                self.run(payload, key, devices=placed)

    def detail(self, workers: int, devices: int = 1) -> str:
        if self.backend == "cpu":
            return f"CPU {self.algorithm.cpu_isas()[-1]}, {self.threads} thread(s) x {workers} worker(s)"
        if devices > 1:
            return f"GPU x {devices}, {workers} worker(s) per GPU{self._kernel_source()}"
        return f"GPU, {workers} worker(s){self._kernel_source()}"

    def _kernel_source(self) -> str:
        """Where the warmed-up GPU modules came from (module_cache.routes), for ServerInfo."""
        from ..kernels.runtime.module_cache import routes

        found = sorted({route for (_, family), route in routes().items() if family == self.algorithm.name})
        return f", kernels: {'/'.join(found)}" if found else ""
