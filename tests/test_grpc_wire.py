"""The message path's own wire encoding (warpdp.grpc._wire) against the protobuf library: what
it writes parses to the messages the library builds, and what it reads out of any bytes, well
formed or not, is what the library parses from them (no server)."""
from __future__ import annotations

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from warpdp import registry
from warpdp.grpc import _calls, _wire, warpdp_pb2
from warpdp.grpc._algorithms import XdropKey
from warpdp.grpc._calls import _CorruptRequest
from warpdp.plugin.align import AlignPairs, AlignParams
from warpdp.plugin.edit import EditParams, pack_edit_pairs
from warpdp.plugin.pairhmm import PairHmmRead, pack_batches
from warpdp.plugin.seedext import SeedExtParams, pack_seed_pairs
from warpdp.plugin.xdrop import pack_xdrop_pairs


def _jobs() -> dict:
    """A small job of each built-in family: its input and parameters."""
    batches = pack_batches([([PairHmmRead("ACGTAC", "IIIII#"), PairHmmRead("GGT", "I5I")], ["ACGTTAC", "CCA"]),
                            ([PairHmmRead("TTTA", "IIII")], ["TTA"])])
    return {
        "pairhmm": (batches, True),
        "xdrop": (pack_xdrop_pairs([("ACGTACGTACGTAAC", 4, "ACGTACGTACGTACG", 4), ("AACCGGTT", 0, "AACCGTTT", 0)]),
                  XdropKey.make(k=3, x=7, match=2, mismatch=-3)),
        "seedext": (pack_seed_pairs([("ACGTACGTAC", "ACGTACGTACGG", 20), ("", "ACG", 3)]), SeedExtParams(w=7)),
        "align": (AlignPairs.from_sequences([("ACGTACGT", "ACGTTACGT"), ("A", "C")]), AlignParams(mode="local")),
        "edit": (pack_edit_pairs([("ACGT", "ACGGT"), ("TTTT", "TTAT")]), EditParams()),
    }


JOBS = _jobs()


@pytest.mark.parametrize("family", sorted(JOBS))
def test_encoded_request_is_the_request_message(family: str) -> None:
    algorithm = registry.family(family).algorithm()
    payload, key = JOBS[family]
    data = algorithm.encoded_request(payload, key)
    assert algorithm.request_type.FromString(data) == algorithm.request(payload, key)


@pytest.mark.parametrize("family", sorted(JOBS))
def test_a_received_request_reads_as_the_protobuf_library_parses_it(family: str) -> None:
    algorithm = registry.family(family).algorithm()
    payload, key = JOBS[family]
    for data in (algorithm.encoded_request(payload, key), algorithm.request(payload, key).SerializeToString()):
        request, packed = algorithm.request_reader.parse(data)
        assert packed is not None  # taken out of the message, as views (or aligned copies)
        assert _joined(algorithm, request, packed) == algorithm.request_type.FromString(data)
        for name in algorithm.request_reader.aligned:
            assert getattr(packed, name).ctypes.data % 8 == 0, name
        # The decoded job is the one of the whole message.
        whole = algorithm.decode(algorithm.request_type.FromString(data))
        job = algorithm.decode(request, packed)
        assert (job.key, job.n_pairs, job.cells) == (whole.key, whole.n_pairs, whole.cells)


@pytest.mark.parametrize("family", sorted(JOBS))
def test_encoded_reply_is_the_reply_message(family: str) -> None:
    algorithm = registry.family(family).algorithm()
    payload, key = JOBS[family]
    rows = algorithm.run(payload, key, backend="cpu", threads=1)
    stats = warpdp_pb2.CallStats(backend="cpu", cells=12, queue_us=3)
    encoded = algorithm.encoded_reply(rows, payload.n_pairs, 5, stats)
    assert isinstance(encoded, bytes)  # written straight from the result arrays
    assert algorithm.reply_type.FromString(encoded) == algorithm.reply(rows, payload.n_pairs, 5, stats)
    # Without results (none, or written into a shared file): the message with the counts alone.
    empty = algorithm.encoded_reply(None, payload.n_pairs, 5, stats)
    assert _wire.serialize(empty) == algorithm.reply_type(n_pairs=payload.n_pairs, chunk=5,
                                                          stats=stats).SerializeToString()


def _joined(algorithm, request, packed):
    """The message with the arrays read out of it put back."""
    whole = type(request)()
    whole.CopyFrom(request)
    nested = getattr(whole, algorithm.packed_field)
    nested.SetInParent()
    for name in algorithm.request_reader.names:
        setattr(nested, name, bytes(getattr(packed, name)))
    return whole


def _outcome(algorithm, data: bytes):
    """What the server's deserializer makes of data: the whole message, or the corrupt request."""
    received = _calls._sized(algorithm.request_reader)(data)
    assert received.nbytes == len(data)
    if isinstance(received.request, _CorruptRequest):
        return received.request
    if received.packed is None:
        return received.request
    return _joined(algorithm, received.request, received.packed)


def _library(algorithm, data: bytes):
    try:
        return algorithm.request_type.FromString(data)
    except DecodeError as exc:
        return _CorruptRequest(f"{type(exc).__name__}: {exc}")


def _tag(number: int, wire_type: int) -> bytes:
    return _wire._varint(number << 3 | wire_type)


@pytest.mark.parametrize("family", sorted(JOBS))
def test_unusual_messages_read_as_the_protobuf_library_parses_them(family: str) -> None:
    algorithm = registry.family(family).algorithm()
    payload, key = JOBS[family]
    data = algorithm.encoded_request(payload, key)
    number = algorithm.request_type.DESCRIPTOR.fields_by_name[algorithm.packed_field].number
    first = algorithm.packed_message.DESCRIPTOR.fields[0].number
    cases = [
        data + data,                                            # everything twice (the packed field merges)
        data + _tag(number, 2) + b"\x02" + _tag(first, 2) + b"\x00",  # the packed field again, one field emptied
        data + _tag(number, 2) + b"\x03" + _tag(99, 0) + b"\x01",     # an unknown field among the arrays
        data + _tag(number, 2) + b"\x02" + _tag(first, 0) + b"\x01",  # an array field with the wrong wire type
        data + _tag(77, 2) + b"\x01x",                           # an unknown top-level field
        data + _tag(77, 3),                                      # a group
        data[:-1],                                               # truncated
        data + b"\xff" * 11,                                     # a varint too long
        data + _tag(number, 0) + b"\x01",                        # the packed field as a varint
        b"",
        _tag(number, 2) + b"\x00",                               # present and empty
        bytes([number << 3 | 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]),          # a length of 6 bytes
        bytes([number << 3 | 2 | 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]) + b"\x00",  # a tag of 6 bytes
    ]
    for case in cases:
        assert _outcome(algorithm, case) == _library(algorithm, case)


@settings(max_examples=400, deadline=None)
@given(family=st.sampled_from(sorted(JOBS)), edits=st.lists(
    st.tuples(st.sampled_from(["insert", "delete", "replace", "repeat"]), st.integers(0, 10**6),
              st.integers(0, 12), st.binary(max_size=12)), min_size=1, max_size=4))
def test_mangled_requests_read_as_the_protobuf_library_parses_them(family, edits) -> None:
    algorithm = registry.family(family).algorithm()
    payload, key = JOBS[family]
    data = bytearray(algorithm.encoded_request(payload, key))
    for how, at, length, raw in edits:
        at %= len(data) + 1
        if how == "insert":
            data[at:at] = raw
        elif how == "delete":
            del data[at:at + length]
        elif how == "replace":
            data[at:at + len(raw)] = raw
        else:
            data += data[at:at + length]
    assert _outcome(algorithm, bytes(data)) == _library(algorithm, bytes(data))


def test_views_keep_the_received_bytes_and_are_read_only() -> None:
    algorithm = registry.family("pairhmm").algorithm()
    payload, key = JOBS["pairhmm"]
    data = algorithm.encoded_request(payload, key)
    _, packed = algorithm.request_reader.parse(data)
    bases = packed.read_bases
    assert not bases.flags.writeable
    assert bytes(bases) == payload.read_bases.tobytes()
    assert bases.base is data  # a view of the received bytes, not a copy
    job = algorithm.decode(*algorithm.request_reader.parse(data))
    # The job's bases still tell the GPU runner that they lie in Python's own memory (no
    # page-locked query for them).
    for name in ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp", "hap_bases"):
        assert getattr(job.payload, name).base is data, name
