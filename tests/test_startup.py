"""Lazy imports (issue #28): `import warpdp` loads neither gRPC, CuPy nor pysam, and
`warpdp --help`/`--version` load none of the kernels' dependencies. Checked by the modules a
fresh interpreter has loaded, not by a clock (benchmarks/startup.py times it)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REPORT = "import sys; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"


def loaded_after(code: str) -> set[str]:
    result = subprocess.run([sys.executable, "-c", f"{code}\n{REPORT}"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def test_import_warpdp_loads_no_grpc_cupy_or_pysam() -> None:
    loaded = loaded_after("import warpdp")
    assert "warpdp" in loaded
    assert not loaded & {"grpc", "cupy", "pysam", "google"}


def test_the_api_still_loads_on_first_use() -> None:
    loaded = loaded_after("import warpdp; assert callable(warpdp.pairhmm); assert 'xdrop' in warpdp.__all__\n"
                          "from warpdp import *; assert callable(seed_extend)")
    assert "numpy" in loaded and not loaded & {"grpc", "cupy", "pysam"}


@pytest.mark.parametrize("option", ["--help", "--version"])
def test_help_and_version_load_no_kernel_dependency(option) -> None:
    code = ("import sys\nfrom warpdp.cli import main\n"
            f"try:\n    main([{option!r}])\nexcept SystemExit as exit:\n    assert exit.code == 0\n")
    loaded = loaded_after(code)
    assert not loaded & {"numpy", "grpc", "google", "cupy", "pysam", "tqdm"}


def test_help_still_lists_every_subcommand() -> None:
    from warpdp import registry

    result = subprocess.run([sys.executable, "-m", "warpdp", "--help"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=120)
    names = [family.name for family in registry.families() if family.add_cli is not None]
    for name in [*names, "serve", "info"]:
        assert f"    {name} " in result.stdout, name
