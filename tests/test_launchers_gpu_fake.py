"""The three GPU launchers' host side end to end on the CPU, over a logging stand-in for CuPy
(tests/fake_cupy.py): modules load and are checked, every launch points into its chunk's
parameter rows, each chunk is collected, and a cancel check stops the loop between chunks."""
from __future__ import annotations

import numpy as np
import pytest

from fake_cupy import install_fake_cupy
from warpdp.kernels import align, edit, pairhmm, seedext, xdrop
from warpdp.kernels.runtime import module_cache
from warpdp.plugin.cancel import JobCancelled
from warpdp.plugin.pairhmm import PairHmmRead, pack_batches
from warpdp.plugin.seedext import SeedExtParams, pack_seed_pairs
from warpdp.plugin.xdrop import XdropResults, pack_xdrop_pairs

SIZES = {f"{spec.family}_struct_sizes": [dtype.itemsize for _, dtype in spec.structs]
         for spec in (pairhmm.MODULE, xdrop.module_spec(xdrop.WIDE_CONFIGS), seedext.MODULE, align.MODULE,
                      edit.MODULE)}


def _forget_runners() -> None:
    module_cache.clear()
    for family in (pairhmm, xdrop, seedext, align, edit):
        family._RUNNERS.clear()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The fake CuPy in place of the real one (whose runners and modules are set aside)."""
    _forget_runners()
    yield install_fake_cupy(monkeypatch, SIZES)
    _forget_runners()


def _seq(rng: np.random.Generator, n: int) -> str:
    return "".join(rng.choice(list("ACGT"), n))


def _pairhmm_batches(rng: np.random.Generator, n: int):
    return pack_batches([([PairHmmRead(_seq(rng, int(length)), bytes(rng.integers(10, 40, int(length)).tolist()))
                           for length in rng.integers(10, 300, int(rng.integers(1, 5)))],
                          [_seq(rng, int(rng.integers(20, 300))) for _ in range(int(rng.integers(1, 4)))])
                         for _ in range(n)])


def test_pairhmm_chunks_go_through_the_recorded_calls(fake: list[tuple]) -> None:
    rng = np.random.default_rng(1)
    batches = _pairhmm_batches(rng, 30)
    out = np.full(int(np.sum(np.diff(batches.batch_reads) * np.diff(batches.batch_haps))), np.nan)
    chunks = pairhmm.split_work(batches, 1 << 30, 100_000)
    assert len(chunks) > 3
    pairhmm.forward(batches, out, chunk_cells=100_000)
    assert not np.isnan(out).any()  # every chunk was collected (zeros: nothing computed)
    assert sum(call[0] == "to_host" for call in fake) == len(chunks)
    # The float bins' launches, then one double pass per chunk over the pairs they queued.
    double = pairhmm._runner().device.functions[pairhmm.DOUBLE_CONFIG]
    assert sum(call[0] == "launch" and call[1] == double for call in fake) == len(chunks)


def test_pairhmm_stops_between_chunks_when_cancelled(fake: list[tuple]) -> None:
    batches = _pairhmm_batches(np.random.default_rng(2), 30)
    out = np.zeros(int(np.sum(np.diff(batches.batch_reads) * np.diff(batches.batch_haps))))
    checks: list[int] = []
    with pytest.raises(JobCancelled):
        pairhmm.forward(batches, out, chunk_cells=100_000, cancelled=lambda: checks.append(1) or len(checks) > 2)
    assert len(checks) == 3 and sum(call[0] == "to_host" for call in fake) == 2


def test_xdrop_chunks_launch_every_item_once(fake: list[tuple], monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    items = []
    for i in range(200):
        v = _seq(rng, int(rng.integers(5, 3000)))
        h = v if i % 3 == 0 else _seq(rng, int(rng.integers(5, 3000)))
        items.append((h, int(rng.integers(0, len(h) - 4)), v, int(rng.integers(0, len(v) - 4))))
    pairs = pack_xdrop_pairs(items)
    real_split = xdrop.split_chunks
    monkeypatch.setattr(xdrop, "split_chunks", lambda h, v, *limits: real_split(h, v, chunk_pairs=50))
    results = XdropResults(*[np.zeros(pairs.n_pairs, np.int64) for _ in range(6)])
    xdrop.extend(pairs, results, k=5, x=2000, match=1, mismatch=-1, gap=-1, best=False)
    assert [call[0] for call in fake].count("compile") == 1
    assert sum(call[0] == "memcpy" and call[1] == 2 for call in fake) == 4  # one copy back per chunk
    assert (results.score == 5).all()  # the seed alone: both (zero) extensions collected


def test_seedext_chunks_are_planned_ahead_and_collected(fake: list[tuple], monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    pairs = pack_seed_pairs([(_seq(rng, int(q)), _seq(rng, int(t)), int(h)) for q, t, h in
                             zip(rng.integers(1, 500, 2000), rng.integers(1, 600, 2000), rng.choice([0, 40], 2000))])
    monkeypatch.setattr(seedext, "_CHUNK_PAIRS", 500)
    chunks = seedext.split_chunks(pairs.query_offsets, pairs.target_offsets, 500, seedext._CHUNK_BYTES)
    table = np.full((pairs.n_pairs, 6), -1, np.int32)
    seedext.extend(pairs, SeedExtParams(), table)
    assert (table == 0).all()
    assert sum(call[0] == "memcpy" and call[1] == 2 for call in fake) == len(chunks)
    checks: list[int] = []
    with pytest.raises(JobCancelled):
        seedext.extend(pairs, SeedExtParams(), table, cancelled=lambda: checks.append(1) or len(checks) > 1)
    assert len(checks) == 2
