"""Builds the CPU backend: Cython over C, one extension per algorithm.

Every `warpdp/cython_cpu/<algorithm>.pyx` becomes the extension `warpdp.cython_cpu.<algorithm>`,
compiled with its C sources `<algorithm>_*.c` and the shared `cpu_common.c`. The GPU runtime's
host-side helpers (`warpdp/kernels/runtime/*.pyx`: CUDA calls without the interpreter lock, a
counting sort) are extensions of their own, with no C sources. Every SIMD
variant is compiled into the same extension (per-file `#pragma GCC target`), and the variant
to run is chosen at run time from the CPU found, so the build itself never needs AVX-512 or
AVX2 and the result runs on any x86-64 CPU. On other machines the SIMD files compile to nothing
(WARPDP_X86_SIMD in cpu_common.h) and the extensions have the scalar variant alone.

After the extensions, the GPU kernels are compiled ahead of time where nvcc is found
(warpdp/kernels/runtime/fatbin_build.py): warpdp/kernels/fatbin/<family>.fatbin, shipped with
the package, so that a first GPU call needs no NVRTC compile. Without nvcc the build says so
once and the kernels compile with NVRTC at run time.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CPU_DIR = Path("warpdp/cython_cpu")
RUNTIME_DIR = Path("warpdp/kernels/runtime")
# -ffp-contract=off keeps a*b+c as two roundings in every variant, so they agree to the bit.
C_FLAGS = ["-O3", "-fopenmp", "-ffp-contract=off", "-fno-strict-aliasing", "-std=gnu11"]


def cpu_extension(pyx: Path) -> Extension:
    name = pyx.stem
    c_sources = sorted(str(c) for c in CPU_DIR.glob(f"{name}_*.c"))
    return Extension(
        f"warpdp.cython_cpu.{name}",
        sources=[str(pyx), str(CPU_DIR / "cpu_common.c"), *c_sources],
        # Headers too: a changed body header rebuilds the extension (`make` relies on it).
        depends=[str(CPU_DIR / "cpu_common.h"), *sorted(str(h) for h in CPU_DIR.glob(f"{name}_*.h")),
                 *sorted(str(p) for p in CPU_DIR.glob("*.pxi"))],
        include_dirs=[str(CPU_DIR), np.get_include()],
        extra_compile_args=C_FLAGS,
        extra_link_args=["-fopenmp"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


def runtime_extension(pyx: Path) -> Extension:
    return Extension(
        f"warpdp.kernels.runtime.{pyx.stem}",
        sources=[str(pyx)],
        extra_compile_args=["-O3", "-fno-strict-aliasing", "-std=gnu11"],
        libraries=["dl"],  # cuda_calls opens the CUDA driver at run time (in libc itself from glibc 2.34)
    )


class BuildExtAndFatbins(build_ext):
    """build_ext, then the fatbins beside the built package (in place: in the source tree)."""

    def run(self) -> None:
        super().run()
        root = Path(__file__).resolve().parent
        if self.inplace:
            lib, reuse = root, []
        else:  # a wheel: into build_lib, copying the source tree's fatbins when they are current
            lib, reuse = Path(self.build_lib).resolve(), ["--reuse", str(root / "warpdp" / "kernels" / "fatbin")]
        # The launchers' default kernel lists: no tuning overrides from the environment.
        env = {k: v for k, v in os.environ.items() if not k.startswith("WARPDP_") or k == "WARPDP_FATBIN_JOBS"}
        env["PYTHONPATH"] = str(lib)
        subprocess.run([sys.executable, "-m", "warpdp.kernels.runtime.fatbin_build",
                        "--out", str(lib / "warpdp" / "kernels" / "fatbin"), *reuse], env=env, check=True)


setup(
    cmdclass={"build_ext": BuildExtAndFatbins},
    ext_modules=cythonize(
        [cpu_extension(pyx) for pyx in sorted(CPU_DIR.glob("*.pyx"))]
        + [runtime_extension(pyx) for pyx in sorted(RUNTIME_DIR.glob("*.pyx"))],
        compiler_directives={"language_level": "3"},
    )
)
