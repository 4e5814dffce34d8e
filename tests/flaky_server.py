"""A gRPC Warpdp service whose ServerInfo fails for its first calls: for the retry-policy tests of the
Python client (imported) and of the Java client (run: `python3 tests/flaky_server.py FAILURES [CODE]`
prints the port, then serves until its standard input closes)."""
from __future__ import annotations

import sys
import threading
from concurrent import futures
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from warpdp.grpc import warpdp_pb2, warpdp_pb2_grpc  # noqa: E402


class FlakyServicer(warpdp_pb2_grpc.WarpdpServicer):
    """ServerInfo fails with `code` for its first `failures` calls, then answers with the number of
    calls so far in `version` ("flaky-test N")."""

    def __init__(self, failures: int, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE):
        self.failures = failures
        self.code = code
        self.calls = 0
        self.lock = threading.Lock()

    def ServerInfo(self, request, context):
        with self.lock:
            self.calls += 1
            calls = self.calls
        if calls <= self.failures:
            context.abort(self.code, f"not now (call {calls})")
        return warpdp_pb2.ServerInfoReply(version=f"flaky-test {calls}")


def serve(failures: int, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> tuple[grpc.Server, FlakyServicer, int]:
    servicer = FlakyServicer(failures, code)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    warpdp_pb2_grpc.add_WarpdpServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, servicer, port


if __name__ == "__main__":
    srv, _, bound = serve(int(sys.argv[1]), grpc.StatusCode[sys.argv[2]] if len(sys.argv) > 2 else
                          grpc.StatusCode.UNAVAILABLE)
    print(bound, flush=True)
    sys.stdin.read()
    srv.stop(None)
