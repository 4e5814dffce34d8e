"""Host builds of GPU kernel sources for tests: warp_emulation.h (the CUDA warp machinery
emulated with fibers), which each test's harness includes, and the compiler flag that finds it."""
from __future__ import annotations

from pathlib import Path

WARP_EMULATION_HEADER = Path(__file__).resolve().with_name("warp_emulation.h")
WARP_EMULATION_INCLUDE = f"-I{WARP_EMULATION_HEADER.parent}"
