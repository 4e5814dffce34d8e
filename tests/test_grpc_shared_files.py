"""Same-host transfer: requests whose arrays travel in shared files (SharedFile in warpdp.proto).

Servers run in-process on loopback with a temporary shared directory; the client's size
threshold and chunk size are lowered so that small jobs take the shared-file path.
"""
from __future__ import annotations

import gc
import os
import threading
import time

import grpc
import numpy as np
import pytest

import warpdp
from grpc_support import WAIT, metric_reaches, start_server, stub_for
from test_grpc_service import local, make_batches
from test_grpc_xdrop_seedext import K, assert_seedext_equal, assert_xdrop_equal, local_xdrop, make_seed_pairs, make_xdrop_pairs
from warpdp.grpc import Client, ServiceError, client as client_module, server as server_module, warpdp_pb2
from warpdp.grpc._algorithms import PAIRHMM, SEEDEXT, XDROP, XdropKey
from warpdp.grpc._packing import concat_pairhmm as _packing_concat
from warpdp.grpc import _shared_files
from warpdp.grpc._shared_files import (MappedFiles, SharedFilePool, SharedFileRejected, is_local_address, is_local_peer,
                                      read_arrays)


@pytest.fixture
def small_shared_jobs(monkeypatch):
    """Every job of 1 KB or more goes through shared files, in chunks of at most 20 KB."""
    monkeypatch.setattr(client_module, "_SHARED_MIN_BYTES", 1024)
    monkeypatch.setattr(client_module, "_SHARED_CHUNK_BYTES", 20 * 1024)


@pytest.fixture
def shared_server(tmp_path):
    srv = start_server(shared_dir=tmp_path)
    yield srv
    srv.stop()


@pytest.fixture
def files_read(monkeypatch):
    """Names of the shared files the servers read, in order."""
    names: list[str] = []
    real = server_module._shared_files.read_arrays

    def spy(directory, name, *args, **kwargs):
        names.append(name)
        return real(directory, name, *args, **kwargs)

    monkeypatch.setattr(server_module._shared_files, "read_arrays", spy)
    return names


@pytest.fixture
def results_written(monkeypatch):
    """(file name, whether written) for every request whose results the servers were asked to
    write into its shared file, in order."""
    calls: list[tuple[str, bool]] = []
    real = server_module._shared_files.write_results

    def spy(directory, name, offset, arrays):
        written = real(directory, name, offset, arrays)
        calls.append((name, written))
        return written

    monkeypatch.setattr(server_module._shared_files, "write_results", spy)
    return calls


def shared_request(directory, algorithm, payload, key, name="warpdp-test-1", sizes=None, extra=b""):
    """A request whose arrays are written into directory/name by hand."""
    arrays = list(algorithm.wire_arrays(payload).values())
    with open(os.path.join(directory, name), "wb") as f:
        for array in arrays:
            f.write(array.tobytes())
        f.write(extra)
    sizes = [a.nbytes for a in arrays] if sizes is None else sizes
    return algorithm.request(payload, key, warpdp_pb2.SharedFile(name=name, sizes=sizes))


def test_all_three_algorithms_through_shared_files(small_shared_jobs, shared_server, files_read, results_written,
                                                  tmp_path):
    batches = make_batches(11, 60)
    pairs = make_xdrop_pairs(12, 120)
    seeds = make_seed_pairs(13, 120)
    with Client(shared_server.address, timeout=WAIT) as client:
        np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
        np.testing.assert_array_equal(client.pairhmm(batches, double=True), local(batches, True))
        assert_xdrop_equal(client.xdrop(pairs, k=K, x=20), local_xdrop(pairs, k=K, x=20))
        assert_seedext_equal(client.seed_extend(seeds, w=30), warpdp.seed_extend(seeds, w=30, backend="cpu"))
        assert client.server_info().shared_files.enabled
        # Several chunks each, and the files are reused: far fewer files than chunks.
        assert len(files_read) >= 8
        assert 1 <= len(set(files_read)) <= client_module._SHARED_IN_FLIGHT
        # Every chunk's results came back through its file, not in the reply message.
        assert [name for name, _ in results_written] == files_read
        assert all(written for _, written in results_written)
        assert sorted(os.listdir(tmp_path)) == sorted(set(files_read))
        for name in os.listdir(tmp_path):  # readable by the client's user only
            assert os.stat(tmp_path / name).st_mode & 0o077 == 0
    assert os.listdir(tmp_path) == []  # close() deletes them


def test_small_jobs_and_remote_servers_use_messages(shared_server, files_read):
    with Client(shared_server.address, timeout=WAIT) as client:
        batches = make_batches(14, 8)  # far below the 1 MiB threshold
        np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
    assert files_read == []
    assert not is_local_address("10.1.2.3:50051") and not is_local_address("gpu-node:50051")


def test_shared_files_off_and_unreadable_fall_back_to_messages(small_shared_jobs, tmp_path, files_read, monkeypatch):
    batches = make_batches(15, 40)
    off = start_server(shared_dir=None)
    try:
        with Client(off.address, timeout=WAIT) as client:
            assert not client.server_info().shared_files.enabled
            np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
        assert files_read == []
    finally:
        off.stop()

    # A server that cannot read the client's files (another user, another /dev/shm).
    def unreadable(directory, name, *args, **kwargs):
        raise SharedFileRejected(grpc.StatusCode.FAILED_PRECONDITION, f"shared file unusable: cannot open {name}")

    monkeypatch.setattr(server_module._shared_files, "read_arrays", unreadable)
    srv = start_server(shared_dir=tmp_path)
    try:
        with Client(srv.address, timeout=WAIT) as client:
            np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
            np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
            assert client._shared_files is False  # noqa: SLF001 (tried once, then messages only)
    finally:
        srv.stop()
    assert os.listdir(tmp_path) == []


def assert_files_free_and_client_works(client: Client, batches) -> None:
    """After a failed job: no file is held (answered chunks' files are back in the client's
    pool, unanswered ones deleted), the directory holds only the pool's, and it still scores."""
    pool = client._shared_pool  # noqa: SLF001
    assert pool is not None and len(pool._free) == len(pool._paths)  # noqa: SLF001 (none held)
    assert sorted(os.listdir(pool.directory)) == sorted(f.name for f in pool._free)  # noqa: SLF001
    np.testing.assert_array_equal(client.pairhmm(batches), local(batches))


def test_a_chunk_failing_mid_job_fails_the_job_and_frees_the_files(small_shared_jobs, tmp_path, monkeypatch):
    # Chunk 3 of a job through shared files fails in the server: the call raises that error,
    # the chunks started after it are cancelled, and no file is left held. Those of chunks
    # never answered are deleted, not reused: the server may still be scoring them, and would
    # write their results into a file the next job had written its arrays into.
    real = server_module._shared_files.read_arrays
    reads: list[str] = []

    def third_fails(directory, name, *args, **kwargs):
        reads.append(name)
        if len(reads) == 3:
            raise SharedFileRejected(grpc.StatusCode.RESOURCE_EXHAUSTED, "test: the third chunk is refused")
        return real(directory, name, *args, **kwargs)

    monkeypatch.setattr(server_module._shared_files, "read_arrays", third_fails)
    batches = make_batches(16, 60)
    srv = start_server(shared_dir=tmp_path)
    try:
        with Client(srv.address, timeout=WAIT) as client:
            with pytest.raises(ServiceError) as error:
                client.pairhmm(batches)
            assert error.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "third chunk" in error.value.details
            assert_files_free_and_client_works(client, batches)
    finally:
        srv.stop()
    assert os.listdir(tmp_path) == []


def test_a_piece_that_cannot_be_cut_late_in_a_job_raises_and_frees_the_files(small_shared_jobs, tmp_path):
    # Chunks are cut while they are written: a pair over the server's limits near the end of
    # the job is found after the first chunks went out. The call raises ValueError, as when
    # it is found before, and every file goes back to the client's pool.
    regular = make_batches(17, 40, reads=(10, 30), haps=(2, 5))
    too_large = make_batches(18, 1, reads=(1, 1), haps=(1, 1), read_len=(400, 400), hap_len=(400, 400))
    job = _packing_concat([regular, too_large])
    srv = start_server(shared_dir=tmp_path, max_request_cells=100_000)
    try:
        with Client(srv.address, timeout=WAIT) as client:
            with pytest.raises(ValueError, match="exceeds the server's limits"):
                client.pairhmm(job)
            assert srv.batcher.completed > 0  # the chunks before it were sent and scored
            assert_files_free_and_client_works(client, regular)
            # Found in the very first piece, after the stream was set up: the call ends too.
            first_too_large = _packing_concat([too_large, regular])
            for _ in range(3):
                with pytest.raises(ValueError, match="exceeds the server's limits"):
                    client.pairhmm(first_too_large)
            assert_files_free_and_client_works(client, regular)
            assert metric_reaches(srv, "warpdp_in_flight_requests", {}, 0)  # no call left open
    finally:
        srv.stop()
    assert os.listdir(tmp_path) == []


def test_results_come_in_the_message_when_the_server_cannot_write_the_file(small_shared_jobs, shared_server,
                                                                         results_written, monkeypatch):
    batches = make_batches(21, 40)
    seeds = make_seed_pairs(22, 80)
    monkeypatch.setattr(server_module._shared_files, "write_results", lambda *args: False)  # e.g. another user's
    with Client(shared_server.address, timeout=WAIT) as client:
        np.testing.assert_array_equal(client.pairhmm(batches), local(batches))
        assert_seedext_equal(client.seed_extend(seeds, w=30), warpdp.seed_extend(seeds, w=30, backend="cpu"))


def test_a_request_asking_for_its_results_in_its_file_gets_them_there(shared_server, tmp_path):
    batches = make_batches(23, 5)
    pairs = make_xdrop_pairs(24, 20)
    key = XdropKey.make(k=K, x=20)
    channel, stub = stub_for(shared_server)
    with channel:
        for name, algorithm, payload, call, arg in (("warpdp-u", PAIRHMM, batches, stub.PairHmm, False),
                                                    ("warpdp-x", XDROP, pairs, stub.Xdrop, key)):
            n = algorithm.n_pairs(payload)
            request = shared_request(tmp_path, algorithm, payload, arg, name=name,
                                     extra=b"\0" * (algorithm.reply_bytes_per_pair * n + 8))
            offset = (sum(request.shared_file.sizes) + 7) // 8 * 8
            request.shared_file.reply_offset = offset
            reply = call(request, timeout=WAIT)
            assert reply.n_pairs == n and not algorithm.results_in_message(reply)
            data = np.frombuffer((tmp_path / name).read_bytes(), dtype=np.uint8)
            out = algorithm.new_output(n)
            algorithm.store_file_results(reply, data[offset:], out, 0, n)
            if algorithm is PAIRHMM:
                np.testing.assert_array_equal(out, local(batches))
            else:
                assert_xdrop_equal(algorithm.results(out), local_xdrop(pairs, k=K, x=20))


def test_write_results_only_into_a_regular_file_of_the_servers_user_with_room(tmp_path):
    path = tmp_path / "warpdp-r"
    path.write_bytes(b"\xee" * 64)
    arrays = [np.array([1.5, -2.25], dtype="<f8"), np.array([7], dtype="<i8")]
    assert _shared_files.write_results(str(tmp_path), "warpdp-r", 16, arrays)
    data = path.read_bytes()
    assert data[:16] == b"\xee" * 16 and data[40:] == b"\xee" * 24  # only the results' bytes changed
    assert data[16:40] == arrays[0].tobytes() + arrays[1].tobytes()
    # Too short for them, not a regular file, not there: nothing written.
    assert not _shared_files.write_results(str(tmp_path), "warpdp-r", 48, arrays)
    assert path.read_bytes() == data
    (tmp_path / "warpdp-dir").mkdir()
    assert not _shared_files.write_results(str(tmp_path), "warpdp-dir", 0, arrays)
    os.symlink(path, tmp_path / "warpdp-link")
    assert not _shared_files.write_results(str(tmp_path), "warpdp-link", 16, arrays)
    assert not _shared_files.write_results(str(tmp_path), "warpdp-missing", 16, arrays)
    if os.geteuid() == 0:  # a server run as root writes no other user's file
        os.chown(path, 12345, -1)
        assert not _shared_files.write_results(str(tmp_path), "warpdp-r", 16, [np.zeros(3, dtype="<i8")])
        assert path.read_bytes() == data


BAD_SHARED = [
    ("name with a path", dict(name="../warpdp-x"), grpc.StatusCode.INVALID_ARGUMENT, "invalid shared_file.name"),
    ("name without the prefix", dict(name="other-file"), grpc.StatusCode.INVALID_ARGUMENT, "invalid shared_file.name"),
    ("too few sizes", dict(sizes=[1, 2]), grpc.StatusCode.INVALID_ARGUMENT, "invalid shared_file.sizes: 2 sizes"),
    ("sizes past the end", dict(sizes="grow"), grpc.StatusCode.INVALID_ARGUMENT, "add up to"),
    ("missing file", dict(name="warpdp-missing"), grpc.StatusCode.FAILED_PRECONDITION, "cannot open"),
    ("over the message limit", dict(sizes="huge"), grpc.StatusCode.RESOURCE_EXHAUSTED, "message limit"),
    ("reply offset inside the arrays", dict(reply_offset=8), grpc.StatusCode.INVALID_ARGUMENT,
     "invalid shared_file.reply_offset 8"),
    ("reply offset not a multiple of 8", dict(reply_offset="odd"), grpc.StatusCode.INVALID_ARGUMENT,
     "invalid shared_file.reply_offset"),
]


@pytest.mark.parametrize("case, change, code, message", BAD_SHARED, ids=[c[0] for c in BAD_SHARED])
def test_bad_shared_file_requests(shared_server, tmp_path, case, change, code, message):
    batches = make_batches(16, 3)
    request = shared_request(tmp_path, PAIRHMM, batches, False)
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
    request.shared_file.CopyFrom(warpdp_pb2.SharedFile(name=change.get("name", request.shared_file.name), sizes=sizes,
                                                       reply_offset=reply_offset))
    channel, stub = stub_for(shared_server)
    with channel, pytest.raises(grpc.RpcError) as error:
        stub.PairHmm(request, timeout=WAIT)
    assert error.value.code() == code and message in error.value.details()


def test_shared_file_contents_are_validated_like_messages(shared_server, tmp_path):
    channel, stub = stub_for(shared_server)
    with channel:
        # Offsets that run past the bases: the field is named, as for a message.
        batches = make_batches(17, 3)
        request = shared_request(tmp_path, PAIRHMM, batches, False)
        arrays = PAIRHMM.wire_arrays(batches)
        offsets = arrays["read_offsets"].copy()
        offsets[-1] += 5
        arrays["read_offsets"] = offsets
        with open(tmp_path / request.shared_file.name, "wb") as f:
            for array in arrays.values():
                f.write(array.tobytes())
        with pytest.raises(grpc.RpcError) as error:
            stub.PairHmm(request, timeout=WAIT)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "read_offsets" in error.value.details()

        # Both the arrays in the message and a shared file.
        both = PAIRHMM.request(batches, False)
        both.shared_file.CopyFrom(request.shared_file)
        with pytest.raises(grpc.RpcError) as error:
            stub.PairHmm(both, timeout=WAIT)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "not both" in error.value.details()

        # A symbolic link is not followed.
        os.symlink(tmp_path / request.shared_file.name, tmp_path / "warpdp-link")
        linked = PAIRHMM.request(batches, False, warpdp_pb2.SharedFile(name="warpdp-link",
                                                                        sizes=request.shared_file.sizes))
        with pytest.raises(grpc.RpcError) as error:
            stub.PairHmm(linked, timeout=WAIT)
        assert error.value.code() == grpc.StatusCode.FAILED_PRECONDITION

        # A well-formed file with trailing room is fine (clients reuse larger files).
        seeds = make_seed_pairs(18, 30)
        ok = shared_request(tmp_path, SEEDEXT, seeds, warpdp.SeedExtParams(), name="warpdp-ok", extra=b"\0" * 999)
        reply = stub.SeedExtend(ok, timeout=WAIT)
        expected = warpdp.seed_extend(seeds, backend="cpu")
        np.testing.assert_array_equal(np.frombuffer(reply.score, "<i8"), expected.score)

        pairs = make_xdrop_pairs(19, 30)
        key = XdropKey.make(k=K, x=20)
        reply = stub.Xdrop(shared_request(tmp_path, XDROP, pairs, key, name="warpdp-x"), timeout=WAIT)
        np.testing.assert_array_equal(np.frombuffer(reply.score, "<i8"), local_xdrop(pairs, k=K, x=20).score)


def test_shared_files_only_from_local_peers(shared_server, tmp_path, monkeypatch):
    monkeypatch.setattr(server_module._shared_files, "is_local_peer", lambda peer: False)
    request = shared_request(tmp_path, PAIRHMM, make_batches(20, 3), False)
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


@pytest.mark.parametrize("total_mib", [0.5, 5.3])  # read by one thread, and in parts by several
def test_read_arrays_reads_every_byte_where_it_belongs(tmp_path, total_mib):
    rng = np.random.default_rng(3)
    sizes = [int(total_mib * 2**20 * share) for share in (0.31, 0.05, 0.2, 0.44)] + [13, 0, 8]
    arrays = [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]
    name = "warpdp-read-test"
    (tmp_path / name).write_bytes(b"".join(a.tobytes() for a in arrays) + b"trailing bytes are ignored")
    fields = [f"f{k}" for k in range(len(sizes))]
    got = read_arrays(str(tmp_path), name, sizes, fields, 1 << 30)
    for field, array in zip(fields, arrays):
        np.testing.assert_array_equal(got[field], array)
        assert got[field].ctypes.data % 8 == 0  # each array 8-byte aligned: int64 views need no copy
    # A file shorter than its sizes say is refused.
    (tmp_path / name).write_bytes(b"".join(a.tobytes() for a in arrays)[:-5])
    with pytest.raises(SharedFileRejected) as error:
        read_arrays(str(tmp_path), name, sizes, fields, 1 << 30)
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT


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


def write_arrays(path, arrays, extra: int = 0) -> None:
    path.write_bytes(b"".join(a.tobytes() for a in arrays) + bytes(extra))


def test_mapped_files_map_each_file_once_and_drop_it_when_it_goes(tmp_path, monkeypatch):
    monkeypatch.setattr(_shared_files, "_SWEEP_S", 0.05)
    rng = np.random.default_rng(4)
    fields = ["bases", "offsets", "quals", "nothing", "ends"]
    sizes = [3001, 24, 5000, 0, 16]
    arrays = [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]
    write_arrays(tmp_path / "warpdp-a", arrays, extra=100)
    register = FakeRegistrations()
    mapped = MappedFiles(register)

    def check(got: dict, expected: list) -> tuple[int, int]:
        (address, nbytes), = register.live.items()
        for field, array in zip(fields, expected):
            np.testing.assert_array_equal(got[field], array)
        for field in ("bases", "quals"):  # in the page-locked mapping, which the GPU copies from
            assert address <= got[field].ctypes.data < address + nbytes
        for field in ("offsets", "ends"):  # the server's own copies, 8-byte aligned for int64 views
            assert not address <= got[field].ctypes.data < address + nbytes
            assert got[field].ctypes.data % 8 == 0
        return address, nbytes

    got = mapped.arrays(str(tmp_path), "warpdp-a", sizes, fields, 1 << 30, ("offsets", "ends"))
    first = check(got, arrays)
    assert first[1] == sum(sizes) + 100  # the whole file, for later and larger requests
    # The next request on the file (rewritten in place, as a client reuses its files) needs no
    # new registration, and sees the new contents.
    arrays = [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]
    with open(tmp_path / "warpdp-a", "r+b") as file:
        file.write(b"".join(a.tobytes() for a in arrays))
    again = mapped.arrays(str(tmp_path), "warpdp-a", sizes, fields, 1 << 30, ("offsets", "ends"))
    assert check(again, arrays) == first and register.count == 1
    del got, again
    # A file that grew is mapped anew; the old mapping goes once no request uses it.
    held = mapped.arrays(str(tmp_path), "warpdp-a", sizes, fields, 1 << 30, ("offsets", "ends"))["quals"]
    os.truncate(tmp_path / "warpdp-a", sum(sizes) + 5000)
    mapped.arrays(str(tmp_path), "warpdp-a", sizes, fields, 1 << 30, ("offsets", "ends"))
    assert register.count == 2
    register.wait_live(2)  # the old one is still in use
    np.testing.assert_array_equal(held, arrays[2])
    del held
    register.wait_live(1)
    # A deleted file's mapping is dropped by the sweep.
    os.unlink(tmp_path / "warpdp-a")
    register.wait_live(0)
    # A file shorter than its sizes is refused, as read_arrays refuses it.
    write_arrays(tmp_path / "warpdp-b", arrays)
    with pytest.raises(SharedFileRejected) as error:
        mapped.arrays(str(tmp_path), "warpdp-b", [*sizes[:-1], sizes[-1] + 1], fields, 1 << 30, ("offsets", "ends"))
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    mapped.close()


def test_mapped_files_stay_under_their_byte_limit_and_close(tmp_path, monkeypatch):
    monkeypatch.setattr(_shared_files, "_SWEEP_S", 0.05)
    register = FakeRegistrations()
    mapped = MappedFiles(register, max_bytes=2500, idle_s=0.3)
    fields, sizes = ["bases", "offsets"], [1000, 8]
    for name in ("warpdp-1", "warpdp-2", "warpdp-3"):
        write_arrays(tmp_path / name, [np.full(1000, ord(name[-1]), np.uint8), np.zeros(8, np.uint8)])
    kept = mapped.arrays(str(tmp_path), "warpdp-1", sizes, fields, 1 << 30, ("offsets",))["bases"]
    for name in ("warpdp-2", "warpdp-3"):
        mapped.arrays(str(tmp_path), name, sizes, fields, 1 << 30, ("offsets",))
    # Three files of 1008 bytes are over 2500: the least recently used one goes, once its
    # request is done.
    assert mapped.mapped_bytes() == 2016
    register.wait_live(3)
    assert kept[0] == ord("1")
    del kept
    register.wait_live(2)
    # Unused mappings go after idle_s; one used every few milliseconds meanwhile stays mapped
    # (no timing margin to miss on a loaded machine: it is never idle for long).
    deadline = time.monotonic() + WAIT
    while len(register.live) > 1 and time.monotonic() < deadline:
        mapped.arrays(str(tmp_path), "warpdp-3", sizes, fields, 1 << 30, ("offsets",))
        time.sleep(0.01)
    register.wait_live(1)
    assert register.count == 3
    mapped.close()
    register.wait_live(0)
    # CUDA refusing to page-lock is the caller's to handle (the server then reads files).
    def refuse(address: int, nbytes: int):
        raise RuntimeError("cudaErrorHostMemoryAlreadyRegistered")

    with pytest.raises(RuntimeError, match="AlreadyRegistered"):
        MappedFiles(refuse).arrays(str(tmp_path), "warpdp-1", sizes, fields, 1 << 30, ("offsets",))


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


def test_pool_reuses_grows_and_deletes(tmp_path):
    mib = 1 << 20
    pool = SharedFilePool(str(tmp_path), keep_bytes=3 * mib)
    small = [np.arange(10, dtype=np.uint8), np.arange(3, dtype="<i8")]
    first, sizes, reply_offset = pool.acquire(small)
    assert sizes == [10, 24] and reply_offset == 0  # no room for results asked for
    # The arrays back to back at the start of a file of whole MiBs (its capacity).
    assert (tmp_path / first.name).read_bytes()[:34] == small[0].tobytes() + small[1].tobytes()
    assert first.capacity == mib == os.path.getsize(tmp_path / first.name)
    pool.release(first)
    grown = np.arange(mib + 5, dtype=np.uint8)
    second, _, _ = pool.acquire([grown])  # the free file grows
    assert second.name == first.name and second.capacity == 2 * mib
    assert np.array_equal(np.fromfile(tmp_path / second.name, dtype=np.uint8)[:len(grown)], grown)
    other, _, _ = pool.acquire(small)  # the first is handed out: a new one
    assert other.name != first.name
    pool.release(second)
    pool.release(other)  # 2 + 1 MiB kept, within 3
    big, _, _ = pool.acquire([np.zeros(4 * mib, dtype=np.uint8)])
    assert big.name in os.listdir(tmp_path)
    pool.release(big)  # over keep_bytes: deleted at once
    assert big.name not in os.listdir(tmp_path)
    # Room for results: from the first multiple of 8 after the arrays, within the capacity.
    with_reply, sizes, reply_offset = pool.acquire(small, reply_bytes=mib)
    assert sizes == [10, 24] and reply_offset == 40
    assert with_reply.capacity >= reply_offset + mib
    assert with_reply.capacity == os.path.getsize(tmp_path / with_reply.name)
    pool.release(with_reply)
    pool.close()
    assert os.listdir(tmp_path) == []


def test_files_left_by_ended_processes_are_removed(tmp_path):
    import subprocess
    import sys
    import time

    from warpdp.grpc import _shared_files

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    dead, old = ended.pid, time.time() - 2 * _shared_files.STALE_AFTER_S

    def make(name: str, age: float | None = old) -> str:
        path = tmp_path / name
        path.write_bytes(b"x" * 64)
        if age is not None:
            os.utime(path, (age, age))
        return name

    stale = make(f"warpdp-{dead}-{'a' * 16}")
    kept = [
        make(f"warpdp-{dead}-{'b' * 16}", age=None),         # changed recently: maybe a live client elsewhere
        make(f"warpdp-{os.getpid()}-{'c' * 16}"),            # this process's own
        make(f"warpdp-{os.getppid()}-{'d' * 16}"),           # a live process's
        make(f"warpdp-{dead}-notours"),                      # not a client's name
        make("unrelated-file"),
    ]
    os.symlink(tmp_path / "unrelated-file", tmp_path / f"warpdp-{dead}-{'e' * 16}")
    kept.append(f"warpdp-{dead}-{'e' * 16}")                 # a link, not a file
    assert _shared_files.remove_stale_files(str(tmp_path)) == 1
    assert sorted(os.listdir(tmp_path)) == sorted(kept)
    assert stale not in os.listdir(tmp_path)
    # A pool sweeps its directory once per process.
    make(f"warpdp-{dead}-{'f' * 16}")
    SharedFilePool(str(tmp_path)).close()
    assert f"warpdp-{dead}-{'f' * 16}" not in os.listdir(tmp_path)
    make(f"warpdp-{dead}-{'0' * 16}")
    SharedFilePool(str(tmp_path)).close()
    assert f"warpdp-{dead}-{'0' * 16}" in os.listdir(tmp_path)
