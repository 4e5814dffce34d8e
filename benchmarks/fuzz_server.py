#!/usr/bin/env python3
"""Long fuzz run of the warpdp gRPC service (loopback only, bounded in request count and time).

Starts `warpdp serve` (CPU backend, no shared files) as a child process on 127.0.0.1 with an
ephemeral port, sends it N requests of every algorithm (unary and streamed) built by
fuzz_requests.py: byte-level mutations of valid requests and messages with extreme integer
fields, plus a few valid ones. Counts the status codes, checks that the server process is
still alive every 1,000 requests, and at the end that it still scores a known request
correctly. Exits 1 on any crash, hang (a call past its deadline), UNKNOWN, INTERNAL or other
unexpected status, or a wrong answer at the end.

    python3 benchmarks/fuzz_server.py                      (100,000 requests, seed 0)
    python3 benchmarks/fuzz_server.py --requests 1000 --seed 7 --out /tmp/fuzz.md
"""
from __future__ import annotations

import argparse
import collections
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's warpdp builds the requests, as the server runs it

import fuzz_requests  # noqa: E402  (beside this script)


class ServeProcess:
    """`warpdp serve --backend cpu` in a child process on an ephemeral loopback port."""

    def __init__(self, start_timeout: float = 120.0) -> None:
        self.command = [sys.executable, "-m", "warpdp.grpc.cli", "--host", "127.0.0.1", "--port", "0",
                        "--backend", "cpu", "--no-shared-files", "--log-every", "0"]
        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.process = subprocess.Popen(self.command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()
        self.address = None
        deadline = time.monotonic() + start_timeout
        while self.address is None:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise RuntimeError("the server did not start:\n" + "".join(self.log)) from None
            if (m := re.search(r"listening on (\S+) ", line)):
                self.address = m.group(1)

    def _read(self, lines: queue.Queue[str]) -> None:
        for line in self.process.stderr:  # type: ignore[union-attr]
            self.log.append(line)
            lines.put(line)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> int | None:
        """Stop the server; its exit code (None when it had to be killed)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                return self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                return None
        return self.process.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100_000, help="requests to send (default 100000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the request generator (default 0)")
    parser.add_argument("--max-seconds", type=float, default=3600.0,
                        help="stop sending after this long, whatever the count (default 3600)")
    parser.add_argument("--call-timeout", type=float, default=30.0,
                        help="deadline of each call in seconds; a call past it counts as a hang (default 30)")
    parser.add_argument("--out", default=None, help="also write the result as a Markdown section to this file")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.max_seconds <= 0 or args.call_timeout <= 0:
        parser.error("--requests, --max-seconds and --call-timeout must be positive")

    rng = np.random.default_rng(args.seed)
    server = ServeProcess()
    channel = grpc.insecure_channel(server.address, options=fuzz_requests.channel_options())
    caller = fuzz_requests.RawCaller(channel)
    counts: collections.Counter[str] = collections.Counter()
    by_kind: collections.Counter[tuple[str, str]] = collections.Counter()
    failures: list[str] = []
    start = time.monotonic()
    sent = 0
    try:
        while sent < args.requests and time.monotonic() - start < args.max_seconds:
            case = fuzz_requests.random_case(rng)
            code, details = caller.call(case, args.call_timeout)
            sent += 1
            counts[code.name] += 1
            by_kind[case.kind, code.name] += 1
            if code not in fuzz_requests.ACCEPTED:
                failures.append(f"request {sent} ({case.method}{'Stream' if case.streamed else ''}, {case.kind}): "
                                f"{code.name}: {details[:200]}")
                if len(failures) >= 20 or not server.alive():
                    break
            if sent % 1000 == 0:
                if not server.alive():
                    failures.append(f"the server died after {sent} requests (exit code {server.process.returncode})")
                    break
                print(f"{sent} requests, {time.monotonic() - start:.0f} s: {dict(counts)}", file=sys.stderr)
        duration = time.monotonic() - start
        alive = server.alive()
        correct = False
        if alive:
            try:
                correct = caller.answers_correctly(args.call_timeout)
            except grpc.RpcError as error:
                failures.append(f"the known request failed at the end: {error.code().name}: {error.details()}")
        if not alive:
            failures.append(f"the server is not running at the end (exit code {server.process.returncode})")
        elif not correct:
            failures.append("the server answered the known request wrongly at the end")
    finally:
        channel.close()
        exit_code = server.stop()
    if sent < args.requests and not failures:
        print(f"stopped after {args.max_seconds:g} s with {sent} of {args.requests} requests sent", file=sys.stderr)

    command = " ".join(["python3 benchmarks/fuzz_server.py", *(sys.argv[1:] if argv is None else argv)])
    lines = [
        f"- command: `{command}` (seed {args.seed})",
        f"- requests: {sent} in {duration:.0f} s ({sent / duration:.0f} per second), one client, sequential",
        "- status codes: " + ", ".join(f"{name} {n}" for name, n in counts.most_common()),
        "- by kind: " + ", ".join(f"{kind} {name} {n}" for (kind, name), n in sorted(by_kind.items())),
        f"- server alive at the end: {'yes' if alive else 'no'}; known request answered correctly: "
        f"{'yes' if correct else 'no'}; server exit code on SIGTERM: {exit_code}",
        f"- result: {'PASS' if not failures else 'FAIL'}" + "".join(f"\n  - {f}" for f in failures),
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
