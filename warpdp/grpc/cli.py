"""`warpdp serve`: its options and entry point (warpdp/cli.py wires the sub-command to these),
and the `--server` options of the scoring commands.

Also runnable alone: ``python -m warpdp.grpc.cli --port 50051``.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from typing import TYPE_CHECKING, Any

from .. import registry
from ..plugin.backend import BACKENDS, BackendUnavailableError
from . import require_server_extra

if TYPE_CHECKING:
    from .client import Client
    from .server import ServerConfig

# gRPC itself (the 'server' extra) is imported only by what needs it: the scoring subcommands
# add their --server options without it, and score in-process where it is not installed.

_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


def count(text: str) -> int:
    """A positive count, optionally with a k/M/G/T (decimal) suffix: "256M", "4G", "1000000"."""
    value = text.strip().lower().replace("_", "")
    scale = _SUFFIXES.get(value[-1:], 1)
    if scale != 1:
        value = value[:-1]
    try:
        number = float(value) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (e.g. 1000000, 256M, 4G)") from None
    if not math.isfinite(number) or number < 1 or number != int(number):
        raise argparse.ArgumentTypeError(f"must be a positive whole number: {text!r}")
    return int(number)


def _byte_count(text: str) -> int:
    from ._admission import parse_bytes

    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text!r}")
    return value


def _device_list(text: str) -> list[int]:
    ids = []
    for part in text.split(","):
        try:
            ids.append(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a comma-separated list of GPU ids: {text!r}") from None
        if ids[-1] < 0:
            raise argparse.ArgumentTypeError(f"GPU ids are 0 and up: {text!r}")
    return ids


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `warpdp serve` options to a (sub-)parser."""
    require_server_extra("warpdp serve")
    from ._admission import DEFAULT_BUDGET_CAP, DEFAULT_BUDGET_FLOOR, RECEIVE_COPIES
    from ._config import DEFAULT_WORKERS
    from .server import (
        DEFAULT_ADMISSION_WAIT_S,
        DEFAULT_GRACE_S,
        DEFAULT_HANDLER_THREADS,
        DEFAULT_HOST,
        DEFAULT_MAX_BATCH_CELLS,
        DEFAULT_MAX_MESSAGE_MB,
        DEFAULT_MAX_REQUEST_CELLS,
        DEFAULT_MAX_WAIT_MS,
        DEFAULT_PORT,
        AlgorithmKernel,
    )

    net = parser.add_argument_group("listening")
    net.add_argument("--host", default=DEFAULT_HOST,
                     help=f"address to bind (default {DEFAULT_HOST}: this machine only; 0.0.0.0 or :: for all "
                          f"interfaces, then use --tls-cert/--tls-key and --token-file)")
    net.add_argument("--port", type=_non_negative_int, default=DEFAULT_PORT,
                     help=f"port (default {DEFAULT_PORT}; 0 picks a free one, logged at start)")
    backend = parser.add_argument_group("backend")
    backend.add_argument("--backend", choices=BACKENDS, default="auto",
                         help="auto (default: GPU if usable, else CPU), cpu or gpu (fails if no usable GPU)")
    backend.add_argument("--workers", type=_positive_int, default=None,
                         help=f"backend submissions running at the same time (default {DEFAULT_WORKERS['cpu']} on "
                              f"the CPU; {DEFAULT_WORKERS['gpu']} on the GPU, where only large submissions overlap)")
    backend.add_argument("--threads", type=_positive_int, default=None,
                         help="CPU threads per worker (default: all cores / workers)")
    backend.add_argument("--devices", type=_device_list, default=None, metavar="IDS",
                         help="GPUs to run on, comma-separated ids (default: every GPU the process sees); "
                              "each gets --workers workers of its own")
    batching = parser.add_argument_group("dynamic batching")
    batching.add_argument("--max-wait-ms", type=_non_negative_float, default=DEFAULT_MAX_WAIT_MS,
                          help=f"longest a request waits for others to join its backend submission "
                               f"(default {DEFAULT_MAX_WAIT_MS:g})")
    batching.add_argument("--max-batch-cells", type=count, default=None,
                          help=f"a submission stops growing at this many DP cells; clients also stream large jobs "
                               f"in chunks of this size (default {DEFAULT_MAX_BATCH_CELLS['cpu'] // 10**6}M on the CPU, "
                               f"{DEFAULT_MAX_BATCH_CELLS['gpu'] // 10**9}G on the GPU)")
    batching.add_argument("--no-batching", action="store_true",
                          help="run every request as its own backend submission")
    batching.add_argument("--cpu-slice-cells", type=count, default=None,
                          help=f"CPU submissions run in slices of pairs of about this many DP cells, and a "
                               f"submission whose callers all cancelled or passed their deadline stops between "
                               f"two slices (default: sized from the kernel's rate to take about "
                               f"{AlgorithmKernel.SLICE_TARGET_S * 1e3:g} ms each, starting at "
                               f"{AlgorithmKernel.SLICE_CELLS_PER_THREAD // 10**6}M cells per thread)")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--max-request-cells", type=count, default=DEFAULT_MAX_REQUEST_CELLS,
                        help=f"largest request (or stream chunk) in DP cells; larger ones get RESOURCE_EXHAUSTED "
                             f"(default {DEFAULT_MAX_REQUEST_CELLS})")
    limits.add_argument("--max-message-mb", type=float, default=DEFAULT_MAX_MESSAGE_MB,
                        help=f"largest request message in MiB, also bounds replies (default {DEFAULT_MAX_MESSAGE_MB:g})")
    limits.add_argument("--memory-budget", type=_byte_count, default=None, metavar="BYTES",
                        help="memory the requests in progress may hold, from receipt to reply (K/M/G/T suffixes, "
                             "binary: 512M, 8G). A call reserves room for the largest message before its message "
                             "is read, then the request's own estimate; one that never fits, or finds no room "
                             "within --admission-wait-s, gets RESOURCE_EXHAUSTED (default: half the available "
                             f"memory, {DEFAULT_BUDGET_FLOOR >> 30}..{DEFAULT_BUDGET_CAP >> 30} GiB; at least "
                             f"{RECEIVE_COPIES}x --max-message-mb)")
    limits.add_argument("--admission-wait-s", type=_non_negative_float, default=DEFAULT_ADMISSION_WAIT_S,
                        help=f"how long a request waits for room in the memory budget, at most its deadline, "
                             f"before RESOURCE_EXHAUSTED (default {DEFAULT_ADMISSION_WAIT_S:g})")
    limits.add_argument("--handler-threads", type=_positive_int, default=DEFAULT_HANDLER_THREADS,
                        help=f"threads that read shared memory and decode large requests; calls themselves "
                             f"run on one event loop (default {DEFAULT_HANDLER_THREADS})")
    same_host = parser.add_argument_group("same-host transfer")
    same_host.add_argument("--no-shared-files", action="store_true",
                           help="accept request arrays only inside messages (by default, clients on this host may "
                                "hand them over in memfds registered over a Unix socket)")
    security = parser.add_argument_group("security")
    security.add_argument("--tls-cert", metavar="PEM", default=None, help="serve TLS with this certificate chain")
    security.add_argument("--tls-key", metavar="PEM", default=None, help="private key of --tls-cert")
    security.add_argument("--token-file", metavar="FILE", default=None,
                          help="require 'authorization: Bearer <token>' metadata; the file holds accepted tokens, "
                               "one per line")
    ops = parser.add_argument_group("operations")
    ops.add_argument("--metrics-port", type=_non_negative_int, default=None,
                     help="serve Prometheus metrics on http://HOST:PORT/metrics; with --token-file, a scrape "
                          "needs 'Authorization: Bearer <token>' as the RPCs do (else 401)")
    ops.add_argument("--log-every", type=_non_negative_int, default=1000,
                     help="log one summary line per N requests (default 1000; 0 = never)")
    ops.add_argument("--grace-s", type=_non_negative_float, default=DEFAULT_GRACE_S,
                     help=f"on SIGTERM/SIGINT, how long in-flight calls may take to finish (default {DEFAULT_GRACE_S:g})")


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    """ServerConfig from parsed `warpdp serve` options (ValueError/OSError for bad settings)."""
    from .server import ServerConfig, read_token_file

    tokens = read_token_file(args.token_file) if args.token_file else ()
    config = ServerConfig(
        host=args.host, port=args.port, backend=args.backend, workers=args.workers, threads=args.threads,
        devices=args.devices, batching=not args.no_batching, max_wait_ms=args.max_wait_ms, max_batch_cells=args.max_batch_cells,
        cpu_slice_cells=args.cpu_slice_cells, memory_budget=args.memory_budget,
        admission_wait_s=args.admission_wait_s,
        max_request_cells=args.max_request_cells, max_message_mb=args.max_message_mb,
        tls_cert=args.tls_cert, tls_key=args.tls_key, tokens=tokens, metrics_port=args.metrics_port,
        log_every=args.log_every, handler_threads=args.handler_threads, grace_s=args.grace_s,
        shared_files=not args.no_shared_files,
    )
    config.check()
    return config


def run_serve(args: argparse.Namespace) -> int:
    """Run `warpdp serve` in the foreground until SIGTERM/SIGINT; returns the exit status."""
    if not logging.getLogger().handlers:  # nobody configured logging (warpdp/cli.py may have)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
        logging.getLogger("warpdp").setLevel(logging.INFO)
    try:
        require_server_extra("warpdp serve")
        from .server import serve

        config = config_from_args(args)
        return serve(config)
    except (ValueError, OSError, BackendUnavailableError, ImportError) as exc:
        print(f"warpdp serve: error: {exc}", file=sys.stderr)
        return 2


def add_client_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `--server ADDRESS[,ADDRESS...]` and its options to a scoring command's parser."""
    group = parser.add_argument_group("scoring through warpdp servers")
    group.add_argument("--server", metavar="ADDRESS[,ADDRESS...]", default=None,
                       help="score through these warpdp servers instead of in-process (several: calls are "
                            "spread with round_robin)")
    group.add_argument("--server-token-file", metavar="FILE", default=None,
                       help="bearer token for the servers (first token in the file; default: $WARPDP_TOKEN)")
    group.add_argument("--server-tls-ca", metavar="PEM", default=None,
                       help="connect with TLS, trusting the CA in this PEM file")
    group.add_argument("--server-timeout", type=_non_negative_float, default=None, metavar="SECONDS",
                       help="deadline per call (default: none)")


def client_from_args(args: argparse.Namespace) -> Client | None:
    """The Client that `--server` asks for, or None to score in-process."""
    if not getattr(args, "server", None):
        return None
    require_server_extra("--server")
    from .client import Client
    from .server import read_token_file

    if args.server_token_file:
        token: str | None = read_token_file(args.server_token_file)[0]
    else:
        token = os.environ.get("WARPDP_TOKEN") or None
    return Client(args.server, token=token, tls_ca=args.server_tls_ca, timeout=args.server_timeout)


def run_family(args: argparse.Namespace, family: str, pairs: Any, params: Any) -> Any:
    """A registered family's results for a CLI subcommand: through the servers `--server` names,
    else in-process with --backend and --threads."""
    client = client_from_args(args)
    if client is not None:
        with client:
            return client.call(family, pairs, params)
    return registry.family(family).entry_point()(pairs, params, backend=args.backend, threads=args.threads)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="warpdp serve", description="Serve warpdp's kernels over gRPC.")
    add_serve_arguments(parser)
    return run_serve(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
