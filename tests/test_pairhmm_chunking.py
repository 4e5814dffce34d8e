"""How the GPU launcher cuts a Pair-HMM input into chunks (pure numpy: runs without a GPU)."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.pairhmm import random_batches
from warpdp.kernels import pairhmm as gpu_module


def chunk_cells(batches, chunk) -> int:
    ro, bh, ho = batches.read_offsets, batches.batch_haps, batches.hap_offsets
    if chunk.r_lo is None:
        sub = batches.select(chunk.b0, chunk.b1)
        return int(sub.n_cells)
    hap_bytes = int(ho[bh[chunk.b0 + 1]] - ho[bh[chunk.b0]])
    return int(ro[chunk.r_hi] - ro[chunk.r_lo]) * hap_bytes


@pytest.mark.parametrize("limit", [50_000, 400_000, 10**12])
def test_chunks_cover_the_input_in_order_and_grow(limit: int) -> None:
    rng = np.random.default_rng(limit % 1000)
    batches = random_batches(rng, n_batches=60, reads=(1, 12), haps=(1, 5), read_len=(5, 300),
                             hap_len=(5, 400), related=0.6)
    chunks = gpu_module.split_work(batches, 1 << 30, limit)
    out = 0
    for chunk in chunks:
        assert chunk.out_lo == out
        out += chunk.n_out
    assert out == batches.n_pairs
    cells = [chunk_cells(batches, c) for c in chunks]
    assert sum(cells) == batches.n_cells
    first = max(1, limit // gpu_module._FIRST_CHUNK_DIVISOR)
    for k, (chunk, n) in enumerate(zip(chunks, cells)):
        allowed = min(limit, int(first * gpu_module._CHUNK_GROWTH ** k))
        # A chunk stays under its limit unless it is a single batch or read run that alone exceeds it.
        single = chunk.b1 - chunk.b0 == 1 and (chunk.r_lo is None or chunk.r_hi - chunk.r_lo == 1)
        assert n <= allowed or single
    if limit < batches.n_cells:
        assert len(chunks) > 1
        assert cells[0] <= first or chunks[0].b1 - chunks[0].b0 == 1


@pytest.mark.parametrize("limit", [400_000, 4_000_000])
def test_chunks_are_all_full_size_unless_the_first_is_smaller(limit: int) -> None:
    # Page-locked input (no host copy to overlap) is split without a smaller first chunk.
    rng = np.random.default_rng(limit % 997)
    batches = random_batches(rng, n_batches=60, reads=(1, 12), haps=(1, 5), read_len=(5, 300),
                             hap_len=(5, 400), related=0.6)
    growing = gpu_module.split_work(batches, 1 << 30, limit)
    full = gpu_module.split_work(batches, 1 << 30, limit, first_smaller=False)
    out = 0
    for chunk in full:
        assert chunk.out_lo == out and chunk.n_out > 0
        out += chunk.n_out
    assert out == batches.n_pairs
    cells = [chunk_cells(batches, c) for c in full]
    assert sum(cells) == batches.n_cells
    for chunk, n in zip(full, cells):
        single = chunk.b1 - chunk.b0 == 1 and (chunk.r_lo is None or chunk.r_hi - chunk.r_lo == 1)
        assert n <= limit or single
    assert len(full) < len(growing)  # the growing pieces start small: more of them


class _Device:
    """Answers page_locked from a set of owners, and counts the questions."""

    def __init__(self, locked_owners: list) -> None:
        self.locked = {id(owner) for owner in locked_owners}
        self.asked = 0

    def page_locked(self, array: np.ndarray) -> bool:
        self.asked += 1
        return id(array.base if array.base is not None else array) in self.locked


def test_page_locked_fields_asks_once_per_owner_and_never_for_bytes() -> None:
    batches = random_batches(np.random.default_rng(5), n_batches=4, reads=(1, 3), haps=(1, 2), read_len=(5, 50),
                             hap_len=(5, 60), related=0.5)
    names = ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp", "hap_bases")
    # All six in one buffer (as the gRPC server reads a shared file): one question.
    joined = np.concatenate([getattr(batches, name) for name in names])
    starts = np.cumsum([0] + [len(getattr(batches, name)) for name in names])
    one_buffer = {name: joined[a:b] for name, a, b in zip(names, starts[:-1], starts[1:])}
    device = _Device([joined])
    got = gpu_module._page_locked_fields(batches.__class__(**{**vars(batches), **one_buffer}), device)
    assert got == set(names) and device.asked == 1
    # Fields over bytes (a decoded message's): no question at all.
    from_bytes = {name: np.frombuffer(getattr(batches, name).tobytes(), dtype=np.uint8) for name in names}
    device = _Device([])
    assert gpu_module._page_locked_fields(batches.__class__(**{**vars(batches), **from_bytes}), device) == set()
    assert device.asked == 0
    # Arrays of their own: one question each.
    own = {name: getattr(batches, name).copy() for name in names}
    device = _Device([own["hap_bases"]])
    assert gpu_module._page_locked_fields(batches.__class__(**{**vars(batches), **own}), device) == {"hap_bases"}
    assert device.asked == 6


def test_reads_per_float_bin_counts_each_read_in_the_first_bin_that_takes_its_length() -> None:
    bounds = gpu_module._FLOAT_BOUNDS
    rng = np.random.default_rng(7)
    for top in (2, 40, 200, 600, 5_000_000):
        read_lens = rng.integers(1, top, size=int(rng.integers(1, 3000)))
        # Every bound itself, one past it, and the longest lengths land where the bins say.
        read_lens = np.concatenate([read_lens, bounds, bounds + 1, [2**31 - 1]])
        expected = np.zeros(len(bounds) + 1, dtype=np.int64)
        for length in read_lens:
            expected[next((b for b, bound in enumerate(bounds) if length <= bound), len(bounds))] += 1
        assert gpu_module._reads_per_float_bin(read_lens).tolist() == expected.tolist()


def test_c_api_launcher_has_the_python_launchers_configurations() -> None:
    """libwarpdp's GPU launcher (clients/cpp/src/gpu/pairhmm*.cu) keeps its own table of the
    kernel configurations and bins: it must be pairhmm_plan.py's (same order, bounds and warps),
    and instantiate each of them."""
    import re
    from pathlib import Path

    from warpdp.kernels import pairhmm_plan as plan

    gpu_dir = Path(__file__).resolve().parents[1] / "clients" / "cpp" / "src" / "gpu"
    header = (gpu_dir / "pairhmm_plan.h").read_text()
    rows = r"\{(true|false), (\d+), (\d+), (true|false), (\d+), (\d+)\}"
    floats = re.search(r"FLOAT_BINS\[N_FLOAT_BINS\] = \{(.*?)\};", header, re.S).group(1)
    double = re.search(r"DOUBLE_CONFIG = (\{.*?\});", header).group(1)

    def config(row: tuple[str, ...]) -> plan.KernelConfig:
        real = "double" if row[0] == "true" else "float"
        return plan.KernelConfig(real, int(row[1]), int(row[2]), row[3] == "true", int(row[4]), int(row[5]))

    assert tuple(config(r) for r in re.findall(rows, floats)) == plan.FLOAT_BINS
    assert config(re.fullmatch(rows, double).groups()) == plan.DOUBLE_CONFIG
    launcher = (gpu_dir / "pairhmm.cu").read_text()
    instantiated = re.findall(r"forward_kernel<(\w+), (\d+), (\d+), (\w+)>", launcher)
    assert instantiated == [(c.real, str(c.lanes), str(c.rows), "true" if c.multi else "false")
                            for c in plan.KERNEL_CONFIGS]
