"""Requests for fuzzing the warpdp service, shared by tests/test_fuzz.py (a bounded run in CI)
and benchmarks/fuzz_server.py (the long run): small valid requests of every algorithm,
byte-level mutations of their serialized form, messages whose integer fields hold extreme
values, and a caller that sends raw bytes to a unary or stream method and returns the status.

Every request is built from a numpy Generator, so a seed reproduces a run.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import numpy as np

from warpdp import registry
from warpdp.grpc import warpdp_pb2
from warpdp.grpc._algorithms import Algorithm, XdropKey
from warpdp.plugin.pairhmm import PairHmmRead, pack_batches
from warpdp.plugin.seedext import SeedExtParams, pack_seed_pairs
from warpdp.plugin.xdrop import pack_xdrop_pairs, xdrop

SERVICE = "warpdp.v1.Warpdp"

# Integers at the edges of the types the server and its C drivers use.
EXTREME_INTS = (0, 1, -1, 2, 127, 128, 255, 256, 16383, 16384, 2**30, 2**30 + 1, 2**31 - 1, 2**31, -2**31,
                -2**31 - 1, 2**32 - 1, 2**32, 2**62, 2**62 + 1, 2**63 - 1, -2**63, -2**63 + 1)

# Answers a server may give a malformed request. FAILED_PRECONDITION: mutated bytes may set a
# request's shared_file, which a server started without shared files refuses.
ACCEPTED = frozenset({grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED,
                      grpc.StatusCode.FAILED_PRECONDITION})



def _bases(rng: np.random.Generator, n: int, alphabet: bytes = b"ACGT") -> bytes:
    return bytes(np.frombuffer(alphabet, np.uint8)[rng.integers(0, len(alphabet), n)])


def _choice(rng: np.random.Generator, items: tuple | list):
    return items[int(rng.integers(len(items)))]


def extreme_int(rng: np.random.Generator) -> int:
    """An edge value, or one just next to it, or any int64."""
    if rng.random() < 0.15:
        return int(rng.integers(-2**63, 2**63 - 1, dtype=np.int64, endpoint=True))
    value = _choice(rng, EXTREME_INTS) + int(rng.integers(-1, 2))
    return min(max(value, -2**63), 2**63 - 1)


def _pairhmm_job(rng: np.random.Generator) -> tuple[Any, Any]:
    batches = []
    for _ in range(int(rng.integers(1, 3))):
        reads = []
        for _ in range(int(rng.integers(1, 3))):
            n = int(rng.integers(1, 16))
            reads.append(PairHmmRead(_bases(rng, n), bytes(rng.integers(2, 41, n, dtype=np.uint8))))
        batches.append((reads, [_bases(rng, int(rng.integers(1, 24))) for _ in range(int(rng.integers(1, 3)))]))
    return pack_batches(batches), bool(rng.integers(2))


def _xdrop_job(rng: np.random.Generator) -> tuple[Any, Any]:
    k = int(rng.integers(1, 6))
    pairs = []
    for _ in range(int(rng.integers(1, 4))):
        h, v = _bases(rng, int(rng.integers(k, 30)), b"ACGTN"), _bases(rng, int(rng.integers(k, 30)), b"ACGTN")
        pairs.append((h, int(rng.integers(0, len(h) - k + 1)), v, int(rng.integers(0, len(v) - k + 1))))
    return pack_xdrop_pairs(pairs), XdropKey.make(k=k, x=int(rng.integers(0, 20)),
                                                  report=_choice(rng, ("longest", "best")))


def _seedext_job(rng: np.random.Generator) -> tuple[Any, Any]:
    items = [(_bases(rng, int(rng.integers(0, 30))), _bases(rng, int(rng.integers(0, 40))),
              int(rng.integers(0, 60))) for _ in range(int(rng.integers(1, 4)))]
    return pack_seed_pairs(items), SeedExtParams()


# A small valid job (packed input, key) of each family, by family name: what the fuzzer
# mutates. The families come from the registry; one without a builder here is not fuzzed
# (its content is the family's own: add its builder when it is registered).
JOB_BUILDERS: dict[str, Callable[[np.random.Generator], tuple[Any, Any]]] = {
    "pairhmm": _pairhmm_job, "xdrop": _xdrop_job, "seedext": _seedext_job}

ALGORITHMS: dict[str, Algorithm] = {family.rpc: family.algorithm() for family in registry.families()
                                    if family.name in JOB_BUILDERS}
METHODS = tuple(ALGORITHMS)


def _job(method: str, rng: np.random.Generator) -> tuple[Any, Any]:
    return JOB_BUILDERS[ALGORITHMS[method].name](rng)


def _int64_fields(method: str) -> tuple[str, ...]:
    """The int64 arrays of the method's packed message (every array not of bytes), in field order."""
    algorithm = ALGORITHMS[method]
    payload, _ = _job(method, np.random.default_rng(0))
    return tuple(name for name, array in algorithm.wire_arrays(payload).items() if array.dtype != np.uint8)


# Each algorithm's int64 arrays inside its packed message.
_INT64_FIELDS = {method: _int64_fields(method) for method in METHODS}


def valid_request(method: str, rng: np.random.Generator) -> bytes:
    """A small well-formed request of the method's algorithm, serialized."""
    payload, key = _job(method, rng)
    return ALGORITHMS[method].request(payload, key).SerializeToString()


def mutate(raw: bytes, rng: np.random.Generator) -> bytes:
    """A few random byte-level edits of serialized bytes: bit flips, inserted, deleted and
    overwritten bytes, truncation, and inserted fields (a random tag with an extreme varint)."""
    data = bytearray(raw)
    for _ in range(int(rng.integers(1, 5))):
        op = int(rng.integers(6))
        at = int(rng.integers(0, len(data) + 1))
        if op == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << int(rng.integers(8))
        elif op == 1:
            data[at:at] = bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
        elif op == 2 and data:
            del data[at:at + int(rng.integers(1, 9))]
        elif op == 3 and data:
            data[min(at, len(data) - 1)] = _choice(rng, (0x00, 0x7F, 0x80, 0xFF))
        elif op == 4:
            del data[at:]
        else:
            tag = (int(rng.integers(1, 16)) << 3) | _choice(rng, (0, 0, 1, 2, 5))
            data[at:at] = _varint(tag) + _varint(extreme_int(rng) & (2**64 - 1))
    return bytes(data)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def extreme_request(method: str, rng: np.random.Generator) -> bytes:
    """A valid request with one to three integers made extreme: a parameter (k, x, a, w, ...),
    or values of an int64 array (offsets, positions, h0), or a whole such array."""
    algorithm = ALGORITHMS[method]
    request = algorithm.request_type.FromString(valid_request(method, rng))
    packed = getattr(request, algorithm.packed_field)
    parameters = [f.name for f in request.DESCRIPTOR.fields if f.type == f.TYPE_INT64]
    for _ in range(int(rng.integers(1, 4))):
        if parameters and rng.random() < 0.4:
            setattr(request, _choice(rng, parameters), extreme_int(rng))
            continue
        name = _choice(rng, _INT64_FIELDS[method])
        values = np.frombuffer(getattr(packed, name), dtype="<i8").copy()
        if len(values) and rng.random() < 0.7:
            values[int(rng.integers(len(values)))] = extreme_int(rng)
        else:
            values = np.array([extreme_int(rng) for _ in range(int(rng.integers(0, 4)))], dtype="<i8")
        setattr(packed, name, values.tobytes())
    return request.SerializeToString()


@dataclass(frozen=True)
class Case:
    """One call: a method, unary or streamed, and the raw bytes of its request(s)."""

    method: str
    streamed: bool
    chunks: tuple[bytes, ...]
    kind: str  # "mutated", "extreme" or "valid" (of a stream: its first chunk's, the others are any)


def random_case(rng: np.random.Generator) -> Case:
    """Mostly mutated or extreme requests; a stream mixes them with valid chunks."""
    method = _choice(rng, METHODS)
    kinds = ("mutated", "extreme", "valid")
    kind = kinds[int(rng.choice(3, p=(0.5, 0.45, 0.05)))]
    build = {"mutated": lambda: mutate(valid_request(method, rng), rng),
             "extreme": lambda: extreme_request(method, rng),
             "valid": lambda: valid_request(method, rng)}
    if rng.random() < 0.25:
        chunks = [build[kind]()] + [build[_choice(rng, kinds)]() for _ in range(int(rng.integers(0, 3)))]
        order = rng.permutation(len(chunks))
        return Case(method, True, tuple(chunks[i] for i in order), kind)
    return Case(method, False, (build[kind](),), kind)


def _identity(raw: bytes) -> bytes:
    return raw


class RawCaller:
    """Sends raw request bytes to the service's methods, unary or streamed, over one channel."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._unary = {m: channel.unary_unary(f"/{SERVICE}/{m}", request_serializer=_identity,
                                              response_deserializer=_identity) for m in METHODS}
        self._stream = {m: channel.stream_stream(f"/{SERVICE}/{m}Stream", request_serializer=_identity,
                                                 response_deserializer=_identity) for m in METHODS}

    def call(self, case: Case, timeout: float) -> tuple[grpc.StatusCode, str]:
        """The call's status code and details (OK and "" when it succeeded)."""
        try:
            if case.streamed:
                for _ in self._stream[case.method](iter(case.chunks), timeout=timeout):
                    pass
            else:
                self._unary[case.method](case.chunks[0], timeout=timeout)
        except grpc.RpcError as error:
            return error.code(), error.details() or ""
        return grpc.StatusCode.OK, ""

    def answers_correctly(self, timeout: float) -> bool:
        """Whether the server scores a known X-drop request as warpdp.xdrop does in-process."""
        pairs = pack_xdrop_pairs([("ACGTACGTTTGACCA", 3, "ACGTACGATTGACCA", 3), ("GGGCCCAAATTT", 0, "GGGCCAAATTT", 0)])
        key = XdropKey.make(k=3, x=5)
        algorithm = registry.family("xdrop").algorithm()
        raw = self._unary[algorithm.rpc](algorithm.request(pairs, key).SerializeToString(), timeout=timeout)
        reply = warpdp_pb2.XdropReply.FromString(raw)
        expected = xdrop(pairs, k=3, x=5, backend="cpu", threads=1)
        return reply.n_pairs == len(pairs) and all(
            np.frombuffer(getattr(reply, name), dtype="<i8").tolist() == getattr(expected, name).tolist()
            for name in expected.COLUMNS)


def channel_options() -> list[tuple[str, int]]:
    return [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
