"""Conversions between warpdp's packed batches and the warpdp.v1 messages, shared by server and client.

Integer arrays travel as little-endian int64 bytes, results as little-endian float64 bytes
(see warpdp.proto), so both directions are a memory copy, never a per-element decode.
"""
from __future__ import annotations

import numpy as np

from ..plugin.pairhmm import PairHmmBatches
from . import warpdp_pb2

PAIRHMM_BYTE_FIELDS = ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp", "hap_bases")
PAIRHMM_OFFSET_FIELDS = ("read_offsets", "hap_offsets", "batch_reads", "batch_haps")

# Upper bound of the protobuf framing around a PairHmmRequest's arrays (tags, length
# varints, the nested message header, use_double); used to keep chunks under a size limit.
REQUEST_FRAMING_BYTES = 256


def int64_bytes(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array, dtype="<i8").tobytes()


def float64_bytes(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array, dtype="<f8").tobytes()


def int64_array(raw: bytes, name: str) -> np.ndarray:
    """The int64 values of a `bytes` field (a read-only view); ValueError naming the field
    when its length is not a multiple of 8."""
    if len(raw) % 8:
        raise ValueError(f"{name} has {len(raw)} bytes, not a multiple of 8 "
                         f"(it holds little-endian int64 values)")
    return np.frombuffer(raw, dtype="<i8")


def pairhmm_request(batches: PairHmmBatches, use_double: bool) -> warpdp_pb2.PairHmmRequest:
    """The request message of packed batches (no validation: the caller has validated)."""
    fields = {name: np.ascontiguousarray(getattr(batches, name)).tobytes() for name in PAIRHMM_BYTE_FIELDS}
    fields.update({name: int64_bytes(getattr(batches, name)) for name in PAIRHMM_OFFSET_FIELDS})
    return warpdp_pb2.PairHmmRequest(batches=warpdp_pb2.PairHmmBatches(**fields), use_double=bool(use_double))


def pairhmm_batches(message: warpdp_pb2.PairHmmBatches) -> PairHmmBatches:
    """Packed batches from a message; ValueError/TypeError naming the field when malformed."""
    arrays: dict[str, object] = {name: getattr(message, name) for name in PAIRHMM_BYTE_FIELDS}
    for name in PAIRHMM_OFFSET_FIELDS:
        arrays[name] = int64_array(getattr(message, name), name)
    # from_arrays checks every dtype, length and offset and names the field at fault.
    return PairHmmBatches.from_arrays(**arrays)


def pairhmm_request_bytes_per_batch(batches: PairHmmBatches) -> np.ndarray:
    """Bytes each batch adds to a request message (arrays only, framing excluded)."""
    read_sums = batches.read_offsets[batches.batch_reads[1:]] - batches.read_offsets[batches.batch_reads[:-1]]
    hap_sums = batches.hap_offsets[batches.batch_haps[1:]] - batches.hap_offsets[batches.batch_haps[:-1]]
    n_reads = np.diff(batches.batch_reads)
    n_haps = np.diff(batches.batch_haps)
    # 5 byte arrays per read base, 1 per haplotype base, one int64 offset per read, per
    # haplotype and two per batch (batch_reads, batch_haps).
    return 5 * read_sums + hap_sums + 8 * (n_reads + n_haps) + 16


def concat_pairhmm(parts: list[PairHmmBatches]) -> PairHmmBatches:
    """One packed set holding the batches of all parts, in order (batches are independent,
    so the result is the concatenation of each part's results)."""
    def shifted(name: str, totals: list[int]) -> np.ndarray:
        bases = np.cumsum([0, *totals[:-1]], dtype=np.int64)
        pieces = [getattr(p, name)[:-1] + base for p, base in zip(parts, bases)]
        pieces.append(np.array([sum(totals)], dtype=np.int64))
        return np.concatenate(pieces)

    n_read_bases = [len(p.read_bases) for p in parts]
    n_hap_bases = [len(p.hap_bases) for p in parts]
    return PairHmmBatches(
        read_bases=np.concatenate([p.read_bases for p in parts]),
        read_quals=np.concatenate([p.read_quals for p in parts]),
        read_ins=np.concatenate([p.read_ins for p in parts]),
        read_del=np.concatenate([p.read_del for p in parts]),
        read_gcp=np.concatenate([p.read_gcp for p in parts]),
        read_offsets=shifted("read_offsets", n_read_bases),
        hap_bases=np.concatenate([p.hap_bases for p in parts]),
        hap_offsets=shifted("hap_offsets", n_hap_bases),
        batch_reads=shifted("batch_reads", [p.n_reads for p in parts]),
        batch_haps=shifted("batch_haps", [p.n_haps for p in parts]),
    )


def plan_pairhmm_chunks(batches: PairHmmBatches, max_cells: int, max_bytes: int) -> list[PairHmmBatches]:
    """Split a job into consecutive pieces, each within max_cells and max_bytes (request
    and reply); concatenating the pieces' results gives the job's result.

    Whole batches are grouped while they fit; a batch that alone does not fit is split by
    read ranges, and a read that alone does not fit by haplotype ranges. A single pair over
    the limits raises ValueError.
    """
    budget = max_bytes - REQUEST_FRAMING_BYTES
    if max_cells < 1 or budget < 64:
        raise ValueError(f"limits too small to send anything (max_cells={max_cells}, max_bytes={max_bytes})")
    cells = batches.cells_per_batch()
    req = pairhmm_request_bytes_per_batch(batches)
    rep = 8 * batches.pairs_per_batch()
    cum = [np.concatenate([[0], np.cumsum(a, dtype=np.int64)]) for a in (cells, req, rep)]
    # budget - 32: the leading 0 of the four offset arrays, sent once per message.
    caps = (max_cells, budget - 32, budget)
    chunks: list[PairHmmBatches] = []
    i, n = 0, batches.n_batches
    while i < n:
        j = min(int(np.searchsorted(c, c[i] + cap, side="right")) - 1 for c, cap in zip(cum, caps))
        if j > i:
            chunks.append(batches.select(i, j))
            i = j
        else:
            chunks.extend(_split_batch(batches, i, max_cells, budget - 32))
            i += 1
    return chunks


def _split_batch(batches: PairHmmBatches, b: int, max_cells: int, budget: int) -> list[PairHmmBatches]:
    r_lo, r_hi = int(batches.batch_reads[b]), int(batches.batch_reads[b + 1])
    h_lo, h_hi = int(batches.batch_haps[b]), int(batches.batch_haps[b + 1])
    read_lens = np.diff(batches.read_offsets[r_lo:r_hi + 1])
    hap_lens = np.diff(batches.hap_offsets[h_lo:h_hi + 1])
    n_haps = len(hap_lens)
    if len(read_lens) == 0 or n_haps == 0:
        return []  # no pairs, nothing to score: leave it out
    hap_total = int(hap_lens.sum())
    hap_fixed = hap_total + 8 * n_haps
    # Per read: its cells against all haplotypes, its request bytes and its reply bytes.
    per_read = (read_lens * hap_total, 5 * read_lens + 8, np.full(len(read_lens), 8 * n_haps, dtype=np.int64))
    caps = (max_cells, budget - hap_fixed - 16, budget)
    cum = [np.concatenate([[0], np.cumsum(a, dtype=np.int64)]) for a in per_read]
    pieces: list[PairHmmBatches] = []
    r = 0
    while r < len(read_lens):
        s = min(int(np.searchsorted(c, c[r] + cap, side="right")) - 1 for c, cap in zip(cum, caps))
        if s > r:
            pieces.append(batches.sub_batch(b, r, s, 0, n_haps))
            r = s
            continue
        # One read against all haplotypes is too large: split the haplotypes.
        read_len = int(read_lens[r])
        per_hap = (read_len * hap_lens, hap_lens + 8, np.full(n_haps, 8, dtype=np.int64))
        hcaps = (max_cells, budget - 5 * read_len - 8 - 16, budget)
        hcum = [np.concatenate([[0], np.cumsum(a, dtype=np.int64)]) for a in per_hap]
        h = 0
        while h < n_haps:
            t = min(int(np.searchsorted(c, c[h] + cap, side="right")) - 1 for c, cap in zip(hcum, hcaps))
            if t <= h:
                raise ValueError(f"batch {b}, read {r} x haplotype {h} alone ({read_len} x {int(hap_lens[h])} "
                                 f"= {read_len * int(hap_lens[h])} cells) exceeds the server's limits "
                                 f"({max_cells} cells, {budget} bytes per request)")
            pieces.append(batches.sub_batch(b, r, r + 1, h, t))
            h = t
        r += 1
    return pieces


# ---------------------------------------------------------------------------------------
# Algorithms whose unit is the pair (X-drop, seed extension): sequences as bases + offsets,
# plus per-pair arrays. Pairs are independent, so any run of consecutive pairs is a request.


def concat_pairs(parts: list, sequences: tuple[tuple[str, str], ...], per_pair: tuple[str, ...]):
    """One packed set (of the parts' own class) holding the pairs of all parts, in order.

    ``sequences`` names (bases, offsets) field pairs; ``per_pair`` the arrays with one value per pair.
    """
    fields: dict[str, np.ndarray] = {}
    for bases_name, offsets_name in sequences:
        lengths = [len(getattr(p, bases_name)) for p in parts]
        starts = np.cumsum([0, *lengths[:-1]], dtype=np.int64)
        pieces = [getattr(p, offsets_name)[:-1] + start for p, start in zip(parts, starts)]
        pieces.append(np.array([sum(lengths)], dtype=np.int64))
        fields[bases_name] = np.concatenate([getattr(p, bases_name) for p in parts])
        fields[offsets_name] = np.concatenate(pieces).astype(np.int64, copy=False)
    for name in per_pair:
        fields[name] = np.concatenate([getattr(p, name) for p in parts])
    return type(parts[0])(**fields)


def plan_pair_ranges(cells: np.ndarray, request_bytes: np.ndarray, reply_bytes: int, fixed_bytes: int,
                     max_cells: int, max_bytes: int) -> list[tuple[int, int]]:
    """Consecutive pair ranges, each within max_cells and max_bytes (request and reply).

    ``cells`` and ``request_bytes`` are per pair; ``reply_bytes`` is per pair; ``fixed_bytes`` is
    what every request carries whatever its pairs (the leading 0 of its offset arrays). A single
    pair over the limits raises ValueError.
    """
    budget = max_bytes - REQUEST_FRAMING_BYTES
    if max_cells < 1 or budget < 64:
        raise ValueError(f"limits too small to send anything (max_cells={max_cells}, max_bytes={max_bytes})")
    n = len(cells)
    per_pair = (cells, request_bytes, np.full(n, reply_bytes, dtype=np.int64))
    cum = [np.concatenate([[0], np.cumsum(a, dtype=np.int64)]) for a in per_pair]
    caps = (max_cells, budget - fixed_bytes, budget)
    ranges: list[tuple[int, int]] = []
    i = 0
    while i < n:
        j = min(int(np.searchsorted(c, c[i] + cap, side="right")) - 1 for c, cap in zip(cum, caps))
        if j <= i:
            raise ValueError(f"pair {i} alone ({int(cells[i])} cells, {int(request_bytes[i])} bytes) exceeds "
                             f"the server's limits ({max_cells} cells, {budget} bytes per request)")
        ranges.append((i, j))
        i = j
    return ranges
