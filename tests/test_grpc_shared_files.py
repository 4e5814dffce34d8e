"""Same-host transfer: requests whose arrays travel in shared memory (SharedFile in
warpdp.proto): memfds that the client registers over the server's Unix socket.

Servers run in-process on loopback; the client's size threshold and chunk size are lowered so
that small jobs take the shared-memory path. The two-user and killed-client tests run client
processes of their own (tests/helpers/shm_user_process.py).
"""
from __future__ import annotations

import fcntl
import gc
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import types
import time
from pathlib import Path

import grpc
import numpy as np
import pytest

import warpdp
from helpers.grpc_server import WAIT, metric_reaches, start_server, stub_for
from helpers.pairhmm import local, make_batches
from helpers.seedext import assert_seedext_equal, make_seed_pairs
from helpers.shm import ALL_SEALS, job_bytes, sealed_memfd
from helpers.xdrop import K, assert_xdrop_equal, local_xdrop, make_xdrop_pairs
from warpdp.grpc import Client, ServiceError, client as client_module, server as server_module, warpdp_pb2
from warpdp.grpc import _shm_client, _shm_protocol, _shm_server
from warpdp.grpc._algorithms import PAIRHMM, SEEDEXT, XDROP, XdropKey
from warpdp.grpc._edit import EDIT
from warpdp.grpc._packing import concat_pairhmm as _packing_concat
from warpdp.grpc._shm_client import SharedFilePool, is_local_address
from warpdp.grpc._shm_server import MappedFiles, Region, SharedFileRejected, is_local_peer, read_arrays

USER_PROCESS = Path(__file__).with_name("helpers") / "shm_user_process.py"


@pytest.fixture
def small_shared_jobs(monkeypatch):
    """Every job of 1 KB or more goes through shared memory, in chunks of at most 20 KB."""
    monkeypatch.setattr(client_module, "_SHARED_MIN_BYTES", 1024)
    monkeypatch.setattr(client_module, "_SHARED_CHUNK_BYTES", 20 * 1024)


@pytest.fixture
def shared_server():
    srv = start_server()
    yield srv
    srv.stop()


@pytest.fixture
def regions_read(monkeypatch):
    """Handles of the memfds the servers read requests from, in order."""
    handles: list[str] = []
    real = server_module._shm_server.read_arrays

    def spy(region, *args, **kwargs):
        handles.append(region.handle)
        return real(region, *args, **kwargs)

    monkeypatch.setattr(server_module._shm_server, "read_arrays", spy)
    return handles


@pytest.fixture
def results_written(monkeypatch):
    """(handle, whether written) for every request whose results the servers were asked to
    write into its memfd, in order."""
    calls: list[tuple[str, bool]] = []
    real = server_module._shm_server.write_results

    def spy(region, offset, arrays):
        written = real(region, offset, arrays)
        calls.append((region.handle, written))
        return written

    monkeypatch.setattr(server_module._shm_server, "write_results", spy)
    return calls


def wait_for(condition, what: str) -> None:
    """Wait (up to WAIT seconds) until condition() holds: the server learns of a closed
    connection on a thread of its own."""
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"still not {what} after {WAIT} s"
        time.sleep(0.01)


def nothing_registered(srv) -> bool:
    return srv.shared_memory.registered() == (0, 0) and srv.shared_memory.connections() == 0


def in_dev_shm(pid: int) -> list[str]:
    """Entries of /dev/shm that process pid may have made (the name-based transport named its
    files warpdp-<pid>-...; other processes on the machine may make and remove files meanwhile)."""
    names = os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []
    return [name for name in names if f"-{pid}-" in name]


class Registered:
    """Memfds registered by hand over one connection (what a client does)."""

    def __init__(self, srv) -> None:
        self.connection = _shm_client.Connection(srv.shared_memory.name)

    def memfd(self, data: bytes, room: int = 0, seals: int = ALL_SEALS) -> str:
        fd = sealed_memfd(data, room, seals)
        try:
            return self.connection.register(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def registered(shared_server):
    by_hand = Registered(shared_server)
    yield by_hand
    by_hand.close()


def shared_request(registered, algorithm, payload, key, sizes=None, extra: int = 0, data: bytes | None = None):
    """A request whose arrays are in a memfd registered by hand."""
    arrays = list(algorithm.wire_arrays(payload).values())
    handle = registered.memfd(job_bytes(arrays) if data is None else data, room=extra)
    sizes = [a.nbytes for a in arrays] if sizes is None else sizes
    return algorithm.request(payload, key, warpdp_pb2.SharedFile(handle=handle, sizes=sizes))


def memfd_region(data: bytes, room: int = 0, handle: str = "0" * 32, writable: bool = True) -> Region:
    fd = sealed_memfd(data, room)
    if not writable:  # the same memfd opened read-only
        read_only = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        os.close(fd)
        fd = read_only
    return Region(handle, fd, len(data) + room, writable)


def test_all_three_algorithms_through_shared_memory(small_shared_jobs, shared_server, regions_read, results_written):
    batches = make_batches(11, 60)
    pairs = make_xdrop_pairs(12, 120)
    seeds = make_seed_pairs(13, 120)
    with Client(shared_server.address, timeout=WAIT) as client:
        np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
        np.testing.assert_array_equal(client.pairhmm(batches, double=True), local(batches, True))
        assert_xdrop_equal(client.xdrop(pairs, k=K, x=20), local_xdrop(pairs, k=K, x=20))
        assert_seedext_equal(client.seed_extend(seeds, w=30), warpdp.seed_extend(seeds, w=30, backend="cpu"))
        info = client.server_info().shared_files
        assert info.enabled and info.socket == shared_server.shared_memory.name
        # Several chunks each, and the memfds are reused: far fewer memfds than chunks.
        assert len(regions_read) >= 8
        assert 1 <= len(set(regions_read)) <= client_module._SHARED_IN_FLIGHT
        # Every chunk's results came back through its memfd, not in the reply message.
        assert [handle for handle, _ in results_written] == regions_read
        assert all(written for _, written in results_written)
        pool = client._shared_pool  # noqa: SLF001
        assert shared_server.shared_memory.registered()[0] == len(pool._free)  # noqa: SLF001
        assert in_dev_shm(os.getpid()) == []  # no names anywhere
    wait_for(lambda: nothing_registered(shared_server), "all dropped after close()")


def test_align_cigars_come_back_through_shared_memory(small_shared_jobs, shared_server, regions_read,
                                                     results_written):
    rng = np.random.default_rng(29)
    sequences = []
    for _ in range(150):
        target = rng.choice(list(b"ACGT"), int(rng.integers(20, 120))).astype(np.uint8).tobytes()
        query = bytearray(target)
        for _ in range(len(query) // 10):  # substitutions and a deletion now and then
            at = int(rng.integers(0, len(query)))
            query[at] = int(rng.choice(list(b"ACGT")))
        sequences.append((bytes(query[: len(query) - int(rng.integers(0, 3))]), target))
    pairs = warpdp.AlignPairs.from_sequences(sequences)
    with Client(shared_server.address, timeout=WAIT) as client:
        for mode in ("global", "local"):
            got = client.call("align", pairs, {"mode": mode, "cigar": True})
            assert got == warpdp.align(pairs, mode=mode, cigar=True, backend="cpu")
        # Several chunks, each CIGAR written into its memfd, none in a reply message.
        assert len(regions_read) >= 4
        assert [handle for handle, _ in results_written] == regions_read
        assert all(written for _, written in results_written)
        # Without a CIGAR the results are small: this client takes them from the message.
        read, written = len(regions_read), len(results_written)
        plain = client.call("align", pairs, {"mode": "local"})
        assert plain == warpdp.align(pairs, mode="local", backend="cpu")
        assert len(regions_read) > read and len(results_written) == written


def test_edit_file_layout_columns_locations_then_cigar():
    pairs = warpdp.pack_edit_pairs([(b"ACGTAC", b"TTACGAACTT"), (b"GGA", b"GGAGGA")])
    for task in ("distance", "locations", "path"):
        found = warpdp.edit(pairs, mode="hw", task=task, backend="cpu")
        raw = np.concatenate([a.view(np.uint8) for a in EDIT.file_arrays(found)])
        ops_bytes = 4 * len(found.cigar_ops) if task == "path" else 0
        data = raw[:len(raw) - ops_bytes].view("<i8")  # everything before the uint32 ops
        n = found.n_pairs
        for c, name in enumerate(("distance", "target_begin", "target_end")):
            np.testing.assert_array_equal(data[c * n:(c + 1) * n], found.columns[name])
        at = 3 * n
        if task == "distance":
            assert len(data) == at
            continue
        begin, end, offsets = found.locations
        n_loc = int(offsets[-1])
        np.testing.assert_array_equal(data[at:at + n + 1], offsets)
        np.testing.assert_array_equal(data[at + n + 1:at + n + 1 + n_loc], begin)
        np.testing.assert_array_equal(data[at + n + 1 + n_loc:at + n + 1 + 2 * n_loc], end)
        at += n + 1 + 2 * n_loc
        if task == "path":
            np.testing.assert_array_equal(data[at:at + n + 1], found.cigar_offsets)
            at += n + 1
            np.testing.assert_array_equal(raw[8 * at:].view("<u4"), found.cigar_ops)
        assert len(data) == at


def test_small_jobs_and_remote_servers_use_messages(shared_server, regions_read):
    with Client(shared_server.address, timeout=WAIT) as client:
        batches = make_batches(14, 8)  # far below the 1 MiB threshold
        np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
    assert regions_read == []
    assert not is_local_address("10.1.2.3:50051") and not is_local_address("gpu-node:50051")


def test_shared_memory_off_or_out_of_reach_falls_back_to_messages(small_shared_jobs, regions_read, monkeypatch):
    batches = make_batches(15, 40)
    off = start_server(shared_files=False)
    try:
        assert off.shared_memory is None
        with Client(off.address, timeout=WAIT) as client:
            info = client.server_info().shared_files
            assert not info.enabled and not info.socket
            np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
        assert regions_read == []
    finally:
        off.stop()

    srv = start_server()
    try:
        # A server in another network namespace (or on another host behind a loopback
        # address): its socket is not there, so the client sends messages.
        real = client_module._shm_client.Connection
        with monkeypatch.context() as patched:
            patched.setattr(client_module._shm_client, "Connection", lambda name: real(name + "-elsewhere"))
            with Client(srv.address, timeout=WAIT) as client:
                np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
                assert client._shared_files is False and client._shared_pool is None  # noqa: SLF001
        assert regions_read == [] and nothing_registered(srv)

        # A server that refuses the memory it is sent: tried once, then messages only.
        def unusable(*args, **kwargs):
            raise SharedFileRejected(grpc.StatusCode.FAILED_PRECONDITION, "shared file unusable: test")

        monkeypatch.setattr(server_module._shm_server, "read_arrays", unusable)
        with Client(srv.address, timeout=WAIT) as client:
            np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
            np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
            assert client._shared_files is False  # noqa: SLF001
        wait_for(lambda: nothing_registered(srv), "all dropped")
    finally:
        srv.stop()


def assert_memfds_free_and_client_works(srv, client: Client, batches) -> None:
    """After a failed job: no memfd is held (answered chunks' memfds are back in the client's
    pool, unanswered ones closed and unregistered), and it still scores."""
    pool = client._shared_pool  # noqa: SLF001
    assert pool is not None
    wait_for(lambda: srv.shared_memory.registered()[0] == len(pool._free), "only the pool's memfds registered")  # noqa: SLF001
    np.testing.assert_array_equal(client.pairhmm(batches), local(batches))


def test_a_chunk_failing_mid_job_fails_the_job_and_frees_the_memfds(small_shared_jobs, monkeypatch):
    # Chunk 3 of a job through shared memory fails in the server: the call raises that error,
    # the chunks started after it are cancelled, and no memfd is left held. Those of chunks
    # never answered are closed, not reused: the server may still be scoring them, and would
    # write their results into memory the next job had written its arrays into.
    real = server_module._shm_server.read_arrays
    reads: list[str] = []

    def third_fails(region, *args, **kwargs):
        reads.append(region.handle)
        if len(reads) == 3:
            raise SharedFileRejected(grpc.StatusCode.RESOURCE_EXHAUSTED, "test: the third chunk is refused")
        return real(region, *args, **kwargs)

    monkeypatch.setattr(server_module._shm_server, "read_arrays", third_fails)
    batches = make_batches(16, 60)
    srv = start_server()
    try:
        with Client(srv.address, timeout=WAIT) as client:
            with pytest.raises(ServiceError) as error:
                client.pairhmm(batches)
            assert error.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "third chunk" in error.value.details
            assert_memfds_free_and_client_works(srv, client, batches)
        wait_for(lambda: nothing_registered(srv), "all dropped")
    finally:
        srv.stop()


def test_a_piece_that_cannot_be_cut_late_in_a_job_raises_and_frees_the_memfds(small_shared_jobs):
    # Chunks are cut while they are written: a pair over the server's limits near the end of
    # the job is found after the first chunks went out. The call raises ValueError, as when
    # it is found before, and every memfd goes back to the client's pool.
    regular = make_batches(17, 40, reads=(10, 30), haps=(2, 5))
    too_large = make_batches(18, 1, reads=(1, 1), haps=(1, 1), read_len=(400, 400), hap_len=(400, 400))
    job = _packing_concat([regular, too_large])
    srv = start_server(max_request_cells=100_000)
    try:
        with Client(srv.address, timeout=WAIT) as client:
            with pytest.raises(ValueError, match="exceeds the server's limits"):
                client.pairhmm(job)
            assert srv.batcher.completed > 0  # the chunks before it were sent and scored
            assert_memfds_free_and_client_works(srv, client, regular)
            # Found in the very first piece, after the stream was set up: the call ends too.
            first_too_large = _packing_concat([too_large, regular])
            for _ in range(3):
                with pytest.raises(ValueError, match="exceeds the server's limits"):
                    client.pairhmm(first_too_large)
            assert_memfds_free_and_client_works(srv, client, regular)
            assert metric_reaches(srv, "warpdp_in_flight_requests", {}, 0)  # no call left open
        wait_for(lambda: nothing_registered(srv), "all dropped")
    finally:
        srv.stop()


def test_results_come_in_the_message_when_the_server_cannot_write_them(small_shared_jobs, shared_server,
                                                                       monkeypatch):
    batches = make_batches(21, 40)
    seeds = make_seed_pairs(22, 80)
    monkeypatch.setattr(server_module._shm_server, "write_results", lambda *args: False)
    with Client(shared_server.address, timeout=WAIT) as client:
        np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
        assert_seedext_equal(client.seed_extend(seeds, w=30), warpdp.seed_extend(seeds, w=30, backend="cpu"))


def test_a_request_asking_for_its_results_in_its_memfd_gets_them_there(shared_server, registered):
    batches = make_batches(23, 5)
    pairs = make_xdrop_pairs(24, 20)
    key = XdropKey.make(k=K, x=20)
    channel, stub = stub_for(shared_server)
    with channel:
        for algorithm, payload, call, arg in ((PAIRHMM, batches, stub.PairHmm, False),
                                              (XDROP, pairs, stub.Xdrop, key)):
            n = algorithm.n_pairs(payload)
            arrays = list(algorithm.wire_arrays(payload).values())
            data = job_bytes(arrays)
            fd = sealed_memfd(data, room=algorithm.reply_bytes_per_pair * n + 8)
            try:
                handle = registered.connection.register(fd)
                offset = (len(data) + 7) // 8 * 8
                request = algorithm.request(payload, arg, warpdp_pb2.SharedFile(
                    handle=handle, sizes=[a.nbytes for a in arrays], reply_offset=offset))
                reply = call(request, timeout=WAIT)
                assert reply.n_pairs == n and not algorithm.results_in_message(reply)
                written = np.frombuffer(os.pread(fd, algorithm.reply_bytes_per_pair * n, offset), dtype=np.uint8)
            finally:
                os.close(fd)
            out = algorithm.new_output(n)
            algorithm.store_file_results(reply, written, out, 0, n)
            if algorithm is PAIRHMM:
                np.testing.assert_array_equal(out, local(batches))
            else:
                assert_xdrop_equal(algorithm.results(out), local_xdrop(pairs, k=K, x=20))


def test_write_results_only_into_a_writable_memfd_with_room():
    arrays = [np.array([1.5, -2.25], dtype="<f8"), np.array([7], dtype="<i8")]
    region = memfd_region(b"\xee" * 64)
    try:
        assert _shm_server.write_results(region, 16, arrays)
        data = os.pread(region.fd, 64, 0)
        assert data[:16] == b"\xee" * 16 and data[40:] == b"\xee" * 24  # only the results' bytes changed
        assert data[16:40] == arrays[0].tobytes() + arrays[1].tobytes()
        # No room for them: nothing written, and the memfd did not grow.
        assert not _shm_server.write_results(region, 48, arrays)
        assert os.pread(region.fd, 128, 0) == data
    finally:
        os.close(region.fd)
    read_only = memfd_region(b"\xee" * 64, writable=False)  # handed over read-only: never written
    try:
        assert not _shm_server.write_results(read_only, 16, arrays)
        assert os.pread(read_only.fd, 64, 0) == b"\xee" * 64
    finally:
        os.close(read_only.fd)


def old_style(name: str, sizes) -> warpdp_pb2.SharedFile:
    """A SharedFile carrying a name in the retired field 1, as old clients sent it."""
    shared = warpdp_pb2.SharedFile(sizes=sizes)
    shared.MergeFromString(bytes([0x0A, len(name)]) + name.encode())
    return shared


BAD_SHARED = [
    ("no handle", dict(handle=""), grpc.StatusCode.INVALID_ARGUMENT, "invalid shared_file.handle"),
    ("unknown handle", dict(handle="guess"), grpc.StatusCode.INVALID_ARGUMENT, "invalid shared_file.handle"),
    ("a path for a handle", dict(handle="../../etc/passwd"), grpc.StatusCode.INVALID_ARGUMENT,
     "invalid shared_file.handle"),
    ("an old-style name", dict(name="warpdp-test-1"), grpc.StatusCode.INVALID_ARGUMENT, "invalid shared_file.handle"),
    ("too few sizes", dict(sizes=[1, 2]), grpc.StatusCode.INVALID_ARGUMENT, "invalid shared_file.sizes: 2 sizes"),
    ("sizes past the end", dict(sizes="grow"), grpc.StatusCode.INVALID_ARGUMENT, "add up to"),
    ("over the message limit", dict(sizes="huge"), grpc.StatusCode.RESOURCE_EXHAUSTED, "message limit"),
    ("reply offset inside the arrays", dict(reply_offset=8), grpc.StatusCode.INVALID_ARGUMENT,
     "invalid shared_file.reply_offset 8"),
    ("reply offset not a multiple of 8", dict(reply_offset="odd"), grpc.StatusCode.INVALID_ARGUMENT,
     "invalid shared_file.reply_offset"),
]


@pytest.mark.parametrize("case, change, code, message", BAD_SHARED, ids=[c[0] for c in BAD_SHARED])
def test_bad_shared_memory_requests(shared_server, registered, case, change, code, message):
    batches = make_batches(16, 3)
    request = shared_request(registered, PAIRHMM, batches, False)
    sizes = list(request.shared_file.sizes)
    if change.get("sizes") == "grow":
        sizes[0] += 100
    elif change.get("sizes") == "huge":
        sizes[0] = 1 << 40
    elif "sizes" in change:
        sizes = change["sizes"]
    reply_offset = change.get("reply_offset", 0)
    if reply_offset == "odd":
        reply_offset = sum(sizes) + 3
    handle = change.get("handle", request.shared_file.handle)
    if handle == "guess":
        handle = secrets.token_hex(16)
    shared = (old_style(change["name"], sizes) if "name" in change
              else warpdp_pb2.SharedFile(handle=handle, sizes=sizes, reply_offset=reply_offset))
    request.shared_file.CopyFrom(shared)
    channel, stub = stub_for(shared_server)
    with channel, pytest.raises(grpc.RpcError) as error:
        stub.PairHmm(request, timeout=WAIT)
    assert error.value.code() == code and message in error.value.details()


def test_shared_memory_contents_are_validated_like_messages(shared_server, registered):
    channel, stub = stub_for(shared_server)
    with channel:
        # Offsets that run past the bases: the field is named, as for a message.
        batches = make_batches(17, 3)
        arrays = PAIRHMM.wire_arrays(batches)
        offsets = arrays["read_offsets"].copy()
        offsets[-1] += 5
        arrays["read_offsets"] = offsets
        request = shared_request(registered, PAIRHMM, batches, False, data=job_bytes(arrays.values()))
        with pytest.raises(grpc.RpcError) as error:
            stub.PairHmm(request, timeout=WAIT)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "read_offsets" in error.value.details()

        # Both the arrays in the message and shared memory.
        both = PAIRHMM.request(batches, False)
        both.shared_file.CopyFrom(request.shared_file)
        with pytest.raises(grpc.RpcError) as error:
            stub.PairHmm(both, timeout=WAIT)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "not both" in error.value.details()

        # A well-formed memfd with trailing room is fine (clients reuse larger ones).
        seeds = make_seed_pairs(18, 30)
        ok = shared_request(registered, SEEDEXT, seeds, warpdp.SeedExtParams(), extra=999)
        reply = stub.SeedExtend(ok, timeout=WAIT)
        expected = warpdp.seed_extend(seeds, backend="cpu")
        np.testing.assert_array_equal(np.frombuffer(reply.score, "<i8"), expected.score)

        pairs = make_xdrop_pairs(19, 30)
        key = XdropKey.make(k=K, x=20)
        reply = stub.Xdrop(shared_request(registered, XDROP, pairs, key), timeout=WAIT)
        np.testing.assert_array_equal(np.frombuffer(reply.score, "<i8"), local_xdrop(pairs, k=K, x=20).score)


def test_shared_memory_only_from_local_peers(shared_server, registered, monkeypatch):
    monkeypatch.setattr(server_module._shm_server, "is_local_peer", lambda peer: False)
    request = shared_request(registered, PAIRHMM, make_batches(20, 3), False)
    channel, stub = stub_for(shared_server)
    with channel, pytest.raises(grpc.RpcError) as error:
        stub.PairHmm(request, timeout=WAIT)
    assert error.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "server's host" in error.value.details()


def test_local_peers_and_addresses():
    for peer in ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000", "ipv6:[::ffff:127.0.0.1]:5000", "unix:/tmp/s",
                 "ipv4:127.1.2.3:1"):
        assert is_local_peer(peer), peer
    for peer in ("ipv4:10.0.0.2:5000", "ipv6:[2001:db8::1]:5000", "ipv6:[::ffff:10.0.0.1]:5000", "garbage", ""):
        assert not is_local_peer(peer), peer
    for address in ("127.0.0.1:50051", "localhost:50051", "[::1]:50051", "unix:/run/warpdp.sock", "ipv4:127.0.0.1:1"):
        assert is_local_address(address), address
    for address in ("10.0.0.1:50051", "example.org:50051", "[2001:db8::1]:50051", "dns:///example.org:1"):
        assert not is_local_address(address), address


@pytest.mark.parametrize("total_mib", [0.5, 9.3])  # read by one thread, and in parts by several
def test_read_arrays_reads_every_byte_where_it_belongs(total_mib, monkeypatch):
    monkeypatch.setattr(_shm_server, "_CORES", 4)  # parts as on a machine with cores to spare
    rng = np.random.default_rng(3)
    sizes = [int(total_mib * 2**20 * share) for share in (0.31, 0.05, 0.2, 0.44)] + [13, 0, 8]
    arrays = [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]
    fields = [f"f{k}" for k in range(len(sizes))]
    region = memfd_region(job_bytes(arrays), room=100)  # trailing bytes are ignored
    try:
        got = read_arrays(region, sizes, fields, 1 << 30)
    finally:
        os.close(region.fd)
    for field, array in zip(fields, arrays):
        np.testing.assert_array_equal(got[field], array)
        assert got[field].ctypes.data % 8 == 0  # each array 8-byte aligned: int64 views need no copy
    # Sizes adding up to more than the memfd holds are refused.
    short = memfd_region(job_bytes(arrays)[:-5])
    try:
        with pytest.raises(SharedFileRejected) as error:
            read_arrays(short, sizes, fields, 1 << 30)
    finally:
        os.close(short.fd)
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_registration_takes_only_sealed_memfds(shared_server, tmp_path):
    connection = _shm_client.Connection(shared_server.shared_memory.name)
    data = b"\x01" * 4096

    def refused(fd: int, message: str) -> None:
        try:
            with pytest.raises(_shm_protocol.Refused, match=message):
                connection.register(fd)
        finally:
            os.close(fd)

    read_end, write_end = os.pipe()
    os.close(write_end)
    refused(read_end, "not a memfd")
    (tmp_path / "file").write_bytes(data)
    refused(os.open(tmp_path / "file", os.O_RDWR), "not a memfd")
    refused(os.open("/dev/zero", os.O_RDONLY), "not a memfd")
    if os.path.isdir("/dev/shm"):  # a file on a memory file system, which can never be sealed
        path = f"/dev/shm/warpdp-test-{os.getpid()}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.unlink(path)
        os.pwrite(fd, data, 0)
        refused(fd, "sealed")
    refused(sealed_memfd(data, seals=0), "sealed with F_SEAL_SHRINK and F_SEAL_GROW")
    refused(sealed_memfd(data, seals=fcntl.F_SEAL_GROW), "F_SEAL_SHRINK")
    refused(sealed_memfd(data, seals=fcntl.F_SEAL_SHRINK), "F_SEAL_GROW")
    refused(sealed_memfd(b""), "holds 0 bytes")
    fd = sealed_memfd(data)
    refused(os.open(f"/proc/self/fd/{fd}", os.O_WRONLY), "open for reading")
    os.close(fd)
    assert shared_server.shared_memory.registered() == (0, 0)
    fd = sealed_memfd(data)
    handle = connection.register(fd)
    os.close(fd)
    assert _shm_protocol.is_handle(handle) and shared_server.shared_memory.registered() == (1, len(data))
    connection.unregister(handle)
    assert shared_server.shared_memory.registered() == (0, 0)
    with pytest.raises(_shm_protocol.Refused, match="unknown handle"):
        connection.unregister(handle)
    connection.close()
    wait_for(lambda: nothing_registered(shared_server), "all dropped")


def test_garbage_and_other_connections_handles_are_refused(shared_server):
    a, b = Registered(shared_server), Registered(shared_server)
    try:
        handle = a.memfd(b"a" * 1000)
        with pytest.raises(_shm_protocol.Refused, match="unknown handle"):
            b.connection.unregister(handle)  # only its own connection may
        raw = b.connection._sock  # noqa: SLF001
        r, w = os.pipe()
        for message, fds in ((b"\x00\xff" * 30, []), (b"register", []), (b"register", [r, w]),
                             (b"unregister", []), (b"unregister " + b"f" * 32, []), (b"x" * 5000, []),
                             (b"unregister " + handle.encode(), [r])):
            socket.send_fds(raw, [message], fds)
            assert raw.recv(4096).startswith(b"error "), message[:20]
        os.close(r)
        os.close(w)
        assert shared_server.shared_memory.registered() == (1, 1000)
        b.memfd(b"b" * 10)  # the connection still works
        raw.send(b"")  # an empty packet reads as the end of the connection: its memfds go
        wait_for(lambda: shared_server.shared_memory.registered() == (1, 1000), "b's memfd dropped")
        assert shared_server.shared_memory.connections() == 1
        a.connection.unregister(handle)
    finally:
        a.close()
        b.close()
    wait_for(lambda: nothing_registered(shared_server), "all dropped")


def test_a_registered_memfd_cannot_shrink_under_the_server(shared_server, registered):
    # What made the shared directory's files dangerous to map: a client truncating its file
    # under the server's mapping (a SIGBUS on the host's first touch). A registered memfd is
    # sealed: truncating it fails, so the server may even read its mapping on the host.
    batches = make_batches(25, 4)
    arrays = list(PAIRHMM.wire_arrays(batches).values())
    fd = sealed_memfd(job_bytes(arrays))
    try:
        handle = registered.connection.register(fd)
        for size in (0, 8, os.fstat(fd).st_size + 4096):
            with pytest.raises(PermissionError):
                os.ftruncate(fd, size)
        request = PAIRHMM.request(batches, False, warpdp_pb2.SharedFile(handle=handle, sizes=[a.nbytes for a in arrays]))
        channel, stub = stub_for(shared_server)
        with channel:
            reply = stub.PairHmm(request, timeout=WAIT)
        np.testing.assert_array_equal(np.frombuffer(reply.log10_likelihoods, "<f8"), local(batches))
        # A page-locked mapping of it (as a GPU server keeps) is safe to read on the host too.
        register = FakeRegistrations()
        mapped = MappedFiles(register)
        with shared_server.shared_memory.open(handle) as region:
            fields = [field.name for field in PAIRHMM.packed_message.DESCRIPTOR.fields]
            got = mapped.arrays(region, [a.nbytes for a in arrays], fields, 1 << 30, PAIRHMM.mapped_file_host_fields)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)
        np.testing.assert_array_equal(got["read_bases"], arrays[0])
        del got
        mapped.close()
        register.wait_live(0)
    finally:
        os.close(fd)


def test_results_are_never_written_into_a_memfd_sealed_against_writes(shared_server, registered):
    batches = make_batches(26, 4)
    arrays = list(PAIRHMM.wire_arrays(batches).values())
    data = job_bytes(arrays)
    offset = (len(data) + 7) // 8 * 8
    room = offset - len(data) + 8 * batches.n_pairs
    fd = sealed_memfd(data, room=room, seals=ALL_SEALS | fcntl.F_SEAL_WRITE)
    try:
        handle = registered.connection.register(fd)
        request = PAIRHMM.request(batches, False, warpdp_pb2.SharedFile(
            handle=handle, sizes=[a.nbytes for a in arrays], reply_offset=offset))
        channel, stub = stub_for(shared_server)
        with channel:
            reply = stub.PairHmm(request, timeout=WAIT)
        assert PAIRHMM.results_in_message(reply)  # in the message instead
        np.testing.assert_array_equal(np.frombuffer(reply.log10_likelihoods, "<f8"), local(batches))
        assert os.pread(fd, len(data) + room, 0) == data + bytes(room)
    finally:
        os.close(fd)


class FakeRegistrations:
    """Stands in for CUDA's page-locking (cudaHostRegister): records what is registered."""

    def __init__(self) -> None:
        self.live: dict[int, int] = {}  # address -> bytes
        self.count = 0
        self.released = threading.Condition()

    def __call__(self, address: int, nbytes: int):
        with self.released:
            assert address not in self.live, "registered twice"
            self.live[address] = nbytes
            self.count += 1

        def unregister() -> None:
            with self.released:
                del self.live[address]
                self.released.notify_all()
        return unregister

    def wait_live(self, n: int) -> None:
        gc.collect()
        with self.released:
            assert self.released.wait_for(lambda: len(self.live) == n, WAIT), self.live


def test_mapped_files_map_each_memfd_once_and_drop_it_when_unregistered(monkeypatch):
    monkeypatch.setattr(_shm_server, "_SWEEP_S", 0.05)
    rng = np.random.default_rng(4)
    fields = ["bases", "offsets", "quals", "nothing", "ends"]
    sizes = [3001, 24, 5000, 0, 16]
    private = ("offsets", "ends")
    arrays = [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]
    region = memfd_region(job_bytes(arrays), room=100, handle="a" * 32)
    alive = {region.handle}
    register = FakeRegistrations()
    mapped = MappedFiles(register, alive=alive.__contains__)

    def check(got: dict, expected: list) -> tuple[int, int]:
        (address, nbytes), = register.live.items()
        for field, array in zip(fields, expected):
            np.testing.assert_array_equal(got[field], array)
        for field in ("bases", "quals"):  # in the page-locked mapping, which the GPU copies from
            assert address <= got[field].ctypes.data < address + nbytes
        for field in private:  # the server's own copies, 8-byte aligned for int64 views
            assert not address <= got[field].ctypes.data < address + nbytes
            assert got[field].ctypes.data % 8 == 0
        return address, nbytes

    try:
        got = mapped.arrays(region, sizes, fields, 1 << 30, private)
        first = check(got, arrays)
        assert first[1] == sum(sizes) + 100  # the whole memfd, for later and larger requests
        # The next request on it (rewritten in place, as a client reuses its memfds) needs no
        # new registration, and sees the new contents; the offsets copied before do not change.
        offsets_before = got["offsets"].copy()
        arrays = [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]
        os.pwrite(region.fd, job_bytes(arrays), 0)
        np.testing.assert_array_equal(got["offsets"], offsets_before)
        again = mapped.arrays(region, sizes, fields, 1 << 30, private)
        assert check(again, arrays) == first and register.count == 1
        del got, again
        # Unregistered: the mapping goes once no request uses it.
        held = mapped.arrays(region, sizes, fields, 1 << 30, private)["quals"]
        alive.clear()
        mapped.forget([region.handle])
        register.wait_live(1)
        np.testing.assert_array_equal(held, arrays[2])
        del held
        register.wait_live(0)
        # A memfd unregistered while its request mapped it is not kept after the request.
        view = mapped.arrays(region, sizes, fields, 1 << 30, private)["bases"]
        assert register.count == 2 and mapped.mapped_bytes() == 0
        del view
        register.wait_live(0)
        # Sizes adding up to more than the memfd holds are refused, as read_arrays refuses them.
        with pytest.raises(SharedFileRejected) as error:
            mapped.arrays(region, [*sizes[:-1], sizes[-1] + 101], fields, 1 << 30, private)
        assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        mapped.close()
        os.close(region.fd)


def test_mapped_files_stay_under_their_byte_limit_and_close(monkeypatch):
    monkeypatch.setattr(_shm_server, "_SWEEP_S", 0.05)
    # The mappings' clock is the test's: idleness is decided by it, not by how loaded the machine is.
    now = [0.0]
    monkeypatch.setattr(_shm_server, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    register = FakeRegistrations()
    mapped = MappedFiles(register, max_bytes=2500, idle_s=10.0)
    fields, sizes = ["bases", "offsets"], [1000, 8]
    regions = [memfd_region(np.full(1000, k, np.uint8).tobytes() + bytes(8), handle=str(k) * 32) for k in (1, 2, 3)]
    try:
        kept = mapped.arrays(regions[0], sizes, fields, 1 << 30, ("offsets",))["bases"]
        for region in regions[1:]:
            mapped.arrays(region, sizes, fields, 1 << 30, ("offsets",))
        # Three memfds of 1008 bytes are over 2500: the least recently used one goes, once its
        # request is done.
        assert mapped.mapped_bytes() == 2016
        register.wait_live(3)
        assert kept[0] == 1
        del kept
        register.wait_live(2)
        # Mappings unused for idle_s go; one used since stays. The sweeper thread may run at
        # any moment, so the clock only moves where no mapping can be idle for longer than
        # idle_s (t = 5: every one was last used at t = 0), then to t = 12, where region 1
        # (last used at 0) is idle for 12 > 10 and region 2 (used at 5) for 7 < 10.
        now[0] = 5.0
        mapped.arrays(regions[2], sizes, fields, 1 << 30, ("offsets",))  # its view goes at once: last used at 5
        now[0] = 12.0
        register.wait_live(1)
        assert register.count == 3
        mapped.close()
        register.wait_live(0)

        # CUDA refusing to page-lock is the caller's to handle (the server then reads the arrays).
        def refuse(address: int, nbytes: int):
            raise RuntimeError("cudaErrorHostMemoryAlreadyRegistered")

        with pytest.raises(RuntimeError, match="AlreadyRegistered"):
            MappedFiles(refuse).arrays(regions[0], sizes, fields, 1 << 30, ("offsets",))
    finally:
        for region in regions:
            os.close(region.fd)


def test_shared_file_chunks_are_request_sized_on_a_gpu_server_only():
    job = make_batches(31, 300, reads=(10, 40), haps=(2, 5), read_len=(100, 150), hap_len=(200, 400))
    limits = warpdp_pb2.Limits(max_request_cells=job.n_cells // 3, max_message_bytes=64 << 20)
    batching = warpdp_pb2.Batching(enabled=True, max_batch_cells=job.n_cells // 30)
    chunks = {backend: list(client_module._shared_file_chunks(job, False, warpdp_pb2.ServerInfoReply(
        backend=backend, limits=limits, batching=batching))) for backend in ("cpu", "gpu")}
    for backend, cap in (("gpu", limits.max_request_cells), ("cpu", batching.max_batch_cells)):
        assert sum(c.n_pairs for c in chunks[backend]) == job.n_pairs
        assert max(c.n_cells for c in chunks[backend]) <= cap
    assert 3 <= len(chunks["gpu"]) < 6 and len(chunks["cpu"]) >= 30


def test_gpu_server_chunks_grow_with_the_job_up_to_the_request_limit(monkeypatch):
    # A GPU server's chunks: at least _SHARED_CHUNK_CELLS, about 1/_SHARED_CHUNKS_PER_JOB of a
    # job too large for that, and never over the request limit.
    job = make_batches(32, 400, reads=(10, 40), haps=(2, 5), read_len=(100, 150), hap_len=(200, 400))
    info = warpdp_pb2.ServerInfoReply(backend="gpu", limits=warpdp_pb2.Limits(
        max_request_cells=job.n_cells // 4, max_message_bytes=64 << 20))
    monkeypatch.setattr(client_module, "_SHARED_FIRST_CHUNK_BYTES", 64 << 20)  # no small first chunks here

    def largest(min_cells: int, per_job: int) -> int:
        monkeypatch.setattr(client_module, "_SHARED_CHUNK_CELLS", min_cells)
        monkeypatch.setattr(client_module, "_SHARED_CHUNKS_PER_JOB", per_job)
        chunks = list(client_module._shared_file_chunks(job, False, info))
        assert sum(c.n_pairs for c in chunks) == job.n_pairs
        return max(c.n_cells for c in chunks)

    one_batch = int(job.cells_per_batch().max())
    assert job.n_cells // 40 - one_batch <= largest(job.n_cells // 40, 100) <= job.n_cells // 40
    assert job.n_cells // 20 - one_batch <= largest(job.n_cells // 40, 20) <= job.n_cells // 20
    assert job.n_cells // 4 - one_batch <= largest(job.n_cells // 40, 2) <= job.n_cells // 4  # the request limit


def test_pool_reuses_replaces_and_closes(shared_server):
    mib = 1 << 20
    registry = shared_server.shared_memory
    pool = SharedFilePool(_shm_client.Connection(registry.name), keep_bytes=3 * mib)
    small = [np.arange(10, dtype=np.uint8), np.arange(3, dtype="<i8")]
    first, sizes, reply_offset = pool.acquire(small)
    assert sizes == [10, 24] and reply_offset == 0  # no room for results asked for
    # The arrays back to back at the start of a memfd of whole MiBs (its capacity).
    assert first.view(0, 34).tobytes() == small[0].tobytes() + small[1].tobytes()
    assert first.capacity == mib and registry.registered() == (1, mib)
    pool.release(first)
    grown = np.arange(mib + 5, dtype=np.uint8)
    second, _, _ = pool.acquire([grown])  # too large for the free memfd: a new one replaces it
    assert second.handle != first.handle and second.capacity == 2 * mib
    assert registry.registered() == (1, 2 * mib) and not registry.is_registered(first.handle)
    assert np.array_equal(second.view(0, len(grown)), grown)
    other, _, _ = pool.acquire(small)  # the second is handed out: a new one
    assert other.handle not in (first.handle, second.handle)
    pool.release(second)
    pool.release(other)  # 2 + 1 MiB kept, within 3
    assert registry.registered() == (2, 3 * mib)
    big, _, _ = pool.acquire([np.zeros(4 * mib, dtype=np.uint8)])  # replaces the largest free one
    assert registry.registered() == (2, mib + big.capacity) and not registry.is_registered(second.handle)
    pool.release(big)  # over keep_bytes: closed and unregistered at once
    assert registry.registered() == (1, mib) and not registry.is_registered(big.handle)
    # Room for results: from the first multiple of 8 after the arrays, within the capacity.
    with_reply, sizes, reply_offset = pool.acquire(small, reply_bytes=mib)
    assert sizes == [10, 24] and reply_offset == 40
    assert with_reply.capacity >= reply_offset + mib
    pool.release(with_reply)
    pool.close()
    wait_for(lambda: nothing_registered(shared_server), "all dropped after close()")


REPO = Path(warpdp.__file__).resolve().parents[1]


def spawn(role: str, uid: int, gid: int, address: str, *args: str) -> subprocess.Popen:
    """A process of shm_user_process.py playing role as user uid."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, str(USER_PROCESS), role, str(uid), str(gid), address, *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd="/")


def ready(process: subprocess.Popen) -> None:
    line = process.stdout.readline()
    if line.strip() != "ready":
        process.kill()
        raise AssertionError(f"the {process.args[2]} process did not get ready: {line!r} {process.stderr.read()}")


def finish(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=4 * WAIT)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_client_leaves_nothing_behind(shared_server, sig):
    process = spawn("killed", os.getuid(), os.getgid(), shared_server.address)
    try:
        ready(process)
        assert in_dev_shm(process.pid) == []
        count, nbytes = shared_server.shared_memory.registered()
        assert count > 0 and nbytes > 0 and shared_server.shared_memory.connections() == 1
        process.send_signal(sig)
        process.wait(WAIT)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    wait_for(lambda: nothing_registered(shared_server), "all dropped after the client died")
    assert in_dev_shm(process.pid) == []


@pytest.fixture
def two_users():
    """Two throwaway system users (removed afterwards)."""
    if os.geteuid() != 0:
        pytest.skip("creating users and switching to them needs root (CI runs as root)")
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        pytest.skip("useradd/userdel are not installed")
    names: list[str] = []
    try:
        for role in ("a", "b"):
            name = f"wdp{role}{secrets.token_hex(4)}"
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                           check=True, capture_output=True)
            names.append(name)
        yield [pwd.getpwnam(name) for name in names]
    finally:
        for name in names:
            subprocess.run(["userdel", name], capture_output=True)


def test_another_user_can_neither_read_nor_write_a_clients_memory(two_users):
    # Issue #23's confused deputy: a server run as root, user A's client scoring through
    # shared memory over and over, and user B trying every way into A's memory meanwhile.
    user_a, user_b = two_users
    srv = start_server()
    processes = []
    try:
        a = spawn("client", user_a.pw_uid, user_a.pw_gid, srv.address)
        processes.append(a)
        ready(a)
        b = spawn("attacker", user_b.pw_uid, user_b.pw_gid, srv.address, str(a.pid))
        processes.append(b)
        found = finish(b)
        a.stdin.write("stop\n")
        a.stdin.flush()
        client = finish(a)
        wait_for(lambda: srv.shared_memory.connections() == 0, "both connections closed")
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
        srv.stop()
    # A's results stayed exact, all through shared memory.
    assert client["shared_memory"] and client["calls"] >= 3 and client["wrong"] == 0, client
    # Every gRPC attempt of B's on memory it did not register was refused; its own worked.
    for what, (code, details) in found["grpc"].items():
        if what == "its own memfd":
            assert code == "OK", details
        else:
            assert code == "INVALID_ARGUMENT" and "invalid shared_file.handle" in details, (what, code, details)
    assert found["own result right"]
    # Every descriptor that is not a sealed memfd was refused; its own sealed one registered.
    for what, (answer, detail) in found["socket"].items():
        assert answer == ("ok" if what == "its own sealed memfd" else "refused"), (what, detail)
    assert found["shrink"] == os.strerror(1)  # EPERM: sealed
    assert all(answer.startswith("error ") for answer in found["garbage answers"]), found["garbage answers"]
    assert found["proc"] == os.strerror(13)  # EACCES: A's descriptors are not B's to open


def test_a_gpu_servers_page_locked_mappings_simulated_on_the_cpu(small_shared_jobs, monkeypatch):
    # What a GPU server does with Pair-HMM input (tests/test_grpc_gpu.py runs it on a GPU):
    # the bulk arrays stay in a page-locked mapping of the client's memfd, mapped once per
    # memfd, and the mappings go when the client closes. Here the kernel runs on the CPU and
    # page-locking is recorded only.
    monkeypatch.setattr(_shm_server, "_SWEEP_S", 0.05)
    monkeypatch.setattr(server_module._shm_server, "read_arrays", lambda *args, **kwargs: pytest.fail("read"))
    register = FakeRegistrations()
    srv = start_server()
    try:
        kernel = srv._servicer._kernels["pairhmm"]  # noqa: SLF001
        monkeypatch.setattr(kernel, "backend", "gpu")
        monkeypatch.setattr(kernel, "run", lambda payload, key, cancelled=None: kernel.algorithm.run(
            payload, key, backend="cpu", threads=1, cancelled=cancelled))
        mapped = MappedFiles(register, alive=srv.shared_memory.is_registered)
        srv._servicer._mapped_files = mapped  # noqa: SLF001
        srv.shared_memory.on_forget = mapped.forget
        batches = make_batches(27, 60)
        with Client(srv.address, timeout=WAIT) as client:
            for _ in range(3):
                np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
            assert 1 <= register.count == srv.shared_memory.registered()[0] <= client_module._SHARED_IN_FLIGHT
        register.wait_live(0)
        assert mapped.mapped_bytes() == 0
        wait_for(lambda: nothing_registered(srv), "all dropped after close()")
    finally:
        srv.stop()
