"""Non-x86 builds (issue #30): the AVX2/AVX-512 variants are guarded so that a machine without
x86 intrinsics builds the scalar variant alone. Checked here by compiling each family's C
sources as such a build does (-DWARPDP_NO_X86_SIMD takes the non-x86 branch of cpu_common.h):
they link with no undefined symbol, define no AVX variant, and report only the scalar one."""
from __future__ import annotations

import ctypes
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

CPU_DIR = Path(__file__).resolve().parents[1] / "warpdp" / "cython_cpu"
FAMILIES = sorted(p.stem for p in CPU_DIR.glob("*.pyx"))
CC = shutil.which("cc") or shutil.which("gcc")

pytestmark = pytest.mark.skipif(CC is None, reason="needs a C compiler (cc)")


def build(tmp_path: Path, family: str, *flags: str) -> Path:
    library = tmp_path / f"{family}{''.join(flags)}.so"
    sources = [CPU_DIR / "cpu_common.c", *sorted(CPU_DIR.glob(f"{family}_*.c"))]
    subprocess.run([CC, "-shared", "-fPIC", "-O0", "-fopenmp", "-std=gnu11", *flags, "-Wl,--no-undefined",
                    "-o", str(library), *map(str, sources), "-lm"], check=True, capture_output=True, timeout=300)
    return library


def defined_symbols(library: Path) -> list[str]:
    listing = subprocess.run(["nm", "-D", "--defined-only", str(library)], check=True, capture_output=True,
                             text=True).stdout
    return [line.split()[-1] for line in listing.splitlines()]


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
@pytest.mark.parametrize("family", FAMILIES)
def test_a_build_without_x86_simd_is_scalar_only(tmp_path, family) -> None:
    library = build(tmp_path, family, "-DWARPDP_NO_X86_SIMD")
    assert not [name for name in defined_symbols(library) if "avx" in name]
    loaded = ctypes.CDLL(str(library))
    assert [loaded.warpdp_cpu_supports(isa) for isa in (0, 1, 2)] == [1, 0, 0]
    assert loaded.warpdp_cpu_best_isa() == 0


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or shutil.which("nm") is None,
                    reason="the AVX variants are built on x86-64 only")
def test_the_x86_build_has_its_variants(tmp_path) -> None:
    # The control: the same build without the macro, on x86, defines the AVX variants.
    library = build(tmp_path, "pairhmm")
    assert {"pairhmm_forward_float_avx2", "pairhmm_forward_float_avx512"} <= set(defined_symbols(library))
