"""The server under memory pressure and cancellation (issue #23 parts 3 and 4).

memory: starts `warpdp serve --backend cpu` with a memory budget, fires many concurrent Pair-HMM
requests of large messages at it, and reports the server's peak RSS (VmHWM, reset after start
up) against its idle RSS plus the budget, with the calls' status codes and the RSS once idle.

cancel: starts a CPU server, then repeatedly sends a large job and gives up on it (its deadline
passes, or the client cancels it) and at once sends a small request: how long the small request
takes, against the same small request on an idle server, is how long the given-up job kept the
worker.

    python benchmarks/memory_budget.py memory --budget 1G --requests 32 --message-mb 60
    python benchmarks/memory_budget.py cancel --repeats 10
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_common import commit, cpu_name  # noqa: E402
from warpdp.grpc import warpdp_pb2, warpdp_pb2_grpc  # noqa: E402
from warpdp.grpc._admission import parse_bytes  # noqa: E402
from warpdp.grpc._algorithms import PAIRHMM  # noqa: E402
from warpdp.plugin.pairhmm import PairHmmBatches  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def batches(n_batches: int, reads: int, haps: int, read_len: int, hap_len: int, seed: int = 1) -> PairHmmBatches:
    """Uniform random batches (every read and haplotype of the given lengths)."""
    rng = np.random.default_rng(seed)
    n_reads, n_haps = n_batches * reads, n_batches * haps
    acgt = np.frombuffer(b"ACGT", dtype=np.uint8)
    read_bases = rng.choice(acgt, n_reads * read_len)
    return PairHmmBatches.from_arrays(
        read_bases=read_bases, read_quals=rng.integers(10, 41, len(read_bases)).astype(np.uint8),
        read_ins=np.full(len(read_bases), 45, np.uint8), read_del=np.full(len(read_bases), 45, np.uint8),
        read_gcp=np.full(len(read_bases), 10, np.uint8),
        read_offsets=np.arange(n_reads + 1, dtype=np.int64) * read_len,
        hap_bases=rng.choice(acgt, n_haps * hap_len), hap_offsets=np.arange(n_haps + 1, dtype=np.int64) * hap_len,
        batch_reads=np.arange(n_batches + 1, dtype=np.int64) * reads,
        batch_haps=np.arange(n_batches + 1, dtype=np.int64) * haps)


def start_server(*options: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen([sys.executable, "-m", "warpdp.grpc.cli", "--port", "0", "--backend", "cpu",
                                "--log-every", "0", *options], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(r"listening on (\S+:\d+)", line)
        if found:
            # Keep draining the log, so that the server never blocks on a full pipe.
            threading.Thread(target=lambda: collections.deque(process.stderr, maxlen=0), daemon=True).start()
            return process, found.group(1)
    raise RuntimeError(f"the server did not start (exit status {process.wait()})")


def status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def raw_pairhmm(channel: grpc.Channel) -> grpc.UnaryUnaryMultiCallable:
    """PairHmm taking an already serialized request (one serialization for all calls)."""
    return channel.unary_unary("/warpdp.v1.Warpdp/PairHmm", request_serializer=lambda data: data,
                               response_deserializer=warpdp_pb2.PairHmmReply.FromString)


def memory(args: argparse.Namespace) -> None:
    budget = parse_bytes(args.budget)
    # Batches of one short read and haplotype: many bytes, few cells (each request stays far
    # under the cell limit).
    per_batch = PAIRHMM.request_bytes(batches(1, 1, 1, args.read_len, args.hap_len))
    job = batches(int(args.message_mb * 2**20) // per_batch, 1, 1, args.read_len, args.hap_len)
    request = PAIRHMM.request(job, False).SerializeToString()
    process, address = start_server("--memory-budget", args.budget, "--max-message-mb", str(args.max_message_mb),
                                     "--admission-wait-s", str(args.admission_wait_s), *args.server_option)
    try:
        channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", -1),
                                                          ("grpc.max_receive_message_length", -1)])
        call = raw_pairhmm(channel)
        small = PAIRHMM.request(batches(2, 2, 2, 50, 60), False).SerializeToString()
        call(small, timeout=60)  # connected and warm
        time.sleep(1.0)
        idle_kib = status_kib(process.pid, "VmRSS")
        with open(f"/proc/{process.pid}/clear_refs", "w") as clear:
            clear.write("5")  # resets VmHWM to the current RSS: the peak from here on
        codes: collections.Counter[str] = collections.Counter()
        start = time.monotonic()

        def one(_: int) -> str:
            try:
                reply = call(request, timeout=args.timeout)
                assert reply.n_pairs == job.n_pairs
                return "OK"
            except grpc.RpcError as exc:
                return exc.code().name + (": busy" if "busy" in (exc.details() or "") else "")

        with ThreadPoolExecutor(args.requests) as pool:
            for code in pool.map(one, range(args.requests)):
                codes[code] += 1
        elapsed = time.monotonic() - start
        peak_kib = status_kib(process.pid, "VmHWM")
        time.sleep(2.0)
        after_kib = status_kib(process.pid, "VmRSS")
        channel.close()
    finally:
        process.terminate()
        process.wait()
    mib = 1024
    bound_kib = idle_kib + 1.1 * budget / 1024
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPU(s); commit {commit()}")
    print(f"{args.requests} concurrent PairHmm calls of {len(request) / 2**20:.1f} MiB messages "
          f"({job.n_cells / 1e9:.2f} Gcells, {job.n_pairs} pairs each); budget {budget / 2**20:.0f} MiB, "
          f"admission wait {args.admission_wait_s:g} s, message limit {args.max_message_mb:g} MiB")
    print(f"statuses: {dict(codes)} in {elapsed:.1f} s")
    print(f"server RSS: idle {idle_kib / mib:.0f} MiB, peak {peak_kib / mib:.0f} MiB "
          f"(peak - idle = {(peak_kib - idle_kib) / mib:.0f} MiB = "
          f"{(peak_kib - idle_kib) * 1024 / budget:.2f} x budget); "
          f"2 s after the burst {after_kib / mib:.0f} MiB")
    print(f"peak within idle + budget + 10% ({bound_kib / mib:.0f} MiB): {'yes' if peak_kib <= bound_kib else 'NO'}")


def cancel(args: argparse.Namespace) -> None:
    process, address = start_server(*args.server_option)
    try:
        channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", -1)])
        stub = warpdp_pb2_grpc.WarpdpStub(channel)
        large = PAIRHMM.request(batches(args.large_batches, 100, 50, 150, 400), False)
        small = PAIRHMM.request(batches(2, 2, 2, 50, 60, seed=2), False)
        cells = PAIRHMM.cells(PAIRHMM.decode(large).payload, False)

        def small_ms() -> float:
            start = time.perf_counter()
            stub.PairHmm(small, timeout=60)
            return 1e3 * (time.perf_counter() - start)

        for _ in range(3):
            small_ms()
        idle = [small_ms() for _ in range(args.repeats)]
        start = time.perf_counter()
        stub.PairHmm(large, timeout=600)
        whole_s = time.perf_counter() - start
        after_deadline, after_cancel = [], []
        for _ in range(args.repeats):
            try:
                stub.PairHmm(large, timeout=args.deadline_s)
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED, exc
            after_deadline.append(small_ms())
            future = stub.PairHmm.future(large, timeout=600)
            time.sleep(args.deadline_s)
            future.cancel()
            after_cancel.append(small_ms())
        channel.close()
    finally:
        process.terminate()
        process.wait()
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPU(s); commit {commit()}")
    print(f"large job {cells / 1e9:.1f} Gcells ({whole_s:.2f} s run whole); given up after {args.deadline_s:g} s; "
          f"{args.repeats} repeats")

    def line(name: str, values: list[float]) -> str:
        return (f"{name}: median {statistics.median(values):.1f} ms, max {max(values):.1f} ms")

    print(line("small request on an idle server", idle))
    print(line("small request right after a large job's deadline passed", after_deadline))
    print(line("small request right after the client cancelled a large job", after_cancel))
    print(f"worker freed within (max minus idle median): deadline "
          f"{max(after_deadline) - statistics.median(idle):.1f} ms, cancel "
          f"{max(after_cancel) - statistics.median(idle):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    mem = sub.add_parser("memory", help="peak RSS under concurrent large messages")
    mem.add_argument("--budget", default="1G", help="--memory-budget of the server (default 1G)")
    mem.add_argument("--requests", type=int, default=32)
    mem.add_argument("--message-mb", type=float, default=60.0, help="MiB per request message (default 60)")
    mem.add_argument("--max-message-mb", type=float, default=64.0)
    mem.add_argument("--admission-wait-s", type=float, default=2.0)
    mem.add_argument("--timeout", type=float, default=600.0, help="deadline of each call")
    mem.add_argument("--read-len", type=int, default=50)
    mem.add_argument("--hap-len", type=int, default=50)
    can = sub.add_parser("cancel", help="how soon a given-up job frees the worker")
    can.add_argument("--repeats", type=int, default=10)
    can.add_argument("--deadline-s", type=float, default=0.5)
    can.add_argument("--large-batches", type=int, default=26, help="batches of 100 x 50 pairs of 150 x 400")
    for p in (mem, can):
        p.add_argument("--server-option", action="append", default=[], help="more `warpdp serve` options")
    args = parser.parse_args()
    {"memory": memory, "cancel": cancel}[args.command](args)


if __name__ == "__main__":
    main()
