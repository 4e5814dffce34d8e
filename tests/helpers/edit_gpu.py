"""What the edit family's GPU tests share: random pairs, and the GPU kernels' host build.

The host build compiles ``warpdp/kernels/edit.cu`` as C++ (g++), each CUDA thread of a launch
run one after another (the kernels are one thread per alignment and share nothing but the
atomic overflow counters) and the 32 lanes of the warp kernel's warps as fibers that meet at
each shuffle or warp barrier, so the launcher's plans, uploads, launches and decoding run on the
CPU end to end: :class:`HostRunner` is a drop-in for the launcher's device runner.
"""
from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from warpdp.kernels import edit as gpu_edit
from warpdp.plugin.edit import EditPairs, pack_edit_pairs

from .emulation import WARP_EMULATION_HEADER, WARP_EMULATION_INCLUDE
from .sequences import mutate

CU_SOURCE = Path(gpu_edit.__file__).with_name("edit.cu")
KERNEL_IDS = {name: i for i, name in enumerate(gpu_edit.MODULE.name_expressions)}

HARNESS = r"""
#include "warp_emulation.h"

#include EDIT_CU
using namespace warpdp_edit;
static const Params *fiber_params = nullptr;
static void fiber_main()
{
    exact_warp_kernel(fiber_params);
    fiber_exit();
}

extern "C" unsigned long long params_size() { return sizeof(Params); }
extern "C" void launch(int kernel, const Params *p, int grid, int block)
{
    gridDim.x = grid;
    blockDim.x = block;
    for (int b = 0; b < grid; b++) {
        blockIdx.x = b;
        if (kernel == 4) {
            fiber_params = p;
            for (int warp = 0; warp < block / 32; warp++)
                run_fibers(32, fiber_main, 1 << 18, warp * 32);
            continue;
        }
        for (int t = 0; t < block; t++) {
            threadIdx.x = t;
            switch (kernel) {
            case 0: windowed_kernel<8>(p); break;
            case 1: windowed_kernel<24>(p); break;
            case 2: windowed_kernel<64>(p); break;
            default: exact_kernel(p); break;
            }
        }
    }
}
"""


def host_library() -> ctypes.CDLL:
    """edit.cu built for the host (cached by source), or skip when there is no g++."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is needed to build the GPU kernels for the host")
    assert list(KERNEL_IDS) == [gpu_edit.window_kernel_name(d) for d in gpu_edit.WINDOW_TIERS] + [
        gpu_edit.EXACT_KERNEL, gpu_edit.EXACT_WARP_KERNEL, gpu_edit.COMPACT_KERNEL], \
        "the harness's switch follows the launcher's kernel list (compact_cigars: the device runner's copy back only)"
    source = CU_SOURCE.read_text() + WARP_EMULATION_HEADER.read_text() + HARNESS
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    library = Path(tempfile.gettempdir()) / f"warpdp-edit-host-{digest}.so"
    if not library.exists():
        work = Path(tempfile.mkdtemp(prefix="warpdp-edit-host-"))
        (work / "harness.cpp").write_text(HARNESS)
        built = work / "edit.so"
        subprocess.run([compiler, "-std=c++17", "-O2", "-shared", "-fPIC", WARP_EMULATION_INCLUDE,
                        f'-DEDIT_CU="{CU_SOURCE}"',
                        "-o", str(built), str(work / "harness.cpp")], check=True)
        built.replace(library)
    lib = ctypes.CDLL(str(library))
    lib.params_size.restype = ctypes.c_ulonglong
    lib.launch.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    assert lib.params_size() == gpu_edit.PARAMS.itemsize, "struct Params and the launcher's dtype differ"
    return lib


class HostRunner:
    """The launcher's device runner, its kernels run by the host build. Device memory is a
    numpy buffer poisoned with 0xA5 before each chunk (outputs the kernels fail to write show)."""

    def __init__(self) -> None:
        self.lib = host_library()
        self.launches: list[str] = []
        self.counters: list[list[int]] = []  # each chunk's counts after its launches

    def run(self, pairs: EditPairs, params: Any, skip: np.ndarray, chunks: Any, cancelled: Any = None) -> list[Any]:
        parts = []
        for chunk in chunks:
            plan = gpu_edit.plan_chunk(pairs, params, skip, chunk)
            memory = np.full(plan.device_bytes, 0xA5, dtype=np.uint8)
            base = memory.ctypes.data
            plan.fill(memory[:plan.blob_bytes], pairs, base)
            for launch in plan.launches:
                self.launches.append(launch.kernel)
                self.lib.launch(KERNEL_IDS[launch.kernel], plan.params_address(base, launch), launch.grid,
                                gpu_edit.THREADS)
            self.counters.append(memory[plan.at["counts"]:plan.at["counts"] + 4 * len(plan.counts)]
                                 .view(np.int32).tolist())
            parts.append((plan.start, plan.decode(memory[plan.at["out"]:plan.at["out"] + plan.out_bytes])))
        return parts


def random_pairs(seed: int, n: int, lengths: tuple[int, int], rate: tuple[float, float],
                 indel_rich: bool = False) -> EditPairs:
    """Targets = queries with errors (edits per base in ``rate``), plus a few flanking bases."""
    rng = np.random.default_rng(seed)
    acgt = np.frombuffer(b"ACGT", dtype=np.uint8)
    items = []
    for _ in range(n):
        q = rng.choice(acgt, int(rng.integers(*lengths, endpoint=True)))
        t = mutate(q, rng, float(rng.uniform(*rate)))
        if indel_rich:  # PacBio-like: more indels on top
            t = mutate(t, rng, float(rng.uniform(*rate)) / 2)
        flank = rng.choice(acgt, int(rng.integers(0, 8)))
        items.append((q, np.concatenate([flank, t, rng.choice(acgt, int(rng.integers(0, 8)))])))
    return pack_edit_pairs(items)


def edge_pairs() -> EditPairs:
    """Length-1 and other corner cases, any bytes where the exact method allows them."""
    return pack_edit_pairs([("A", "A"), ("A", "C"), ("A", "CCCA"), ("G", "ACGT"), ("ACGT", "A"), ("T", "T" * 70),
                            ("ACGT" * 20, "C"), ("A" * 64, "A" * 64), ("A" * 65, "A" * 63), ("C" * 130, "G" * 2),
                            ("acgt", "ACGT"), ("GATTACA", "GCATGCT"), ("N", "NNN")])
