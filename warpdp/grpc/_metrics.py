"""Prometheus metrics of a server, and the /metrics HTTP endpoint."""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ._auth import bearer_accepted


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
        if bearer_accepted(accepted, environ.get("HTTP_AUTHORIZATION")):
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
