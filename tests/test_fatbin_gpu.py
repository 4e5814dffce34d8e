"""On a device: a first GPU call of each family loads its kernels from the prebuilt fatbin with no
NVRTC compile, and gives exactly the results of the NVRTC-compiled module (WARPDP_NO_FATBIN=1).
Each route runs in a new process (benchmarks/startup.py --first-gpu-call, which also times it)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from warpdp.kernels.runtime import fatbin_build, prebuilt
from warpdp.plugin.backend import gpu_status

REPO = Path(__file__).resolve().parents[1]
FAMILIES = [spec.family for spec in prebuilt.default_specs()]
_GPU_OK, _GPU_WHY = gpu_status("pairhmm")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _GPU_OK, reason=f"no usable GPU: {_GPU_WHY}")]


def first_call(family: str, fatbin: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(prebuilt.NO_FATBIN_ENV, None)
    if not fatbin:
        env[prebuilt.NO_FATBIN_ENV] = "1"
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "startup.py"), "--first-gpu-call", family],
                         capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("family", FAMILIES)
def test_first_call_loads_the_fatbin_without_nvrtc_and_matches_nvrtc(family: str) -> None:
    missing = fatbin_build.missing_tool()
    if missing:
        pytest.skip(f"{missing} not found, so the package was built without fatbins (NVRTC is the designed route)")
    spec = next(s for s in prebuilt.default_specs() if s.family == family)
    found = prebuilt.find_prebuilt(spec, spec.source_path.read_text())
    assert not isinstance(found, str), f"{found} (run python3 setup.py build_ext --inplace)"
    from_fatbin = first_call(family, fatbin=True)
    compiled = first_call(family, fatbin=False)
    assert set(from_fatbin["routes"].values()) == {"fatbin"} and from_fatbin["nvrtc_modules"] == 0, from_fatbin
    assert set(compiled["routes"].values()) == {"nvrtc"} and compiled["nvrtc_modules"] >= 1, compiled
    assert from_fatbin["digest"] == compiled["digest"]
