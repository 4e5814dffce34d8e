"""docs/grpc.md's grpcurl recipes (issue #30): the request JSON in the document is sent as it
is written, and the reply, printed under either field-name convention, decodes to the numbers the
document shows. With grpcurl and jq on PATH (or $GRPCURL), the shell lines themselves run too,
health checks against a server that requires a token included."""
from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import json_format

from helpers.grpc_server import WAIT, start_server, stub_for
from warpdp.grpc import warpdp_pb2

DOC = Path(__file__).resolve().parents[1] / "docs" / "grpc.md"
GRPCURL = os.environ.get("GRPCURL") or shutil.which("grpcurl")


def shell_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)


def recipe(method: str) -> tuple[str, str]:
    """The shell block calling ``method`` and the request JSON of its heredoc."""
    block = next(b for b in shell_blocks() if f"warpdp.v1.Warpdp/{method} <<'EOF'" in b)
    request = block.split("<<'EOF'", 1)[1].split("\n", 1)[1].split("\nEOF\n", 1)[0]
    return block, request


def either_name(reply: dict, proto_name: str, json_name: str) -> str:
    """jq's `.proto_name // .jsonName`."""
    return reply.get(proto_name) or reply[json_name]


def documented_values(block: str) -> list[float]:
    return [float(v) for line in block.splitlines() if line.startswith("#") for v in line[1:].split()]


@pytest.mark.parametrize("proto_names", [True, False], ids=["proto-names", "json-names"])
def test_pairhmm_recipe_decodes_to_the_documented_values(proto_names) -> None:
    block, request_json = recipe("PairHmm")
    server = start_server()
    channel, stub = stub_for(server)
    try:
        request = json_format.Parse(request_json, warpdp_pb2.PairHmmRequest())
        reply = json_format.MessageToDict(stub.PairHmm(request, timeout=WAIT),
                                          preserving_proto_field_name=proto_names)
    finally:
        channel.close()
        server.stop()
    values = np.frombuffer(base64.b64decode(either_name(reply, "log10_likelihoods", "log10Likelihoods")), "<f8")
    np.testing.assert_array_equal(values, documented_values(block))


@pytest.mark.skipif(GRPCURL is None or shutil.which("jq") is None,
                    reason="needs grpcurl and jq on PATH (or $GRPCURL); the JSON is checked without them above")
def test_the_shell_recipes_run_with_grpcurl(tmp_path) -> None:
    token = tmp_path / "token"
    token.write_text("doc-recipe-token\n")
    server = start_server(tokens=("doc-recipe-token",))
    try:
        address = f"127.0.0.1:{server.port}"
        header = '-H "authorization: Bearer $(cat token)"'
        env = {**os.environ, "PATH": f"{Path(GRPCURL).parent}:{os.environ['PATH']}"}

        def run(script: str) -> str:
            script = script.replace("127.0.0.1:50051", address)
            result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                                    capture_output=True, text=True, timeout=WAIT)
            assert result.returncode == 0, (script, result.stderr)
            return result.stdout

        pairhmm, _ = recipe("PairHmm")
        run(pairhmm.replace("grpcurl -plaintext", f"grpcurl -plaintext {header}"))
        xdrop, _ = recipe("Xdrop")
        assert run(xdrop.replace("grpcurl -plaintext", f"grpcurl -plaintext {header}")).split() == ["20"]
        health = next(b for b in shell_blocks() if "-reflect-header" in b)
        assert '"SERVING"' in run(health)
        plain_health = f'grpcurl -plaintext {header} -d \'{{"service": ""}}\' 127.0.0.1:50051 ' \
                       "grpc.health.v1.Health/Check"
        assert '"SERVING"' in run(plain_health)
    finally:
        server.stop()
