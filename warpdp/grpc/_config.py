"""Settings of one server (`warpdp serve` options) and their defaults."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..plugin.backend import MAX_THREADS
from . import warpdp_pb2
from ._admission import default_memory_budget, receive_bytes


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


@dataclass
class ServerConfig:
    """Settings of one server; `warpdp serve` options map onto these one to one."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT                       # 0 = pick a free port (see Server.port)
    backend: str = "auto"                          # "auto" | "cpu" | "gpu"
    workers: int | None = None                     # backend submissions running at once (default: by backend)
    threads: int | None = None                     # CPU threads per worker (default: cores / workers)
    # GPU ids a GPU server runs on, each with `workers` workers (default: every GPU it sees).
    devices: Sequence[int] | None = None
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
        if self.devices is not None:
            from ..plugin.core.backend import check_devices

            self.devices = check_devices(self.devices)
            if len(set(self.devices)) != len(self.devices):
                raise ValueError(f"devices lists a GPU twice: {self.devices}")
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
