"""Packaging (issue #30): the core needs NumPy only and the rest comes in named extras, whose
absence is reported with the pip command that installs them; one version; py.typed."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import warpdp

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_core_needs_numpy_only_and_extras_name_the_rest() -> None:
    project = PYPROJECT["project"]
    assert requirement_names(project["dependencies"]) == {"numpy"}
    extras = project["optional-dependencies"]
    assert requirement_names(extras["server"]) == {"grpcio", "grpcio-health-checking", "grpcio-reflection",
                                                   "protobuf", "prometheus-client"}
    assert requirement_names(extras["bam"]) == {"pysam"}
    assert {name for name in requirement_names(extras["gpu"])} == {"cupy-cuda13x"}
    assert "warpdp[server,bam]" in extras["dev"] and "pytest" in requirement_names(extras["dev"])


def test_one_version() -> None:
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert "version" not in PYPROJECT["project"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "warpdp.__version__"}
    # The Java shim's artifact carries the same version.
    pom = (REPO / "java_shim" / "pom.xml").read_text()
    assert re.search(r"<artifactId>warpdp-gatk</artifactId>\s*<version>([^<]+)</version>", pom).group(1) \
        == warpdp.__version__


def test_py_typed_is_shipped() -> None:
    assert (REPO / "warpdp" / "py.typed").exists()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["warpdp"]


def without(modules: str, *args: str) -> subprocess.CompletedProcess:
    """`warpdp ARGS` in a process where ``modules`` (comma separated) cannot be imported."""
    code = ("import sys\nfor m in sys.argv[1].split(','):\n    sys.modules[m] = None\n"
            "from warpdp.cli import main\nsys.exit(main(sys.argv[2:]))")
    return subprocess.run([sys.executable, "-c", code, modules, *args], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)


def test_scoring_needs_no_extra() -> None:
    result = without("grpc,google.protobuf,pysam,cupy,tqdm", "pairhmm", str(REPO / "examples" / "example.in"),
                     "--backend", "cpu", "--progress", "never")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.split()) > 0 and result.stderr == ""


@pytest.mark.parametrize("args, extra", [
    (["serve", "--backend", "cpu"], "server"),
    (["pairhmm", str(REPO / "examples" / "example.in"), "--server", "127.0.0.1:1"], "server"),
])
def test_a_missing_server_extra_says_how_to_install_it(args, extra) -> None:
    result = without("grpc", *args)
    assert result.returncode == 2
    assert f"pip install 'warpdp[{extra}]'" in result.stderr and "Traceback" not in result.stderr


def test_a_missing_bam_extra_says_how_to_install_it(tmp_path) -> None:
    reads = tmp_path / "reads.bam"
    reads.write_bytes(b"")
    fasta = tmp_path / "haps.fa"
    fasta.write_text(">h\nACGT\n")
    result = without("pysam", "pairhmm", "--reads", str(reads), "--region", "chr1:1-10", "--haplotypes", str(fasta))
    assert result.returncode == 2
    assert "pip install 'warpdp[bam]'" in result.stderr


def test_the_gpu_hint_names_the_extra() -> None:
    code = "import sys; sys.modules['cupy'] = None\nfrom warpdp.plugin.core.backend import gpu_status\n" \
           "print(gpu_status('pairhmm')[1])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert "pip install 'warpdp[gpu]'" in result.stdout


def test_the_grpc_package_without_grpc_raises_the_hint() -> None:
    code = ("import sys; sys.modules['grpc'] = None\nimport warpdp.grpc\n"
            "try:\n    warpdp.grpc.Client\nexcept ImportError as error:\n    print(type(error).__name__, error)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert result.stdout.startswith("MissingExtraError") and "pip install 'warpdp[server]'" in result.stdout
