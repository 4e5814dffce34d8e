"""The C API's in-process library (clients/cpp, libwarpdp) against the Python API on the same
packed arrays: the overhead warpdp.h adds over the kernels (issue 29: < 2% on 10^4+ pairs).

    python benchmarks/cpp_inprocess.py --harness BUILD/tests/warpdp_harness [--pairs 10000]
                                       [--threads N] [--repeats 5] [--server]

Build the harness without sanitizers first (`cmake -S clients/cpp -B build/cpp-release
-DCMAKE_BUILD_TYPE=Release && cmake --build build/cpp-release`). For each family a workload of
--pairs pairs is packed once; the Python side times `warpdp.<family>(..., backend="cpu")` (the
public entry point: validation, dispatch, the C driver), the C side times the warpdp_<family>
call inside warpdp_harness (the same driver behind warpdp.h's checks), both on the same arrays,
threads and CPU variant. Python and C calls alternate (so a busy machine's drift hits both alike);
each figure is the fastest of --repeats calls after a warm-up. With --threads 1 the calling
thread's CPU time is reported too (all the work then runs on it): on a shared machine it leaves
out the time other processes held the core. With
--server, the harness also times a client handle (warpdp_open_client) on a CPU warpdp server
started here on loopback (same host: arrays and results through shared memory), the server's
kernels on --threads threads as the in-process calls'; with --cpu-calls N, also the CPU time one
call costs in process and through the server (every thread of the client and the server), which
a busy shared machine disturbs less than wall time. Prints a markdown table for BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import warpdp  # noqa: E402
from warpdp.cython_cpu.xdrop import best_isa  # noqa: E402
from bench_common import commit, cpu_name  # noqa: E402

RNG = np.random.default_rng(1)


def dna(n: int) -> bytes:
    return bytes(RNG.choice(np.frombuffer(b"ACGT", np.uint8), n))


def noisy(seq: bytes, rate: float) -> bytes:
    """seq with substitutions, insertions and deletions at `rate` in all (vectorized)."""
    arr = np.frombuffer(seq, np.uint8)
    u = RNG.random(len(arr))
    keep = u >= rate / 3  # deletions
    out = arr.copy()
    sub = (u >= rate / 3) & (u < 2 * rate / 3)
    out[sub] = RNG.choice(np.frombuffer(b"ACGT", np.uint8), int(sub.sum()))
    ins = (u >= 2 * rate / 3) & (u < rate)
    pieces = np.where(ins, 2, 1) * keep
    result = np.repeat(out, pieces)
    return result.tobytes()


def xdrop_workload(n: int) -> tuple[dict, dict, Callable[[], Any]]:
    pairs = []
    for _ in range(n):
        v = dna(int(RNG.integers(1000, 3000)))
        mid = len(v) // 2
        left = noisy(v[:mid], 0.15)  # H: V with 15% errors around an exact 17-mer seed
        pairs.append((left + v[mid:mid + 17] + noisy(v[mid + 17:], 0.15), len(left), v, mid))
    packed = warpdp.pack_xdrop_pairs(pairs)
    arrays = {k: getattr(packed, k) for k in ("h_bases", "v_bases", "h_offsets", "v_offsets", "h_pos", "v_pos")}
    return arrays, {"k": 17, "x": 50}, lambda threads: warpdp.xdrop(packed, k=17, x=50, backend="cpu", threads=threads)


def seedext_workload(n: int) -> tuple[dict, dict, Callable[[], Any]]:
    pairs = []
    for _ in range(n):
        t = dna(int(RNG.integers(100, 300)))
        pairs.append((noisy(t, 0.05)[:150] or b"A", t, 30))
    packed = warpdp.pack_seed_pairs(pairs)
    arrays = {"query": packed.query, "target": packed.target, "query_offsets": packed.query_offsets,
              "target_offsets": packed.target_offsets, "h0": packed.h0.astype(np.int32)}
    return arrays, {}, lambda threads: warpdp.seed_extend(packed, backend="cpu", threads=threads)


def pairhmm_workload(n: int) -> tuple[dict, dict, Callable[[], Any]]:
    groups = []
    for _ in range(max(1, n // 16)):  # 4 reads x 4 haplotypes per batch
        hap = dna(300)
        reads = []
        for i in range(4):
            bases = noisy(hap[40 * i:40 * i + 150], 0.02) or b"A"
            reads.append(warpdp.PairHmmRead(bases, bytes(RNG.integers(10, 40, len(bases)).tolist())))
        groups.append((reads, [hap] + [noisy(hap, 0.01) or b"A" for _ in range(3)]))
    b = warpdp.pack_batches(groups)
    arrays = {k: getattr(b, k) for k in ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp",
                                         "read_offsets", "hap_bases", "hap_offsets", "batch_reads", "batch_haps")}
    return arrays, {"double": 0}, lambda threads: warpdp.pairhmm(b, backend="cpu", threads=threads)


def qt_pairs(n: int, lo: int, hi: int, rate: float) -> list[tuple[bytes, bytes]]:
    out = []
    for _ in range(n):
        t = dna(int(RNG.integers(lo, hi)))
        out.append((noisy(t, rate) or b"A", t))
    return out


def align_workload(n: int) -> tuple[dict, dict, Callable[[], Any]]:
    pairs = warpdp.AlignPairs.from_sequences(qt_pairs(n, 150, 400, 0.1))
    arrays = {k: getattr(pairs, k) for k in ("query_bases", "target_bases", "query_offsets", "target_offsets")}
    return arrays, {"mode": 2, "cigar": 1}, lambda threads: warpdp.align(pairs, mode="local", cigar=True,
                                                                         backend="cpu", threads=threads)


def edit_workload(n: int) -> tuple[dict, dict, Callable[[], Any]]:
    pairs = warpdp.pack_edit_pairs(qt_pairs(n, 200, 1000, 0.1))
    arrays = {k: getattr(pairs, k) for k in ("query_bases", "target_bases", "query_offsets", "target_offsets")}
    return arrays, {"mode": 0, "task": 2}, lambda threads: warpdp.edit(pairs, mode="nw", task="path",
                                                                       backend="cpu", threads=threads)


WORKLOADS = {"xdrop": xdrop_workload, "seedext": seedext_workload, "pairhmm": pairhmm_workload,
             "align": align_workload, "edit": edit_workload}


def python_seconds(call: Callable[[int], Any], threads: int) -> tuple[float, float]:
    """(wall seconds, calling thread's CPU seconds) of one call."""
    start, cpu = time.perf_counter(), time.thread_time()
    call(threads)
    return time.perf_counter() - start, time.thread_time() - cpu


def c_seconds(harness: str, family: str, arrays: dict, params: dict, threads: int, repeats: int,
              server: str | None = None) -> tuple[float, float]:
    """(wall seconds, calling thread's CPU seconds), the best of `repeats` + 1 calls in one process."""
    with tempfile.TemporaryDirectory() as folder:
        for name, array in arrays.items():
            np.ascontiguousarray(array).tofile(Path(folder) / f"{name}.bin")
        params = {**params, "threads": threads} if server is None else {**params, "server": server}
        (Path(folder) / "params.txt").write_text("".join(f"{k} {v}\n" for k, v in params.items()))
        done = subprocess.run([harness, family, folder, str(repeats + 1)], capture_output=True, text=True,
                              check=True)
        values = dict(line.split() for line in done.stdout.splitlines())
        return float(values["seconds"]), float(values["thread_cpu_seconds"])


def children_cpu() -> float:
    """CPU seconds (user + system, every thread) of this process's children that have ended."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_per_call(harness: str, family: str, arrays: dict, params: dict, threads: int, calls: int,
                 server: str | None = None) -> float:
    """CPU seconds one call costs in all, every thread of the harness and, with a server (in this
    process), of the server: the difference between a harness run of 1 + calls calls and one of
    1 call (process start, reading the arrays, opening the handle cancel out), over calls. On a
    machine shared with other work this is steadier than wall time, which waits for cores."""
    def total(n: int) -> float:
        start, own = children_cpu(), time.process_time()
        c_seconds(harness, family, arrays, params, threads, n, server)
        return children_cpu() - start + (time.process_time() - own if server else 0.0)
    return (total(1 + calls) - total(1)) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--harness", required=True, help="warpdp_harness of a Release build of clients/cpp")
    parser.add_argument("--pairs", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--families", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--server", action="store_true", help="also time a client handle on a local CPU server")
    parser.add_argument("--cpu-calls", type=int, default=0,
                        help="with --server: also the CPU seconds per call, in process and through the "
                             "server (all threads of both processes), from runs of this many calls")
    args = parser.parse_args()
    server = None
    if args.server:
        from warpdp.grpc import Server, ServerConfig

        # The server runs its kernels on as many threads as the in-process calls.
        server = Server(ServerConfig(port=0, backend="cpu", host="127.0.0.1", max_message_mb=1024,
                                     threads=args.threads)).start()
    print(f"CPU: {cpu_name()}, threads {args.threads}, variant {best_isa()}, "
          f"commit {commit()}, pairs {args.pairs}, fastest of {args.repeats}\n")
    cpu = args.threads == 1
    extra = (" Python CPU (s) | C CPU (s) | C / Python, CPU |" if cpu else "") + \
        (" C API via server (s) | server / in-process |" if server else "") + \
        (" CPU per call, in-process (s) | CPU per call, via server (s) | server / in-process, CPU |"
         if server and args.cpu_calls else "")
    print("| family | pairs | Python API (s) | C API in-process (s) | C / Python |" + extra)
    print("|---|---:|---:|---:|---:|" + ("---:|" * extra.count("|")))
    for family in args.families:
        arrays, params, call = WORKLOADS[family](args.pairs)
        n = len(arrays.get("h_offsets", arrays.get("query_offsets", arrays.get("read_offsets")))) - 1
        if family == "pairhmm":
            n = int(np.dot(np.diff(arrays["batch_reads"]), np.diff(arrays["batch_haps"])))
        call(args.threads)  # warm-up
        py = c = py_cpu = c_cpu = float("inf")
        for _ in range(args.repeats):
            wall, thread = python_seconds(call, args.threads)
            py, py_cpu = min(py, wall), min(py_cpu, thread)
            wall, thread = c_seconds(args.harness, family, arrays, params, args.threads, 1)
            c, c_cpu = min(c, wall), min(c_cpu, thread)
        row = f"| {family} | {n} | {py:.4f} | {c:.4f} | {c / py:.3f} |"
        if cpu:
            row += f" {py_cpu:.4f} | {c_cpu:.4f} | {c_cpu / py_cpu:.3f} |"
        if server is not None:
            remote = c_seconds(args.harness, family, arrays, params, args.threads, args.repeats, server.address)[0]
            row += f" {remote:.4f} | {remote / c:.3f} |"
            if args.cpu_calls:
                local_cpu = cpu_per_call(args.harness, family, arrays, params, args.threads, args.cpu_calls)
                remote_cpu = cpu_per_call(args.harness, family, arrays, params, args.threads, args.cpu_calls,
                                          server.address)
                row += f" {local_cpu:.4f} | {remote_cpu:.4f} | {remote_cpu / local_cpu:.3f} |"
        print(row)
    if server is not None:
        server.stop()


if __name__ == "__main__":
    main()
