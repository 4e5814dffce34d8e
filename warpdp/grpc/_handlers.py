"""The warpdp.v1 RPC handlers: ServerInfo and, for each algorithm, a unary and a stream RPC
served by the same two coroutines."""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import grpc
import numpy as np

from ..kernels.runtime.slots import register_read_only
from . import _shm_server, _wire, warpdp_pb2
from ._admission import MemoryBudget, Reservation, receive_bytes, request_cost
from ._algorithm import InvalidRequest, Job
from ._batcher import _DROPPED, _FAILED, Batcher, BatcherClosed, WorkItem
from ._calls import (_CallStats, _check_parsed, _failure_status, _page_locked_or_plain, _RpcFailure, _sized,
                     _Stream, out_of_memory_message)
from ._config import _DECODE_OFF_LOOP_BYTES, _MAP_FAILURES_BEFORE_READING, SERVICE_NAME, ServerConfig
from ._kernel import AlgorithmKernel
from ._metrics import Metrics

logger = logging.getLogger("warpdp.grpc")


class WarpdpServicer:
    """The warpdp.v1 RPCs, served by a grpc.aio server: handlers are coroutines on one event
    loop. Each algorithm's unary and stream RPC go through the same two handlers
    (:meth:`_unary`, :meth:`_stream`), driven by its AlgorithmKernel.

    Why asyncio: a thread-per-call server pays a thread hand-off and a wake-up per request under
    one interpreter lock, which caps batching (BENCHMARKS.md, "the asyncio server"). Here the
    batcher wakes the loop once per submission (:meth:`resolve`), and all of a call's Python
    work runs on the loop's thread.
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

    def add_to_server(self, server: grpc.aio.Server) -> None:
        """Register the service: ServerInfo, and for each kernel (one per registered family)
        ``<rpc>`` and ``<rpc>Stream``, both served by the two generic handlers below. The unary
        methods are served as client streams (the same calls on the wire, where a client sends
        one message): gRPC reads a unary call's message before the handler starts, while a
        stream's handler reads it when it asks, after admission."""
        handlers = {"ServerInfo": grpc.unary_unary_rpc_method_handler(
            self.ServerInfo, request_deserializer=warpdp_pb2.ServerInfoRequest.FromString,
            response_serializer=warpdp_pb2.ServerInfoReply.SerializeToString)}
        for kernel in self._kernels.values():
            algorithm = kernel.algorithm
            # context.read() then gives the message, its size on the wire and its arrays (_Received).
            read = _sized(algorithm.request_reader)
            write = _wire.serialize  # replies come encoded (bytes) or as messages
            unary, stream = self._methods(kernel)
            handlers[algorithm.rpc] = grpc.stream_unary_rpc_method_handler(
                unary, request_deserializer=read, response_serializer=write)
            handlers[algorithm.rpc + "Stream"] = grpc.stream_stream_rpc_method_handler(
                stream, request_deserializer=read, response_serializer=write)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
        server.add_registered_method_handlers(SERVICE_NAME, handlers)

    def _methods(self, kernel: AlgorithmKernel) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """A kernel's unary and stream RPC methods. They read their messages themselves, once the
        memory budget has room (the unary one gets the call's one-message request iterator)."""
        async def unary(request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
            return await self._unary(kernel, context)

        async def stream(request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
            async for reply in self._stream(kernel, context):
                yield reply

        return unary, stream

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
            request, nbytes, packed = received
            _check_parsed(request, method, "")
            await reservation.resize(request_cost(kernel.algorithm, request, nbytes, self._config.max_message_bytes,
                                                  packed),
                                     self._admission_wait(context), "the request")
            job = await self._decode(kernel, request, context, "", nbytes, packed)
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
        except asyncio.CancelledError:
            code = grpc.StatusCode.CANCELLED
            raise
        except Exception as exc:  # an _RpcFailure's status, or one for what the handler did not expect
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
        """Chunks are read, decoded and queued by a reader task (:meth:`_read_chunks`) while
        replies go back in order; at most the stream window's chunks are queued and not yet
        answered. Each chunk holds its own reservation on the memory budget, from before it is
        read until it is answered."""
        method = kernel.algorithm.rpc + "Stream"
        await self._refuse_when_stopping(method, context)
        start = time.monotonic()
        code, cells = grpc.StatusCode.OK, 0
        stream = _Stream(self._stream_window)

        def cancel_queued(_call: Any = None) -> None:
            stream.over = True  # a chunk queued from now on is cancelled by whoever queues it
            for item in list(stream.items):
                self._batcher.cancel(item, "cancelled")

        self.active += 1
        self._metrics.in_flight.inc()
        context.add_done_callback(cancel_queued)
        reader = asyncio.get_running_loop().create_task(self._read_chunks(kernel, context, method, stream))
        try:
            while True:
                entry = await stream.entries.get()
                if entry is _Stream.END:
                    break
                if isinstance(entry, _RpcFailure):
                    raise entry
                index, item, job, reservation = entry
                reply = await self._reply(kernel, item, job, index)
                stream.items.discard(item)
                stream.room.release()
                cells += job.cells
                yield reply
                reservation.release()
                stream.held.discard(reservation)
        except asyncio.CancelledError:
            code = grpc.StatusCode.CANCELLED
            raise
        except Exception as exc:  # an _RpcFailure's status, or one for what the handler did not expect
            code, message = _failure_status(method, exc)
            await context.abort(code, message)
        finally:
            reader.cancel()
            cancel_queued()
            for reservation in stream.held:
                reservation.release()
            self.active -= 1
            self._metrics.in_flight.dec()
            self._done(method, code, cells, start)

    async def _read_chunks(self, kernel: AlgorithmKernel, context: grpc.aio.ServicerContext, method: str,
                           stream: _Stream) -> None:
        """A stream's reader task: each chunk is admitted, read, decoded and queued, then
        handed to the replying side (stream.entries), which gets END after the last, or the
        failure that ended the stream."""
        index = 0
        try:
            while True:
                await stream.room.acquire()
                reservation = Reservation(self._budget)
                stream.held.add(reservation)
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
                request, nbytes, packed = received
                _check_parsed(request, method, f"chunk {index}: ")
                await reservation.resize(
                    request_cost(kernel.algorithm, request, nbytes, self._config.max_message_bytes, packed),
                    self._admission_wait(context), f"chunk {index}")
                job, item = await self._decode_chunk(kernel, request, context, f"chunk {index}: ", stream, nbytes,
                                                     packed)
                stream.entries.put_nowait((index, item, job, reservation))
                index += 1
            stream.entries.put_nowait(_Stream.END)
        except _RpcFailure as failure:
            stream.entries.put_nowait(failure)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            stream.entries.put_nowait(_RpcFailure(*_failure_status(method, exc)))

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
    def _decodes_off_loop(request: Any, nbytes: int) -> bool:
        """Whether decoding the request (of nbytes on the wire) blocks long enough to move it
        off the event loop."""
        return request.HasField("shared_file") or nbytes >= _DECODE_OFF_LOOP_BYTES

    @staticmethod
    def _deadline(context: grpc.aio.ServicerContext) -> float | None:
        """The call's deadline on time.monotonic()'s clock (None: no deadline)."""
        remaining = context.time_remaining()
        return None if remaining is None else time.monotonic() + remaining

    async def _decode(self, kernel: AlgorithmKernel, request: Any, context: grpc.aio.ServicerContext,
                      chunk: str, nbytes: int, packed: SimpleNamespace | None) -> Job:
        if self._decodes_off_loop(request, nbytes):
            peer = context.peer()
            return await asyncio.get_running_loop().run_in_executor(
                self._blocking_pool, self._decode_blocking, kernel, request, peer, chunk, packed)
        return self._decode_blocking(kernel, request, context.peer(), chunk, packed)

    async def _decode_chunk(self, kernel: AlgorithmKernel, request: Any, context: grpc.aio.ServicerContext,
                            chunk: str, queued: _Stream, nbytes: int,
                            packed: SimpleNamespace | None) -> tuple[Job, WorkItem | None]:
        """A stream's chunk decoded, checked and queued (None: nothing to score). Off the event
        loop when large, where the thread that decoded it also queues it: a trip back through
        the busy loop first would only delay the backend."""
        waiter = asyncio.get_running_loop().create_future()
        args = (kernel, request, context.peer(), chunk, self._deadline(context), waiter, queued, packed)
        if self._decodes_off_loop(request, nbytes):
            return await asyncio.get_running_loop().run_in_executor(self._blocking_pool, self._queue_chunk, *args)
        return self._queue_chunk(*args)

    def _queue_chunk(self, kernel: AlgorithmKernel, request: Any, peer: str, chunk: str, deadline: float | None,
                     waiter: Any, queued: _Stream, packed: SimpleNamespace | None) -> tuple[Job, WorkItem | None]:
        job = self._decode_blocking(kernel, request, peer, chunk, packed)
        self._check_limits(kernel, job, chunk)
        if not job.n_pairs:
            return job, None
        item = self._submit(kernel, job, deadline, waiter, streamed=True, deliver=self._results_writer(kernel, request))
        queued.items.add(item)
        if queued.over:  # the stream ended while this chunk was decoded
            self._batcher.cancel(item, "cancelled")
        return job, item

    def _decode_blocking(self, kernel: AlgorithmKernel, request: Any, peer: str, chunk: str,
                         packed: SimpleNamespace | None) -> Job:
        """``packed``: the packed input's arrays when they were read out of the message (see _wire)."""
        if request.HasField("shared_file"):
            packed = self._read_shared_file(kernel, request, peer, chunk, packed)
        try:
            return kernel.algorithm.decode(request, packed)
        except InvalidRequest as exc:  # "invalid <field>: <problem>"
            raise _RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{chunk}{exc}") from None

    def _read_shared_file(self, kernel: AlgorithmKernel, request: Any, peer: str, chunk: str,
                          in_message: SimpleNamespace | None) -> SimpleNamespace:
        """The packed arrays of a request that handed them over in shared memory (a memfd the
        caller registered, see _shm_server); for a GPU kernel in page-locked memory, which the
        GPU copies from without a copy on the host first. ``in_message``: the arrays read out of
        the message itself, which must then be empty."""
        algorithm = kernel.algorithm
        if (getattr(request, algorithm.packed_field).ByteSize()
                or (in_message is not None and any(len(array) for array in vars(in_message).values()))):
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
        reply_bytes = kernel.algorithm.reply_bytes(job)
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
        and left room for them (else in the message: ragged results may not fit)."""
        registry = self._shared_memory
        if registry is None or not request.HasField("shared_file") or not request.shared_file.reply_offset:
            return None
        handle, offset, algorithm = request.shared_file.handle, int(request.shared_file.reply_offset), kernel.algorithm

        def write(rows: np.ndarray) -> bool:
            try:
                with registry.open(handle) as region:
                    return _shm_server.write_results(region, offset, algorithm.file_arrays(rows))
            except _shm_server.SharedFileRejected:  # unregistered meanwhile: its client has gone
                return False
        return write

    async def _reply(self, kernel: AlgorithmKernel, item: WorkItem | None, job: Job, chunk: int) -> Any:
        if item is None:  # nothing to score
            return kernel.algorithm.encoded_reply(None, 0, chunk,
                                                  warpdp_pb2.CallStats(backend=kernel.backend, cells=job.cells))
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
                raise _RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, out_of_memory_message(error))
            raise _RpcFailure(grpc.StatusCode.INTERNAL, f"the backend failed: {type(error).__name__}: {error}")
        assert item.result is not None
        stats = warpdp_pb2.CallStats(backend=kernel.backend, cells=job.cells, queue_us=int(item.queue_s * 1e6),
                                     compute_us=int(item.compute_s * 1e6), coalesced_requests=item.coalesced,
                                     submission_cells=item.submission_cells)
        # Results written into the request's shared file are left out of the reply.
        return kernel.algorithm.encoded_reply(None if item.delivered else item.result, job.n_pairs, chunk, stats)

    def _done(self, method: str, code: grpc.StatusCode, cells: int, start: float) -> None:
        latency = time.monotonic() - start
        self._metrics.finished(method, code.name, latency)
        self._stats.add(code == grpc.StatusCode.OK, cells, latency, self._batcher)
