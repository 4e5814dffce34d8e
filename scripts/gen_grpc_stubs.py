#!/usr/bin/env python3
"""Generate the Python gRPC stubs of warpdp/grpc/warpdp.proto (committed to the repo).

    python3 scripts/gen_grpc_stubs.py            # rewrite warpdp/grpc/warpdp_pb2{,_grpc}.py{,i}
    python3 scripts/gen_grpc_stubs.py --out DIR  # write them into DIR instead (the staleness test)

Needs grpcio-tools at the version pinned in pyproject.toml (the generated files carry the
protoc and grpc versions, so another version produces different files).
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROTO_DIR = REPO / "warpdp" / "grpc"
PROTO = "warpdp.proto"
PINNED_GRPCIO_TOOLS = "1.85.1"
GENERATED = ("warpdp_pb2.py", "warpdp_pb2.pyi", "warpdp_pb2_grpc.py")


def generate(out_dir: Path) -> list[Path]:
    """Run protoc (from grpcio-tools) into out_dir and make the stubs importable in-package."""
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError:
        raise SystemExit("grpcio-tools is not installed (pip install 'grpcio-tools==%s')" % PINNED_GRPCIO_TOOLS)
    out_dir.mkdir(parents=True, exist_ok=True)
    well_known = Path(grpc_tools.__file__).resolve().parent / "_proto"
    # The proto is compiled from its own folder, so its descriptor name is "warpdp.proto".
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"-I{well_known}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        PROTO,
    ]
    status = protoc.main(args)
    if status != 0:
        raise SystemExit(f"protoc failed with status {status}")
    grpc_file = out_dir / "warpdp_pb2_grpc.py"
    text = grpc_file.read_text()
    # protoc writes a top-level import ("import warpdp_pb2 as warpdp__pb2"), which only works
    # with the stub folder on sys.path; inside the package it must be relative.
    fixed, count = re.subn(r"^import warpdp_pb2 as warpdp__pb2$", "from . import warpdp_pb2 as warpdp__pb2",
                           text, flags=re.MULTILINE)
    if count != 1:
        raise SystemExit("could not find the generated 'import warpdp_pb2' line to make relative")
    grpc_file.write_text(fixed)
    return [out_dir / name for name in GENERATED]


def installed_grpcio_tools_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("grpcio-tools")
    except Exception:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: warpdp/grpc)")
    args = parser.parse_args(argv)
    found = installed_grpcio_tools_version()
    if found != PINNED_GRPCIO_TOOLS:
        print(f"warning: grpcio-tools {found} is installed; the committed stubs come from "
              f"{PINNED_GRPCIO_TOOLS}", file=sys.stderr)
    out_dir = args.out if args.out is not None else PROTO_DIR
    if out_dir.resolve() == PROTO_DIR.resolve():
        # Generate aside and move in, so a failed run leaves the committed stubs untouched.
        with tempfile.TemporaryDirectory() as tmp:
            for path in generate(Path(tmp)):
                (PROTO_DIR / path.name).write_bytes(path.read_bytes())
                print(f"wrote {(PROTO_DIR / path.name).relative_to(REPO)}")
    else:
        for path in generate(out_dir):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
