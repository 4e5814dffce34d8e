"""What the gRPC tests share: in-process servers on ephemeral loopback ports, raw stubs, the
module-scoped server / client / stub fixtures (imported by each test module), and the
`warpdp serve` options parsed as the CLI parses them."""
from __future__ import annotations

import argparse
import time

import grpc
import pytest

from warpdp.grpc import Client, Server, ServerConfig
from warpdp.grpc import warpdp_pb2_grpc
from warpdp.grpc.cli import add_serve_arguments

WAIT = 30  # seconds: upper bound for anything a test waits on (never reached when it works)


def start_server(**settings) -> Server:
    settings = {"port": 0, "backend": "cpu", "host": "127.0.0.1", "grace_s": 10.0, **settings}
    return Server(ServerConfig(**settings)).start()


def metric_reaches(server: Server, name: str, labels: dict[str, str], value: float) -> bool:
    """Whether the server's metric reaches value within WAIT seconds. A server counts a stream
    call when its handler ends, which can be just after the client has every result."""
    deadline = time.monotonic() + WAIT
    while server.metrics.sample(name, labels) != value:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def stub_for(server: Server) -> tuple[grpc.Channel, warpdp_pb2_grpc.WarpdpStub]:
    channel = grpc.insecure_channel(server.address, options=[("grpc.max_send_message_length", -1),
                                                             ("grpc.max_receive_message_length", -1)])
    return channel, warpdp_pb2_grpc.WarpdpStub(channel)


@pytest.fixture(scope="module")
def server():
    srv = start_server()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    with Client(server.address, timeout=WAIT) as c:
        yield c


@pytest.fixture(scope="module")
def stub(server):
    channel, stub = stub_for(server)
    yield stub
    channel.close()


def parse_serve_args(*argv: str) -> argparse.Namespace:
    """The options of `warpdp serve` parsed from argv."""
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return parser.parse_args(list(argv))
