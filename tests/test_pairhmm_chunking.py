"""How the GPU launcher cuts a Pair-HMM input into chunks (pure numpy: runs without a GPU)."""
from __future__ import annotations

import numpy as np
import pytest

from test_pairhmm_gpu import random_batches
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
