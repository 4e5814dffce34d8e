"""The interface the gRPC service and client are written against: one :class:`Algorithm` per
kernel family (see _algorithms for the built-in ones, warpdp.registry for the list).

An :class:`Algorithm` says how its request and reply messages map to warpdp's packed data
model (both directions), how many DP cells a request counts against the limits, which requests
may share a backend submission (the *key*: the request's parameters), how to merge and run
requests, and how a client splits a job too large for one message. The server's unary and
stream handlers and the client's call / split / stream path are written once against this
interface; adding a family is one more description plus its registry entry.

Results travel inside the service as one row per pair (a float64 vector for Pair-HMM, an
(n_pairs, columns) integer table for the others), or as a warpdp.plugin.core.results.Results
when they are ragged. A client collects them column-major (:meth:`Algorithm.new_output`), so
the columns it returns are contiguous, as local scoring's.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from ..plugin.cancel import CancelCheck, SliceCells
from . import _packing, _wire, warpdp_pb2


class InvalidRequest(ValueError):
    """Malformed input; the message starts with ``invalid <where>:``, where names the message or
    field at fault (``PairHmmRequest.batches``, ``XdropRequest``)."""

    def __init__(self, where: str, problem: BaseException | str) -> None:
        super().__init__(f"invalid {where}: {problem}")
        self.where = where


@dataclass(frozen=True)
class Job:
    """A decoded, validated request."""

    payload: Any     # the packed input: PairHmmBatches, XdropPairs or SeedExtPairs
    key: Hashable    # its parameters: only requests with equal keys share a backend submission
    n_pairs: int     # results (rows) it yields
    cells: int       # DP cells it counts against the limits and the batching cap


class Algorithm(ABC):
    """One algorithm's RPC pair: ``<rpc>`` (unary) and ``<rpc>Stream``."""

    name: ClassVar[str]                 # ServerInfo.algorithms name and metrics label
    rpc: ClassVar[str]                  # the unary RPC's name
    payload_type: ClassVar[type]        # the packed input class
    request_type: ClassVar[type]        # the request message class
    reply_type: ClassVar[type]          # the reply message class
    packed_field: ClassVar[str]         # the request's field holding the packed input
    packed_message: ClassVar[type]      # that field's message class (PairHmmBatches, ...)
    reply_bytes_per_pair: ClassVar[int]  # result bytes per pair in a reply
    # Set where the GPU launcher never reads the input's arrays on the host (it uploads
    # page-locked input from where it lies): a GPU server then leaves all but these fields in a
    # page-locked mapping of the client's shared file, and reads only these (the offsets it
    # checks and plans with). None: the whole file is read.
    mapped_file_host_fields: ClassVar[tuple[str, ...] | None] = None
    # Whether a reply's size depends on the results (a ragged CIGAR), not only on its pairs.
    # Such results (a Results with a CIGAR) go into a shared file as result_columns (name and
    # little-endian dtype of each column, in order), then the CIGAR (see
    # _packing.ragged_file_arrays), when the client left room for reply_bytes' bound; else
    # in the message.
    ragged: ClassVar[bool] = False
    result_columns: ClassVar[tuple[tuple[str, str], ...]] = ()
    # For input of sequences: the (bases, offsets) field names of the packed message (the
    # memory budget counts a message's pairs from the first offsets; see pairs_in_message).
    sequences: ClassVar[tuple[tuple[str, str], ...]] = ()
    # The packed message's uint8 fields (bases, qualities), which a server reads where they lie
    # in the received message; its other fields hold int64 values and are read 8-byte aligned
    # (see _wire.ArrayFields). None: the bases of ``sequences``.
    byte_fields: ClassVar[tuple[str, ...] | None] = None

    # -- both sides --

    @abstractmethod
    def key_fields(self, key: Hashable) -> dict[str, Any]:
        """The request's parameter fields for a key."""

    def request(self, payload: Any, key: Hashable, shared_file: warpdp_pb2.SharedFile | None = None) -> Any:
        """The request message for packed input and parameters (both already validated); with
        shared_file, the arrays are in that file (written from :meth:`wire_arrays`), not in the message."""
        if shared_file is not None:
            return self.request_type(shared_file=shared_file, **self.key_fields(key))
        packed = _packing.packed_message(self.packed_message, payload)
        return self.request_type(**{self.packed_field: packed}, **self.key_fields(key))

    def encoded_request(self, payload: Any, key: Hashable) -> bytes:
        """:meth:`request` serialized, with each array copied once: straight into the bytes."""
        return _wire.encode_nested(self.request_type(**self.key_fields(key)), self.packed_field,
                                   self.wire_arrays(payload))

    def wire_arrays(self, payload: Any) -> dict[str, np.ndarray]:
        """The input's arrays encoded as the packed message's fields, in field-number order."""
        return _packing.wire_arrays(self.packed_message, payload)

    @abstractmethod
    def decode(self, request: Any, packed: Any = None) -> Job:
        """The validated job of a request message; :class:`InvalidRequest` naming the field.
        ``packed``: the packed input's arrays by field name when they did not come in the
        message (a shared file); else the request's own packed message is used."""

    @abstractmethod
    def cells(self, payload: Any, key: Hashable) -> int:
        """DP cells the input counts against the limits (see Limits in warpdp.proto)."""

    @abstractmethod
    def request_bytes(self, payload: Any) -> int:
        """Bytes of the input's arrays in a request message (framing excluded)."""

    def n_pairs(self, payload: Any) -> int:
        return int(payload.n_pairs)

    # -- server --

    @cached_property
    def request_reader(self) -> _wire.ArrayFields:
        """How a server reads a received request: its packed input's arrays as views of the
        received bytes (int64 fields aligned), the rest through the protobuf library."""
        byte_fields = self.byte_fields if self.byte_fields is not None else [bases for bases, _ in self.sequences]
        int64_fields = [f.name for f in self.packed_message.DESCRIPTOR.fields if f.name not in byte_fields]
        return _wire.ArrayFields(self.request_type, self.packed_field, int64_fields)

    def pairs_in_message(self, packed: Any) -> int:
        """The pairs of a packed message, counted from its offsets without decoding it (the
        memory budget's estimate; ValueError when they are malformed). This default suits
        input of sequences (``sequences``: (bases, offsets) field names): one per offset but the first."""
        return max(0, len(getattr(packed, self.sequences[0][1])) // 8 - 1)

    def pairs_in_sizes(self, sizes: dict[str, int]) -> int:
        """An upper bound of the pairs of packed arrays of these sizes in bytes (by field)."""
        return max(0, sizes.get(self.sequences[0][1], 0) // 8 - 1)

    def reply_bytes(self, job: Job) -> int:
        """An upper bound of the result bytes a job's reply holds (checked against the message
        limit before the job runs)."""
        return self.reply_bytes_per_pair * job.n_pairs

    def reply_bound(self, payload: Any, key: Hashable) -> int:
        """:meth:`reply_bytes` for packed input (the room a client leaves for results in a shared file)."""
        if not self.ragged:
            return self.reply_bytes_per_pair * self.n_pairs(payload)
        return self.reply_bytes(Job(payload, key, self.n_pairs(payload), self.cells(payload, key)))

    def file_arrays(self, rows: Any) -> list[np.ndarray]:
        """The arrays a server writes back to back into a shared file for result rows:
        :meth:`result_arrays`, or for ragged results the layout of _packing.ragged_file_arrays."""
        if self.ragged:
            return _packing.ragged_file_arrays(rows, self.result_columns)
        return self.result_arrays(rows)

    @abstractmethod
    def merge(self, payloads: list[Any]) -> Any:
        """One input holding all of them, in order (so results split back by pair counts)."""

    @abstractmethod
    def run(self, payload: Any, key: Hashable, *, backend: str, threads: int,
            cancelled: CancelCheck | None = None) -> np.ndarray:
        """Results, one row per pair, in order. ``cancelled``: checked between the GPU
        launcher's chunks (JobCancelled when it returns True; see warpdp.plugin.cancel)."""

    @abstractmethod
    def slices(self, payload: Any, key: Hashable, max_cells: SliceCells) -> Iterator[Any]:
        """Consecutive pieces of about max_cells cells (a function: asked for each piece; a
        unit that cannot be cut, larger than that, alone) whose results concatenated are the
        input's, each cut when asked for: how the server runs a large CPU submission in
        bounded slices (warpdp.plugin.cancel.run_in_slices)."""

    def reply_arrays(self, rows: Any) -> dict[str, np.ndarray] | None:
        """The reply's result fields for result rows, by name, as the C-contiguous little-endian
        arrays their bytes hold; None where a family builds its reply in :meth:`reply` instead
        (a family implements one of the two)."""
        return None

    def reply(self, rows: Any, n_pairs: int, chunk: int, stats: warpdp_pb2.CallStats) -> Any:
        """The reply message for result rows (None: no pairs, or results written into the
        request's shared file: the result fields stay empty)."""
        arrays = {} if rows is None else self.reply_arrays(rows)
        if arrays is None:
            raise NotImplementedError(f"{self.name} implements neither reply nor reply_arrays")
        return self.reply_type(**{name: array.tobytes() for name, array in arrays.items()}, n_pairs=n_pairs,
                               chunk=chunk, stats=stats)

    def encoded_reply(self, rows: Any, n_pairs: int, chunk: int, stats: warpdp_pb2.CallStats) -> Any:
        """:meth:`reply`, serialized with each result array copied once (straight into the
        bytes) where the family gives :meth:`reply_arrays`; else (and without results) the message."""
        arrays = None if rows is None else self.reply_arrays(rows)
        if arrays is None:
            return self.reply(rows, n_pairs, chunk, stats)
        return _wire.encode(self.reply_type(n_pairs=n_pairs, chunk=chunk, stats=stats), arrays)

    @abstractmethod
    def result_arrays(self, rows: np.ndarray) -> list[np.ndarray]:
        """The reply's result fields for result rows, in field-number order, as the
        little-endian arrays their bytes hold (in the message, or in a shared file)."""

    @abstractmethod
    def warmup_jobs(self) -> list[tuple[Any, Hashable]]:
        """Tiny inputs that load (for the GPU: compile) every code path a server will use."""

    @abstractmethod
    def cpu_isas(self) -> list[str]:
        """CPU variants this machine can run, slowest first (the last is the default)."""

    # -- client --

    @abstractmethod
    def client_key(self, payload: Any, params: Any) -> Hashable:
        """The validated key of a client's call (Client.call) for its input and parameters;
        TypeError/ValueError for bad input, as the local API raises them."""

    @abstractmethod
    def new_output(self, n_pairs: int) -> np.ndarray:
        """Where a client collects the results of n_pairs pairs."""

    @abstractmethod
    def store(self, reply: Any, out: np.ndarray, start: int, stop: int) -> None:
        """Put a reply's results for pairs start:stop into out; ValueError when they do not fit."""

    @abstractmethod
    def results_in_message(self, reply: Any) -> bool:
        """Whether a reply with pairs carries its results (else the server wrote them into
        the request's shared file, see SharedFile.reply_offset)."""

    def store_file_results(self, reply: Any, data: np.ndarray, out: np.ndarray, start: int, stop: int) -> None:
        """Put the results for pairs start:stop that the server wrote into a shared file
        (``data``: the file's bytes from the reply offset on) into out; ValueError when the
        reply does not match."""
        n = stop - start
        if reply.n_pairs != n:
            raise ValueError(f"the server returned {reply.n_pairs} pairs where {n} were sent")
        if self.ragged:
            self.store_results(_packing.ragged_from_file(data, n, self.result_columns), out, start, stop)
            return
        if len(data) < self.reply_bytes_per_pair * n:
            raise ValueError(f"the shared file holds {len(data)} bytes of results for {n} pairs")
        self._store_arrays(data, out, start, stop)

    def store_results(self, results: Any, out: Any, start: int, stop: int) -> None:
        """Put ragged results for pairs start:stop, read from a shared file, into out (a
        ragged family's; the others' results never come as a Results)."""
        raise NotImplementedError(f"{self.name} has no ragged results")

    @abstractmethod
    def _store_arrays(self, data: np.ndarray, out: np.ndarray, start: int, stop: int) -> None:
        """Put result_arrays' bytes for pairs start:stop, back to back in data, into out."""

    @abstractmethod
    def results(self, out: np.ndarray) -> Any:
        """What local scoring returns, from a filled new_output()."""

    @abstractmethod
    def iter_plan(self, payload: Any, key: Hashable, max_cells: _packing.CellLimit, max_bytes: int,
                  first_bytes: int | None = None) -> Iterator[Any]:
        """Consecutive pieces, each within max_cells and max_bytes (request and reply), whose
        results concatenated are the input's, each cut when it is asked for; ValueError when
        a single pair does not fit (possibly only once the pieces before it are out). With
        first_bytes, the pieces' byte budget starts there and doubles up to max_bytes.
        max_cells may be a function of the input's total cells (see _packing.CellLimit)."""

    def plan(self, payload: Any, key: Hashable, max_cells: _packing.CellLimit, max_bytes: int,
             first_bytes: int | None = None) -> list[Any]:
        """All pieces of :meth:`iter_plan` at once."""
        return list(self.iter_plan(payload, key, max_cells, max_bytes, first_bytes))

    def fits(self, payload: Any, key: Hashable, max_cells: int, max_bytes: int) -> bool:
        """Whether the whole input goes in one request under these limits."""
        framing = _packing.REQUEST_FRAMING_BYTES
        return (self.cells(payload, key) <= max_cells
                and self.request_bytes(payload) + framing <= max_bytes
                and self.reply_bytes_per_pair * self.n_pairs(payload) + framing <= max_bytes)
