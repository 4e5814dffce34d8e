"""The warpdp gRPC server (`warpdp serve`): packed-batch RPCs with dynamic batching across callers.

Request path: a coroutine on the gRPC server's event loop (grpc.aio) decodes and validates a
request (INVALID_ARGUMENT / RESOURCE_EXHAUSTED are answered there, so a bad request never
reaches the backend), then queues it in the :class:`Batcher`. Batcher worker threads take
queued requests of the same kind, concatenate them into one backend submission (batches are
independent, so the results are split back by pair counts) and wake the loop once to resolve
each caller's future with exactly its own results. A call that is cancelled or passes its
deadline while queued is removed from the queue.
"""
from __future__ import annotations

import asyncio
import collections
import hmac
import logging
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple, Protocol

import grpc
import numpy as np
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ..kernels.chunk_slot import pinned_empty, register_read_only
from ..plugin.backend import MAX_THREADS, choose_backend, cpu_name, resolve_threads
from ..plugin.cancel import CancelCheck, JobCancelled, SliceSizer, run_in_slices
from . import _shm_server, warpdp_pb2, warpdp_pb2_grpc
from ._admission import AdmissionRefused, MemoryBudget, Reservation, default_memory_budget, receive_bytes, request_cost
from ._algorithms import ALGORITHMS, SEEDEXT, XDROP, Algorithm, InvalidRequest, Job, PAIRHMM

logger = logging.getLogger("warpdp.grpc")

SERVICE_NAME: str = warpdp_pb2.DESCRIPTOR.services_by_name["Warpdp"].full_name  # "warpdp.v1.Warpdp"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 50051
DEFAULT_MAX_WAIT_MS = 2.0
# A submission stops growing here. Also the chunk size clients stream large jobs in. The
# GPU needs much larger submissions than the CPU to amortise its per-launch costs.
DEFAULT_MAX_BATCH_CELLS = {"cpu": 256_000_000, "gpu": 2_000_000_000}
# Also the size of a large job's chunks on a GPU server (the client's shared-file path): the
# GPU scores 8e9 cells in a few milliseconds, and each chunk costs the server host work.
DEFAULT_MAX_REQUEST_CELLS = 8_000_000_000
# The GPU runs up to three submissions at once, but only large ones (a quarter of the
# submission cap or more) overlap: their host work then hides behind the GPU work of the ones
# before (a large job's chunks keep the Pair-HMM launcher's three slots busy). Small requests
# wait for the running submission and batch, as with one worker: a submission of their own
# would cost more than it overlaps (measured, BENCHMARKS.md).
DEFAULT_WORKERS = {"cpu": 1, "gpu": 3}
GPU_OVERLAP_SHARE = 4
DEFAULT_MAX_MESSAGE_MB = 64.0
DEFAULT_HANDLER_THREADS = 128
# Requests this large (or in shared files) are decoded off the event loop, in the blocking pool.
_DECODE_OFF_LOOP_BYTES = 1 << 20
# A GPU server that fails this many times in a row to page-lock a shared file's mapping (one
# failure may be a client's file shrinking meanwhile) reads shared files from then on.
_MAP_FAILURES_BEFORE_READING = 3
DEFAULT_GRACE_S = 30.0
# The HTTP/2 flow-control window of each call: what gRPC receives of a message before the
# handler reads it. Large enough not to throttle a large message across a network.
_STREAM_WINDOW_BYTES = 1 << 20
# How long a request waits for room in the memory budget (at most its deadline) before it
# gets RESOURCE_EXHAUSTED.
DEFAULT_ADMISSION_WAIT_S = 2.0
# Once the last call in flight has ended at shutdown, how long its reply may take to go out.
_REPLY_FLUSH_S = 1.0
# After a second SIGTERM/SIGINT, how long cancelling the calls may take before the process exits.
_FORCE_STOP_S = 1.0
# Health checks stay open without a token, so load balancers and probes need no secret.
_AUTH_EXEMPT_PREFIXES = ("/grpc.health.v1.Health/",)


@dataclass
class ServerConfig:
    """Settings of one server; `warpdp serve` options map onto these one to one."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT                       # 0 = pick a free port (see Server.port)
    backend: str = "auto"                          # "auto" | "cpu" | "gpu"
    workers: int | None = None                     # backend submissions running at once (default: by backend)
    threads: int | None = None                     # CPU threads per worker (default: cores / workers)
    batching: bool = True                          # coalesce concurrent requests
    max_wait_ms: float = DEFAULT_MAX_WAIT_MS       # longest a request waits for others to join it
    max_batch_cells: int | None = None             # submission cap in cells (default: by backend)
    # CPU submissions run in slices of pairs of about this many cells, and stop between slices
    # once their callers are gone (default: sized to take about 40 ms each, see AlgorithmKernel).
    cpu_slice_cells: int | None = None
    max_request_cells: int = DEFAULT_MAX_REQUEST_CELLS  # per request message
    max_message_mb: float = DEFAULT_MAX_MESSAGE_MB      # request (and reply) message size limit
    tls_cert: str | Path | None = None             # PEM certificate chain
    tls_key: str | Path | None = None              # PEM private key
    tokens: Sequence[str] = ()                     # accepted bearer tokens; empty = no token needed
    metrics_port: int | None = None                # Prometheus /metrics on host:port (0 = free port)
    log_every: int = 1000                          # one summary log line per N requests (0 = never)
    handler_threads: int = DEFAULT_HANDLER_THREADS  # threads reading shared files, decoding large requests
    grace_s: float = DEFAULT_GRACE_S               # how long shutdown waits for in-flight calls
    # Bytes of memory the requests being handled may hold, from before their messages are read
    # until they are answered (see _admission); None: half the available memory, 1..32 GiB.
    memory_budget: int | None = None
    admission_wait_s: float = DEFAULT_ADMISSION_WAIT_S  # longest wait for room in the budget
    warmup: bool = True                            # one tiny submission before serving
    # Whether same-host clients may hand requests' arrays over in shared memory (SharedFile).
    shared_files: bool = True

    @property
    def max_message_bytes(self) -> int:
        return int(self.max_message_mb * 1024 * 1024)

    def memory_budget_bytes(self) -> int:
        """The memory budget: as set, or the default (never below one message being received)."""
        if self.memory_budget is not None:
            return self.memory_budget
        return max(default_memory_budget(), receive_bytes(self.max_message_bytes))

    def check(self) -> None:
        """Raise ValueError naming the setting when one is out of range."""
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be within 0..65535, not {self.port}")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"metrics_port must be within 0..65535, not {self.metrics_port}")
        for name in ("workers", "handler_threads", "max_batch_cells", "max_request_cells", "cpu_slice_cells"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        for name in ("threads", "workers"):  # each a thread (pool) started up front
            if getattr(self, name) is not None and not 1 <= getattr(self, name) <= MAX_THREADS:
                raise ValueError(f"{name} must be within 1..{MAX_THREADS}, not {getattr(self, name)}")
        if not (self.max_wait_ms >= 0 and math.isfinite(self.max_wait_ms)):
            raise ValueError(f"max_wait_ms must be a finite number >= 0, not {self.max_wait_ms}")
        if not 0 < self.max_message_mb <= 2047:
            raise ValueError(f"max_message_mb must be within (0, 2047] (gRPC's 2 GiB limit), not {self.max_message_mb}")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("TLS needs both a certificate and a key (--tls-cert and --tls-key)")
        if self.log_every < 0:
            raise ValueError(f"log_every must be >= 0, not {self.log_every}")
        if self.grace_s < 0:
            raise ValueError(f"grace_s must be >= 0, not {self.grace_s}")
        if not (self.admission_wait_s >= 0 and math.isfinite(self.admission_wait_s)):
            raise ValueError(f"admission_wait_s must be a finite number >= 0, not {self.admission_wait_s}")
        if self.memory_budget is not None and self.memory_budget < receive_bytes(self.max_message_bytes):
            raise ValueError(f"memory_budget must hold at least one request being received: "
                             f"{receive_bytes(self.max_message_bytes)} bytes for the message limit of "
                             f"{self.max_message_bytes} bytes, not {self.memory_budget}")
        if any(not t or any(c.isspace() for c in t) for t in self.tokens):
            raise ValueError("tokens must be non-empty and contain no white space")


def read_token_file(path: str | Path) -> tuple[str, ...]:
    """Accepted bearer tokens: one per line; blank lines and '#' comments are ignored.

    Several lines let a token be rotated without a restart window.
    """
    text = Path(path).read_text()
    tokens = tuple(line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    if not tokens:
        raise ValueError(f"token file {path} holds no token")
    return tokens


# ---------------------------------------------------------------------------------------
# Metrics


class KernelMetrics(NamedTuple):
    """The labelled metrics of one algorithm on one backend (see Metrics.for_kernel)."""

    compute: Any
    queue_wait: Any
    batch_requests: Any
    batch_cells: Any
    cells: Any
    pairs: Any


class Metrics:
    """Prometheus metrics of one server (own registry, so several servers can share a process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("warpdp_requests", "RPCs finished, by method and status code",
                                ["method", "code"], registry=r)
        self.latency = Histogram("warpdp_request_seconds", "RPC latency inside the server", ["method"],
                                 buckets=(.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30, 60),
                                 registry=r)
        self.queue_wait = Histogram("warpdp_queue_wait_seconds",
                                    "Time a request waited before its backend submission started", ["algorithm"],
                                    buckets=(.0001, .0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 5),
                                    registry=r)
        self.batch_requests = Histogram("warpdp_batch_requests", "Requests coalesced into one backend submission",
                                        ["algorithm"], buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 1024), registry=r)
        self.batch_cells = Histogram("warpdp_batch_cells", "DP cells of one backend submission", ["algorithm"],
                                     buckets=tuple(float(4 ** k) for k in range(6, 17)), registry=r)
        self.compute = Histogram("warpdp_compute_seconds", "Duration of one backend submission",
                                 ["algorithm", "backend"],
                                 buckets=(.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30),
                                 registry=r)
        self.cells = Counter("warpdp_cells", "DP cells computed", ["algorithm"], registry=r)
        self.pairs = Counter("warpdp_pairs", "Pairs scored", ["algorithm"], registry=r)
        self.dropped = Counter("warpdp_dropped_requests",
                               "Queued requests dropped before reaching the backend (client gone)",
                               ["reason"], registry=r)
        self.stopped = Counter("warpdp_stopped_submissions",
                               "Running backend submissions stopped between slices or chunks (all callers gone)",
                               ["reason"], registry=r)
        self.queue_depth = Gauge("warpdp_queue_depth", "Requests waiting for a backend submission", registry=r)
        self.admission_refused = Counter("warpdp_admission_refused",
                                         "Requests refused for want of room in the memory budget "
                                         "(too_large: larger than the budget; busy: waited too long)",
                                         ["reason"], registry=r)
        self.memory_budget = Gauge("warpdp_memory_budget_bytes", "The memory budget of requests", registry=r)
        self.memory_reserved = Gauge("warpdp_memory_reserved_bytes",
                                     "Bytes of the memory budget held by requests in progress", registry=r)
        self.in_flight = Gauge("warpdp_in_flight_requests", "RPCs being handled", registry=r)
        # Labelled children, looked up once: labels() takes a lock and builds a key per call,
        # which adds up when every request updates several metrics.
        self._kernels: dict[tuple[str, str], KernelMetrics] = {}
        self._finished: dict[tuple[str, str], Any] = {}
        self._latencies: dict[str, Any] = {}

    def for_kernel(self, algorithm: str, backend: str) -> KernelMetrics:
        """The metrics a backend submission of one algorithm updates."""
        found = self._kernels.get((algorithm, backend))
        if found is None:  # a race here only looks the same children up twice
            found = self._kernels[algorithm, backend] = KernelMetrics(
                compute=self.compute.labels(algorithm, backend), queue_wait=self.queue_wait.labels(algorithm),
                batch_requests=self.batch_requests.labels(algorithm), batch_cells=self.batch_cells.labels(algorithm),
                cells=self.cells.labels(algorithm), pairs=self.pairs.labels(algorithm))
        return found

    def finished(self, method: str, code: str, latency: float | None = None) -> None:
        """Count one finished RPC (and observe its latency, when given)."""
        counter = self._finished.get((method, code))
        if counter is None:
            counter = self._finished[method, code] = self.requests.labels(method, code)
        counter.inc()
        if latency is not None:
            histogram = self._latencies.get(method)
            if histogram is None:
                histogram = self._latencies[method] = self.latency.labels(method)
            histogram.observe(latency)

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        """Current value of one sample (0 when absent); for tests and logs."""
        value = self.registry.get_sample_value(name, labels or {})
        return 0.0 if value is None else value


# ---------------------------------------------------------------------------------------
# Dynamic batching


class Kernel(Protocol):
    """What the batcher needs from an algorithm (AlgorithmKernel for Pair-HMM, X-drop and seed
    extension); `run` returns one output row per item, in order."""

    name: str
    backend: str

    def merge(self, payloads: list[Any]) -> Any: ...

    def run(self, payload: Any, key: Any, cancelled: CancelCheck | None = None) -> np.ndarray: ...


class AlgorithmKernel:
    """One algorithm (see _algorithms.Algorithm) on the chosen backend: what the batcher runs.
    Its batching key is the request's parameters, so requests coalesce only when they are
    equal (float and double Pair-HMM, X-drop with different X, ... never mix)."""

    # Starting CPU threads costs more than a small submission's work (up to ~0.5 ms on a busy
    # machine), so small submissions use fewer threads: at least this many cells per thread.
    MIN_CELLS_PER_THREAD = 1_000_000
    # A CPU submission runs in slices of pairs and stops between two slices once all its
    # callers are gone, so a slice must take well under 100 ms; but each slice costs a parallel
    # region's start and end, which on a loaded machine waits for descheduled threads. So
    # slices are sized from the rate the kernel just ran at, to take about SLICE_TARGET_S
    # (SliceSizer), starting from SLICE_CELLS_PER_THREAD per thread.
    SLICE_TARGET_S = 0.04
    SLICE_CELLS_PER_THREAD = 8_000_000
    MIN_SLICE_CELLS_PER_THREAD = 1_000_000

    def __init__(self, algorithm: Algorithm, backend: str, threads: int, slice_cells: int | None = None) -> None:
        self.algorithm = algorithm
        self.name = algorithm.name
        self.backend = backend
        self.threads = threads
        # A setting gives slices of that size; else they adapt (one sizer per kernel, so what
        # it learns of the rate carries over from one submission to the next).
        self.slice_cells: int | SliceSizer = slice_cells or SliceSizer(
            self.SLICE_CELLS_PER_THREAD * threads, self.SLICE_TARGET_S,
            self.MIN_SLICE_CELLS_PER_THREAD * threads, DEFAULT_MAX_REQUEST_CELLS)
        self.slices_run = 0  # CPU slices of sliced submissions (for tests and tools)
        self._slices_lock = threading.Lock()

    def merge(self, payloads: list[Any]) -> Any:
        return self.algorithm.merge(payloads)

    def run(self, payload: Any, key: Any, cancelled: CancelCheck | None = None) -> np.ndarray:
        """Result rows of a submission. ``cancelled`` (see warpdp.plugin.cancel) is checked
        between CPU slices and GPU chunks: JobCancelled once it returns True."""
        if self.backend != "cpu":
            return self.algorithm.run(payload, key, backend=self.backend, threads=self.threads, cancelled=cancelled)
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

    def warmup(self) -> None:
        # Compiles/loads the backend (NVRTC for the GPU) before the first caller pays for it.
        for payload, key in self.algorithm.warmup_jobs():
            self.run(payload, key)

    def detail(self, workers: int) -> str:
        if self.backend == "cpu":
            return f"CPU {self.algorithm.cpu_isas()[-1]}, {self.threads} thread(s) x {workers} worker(s)"
        return f"GPU, {workers} worker(s)"


_QUEUED, _RUNNING, _DONE, _FAILED, _DROPPED = range(5)


class _Latch:
    """A one-shot signal with threading.Event's wait/set/is_set: set once by the batcher,
    waited on by callers that block (tools and tests; the server awaits ``WorkItem.waiter``).

    A bare lock held until set, so a wait is one lock acquisition, where an Event builds a
    Condition and a waiter lock; that difference counts at thousands of requests per second.
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()

    def set(self) -> None:
        # Called exactly once per item: it leaves the queue (taken, dropped or failed) once.
        self._lock.release()

    def is_set(self) -> bool:
        return not self._lock.locked()

    def wait(self, timeout: float | None = None) -> bool:
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self._lock.release()  # stays set for later waits
        return True


class WorkItem:
    """One request in the batcher; `event` is set once the request is done, failed or dropped,
    and then the batcher's `notify` hook gets it (the server resolves `waiter` there)."""

    __slots__ = ("kernel", "key", "payload", "cells", "n_out", "deadline", "enqueued", "state", "result",
                 "error", "event", "queue_s", "compute_s", "coalesced", "submission_cells", "drop_reason", "waiter",
                 "streamed", "deliver", "delivered", "cancelled")

    def __init__(self, kernel: Kernel, key: Any, payload: Any, cells: int, n_out: int, deadline: float | None,
                 waiter: Any = None, streamed: bool = False,
                 deliver: Callable[[np.ndarray], bool] | None = None) -> None:
        self.kernel, self.key, self.payload = kernel, key, payload
        self.cells, self.n_out, self.deadline = cells, n_out, deadline
        self.enqueued = time.monotonic()
        self.state = _QUEUED
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None
        self.event = _Latch()
        self.queue_s = self.compute_s = 0.0
        self.coalesced = 0
        self.submission_cells = 0
        self.drop_reason = ""
        self.waiter = waiter  # what the batcher's `notify` hook wakes (the server: an asyncio future)
        # A chunk of a streamed job (or a shared file's request): already sized for a submission
        # of its own, so it is not coalesced (that would copy it) and may start while another
        # submission runs.
        self.streamed = streamed
        # Run by the worker with the results before the caller is woken; True when it passed
        # them on itself (the server: written into the request's shared file).
        self.deliver = deliver
        self.delivered = False
        # Set when the caller goes while the item runs: a submission whose items are all
        # cancelled (or past their deadlines) stops at its next slice or chunk.
        self.cancelled = False


class BatcherClosed(RuntimeError):
    """The server is shutting down and takes no more work."""


class Batcher:
    """Coalesces queued requests of the same kernel and key into backend submissions.

    A worker that is free takes the oldest request; while other requests are arriving (being
    received and decoded by the server's handlers, see :meth:`arrive`) it waits for them until the
    oldest request has been queued for ``max_wait_s`` or the queue holds ``max_batch_cells``,
    then submits the oldest requests of the same kind up to ``max_batch_cells``. Nobody
    arriving means nobody to wait for, so a lone caller is not delayed. Under load requests
    queue while the workers compute, so a free worker finds a full batch at once. With
    ``batching=False`` every request is its own submission.

    With several workers, ``overlap_cells`` > 0 lets a worker start while another submission
    runs only once at least that many cells are queued. The GPU server uses this: a large
    job's chunks overlap (one's host work hides behind the other's GPU work), while small
    requests wait and join the next batch instead of paying for a submission of their own.
    A chunk of a streamed job (``submit(..., streamed=True)``) is already sized for a
    submission: it is never coalesced and never waits for others.
    """

    def __init__(self, *, workers: int = 1, batching: bool = True, max_wait_s: float = 0.002,
                 max_batch_cells: int = DEFAULT_MAX_BATCH_CELLS["cpu"], overlap_cells: int = 0,
                 metrics: Metrics | None = None,
                 notify: Callable[[list[WorkItem]], None] | None = None) -> None:
        self._notify = notify    # called with items once they are done, failed or dropped
        self._batching = batching
        self._max_wait = max_wait_s
        self._max_cells = max_batch_cells
        self._overlap_cells = overlap_cells
        self._metrics = metrics or Metrics()
        self._lock = threading.Lock()
        # Workers sleep on _work and are woken only when what they wait for may have changed
        # (_wake_worker_locked): waking them for every request would cost a thread switch per
        # request. wait_for() callers sleep on _changed, notified at every state change.
        self._work = threading.Condition(self._lock)
        self._changed = threading.Condition(self._lock)
        self._sleeping = 0       # workers waiting on _work
        self._observers = 0      # wait_for() callers waiting on _changed
        self._queue: collections.deque[WorkItem] = collections.deque()
        self._queued_cells = 0
        self._running = 0
        self._arriving = 0       # requests received but not yet queued
        self._draining = False   # shutting down: submit what is queued without waiting
        self._closed = False     # no more submissions accepted
        self._stopping = False   # workers exit
        # Counters for logs and tests (the metrics carry the same under other names).
        self.submissions = 0
        self.completed = 0
        self.dropped = 0
        self.stopped = 0  # running submissions stopped early (all their callers gone)
        # Read when scraped, instead of set at every change (twice per request).
        self._metrics.queue_depth.set_function(lambda: len(self._queue))
        self._threads = [threading.Thread(target=self._loop, name=f"warpdp-batcher-{i}", daemon=True)
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()

    # -- called by the server's handlers (any thread) --

    def arrive(self) -> None:
        """A request is being received; pair with submit(..., arrived=True) or depart()."""
        with self._lock:
            self._arriving += 1

    def depart(self) -> None:
        """An arriving request will not be submitted (it was invalid)."""
        with self._lock:
            self._arriving -= 1
            if self._arriving == 0 and self._queue:
                self._wake_worker_locked()  # nobody left to wait for
            self._changed_locked()

    def submit(self, kernel: Kernel, key: Any, payload: Any, *, cells: int, n_out: int,
               deadline: float | None = None, arrived: bool = False, waiter: Any = None,
               streamed: bool = False, deliver: Callable[[np.ndarray], bool] | None = None) -> WorkItem:
        item = WorkItem(kernel, key, payload, cells, n_out, deadline, waiter, streamed, deliver)
        with self._lock:
            if arrived:
                self._arriving -= 1
            if self._closed:
                self._changed_locked()
                raise BatcherClosed("the server is shutting down")
            was_empty = not self._queue
            self._queue.append(item)
            self._queued_cells += cells
            # What a sleeping worker waits for: a request at all, then (batching) for nobody
            # to be arriving or the queue to be full, and (overlap_cells) for a running
            # submission to end or enough cells to overlap it. Anything else leaves its
            # decision as is, and waking it would only cost a thread switch.
            if self._running and self._queued_cells < self._overlap_cells and not streamed:
                pass  # the running submission's worker takes it next
            elif (streamed or was_empty or self._arriving == 0 or self._queued_cells >= self._max_cells
                    or (self._running and self._queued_cells - cells < self._overlap_cells)):
                self._wake_worker_locked()
            self._changed_locked()
        return item

    def cancel(self, item: WorkItem, reason: str = "cancelled") -> bool:
        """Drop a queued item (its caller is gone); True if it never reached the backend. A
        running item is marked cancelled: its submission stops at the next slice or chunk
        once all its items are cancelled or expired."""
        # Once out of the queue an item never returns to it, so the usual case (the call
        # ended after its request ran) needs no lock.
        if item.state != _QUEUED:
            item.cancelled = item.state == _RUNNING
            return item.state == _DROPPED
        with self._lock:
            if item.state != _QUEUED:
                item.cancelled = item.state == _RUNNING
                return item.state == _DROPPED
            self._queue.remove(item)
            self._drop_locked(item, reason)
        return True

    # -- lifecycle --

    def drain(self) -> None:
        """Stop waiting for requests to join batches: submit whatever is queued now."""
        with self._lock:
            self._draining = True
            self._work.notify_all()
            self._changed_locked()

    def close(self, timeout: float | None = None) -> None:
        """Refuse new work, fail what is still queued, let running submissions finish."""
        with self._lock:
            self._closed = self._draining = self._stopping = True
            leftovers = list(self._queue)
            self._queue.clear()
            self._queued_cells = 0
            for item in leftovers:
                item.state, item.error = _FAILED, BatcherClosed("the server shut down before this request ran")
                item.event.set()
            if leftovers and self._notify is not None:
                self._notify(leftovers)
            self._work.notify_all()
            self._changed_locked()
        for thread in self._threads:
            thread.join(timeout)

    def wait_for(self, predicate: Callable[[Batcher], bool], timeout: float | None = None) -> bool:
        """Block until predicate(self) holds (checked at every state change); for tests and tools."""
        with self._lock:
            self._observers += 1
            try:
                return self._changed.wait_for(lambda: predicate(self), timeout)
            finally:
                self._observers -= 1

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def running(self) -> int:
        return self._running

    # -- workers --

    def _wake_worker_locked(self) -> None:
        # One is enough: sleeping workers all decide alike, and a worker that takes a batch
        # and leaves requests queued wakes the next (_take_locked).
        if self._sleeping:
            self._work.notify()

    def _changed_locked(self) -> None:
        if self._observers:
            self._changed.notify_all()

    def _sleep_locked(self, timeout: float | None) -> None:
        self._sleeping += 1
        try:
            self._work.wait(timeout)
        finally:
            self._sleeping -= 1

    def _drop_locked(self, item: WorkItem, reason: str) -> None:
        self._queued_cells -= item.cells
        item.state, item.drop_reason = _DROPPED, reason
        self.dropped += 1
        self._metrics.dropped.labels(reason).inc()
        item.event.set()
        if self._notify is not None:
            self._notify([item])
        self._changed_locked()

    def _loop(self) -> None:
        while True:
            with self._lock:
                items = self._next_batch_locked()
                if items is None:
                    return
                self._running += 1
                self._changed_locked()
            try:
                self._run(items)
            finally:
                with self._lock:
                    self._running -= 1  # this worker takes what is queued next itself
                    self._changed_locked()

    def _next_batch_locked(self) -> list[WorkItem] | None:
        while True:
            if self._stopping:
                return None
            if not self._queue:
                self._sleep_locked(None)
                continue
            first = self._queue[0]
            now = time.monotonic()
            if first.deadline is not None and first.deadline <= now:
                self._queue.popleft()
                self._drop_locked(first, "deadline")
                continue
            if (self._running and self._queued_cells < self._overlap_cells and not first.streamed
                    and not self._draining):
                self._sleep_locked(None)  # woken when a submission ends or enough is queued
                continue
            if (self._batching and not self._draining and self._arriving > 0 and not first.streamed
                    and self._queued_cells < self._max_cells):
                remaining = first.enqueued + self._max_wait - now
                if remaining > 0:
                    self._sleep_locked(remaining)
                    continue  # re-check: an arrival, a cancellation, or the wait is over
            return self._take_locked()

    def _take_locked(self) -> list[WorkItem]:
        first = self._queue.popleft()
        taken, cells = [first], first.cells
        if self._batching and self._queue and not first.streamed:
            keep: collections.deque[WorkItem] = collections.deque()
            now = time.monotonic()
            kernel, key, max_cells = first.kernel, first.key, self._max_cells
            for item in self._queue:
                if item.deadline is not None and item.deadline <= now:
                    self._drop_locked(item, "deadline")
                elif (item.kernel is kernel and item.key == key and cells + item.cells <= max_cells
                        and not item.streamed):
                    taken.append(item)
                    cells += item.cells
                else:
                    keep.append(item)  # another kind, or over the cap: stays queued in order
            self._queue = keep
        self._queued_cells -= cells
        start = time.monotonic()
        for item in taken:
            item.state = _RUNNING
            item.queue_s = start - item.enqueued
        self.submissions += 1
        if self._queue:
            self._wake_worker_locked()  # what is left is another worker's to take
        return taken

    @staticmethod
    def _unwanted(items: list[WorkItem]) -> bool:
        """Whether every caller of a submission is gone (cancelled, or past its deadline)."""
        now = time.monotonic()
        return all(it.cancelled or (it.deadline is not None and it.deadline <= now) for it in items)

    def _run(self, items: list[WorkItem]) -> None:
        kernel, key = items[0].kernel, items[0].key
        start = time.monotonic()
        try:
            payload = items[0].payload if len(items) == 1 else kernel.merge([it.payload for it in items])
            out = kernel.run(payload, key, lambda: self._unwanted(items))
            expected = sum(it.n_out for it in items)
            if len(out) != expected:
                raise RuntimeError(f"{kernel.name} backend returned {len(out)} results for {expected} items")
        except JobCancelled:
            self._stop(items)
            return
        except Exception as exc:
            if len(items) > 1:
                # Requests are validated one by one before they are queued, so this should not
                # happen; if it does, no request may fail because of another: run them alone.
                logger.warning("a coalesced %s submission of %d requests failed (%s: %s); running them one by one",
                               kernel.name, len(items), type(exc).__name__, exc)
                for item in items:
                    self._run([item])
                return
            logger.exception("%s submission failed", kernel.name)
            self._finish(items, None, exc, start, time.monotonic())
            return
        self._finish(items, out, None, start, time.monotonic())

    def _stop(self, items: list[WorkItem]) -> None:
        """A submission stopped early because all its callers had gone: nobody gets results."""
        now = time.monotonic()
        expired = all(it.deadline is not None and it.deadline <= now for it in items)
        reason = "deadline" if expired else "cancelled"
        self._metrics.stopped.labels(reason).inc()
        for item in items:
            item.state, item.drop_reason = _DROPPED, reason
            item.payload = None
        with self._lock:
            self.stopped += 1
            self._changed_locked()
        for item in items:
            item.event.set()
        if self._notify is not None:
            self._notify(items)

    def _finish(self, items: list[WorkItem], out: np.ndarray | None, error: BaseException | None,
                start: float, end: float) -> None:
        cells = sum(it.cells for it in items)
        kernel = items[0].kernel
        m = self._metrics.for_kernel(kernel.name, kernel.backend)
        m.compute.observe(end - start)
        m.batch_requests.observe(len(items))
        m.batch_cells.observe(cells)
        if out is not None:
            m.cells.inc(cells)
            m.pairs.inc(len(out))
        queue_wait = m.queue_wait
        compute_s, coalesced = end - start, len(items)
        position = 0
        for item in items:
            queue_wait.observe(item.queue_s)
            item.compute_s, item.coalesced, item.submission_cells = compute_s, coalesced, cells
            if out is not None:
                item.result = out[position:position + item.n_out]
                position += item.n_out
                item.state = _DONE
            else:
                item.state, item.error = _FAILED, error
            item.payload = None  # the request's arrays are no longer needed
            if item.deliver is not None and item.result is not None:
                item.delivered = self._deliver(item)
        with self._lock:
            self.completed += len(items)
            self._changed_locked()
        for item in items:
            item.event.set()
        if self._notify is not None:
            self._notify(items)

    @staticmethod
    def _deliver(item: WorkItem) -> bool:
        try:
            return bool(item.deliver(item.result))  # type: ignore[misc]
        except Exception:  # the caller gets its results the usual way
            logger.exception("%s: passing results on failed", item.kernel.name)
            return False


# ---------------------------------------------------------------------------------------
# Service


def _page_locked_or_plain(nbytes: int) -> np.ndarray:
    """Memory for a GPU kernel's shared-file read: page-locked, or plain memory (slower to
    upload, as right) when CUDA cannot give more."""
    try:
        return pinned_empty(nbytes)
    except Exception as exc:  # CuPy's out-of-memory and CUDA errors have no common base
        logger.warning("no page-locked memory for a shared file of %d bytes (%s); using plain memory", nbytes, exc)
        return np.empty(nbytes, dtype=np.uint8)


class _StreamWork:
    """A stream's chunks in the batcher and not yet answered. ``over`` is set when the stream
    ends: its queued chunks are then cancelled, and a chunk queued afterwards (by a thread that
    was decoding it) is cancelled at once by that thread."""

    def __init__(self) -> None:
        self.items: set[WorkItem] = set()
        self.over = False


class _RpcFailure(Exception):
    """A status to answer with; raised inside handlers, turned into context.abort at the top."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _sized(parse: Callable[[bytes], Any]) -> Callable[[bytes], tuple[Any, int]]:
    """A request deserializer that also gives the message's size (ByteSize() would take
    milliseconds to compute it again on a large message). It never raises: grpc answers
    UNKNOWN when a deserializer does, so corrupt bytes come back as a _CorruptRequest, which
    the handler answers with INVALID_ARGUMENT."""
    def sized(data: bytes) -> tuple[Any, int]:
        try:
            return parse(data), len(data)
        except DecodeError as exc:
            return _CorruptRequest(f"{type(exc).__name__}: {exc}"), len(data)

    return sized


def _check_parsed(request: Any, method: str, prefix: str) -> None:
    if isinstance(request, _CorruptRequest):
        raise _RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{prefix}corrupt {method} request message ({request.error})")


def _failure_status(method: str, exc: Exception) -> tuple[grpc.StatusCode, str]:
    """The status answering an exception a handler did not expect to handle itself."""
    if isinstance(exc, AdmissionRefused):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc)
    if isinstance(exc, MemoryError):
        logger.warning("%s: out of memory (%s)", method, exc)
        return (grpc.StatusCode.RESOURCE_EXHAUSTED,
                "the server ran out of memory handling this request; retry later, or split it")
    logger.exception("%s failed", method)  # a bug: answer INTERNAL, keep serving
    return grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}"


class _CallStats:
    """Counts for the one-line log every N requests."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.lock = threading.Lock()
        self.reset(time.monotonic())

    def reset(self, now: float) -> None:
        self.since, self.count, self.errors, self.cells, self.latency_sum, self.latency_max = now, 0, 0, 0, 0.0, 0.0

    def add(self, ok: bool, cells: int, latency: float, batcher: Batcher) -> None:
        if self.every <= 0:
            return
        with self.lock:
            self.count += 1
            self.errors += not ok
            self.cells += cells
            self.latency_sum += latency
            self.latency_max = max(self.latency_max, latency)
            if self.count < self.every:
                return
            now = time.monotonic()
            span = max(now - self.since, 1e-9)
            logger.info("%d requests in %.1f s (%d errors): %.1f req/s, %.2f GCUPS, latency mean %.1f ms max %.1f ms; "
                        "%d submissions so far, %d queued, %d dropped",
                        self.count, span, self.errors, self.count / span, self.cells / span / 1e9,
                        1e3 * self.latency_sum / self.count, 1e3 * self.latency_max,
                        batcher.submissions, batcher.queued, batcher.dropped)
            self.reset(now)


class WarpdpServicer(warpdp_pb2_grpc.WarpdpServicer):
    """The warpdp.v1 RPCs, served by a grpc.aio server: handlers are coroutines on one event
    loop. Each algorithm's unary and stream RPC go through the same two handlers
    (:meth:`_unary`, :meth:`_stream`), driven by its AlgorithmKernel.

    Why asyncio: with gRPC's thread-per-call server every request cost a thread hand-off on
    the way in and a wake-up of its own on the way out, all under one interpreter lock, which
    capped batching near 1,800 requests/s on the GPU. Here the batcher wakes the loop once per
    submission (:meth:`resolve`), and all of a call's Python work runs on the loop's thread.
    """

    def __init__(self, *, batcher: Batcher, kernels: Sequence[AlgorithmKernel], config: ServerConfig,
                 metrics: Metrics, info: warpdp_pb2.ServerInfoReply, workers: int = 1,
                 blocking_pool: ThreadPoolExecutor | None = None, budget: MemoryBudget | None = None,
                 shared_memory: _shm_server.Registry | None = None) -> None:
        self._batcher = batcher
        self._kernels = {kernel.name: kernel for kernel in kernels}
        self._config = config
        self._metrics = metrics
        self._info = info
        self._stats = _CallStats(config.log_every)
        # Chunks of one stream queued and not yet answered: enough for every worker to have one
        # running and one queued, with more being read and answered meanwhile.
        self._stream_window = 2 * workers + 2
        # Memfds that same-host clients registered (None: shared memory is off).
        self._shared_memory = shared_memory
        # A GPU server's page-locked mappings of them, kept from request to request.
        self._mapped_files: _shm_server.MappedFiles | None = None
        if shared_memory is not None and any(k.backend == "gpu" for k in kernels):
            self._mapped_files = _shm_server.MappedFiles(register_read_only, alive=shared_memory.is_registered)
            shared_memory.on_forget = self._mapped_files.forget
        self._map_failures = 0  # in a row
        # Reading shared files and decoding large requests block: they run here, off the loop.
        self._blocking_pool = blocking_pool
        self.active = 0         # scoring calls being handled (changed on the loop's thread only)
        self._budget = budget or MemoryBudget(config.memory_budget_bytes(), metrics, blocking_pool)
        self._receive_bytes = receive_bytes(config.max_message_bytes)
        self.stopping = False   # shutting down: new scoring calls are refused

    def close(self) -> None:
        """Drop the shared files' mappings (once the last requests using them are done)."""
        if self._mapped_files is not None:
            self._mapped_files.close()

    @staticmethod
    def resolve(items: list[WorkItem]) -> None:
        """Wake the handlers of items the batcher is done with (on the loop's thread)."""
        for item in items:
            waiter = item.waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    # -- RPCs --

    async def ServerInfo(self, request: warpdp_pb2.ServerInfoRequest,
                         context: grpc.aio.ServicerContext) -> warpdp_pb2.ServerInfoReply:
        self._metrics.finished("ServerInfo", "OK")
        return self._info

    # The scoring methods read their messages themselves, once the memory budget has room
    # (see add_to_server): the unary ones get the call's (one-message) request iterator.

    async def PairHmm(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> warpdp_pb2.PairHmmReply:
        return await self._unary(self._kernels[PAIRHMM.name], context)

    async def PairHmmStream(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        async for reply in self._stream(self._kernels[PAIRHMM.name], context):
            yield reply

    async def Xdrop(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> warpdp_pb2.XdropReply:
        return await self._unary(self._kernels[XDROP.name], context)

    async def XdropStream(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        async for reply in self._stream(self._kernels[XDROP.name], context):
            yield reply

    async def SeedExtend(self, request_iterator: Any,
                         context: grpc.aio.ServicerContext) -> warpdp_pb2.SeedExtendReply:
        return await self._unary(self._kernels[SEEDEXT.name], context)

    async def SeedExtendStream(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        async for reply in self._stream(self._kernels[SEEDEXT.name], context):
            yield reply

    def add_to_server(self, server: grpc.aio.Server) -> None:
        """Register the service. Unlike warpdp_pb2_grpc.add_WarpdpServicer_to_server, the unary
        scoring methods are served as client streams (the same calls on the wire, where a
        client sends one message): gRPC reads a unary call's message before the handler
        starts, while a stream's handler reads it when it asks, after admission."""
        handlers = {"ServerInfo": grpc.unary_unary_rpc_method_handler(
            self.ServerInfo, request_deserializer=warpdp_pb2.ServerInfoRequest.FromString,
            response_serializer=warpdp_pb2.ServerInfoReply.SerializeToString)}
        for kernel in self._kernels.values():
            algorithm = kernel.algorithm
            request = algorithm.request_type
            reply = getattr(warpdp_pb2, request.__name__.replace("Request", "Reply"))
            # context.read() then gives (message, its size on the wire).
            handlers[algorithm.rpc] = grpc.stream_unary_rpc_method_handler(
                getattr(self, algorithm.rpc), request_deserializer=_sized(request.FromString),
                response_serializer=reply.SerializeToString)
            handlers[algorithm.rpc + "Stream"] = grpc.stream_stream_rpc_method_handler(
                getattr(self, algorithm.rpc + "Stream"), request_deserializer=_sized(request.FromString),
                response_serializer=reply.SerializeToString)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
        server.add_registered_method_handlers(SERVICE_NAME, handlers)

    # -- the two handlers every algorithm shares --

    async def _unary(self, kernel: AlgorithmKernel, context: grpc.aio.ServicerContext) -> Any:
        """A unary RPC, served as a client stream of one message: its message is read once the
        memory budget has room for it (see _admission)."""
        method = kernel.algorithm.rpc
        await self._refuse_when_stopping(method, context)
        start = time.monotonic()
        code, cells = grpc.StatusCode.OK, 0
        self.active += 1
        self._metrics.in_flight.inc()
        reservation = Reservation(self._budget)
        arriving = False
        try:
            await reservation.resize(self._receive_bytes, self._admission_wait(context), "a request being received")
            self._batcher.arrive()  # lets the batcher wait for this request instead of going without it
            arriving = True
            received = await context.read()
            if received is grpc.aio.EOF:
                raise _RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"invalid {method} call: no request message")
            request, nbytes = received
            _check_parsed(request, method, "")
            await reservation.resize(request_cost(kernel.algorithm, request, nbytes, self._config.max_message_bytes),
                                     self._admission_wait(context), "the request")
            job = await self._decode(kernel, request, context, "", nbytes)
            cells = job.cells
            self._check_limits(kernel, job, "")
            arriving = False
            item = None
            if job.n_pairs == 0:
                self._batcher.depart()
            else:
                # A shared file's request runs as a stream's chunk does, never merged with others:
                # it is large, and its arrays may be a mapping the host must not read.
                item = self._enqueue(kernel, job, context, arrived=True, streamed=request.HasField("shared_file"),
                                     deliver=self._results_writer(kernel, request))
                # Runs when the RPC ends for any reason: a cancelled or expired call leaves the queue.
                context.add_done_callback(lambda _call: self._batcher.cancel(item, "cancelled"))
            return await self._reply(kernel, item, job, 0)
        except _RpcFailure as failure:
            code = failure.code
            await context.abort(failure.code, failure.message)
        except asyncio.CancelledError:
            code = grpc.StatusCode.CANCELLED
            raise
        except Exception as exc:
            code, message = _failure_status(method, exc)
            await context.abort(code, message)
        finally:
            if arriving:
                self._batcher.depart()
            reservation.release()
            self.active -= 1
            self._metrics.in_flight.dec()
            self._done(method, code, cells, start)

    async def _stream(self, kernel: AlgorithmKernel, context: grpc.aio.ServicerContext) -> Any:
        """Chunks are read, decoded and queued by a reader task while replies go back in order;
        at most the stream window's chunks are queued and not yet answered. Each chunk holds
        its own reservation on the memory budget, from before it is read until it is answered."""
        method = kernel.algorithm.rpc + "Stream"
        await self._refuse_when_stopping(method, context)
        start = time.monotonic()
        code, cells = grpc.StatusCode.OK, 0
        room = asyncio.Semaphore(self._stream_window)
        entries: asyncio.Queue[Any] = asyncio.Queue()
        queued = _StreamWork()
        end = object()
        held: set[Reservation] = set()  # chunks' reservations not yet released

        def cancel_queued(_call: Any = None) -> None:
            queued.over = True  # a chunk queued from now on is cancelled by whoever queues it
            for item in list(queued.items):
                self._batcher.cancel(item, "cancelled")

        async def read() -> None:
            index = 0
            try:
                while True:
                    await room.acquire()
                    reservation = Reservation(self._budget)
                    held.add(reservation)
                    await reservation.resize(self._receive_bytes, self._admission_wait(context),
                                             f"chunk {index} (being received)")
                    try:
                        received = await context.read()
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        # Reading fails when the client cancels or the deadline passes; the RPC is over then.
                        raise _RpcFailure(grpc.StatusCode.CANCELLED, f"reading chunk {index} failed: "
                                                                     f"{type(exc).__name__}: {exc}") from None
                    if received is grpc.aio.EOF:
                        reservation.release()
                        break
                    request, nbytes = received
                    _check_parsed(request, method, f"chunk {index}: ")
                    await reservation.resize(
                        request_cost(kernel.algorithm, request, nbytes, self._config.max_message_bytes),
                        self._admission_wait(context), f"chunk {index}")
                    job, item = await self._decode_chunk(kernel, request, context, f"chunk {index}: ", queued, nbytes)
                    entries.put_nowait((index, item, job, reservation))
                    index += 1
                entries.put_nowait(end)
            except _RpcFailure as failure:
                entries.put_nowait(failure)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                entries.put_nowait(_RpcFailure(*_failure_status(method, exc)))

        self.active += 1
        self._metrics.in_flight.inc()
        context.add_done_callback(cancel_queued)
        reader = asyncio.get_running_loop().create_task(read())
        try:
            while True:
                entry = await entries.get()
                if entry is end:
                    break
                if isinstance(entry, _RpcFailure):
                    raise entry
                index, item, job, reservation = entry
                reply = await self._reply(kernel, item, job, index)
                queued.items.discard(item)
                room.release()
                cells += job.cells
                yield reply
                reservation.release()
                held.discard(reservation)
        except _RpcFailure as failure:
            code = failure.code
            await context.abort(failure.code, failure.message)
        except asyncio.CancelledError:
            code = grpc.StatusCode.CANCELLED
            raise
        except Exception as exc:
            code, message = _failure_status(method, exc)
            await context.abort(code, message)
        finally:
            reader.cancel()
            cancel_queued()
            for reservation in held:
                reservation.release()
            self.active -= 1
            self._metrics.in_flight.dec()
            self._done(method, code, cells, start)

    # -- helpers --

    @property
    def budget(self) -> MemoryBudget:
        return self._budget

    def _admission_wait(self, context: grpc.aio.ServicerContext) -> float:
        """How long a request may wait for room in the budget: the setting, within its deadline."""
        remaining = context.time_remaining()
        wait = self._config.admission_wait_s
        return wait if remaining is None else max(0.0, min(wait, remaining))

    def refuse_new_calls(self) -> None:
        """Shutdown has begun: calls that start from now on get UNAVAILABLE."""
        self.stopping = True

    async def _refuse_when_stopping(self, method: str, context: grpc.aio.ServicerContext) -> None:
        if self.stopping:
            self._metrics.finished(method, grpc.StatusCode.UNAVAILABLE.name)
            await context.abort(grpc.StatusCode.UNAVAILABLE,
                                "the server is shutting down and takes no new calls; retry on another server")

    @staticmethod
    def _decodes_off_loop(request: Any, nbytes: int | None = None) -> bool:
        """Whether decoding the request (of nbytes on the wire, when known: ByteSize() takes
        milliseconds on a large message) blocks long enough to move it off the event loop."""
        return request.HasField("shared_file") or (
            request.ByteSize() if nbytes is None else nbytes) >= _DECODE_OFF_LOOP_BYTES

    @staticmethod
    def _deadline(context: grpc.aio.ServicerContext) -> float | None:
        """The call's deadline on time.monotonic()'s clock (None: no deadline)."""
        remaining = context.time_remaining()
        return None if remaining is None else time.monotonic() + remaining

    async def _decode(self, kernel: AlgorithmKernel, request: Any, context: grpc.aio.ServicerContext,
                      chunk: str = "", nbytes: int | None = None) -> Job:
        if self._decodes_off_loop(request, nbytes):
            peer = context.peer()
            return await asyncio.get_running_loop().run_in_executor(
                self._blocking_pool, self._decode_blocking, kernel, request, peer, chunk)
        return self._decode_blocking(kernel, request, context.peer(), chunk)

    async def _decode_chunk(self, kernel: AlgorithmKernel, request: Any, context: grpc.aio.ServicerContext,
                            chunk: str, queued: _StreamWork, nbytes: int | None = None) -> tuple[Job, WorkItem | None]:
        """A stream's chunk decoded, checked and queued (None: nothing to score). Off the event
        loop when large, where the thread that decoded it also queues it: a trip back through
        the busy loop first would only delay the backend."""
        waiter = asyncio.get_running_loop().create_future()
        args = (kernel, request, context.peer(), chunk, self._deadline(context), waiter, queued)
        if self._decodes_off_loop(request, nbytes):
            return await asyncio.get_running_loop().run_in_executor(self._blocking_pool, self._queue_chunk, *args)
        return self._queue_chunk(*args)

    def _queue_chunk(self, kernel: AlgorithmKernel, request: Any, peer: str, chunk: str, deadline: float | None,
                     waiter: Any, queued: _StreamWork) -> tuple[Job, WorkItem | None]:
        job = self._decode_blocking(kernel, request, peer, chunk)
        self._check_limits(kernel, job, chunk)
        if not job.n_pairs:
            return job, None
        item = self._submit(kernel, job, deadline, waiter, streamed=True, deliver=self._results_writer(kernel, request))
        queued.items.add(item)
        if queued.over:  # the stream ended while this chunk was decoded
            self._batcher.cancel(item, "cancelled")
        return job, item

    def _decode_blocking(self, kernel: AlgorithmKernel, request: Any, peer: str, chunk: str) -> Job:
        packed = None
        if request.HasField("shared_file"):
            packed = self._read_shared_file(kernel, request, peer, chunk)
        try:
            return kernel.algorithm.decode(request, packed)
        except InvalidRequest as exc:  # "invalid <field>: <problem>"
            raise _RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{chunk}{exc}") from None

    def _read_shared_file(self, kernel: AlgorithmKernel, request: Any, peer: str, chunk: str) -> SimpleNamespace:
        """The packed arrays of a request that handed them over in shared memory (a memfd the
        caller registered, see _shm_server); for a GPU kernel in page-locked memory, which the
        GPU copies from without a copy on the host first."""
        algorithm = kernel.algorithm
        if getattr(request, algorithm.packed_field).ByteSize():
            raise _RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                              f"{chunk}invalid {algorithm.request_type.__name__}: set either "
                              f"{algorithm.packed_field} or shared_file, not both")
        registry = self._shared_memory
        if registry is None:
            raise _RpcFailure(grpc.StatusCode.FAILED_PRECONDITION,
                              f"{chunk}shared file unusable: this server does not accept shared memory")
        if not _shm_server.is_local_peer(peer):
            raise _RpcFailure(grpc.StatusCode.FAILED_PRECONDITION,
                              f"{chunk}shared file unusable: only clients on the server's host may send shared memory")
        fields = [field.name for field in algorithm.packed_message.DESCRIPTOR.fields]
        shared = request.shared_file
        args = (list(shared.sizes), fields, self._config.max_message_bytes)
        try:
            _shm_server.check_reply_offset(shared.reply_offset, shared.sizes)
            with registry.open(shared.handle) as region:
                arrays = None
                if kernel.backend == "gpu" and algorithm.mapped_file_host_fields is not None:
                    arrays = self._mapped_arrays(region, args, algorithm.mapped_file_host_fields)
                if arrays is None:
                    empty = _page_locked_or_plain if kernel.backend == "gpu" else None
                    arrays = _shm_server.read_arrays(region, *args, empty)
        except _shm_server.SharedFileRejected as exc:
            raise _RpcFailure(exc.code, f"{chunk}{exc}") from None
        return SimpleNamespace(**arrays)

    def _mapped_arrays(self, region: _shm_server.Region, args: tuple[Any, ...],
                       host_fields: tuple[str, ...]) -> dict[str, np.ndarray] | None:
        """A request's arrays in its memfd's page-locked mapping (_shm_server.MappedFiles);
        None when this server does not map memfds, or CUDA refused to page-lock this one (the
        caller then reads it). After _MAP_FAILURES_BEFORE_READING refusals in a row, it maps no more."""
        mapped_files = self._mapped_files
        if mapped_files is None:
            return None
        try:
            arrays = mapped_files.arrays(region, *args, host_fields)
        except _shm_server.SharedFileRejected:
            raise
        except Exception as exc:  # CuPy's CUDA errors have no common base with OSError
            self._map_failures += 1
            giving_up = self._map_failures >= _MAP_FAILURES_BEFORE_READING  # e.g. a platform without it
            if self._map_failures == 1 or self._map_failures == _MAP_FAILURES_BEFORE_READING:
                logger.warning("cannot page-lock a mapping of shared memory (%s: %s); %s", type(exc).__name__, exc,
                               "reading shared memory from now on" if giving_up else "reading it instead")
            if giving_up:
                self._mapped_files = None
                mapped_files.close()
            return None
        self._map_failures = 0
        return arrays

    def _check_limits(self, kernel: AlgorithmKernel, job: Job, where: str) -> None:
        limit = self._config.max_request_cells
        if job.cells > limit:
            raise _RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"{where}the request has {job.cells} cells, over this server's limit of {limit} cells "
                              f"per request; split it (warpdp.grpc.Client does) or use {kernel.algorithm.rpc}Stream")
        reply_bytes = kernel.algorithm.reply_bytes_per_pair * job.n_pairs
        if reply_bytes > self._config.max_message_bytes:
            raise _RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"{where}the reply would hold {job.n_pairs} pairs ({reply_bytes} bytes), over this "
                              f"server's message limit of {self._config.max_message_bytes} bytes; split the request")

    def _enqueue(self, kernel: AlgorithmKernel, job: Job, context: grpc.aio.ServicerContext,
                 arrived: bool = False, streamed: bool = False,
                 deliver: Callable[[np.ndarray], bool] | None = None) -> WorkItem:
        return self._submit(kernel, job, self._deadline(context), asyncio.get_running_loop().create_future(), arrived,
                            streamed, deliver)

    def _submit(self, kernel: AlgorithmKernel, job: Job, deadline: float | None, waiter: Any,
                arrived: bool = False, streamed: bool = False,
                deliver: Callable[[np.ndarray], bool] | None = None) -> WorkItem:
        """Queue a decoded request in the batcher (any thread); waiter is an asyncio future."""
        try:
            return self._batcher.submit(kernel, job.key, job.payload, cells=job.cells, n_out=job.n_pairs,
                                        deadline=deadline, arrived=arrived, waiter=waiter, streamed=streamed,
                                        deliver=deliver)
        except BatcherClosed as exc:
            raise _RpcFailure(grpc.StatusCode.UNAVAILABLE, str(exc)) from None

    def _results_writer(self, kernel: AlgorithmKernel, request: Any) -> Callable[[np.ndarray], bool] | None:
        """For a request that asks for its results in its shared memory (SharedFile.reply_offset):
        what writes them there, on the batcher's worker (off the event loop, and the reply
        goes out with no results to copy). None for any other request. The results go only
        into the memfd the request's handle names, as long as its client has it registered
        (else in the message)."""
        registry = self._shared_memory
        if registry is None or not request.HasField("shared_file") or not request.shared_file.reply_offset:
            return None
        handle, offset, algorithm = request.shared_file.handle, int(request.shared_file.reply_offset), kernel.algorithm

        def write(rows: np.ndarray) -> bool:
            try:
                with registry.open(handle) as region:
                    return _shm_server.write_results(region, offset, algorithm.result_arrays(rows))
            except _shm_server.SharedFileRejected:  # unregistered meanwhile: its client has gone
                return False
        return write

    async def _reply(self, kernel: AlgorithmKernel, item: WorkItem | None, job: Job, chunk: int) -> Any:
        if item is None:  # nothing to score
            return kernel.algorithm.reply(None, 0, chunk, warpdp_pb2.CallStats(backend=kernel.backend, cells=job.cells))
        await item.waiter
        if item.state == _DROPPED:
            code = grpc.StatusCode.DEADLINE_EXCEEDED if item.drop_reason == "deadline" else grpc.StatusCode.CANCELLED
            raise _RpcFailure(code, f"the request was dropped before it ran ({item.drop_reason})")
        if item.state == _FAILED:
            error = item.error
            if isinstance(error, BatcherClosed):
                raise _RpcFailure(grpc.StatusCode.UNAVAILABLE, str(error))
            if isinstance(error, (ValueError, TypeError)):
                raise _RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"invalid request: {error}")
            if isinstance(error, MemoryError):
                raise _RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                  "the server ran out of memory running this request; retry later or split it")
            raise _RpcFailure(grpc.StatusCode.INTERNAL, f"the backend failed: {type(error).__name__}: {error}")
        assert item.result is not None
        stats = warpdp_pb2.CallStats(backend=kernel.backend, cells=job.cells, queue_us=int(item.queue_s * 1e6),
                                     compute_us=int(item.compute_s * 1e6), coalesced_requests=item.coalesced,
                                     submission_cells=item.submission_cells)
        # Results written into the request's shared file are left out of the reply.
        return kernel.algorithm.reply(None if item.delivered else item.result, job.n_pairs, chunk, stats)

    def _done(self, method: str, code: grpc.StatusCode, cells: int, start: float) -> None:
        latency = time.monotonic() - start
        self._metrics.finished(method, code.name, latency)
        self._stats.add(code == grpc.StatusCode.OK, cells, latency, self._batcher)


# ---------------------------------------------------------------------------------------
# Authentication


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """UNAUTHENTICATED unless the call carries `authorization: Bearer <token>` with an accepted token."""

    def __init__(self, tokens: Sequence[str], metrics: Metrics | None = None) -> None:
        self._tokens = [t.encode() for t in tokens]
        self._metrics = metrics

    def _accepts(self, value: str | None) -> bool:
        return _bearer_accepted(self._tokens, value)

    async def intercept_service(self, continuation: Callable, handler_call_details: grpc.HandlerCallDetails) -> Any:
        method = handler_call_details.method
        handler = await continuation(handler_call_details)
        if method.startswith(_AUTH_EXEMPT_PREFIXES) or handler is None:
            return handler
        metadata = handler_call_details.invocation_metadata or ()
        values = [v for k, v in metadata if k == "authorization"]
        # Several entries are refused, not first-wins: a proxy adding its own must not decide
        # which one counts.
        if len(values) == 1 and self._accepts(values[0] if isinstance(values[0], str) else values[0].decode()):
            return handler
        if not values:
            message = "a bearer token is required: send metadata 'authorization: Bearer <token>'"
        elif len(values) > 1:
            message = (f"the call carries {len(values)} 'authorization' metadata entries; "
                       f"exactly one is allowed")
        else:
            message = "the bearer token is not accepted"
        if self._metrics is not None:
            self._metrics.requests.labels(method.rsplit("/", 1)[-1], "UNAUTHENTICATED").inc()
        return _denying_handler(handler, message)


def _bearer_accepted(tokens: Sequence[bytes], value: str | None) -> bool:
    """Whether an authorization value is "Bearer <one of tokens>" (case-insensitive scheme)."""
    if not value or value[:7].lower() != "bearer ":
        return False
    presented = value[7:].strip().encode()
    ok = False
    for token in tokens:  # compare with every token, in constant time
        ok |= hmac.compare_digest(presented, token)
    return ok


def metrics_app(registry: CollectorRegistry, tokens: Sequence[str] = ()) -> Callable[..., Any]:
    """The WSGI app serving /metrics; with tokens, a request needs `Authorization: Bearer
    <token>` (one of them) and gets 401 otherwise. Several Authorization headers reach WSGI
    joined by commas, which matches no token, so they are refused too."""
    from prometheus_client import make_wsgi_app

    app = make_wsgi_app(registry)
    if not tokens:
        return app
    accepted = [t.encode() for t in tokens]

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if _bearer_accepted(accepted, environ.get("HTTP_AUTHORIZATION")):
            return app(environ, start_response)
        start_response("401 Unauthorized", [("Content-Type", "text/plain; charset=utf-8"),
                                            ("WWW-Authenticate", 'Bearer realm="warpdp metrics"')])
        return [b"a bearer token is required: send 'Authorization: Bearer <token>'\n"]

    return guarded


class _MetricsHttpServer:
    """/metrics over HTTP on a thread of its own (prometheus_client's start_http_server, plus
    the bearer token check of :func:`metrics_app`)."""

    def __init__(self, host: str, port: int, app: Callable[..., Any]) -> None:
        import socket
        import socketserver
        from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

        class Handler(WSGIRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # scrapes would flood the log
                pass

        class ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
            daemon_threads = True
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        self.httpd = make_server(host, port, app, ThreadingServer, handler_class=Handler)
        self.port: int = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="warpdp-metrics", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _denying_handler(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    async def deny(request_or_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    # Same shape (streaming or not) as the real method, so the call is answered properly.
    make = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }[(handler.request_streaming, handler.response_streaming)]
    return make(deny, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)


# ---------------------------------------------------------------------------------------
# Corrupt request bytes


class _CorruptRequest(NamedTuple):
    """What a request deserializer returns for bytes that are not a valid message."""

    error: str


# ---------------------------------------------------------------------------------------
# Server


def _devices(backend: str, threads_total: int) -> list[warpdp_pb2.Device]:
    if backend == "gpu":
        devices = []
        try:
            import cupy

            for index in range(cupy.cuda.runtime.getDeviceCount()):
                props = cupy.cuda.runtime.getDeviceProperties(index)
                name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
                devices.append(warpdp_pb2.Device(kind="gpu", index=index, name=name,
                                                 memory_bytes=int(props["totalGlobalMem"]),
                                                 cores=int(props["multiProcessorCount"]),
                                                 detail=f"compute capability {props['major']}.{props['minor']}"))
        except Exception as exc:  # informational only
            logger.warning("could not list GPU devices: %s", exc)
        return devices
    from ..plugin.pairhmm import available_cpu_isas

    return [warpdp_pb2.Device(kind="cpu", index=0, name=cpu_name(), cores=threads_total,
                              detail=available_cpu_isas()[-1])]


def _format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


class Server:
    """A warpdp gRPC server. ``Server(config).start()`` serves until :meth:`stop`.

    Usable as a context manager (stops with the configured grace on exit).
    """

    def __init__(self, config: ServerConfig | None = None, **settings: Any) -> None:
        if config is not None and settings:
            raise TypeError("pass a ServerConfig or keyword settings, not both")
        self.config = config if config is not None else ServerConfig(**settings)
        self.config.check()
        self.metrics = Metrics()
        self.port: int | None = None
        self.metrics_port: int | None = None
        self.backend: str | None = None
        self.workers: int | None = None  # backend submissions at once (after start)
        self._grpc: grpc.aio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._blocking_pool: ThreadPoolExecutor | None = None
        self._batcher: Batcher | None = None
        self._health: Any = None  # grpc_health's asyncio HealthServicer
        self._servicer: WarpdpServicer | None = None
        self._metrics_http: Any = None
        self.shared_memory: _shm_server.Registry | None = None  # where same-host clients register memfds
        self._stop_lock = threading.Lock()
        self._stopped = threading.Event()

    @property
    def address(self) -> str:
        """host:port where the server listens (after start)."""
        if self.port is None:
            raise RuntimeError("the server is not started")
        return _format_address(self.config.host, self.port)

    @property
    def batcher(self) -> Batcher:
        if self._batcher is None:
            raise RuntimeError("the server is not started")
        return self._batcher

    def start(self) -> Server:
        cfg = self.config
        if self._grpc is not None:
            raise RuntimeError("the server is already started")
        # Each algorithm on its own backend choice ("auto": the GPU where its GPU kernel can
        # run). Raises BackendUnavailableError when --backend gpu cannot run one of them here.
        backends = {algorithm.name: choose_backend(cfg.backend, algorithm.name) for algorithm in ALGORITHMS}
        self.backend = backends[PAIRHMM.name]  # the server's headline backend, as before
        workers = cfg.workers or DEFAULT_WORKERS[self.backend]
        self.workers = workers
        # Algorithms left on the CPU by a GPU server keep every core: its other workers only
        # overlap large submissions.
        cpu_threads = cfg.threads or max(1, resolve_threads(None) // (cfg.workers or 1))
        kernels = [AlgorithmKernel(algorithm, backends[algorithm.name],
                                   cpu_threads if backends[algorithm.name] == "cpu" else (cfg.threads or 1),
                                   slice_cells=cfg.cpu_slice_cells)
                   for algorithm in ALGORITHMS]
        if cfg.warmup:
            for kernel in kernels:
                kernel.warmup()
        threads = kernels[0].threads
        detail = kernels[0].detail(workers)

        max_batch_cells = cfg.max_batch_cells or DEFAULT_MAX_BATCH_CELLS[self.backend]
        overlap_cells = max_batch_cells // GPU_OVERLAP_SHARE if self.backend == "gpu" else 0
        # The gRPC server runs on an event loop of its own thread; the batcher wakes that loop
        # once per submission to resolve the handlers' futures.
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._loop_thread = threading.Thread(target=loop.run_forever, name="warpdp-grpc-loop", daemon=True)
        self._loop_thread.start()

        def notify(items: list[WorkItem]) -> None:
            try:
                loop.call_soon_threadsafe(WarpdpServicer.resolve, items)
            except RuntimeError:  # the loop is closed: the server has stopped and nobody waits
                pass

        self._batcher = Batcher(workers=workers, batching=cfg.batching, max_wait_s=cfg.max_wait_ms / 1e3,
                                max_batch_cells=max_batch_cells, overlap_cells=overlap_cells, metrics=self.metrics,
                                notify=notify)
        self._blocking_pool = ThreadPoolExecutor(max_workers=cfg.handler_threads, thread_name_prefix="warpdp-blocking")
        from .. import __version__

        if cfg.shared_files:
            self.shared_memory = _shm_server.Registry(cfg.max_message_bytes)
        info = warpdp_pb2.ServerInfoReply(
            version=__version__, backend=self.backend, requested_backend=cfg.backend,
            algorithms=[warpdp_pb2.AlgorithmInfo(name=k.name, rpc=k.algorithm.rpc, backend=k.backend,
                                                 detail=k.detail(workers)) for k in kernels],
            devices=_devices(self.backend, threads * workers),
            limits=warpdp_pb2.Limits(max_request_cells=cfg.max_request_cells,
                                     max_message_bytes=cfg.max_message_bytes),
            batching=warpdp_pb2.Batching(enabled=cfg.batching, max_wait_us=int(cfg.max_wait_ms * 1000),
                                         max_batch_cells=max_batch_cells, workers=workers),
            token_required=bool(cfg.tokens),
            shared_files=self._shared_files_info(),
        )
        budget = MemoryBudget(cfg.memory_budget_bytes(), self.metrics, self._blocking_pool)
        self.metrics.memory_budget.set(budget.limit)
        self.metrics.memory_reserved.set_function(lambda: budget.used)
        servicer = WarpdpServicer(batcher=self._batcher, kernels=kernels, config=cfg, metrics=self.metrics, info=info,
                                  workers=workers, blocking_pool=self._blocking_pool, budget=budget,
                                  shared_memory=self.shared_memory)
        self._servicer = servicer
        interceptors = [BearerTokenInterceptor(cfg.tokens, self.metrics)] if cfg.tokens else []
        options = [
            ("grpc.max_receive_message_length", cfg.max_message_bytes),
            ("grpc.max_send_message_length", -1),  # replies are bounded by the checks above
            # gRPC sets SO_REUSEPORT by default, which would let a second server silently
            # share a port; fail with "address in use" instead.
            ("grpc.so_reuseport", 0),
            # A call's message is read once the memory budget has room for it; until then gRPC
            # may buffer only its flow-control window of it. BDP probing would grow that window
            # without bound (every waiting call's whole message received, outside the budget).
            ("grpc.http2.bdp_probe", 0),
            ("grpc.http2.lookahead_bytes", _STREAM_WINDOW_BYTES),
        ]
        address = _format_address(cfg.host, cfg.port)

        async def start_grpc() -> tuple[grpc.aio.Server, int]:
            server = grpc.aio.server(interceptors=interceptors, options=options)
            servicer.add_to_server(server)
            self._health = health.aio.HealthServicer()
            health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
            reflection.enable_server_reflection(
                (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
                server)
            try:
                if cfg.tls_cert is not None:
                    key = Path(cfg.tls_key).read_bytes()  # type: ignore[arg-type]
                    cert = Path(cfg.tls_cert).read_bytes()
                    port = server.add_secure_port(address, grpc.ssl_server_credentials([(key, cert)]))
                else:
                    port = server.add_insecure_port(address)
            except RuntimeError as exc:
                raise OSError(f"cannot listen on {address}: {exc}") from None
            if port == 0:
                raise OSError(f"cannot listen on {address} (in use, or not an address of this machine)")
            await server.start()
            await self._health.set("", health_pb2.HealthCheckResponse.SERVING)
            await self._health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
            return server, port

        try:
            self._grpc, self.port = self._on_loop(start_grpc())
        except BaseException:
            self._batcher.close(0)
            self._close_loop()
            if self.shared_memory is not None:
                self.shared_memory.close()
            raise

        if cfg.metrics_port is not None:
            # Behind the same bearer tokens as the RPCs, when they are set.
            self._metrics_http = _MetricsHttpServer(cfg.host, cfg.metrics_port,
                                                    metrics_app(self.metrics.registry, cfg.tokens))
            self.metrics_port = self._metrics_http.port

        security = ("TLS" if cfg.tls_cert else "plaintext") + (", bearer token required" if cfg.tokens else "")
        logger.info("warpdp serve: listening on %s (%s); backend %s (requested %s): %s", self.address, security,
                    self.backend.upper(), cfg.backend, detail)
        for kernel in kernels:
            if kernel.backend != self.backend:  # "auto" with a GPU kernel usable for some algorithms only
                logger.info("warpdp serve: %s runs on the %s: %s", kernel.name, kernel.backend.upper(),
                            kernel.detail(workers))
        batching = (f"max wait {cfg.max_wait_ms:g} ms, max {max_batch_cells} cells per submission"
                    if cfg.batching else "off")
        shared = (f"same-host clients may register shared memory on Unix socket @{info.shared_files.socket}"
                  if info.shared_files.enabled else "no shared memory")
        logger.info("warpdp serve: batching %s; limits %d cells and %d bytes per request, memory budget %d bytes "
                    "(%.2f GiB); %s%s", batching, cfg.max_request_cells, cfg.max_message_bytes, budget.limit,
                    budget.limit / 2**30, shared,
                    f"; metrics on http://{_format_address(cfg.host, self.metrics_port)}/metrics"
                    + (" (bearer token required)" if cfg.tokens else "")
                    if self.metrics_port is not None else "")
        return self

    def _shared_files_info(self) -> warpdp_pb2.SharedFiles:
        if self.shared_memory is None:
            return warpdp_pb2.SharedFiles(enabled=False)
        return warpdp_pb2.SharedFiles(enabled=True, socket=self.shared_memory.name)

    def stop(self, grace: float | None = None) -> None:
        """Shut down: health reports NOT_SERVING and new scoring calls get UNAVAILABLE at once,
        calls in flight may finish for up to `grace` seconds (default config.grace_s), then the
        server stops listening and cancels what still runs. Safe to call more than once and
        from any thread."""
        if self._grpc is None:
            return
        grace = self.config.grace_s if grace is None else grace
        with self._stop_lock:
            if self._stopped.is_set():
                return
            logger.info("warpdp serve: stopping (finishing in-flight calls, up to %g s)", grace)
            assert self._health is not None and self._batcher is not None and self._servicer is not None
            end = time.monotonic() + grace
            # The server keeps answering during the grace period, so that connected clients
            # learn it is going: health checks say NOT_SERVING (for "" and the service), new
            # scoring calls get UNAVAILABLE, and the calls in flight finish.
            self._on_loop(self._health.enter_graceful_shutdown())
            self._servicer.refuse_new_calls()
            self._batcher.drain()
            while self._servicer.active and time.monotonic() < end:
                time.sleep(0.01)
            # Then it stops listening; calls still running (grace over) are cancelled. A moment
            # for replies already on their way, and health watches, to go out.
            remaining = max(0.0, end - time.monotonic())
            self._on_loop(self._grpc.stop(min(remaining, _REPLY_FLUSH_S) if not self._servicer.active else 0))
            self._batcher.close(timeout=max(grace, 1.0))
            if self._servicer is not None:
                self._servicer.close()
            if self.shared_memory is not None:
                self.shared_memory.close()
            if self._metrics_http is not None:
                self._metrics_http.close()
            self._close_loop()
            self._stopped.set()
            logger.info("warpdp serve: stopped")

    def force_stop(self, timeout: float | None = None) -> None:
        """Cancel in-flight calls now (a second SIGINT/SIGTERM); waits up to `timeout` seconds
        (None: not at all) for the calls' ends to go out. Running submissions stop at their
        next slice or chunk, their callers being gone."""
        if self._grpc is not None and self._loop is not None and not self._loop.is_closed():
            try:
                future = asyncio.run_coroutine_threadsafe(self._grpc.stop(0), self._loop)
            except RuntimeError:  # the loop closed meanwhile
                return
            if timeout is not None:
                try:
                    future.result(timeout)
                except Exception:  # timed out, or already stopped: the process is leaving anyway
                    pass

    def _on_loop(self, coroutine: Any) -> Any:
        """Run a coroutine on the server's event loop and wait for its result."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _close_loop(self) -> None:
        assert self._loop is not None and self._loop_thread is not None and self._blocking_pool is not None
        self._blocking_pool.shutdown(wait=False)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop_thread.join()
        self._loop.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server has stopped; False on timeout."""
        return self._stopped.wait(timeout)

    def __enter__(self) -> Server:
        if self._grpc is None:
            self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def serve(config: ServerConfig | None = None, *, ready: Callable[[Server], None] | None = None,
          **settings: Any) -> int:
    """Run a server in the foreground until SIGTERM or SIGINT, then shut down gracefully
    (see Server.stop) and return 0. A second SIGTERM or SIGINT during the shutdown cancels the
    calls still running and ends the process at once with status 128 + the signal's number
    (143 for SIGTERM, 130 for SIGINT), without returning.

    Must run in the main thread (signal handlers); `ready` is called once listening.
    """
    server = Server(config, **settings).start()
    stop_requested = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        received.append(signum)
        if stop_requested.is_set():
            logger.warning("warpdp serve: second %s, cancelling in-flight calls and exiting now",
                           signal.Signals(signum).name)
            server.force_stop(_FORCE_STOP_S)
            logging.shutdown()
            # Not sys.exit: interpreter exit would wait for threads still decoding or scoring.
            os._exit(128 + signum)
        stop_requested.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if ready is not None:
            ready(server)
        while not stop_requested.wait(3600):
            pass
        logger.info("warpdp serve: %s received", signal.Signals(received[0]).name)
        server.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


__all__ = ["AlgorithmKernel", "Batcher", "BearerTokenInterceptor", "Metrics", "SERVICE_NAME", "Server",
           "ServerConfig", "WarpdpServicer", "metrics_app", "read_token_file", "serve"]
