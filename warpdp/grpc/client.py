"""`warpdp.grpc.Client`: the local scoring API (``warpdp.pairhmm``, ``warpdp.xdrop``,
``warpdp.seed_extend``) against warpdp servers.

    with Client("127.0.0.1:50051") as client:
        likelihoods = client.pairhmm(batches)          # same values as warpdp.pairhmm(batches)
        extended = client.xdrop(pairs, k=17, x=100)    # same as warpdp.xdrop(pairs, k=17, x=100)
        seeds = client.seed_extend(seed_pairs)         # same as warpdp.seed_extend(seed_pairs)

Several addresses (``Client(["10.0.0.1:50051", "10.0.0.2:50051"])`` or ``"a:50051,b:50051"``)
give one channel with gRPC's ``round_robin`` load balancing over them: calls are spread
across the servers. Jobs too large for one message are split into chunks and streamed
(one stream per server, in parallel, when there are several).

A client on the server's own host (a loopback address or a Unix socket) hands large jobs'
arrays to the server in shared memory instead of inside messages, when the server allows it
(``SharedFile`` in warpdp.proto): memfds of its own, registered over the server's Unix
socket. ``shared_files=False`` turns that off. When the socket is not there (the server runs
in another network namespace, or on another host behind a loopback address) the client sends
messages; when the server refuses its memory, it says so in a warning and sends messages from
then on.
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from ..plugin.pairhmm import PairHmmBatches, check_output_array
from .. import registry
from ..plugin.seedext import SeedExtPairs, SeedExtParams, SeedExtResults
from ..plugin.xdrop import XdropPairs, XdropResults
from . import _shm_client, _wire, warpdp_pb2, warpdp_pb2_grpc
from ._algorithm import Algorithm
from ._client_address import _target
from ._client_chunks import _SHARED_IN_FLIGHT, _ChunkFeed, _SharedChunks, _SharedFilesUnusable  # noqa: F401 (_SHARED_IN_FLIGHT: tests read it here)
from ._config import SERVICE_NAME
from ._packing import CellLimit

# Before the server's limits are known, jobs up to this size go in one message without
# asking (they fit any sensibly configured server, including gRPC's default 4 MiB limit).
_SAFE_CELLS = 64_000_000
_SAFE_BYTES = 3 * 1024 * 1024
# A streamed chunk is at most this large, so sending chunk k+1 overlaps computing chunk k.
_CHUNK_BYTES = 16 * 1024 * 1024
# Jobs with at least this many bytes of arrays go through shared memory (same host only), in
# chunks of at most _SHARED_CHUNK_BYTES, so writing chunk k+1 overlaps scoring chunk k. Every
# chunk costs the server fixed host work, so they are large.
_SHARED_MIN_BYTES = 1024 * 1024
_SHARED_CHUNK_BYTES = 64 * 1024 * 1024
# A GPU server's chunks: about 1/_SHARED_CHUNKS_PER_JOB of the job, at least
# _SHARED_CHUNK_CELLS and at most its request limit. Larger chunks cost the server less host
# work per cell, but the GPU waits for the first and the caller for the last: a job of a few
# chunks keeps them small (the GPU scores one in milliseconds, BENCHMARKS.md).
_SHARED_CHUNK_CELLS = 4_000_000_000
_SHARED_CHUNKS_PER_JOB = 12
# The first streamed chunk is this small and each next one twice the one before (up to the
# sizes above): the server starts scoring after a short first transfer, not a full chunk's.
_FIRST_CHUNK_BYTES = 2 * 1024 * 1024
_SHARED_FIRST_CHUNK_BYTES = 4 * 1024 * 1024
logger = logging.getLogger("warpdp.grpc")


class ServiceError(RuntimeError):
    """A call to a warpdp server failed; `code` is the grpc.StatusCode, `details` its message."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


class InvalidRequestError(ServiceError, ValueError):
    """The server rejected the input (INVALID_ARGUMENT); also a ValueError, as local scoring raises."""


def _service_error(error: grpc.RpcError) -> ServiceError:
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(error)
    cls = InvalidRequestError if code == grpc.StatusCode.INVALID_ARGUMENT else ServiceError
    return cls(code, details)


# gRPC repeats a call that found no server (restart, failover) itself, as long as no reply has come
# (every warpdp call is idempotent): UNAVAILABLE, up to RETRIES more times, backing off from 0.25 s.
# Health checks are probes and not retried. Requests are kept for a retry up to the buffer sizes below.
RETRIES = 2
_RETRY_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.enable_retries", 1),
    ("grpc.service_config", json.dumps({"methodConfig": [{
        "name": [{"service": "warpdp.v1.Warpdp"}],
        "retryPolicy": {"maxAttempts": RETRIES + 1, "initialBackoff": "0.25s", "maxBackoff": "5s",
                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})),
    ("grpc.per_rpc_retry_buffer_size", 256 << 20),
    ("grpc.retry_buffer_size", 1 << 30),
)


class Client:
    """Scores through one or more warpdp servers; the same results as local scoring.

    ``address_or_addresses``: ``"host:port"``, ``"host:port,host:port"``, a list of them, or
    any gRPC target (``"dns:///name:port"`` balances over all its addresses).
    ``token``: bearer token sent as ``authorization`` metadata. ``tls_ca``: PEM file (or
    bytes) of the CA that signed the servers' certificates; enables TLS (``tls=True``
    enables it with the system's CAs). ``timeout``: seconds per call (a whole streamed job
    counts as one call); None = no deadline. ``shared_files``: hand large jobs to the server
    in shared memory when the server is on this host and allows it.
    """

    def __init__(self, address_or_addresses: str | Sequence[str], *, token: str | None = None,
                 tls_ca: str | Path | bytes | None = None, tls: bool = False, timeout: float | None = None,
                 wait_for_ready: bool = False, options: Sequence[tuple[str, Any]] = (),
                 shared_files: bool = True) -> None:
        if isinstance(address_or_addresses, str):
            addresses = [a.strip() for a in address_or_addresses.split(",") if a.strip()]
        else:
            addresses = [str(a).strip() for a in address_or_addresses if str(a).strip()]
        if not addresses:
            raise ValueError("no server address given")
        if token is not None and (not token or any(c.isspace() for c in token)):
            raise ValueError("token must be non-empty and contain no white space")
        self.addresses = addresses
        self.target, balanced, tls_name = _target(addresses)
        self.timeout = timeout
        self._wait_for_ready = wait_for_ready
        channel_options: list[tuple[str, Any]] = [
            ("grpc.max_send_message_length", -1),     # the server enforces its own limit
            ("grpc.max_receive_message_length", -1),
            *_RETRY_OPTIONS,
        ]
        if balanced:
            channel_options.append(("grpc.lb_policy_name", "round_robin"))
        if tls_ca is not None or tls:
            root = tls_ca if isinstance(tls_ca, (bytes, type(None))) else Path(tls_ca).read_bytes()
            if tls_name is not None:
                # Resolved host names: check the certificate against the name, not the IP.
                channel_options.append(("grpc.ssl_target_name_override", tls_name))
            channel_options.extend(options)
            self._channel = grpc.secure_channel(self.target, grpc.ssl_channel_credentials(root_certificates=root),
                                                options=channel_options)
        else:
            channel_options.extend(options)
            self._channel = grpc.insecure_channel(self.target, options=channel_options)
        self._stub = warpdp_pb2_grpc.WarpdpStub(self._channel)
        self._methods: dict[str, Any] = {}  # RPC name -> its callable (see _method)
        self._metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        self._info: warpdp_pb2.ServerInfoReply | None = None
        self._info_lock = threading.Lock()
        self._shared_files = (shared_files and _shm_client.available()
                              and all(_shm_client.is_local_address(a) for a in addresses))
        self._shared_pool: _shm_client.SharedFilePool | None = None
        self._finishing: set[Any] = set()  # stream calls whose results are all in, until they end

    # -- public API --

    def call(self, family: str, payload: Any, params: Any = None, *, out: Any = None,
             timeout: float | None = None) -> Any:
        """Run a registered kernel family (warpdp.registry) on the server: what its local API
        returns, for its packed input and parameters (the family's own: e.g. a mapping of
        warpdp.xdrop's keyword arguments, or an XdropKey). ``out``: where to collect the
        results (the family's new_output; a new one by default).

        Raises TypeError/ValueError for bad input (checked here first, as locally),
        :class:`ServiceError` when a call fails (code UNAVAILABLE, RESOURCE_EXHAUSTED, ...).
        """
        algorithm = registry.family(family).algorithm()
        key = algorithm.client_key(payload, params)
        if out is None:
            out = algorithm.new_output(algorithm.n_pairs(payload))
        self._run(payload, key, out, timeout)
        return algorithm.results(out)

    def pairhmm(self, batches: PairHmmBatches, double: bool = False, *, out: np.ndarray | None = None,
                timeout: float | None = None) -> np.ndarray:
        """Log10 likelihoods of every pair of every batch, as :func:`warpdp.pairhmm` returns them.
        Errors as :meth:`call`."""
        if out is not None and isinstance(batches, PairHmmBatches):
            batches.validate()
            check_output_array(out, batches.n_pairs)
        return self.call("pairhmm", batches, double, out=out, timeout=timeout)

    def xdrop(self, pairs: XdropPairs, *, k: int, x: int, match: int = 1, mismatch: int = -1, gap: int = -1,
              report: str = "longest", timeout: float | None = None) -> XdropResults:
        """Gapped X-drop extension of every pair, as :func:`warpdp.xdrop` returns it (same
        parameters; the server's backend computes). Errors as :meth:`call`."""
        params = dict(k=k, x=x, match=match, mismatch=mismatch, gap=gap, report=report)
        return self.call("xdrop", pairs, params, timeout=timeout)

    def seed_extend(self, pairs: SeedExtPairs, *, a: int = 1, b: int = 4, o_del: int = 6, e_del: int = 1,
                    o_ins: int = 6, e_ins: int = 1, w: int = 100, end_bonus: int = 5, zdrop: int = 100,
                    timeout: float | None = None) -> SeedExtResults:
        """Seed extension of every pair, as :func:`warpdp.seed_extend` returns it (BWA-MEM's
        defaults). Errors as :meth:`call`."""
        params = SeedExtParams(a=a, b=b, o_del=o_del, e_del=e_del, o_ins=o_ins, e_ins=e_ins, w=w,
                               end_bonus=end_bonus, zdrop=zdrop)
        return self.seed_extend_with(pairs, params, timeout=timeout)

    def seed_extend_with(self, pairs: SeedExtPairs, params: SeedExtParams, *,
                         timeout: float | None = None) -> SeedExtResults:
        """:meth:`seed_extend` with the parameters as one :class:`warpdp.SeedExtParams`."""
        if not isinstance(params, SeedExtParams):
            raise TypeError(f"params must be SeedExtParams, not {type(params).__name__}")
        return self.call("seedext", pairs, params, timeout=timeout)

    def server_info(self, *, timeout: float | None = None) -> warpdp_pb2.ServerInfoReply:
        """The server's version, backend, devices, batching settings and limits (cached)."""
        with self._info_lock:
            if self._info is None:
                try:
                    self._info = self._stub.ServerInfo(warpdp_pb2.ServerInfoRequest(), metadata=self._metadata,
                                                       timeout=self.timeout if timeout is None else timeout,
                                                       wait_for_ready=self._wait_for_ready)
                except grpc.RpcError as exc:
                    raise _service_error(exc) from None
            return self._info

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Block until the channel is connected (grpc.FutureTimeoutError after `timeout`)."""
        grpc.channel_ready_future(self._channel).result(timeout=timeout)

    def close(self) -> None:
        self._channel.close()
        with self._info_lock:
            if self._shared_pool is not None:
                self._shared_pool.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals (one path for every algorithm: the payload's type says which) --

    def _run(self, payload: Any, key: Any, out: np.ndarray, timeout: float | None) -> None:
        """Score validated input into out: one unary call when it fits, else split and streamed."""
        algorithm = registry.family_for_payload(payload).algorithm()
        if algorithm.n_pairs(payload) == 0:
            return
        timeout = self.timeout if timeout is None else timeout
        if self._shared_files and algorithm.request_bytes(payload) >= _SHARED_MIN_BYTES:
            pool = self._pool(timeout)
            if pool is not None:
                try:
                    self._run_shared(pool, algorithm, payload, key, out, timeout)
                    return
                except _SharedFilesUnusable as exc:
                    logger.warning("warpdp client: sending arrays in messages from now on: %s", exc)
                    self._shared_files = False
        if self._info is None and algorithm.fits(payload, key, _SAFE_CELLS, _SAFE_BYTES):
            try:
                self._unary(payload, key, out, timeout)
                return
            except ServiceError as exc:
                if exc.code != grpc.StatusCode.RESOURCE_EXHAUSTED:
                    raise
                # A server with smaller limits than assumed: learn them and split.
        info = self.server_info(timeout=timeout)
        max_cells = info.limits.max_request_cells
        max_bytes = info.limits.max_message_bytes
        if algorithm.fits(payload, key, max_cells, max_bytes):
            self._unary(payload, key, out, timeout)
            return
        chunks = algorithm.plan(payload, key, _chunk_cells(info), min(max_bytes, _CHUNK_BYTES), _FIRST_CHUNK_BYTES)
        self._streams(algorithm, chunks, key, out, timeout)

    def _pool(self, timeout: float | None) -> _shm_client.SharedFilePool | None:
        """This client's memfds registered with the server, when the server takes them from
        here; else None."""
        info = self.server_info(timeout=timeout)
        with self._info_lock:
            if self._shared_pool is None:
                if not (info.shared_files.enabled and info.shared_files.socket):
                    self._shared_files = False
                    return None
                try:
                    connection = _shm_client.Connection(info.shared_files.socket)
                except OSError as exc:  # not this host's (or this network namespace's) server
                    logger.info("warpdp client: no shared memory with the server (%s); sending messages", exc)
                    self._shared_files = False
                    return None
                self._shared_pool = _shm_client.SharedFilePool(connection)
            return self._shared_pool

    def _run_shared(self, pool: _shm_client.SharedFilePool, algorithm: Algorithm, payload: Any, key: Any,
                    out: np.ndarray, timeout: float | None) -> None:
        """Stream the job in chunks whose arrays travel in shared memory (cut as they are
        written when one stream takes them all)."""
        chunks = _shared_file_chunks(payload, key, self.server_info(timeout=timeout))
        try:
            self._streams(algorithm, chunks, key, out, timeout, pool)
        except ServiceError as exc:
            if exc.code == grpc.StatusCode.FAILED_PRECONDITION and "shared file unusable" in exc.details:
                raise _SharedFilesUnusable(exc.details) from None
            raise

    def _method(self, algorithm: Algorithm, stream: bool) -> Any:
        """The callable of an algorithm's unary or stream RPC, made from its messages (not the
        generated stub), so that a family registered at run time is called the same way."""
        name = algorithm.rpc + ("Stream" if stream else "")
        method = self._methods.get(name)
        if method is None:
            make = self._channel.stream_stream if stream else self._channel.unary_unary
            method = self._methods[name] = make(f"/{SERVICE_NAME}/{name}",
                                                request_serializer=_wire.serialize,  # encoded or a message
                                                response_deserializer=algorithm.reply_type.FromString)
        return method

    def _unary(self, payload: Any, key: Any, out: np.ndarray, timeout: float | None) -> None:
        algorithm = registry.family_for_payload(payload).algorithm()
        request = algorithm.encoded_request(payload, key)
        try:
            reply = self._method(algorithm, False)(request, metadata=self._metadata, timeout=timeout,
                                                   wait_for_ready=self._wait_for_ready)
        except grpc.RpcError as exc:
            raise _service_error(exc) from None
        _store(algorithm, reply, out, 0, algorithm.n_pairs(payload), algorithm.rpc)

    def _streams(self, algorithm: Algorithm, chunks: Iterable[Any], key: Any, out: np.ndarray,
                 timeout: float | None, shared: _shm_client.SharedFilePool | None = None) -> None:
        if len(self.addresses) > 1:
            chunks = list(chunks)  # shared out below, so all cut now
        if len(self.addresses) == 1 or len(chunks) <= 1:
            self._stream(algorithm, chunks, 0, key, out, timeout, [], shared)
            return
        offsets = np.concatenate([[0], np.cumsum([algorithm.n_pairs(c) for c in chunks])]).astype(np.int64)
        n_streams = min(len(self.addresses), len(chunks))
        # Several servers: one stream per server (round_robin spreads the calls), each over a
        # contiguous share of the chunks with about the same number of cells.
        cells = np.cumsum([algorithm.cells(c, key) for c in chunks])
        bounds = [0, *(int(np.searchsorted(cells, cells[-1] * k / n_streams)) + 1 for k in range(1, n_streams)),
                  len(chunks)]
        bounds = sorted(set(min(b, len(chunks)) for b in bounds))
        calls: list[Any] = []
        with ThreadPoolExecutor(max_workers=len(bounds) - 1, thread_name_prefix="warpdp-client") as pool:
            futures = [pool.submit(self._stream, algorithm, chunks[a:b], int(offsets[a]), key, out, timeout, calls,
                                   shared)
                       for a, b in zip(bounds[:-1], bounds[1:])]
            try:
                for future in futures:
                    future.result()
            except BaseException:
                for call in list(calls):
                    call.cancel()  # the job failed: stop the other streams too
                raise

    def _stream(self, algorithm: Algorithm, chunks: Iterable[Any], first_pair: int, key: Any, out: np.ndarray,
                timeout: float | None, calls: list[Any],
                pool: _shm_client.SharedFilePool | None = None) -> None:
        """One stream call for the chunks, whose results go to out from pair first_pair on.
        With a pool, their arrays go through shared memory (:class:`_SharedChunks`): the call
        is set up first, the first chunk is cut and written here meanwhile, the others by a
        thread of their own (which also cuts them when the chunks are planned lazily)."""
        method = algorithm.rpc + "Stream"
        feed: _ChunkFeed | None = None
        shared = _SharedChunks(algorithm, key, pool) if pool is not None else None

        def requests() -> Any:
            if shared is not None:
                yield from shared.requests()
                return
            while (taken := feed.take()) is not None:  # type: ignore[union-attr]
                yield algorithm.encoded_request(taken[1], key)

        def start_call() -> Any:
            call = self._method(algorithm, True)(requests(), metadata=self._metadata, timeout=timeout,
                                                 wait_for_ready=self._wait_for_ready)
            calls.append(call)
            return call

        received = 0
        call = None
        try:
            if shared is not None:
                # The call first: gRPC sets the stream up, and the server its handler, while
                # this thread cuts and writes the first chunk (requests() waits for it).
                call = start_call()
            feed = _ChunkFeed(algorithm, chunks, first_pair)
            if shared is not None:
                shared.start(feed)
            else:
                call = start_call()
            for reply in call:
                if received >= len(feed.ranges) or reply.chunk != received:
                    raise ServiceError(grpc.StatusCode.INTERNAL,
                                       f"{method} answered chunk {reply.chunk} where {received} was expected")
                in_file = shared.in_files.get(received) if shared is not None else None
                _store(algorithm, reply, out, *feed.ranges[received], f"chunk {received}", in_file)
                if shared is not None:
                    shared.answered(received)
                received += 1
                if received == feed.count:
                    # Every result is in: do not wait for the call's status too (another round
                    # trip). The call is kept until it ends, so that it is not cancelled.
                    self._finishing.add(call)
                    call.add_done_callback(self._finishing.discard)
                    break
        except grpc.RpcError as exc:
            raise _service_error(exc) from None
        except BaseException:
            if call is not None and feed is None:  # the first chunk could not be cut: nothing to send
                call.cancel()
            raise
        finally:
            if shared is not None:
                shared.close()
        if shared is not None:
            shared.raise_errors()
        if received != feed.count:
            raise ServiceError(grpc.StatusCode.INTERNAL,
                               f"{method} ended after {received} of {feed.count or len(feed.ranges)} chunks")


def _chunk_cells(info: warpdp_pb2.ServerInfoReply) -> int:
    """Cells per streamed chunk: the request limit, and with batching one backend submission,
    so that chunks keep the server's pipeline full."""
    if info.batching.enabled:
        return min(info.limits.max_request_cells, max(info.batching.max_batch_cells, 1))
    return info.limits.max_request_cells


def _shared_file_chunks(payload: Any, key: Any, info: warpdp_pb2.ServerInfoReply) -> Iterator[Any]:
    """How a job is split to go through shared memory: growing chunks of up to
    _SHARED_CHUNK_BYTES, cut as they are asked for (the first is written while the others
    are still to be cut). A GPU server scores even a chunk at the request limit in
    milliseconds, so fewer chunks mean less fixed cost per job (see _SHARED_CHUNK_CELLS); a
    CPU server's chunks stay submission-sized, so that other callers' requests do not queue
    behind seconds of one job's work."""
    max_cells: CellLimit = (partial(_gpu_chunk_cells, info.limits.max_request_cells) if info.backend == "gpu"
                            else _chunk_cells(info))
    return registry.family_for_payload(payload).algorithm().iter_plan(payload, key, max_cells,
                                            min(info.limits.max_message_bytes, _SHARED_CHUNK_BYTES),
                                            _SHARED_FIRST_CHUNK_BYTES)


def _gpu_chunk_cells(request_limit: int, job_cells: int) -> int:
    """Cells per shared-memory chunk of a job of job_cells for a GPU server (_SHARED_CHUNK_CELLS)."""
    return min(request_limit, max(_SHARED_CHUNK_CELLS, job_cells // _SHARED_CHUNKS_PER_JOB))


def _store(algorithm: Algorithm, reply: Any, out: np.ndarray, start: int, stop: int, what: str,
           shared: tuple[_shm_client.SharedFile, int] | None = None) -> None:
    """A reply's results into out[start:stop]: from the message, or from the request's memfd
    (shared: the memfd and its reply offset) when the server wrote them there."""
    try:
        if shared is not None and shared[1] and stop > start and not algorithm.results_in_message(reply):
            file, offset = shared
            # Ragged results' size is in the file (their CIGAR offsets): all the room left is read.
            room = file.capacity - offset if algorithm.ragged else algorithm.reply_bytes_per_pair * (stop - start)
            data = file.view(offset, room)
            try:
                algorithm.store_file_results(reply, data, out, start, stop)
            finally:
                del data  # the memfd may be closed once released
        else:
            algorithm.store(reply, out, start, stop)
    except ValueError as exc:  # a reply that does not match its request: the server is at fault
        raise ServiceError(grpc.StatusCode.INTERNAL, f"{what}: {exc}") from None


__all__ = ["Client", "InvalidRequestError", "ServiceError"]
