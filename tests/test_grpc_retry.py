"""The client's gRPC retry policy (service config): calls that fail with UNAVAILABLE are repeated by
gRPC itself, other failures are not, and RETRIES bounds the attempts."""
from __future__ import annotations

import grpc
import pytest

from flaky_server import serve
from warpdp.grpc import Client, ServiceError
from warpdp.grpc import client as client_module


@pytest.fixture
def flaky():
    servers = []

    def start(failures: int, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE):
        server, servicer, port = serve(failures, code)
        servers.append(server)
        return servicer, f"127.0.0.1:{port}"

    yield start
    for server in servers:
        server.stop(None)


def test_unavailable_is_retried_by_grpc(flaky):
    servicer, address = flaky(client_module.RETRIES)
    with Client(address, timeout=30) as c:
        assert c.server_info().version == f"flaky-test {client_module.RETRIES + 1}"
    assert servicer.calls == client_module.RETRIES + 1


def test_retries_are_bounded(flaky):
    servicer, address = flaky(client_module.RETRIES + 1)
    with Client(address, timeout=30) as c, pytest.raises(ServiceError) as info:
        c.server_info()
    assert info.value.code == grpc.StatusCode.UNAVAILABLE
    assert servicer.calls == client_module.RETRIES + 1


def test_other_errors_are_not_retried(flaky):
    servicer, address = flaky(1, grpc.StatusCode.INTERNAL)
    with Client(address, timeout=30) as c, pytest.raises(ServiceError) as info:
        c.server_info()
    assert info.value.code == grpc.StatusCode.INTERNAL
    assert servicer.calls == 1
