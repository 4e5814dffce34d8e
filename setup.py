"""Builds the CPU backend: Cython over C, one extension per algorithm.

Every SIMD variant is compiled into the same extension (per-file `#pragma GCC target`),
and the variant to run is chosen at run time from the CPU found, so the build itself
never needs AVX-512 or AVX2 and the result runs on any x86-64 CPU.
"""
import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

CPU_DIR = "warpdp/cython_cpu"
# -ffp-contract=off keeps a*b+c as two roundings in every variant, so they agree to the bit.
C_FLAGS = ["-O3", "-fopenmp", "-ffp-contract=off", "-fno-strict-aliasing", "-std=gnu11"]


def cpu_extension(name: str, c_sources: list[str]) -> Extension:
    return Extension(
        f"warpdp.cython_cpu.{name}",
        sources=[f"{CPU_DIR}/{name}.pyx", f"{CPU_DIR}/cpu_dispatch.c"]
        + [f"{CPU_DIR}/{src}" for src in c_sources],
        include_dirs=[CPU_DIR, np.get_include()],
        extra_compile_args=C_FLAGS,
        extra_link_args=["-fopenmp"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


setup(
    ext_modules=cythonize(
        [
            cpu_extension(
                "pairhmm",
                ["pairhmm_tables.c", "pairhmm_scalar.c", "pairhmm_avx2.c", "pairhmm_avx512.c",
                 "pairhmm_driver.c"],
            ),
        ],
        compiler_directives={"language_level": "3"},
    )
)
