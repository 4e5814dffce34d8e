"""The edit family's service description (registry entry "edit"): EditRequest in, EditReply out,
ragged CIGARs and locations in the reply message, or in the request's shared file (laid out as
_packing.ragged_file_arrays says) when the client left room for them."""
from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

import numpy as np

from . import warpdp_pb2
from ._algorithm import Algorithm, InvalidRequest, Job
from ._packing import REQUEST_FRAMING_BYTES, CellLimit, int64_array, ragged_file_arrays
from ..plugin.core.packed import offsets_of
from ..plugin.edit import EditPairs, EditParams, EditResults, check_windowed_bases, edit, edit_cpu_isas

_STRING_FIELDS = ("mode", "task", "method")
_INT_FIELDS = ("k", "window", "overlap")


class _Collected:
    """A client's results of one job, piece by piece (any order)."""

    def __init__(self) -> None:
        self.parts: dict[int, EditResults] = {}


def _i8(data: bytes) -> np.ndarray:
    """A reply's int64 field as a writable array of the results."""
    return np.frombuffer(data, dtype="<i8").astype(np.int64)


class EditAlgorithm(Algorithm):
    name = "edit"
    rpc = "Edit"
    payload_type = EditPairs
    request_type = warpdp_pb2.EditRequest
    reply_type = warpdp_pb2.EditReply
    packed_field = "pairs"
    packed_message = warpdp_pb2.EditPairs
    sequences = (("query_bases", "query_offsets"), ("target_bases", "target_offsets"))
    reply_bytes_per_pair = 3 * 8
    ragged = True
    result_columns = tuple((name, "<i8") for name in EditResults.COLUMNS)

    def key_fields(self, key: EditParams) -> dict[str, Any]:
        return {name: getattr(key, name) for name in EditParams.field_names()}

    def decode(self, request: Any, packed: Any = None) -> Job:
        fields = {name: getattr(request, name) for name in _STRING_FIELDS + _INT_FIELDS if request.HasField(name)}
        try:
            params = EditParams(**fields)
        except (TypeError, ValueError) as exc:
            raise InvalidRequest("EditRequest", exc) from None
        # The message's pairs, or a shared file's arrays (attributes of the same names).
        message = request.pairs if packed is None else packed
        try:
            pairs = EditPairs.from_arrays(
                query_bases=np.frombuffer(message.query_bases, dtype=np.uint8),
                query_offsets=int64_array(message.query_offsets, "query_offsets"),
                target_bases=np.frombuffer(message.target_bases, dtype=np.uint8),
                target_offsets=int64_array(message.target_offsets, "target_offsets"))
            if params.method == "windowed":
                check_windowed_bases(pairs)
        except (TypeError, ValueError) as exc:
            raise InvalidRequest("EditRequest.pairs", exc) from None
        return Job(pairs, params, pairs.n_pairs, self.cells(pairs, params))

    def cells(self, payload: EditPairs, key: Hashable) -> int:
        # DP cells of the exact problem (query x target per pair).
        m, n = np.diff(payload.query_offsets), np.diff(payload.target_offsets)
        return int(np.dot(m, n))

    def request_bytes(self, payload: EditPairs) -> int:
        return len(payload.query_bases) + len(payload.target_bases) + 16 * (payload.n_pairs + 1)

    def reply_bytes(self, job: Job) -> int:
        # Columns, plus at most one CIGAR op per base and one location per target base (+1).
        bases = len(job.payload.query_bases) + len(job.payload.target_bases)
        return 24 * job.n_pairs + 4 * bases + 16 * (len(job.payload.target_bases) + job.n_pairs) + 16 * (job.n_pairs + 1)

    def reply_bound(self, payload: EditPairs, key: Hashable) -> int:
        # This client reads edit's results from the message (the C client reads them from the file).
        return 0

    def file_arrays(self, rows: EditResults) -> list[np.ndarray]:
        return ragged_file_arrays(rows, self.result_columns, rows.locations)

    def merge(self, payloads: list[EditPairs]) -> EditPairs:
        def joined(bases: str, offsets: str) -> tuple[np.ndarray, np.ndarray]:
            lengths = np.concatenate([np.diff(getattr(p, offsets)) for p in payloads])
            return np.concatenate([getattr(p, bases) for p in payloads]), offsets_of(lengths)

        qb, qo = joined("query_bases", "query_offsets")
        tb, to = joined("target_bases", "target_offsets")
        return EditPairs(qb, qo, tb, to)

    def run(self, payload: EditPairs, key: EditParams, *, backend: str, threads: int,
            cancelled: Any = None) -> EditResults:
        return edit(payload, key, backend=backend, threads=threads, cancelled=cancelled)

    def slices(self, payload: EditPairs, key: Hashable, max_cells: Any) -> Iterator[EditPairs]:
        yield payload

    def reply_arrays(self, rows: EditResults) -> dict[str, np.ndarray]:
        fields = {name: np.ascontiguousarray(rows.columns[name], dtype="<i8") for name in EditResults.COLUMNS}
        if rows.has_cigar:
            assert rows.cigar_ops is not None and rows.cigar_offsets is not None
            fields["cigar_ops"] = np.ascontiguousarray(rows.cigar_ops, dtype="<u4")
            fields["cigar_offsets"] = np.ascontiguousarray(rows.cigar_offsets, dtype="<i8")
        if rows.locations is not None:
            for name, values in zip(("loc_begin", "loc_end", "loc_offsets"), rows.locations):
                fields[name] = np.ascontiguousarray(values, dtype="<i8")
        return fields

    def result_arrays(self, rows: EditResults) -> list[np.ndarray]:
        raise AssertionError("ragged results go into a shared file as file_arrays lays them out")

    def warmup_jobs(self) -> list[tuple[Any, Hashable]]:
        from ..plugin.edit import pack_edit_pairs

        return [(pack_edit_pairs([("ACGT", "ACGGT")]), EditParams())]

    def cpu_isas(self) -> list[str]:
        return edit_cpu_isas()

    def client_key(self, payload: Any, params: Any) -> EditParams:
        if not isinstance(payload, EditPairs):
            raise TypeError(f"edit takes EditPairs, not {type(payload).__name__}")
        if params is None:
            return EditParams()
        if isinstance(params, EditParams):
            return params
        if isinstance(params, dict):  # warpdp.edit's keyword arguments
            return EditParams(**params)
        raise TypeError(f"edit's params must be EditParams or a dict of its fields, not {type(params).__name__}")

    def new_output(self, n_pairs: int) -> _Collected:
        return _Collected()

    def store(self, reply: Any, out: _Collected, start: int, stop: int) -> None:
        columns = {name: _i8(getattr(reply, name)) for name in EditResults.COLUMNS}
        if reply.n_pairs != stop - start or len(columns["distance"]) != stop - start:
            raise ValueError(f"the server returned {len(columns['distance'])} results for {stop - start} pairs")
        ops = offsets = locations = None
        if reply.cigar_offsets:
            ops, offsets = np.frombuffer(reply.cigar_ops, dtype="<u4").astype(np.uint32), _i8(reply.cigar_offsets)
        if reply.loc_offsets:
            locations = (_i8(reply.loc_begin), _i8(reply.loc_end), _i8(reply.loc_offsets))
        out.parts[start] = EditResults(columns, ops, offsets, locations)

    def results_in_message(self, reply: Any) -> bool:
        return reply.n_pairs == 0 or len(reply.distance) > 0

    def _store_arrays(self, data: np.ndarray, out: Any, start: int, stop: int) -> None:
        raise AssertionError("this client reads edit's results from the message")

    def results(self, out: _Collected) -> EditResults:
        if not out.parts:
            return EditResults({name: np.zeros(0, dtype=np.int64) for name in EditResults.COLUMNS})
        joined = EditResults.concat([out.parts[start] for start in sorted(out.parts)])
        assert isinstance(joined, EditResults)
        return joined

    def iter_plan(self, payload: EditPairs, key: Hashable, max_cells: CellLimit, max_bytes: int,
                  first_bytes: int | None = None) -> Iterator[EditPairs]:
        """Consecutive pairs per request, each within the cell and byte limits (a single pair
        over them goes alone, and the server refuses it)."""
        m, n = np.diff(payload.query_offsets), np.diff(payload.target_offsets)
        cells = m * n
        # Bytes in: the bases and 16 offset bytes; out: columns, CIGAR and locations at most.
        per_pair = (m + n) + 16 + 24 + 4 * (m + n) + 16 * (n + 1) + 16
        # A callable limit is a function of the whole job's cells (see _packing.CellLimit).
        limit = max_cells(int(cells.sum())) if callable(max_cells) else max_cells
        room = max_bytes - REQUEST_FRAMING_BYTES
        start = 0
        while start < payload.n_pairs:
            stop, total_cells, total_bytes = start + 1, int(cells[start]), int(per_pair[start])
            while (stop < payload.n_pairs and total_cells + int(cells[stop]) <= limit
                   and total_bytes + int(per_pair[stop]) <= room):
                total_cells += int(cells[stop])
                total_bytes += int(per_pair[stop])
                stop += 1
            yield payload.select(start, stop)
            start = stop


EDIT = EditAlgorithm()
