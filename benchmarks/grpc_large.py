#!/usr/bin/env python3
"""Host work of the gRPC message path for large jobs (issue 28): what warpdp's own code does
with a request's and a reply's arrays, stage by stage, and a large Pair-HMM job end to end.

    python3 benchmarks/grpc_large.py [--mb 25] [--repeats 5] [--families pairhmm,xdrop,seedext,align,edit]
                                     [--end-to-end] [--hap-len 2,4] [--out FILE]

Stages (this process, no network, no kernel): for each family a job of about --mb MB of
request arrays, cut into the chunks a client streams it in (2 MiB first, doubling up to
16 MiB; each stage summed over the chunks), timed two ways on the same chunks:

- library: building the messages with the protobuf library, as the code did before
  warpdp.grpc._wire (and as a client of the generated stubs does): the client builds the
  request message from the arrays and gRPC serializes it; the server parses it and decodes
  the fields it reads; the server builds the reply message from the results and gRPC
  serializes it; the client parses it and stores the results;
- wire: the path the service takes now (warpdp.grpc._wire): arrays written straight into the
  serialized request and reply, the request's arrays read as views of the received bytes.

Result arrays have the size a reply of the chunk holds (for Pair-HMM and the pair families,
whose results have a fixed size per pair; their values do not change what copying them costs).
CPU time is this process's (one thread); MB/s is the request's (reply's) array bytes per
second of that stage. The copies of each array per stage are counted in COPIES below, from
reading the code (gRPC's own copies, into and out of its transport, are not counted).

End to end (--end-to-end): `warpdp serve` (CPU backend) on 127.0.0.1 and a Pair-HMM job of
--mb MB (GATK-sized active regions, but haplotypes of --hap-len bases: shorter than GATK's
200-400 keeps the CPU kernel's share small while the request keeps its size) scored in-process, through a
remote client (`Client(shared_files=False)`: arrays in messages, as a client on another host
sends them) and streamed in message chunks as benchmarks/grpc_load.py streams it; wall time,
CPU time of both processes and the server's compute time (its metrics), medians of --repeats;
"ms outside compute" is the call's time less the server's compute time (for the one unary
call, the message path's; a stream overlaps chunks' transfers with others' compute). Every
result is checked against in-process scoring.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpc  # noqa: E402
import google.protobuf  # noqa: E402

import warpdp  # noqa: E402
from bench_common import commit, cpu_name  # noqa: E402
from warpdp import registry  # noqa: E402
from warpdp.grpc import warpdp_pb2  # noqa: E402
from warpdp.grpc import client as client_module  # noqa: E402

# Copies of each array warpdp's code makes per stage (library path, wire path), from the code:
# client build, library: tobytes, the nested message's copy, the request's copy of it (upb's
# MergeFrom serializes and parses: 2), serialize; wire: the one b"".join.
# server decode, library: parse, each field read (Pair-HMM's offsets joined: once more, small);
# wire: none (int64 fields copied when not 8-byte aligned; Pair-HMM's offsets joined, small).
# server reply, library: tobytes, the message's copy, serialize (the pair families first take
# each column out of the result table: +1); wire: the join (+1 for the pair families' columns).
# client store (the same both ways): parse, the field read, the store into the output.
COPIES = {"client build": (5, 1), "server decode": (2, 0), "server reply": (3, 1), "client store": (3, 3)}
PAIR_COLUMN_COPY = {"xdrop", "seedext"}
GATK_HAP_LEN = (200, 400)  # the stages' Pair-HMM job: GATK-sized active regions (benchmarks/grpc_load.py)


def pairhmm_job(rng: np.random.Generator, cells: float, hap_len: tuple[int, int]) -> Any:
    from grpc_load import GATK_SHAPE, random_batches

    shape = dict(GATK_SHAPE, hap_len=hap_len)
    probe = random_batches(rng, 64, **shape)
    return random_batches(rng, max(1, int(cells / (probe.n_cells / probe.n_batches))), **shape)


def family_job(family: str, megabytes: float, rng: np.random.Generator, hap_len: tuple[int, int]) -> tuple[Any, Any]:
    """A job of about `megabytes` MB of request arrays, and its parameters."""
    target = megabytes * 1e6
    if family == "pairhmm":
        probe = pairhmm_job(rng, 1e8, hap_len)
        per_cell = registry.family("pairhmm").algorithm().request_bytes(probe) / probe.n_cells
        return pairhmm_job(rng, target / per_cell, hap_len), False
    if family == "xdrop":
        from xdrop import make_workload
        from warpdp.grpc._algorithms import XdropKey

        return make_workload(max(1, int(target / 10_000)), seed=3), XdropKey.make(k=17, x=100)
    if family == "seedext":
        from seedext import bwa_like_pairs

        return bwa_like_pairs(max(1, int(target / 390)), seed=4), warpdp.SeedExtParams()
    if family == "align":
        from align import make_pairs

        return make_pairs(max(1, int(target / 2_000)), 1_000, seed=5), warpdp.AlignParams()
    if family == "edit":
        from edit import read_pairs

        return read_pairs(max(1, int(target / 2_016)), (900, 1_100), (0.01, 0.05), (0.8, 0.1, 0.1), 6), None
    raise SystemExit(f"unknown family {family}")


def result_rows(algorithm: Any, n_pairs: int) -> Any:
    """Results of n_pairs pairs as the family's kernel returns them (None: ragged results,
    whose size depends on the values: not timed here)."""
    if algorithm.name == "pairhmm":
        return np.random.default_rng(1).uniform(-300, 0, n_pairs)
    if hasattr(algorithm, "columns") and not algorithm.ragged:
        return np.random.default_rng(1).integers(0, 10**6, (n_pairs, len(algorithm.columns)), dtype=np.int64)
    return None


def timed(run: Callable[[], Any]) -> tuple[float, float, Any]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = run()
    return time.perf_counter() - wall0, time.process_time() - cpu0, result


def decode(algorithm: Any, data: bytes, wire: bool) -> Any:
    """The server's job of a received request."""
    if wire:
        request, packed = algorithm.request_reader.parse(data)
        return algorithm.decode(request, packed)
    return algorithm.decode(algorithm.request_type.FromString(data))


def stage_times(algorithm: Any, chunks: list[Any], key: Any, wire: bool) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds of each stage, summed over the chunks."""
    totals: dict[str, list[float]] = {}
    stats = warpdp_pb2.CallStats(backend="cpu", cells=1)

    def add(stage: str, wall: float, cpu: float) -> None:
        totals.setdefault(stage, [0.0, 0.0])
        totals[stage][0] += wall
        totals[stage][1] += cpu

    for chunk in chunks:
        n = algorithm.n_pairs(chunk)
        if wire:
            wall, cpu, data = timed(lambda: algorithm.encoded_request(chunk, key))
        else:
            wall, cpu, data = timed(lambda: algorithm.request(chunk, key).SerializeToString())
        add("client build", wall, cpu)
        wall, cpu, job = timed(lambda: decode(algorithm, data, wire))
        add("server decode", wall, cpu)
        assert job.n_pairs == n
        rows = result_rows(algorithm, n)
        if rows is None:
            continue
        if wire:
            wall, cpu, reply = timed(lambda: algorithm.encoded_reply(rows, n, 0, stats))
        else:
            wall, cpu, reply = timed(lambda: algorithm.reply(rows, n, 0, stats).SerializeToString())
        add("server reply", wall, cpu)
        out = algorithm.new_output(n)
        wall, cpu, _ = timed(lambda: algorithm.store(algorithm.reply_type.FromString(reply), out, 0, n))
        add("client store", wall, cpu)
    return {stage: (wall, cpu) for stage, (wall, cpu) in totals.items()}


def stages(families: list[str], megabytes: float, repeats: int) -> list[dict]:
    rows = []
    rng = np.random.default_rng(7)
    for family in families:
        algorithm = registry.family(family).algorithm()
        payload, key = family_job(family, megabytes, rng, GATK_HAP_LEN)
        if family != "pairhmm":
            key = algorithm.client_key(payload, key)
        # The chunks a client streams the job in (client._CHUNK_BYTES, growing from _FIRST_CHUNK_BYTES).
        chunks = algorithm.plan(payload, key, 2**62, client_module._CHUNK_BYTES, client_module._FIRST_CHUNK_BYTES)
        request_mb = sum(algorithm.request_bytes(c) for c in chunks) / 1e6
        reply_mb = algorithm.reply_bytes_per_pair * algorithm.n_pairs(payload) / 1e6
        paths = ("library", "wire") if hasattr(algorithm, "encoded_request") else ("library",)
        runs: dict[str, list[dict]] = {path: [] for path in paths}
        for _ in range(repeats):  # the two paths alternate
            for path in paths:
                runs[path].append(stage_times(algorithm, chunks, key, path == "wire"))
        for path in paths:
            for stage in runs[path][0]:
                wall = statistics.median(r[stage][0] for r in runs[path])
                cpu = statistics.median(r[stage][1] for r in runs[path])
                mb = request_mb if stage in ("client build", "server decode") else reply_mb
                copies = COPIES[stage][path == "wire"] + (stage == "server reply" and family in PAIR_COLUMN_COPY)
                rows.append(dict(family=family, path=path, stage=stage, chunks=len(chunks), mb=mb, wall=wall,
                                 cpu=cpu, copies=copies))
                print(f"{family:8s} {path:8s} {stage:14s} {len(chunks):3d} chunks {mb:7.1f} MB "
                      f"{wall * 1e3:8.2f} ms {cpu * 1e3:8.2f} CPU ms {mb / max(cpu, 1e-9):9.0f} MB/s "
                      f"copies {copies}", flush=True)
    return rows


def end_to_end(megabytes: float, hap_len: tuple[int, int], repeats: int) -> dict:
    from grpc_load import ServerProcess, matches
    from warpdp.grpc import Client
    from warpdp.grpc._algorithms import PAIRHMM

    job, _ = family_job("pairhmm", megabytes, np.random.default_rng(11), hap_len)
    expected = warpdp.pairhmm(job, backend="cpu")
    timings: dict[str, list[tuple[float, float, float]]] = {}
    with ServerProcess("cpu", True, []) as server, Client(server.address, timeout=600, shared_files=False) as client:
        info = client.server_info()
        chunk_cells = min(info.limits.max_request_cells, info.batching.max_batch_cells)
        chunks = PAIRHMM.plan(job, False, chunk_cells, min(info.limits.max_message_bytes, 16 << 20))

        def streamed() -> np.ndarray:
            out = np.empty(job.n_pairs)
            client._streams(PAIRHMM, chunks, False, out, 600)  # the streaming path, as grpc_load times it
            return out

        calls = {"in-process": lambda: warpdp.pairhmm(job, backend="cpu"),
                 "remote client": lambda: client.pairhmm(job), "streamed": streamed}
        assert matches(client.pairhmm(job), expected, "cpu")  # warm-up and connection
        for _ in range(repeats):
            for path, call in calls.items():
                compute0 = server.stats()["compute_s"]
                cpu0, server0, t0 = time.process_time(), server.cpu_seconds(), time.perf_counter()
                got = call()
                wall = time.perf_counter() - t0
                cpu = time.process_time() - cpu0 + server.cpu_seconds() - server0
                timings.setdefault(path, []).append((wall, cpu, server.stats()["compute_s"] - compute0))
                assert matches(got, expected, "cpu"), f"{path} result differs from in-process"
    message_mb = (PAIRHMM.request_bytes(job) + 8 * job.n_pairs) / 1e6
    result = dict(cells=job.n_cells, pairs=job.n_pairs, batches=job.n_batches, message_mb=message_mb,
                  chunks=len(chunks), unary=PAIRHMM.fits(job, False, info.limits.max_request_cells,
                                                         info.limits.max_message_bytes))
    for path, values in timings.items():
        result[path] = tuple(statistics.median(v[i] for v in values) for i in range(3))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=25.0, help="request arrays per family's job, MB (default 25)")
    parser.add_argument("--families", default="pairhmm,xdrop,seedext,align,edit")
    parser.add_argument("--repeats", type=int, default=5, help="medians of this many runs (default 5)")
    parser.add_argument("--end-to-end", action="store_true", help="also a Pair-HMM job through a CPU server")
    parser.add_argument("--hap-len", default="2,4",
                        help="Pair-HMM haplotype lengths min,max (default 2,4: a 25 MB job then holds ~5e7 cells, "
                             "which the CPU scores in a fraction of the message path's time; GATK's are 200,400)")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown section here")
    args = parser.parse_args(argv)
    hap_len = tuple(int(x) for x in args.hap_len.split(","))
    load_before = os.getloadavg()[0]
    stage_rows = stages([f for f in args.families.split(",") if f], args.mb, args.repeats)
    e2e = end_to_end(args.mb, hap_len, args.repeats) if args.end_to_end else None
    lines = [
        "## gRPC message path for large jobs: host work per stage",
        "",
        f"- Machine: {cpu_name()}, {len(os.sched_getaffinity(0))} cores available; {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, grpcio {grpc.__version__}, protobuf "
        f"{google.protobuf.__version__}",
        f"- Commit: {commit()}; {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; 1-min load average "
        f"{load_before:.1f} at start, {os.getloadavg()[0]:.1f} at end",
        f"- Command: `python3 benchmarks/grpc_large.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        "| family | path | stage | chunks | MB | ms | CPU ms | MB/s (CPU) | copies |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in stage_rows:
        lines.append(f"| {r['family']} | {r['path']} | {r['stage']} | {r['chunks']} | {r['mb']:.1f} | "
                     f"{r['wall'] * 1e3:.2f} | {r['cpu'] * 1e3:.2f} | {r['mb'] / max(r['cpu'], 1e-9):,.0f} | "
                     f"{r['copies']} |")
    if e2e is not None:
        base_wall, base_cpu, _ = e2e["in-process"]
        lines += [
            "",
            f"End to end, CPU server on loopback: {e2e['cells'] / 1e9:.3f} G cells, {e2e['pairs']} pairs in "
            f"{e2e['batches']} batches, {e2e['message_mb']:.1f} MB of request + reply arrays; the remote client "
            f"sends {'one unary call' if e2e['unary'] else 'a stream'}, the streamed row {e2e['chunks']} chunks; "
            f"medians of {args.repeats}:",
            "",
            "| path | ms | over in-process | CPU ms (server + client) | CPU over in-process | server compute ms "
            "| ms outside compute |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for path, (wall, cpu, compute) in ((p, e2e[p]) for p in ("in-process", "remote client", "streamed")):
            if path == "in-process":
                lines.append(f"| {path} | {wall * 1e3:.0f} | | {cpu * 1e3:.0f} | | | |")
                continue
            lines.append(f"| {path} | {wall * 1e3:.0f} | {(wall - base_wall) * 1e3:+.0f} | {cpu * 1e3:.0f} | "
                         f"{(cpu - base_cpu) * 1e3:+.0f} | {compute * 1e3:.0f} | {(wall - compute) * 1e3:.0f} |")
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
