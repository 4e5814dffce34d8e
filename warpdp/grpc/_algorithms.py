"""The built-in families' service descriptions (see _algorithm.Algorithm): Pair-HMM, and the
algorithms on independent pairs, X-drop and seed extension."""
from __future__ import annotations

from abc import abstractmethod
from collections.abc import Hashable, Iterator, Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..plugin.pairhmm import PairHmmBatches, PairHmmRead, available_cpu_isas, pack_batches, pairhmm_validated
from ..plugin.seedext import (
    RESULT_FIELDS,
    SeedExtPairs,
    SeedExtParams,
    SeedExtResults,
    check_score_range,
    check_seed_extension,
    pack_seed_pairs,
    seed_extend_with,
    seedext_cpu_isas,
)
from ..plugin.xdrop import (
    REPORTS,
    XdropPairs,
    XdropResults,
    _check_k,
    check_scores,
    pack_xdrop_pairs,
    xdrop,
    xdrop_cpu_isas,
)
from ..plugin.cancel import CancelCheck, SliceCells, iter_slice_ranges
from . import _packing, warpdp_pb2
from ._algorithm import Algorithm, InvalidRequest, Job


# ---------------------------------------------------------------------------------------
# Pair-HMM


class PairHmmAlgorithm(Algorithm):
    """Batches of reads x haplotypes; the key is use_double (float and double never mixed)."""

    name = "pairhmm"
    rpc = "PairHmm"
    payload_type = PairHmmBatches
    request_type = warpdp_pb2.PairHmmRequest
    reply_type = warpdp_pb2.PairHmmReply
    packed_field = "batches"
    packed_message = warpdp_pb2.PairHmmBatches
    reply_bytes_per_pair = 8
    mapped_file_host_fields = _packing.PAIRHMM_OFFSET_FIELDS
    byte_fields = _packing.PAIRHMM_BYTE_FIELDS

    def key_fields(self, key: Hashable) -> dict[str, Any]:
        return {"use_double": bool(key)}

    def pairs_in_message(self, packed: warpdp_pb2.PairHmmBatches) -> int:
        # Reads x haplotypes of each batch.
        reads = np.frombuffer(packed.batch_reads, dtype="<i8")
        haps = np.frombuffer(packed.batch_haps, dtype="<i8")
        if len(reads) != len(haps) or len(reads) < 2:
            return 0
        return max(0, int(np.dot(reads[1:] - reads[:-1], haps[1:] - haps[:-1])))

    def pairs_in_sizes(self, sizes: dict[str, int]) -> int:
        reads = max(0, sizes.get("read_offsets", 0) // 8 - 1)
        haps = max(0, sizes.get("hap_offsets", 0) // 8 - 1)
        return reads * haps

    def decode(self, request: warpdp_pb2.PairHmmRequest, packed: Any = None) -> Job:
        try:
            batches, n_pairs, n_cells = _packing.decode_pairhmm(request.batches if packed is None else packed)
        except (ValueError, TypeError) as exc:
            raise InvalidRequest("PairHmmRequest.batches", exc) from None
        return Job(batches, bool(request.use_double), n_pairs, n_cells)

    def cells(self, payload: PairHmmBatches, key: Hashable) -> int:
        return payload.n_cells

    def request_bytes(self, payload: PairHmmBatches) -> int:
        # pairhmm_request_bytes_per_batch summed over the (validated) batches, whose reads and
        # haplotypes cover the arrays: no pass over the batches. + 32: the leading 0 of the
        # four offset arrays.
        return (5 * len(payload.read_bases) + len(payload.hap_bases) + 8 * (payload.n_reads + payload.n_haps)
                + 16 * payload.n_batches + 32)

    def merge(self, payloads: list[PairHmmBatches]) -> PairHmmBatches:
        return _packing.concat_pairhmm(payloads)

    def run(self, payload: PairHmmBatches, key: Hashable, *, backend: str, threads: int,
            cancelled: CancelCheck | None = None) -> np.ndarray:
        # Decoding validated the request (and merging keeps merged requests valid).
        return pairhmm_validated(payload, backend=backend, threads=threads, double=bool(key), cancelled=cancelled)

    def slices(self, payload: PairHmmBatches, key: Hashable, max_cells: SliceCells) -> Iterator[PairHmmBatches]:
        # Whole batches where they fit, else a batch's reads in ranges (results are read-major,
        # so a range of reads against all the batch's haplotypes is a contiguous run of rows).
        limit = max_cells if callable(max_cells) else (lambda: max_cells)
        cells = payload.cells_per_batch()
        for i, j in iter_slice_ranges(cells, limit):
            if j > i + 1 or cells[i] <= limit():
                yield payload.select(i, j)
                continue
            r0, r1 = int(payload.batch_reads[i]), int(payload.batch_reads[i + 1])
            h0, h1 = int(payload.batch_haps[i]), int(payload.batch_haps[i + 1])
            hap_total = int(payload.hap_offsets[h1] - payload.hap_offsets[h0])
            read_cells = np.diff(payload.read_offsets[r0:r1 + 1]) * hap_total
            for a, b in iter_slice_ranges(read_cells, limit):
                yield payload.sub_batch(i, a, b, 0, h1 - h0)

    def reply_arrays(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        return {"log10_likelihoods": self.result_arrays(rows)[0]}

    def result_arrays(self, rows: np.ndarray) -> list[np.ndarray]:
        return [np.ascontiguousarray(rows, dtype="<f8")]

    def warmup_jobs(self) -> list[tuple[Any, Hashable]]:
        tiny = pack_batches([([PairHmmRead("ACGTACGT", "IIIIIIII")], ["ACGTTACGT"])])
        return [(tiny, False), (tiny, True)]

    def cpu_isas(self) -> list[str]:
        return available_cpu_isas()

    def client_key(self, payload: Any, params: Any) -> Hashable:
        if not isinstance(payload, PairHmmBatches):
            raise TypeError(f"batches must be PairHmmBatches, not {type(payload).__name__} (see warpdp.pack_batches)")
        payload.validate()
        return bool(params)  # use_double

    def new_output(self, n_pairs: int) -> np.ndarray:
        return np.empty(n_pairs, dtype=np.float64)

    def store(self, reply: warpdp_pb2.PairHmmReply, out: np.ndarray, start: int, stop: int) -> None:
        values = np.frombuffer(reply.log10_likelihoods, dtype="<f8")
        if len(values) != stop - start or reply.n_pairs != stop - start:
            raise ValueError(f"the server returned {len(values)} likelihoods for {stop - start} pairs")
        out[start:stop] = values

    def results_in_message(self, reply: warpdp_pb2.PairHmmReply) -> bool:
        return len(reply.log10_likelihoods) > 0

    def _store_arrays(self, data: np.ndarray, out: np.ndarray, start: int, stop: int) -> None:
        out[start:stop] = data[:8 * (stop - start)].view("<f8")

    def results(self, out: np.ndarray) -> np.ndarray:
        return out

    def iter_plan(self, payload: PairHmmBatches, key: Hashable, max_cells: _packing.CellLimit, max_bytes: int,
                  first_bytes: int | None = None) -> Iterator[PairHmmBatches]:
        return _packing.iter_pairhmm_chunks(payload, max_cells, max_bytes, first_bytes)


# ---------------------------------------------------------------------------------------
# Algorithms on independent pairs


class PairsAlgorithm(Algorithm):
    """Shared by algorithms whose input is independent pairs (sequences as bases + int64
    offsets, plus per-pair int64 arrays) and whose results are integer columns."""

    packed_field = "pairs"
    sequences: ClassVar[tuple[tuple[str, str], ...]]  # (bases, offsets) field names
    per_pair: ClassVar[tuple[str, ...]]            # one int64 value per pair
    columns: ClassVar[tuple[str, ...]]             # result columns, as named in the reply

    @property
    def where(self) -> str:
        return f"{self.request_type.__name__}.pairs"

    @abstractmethod
    def key_of(self, request: Any) -> Hashable:
        """The validated parameters of a request (ValueError/TypeError naming the parameter)."""

    @abstractmethod
    def check(self, payload: Any, key: Hashable) -> None:
        """Checks of the input against the parameters (ValueError naming the field)."""

    @abstractmethod
    def cells_per_pair(self, payload: Any, key: Hashable) -> np.ndarray:
        ...

    @abstractmethod
    def rows(self, payload: Any, key: Hashable, backend: str, threads: int,
             cancelled: CancelCheck | None = None) -> np.ndarray:
        """Local scoring's results as an (n_pairs, len(columns)) table."""

    # -- messages --

    def pairs_of(self, message: Any) -> Any:
        arrays: dict[str, Any] = {}
        for bases, offsets in self.sequences:
            arrays[bases] = getattr(message, bases)
            arrays[offsets] = _packing.int64_array(getattr(message, offsets), offsets)
        for name in self.per_pair:
            arrays[name] = _packing.int64_array(getattr(message, name), name)
        # from_arrays checks every dtype, length and offset and names the field at fault.
        return self.payload_type.from_arrays(**arrays)

    def decode(self, request: Any, packed: Any = None) -> Job:
        try:
            pairs = self.pairs_of(request.pairs if packed is None else packed)
        except (ValueError, TypeError) as exc:
            raise InvalidRequest(self.where, exc) from None
        try:
            key = self.key_of(request)
        except (ValueError, TypeError) as exc:
            raise InvalidRequest(self.request_type.__name__, exc) from None
        try:
            self.check(pairs, key)
        except (ValueError, TypeError) as exc:
            raise InvalidRequest(self.where, exc) from None
        return Job(pairs, key, pairs.n_pairs, self.cells(pairs, key))

    def cells(self, payload: Any, key: Hashable) -> int:
        return int(self.cells_per_pair(payload, key).sum())

    def _request_bytes_per_pair(self, payload: Any) -> np.ndarray:
        total = np.full(payload.n_pairs, 8 * (len(self.sequences) + len(self.per_pair)), dtype=np.int64)
        for _, offsets in self.sequences:
            total += np.diff(getattr(payload, offsets))
        return total

    def request_bytes(self, payload: Any) -> int:
        # The leading 0 of each offset array, then each pair's bases, offsets and values.
        return 8 * len(self.sequences) + int(self._request_bytes_per_pair(payload).sum())

    # -- server --

    def merge(self, payloads: list[Any]) -> Any:
        return _packing.concat_pairs(payloads, self.sequences, self.per_pair)

    def run(self, payload: Any, key: Hashable, *, backend: str, threads: int,
            cancelled: CancelCheck | None = None) -> np.ndarray:
        return self.rows(payload, key, backend, threads, cancelled)

    def slices(self, payload: Any, key: Hashable, max_cells: SliceCells) -> Iterator[Any]:
        for i, j in iter_slice_ranges(self.cells_per_pair(payload, key), max_cells):
            yield payload.select(i, j)

    def reply_arrays(self, rows: Any) -> dict[str, np.ndarray]:
        return dict(zip(self.columns, self.result_arrays(rows)))

    def result_arrays(self, rows: np.ndarray) -> list[np.ndarray]:
        return [np.ascontiguousarray(rows[:, c], dtype="<i8") for c in range(len(self.columns))]

    # -- client --

    def new_output(self, n_pairs: int) -> np.ndarray:
        return np.empty((len(self.columns), n_pairs), dtype=np.int64)

    def store(self, reply: Any, out: np.ndarray, start: int, stop: int) -> None:
        if reply.n_pairs != stop - start:
            raise ValueError(f"the server returned {reply.n_pairs} pairs where {stop - start} were sent")
        for c, name in enumerate(self.columns):
            values = _packing.int64_array(getattr(reply, name), name)
            if len(values) != stop - start:
                raise ValueError(f"the server returned {len(values)} values of {name} for {stop - start} pairs")
            out[c, start:stop] = values

    def results_in_message(self, reply: Any) -> bool:
        return len(getattr(reply, self.columns[0])) > 0

    def _store_arrays(self, data: np.ndarray, out: np.ndarray, start: int, stop: int) -> None:
        n = stop - start
        out[:, start:stop] = data[:8 * n * len(self.columns)].view("<i8").reshape(len(self.columns), n)

    def iter_plan(self, payload: Any, key: Hashable, max_cells: _packing.CellLimit, max_bytes: int,
                  first_bytes: int | None = None) -> Iterator[Any]:
        ranges = _packing.plan_pair_ranges(self.cells_per_pair(payload, key), self._request_bytes_per_pair(payload),
                                           self.reply_bytes_per_pair, 8 * len(self.sequences), max_cells, max_bytes,
                                           first_bytes)
        return (payload.select(i, j) for i, j in ranges)


class XdropKey(NamedTuple):
    """The parameters of an X-drop request, validated as warpdp.xdrop validates them."""

    k: int
    x: int
    match: int
    mismatch: int
    gap: int
    report: str

    @classmethod
    def make(cls, *, k: object, x: object, match: object = 1, mismatch: object = -1, gap: object = -1,
             report: object = "longest") -> XdropKey:
        k = _check_k(k)
        match, mismatch, gap, x = check_scores(match, mismatch, gap, x)
        if report not in REPORTS:
            raise ValueError(f"report must be one of {', '.join(REPORTS)}, not {report!r}")
        return cls(k, x, match, mismatch, gap, str(report))


_REPORT_ENUM = {"longest": warpdp_pb2.XDROP_REPORT_LONGEST, "best": warpdp_pb2.XDROP_REPORT_BEST}
_REPORT_NAME = {value: name for name, value in _REPORT_ENUM.items()}


class XdropAlgorithm(PairsAlgorithm):
    """Gapped X-drop seed extension (warpdp.xdrop); the key is (k, x, match, mismatch, gap, report)."""

    name = "xdrop"
    rpc = "Xdrop"
    payload_type = XdropPairs
    request_type = warpdp_pb2.XdropRequest
    reply_type = warpdp_pb2.XdropReply
    packed_message = warpdp_pb2.XdropPairs
    sequences = (("h_bases", "h_offsets"), ("v_bases", "v_offsets"))
    per_pair = ("h_pos", "v_pos")
    columns = XdropResults.COLUMNS + ("cells",)
    reply_bytes_per_pair = 8 * len(columns)

    def key_of(self, request: warpdp_pb2.XdropRequest) -> XdropKey:
        for name in ("k", "x"):
            if not request.HasField(name):
                raise ValueError(f"{name} is required ({'the seed length' if name == 'k' else 'the X-drop'})")
        if request.report not in _REPORT_NAME:
            raise ValueError(f"report must be XDROP_REPORT_LONGEST (0) or XDROP_REPORT_BEST (1), "
                             f"not {request.report}")
        defaults = {"match": 1, "mismatch": -1, "gap": -1}
        scores = {name: getattr(request, name) if request.HasField(name) else value
                  for name, value in defaults.items()}
        return XdropKey.make(k=request.k, x=request.x, report=_REPORT_NAME[request.report], **scores)

    def key_fields(self, key: XdropKey) -> dict[str, Any]:
        return dict(k=key.k, x=key.x, match=key.match, mismatch=key.mismatch, gap=key.gap,
                    report=_REPORT_ENUM[key.report])

    def check(self, payload: XdropPairs, key: XdropKey) -> None:
        payload.validate(key.k)
        # Checked here, not only by the kernel, so a bad byte is refused before it is
        # queued with other callers' pairs.
        payload.check_bases()

    def cells_per_pair(self, payload: XdropPairs, key: XdropKey) -> np.ndarray:
        # The work depends on the data; per direction, similar sequences keep about
        # 2x / (match - 2 gap) cells per anti-diagonal alive over m + n anti-diagonals, and
        # no extension computes more than the m x n rectangle.
        width = min(2 * key.x // (key.match - 2 * key.gap) + 1, 2**31)
        left = (payload.h_pos, payload.v_pos)
        right = (payload.h_lengths() - payload.h_pos - key.k, payload.v_lengths() - payload.v_pos - key.k)
        total = np.zeros(payload.n_pairs, dtype=np.int64)
        for m, n in (left, right):
            total += np.minimum(m * n, (m + n) * width)
        return total

    def rows(self, payload: XdropPairs, key: XdropKey, backend: str, threads: int,
             cancelled: CancelCheck | None = None) -> np.ndarray:
        results = xdrop(payload, k=key.k, x=key.x, match=key.match, mismatch=key.mismatch, gap=key.gap,
                        report=key.report, backend=backend, threads=threads, cancelled=cancelled)
        return np.stack([getattr(results, c) for c in self.columns], axis=1)

    def warmup_jobs(self) -> list[tuple[Any, Hashable]]:
        tiny = pack_xdrop_pairs([("ACGTACGTACGTAAC", 4, "ACGTACGTACGTACG", 4)])
        return [(tiny, XdropKey.make(k=4, x=5, report=report)) for report in REPORTS]

    def cpu_isas(self) -> list[str]:
        return xdrop_cpu_isas()

    def client_key(self, payload: Any, params: Any) -> XdropKey:
        """params: an XdropKey, or warpdp.xdrop's parameters (k, x, match, ...) as a mapping."""
        if not isinstance(payload, XdropPairs):
            raise TypeError(f"pairs must be XdropPairs, not {type(payload).__name__} (see pack_xdrop_pairs)")
        key = params if isinstance(params, XdropKey) else XdropKey.make(**params)
        self.check(payload, key)
        return key

    def results(self, out: np.ndarray) -> XdropResults:
        return XdropResults(*out)


class SeedExtAlgorithm(PairsAlgorithm):
    """Seed extension with ksw_extend2 semantics (warpdp.seed_extend); the key is SeedExtParams."""

    name = "seedext"
    rpc = "SeedExtend"
    payload_type = SeedExtPairs
    request_type = warpdp_pb2.SeedExtendRequest
    reply_type = warpdp_pb2.SeedExtendReply
    packed_message = warpdp_pb2.SeedExtPairs
    sequences = (("query", "query_offsets"), ("target", "target_offsets"))
    per_pair = ("h0",)
    columns = RESULT_FIELDS  # SeedExtResults.table's columns, in order
    reply_bytes_per_pair = 8 * len(columns)
    PARAMETERS = ("a", "b", "o_del", "e_del", "o_ins", "e_ins", "w", "end_bonus", "zdrop")

    def key_of(self, request: warpdp_pb2.SeedExtendRequest) -> SeedExtParams:
        defaults = SeedExtParams()
        params = SeedExtParams(**{name: getattr(request if request.HasField(name) else defaults, name)
                                  for name in self.PARAMETERS})
        params.validate()
        return params

    def key_fields(self, key: SeedExtParams) -> dict[str, Any]:
        return {name: getattr(key, name) for name in self.PARAMETERS}

    def check(self, payload: SeedExtPairs, key: SeedExtParams) -> None:
        check_score_range(payload, key)

    def cells_per_pair(self, payload: SeedExtPairs, key: SeedExtParams) -> np.ndarray:
        # ksw_extend2 computes at most a band of 2w' + 1 query columns per target row, w'
        # being w narrowed (as BWA does) to the longest gap that could still pay off.
        qlen, tlen = payload.query_lengths(), payload.target_lengths()
        band = np.full(payload.n_pairs, key.w, dtype=np.int64)
        for o, e in ((key.o_ins, key.e_ins), (key.o_del, key.e_del)):
            longest = np.trunc((qlen * max(key.a, 0) + key.end_bonus - o) / e + 1.0).astype(np.int64)
            band = np.minimum(band, np.maximum(longest, 1))
        return tlen * np.minimum(qlen, 2 * band + 1)

    def rows(self, payload: SeedExtPairs, key: SeedExtParams, backend: str, threads: int,
             cancelled: CancelCheck | None = None) -> np.ndarray:
        return seed_extend_with(payload, key, backend=backend, threads=threads, cancelled=cancelled).table

    def warmup_jobs(self) -> list[tuple[Any, Hashable]]:
        return [(pack_seed_pairs([("ACGTACGTAC", "ACGTACGTACGG", 20)]), SeedExtParams())]

    def cpu_isas(self) -> list[str]:
        return seedext_cpu_isas()

    def client_key(self, payload: Any, params: Any) -> SeedExtParams:
        """params: a SeedExtParams, or warpdp.seed_extend's parameters as a mapping (None: BWA-MEM's defaults)."""
        if params is None or isinstance(params, Mapping):
            params = SeedExtParams(**(params or {}))
        check_seed_extension(payload, params)
        return params

    def results(self, out: np.ndarray) -> SeedExtResults:
        return SeedExtResults(np.ascontiguousarray(out.T, dtype=np.int32))


PAIRHMM = PairHmmAlgorithm()
XDROP = XdropAlgorithm()
SEEDEXT = SeedExtAlgorithm()
