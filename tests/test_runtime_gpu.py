"""The GPU runtime (warpdp.kernels.runtime): launch-struct dtypes against the CUDA structs,
the module cache, the section layout, occupancy's fallback and the chunk loop. Everything but
the last test runs without a GPU; the struct layouts need nvcc (skipped where there is none)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from warpdp.kernels import pairhmm, seedext, xdrop
from warpdp.kernels.runtime import module_cache
from warpdp.kernels.runtime.launch_params import POINTER, check_struct_sizes, launch_struct, struct_rows
from warpdp.kernels.runtime.layout import sections
from warpdp.kernels.runtime.module_cache import KERNEL_DIR, ModuleSpec, load_module
from warpdp.kernels.runtime.occupancy import fallback_blocks_per_sm
from warpdp.kernels.runtime.runner import ChunkRunner, Runners
from warpdp.plugin.backend import gpu_status
from warpdp.plugin.cancel import JobCancelled

# Every launch struct: (family, C++ name, the launcher's dtype, NVRTC options the source needs).
STRUCTS = [
    ("pairhmm", "warpdp_pairhmm::Params", pairhmm.PARAMS, pairhmm.NVRTC_OPTIONS),
    ("pairhmm", "warpdp_pairhmm::PlanParams", pairhmm.PLAN_PARAMS, pairhmm.NVRTC_OPTIONS),
    ("xdrop", "warpdp_xdrop::Params", xdrop.PARAMS, xdrop.NVRTC_OPTIONS),
    ("seedext", "warpdp_seedext::Params", seedext.PARAMS, seedext.NVRTC_OPTIONS),
]
MODULES = [pairhmm.MODULE, xdrop.module_spec(xdrop.WIDE_CONFIGS), seedext.MODULE]


def _nvcc() -> tuple[str, list[str]] | None:
    """nvcc as scripts/check_cuda_sources.sh finds it, with the include flags it needs."""
    if os.environ.get("NVCC"):
        return os.environ["NVCC"], []
    if shutil.which("nvcc"):
        return "nvcc", []
    pip_cuda = Path(sysconfig.get_paths()["purelib"]) / "nvidia" / "cu13"
    if (pip_cuda / "bin" / "nvcc").exists():
        return str(pip_cuda / "bin" / "nvcc"), ["-I", str(pip_cuda / "include")]
    return None


@pytest.fixture(scope="module")
def compiled_layouts(tmp_path_factory) -> dict[str, dict[str, int]]:
    """Per struct: sizeof and offsetof of each of the dtype's fields, as nvcc lays them out
    (a host program that includes the family's .cu and prints them; it needs no GPU)."""
    found = _nvcc()
    if found is None:
        pytest.skip("nvcc not found (see scripts/check_cuda_sources.sh)")
    nvcc, include = found
    layouts: dict[str, dict[str, int]] = {}
    for family in sorted({family for family, *_ in STRUCTS}):
        mine = [(name, dtype) for f, name, dtype, _ in STRUCTS if f == family]
        options = next(options for f, _, _, options in STRUCTS if f == family)
        lines = [f'#include "{KERNEL_DIR / (family + ".cu")}"', "#include <cstddef>", "#include <cstdio>",
                 "int main() {"]
        for name, dtype in mine:
            lines.append(f'    printf("{name} sizeof %zu\\n", sizeof({name}));')
            for field in dtype.names:
                lines.append(f'    printf("{name} {field} %zu\\n", offsetof({name}, {field}));')
        lines += ["    return 0;", "}"]
        work = tmp_path_factory.mktemp(family)
        (work / "layout.cu").write_text("\n".join(lines) + "\n")
        defines = [o for o in options if o.startswith("-D") or o.startswith("-std")]
        subprocess.run([nvcc, *defines, "-arch=sm_90", *include, "-o", str(work / "layout"), str(work / "layout.cu")],
                       check=True, capture_output=True, timeout=300)
        out = subprocess.run([str(work / "layout")], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            struct, field, value = line.split()
            layouts.setdefault(struct, {})[field] = int(value)
    return layouts


@pytest.mark.parametrize("family,name,dtype,options", STRUCTS, ids=[s[1] for s in STRUCTS])
def test_launch_struct_dtypes_match_the_cuda_structs(compiled_layouts, family, name, dtype, options) -> None:
    layout = compiled_layouts[name]
    assert dtype.itemsize == layout["sizeof"]
    assert {field: dtype.fields[field][1] for field in dtype.names} == \
        {field: offset for field, offset in layout.items() if field != "sizeof"}


@pytest.mark.parametrize("spec", MODULES, ids=lambda spec: spec.family)
def test_every_family_reports_its_struct_sizes(spec: ModuleSpec) -> None:
    """Each .cu defines <family>_struct_sizes, writing as many sizes as the launcher has structs."""
    source = spec.source_path.read_text()
    assert f'extern "C" __global__ void {spec.sizes_kernel}(unsigned long long *out)' in source
    body = source[source.index(spec.sizes_kernel):].split("}", 1)[0]
    assert [f"out[{i}] = sizeof({name})" in body for i, (name, _) in enumerate(spec.structs)] == \
        [True] * len(spec.structs)


def test_launch_struct_follows_c_alignment() -> None:
    dtype = launch_struct([("p", POINTER), ("n", np.int32), ("x", np.float64), ("m", np.int32)])
    assert [dtype.fields[name][1] for name in dtype.names] == [0, 8, 16, 24]
    assert dtype.itemsize == 32  # padded to the largest alignment
    assert launch_struct([("bounds", np.int64, 4), ("n", np.int32)]).itemsize == 40


def test_struct_rows_write_the_blob_at_their_stride() -> None:
    dtype = launch_struct([("a", POINTER), ("n", np.int32), ("m", np.int32)])
    blob = np.zeros(64 + 3 * 32, np.uint8)
    rows = struct_rows(blob, 64, dtype, 3, stride=32)
    rows["a"] = 1 << 40
    rows[1]["n"] = -5
    rows["m"][[0, 2]] = (7, 9)
    words = blob[64:].view(np.int64).reshape(3, 4)
    assert (words[:, 0] == 1 << 40).all() and (words[:, 2:] == 0).all()  # the bytes past each row stay
    ints = blob[64:].view(np.int32).reshape(3, 8)
    assert ints[:, 2].tolist() == [0, -5, 0] and ints[:, 3].tolist() == [7, 0, 9]
    with pytest.raises(ValueError, match="stride"):
        struct_rows(blob, 0, dtype, 2, stride=8)
    with pytest.raises(ValueError, match="past the end"):
        struct_rows(blob, 64, dtype, 4, stride=32)


def test_struct_size_check_names_what_differs() -> None:
    structs = {"Params": xdrop.PARAMS}
    check_struct_sizes("xdrop", structs, [xdrop.PARAMS.itemsize])
    with pytest.raises(RuntimeError, match="Params: the device says 128 bytes, the launcher writes 136"):
        check_struct_sizes("xdrop", structs, [128])
    with pytest.raises(RuntimeError, match="2 sizes for 1 structs"):
        check_struct_sizes("xdrop", structs, [136, 8])


class FakeCompiler:
    """Counts compilations; reports the sizes it is given. (Runs with no prebuilt fatbin: see
    tests/test_fatbin.py for the fatbin route.)"""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.compiled: list[tuple[str, ...]] = []

    def compile(self, source: str, options: tuple[str, ...], name_expressions: tuple[str, ...]) -> object:
        self.compiled.append(options)
        return object()

    def struct_sizes(self, module: object, kernel: str, count: int) -> list[int]:
        assert kernel == "xdrop_struct_sizes" and count == 1
        return self.sizes


@pytest.fixture
def no_fatbins(monkeypatch, tmp_path) -> None:
    """No prebuilt fatbin: every module is compiled (by the fake compiler)."""
    from warpdp.kernels.runtime import prebuilt

    monkeypatch.setattr(prebuilt, "PREBUILT_DIR", tmp_path)


def test_module_cache_compiles_once_per_device_and_spec(no_fatbins) -> None:
    module_cache.clear()
    try:
        compiler = FakeCompiler([xdrop.PARAMS.itemsize])
        spec = xdrop.module_spec(xdrop.WIDE_CONFIGS)
        first = load_module(spec, 0, compiler)
        assert load_module(spec, 0, compiler) is first
        assert load_module(xdrop.module_spec(xdrop.WIDE_CONFIGS), 0, compiler) is first  # equal specs share
        assert load_module(spec, 1, compiler) is not first  # another device
        other = ModuleSpec("xdrop", ("-std=c++17", "-DX=1"), spec.name_expressions, spec.structs)
        load_module(other, 0, compiler)
        assert len(compiler.compiled) == 3
    finally:
        module_cache.clear()


def test_module_cache_refuses_a_struct_out_of_step(no_fatbins) -> None:
    module_cache.clear()
    try:
        compiler = FakeCompiler([xdrop.PARAMS.itemsize + 8])
        spec = xdrop.module_spec(xdrop.WIDE_CONFIGS)
        with pytest.raises(RuntimeError, match="out of step"):
            load_module(spec, 0, compiler)
        compiler.sizes = [xdrop.PARAMS.itemsize]
        load_module(spec, 0, compiler)  # nothing was kept from the refused load
        assert len(compiler.compiled) == 2
    finally:
        module_cache.clear()


def test_sections_align_and_honour_the_minimum() -> None:
    at, end = sections((("a", 10), ("b", 0), ("c", 300)))
    assert at == {"a": 0, "b": 256, "c": 256} and end == 768
    at, end = sections((("a", 10), ("b", 0)), start=512, min_size=1)
    assert at == {"a": 512, "b": 768} and end == 1024


def test_occupancy_fallback_takes_the_tightest_limit() -> None:
    assert fallback_blocks_per_sm(num_regs=64, threads=128, shared_bytes=0) == 8       # registers
    assert fallback_blocks_per_sm(num_regs=1, threads=128, shared_bytes=0) == 16       # threads
    assert fallback_blocks_per_sm(num_regs=32, threads=32, shared_bytes=100 << 10) == 2  # shared memory
    assert fallback_blocks_per_sm(num_regs=255, threads=1024, shared_bytes=0) == 1     # at least one


class FakeEvent:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def synchronize(self) -> None:
        self.log.append(f"wait {self.name}")


def _chunk_runner(log: list[str], slots: int = 2) -> ChunkRunner:
    return ChunkRunner(slots, lambda n: (None, np.zeros(n, np.uint8)), lambda n: ("device", n))


def test_chunk_loop_plans_before_taking_a_slot_and_collects_in_order() -> None:
    log: list[str] = []
    runner = _chunk_runner(log)

    def plan(chunk: int) -> int:
        log.append(f"plan {chunk}")
        return chunk

    def enqueue(chunk: int, index: int, slot) -> object:
        runner.grow(slot, 100, 10, 1000)
        log.append(f"enqueue {chunk} in {index}")
        slot.done = FakeEvent(log, str(chunk))
        return lambda slot: chunk * 10

    assert runner.run_chunks(range(4), plan, enqueue) == [0, 10, 20, 30]
    # Chunk 2 reuses chunk 0's slot: it is planned before that slot's chunk is waited for.
    assert log[:7] == ["plan 0", "enqueue 0 in 0", "plan 1", "enqueue 1 in 1", "plan 2", "wait 0", "enqueue 2 in 0"]
    assert runner.ring.slots[0].pinned_in.nbytes >= 100 and runner.ring.slots[0].device[1] >= 1000


def test_chunk_loop_stops_at_a_cancel_check_after_finishing_what_it_enqueued() -> None:
    log: list[str] = []
    runner = _chunk_runner(log, slots=3)
    checks = iter([False, False, True])

    def enqueue(chunk: int, index: int, slot) -> object:
        runner.grow(slot, 1, 1, 1)
        slot.done = FakeEvent(log, str(chunk))
        return lambda slot: log.append(f"copy {chunk}")

    with pytest.raises(JobCancelled):
        runner.run_chunks(range(5), lambda chunk: chunk, enqueue, lambda: next(checks))
    assert log == ["wait 0", "copy 0", "wait 1", "copy 1"]


def test_chunk_loop_collects_after_an_error() -> None:
    log: list[str] = []
    runner = _chunk_runner(log)

    def enqueue(chunk: int, index: int, slot) -> object:
        if chunk == 1:
            raise ValueError("bad chunk")
        runner.grow(slot, 1, 1, 1)
        slot.done = FakeEvent(log, str(chunk))
        return lambda slot: log.append(f"copy {chunk}")

    with pytest.raises(ValueError, match="bad chunk"):
        runner.run_chunks(range(3), lambda chunk: chunk, enqueue)
    assert log == ["wait 0", "copy 0"]


def test_runners_are_made_once_per_key() -> None:
    made: list[tuple] = []
    runners: Runners[tuple] = Runners(lambda *key: made.append(key) or key)
    assert runners.get(0, "a") == (0, "a")
    runners.get(0, "a")
    runners.get(1, "a")
    assert made == [(0, "a"), (1, "a")]


_GPU_OK, _GPU_WHY = gpu_status("xdrop")


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU_OK, reason=f"no usable GPU: {_GPU_WHY}")
@pytest.mark.parametrize("spec", MODULES, ids=lambda spec: spec.family)
def test_compiled_modules_report_the_launchers_struct_sizes(spec: ModuleSpec) -> None:
    import cupy

    module = load_module(spec, cupy.cuda.runtime.getDevice())  # raises when a size differs
    sizes = module_cache.CupyCompiler().struct_sizes(module, spec.sizes_kernel, len(spec.structs))
    assert sizes == [dtype.itemsize for _, dtype in spec.structs]


def test_set_row_writes_every_field_by_name() -> None:
    from warpdp.kernels.runtime.launch_params import set_row

    dtype = launch_struct([("a", POINTER), ("x", np.float64), ("n", np.int32), ("bounds", np.int64, 2)])
    rows = struct_rows(np.zeros(2 * dtype.itemsize, np.uint8), 0, dtype, 2)
    set_row(rows, 1, {"n": -3, "a": 1 << 50, "x": 0.5, "bounds": [7, 8]})
    assert rows[1]["a"] == 1 << 50 and rows[1]["x"] == 0.5 and rows[1]["n"] == -3
    assert rows[1]["bounds"].tolist() == [7, 8] and rows[0]["a"] == 0
    with pytest.raises(KeyError):
        set_row(rows, 0, {"a": 1, "x": 0.5, "n": 1})  # bounds missing
    with pytest.raises(KeyError):
        set_row(rows, 0, {"a": 1, "x": 0.5, "n": 1, "bound": [1, 2]})  # a misspelt field
