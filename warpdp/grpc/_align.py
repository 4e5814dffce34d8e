"""The align family's service description (see _algorithm.Algorithm): independent (query, target)
pairs in, five int64 columns and, when asked for, a ragged CIGAR out (AlignRequest/AlignReply; in
the request's shared file, laid out as _packing.ragged_file_arrays says, when the client left room)."""
from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from typing import Any

import numpy as np

from ..plugin.align import COLUMNS, AlignPairs, AlignParams, AlignResults, align, align_cpu_isas, check_traceback
from ..plugin.cancel import CancelCheck
from . import _packing, warpdp_pb2
from ._algorithm import Job
from ._algorithms import PairsAlgorithm

# AlignRequest's parameter fields: AlignParams' fields of the same names.
PARAMETERS = ("mode", "match", "mismatch", "gaps", "gap_open", "gap_extend", "gap_convention", "zdrop", "overhang",
              "cigar")


class _Collected:
    """A client's results of one job, piece by piece (pieces may come in any order)."""

    def __init__(self) -> None:
        self.parts: dict[int, AlignResults] = {}


class AlignAlgorithm(PairsAlgorithm):
    """Pairwise alignment (warpdp.align); the key is the AlignParams."""

    name = "align"
    rpc = "Align"
    payload_type = AlignPairs
    request_type = warpdp_pb2.AlignRequest
    reply_type = warpdp_pb2.AlignReply
    packed_message = warpdp_pb2.AlignPairs
    sequences = (("query_bases", "query_offsets"), ("target_bases", "target_offsets"))
    per_pair = ()
    columns = COLUMNS
    reply_bytes_per_pair = 8 * len(COLUMNS) + 8
    ragged = True
    result_columns = tuple((name, "<i8") for name in COLUMNS)  # then the CIGAR (_packing.ragged_file_arrays)

    def key_of(self, request: warpdp_pb2.AlignRequest) -> AlignParams:
        fields = {name: getattr(request, name) for name in PARAMETERS if request.HasField(name)}
        if request.matrix:
            values = _packing.int64_array(request.matrix, "matrix")
            if len(values) != 25:
                raise ValueError(f"matrix must hold 25 int64 values (5x5, A C G T N), not {len(values)}")
            fields["matrix"] = tuple(tuple(int(v) for v in values[5 * r:5 * r + 5]) for r in range(5))
        return AlignParams(**fields)

    def key_fields(self, key: AlignParams) -> dict[str, Any]:
        fields = {name: getattr(key, name) for name in PARAMETERS if getattr(key, name) is not None}
        if key.matrix is not None:
            fields["matrix"] = np.array(key.matrix, dtype="<i8").tobytes()
        return fields

    def check(self, payload: AlignPairs, key: AlignParams) -> None:
        pass  # AlignPairs.from_arrays checked the pairs; the traceback bound is checked when it runs

    def cells_per_pair(self, payload: AlignPairs, key: AlignParams) -> np.ndarray:
        return np.diff(payload.query_offsets) * np.diff(payload.target_offsets)

    def reply_bytes(self, job: Job) -> int:
        # Columns, plus at most len_q + len_t + 2 ops of 4 bytes per pair and the offsets.
        pairs: AlignPairs = job.payload
        total = self.reply_bytes_per_pair * job.n_pairs
        if job.key.cigar:
            total += 4 * (len(pairs.query_bases) + len(pairs.target_bases) + 2 * job.n_pairs) + 8
        return total

    def reply_bound(self, payload: AlignPairs, key: AlignParams) -> int:
        # This client reads CIGAR results from a shared file (store_results); without a CIGAR
        # they are small and come in the message.
        return super().reply_bound(payload, key) if key.cigar else 0

    def rows(self, payload: AlignPairs, key: AlignParams, backend: str, threads: int,
             cancelled: CancelCheck | None = None) -> AlignResults:
        return align(payload, key, backend=backend, threads=threads, cancelled=cancelled)

    def reply_arrays(self, rows: AlignResults) -> dict[str, np.ndarray]:
        fields = {name: np.ascontiguousarray(rows.columns[name], dtype="<i8") for name in COLUMNS}
        if rows.has_cigar:
            fields["cigar_ops"] = np.ascontiguousarray(rows.cigar_ops, dtype="<u4")
            fields["cigar_offsets"] = np.ascontiguousarray(rows.cigar_offsets, dtype="<i8")
        return fields

    def result_arrays(self, rows: Any) -> list[np.ndarray]:
        raise AssertionError("ragged results go into a shared file as file_arrays lays them out")

    def warmup_jobs(self) -> list[tuple[Any, Hashable]]:
        return [(AlignPairs.from_sequences([("ACGTACGT", "ACGTTACGT")]), AlignParams())]

    def cpu_isas(self) -> list[str]:
        return align_cpu_isas()

    def client_key(self, payload: Any, params: Any) -> AlignParams:
        """params: an AlignParams, or warpdp.align's keyword parameters as a mapping (None: the defaults)."""
        if not isinstance(payload, AlignPairs):
            raise TypeError(f"align takes AlignPairs, not {type(payload).__name__}")
        if params is None or isinstance(params, Mapping):
            params = AlignParams(**(params or {}))
        elif not isinstance(params, AlignParams):
            raise TypeError(f"params must be AlignParams or a mapping, not {type(params).__name__}")
        payload.validate()
        check_traceback(payload, params)
        return params

    def new_output(self, n_pairs: int) -> _Collected:
        return _Collected()

    def store(self, reply: Any, out: _Collected, start: int, stop: int) -> None:
        n = stop - start
        if reply.n_pairs != n:
            raise ValueError(f"the server returned {reply.n_pairs} pairs where {n} were sent")
        columns = {}
        for name in COLUMNS:
            values = _packing.int64_array(getattr(reply, name), name)
            if len(values) != n:
                raise ValueError(f"the server returned {len(values)} values of {name} for {n} pairs")
            columns[name] = values
        ops = offsets = None
        if reply.cigar_offsets:
            ops = np.frombuffer(reply.cigar_ops, dtype="<u4").astype(np.uint32)
            offsets = _packing.int64_array(reply.cigar_offsets, "cigar_offsets")
        out.parts[start] = AlignResults(columns, ops, offsets)  # checks the CIGAR's offsets

    def results_in_message(self, reply: Any) -> bool:
        return reply.n_pairs == 0 or len(reply.score) > 0

    def store_results(self, results: Any, out: _Collected, start: int, stop: int) -> None:
        out.parts[start] = AlignResults(results.columns, results.cigar_ops, results.cigar_offsets)

    def _store_arrays(self, data: np.ndarray, out: Any, start: int, stop: int) -> None:
        raise AssertionError("ragged results come from a shared file through store_results")

    def results(self, out: _Collected) -> AlignResults:
        if not out.parts:
            return AlignResults.empty(0)
        return AlignResults.concat([out.parts[start] for start in sorted(out.parts)])  # type: ignore[return-value]


ALIGN = AlignAlgorithm()

__all__ = ["ALIGN", "AlignAlgorithm"]
