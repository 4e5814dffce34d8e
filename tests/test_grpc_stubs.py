"""The committed gRPC stubs must be what scripts/gen_grpc_stubs.py generates from warpdp.proto."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gen_grpc_stubs.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("gen_grpc_stubs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_stubs_are_fresh(tmp_path: Path) -> None:
    gen = _load_script()
    pytest.importorskip("grpc_tools", reason="grpcio-tools (a dev dependency) is needed to regenerate the stubs")
    found = gen.installed_grpcio_tools_version()
    if found != gen.PINNED_GRPCIO_TOOLS:
        pytest.skip(f"grpcio-tools {found} is installed; the stubs are generated with the pinned "
                    f"{gen.PINNED_GRPCIO_TOOLS}, whose output another version does not reproduce")
    generated = gen.generate(tmp_path)
    assert [p.name for p in generated] == list(gen.GENERATED)
    stale = [p.name for p in generated
             if not (gen.PROTO_DIR / p.name).exists() or (gen.PROTO_DIR / p.name).read_bytes() != p.read_bytes()]
    assert not stale, (f"stale gRPC stubs {stale}: warpdp/grpc/warpdp.proto changed; "
                       f"run `python3 scripts/gen_grpc_stubs.py` and commit the result")


def test_stubs_import_inside_the_package() -> None:
    # The generated absolute import ("import warpdp_pb2") must have been made relative.
    text = (REPO / "warpdp" / "grpc" / "warpdp_pb2_grpc.py").read_text()
    assert "\nimport warpdp_pb2" not in text
    from warpdp.grpc import warpdp_pb2, warpdp_pb2_grpc

    assert warpdp_pb2.DESCRIPTOR.package == "warpdp.v1"
    service = warpdp_pb2.DESCRIPTOR.services_by_name["Warpdp"]
    assert {m.name for m in service.methods} >= {"ServerInfo", "PairHmm", "PairHmmStream"}
    stream = service.methods_by_name["PairHmmStream"]
    assert stream.client_streaming and stream.server_streaming
    assert hasattr(warpdp_pb2_grpc, "WarpdpStub")
    assert "warpdp_pb2" not in sys.modules  # nothing imported the stub as a top-level module
