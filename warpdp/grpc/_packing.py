"""Conversions between warpdp's packed batches and the warpdp.v1 messages, shared by server and client.

Integer arrays travel as little-endian int64 bytes, results as little-endian float64 bytes
(see warpdp.proto), so both directions are a memory copy, never a per-element decode.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate

import numpy as np

from ..plugin.packed import MAX_SEQUENCE_LENGTH
from ..plugin.core.results import Results
from ..plugin.pairhmm import PairHmmBatches
from . import warpdp_pb2

PAIRHMM_BYTE_FIELDS = ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp", "hap_bases")
PAIRHMM_OFFSET_FIELDS = ("read_offsets", "hap_offsets", "batch_reads", "batch_haps")

# Upper bound of the protobuf framing around a PairHmmRequest's arrays (tags, length
# varints, the nested message header, use_double); used to keep chunks under a size limit.
REQUEST_FRAMING_BYTES = 256


def int64_array(raw: bytes, name: str) -> np.ndarray:
    """The int64 values of a `bytes` field (a read-only view); ValueError naming the field
    when its length is not a multiple of 8."""
    if len(raw) % 8:
        raise ValueError(f"{name} has {len(raw)} bytes, not a multiple of 8 "
                         f"(it holds little-endian int64 values)")
    return np.frombuffer(raw, dtype="<i8")


def wire_arrays(message_class: type, payload: object) -> dict[str, np.ndarray]:
    """The arrays of a packed payload as its message's fields hold them, in field-number
    order: uint8 arrays as they are, integer arrays as little-endian int64."""
    arrays = {}
    for field in message_class.DESCRIPTOR.fields:
        array = getattr(payload, field.name)
        arrays[field.name] = (np.ascontiguousarray(array) if array.dtype == np.uint8
                              else np.ascontiguousarray(array, dtype="<i8"))
    return arrays


def packed_message(message_class: type, payload: object) -> object:
    """The packed message (PairHmmBatches, XdropPairs, SeedExtPairs) of a validated payload."""
    return message_class(**{name: array.tobytes() for name, array in wire_arrays(message_class, payload).items()})


def decode_pairhmm(message: warpdp_pb2.PairHmmBatches) -> tuple[PairHmmBatches, int, int]:
    """Packed batches from a message, with their pair and cell counts; ValueError/TypeError
    naming the field when malformed."""
    decoded = _decode_pairhmm_fast(message)
    if decoded is not None:
        return decoded
    arrays: dict[str, object] = {name: getattr(message, name) for name in PAIRHMM_BYTE_FIELDS}
    for name in PAIRHMM_OFFSET_FIELDS:
        arrays[name] = int64_array(getattr(message, name), name)
    # from_arrays checks every dtype, length and offset and names the field at fault.
    batches = PairHmmBatches.from_arrays(**arrays)
    return batches, batches.n_pairs, batches.n_cells


# The fast path maps int64 fields without a byte swap, so only where "<i8" is the native int64.
_FAST_DECODE = np.dtype("<i8") == np.dtype(np.int64)


def _decode_pairhmm_fast(message: warpdp_pb2.PairHmmBatches) -> tuple[PairHmmBatches, int, int] | None:
    """decode_pairhmm for a well-formed message with at least one batch, read and haplotype;
    None for anything else, which then goes through from_arrays for its error message (or
    its edge cases).

    Runs for every request, and a numpy call costs about a microsecond whatever its size, so
    the four offset arrays are checked together in one buffer: about fifteen numpy calls in all,
    where from_arrays and validate make some fifty. Accepts exactly what validate accepts.
    """
    if not _FAST_DECODE:
        return None
    # batch_reads, batch_haps, read_offsets, hap_offsets: each at least [0, end], whole int64s.
    raw_offsets = (message.batch_reads, message.batch_haps, message.read_offsets, message.hap_offsets)
    n_batch_bytes, n_read_offset_bytes, n_hap_offset_bytes = (len(raw) for raw in raw_offsets[1:])
    if (len(raw_offsets[0]) != n_batch_bytes or min(n_batch_bytes, n_read_offset_bytes, n_hap_offset_bytes) < 16
            or (n_batch_bytes | n_read_offset_bytes | n_hap_offset_bytes) % 8):
        return None
    raw_bases = [getattr(message, name) for name in PAIRHMM_BYTE_FIELDS]
    n_read_bases, n_hap_bases = len(raw_bases[0]), len(raw_bases[5])
    if any(len(raw) != n_read_bases for raw in raw_bases[1:5]):
        return None
    n_batches_1, n_reads_1, n_haps_1 = n_batch_bytes // 8, n_read_offset_bytes // 8, n_hap_offset_bytes // 8
    # The four offset arrays one after the other in one array.
    joined = np.frombuffer(b"".join(raw_offsets), dtype=np.int64)
    haps_at, reads_at, hap_offsets_at = n_batches_1, 2 * n_batches_1, 2 * n_batches_1 + n_reads_1
    # Each array starts at 0 and ends at the length it indexes.
    ends = joined[[0, haps_at - 1, haps_at, reads_at - 1, reads_at, hap_offsets_at - 1, hap_offsets_at, -1]]
    if ends.tolist() != [0, n_reads_1 - 1, 0, n_haps_1 - 1, 0, n_read_bases, 0, n_hap_bases]:
        return None
    steps = joined[1:] - joined[:-1]
    # The steps where one array meets the next mean nothing: make them pass.
    steps[haps_at - 1] = steps[reads_at - 1] = 0
    steps[hap_offsets_at - 1] = 1
    # Batches hold 0..MAX reads (haplotypes); reads and haplotypes have 1..MAX bases. A step
    # below its minimum wraps to a huge unsigned value, so one maximum checks both bounds.
    if (np.maximum.reduce(steps[:reads_at].view(np.uint64)) > MAX_SEQUENCE_LENGTH
            or np.maximum.reduce((steps[reads_at:] - 1).view(np.uint64)) > MAX_SEQUENCE_LENGTH - 1):
        return None
    batch_reads, batch_haps = joined[:haps_at], joined[haps_at:reads_at]
    read_offsets, hap_offsets = joined[reads_at:hap_offsets_at], joined[hap_offsets_at:]
    if n_batches_1 == 2:  # one batch (a GATK active region): every read against every haplotype
        n_pairs, n_cells = (n_reads_1 - 1) * (n_haps_1 - 1), n_read_bases * n_hap_bases
    else:  # as PairHmmBatches.n_pairs / n_cells
        n_pairs = int(np.dot(steps[:haps_at - 1], steps[haps_at:reads_at - 1]))
        read_ends, hap_ends = read_offsets[batch_reads], hap_offsets[batch_haps]
        n_cells = int(np.dot(read_ends[1:] - read_ends[:-1], hap_ends[1:] - hap_ends[:-1]))
    # The byte fields are used where they lie (the message's bytes, or a shared file's buffer);
    # arrays as they are, so that their base stays the memory's owner (see kernels.pairhmm).
    read_bases, read_quals, read_ins, read_del, read_gcp, hap_bases = (
        raw if isinstance(raw, np.ndarray) else np.frombuffer(raw, dtype=np.uint8) for raw in raw_bases)
    batches = PairHmmBatches(
        read_bases=read_bases, read_quals=read_quals, read_ins=read_ins, read_del=read_del, read_gcp=read_gcp,
        read_offsets=read_offsets, hap_bases=hap_bases, hap_offsets=hap_offsets, batch_reads=batch_reads,
        batch_haps=batch_haps)
    return batches, n_pairs, n_cells


def pairhmm_request_bytes_per_batch(batches: PairHmmBatches) -> np.ndarray:
    """Bytes each batch adds to a request message (arrays only, framing excluded)."""
    read_sums = batches.read_offsets[batches.batch_reads[1:]] - batches.read_offsets[batches.batch_reads[:-1]]
    hap_sums = batches.hap_offsets[batches.batch_haps[1:]] - batches.hap_offsets[batches.batch_haps[:-1]]
    n_reads = np.diff(batches.batch_reads)
    n_haps = np.diff(batches.batch_haps)
    # 5 byte arrays per read base, 1 per haplotype base, one int64 offset per read, per
    # haplotype and two per batch (batch_reads, batch_haps).
    return 5 * read_sums + hap_sums + 8 * (n_reads + n_haps) + 16


# Merging runs once per backend submission over every request in it, and a numpy call costs
# about a microsecond whatever its size: each helper below makes a fixed few calls however
# many parts and fields it joins, and returns views into one new buffer.


def _split_per_field(joined: np.ndarray, lengths: list[int], n_fields: int) -> list[np.ndarray]:
    """Views of joined, one per field, where lengths are those of the pieces joined (the
    parts' pieces of field 0, then of field 1, ...)."""
    ends = list(accumulate(lengths))[len(lengths) // n_fields - 1::len(lengths) // n_fields]
    return [joined[start:end] for start, end in zip([0, *ends[:-1]], ends)]


def concat_fields(parts: Sequence[object], names: Sequence[str]) -> list[np.ndarray]:
    """Each named 1-D field of the parts concatenated over the parts, in order (same dtype for all)."""
    pieces = [getattr(p, name) for name in names for p in parts]
    return _split_per_field(np.concatenate(pieces), [len(piece) for piece in pieces], len(names))


def concat_offsets(parts: Sequence[object], fields: Sequence[tuple[str, Sequence[int]]]) -> list[np.ndarray]:
    """For each (offsets field, sizes of what it indexes in each part): the offsets into the
    concatenation of what they index, i.e. each part's offsets but its last moved by the
    sizes before it, then the grand total."""
    pieces: list[np.ndarray] = []
    shifts: list[int] = []
    for name, sizes in fields:
        arrays = [getattr(p, name) for p in parts]
        pieces += [offsets[:-1] for offsets in arrays[:-1]]
        pieces.append(arrays[-1])  # the last part's end, moved, is the total
        shifts += accumulate(sizes[:-1], initial=0)
    lengths = [len(piece) for piece in pieces]
    joined = np.concatenate(pieces).astype(np.int64, copy=False)
    joined += np.repeat(np.array(shifts, dtype=np.int64), lengths)
    return _split_per_field(joined, lengths, len(fields))


def concat_pairhmm(parts: list[PairHmmBatches]) -> PairHmmBatches:
    """One packed set holding the batches of all parts, in order (batches are independent,
    so the result is the concatenation of each part's results)."""
    read_bases, read_quals, read_ins, read_del, read_gcp, hap_bases = concat_fields(parts, PAIRHMM_BYTE_FIELDS)
    read_offsets, hap_offsets, batch_reads, batch_haps = concat_offsets(parts, [
        ("read_offsets", [len(p.read_bases) for p in parts]),
        ("hap_offsets", [len(p.hap_bases) for p in parts]),
        ("batch_reads", [len(p.read_offsets) - 1 for p in parts]),
        ("batch_haps", [len(p.hap_offsets) - 1 for p in parts]),
    ])
    return PairHmmBatches(read_bases=read_bases, read_quals=read_quals, read_ins=read_ins, read_del=read_del,
                          read_gcp=read_gcp, read_offsets=read_offsets, hap_bases=hap_bases,
                          hap_offsets=hap_offsets, batch_reads=batch_reads, batch_haps=batch_haps)


# A planner's cell limit per piece: a number, or a function of the job's total cells (which
# the planner counts anyway, so a caller sizing pieces by the job needs no pass of its own).
CellLimit = int | Callable[[int], int]


def _piece_cell_limit(max_cells: CellLimit, max_bytes: int, total_cells: int) -> int:
    """The cell limit for a job of total_cells; ValueError when nothing could be sent."""
    cells = max_cells(total_cells) if callable(max_cells) else max_cells
    if cells < 1 or max_bytes - REQUEST_FRAMING_BYTES < 64:
        raise ValueError(f"limits too small to send anything (max_cells={cells}, max_bytes={max_bytes})")
    return cells


def chunk_budgets(max_bytes: int, first_bytes: int | None) -> Iterator[int]:
    """Byte budgets of consecutive chunks: max_bytes each, or starting at first_bytes and
    doubling up to max_bytes (a small first chunk lets the server start sooner)."""
    budget = max_bytes if first_bytes is None else max(min(first_bytes, max_bytes), 64 + REQUEST_FRAMING_BYTES)
    while True:
        yield budget - REQUEST_FRAMING_BYTES
        budget = min(max_bytes, 2 * budget)


def plan_pairhmm_chunks(batches: PairHmmBatches, max_cells: CellLimit, max_bytes: int,
                        first_bytes: int | None = None) -> list[PairHmmBatches]:
    """Split a job into consecutive pieces, each within max_cells and max_bytes (request
    and reply); concatenating the pieces' results gives the job's result. With first_bytes,
    the first piece is at most that large and each next one at most twice the one before.

    Whole batches are grouped while they fit; a batch that alone does not fit is split by
    read ranges, and a read that alone does not fit by haplotype ranges. A single pair over
    the limits raises ValueError.
    """
    return list(iter_pairhmm_chunks(batches, max_cells, max_bytes, first_bytes))


def iter_pairhmm_chunks(batches: PairHmmBatches, max_cells: CellLimit, max_bytes: int,
                        first_bytes: int | None = None) -> Iterator[PairHmmBatches]:
    """:func:`plan_pairhmm_chunks` one piece at a time, each cut when it is asked for (a
    client sending a large job starts on the first piece while the others are cut)."""
    cells = batches.cells_per_batch()
    req = pairhmm_request_bytes_per_batch(batches)
    rep = 8 * batches.pairs_per_batch()
    cum = [np.concatenate([[0], np.cumsum(a, dtype=np.int64)]) for a in (cells, req, rep)]
    max_cells = _piece_cell_limit(max_cells, max_bytes, int(cum[0][-1]))
    i, n = 0, batches.n_batches
    budgets = chunk_budgets(max_bytes, first_bytes)
    while i < n:
        budget = next(budgets)
        # budget - 32: the leading 0 of the four offset arrays, sent once per message.
        caps = (max_cells, budget - 32, budget)
        j = min(int(np.searchsorted(c, c[i] + cap, side="right")) - 1 for c, cap in zip(cum, caps))
        if j > i:
            yield batches.select(i, j)
            i = j
        else:  # a batch too large for one chunk is cut with the full budget
            yield from _split_batch(batches, i, max_cells, max_bytes - REQUEST_FRAMING_BYTES - 32)
            i += 1


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
    bases_names = [bases for bases, _ in sequences]
    fields = dict(zip(bases_names, concat_fields(parts, bases_names)))
    fields.update(zip([offsets for _, offsets in sequences], concat_offsets(
        parts, [(offsets, [len(getattr(p, bases)) for p in parts]) for bases, offsets in sequences])))
    fields.update(zip(per_pair, concat_fields(parts, per_pair)))
    return type(parts[0])(**fields)


def plan_pair_ranges(cells: np.ndarray, request_bytes: np.ndarray, reply_bytes: int, fixed_bytes: int,
                     max_cells: CellLimit, max_bytes: int, first_bytes: int | None = None) -> list[tuple[int, int]]:
    """Consecutive pair ranges, each within max_cells and max_bytes (request and reply); with
    first_bytes, growing from that size as in :func:`plan_pairhmm_chunks`.

    ``cells`` and ``request_bytes`` are per pair; ``reply_bytes`` is per pair; ``fixed_bytes`` is
    what every request carries whatever its pairs (the leading 0 of its offset arrays). A single
    pair over the limits raises ValueError.
    """
    n = len(cells)
    per_pair = (cells, request_bytes, np.full(n, reply_bytes, dtype=np.int64))
    cum = [np.concatenate([[0], np.cumsum(a, dtype=np.int64)]) for a in per_pair]
    max_cells = _piece_cell_limit(max_cells, max_bytes, int(cum[0][-1]))
    ranges: list[tuple[int, int]] = []
    i = 0
    budgets = chunk_budgets(max_bytes, first_bytes)
    while i < n:
        budget = next(budgets)
        caps = (max_cells, budget - fixed_bytes, budget)
        j = min(int(np.searchsorted(c, c[i] + cap, side="right")) - 1 for c, cap in zip(cum, caps))
        if j <= i and budget < max_bytes - REQUEST_FRAMING_BYTES:
            budgets = chunk_budgets(max_bytes, None)  # a pair over the growing budget: full ones from here
            continue
        if j <= i:
            raise ValueError(f"pair {i} alone ({int(cells[i])} cells, {int(request_bytes[i])} bytes) exceeds "
                             f"the server's limits ({max_cells} cells, {budget} bytes per request)")
        ranges.append((i, j))
        i = j
    return ranges


# Ragged results in a shared file (SharedFile.reply_offset): the columns, each n_pairs values of
# its little-endian dtype; then, where the results have them, each ragged array as its n_pairs + 1
# int64 offsets followed by its values (edit's locations: offsets, begins, ends); the CIGAR
# (offsets, then uint32 ops) last. Offsets come before their values so a reader learns the
# values' count from them. Results with no ragged part are their columns only.


def ragged_file_arrays(results: Results, columns: Sequence[tuple[str, str]],
                       locations: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> list[np.ndarray]:
    """The arrays a server writes back to back for ragged results (``columns``: name and
    little-endian dtype of each column, in order; ``locations``: edit's (begins, ends, offsets))."""
    arrays = [np.ascontiguousarray(results.columns[name], dtype=dtype) for name, dtype in columns]
    if locations is not None:
        begin, end, offsets = locations
        arrays += [np.ascontiguousarray(offsets, dtype="<i8"), np.ascontiguousarray(begin, dtype="<i8"),
                   np.ascontiguousarray(end, dtype="<i8")]
    if results.cigar_ops is not None and results.cigar_offsets is not None:
        arrays += [np.ascontiguousarray(results.cigar_offsets, dtype="<i8"),
                   np.ascontiguousarray(results.cigar_ops, dtype="<u4")]
    return arrays


def ragged_file_bytes(n_pairs: int, n_ops: int, columns: Sequence[tuple[str, str]]) -> int:
    """Bytes of :func:`ragged_file_arrays` for n_pairs pairs and n_ops CIGAR ops."""
    return n_pairs * sum(np.dtype(dtype).itemsize for _, dtype in columns) + 8 * (n_pairs + 1) + 4 * n_ops


def ragged_from_file(data: np.ndarray, n_pairs: int, columns: Sequence[tuple[str, str]]) -> Results:
    """Results of n_pairs pairs with a CIGAR (and no locations) read from the bytes
    :func:`ragged_file_arrays` wrote (copies); ValueError when they do not hold such results."""
    at, found = 0, {}
    for name, dtype in columns:
        size = n_pairs * np.dtype(dtype).itemsize
        if at + size > len(data):
            raise ValueError(f"the shared file holds {len(data)} bytes, too few for the results of {n_pairs} pairs")
        found[name] = data[at:at + size].view(dtype).copy()
        at += size
    if at + ragged_file_bytes(n_pairs, 0, ()) > len(data):
        raise ValueError(f"the shared file holds {len(data)} bytes, too few for the results of {n_pairs} pairs")
    offsets = data[at:at + 8 * (n_pairs + 1)].view("<i8").copy()
    at += len(offsets) * 8
    n_ops = int(offsets[-1])
    if n_ops < 0 or at + 4 * n_ops > len(data):
        raise ValueError(f"the shared file's CIGAR offsets end at {n_ops} ops, past its {len(data)} bytes")
    return Results(found, data[at:at + 4 * n_ops].view("<u4").copy(), offsets)
