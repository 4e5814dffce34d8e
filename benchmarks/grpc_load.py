#!/usr/bin/env python3
"""Load test of the warpdp gRPC service (loopback only, bounded in time and request count).

Measures, for GATK-sized Pair-HMM requests (tens of reads x a few haplotypes, reads
100-150 bp, haplotypes 200-400 bp): p50/p99 latency and throughput with 1, 8 and 32
concurrent clients, with dynamic batching on and off; and, for large jobs, the overhead of
scoring through the service over scoring in-process. Every reply is checked against
in-process scoring.

    python3 benchmarks/grpc_load.py --backend cpu --out /tmp/grpc_results.md   (then copy the section into BENCHMARKS.md)
    python3 benchmarks/grpc_load.py --backend gpu --client-processes 4 --out ...

The server runs as a separate process (`python -m warpdp.grpc.cli`, i.e. `warpdp serve`) on
127.0.0.1 with an ephemeral port; clients are threads (in --client-processes processes),
each with its own channel, as separate GATK processes would have.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import multiprocessing
import os
import platform
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import grpc  # noqa: E402

import warpdp  # noqa: E402
from bench_common import commit, cpu_name  # noqa: E402
from pairhmm_workloads import active_region_batches  # noqa: E402
from warpdp.grpc import Client  # noqa: E402
from warpdp.grpc import _packing  # noqa: E402
from warpdp.grpc import client as client_module  # noqa: E402
from warpdp.grpc._algorithms import PAIRHMM  # noqa: E402

GATK_SHAPE = dict(reads=(10, 50), haps=(2, 5), read_len=(100, 150), hap_len=(200, 400))


def make_batches(rng: np.random.Generator, n_batches: int, content: str = "random", **shape) -> warpdp.PairHmmBatches:
    """GATK-sized active regions. content "gatk": reads sampled from the haplotypes with 1 %
    errors, as GATK's are (most pairs then score within float's range); "random": unrelated
    random sequences (every pair's likelihood underflows float and is recomputed in double)."""
    if content == "gatk":
        return active_region_batches(rng, n_batches, **shape)
    return random_batches(rng, n_batches, **shape)


def random_batches(rng: np.random.Generator, n_batches: int, reads=(10, 50), haps=(2, 5), read_len=(100, 150),
                   hap_len=(200, 400)) -> warpdp.PairHmmBatches:
    n_reads = rng.integers(reads[0], reads[1], n_batches, endpoint=True)
    n_haps = rng.integers(haps[0], haps[1], n_batches, endpoint=True)
    read_lens = rng.integers(read_len[0], read_len[1], int(n_reads.sum()), endpoint=True)
    hap_lens = rng.integers(hap_len[0], hap_len[1], int(n_haps.sum()), endpoint=True)
    alphabet = np.frombuffer(b"ACGT", dtype=np.uint8)
    nr, nh = int(read_lens.sum()), int(hap_lens.sum())

    def offsets(lengths: np.ndarray) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    return warpdp.PairHmmBatches.from_arrays(
        read_bases=rng.choice(alphabet, nr), read_quals=rng.integers(6, 41, nr).astype(np.uint8),
        read_ins=rng.integers(30, 46, nr).astype(np.uint8), read_del=rng.integers(30, 46, nr).astype(np.uint8),
        read_gcp=np.full(nr, 10, dtype=np.uint8), read_offsets=offsets(read_lens),
        hap_bases=rng.choice(alphabet, nh), hap_offsets=offsets(hap_lens),
        batch_reads=offsets(n_reads), batch_haps=offsets(n_haps))


def matches(got: np.ndarray, expected: np.ndarray, backend: str) -> bool:
    if backend == "cpu":
        return np.array_equal(got, expected)  # same code, same values
    return got.shape == expected.shape and bool(np.allclose(got, expected, rtol=0, atol=1e-4))


# ---------------------------------------------------------------------------------------
# server process


class ServerProcess:
    """`warpdp serve` in a child process on an ephemeral loopback port."""

    def __init__(self, backend: str, batching: bool, extra: list[str], cpus: str | None = None) -> None:
        # cpus: pin the server to these CPUs (taskset list, e.g. "0-1"), as a deployment would:
        # its threads then hand requests to each other without moving between cores.
        pin = ["taskset", "-c", cpus] if cpus else []
        cmd = [*pin, sys.executable, "-m", "warpdp.grpc.cli", "--host", "127.0.0.1", "--port", "0", "--backend", backend,
               "--metrics-port", "0", "--log-every", "0", *extra]
        if not batching:
            cmd.append("--no-batching")
        self.command = cmd
        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.process = subprocess.Popen(cmd, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.address = self.metrics_url = None
        deadline = time.monotonic() + 120  # GPU start-up compiles kernels
        while self.address is None or self.metrics_url is None:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise RuntimeError("the server did not start:\n" + "".join(self.log)) from None
            if (m := re.search(r"listening on (\S+) ", line)):
                self.address = m.group(1)
            if (m := re.search(r"metrics on (http://\S+/metrics)", line)):
                self.metrics_url = m.group(1)

    def _read(self) -> None:
        for line in self.process.stderr:
            self.log.append(line)
            self.lines.put(line)

    # Server-side sums read from its Prometheus metrics: where a request's time goes.
    _STAT_SAMPLES = {
        "submissions": ("warpdp_batch_requests_count", None),
        "requests": ("warpdp_batch_requests_sum", None),
        "compute_s": ("warpdp_compute_seconds_sum", None),
        "queue_s": ("warpdp_queue_wait_seconds_sum", None),
        "handled": ("warpdp_request_seconds_count", "PairHmm"),
        "handler_s": ("warpdp_request_seconds_sum", "PairHmm"),
    }

    def stats(self) -> dict[str, float]:
        """Counters so far (see _STAT_SAMPLES), from the server's Prometheus metrics."""
        from prometheus_client.parser import text_string_to_metric_families

        text = urllib.request.urlopen(self.metrics_url, timeout=10).read().decode()
        samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
        result = {}
        for key, (name, method) in self._STAT_SAMPLES.items():
            result[key] = sum(s.value for s in samples
                              if s.name == name and (method is None or s.labels.get("method") == method))
        return result

    def cpu_seconds(self) -> float:
        """CPU time the server process has used, all threads (Linux /proc)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------
# load


def client_threads(address: str, n_threads: int, pool: list, refs: list, backend: str, duration: float,
                   max_requests: int, seed: int, gate: tuple | None = None) -> tuple[list[float], int, int, float]:
    """Run n_threads closed-loop clients for `duration` seconds; returns latencies (s), cells
    done, wrong results and the measured window (s). With `gate` = (ready queue, go event),
    the clients of several processes start together."""
    latencies: list[float] = []
    totals = {"cells": 0, "wrong": 0, "started": 0}
    lock = threading.Lock()
    warmed = threading.Barrier(n_threads + 1)
    barrier = threading.Barrier(n_threads + 1)
    release = [0.0]

    def run(index: int) -> None:
        rng = np.random.default_rng(seed * 1000 + index)
        with Client(address, timeout=120) as client:
            client.pairhmm(pool[0])  # connect before the clock starts
            warmed.wait()
            barrier.wait()
            stop = release[0] + duration  # set before the barrier opened
            mine: list[float] = []
            cells = wrong = 0
            while time.perf_counter() < stop:
                with lock:
                    if totals["started"] >= max_requests:
                        break
                    totals["started"] += 1
                k = int(rng.integers(len(pool)))
                t0 = time.perf_counter()
                got = client.pairhmm(pool[k])
                mine.append(time.perf_counter() - t0)
                cells += pool[k].n_cells
                wrong += not matches(got, refs[k], backend)
        with lock:
            latencies.extend(mine)
            totals["cells"] += cells
            totals["wrong"] += wrong

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    warmed.wait()
    if gate is not None:
        ready, go = gate
        ready.put(None)
        go.wait()
    release[0] = time.perf_counter()
    barrier.wait()
    for t in threads:
        t.join()
    return latencies, totals["cells"], totals["wrong"], time.perf_counter() - release[0]


def _process_entry(args: tuple, ready: multiprocessing.Queue, go: multiprocessing.Event,
                   out: multiprocessing.Queue) -> None:
    out.put(client_threads(*args, gate=(ready, go)))


def run_load(address: str, clients: int, processes: int, pool: list, refs: list, backend: str, duration: float,
             max_requests: int) -> tuple[list[float], int, int, float]:
    """`clients` closed-loop clients for `duration` s: (latencies, cells, wrong results, window s)."""
    processes = max(1, min(processes, clients))
    if processes == 1:
        return client_threads(address, clients, pool, refs, backend, duration, max_requests, 1)
    ctx = multiprocessing.get_context("spawn")
    out, ready, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    shares = [clients // processes + (i < clients % processes) for i in range(processes)]
    procs = [ctx.Process(target=_process_entry,
                         args=((address, n, pool, refs, backend, duration, max_requests // processes, i + 1),
                               ready, go, out))
             for i, n in enumerate(shares)]
    for p in procs:
        p.start()
    for _ in procs:  # every process connected and warmed up: start the clock everywhere
        ready.get(timeout=600)
    go.set()
    latencies, cells, wrong, window = [], 0, 0, 0.0
    for _ in procs:
        lat, c, w, span = out.get(timeout=duration + 600)
        latencies += lat
        cells += c
        wrong += w
        window = max(window, span)  # the processes start together (gate)
    for p in procs:
        p.join()
    return latencies, cells, wrong, window


def summarize(parts: list[tuple[list[float], int, int, float]]) -> dict:
    lat = np.array([x for part in parts for x in part[0]])
    cells = sum(part[1] for part in parts)
    window = sum(part[3] for part in parts)
    return dict(requests=len(lat), seconds=window, rps=len(lat) / window, gcups=cells / window / 1e9,
                p50=float(np.percentile(lat, 50)) * 1e3 if len(lat) else float("nan"),
                p99=float(np.percentile(lat, 99)) * 1e3 if len(lat) else float("nan"),
                wrong=sum(part[2] for part in parts))


def in_process_rate(pool: list, backend: str, duration: float) -> dict:
    """One caller scoring the same requests in-process, back to back."""
    lat = []
    cells = 0
    stop = time.perf_counter() + duration
    k = 0
    cpu0 = time.process_time()
    while time.perf_counter() < stop:
        t0 = time.perf_counter()
        warpdp.pairhmm(pool[k % len(pool)], backend=backend)
        lat.append(time.perf_counter() - t0)
        cells += pool[k % len(pool)].n_cells
        k += 1
    total = sum(lat)
    return dict(requests=k, rps=k / total, gcups=cells / total / 1e9, p50=np.percentile(lat, 50) * 1e3,
                p99=np.percentile(lat, 99) * 1e3, cpu_ms=(time.process_time() - cpu0) / k * 1e3)


def large_job_overhead(server: ServerProcess, backend: str, cells_target: float, repeats: int, seed: int,
                       content: str) -> dict:
    rng = np.random.default_rng(seed)
    probe = make_batches(rng, 64, content, **GATK_SHAPE)
    per_batch = probe.n_cells / probe.n_batches
    job = make_batches(rng, max(1, int(cells_target / per_batch)), content, **GATK_SHAPE)
    expected = warpdp.pairhmm(job, backend=backend)  # also warms the backend up
    paths = ("in-process", "client", "streamed")
    timings: dict[str, list[float]] = {k: [] for k in paths}
    cpu: dict[str, list[float]] = {k: [] for k in paths}  # CPU seconds, server + this process
    with Client(server.address, timeout=600) as client:
        info = client.server_info()
        chunk_cells = min(info.limits.max_request_cells, info.batching.max_batch_cells)
        chunks = _packing.plan_pairhmm_chunks(job, chunk_cells, min(info.limits.max_message_bytes, 16 << 20))
        assert matches(client.pairhmm(job), expected, backend)  # warm-up, and connection

        def streamed() -> np.ndarray:
            out = np.empty(job.n_pairs)
            client._streams(PAIRHMM, chunks, False, out, 600)  # force the streaming path
            return out

        calls = {"in-process": lambda: warpdp.pairhmm(job, backend=backend),
                 "client": lambda: client.pairhmm(job), "streamed": streamed}
        assert matches(client.pairhmm(job), expected, backend)  # the client's files and the server's mappings settle
        # In-process and the client alternate (the overhead compared); the message path runs
        # after them: it pushes hundreds of MiB through messages, and the call right after it
        # ran slower (BENCHMARKS.md, "a large job's per-chunk host work cut").
        for batch in (("in-process", "client"), ("streamed",)):
            for _ in range(repeats):
                for path in batch:
                    cpu0, server0, t0 = time.process_time(), server.cpu_seconds(), time.perf_counter()
                    got = calls[path]()
                    timings[path].append(time.perf_counter() - t0)
                    cpu[path].append(time.process_time() - cpu0 + server.cpu_seconds() - server0)
                    assert matches(got, expected, backend), f"{path} result differs from in-process"
    message_mb = (int(_packing.pairhmm_request_bytes_per_batch(job).sum()) + 8 * job.n_pairs) / 2**20
    if info.shared_files.enabled and PAIRHMM.request_bytes(job) >= client_module._SHARED_MIN_BYTES:
        shared_chunks = list(client_module._shared_file_chunks(job, False, info))
        client_path = f"shared memory, {len(shared_chunks)} chunks"
    elif PAIRHMM.fits(job, False, info.limits.max_request_cells, info.limits.max_message_bytes):
        client_path = "one unary call"
    else:
        client_path = "streamed in messages"
    result = dict(cells=job.n_cells, pairs=job.n_pairs, batches=job.n_batches, chunks=len(chunks),
                  message_mb=message_mb, client_path=client_path)
    result.update({path: float(np.median(timings[path])) for path in paths})
    result.update({path + " cpu": float(np.median(cpu[path])) for path in paths})
    return result


# ---------------------------------------------------------------------------------------
# report


def machine() -> str:
    cpu = cpu_name()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu}, {cores} cores available"




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--clients", default="1,8,32", help="concurrency levels (default 1,8,32)")
    parser.add_argument("--duration", type=float, default=6.0,
                        help="seconds of load per row, spread over --rounds alternating rounds (default 6)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating on/off rounds per row (default 3)")
    parser.add_argument("--max-requests", type=int, default=50_000, help="requests per scenario at most")
    parser.add_argument("--client-processes", type=int, default=1,
                        help="spread client threads over this many processes (use >1 when the client side "
                             "is the bottleneck, e.g. on the GPU backend)")
    parser.add_argument("--pool", type=int, default=64, help="distinct requests to cycle through")
    parser.add_argument("--large-cells", type=float, default=None,
                        help="size of the large job in DP cells (default 1e9 cpu, 2e10 gpu)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the large job (median reported)")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="extra `warpdp serve` option for the servers (repeatable), e.g. --server-arg=--workers=2")
    parser.add_argument("--server-cpus", default=None,
                        help="pin the server process to these CPUs (taskset -c list, e.g. 0-1); default: not pinned")
    parser.add_argument("--content", choices=("random", "gatk"), default="random",
                        help="random: unrelated random sequences, whose likelihoods all underflow float and "
                             "are recomputed in double (default; the content of every run in BENCHMARKS.md "
                             "before 2026-11-21); gatk: reads sampled from their haplotypes with 1%% errors, "
                             "as GATK's are")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None, help="write the markdown section here")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.clients.split(",") if x.strip()]
    large_cells = args.large_cells or (1e9 if args.backend == "cpu" else 2e10)

    load_before = os.getloadavg()[0]
    rng = np.random.default_rng(args.seed)
    pool = [make_batches(rng, 1, args.content, **GATK_SHAPE) for _ in range(args.pool)]
    refs = [warpdp.pairhmm(b, backend=args.backend) for b in pool]
    mean_cells = np.mean([b.n_cells for b in pool])
    mean_pairs = np.mean([b.n_pairs for b in pool])
    print(f"pool: {len(pool)} requests, mean {mean_pairs:.0f} pairs / {mean_cells / 1e6:.2f} M cells", flush=True)

    inproc = in_process_rate(pool, args.backend, min(args.duration, 3.0))
    print(f"in-process: {inproc['rps']:.0f} req/s, {inproc['gcups']:.2f} GCUPS", flush=True)
    rows = []
    # Both servers run side by side and the two modes alternate in short rounds, so that drift
    # in the machine's load (shared machines) does not favour one mode.
    with ServerProcess(args.backend, True, args.server_arg, args.server_cpus) as on, \
            ServerProcess(args.backend, False, args.server_arg, args.server_cpus) as off:
        servers = {True: on, False: off}
        for clients in levels:
            parts: dict[bool, list] = {True: [], False: []}
            totals = {True: collections.Counter(), False: collections.Counter()}
            cpu = {True: 0.0, False: 0.0}
            for round_ in range(args.rounds):
                for batching in ((True, False) if round_ % 2 == 0 else (False, True)):
                    server = servers[batching]
                    before = server.stats()
                    cpu_before = server.cpu_seconds()
                    parts[batching].append(run_load(server.address, clients, args.client_processes, pool, refs,
                                                    args.backend, args.duration / args.rounds,
                                                    args.max_requests // args.rounds))
                    cpu[batching] += server.cpu_seconds() - cpu_before
                    after = server.stats()
                    totals[batching].update({k: after[k] - before[k] for k in after})
            for batching in (True, False):
                result = summarize(parts[batching])
                t = totals[batching]
                # (includes each client's one warm-up request per round)
                result["per_submission"] = t["requests"] / t["submissions"] if t["submissions"] else float("nan")
                result["cpu_ms"] = cpu[batching] / t["requests"] * 1e3 if t["requests"] else float("nan")
                result["submission_ms"] = t["compute_s"] / t["submissions"] * 1e3 if t["submissions"] else float("nan")
                result["busy"] = t["compute_s"] / result["seconds"]  # submissions running, summed over workers
                result["queue_ms"] = t["queue_s"] / t["requests"] * 1e3 if t["requests"] else float("nan")
                result["handler_ms"] = t["handler_s"] / t["handled"] * 1e3 if t["handled"] else float("nan")
                rows.append((batching, clients, result))
                print(f"batching {'on ' if batching else 'off'} clients {clients:3d}: {result['rps']:8.1f} req/s "
                      f"{result['gcups']:6.2f} GCUPS p50 {result['p50']:7.2f} ms p99 {result['p99']:7.2f} ms "
                      f"server CPU {result['cpu_ms']:.2f} ms/req "
                      f"({result['requests']} requests, {result['per_submission']:.1f} per submission, "
                      f"{result['wrong']} wrong); in the server: handler {result['handler_ms']:.2f} ms, "
                      f"queued {result['queue_ms']:.2f} ms, submission {result['submission_ms']:.2f} ms, "
                      f"backend busy {100 * result['busy']:.0f}%", flush=True)
    with ServerProcess(args.backend, True, args.server_arg, args.server_cpus) as server:
        large = large_job_overhead(server, args.backend, large_cells, args.repeats, args.seed + 1, args.content)
        with Client(server.address, timeout=60) as client:
            info = client.server_info()
    print(f"large job: {large}", flush=True)

    wrong = sum(r["wrong"] for _, _, r in rows)
    lines = [
        f"## gRPC service load ({args.backend.upper()} backend)",
        "",
        f"- Machine: {machine()}; {platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"grpcio {grpc.__version__}",
        f"- Commit: {commit()}; {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; "
        f"1-min load average {load_before:.1f} at start, {os.getloadavg()[0]:.1f} at end",
        f"- Command: `python3 benchmarks/grpc_load.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        f"- Server: `warpdp serve --host 127.0.0.1 --backend {args.backend}"
        f"{' ' + ' '.join(args.server_arg) if args.server_arg else ''}`"
        f"{f' pinned to CPUs {args.server_cpus}' if args.server_cpus else ''} (batching: max wait "
        f"{info.batching.max_wait_us / 1000:g} ms, max {info.batching.max_batch_cells / 1e6:g} M cells per submission, "
        f"{info.batching.workers} worker(s); {info.algorithms[0].detail}); `--no-batching` for the rows marked off; "
        f"loopback; server and clients share the machine"
        f"{' (OMP_WAIT_POLICY=' + os.environ['OMP_WAIT_POLICY'] + ')' if 'OMP_WAIT_POLICY' in os.environ else ''}.",
        f"- Requests: GATK-sized, one active region each: 10-50 reads x 2-5 haplotypes, reads 100-150 bp, "
        f"haplotypes 200-400 bp (mean {mean_pairs:.0f} pairs, {mean_cells / 1e6:.2f} M cells); "
        + ("reads sampled from the haplotypes with 1 % errors (GATK-like content); " if args.content == "gatk"
           else "unrelated random sequences (every pair recomputed in double); ") +
        f"{len(pool)} distinct requests cycled; closed loop, each client its own channel, "
        f"{args.duration:g} s per row in {args.rounds} rounds alternating with the other mode; every reply checked against in-process scoring "
        f"({wrong} mismatches).",
        f"- In-process, one caller back to back: {inproc['rps']:.0f} req/s, {inproc['gcups']:.2f} GCUPS, "
        f"p50 {inproc['p50']:.2f} ms, p99 {inproc['p99']:.2f} ms, {inproc['cpu_ms']:.2f} CPU ms per request.",
        "- `server CPU ms/req`: CPU time of the server process (all threads: gRPC, batching, backend) "
        "per request; unlike wall-clock rates it hardly depends on what else the machine runs.",
        "",
        "- In the server (means, from its metrics): `handler ms`, a request's time in the RPC handler "
        "(decoding, queued, computed, split); `queued ms`, waiting for its submission to start; "
        "`submission ms`, one backend submission; `busy`, submission time per second of load (over 100% "
        "when several workers overlap). The rest of a client's latency is gRPC and the client itself.",
        "",
        "| batching | clients | requests | req/s | GCUPS | p50 ms | p99 ms | server CPU ms/req "
        "| requests per backend submission | handler ms | queued ms | submission ms | busy |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for batching, clients, r in rows:
        lines.append(f"| {'on' if batching else 'off'} | {clients} | {r['requests']} | {r['rps']:.1f} | "
                     f"{r['gcups']:.2f} | {r['p50']:.2f} | {r['p99']:.2f} | {r['cpu_ms']:.2f} | "
                     f"{r['per_submission']:.1f} | {r['handler_ms']:.2f} | {r['queue_ms']:.2f} | "
                     f"{r['submission_ms']:.2f} | {100 * r['busy']:.0f}% |")
    on = {c: r for b, c, r in rows if b}
    off = {c: r for b, c, r in rows if not b}
    lines.append("")
    ratios = ", ".join(f"{c} clients {on[c]['rps'] / off[c]['rps']:.2f}x" for c in levels if c in on and c in off)
    lines.append(f"Throughput with batching on / off: {ratios}.")
    lines += [
        "",
        f"Large job ({large['cells'] / 1e9:.2f} G cells, {large['pairs']} pairs in {large['batches']} batches, "
        f"{large['message_mb']:.1f} MiB of request + reply arrays), median of {args.repeats}:",
        "",
        "| path | seconds | GCUPS | overhead vs in-process | CPU s (server + client) | CPU overhead |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, label in (("in-process", "in-process `warpdp.pairhmm`"),
                       ("client", f"`Client.pairhmm` ({large['client_path']})"),
                       ("streamed", f"`PairHmmStream`, arrays in messages, {large['chunks']} chunks")):
        seconds, cpu_s = large[key], large[key + " cpu"]
        overhead = "" if key == "in-process" else f"{100 * (seconds / large['in-process'] - 1):+.1f}%"
        cpu_overhead = "" if key == "in-process" else f"{100 * (cpu_s / large['in-process cpu'] - 1):+.1f}%"
        lines.append(f"| {label} | {seconds:.3f} | {large['cells'] / seconds / 1e9:.2f} | {overhead} | "
                     f"{cpu_s:.2f} | {cpu_overhead} |")
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    if args.out is not None:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
