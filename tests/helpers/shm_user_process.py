"""A process of the shared-memory tests (tests/test_grpc_shared_files.py), run as
``python3 tests/helpers/shm_user_process.py ROLE UID GID ADDRESS [ARG]``: it imports everything it needs,
then becomes user UID (a user who may not read the interpreter's installation under /root),
then plays its role against the server at ADDRESS and prints one JSON line of findings.

Roles:
- ``client``: scores a job through shared memory over and over, checking every result
  against in-process scoring, until a line arrives on standard input.
- ``attacker`` (ARG: the victim's pid): tries every way in to another user's shared memory.
- ``killed``: one call through shared memory, prints ``ready``, then waits to be killed.
"""
from __future__ import annotations

import fcntl
import json
import os
import secrets
import socket
import sys
import threading

import grpc
import grpc._channel  # noqa: F401 (imported lazily by grpc; no reading /root once the user changed)
import grpc._common  # noqa: F401
import grpc._utilities  # noqa: F401
import numpy as np

# tests/, so that the helpers package imports as the test modules import it.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from helpers.pairhmm import local, make_batches  # noqa: E402
from helpers.shm import job_bytes, sealed_memfd  # noqa: E402
from warpdp.grpc import Client, client as client_module, warpdp_pb2, warpdp_pb2_grpc  # noqa: E402
from warpdp.grpc import _shm_client  # noqa: E402
from warpdp.grpc._algorithms import PAIRHMM  # noqa: E402

WAIT = 30


def become(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    assert os.getuid() == uid and os.geteuid() == uid


def run_client(address: str) -> dict:
    client_module._SHARED_MIN_BYTES = 1024
    client_module._SHARED_CHUNK_BYTES = 16 * 1024
    jobs = [make_batches(700 + k, 30 + 10 * k) for k in range(3)]
    expected = [local(job) for job in jobs]
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    calls = wrong = 0
    with Client(address, timeout=WAIT) as client:
        while not stop.is_set() or calls < 3:
            k = calls % len(jobs)
            if not np.array_equal(client.pairhmm(jobs[k]), expected[k]):
                wrong += 1
            calls += 1
            if calls == 3:
                print("ready", flush=True)
        shared = client._shared_pool is not None and client._shared_files  # noqa: SLF001
    return {"calls": calls, "wrong": wrong, "shared_memory": bool(shared)}


def run_attacker(address: str, victim_pid: int) -> dict:
    """Every attempt's outcome; the test checks that none reached the victim's memory."""
    found: dict = {"grpc": {}, "socket": {}, "proc": None}
    info_channel = grpc.insecure_channel(address)
    stub = warpdp_pb2_grpc.WarpdpStub(info_channel)
    info = stub.ServerInfo(warpdp_pb2.ServerInfoRequest(), timeout=WAIT)
    batches = make_batches(9, 3)
    arrays = list(PAIRHMM.wire_arrays(batches).values())
    sizes = [a.nbytes for a in arrays]

    def call(what: str, shared_file: warpdp_pb2.SharedFile) -> None:
        try:
            reply = stub.PairHmm(PAIRHMM.request(batches, False, shared_file), timeout=WAIT)
            found["grpc"][what] = ["OK", reply.log10_likelihoods.hex()[:64]]
        except grpc.RpcError as exc:
            found["grpc"][what] = [exc.code().name, exc.details()]

    # Old-style names of the victim's files, which the retired field 1 carried.
    for k, name in enumerate((f"warpdp-{victim_pid}-{'0' * 16}", f"../warpdp-{victim_pid}", "passwd")):
        old = warpdp_pb2.SharedFile(sizes=sizes)
        encoded = name.encode()
        old.MergeFromString(bytes([0x0A, len(encoded)]) + encoded)  # field 1 (name), a string
        call(f"old name {k}", old)
    # Guessed handles.
    for k in range(50):
        call(f"guessed handle {k}", warpdp_pb2.SharedFile(handle=secrets.token_hex(16), sizes=sizes))
    call("handle of a wrong form", warpdp_pb2.SharedFile(handle="../../dev/shm/x", sizes=sizes))

    connection = _shm_client.Connection(info.shared_files.socket)

    def register(what: str, fd: int) -> str | None:
        try:
            handle = connection.register(fd)
            found["socket"][what] = ["ok", handle]
            return handle
        except OSError as exc:
            found["socket"][what] = ["refused", str(exc)]
            return None
        finally:
            os.close(fd)

    # Descriptors that are not sealed memfds.
    read_end, write_end = os.pipe()
    os.close(write_end)
    register("a pipe", read_end)
    own_file = f"/tmp/warpdp-attacker-{os.getpid()}"
    with open(own_file, "wb") as file:
        file.write(job_bytes(arrays))
    register("a regular file", os.open(own_file, os.O_RDWR))
    os.unlink(own_file)
    register("/dev/zero", os.open("/dev/zero", os.O_RDONLY))
    register("a memfd without seals", sealed_memfd(job_bytes(arrays), seals=0))
    register("a memfd without F_SEAL_SHRINK", sealed_memfd(job_bytes(arrays), seals=fcntl.F_SEAL_GROW))
    register("a memfd without F_SEAL_GROW", sealed_memfd(job_bytes(arrays), seals=fcntl.F_SEAL_SHRINK))
    # A sealed memfd of its own: shrinking it after registering fails, and using it works.
    fd = sealed_memfd(job_bytes(arrays), room=4096)
    try:
        os.ftruncate(fd, 8)
        found["shrink"] = "shrunk"
    except OSError as exc:
        found["shrink"] = exc.strerror
    own = register("its own sealed memfd", fd)
    if own is not None:
        call("its own memfd", warpdp_pb2.SharedFile(handle=own, sizes=sizes))
        expected = local(batches)
        found["own result right"] = found["grpc"]["its own memfd"][1] == expected.tobytes().hex()[:64]
    # Garbage over the socket, then unregistering handles it does not own.
    raw = connection._sock  # noqa: SLF001
    answers = []
    for garbage in (b"\x00\xff" * 20, b"register", b"register " + b"x" * 2000, b"unregister",
                    b"unregister " + secrets.token_hex(16).encode(), b"ok " + secrets.token_hex(16).encode()):
        socket.send_fds(raw, [garbage], [])
        answers.append(raw.recv(4096).decode("utf-8", "replace"))
    r1, w1 = os.pipe()
    socket.send_fds(raw, [b"register"], [r1, w1])  # two descriptors at once
    answers.append(raw.recv(4096).decode("utf-8", "replace"))
    os.close(r1)
    os.close(w1)
    found["garbage answers"] = answers
    # The victim's descriptors through /proc.
    try:
        found["proc"] = os.listdir(f"/proc/{victim_pid}/fd")
    except OSError as exc:
        found["proc"] = exc.strerror
    connection.close()
    info_channel.close()
    return found


def run_killed(address: str) -> None:
    client_module._SHARED_MIN_BYTES = 1024
    client_module._SHARED_CHUNK_BYTES = 16 * 1024
    job = make_batches(5, 40)
    client = Client(address, timeout=WAIT)
    assert np.array_equal(client.pairhmm(job), local(job))
    assert client._shared_pool is not None  # noqa: SLF001
    print("ready", flush=True)
    threading.Event().wait()


def main() -> None:
    role, uid, gid, address = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    local(make_batches(1, 1))  # load the CPU backend before /root becomes unreadable
    become(uid, gid)
    if role == "client":
        print(json.dumps(run_client(address)), flush=True)
    elif role == "attacker":
        print(json.dumps(run_attacker(address, int(sys.argv[5]))), flush=True)
    elif role == "killed":
        run_killed(address)
    else:
        raise SystemExit(f"unknown role {role}")


if __name__ == "__main__":
    main()
