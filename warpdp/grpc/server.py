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
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from .. import registry
from ..plugin.core.backend import choose_backend, cpu_name, has_gpu_kernel, resolve_threads
from ..registry import Family
from . import _shm_server, warpdp_pb2
from ._admission import MemoryBudget
from ._auth import BearerTokenInterceptor
from ._batcher import Batcher, BatcherClosed, Kernel, WorkItem
from ._config import (_FORCE_STOP_S, _MAP_FAILURES_BEFORE_READING, _REPLY_FLUSH_S, _STREAM_WINDOW_BYTES,
                      DEFAULT_ADMISSION_WAIT_S, DEFAULT_GRACE_S, DEFAULT_HANDLER_THREADS, DEFAULT_HOST,
                      DEFAULT_MAX_BATCH_CELLS, DEFAULT_MAX_MESSAGE_MB, DEFAULT_MAX_REQUEST_CELLS,
                      DEFAULT_MAX_WAIT_MS, DEFAULT_PORT, DEFAULT_WORKERS, GPU_OVERLAP_SHARE, SERVICE_NAME,
                      ServerConfig, read_token_file)
from ._handlers import WarpdpServicer
from ._kernel import AlgorithmKernel
from ._metrics import KernelMetrics, Metrics, _MetricsHttpServer, metrics_app

logger = logging.getLogger("warpdp.grpc")


def _devices(backend: str, threads_total: int, device_ids: list[int] | None) -> list[warpdp_pb2.Device]:
    """ServerInfo's devices: the GPUs ``device_ids`` (a GPU server's, resolved at start), else the CPU."""
    if backend == "gpu":
        assert device_ids is not None  # a GPU family resolves the server's devices (_make_kernels)
        devices = []
        try:
            import cupy

            for index in device_ids:
                props = cupy.cuda.runtime.getDeviceProperties(index)
                name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
                devices.append(warpdp_pb2.Device(kind="gpu", index=index, name=name,
                                                 memory_bytes=int(props["totalGlobalMem"]),
                                                 cores=int(props["multiProcessorCount"]),
                                                 detail=f"compute capability {props['major']}.{props['minor']}"))
        except Exception as exc:  # informational only
            logger.warning("could not list GPU devices: %s", exc)
        return devices
    return [warpdp_pb2.Device(kind="cpu", index=0, name=cpu_name(), cores=threads_total,
                              detail=registry.host_cpu_variants()[-1])]


def _family_setting(family: Family, name: str, backend: str, default: dict[str, int]) -> int:
    """A family's per-backend service setting (Family.workers, Family.max_batch_cells), or the default."""
    setting = getattr(family, name)
    return int(setting[backend]) if setting is not None and backend in setting else default[backend]


def _format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"



def _family_backend(requested: str, name: str) -> str:
    """The backend a family runs on in this server: as requested, except that on a GPU server a
    family with no GPU kernel yet runs on the CPU (logged) instead of stopping the server."""
    if requested == "gpu" and not has_gpu_kernel(name):
        logger.info("warpdp serve: %s has no GPU kernel yet; it runs on the CPU", name)
        return "cpu"
    return choose_backend(requested, name)

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
        self.workers: int | None = None  # backend submissions at once per device (after start)
        self.devices: list[int] | None = None  # the GPUs the server runs on (after start; None: none)
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
        """Choose each family's backend, start the batcher and the gRPC server; returns self."""
        cfg = self.config
        if self._grpc is not None:
            raise RuntimeError("the server is already started")
        kernels = self._make_kernels()
        # The server's cap (and its clients' chunk size) comes from the families on its headline
        # backend; a family left on the CPU by a GPU server caps its own submissions instead
        # (AlgorithmKernel.max_batch_cells), so it does not shrink the GPU's submissions.
        headline = [kernel for _, kernel in kernels if kernel.backend == self.backend] or [k for _, k in kernels]
        max_batch_cells = min(kernel.max_batch_cells for kernel in headline)  # each is cfg.max_batch_cells when set
        self._start_loop()
        self._batcher = self._make_batcher(max_batch_cells)
        self._blocking_pool = ThreadPoolExecutor(max_workers=cfg.handler_threads, thread_name_prefix="warpdp-blocking")
        if cfg.shared_files:
            self.shared_memory = _shm_server.Registry(cfg.max_message_bytes)
        info = self._server_info([kernel for _, kernel in kernels], max_batch_cells)
        budget = MemoryBudget(cfg.memory_budget_bytes(), self.metrics, self._blocking_pool)
        self.metrics.memory_budget.set(budget.limit)
        self.metrics.memory_reserved.set_function(lambda: budget.used)
        self._servicer = WarpdpServicer(batcher=self._batcher, kernels=[kernel for _, kernel in kernels], config=cfg,
                                        metrics=self.metrics, info=info, workers=self._all_workers(),
                                        blocking_pool=self._blocking_pool, budget=budget,
                                        shared_memory=self.shared_memory)
        try:
            self._grpc, self.port = self._on_loop(self._start_grpc(self._servicer))
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
        self._log_started([kernel for _, kernel in kernels], info, budget.limit, max_batch_cells)
        return self

    def _make_kernels(self) -> list[tuple[Family, AlgorithmKernel]]:
        """A kernel per registered family, each on its own backend choice ("auto": the GPU where
        its GPU kernel can run; BackendUnavailableError when --backend gpu cannot run one here),
        warmed up. Sets the server's headline backend (the first family's), its workers (per
        device) and its devices (ValueError naming a GPU id this process does not see)."""
        cfg = self.config
        families = registry.families()
        for family in families:
            algorithm = family.algorithm()
            if (algorithm.name, algorithm.rpc) != (family.name, family.rpc):
                raise ValueError(f"family {family.name!r} (RPC {family.rpc}) has the service description of "
                                 f"{algorithm.name!r} (RPC {algorithm.rpc})")
        backends = {family.name: _family_backend(cfg.backend, family.name) for family in families}
        self.backend = backends[families[0].name]
        if "gpu" in backends.values():
            from ..kernels.runtime.devices import resolve_devices

            self.devices = resolve_devices(cfg.devices)
        self.workers = cfg.workers or max(_family_setting(family, "workers", backends[family.name], DEFAULT_WORKERS)
                                          for family in families)
        # Families left on the CPU by a GPU server keep every core: its other workers only
        # overlap large submissions.
        cpu_threads = cfg.threads or max(1, resolve_threads(None) // (cfg.workers or 1))
        kernels = [(family, AlgorithmKernel(family.algorithm(), backends[family.name],
                                            cpu_threads if backends[family.name] == "cpu" else (cfg.threads or 1),
                                            slice_cells=cfg.cpu_slice_cells,
                                            max_batch_cells=cfg.max_batch_cells or _family_setting(
                                                family, "max_batch_cells", backends[family.name],
                                                DEFAULT_MAX_BATCH_CELLS)))
                   for family in families]
        if cfg.warmup:
            for _, kernel in kernels:
                kernel.warmup(self.devices)
        return kernels

    @property
    def _n_devices(self) -> int:
        """Devices the server's workers are spread over: its GPUs, else one (the CPU)."""
        return len(self.devices) if self.devices else 1

    def _all_workers(self) -> int:
        """Backend submissions the server runs at once: its workers on each device."""
        assert self.workers is not None
        return self.workers * self._n_devices

    def _start_loop(self) -> None:
        # The gRPC server runs on an event loop of its own thread; the batcher wakes that loop
        # once per submission to resolve the handlers' futures.
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self._loop.run_forever, name="warpdp-grpc-loop", daemon=True)
        self._loop_thread.start()

    def _make_batcher(self, max_batch_cells: int) -> Batcher:
        cfg, loop = self.config, self._loop
        assert loop is not None and self.workers is not None

        def notify(items: list[WorkItem]) -> None:
            try:
                loop.call_soon_threadsafe(WarpdpServicer.resolve, items)
            except RuntimeError:  # the loop is closed: the server has stopped and nobody waits
                pass

        overlap_cells = max_batch_cells // GPU_OVERLAP_SHARE if self.backend == "gpu" else 0
        # A submission as large as the overlap threshold is worth spreading over idle GPUs.
        split_cells = overlap_cells if self._n_devices > 1 else None
        return Batcher(workers=self.workers, batching=cfg.batching, max_wait_s=cfg.max_wait_ms / 1e3,
                       max_batch_cells=max_batch_cells, overlap_cells=overlap_cells, metrics=self.metrics,
                       notify=notify, devices=self.devices, split_cells=split_cells)

    def _server_info(self, kernels: list[AlgorithmKernel], max_batch_cells: int) -> warpdp_pb2.ServerInfoReply:
        from .. import __version__

        cfg, workers = self.config, self.workers
        assert workers is not None and self.backend is not None
        return warpdp_pb2.ServerInfoReply(
            version=__version__, backend=self.backend, requested_backend=cfg.backend,
            algorithms=[warpdp_pb2.AlgorithmInfo(name=k.name, rpc=k.algorithm.rpc, backend=k.backend,
                                                 detail=k.detail(workers, self._n_devices)) for k in kernels],
            devices=_devices(self.backend, kernels[0].threads * workers, self.devices),
            limits=warpdp_pb2.Limits(max_request_cells=cfg.max_request_cells,
                                     max_message_bytes=cfg.max_message_bytes),
            batching=warpdp_pb2.Batching(enabled=cfg.batching, max_wait_us=int(cfg.max_wait_ms * 1000),
                                         max_batch_cells=max_batch_cells, workers=self._all_workers()),
            token_required=bool(cfg.tokens),
            shared_files=self._shared_files_info(),
        )

    def _grpc_options(self) -> list[tuple[str, Any]]:
        return [
            ("grpc.max_receive_message_length", self.config.max_message_bytes),
            ("grpc.max_send_message_length", -1),  # replies are bounded by the handlers' checks
            # gRPC sets SO_REUSEPORT by default, which would let a second server silently
            # share a port; fail with "address in use" instead.
            ("grpc.so_reuseport", 0),
            # A call's message is read once the memory budget has room for it; until then gRPC
            # may buffer only its flow-control window of it. BDP probing would grow that window
            # without bound (every waiting call's whole message received, outside the budget).
            ("grpc.http2.bdp_probe", 0),
            ("grpc.http2.lookahead_bytes", _STREAM_WINDOW_BYTES),
        ]

    async def _start_grpc(self, servicer: WarpdpServicer) -> tuple[grpc.aio.Server, int]:
        cfg = self.config
        interceptors = [BearerTokenInterceptor(cfg.tokens, self.metrics)] if cfg.tokens else []
        server = grpc.aio.server(interceptors=interceptors, options=self._grpc_options())
        servicer.add_to_server(server)
        self._health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            server)
        address = _format_address(cfg.host, cfg.port)
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

    def _log_started(self, kernels: list[AlgorithmKernel], info: warpdp_pb2.ServerInfoReply, budget_limit: int,
                     max_batch_cells: int) -> None:
        cfg, workers = self.config, self.workers
        assert self.backend is not None and workers is not None
        security = ("TLS" if cfg.tls_cert else "plaintext") + (", bearer token required" if cfg.tokens else "")
        logger.info("warpdp serve: listening on %s (%s); backend %s (requested %s): %s", self.address, security,
                    self.backend.upper(), cfg.backend,
                    kernels[0].detail(workers, self._n_devices))
        for kernel in kernels:
            if kernel.backend != self.backend:  # "auto" with a GPU kernel usable for some families only
                logger.info("warpdp serve: %s runs on the %s: %s", kernel.name, kernel.backend.upper(),
                            kernel.detail(workers))
        batching = (f"max wait {cfg.max_wait_ms:g} ms, max {max_batch_cells} cells per submission"
                    if cfg.batching else "off")
        shared = (f"same-host clients may register shared memory on Unix socket @{info.shared_files.socket}"
                  if info.shared_files.enabled else "no shared memory")
        metrics = ""
        if self.metrics_port is not None:
            metrics = (f"; metrics on http://{_format_address(cfg.host, self.metrics_port)}/metrics"
                       + (" (bearer token required)" if cfg.tokens else ""))
        logger.info("warpdp serve: batching %s; limits %d cells and %d bytes per request, memory budget %d bytes "
                    "(%.2f GiB); %s%s", batching, cfg.max_request_cells, cfg.max_message_bytes, budget_limit,
                    budget_limit / 2**30, shared, metrics)

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


# Re-exported: these names were importable from warpdp.grpc.server before the split.
_REEXPORTED = (BatcherClosed, Kernel, KernelMetrics, _MAP_FAILURES_BEFORE_READING, DEFAULT_ADMISSION_WAIT_S,
               DEFAULT_GRACE_S, DEFAULT_HANDLER_THREADS, DEFAULT_HOST, DEFAULT_MAX_MESSAGE_MB,
               DEFAULT_MAX_REQUEST_CELLS, DEFAULT_MAX_WAIT_MS, DEFAULT_PORT)

__all__ = ["AlgorithmKernel", "Batcher", "BearerTokenInterceptor", "Metrics", "SERVICE_NAME", "Server",
           "ServerConfig", "WarpdpServicer", "metrics_app", "read_token_file", "serve"]
