"""GPU backend of seed extension: BWA's reference outputs, and the CPU backend's answers exactly.

Every test needs a usable CUDA device (CuPy and a GPU); elsewhere the module is skipped with the
reason gpu_status() gives. (tests/test_seedext_gpu_emulation.py runs the kernel's logic on the
CPU.)
"""
from __future__ import annotations

import numpy as np
import pytest

import warpdp
from helpers.data import shared_file
from helpers.seedext import BROKEN_PAIR_CASES, broken_pairs
from warpdp.plugin.backend import gpu_status

_GPU_OK, _GPU_WHY = gpu_status("seedext")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _GPU_OK, reason=f"GPU seed-extension backend not usable here: {_GPU_WHY}"),
]

ALT = dict(a=2, b=5, o_del=5, e_del=2, o_ins=7, e_ins=1, w=30, end_bonus=0, zdrop=50)


def assert_same_as_cpu(pairs: warpdp.SeedExtPairs, **params) -> None:
    gpu = warpdp.seed_extend(pairs, backend="gpu", **params).table
    cpu = warpdp.seed_extend(pairs, backend="cpu", **params).table
    bad = np.flatnonzero((gpu != cpu).any(axis=1))
    assert len(bad) == 0, f"{len(bad)} pairs differ, first {bad[0]}: gpu {gpu[bad[0]]}, cpu {cpu[bad[0]]}"


@pytest.mark.parametrize(("name", "params"), [("bwamem-like-500.ksw_extend2.out", {}),
                                              ("bwamem-like-500.alt.ksw_extend2.out", ALT)])
def test_reference_data(name, params) -> None:
    pairs = warpdp.read_seedext_tsv(shared_file("seedext", "bwamem-like-500.tsv"))
    got = warpdp.seed_extend(pairs, backend="gpu", **params).table
    np.testing.assert_array_equal(got, np.loadtxt(shared_file("seedext", name), dtype=np.int32))


def random_pairs(rng: np.random.Generator, n: int, max_query: int, max_extra: int) -> warpdp.SeedExtPairs:
    """Reads from the target's start with errors and indels, unrelated pairs, N and other bytes,
    empty queries and targets, and h0 from 0 to beyond 16-bit scores."""
    acgt = np.frombuffer(b"ACGT", dtype=np.uint8)
    others = np.frombuffer(b"NnRacgt-", dtype=np.uint8)
    items = []
    for _ in range(n):
        qlen = int(rng.integers(0, max_query + 1))
        target = acgt[rng.integers(0, 4, qlen + int(rng.integers(0, max_extra + 1)))]
        if rng.random() < 0.8:
            query = np.resize(target, qlen).copy() if len(target) else acgt[rng.integers(0, 4, qlen)]
            flips = rng.random(qlen) < rng.choice([0.0, 0.02, 0.08, 0.3])
            query[flips] = acgt[rng.integers(0, 4, int(flips.sum()))]
            if qlen > 10 and rng.random() < 0.3:
                cut = int(rng.integers(1, qlen - 5))
                query = np.concatenate([query[:cut], query[cut + int(rng.integers(1, 4)):]])
        else:
            query = acgt[rng.integers(0, 4, qlen)]
        for seq in (query, target):
            mask = rng.random(len(seq)) < 0.01
            seq[mask] = others[rng.integers(0, len(others), int(mask.sum()))]
        items.append((query.tobytes(), target.tobytes(), int(rng.choice([0, 1, 19, 40, 60, 500, 40000]))))
    return warpdp.pack_seed_pairs(items)


@pytest.mark.parametrize("params", [{}, ALT, dict(w=3, zdrop=5), dict(w=2**31 - 1, zdrop=0, end_bonus=50),
                                    dict(a=5, b=1, o_del=0, e_del=3, o_ins=20, e_ins=2)])
def test_random_pairs_every_bin(params) -> None:
    rng = np.random.default_rng(len(params))
    assert_same_as_cpu(random_pairs(rng, 3000, 600, 200), **params)


def test_long_pairs() -> None:
    """Query 1,000 and target 2,000 (the issue's minimum), and longer."""
    rng = np.random.default_rng(3)
    assert_same_as_cpu(random_pairs(rng, 200, 1000, 1000))
    assert_same_as_cpu(random_pairs(rng, 20, 5000, 3000), w=2**31 - 1)


def test_global_scratch_configuration(monkeypatch) -> None:
    """Queries whose state does not fit in shared memory run with global scratch."""
    from warpdp.kernels import seedext as gpu_module

    monkeypatch.setattr(gpu_module, "MAX_SHARED_BYTES", 0)
    assert_same_as_cpu(random_pairs(np.random.default_rng(4), 500, 400, 100))


def test_many_chunks(monkeypatch) -> None:
    from warpdp.kernels import seedext as gpu_module

    monkeypatch.setattr(gpu_module, "_CHUNK_PAIRS", 37)
    monkeypatch.setattr(gpu_module, "_CHUNK_BYTES", 5000)
    assert_same_as_cpu(random_pairs(np.random.default_rng(5), 700, 150, 80))


@pytest.mark.parametrize(("kind", "message"), BROKEN_PAIR_CASES)
def test_bad_pair_in_a_later_chunk(monkeypatch, kind, message) -> None:
    """The launcher checks each chunk's pairs before launching it: a bad pair in a later chunk
    raises the whole-job check's error, and the next call still works."""
    from warpdp.kernels import seedext as gpu_module

    monkeypatch.setattr(gpu_module, "_CHUNK_PAIRS", 16)
    with pytest.raises(ValueError, match=message):
        warpdp.seed_extend(broken_pairs(100, 70, kind), backend="gpu")
    assert_same_as_cpu(random_pairs(np.random.default_rng(6), 300, 120, 60))


def test_bwa_like_workload_and_auto() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from seedext import bwa_like_pairs, long_pairs

    assert_same_as_cpu(bwa_like_pairs(20000, seed=9))
    assert_same_as_cpu(long_pairs(200, seed=9))
    pairs = bwa_like_pairs(1000, seed=10)
    np.testing.assert_array_equal(warpdp.seed_extend(pairs).table,
                                  warpdp.seed_extend(pairs, backend="cpu").table)


def test_empty_input() -> None:
    assert warpdp.seed_extend(warpdp.pack_seed_pairs([]), backend="gpu").table.shape == (0, 6)


def test_lane_kernel_limits() -> None:
    """Both sides of the lane kernel's limits: query length 256 / 257, best reachable score
    h0 + a * qlen of 16383 / 16384 (its 14-bit fields), and match score a of 15 / 16."""
    rng = np.random.default_rng(11)
    acgt = np.frombuffer(b"ACGT", dtype=np.uint8)
    items = []
    for qlen in (200, 255, 256, 257, 300):
        target = acgt[rng.integers(0, 4, qlen + 40)]
        query = target[:qlen].copy()
        query[rng.random(qlen) < 0.03] = acgt[0]
        for h0 in (30, 16383 - qlen, 16384 - qlen):
            items.append((query.tobytes(), target.tobytes(), h0))
    assert_same_as_cpu(warpdp.pack_seed_pairs(items))
    assert_same_as_cpu(warpdp.pack_seed_pairs(items), a=2, zdrop=0)
    short = warpdp.pack_seed_pairs([item for item in items if len(item[0]) <= 256 and item[2] == 30])
    for a in (15, 16):
        assert_same_as_cpu(short, a=a, b=a + 2)
