"""GPU launchers stop between chunks once their cancel check says so (warpdp.plugin.cancel),
and a check that never fires changes no result. Each input is cut into many small chunks."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import warpdp
from warpdp.plugin.backend import gpu_status
from warpdp.plugin.cancel import JobCancelled

_GPU_OK, _GPU_WHY = gpu_status("pairhmm")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _GPU_OK, reason=f"GPU backend not usable here: {_GPU_WHY}")]

RNG_SEED = 23


class CountingCheck:
    """A cancel check that says "cancelled" from its fire_at-th call on (never when None)."""

    def __init__(self, fire_at: int | None) -> None:
        self.fire_at = fire_at
        self.calls = 0

    def __call__(self) -> bool:
        self.calls += 1
        return self.fire_at is not None and self.calls >= self.fire_at


def random_bases(rng: np.random.Generator, n: int) -> str:
    return "".join(rng.choice(list("ACGT"), size=n))


def pairhmm_input() -> warpdp.PairHmmBatches:
    rng = np.random.default_rng(RNG_SEED)
    jobs = []
    for _ in range(40):
        haps = [random_bases(rng, int(rng.integers(80, 160))) for _ in range(3)]
        reads = [warpdp.PairHmmRead(h[5:5 + 60], "I" * 60) for h in haps for _ in range(4)]
        jobs.append((reads, haps))
    return warpdp.pack_batches(jobs)


def xdrop_input() -> warpdp.XdropPairs:
    rng = np.random.default_rng(RNG_SEED)
    pairs = []
    for _ in range(300):
        seq = random_bases(rng, 400)
        other = "".join(b if rng.random() > 0.1 else "ACGT"[int(rng.integers(4))] for b in seq)
        pairs.append((seq, 190, other[:190] + seq[190:207] + other[207:], 190))
    return warpdp.pack_xdrop_pairs(pairs)


def seedext_input() -> warpdp.SeedExtPairs:
    rng = np.random.default_rng(RNG_SEED)
    pairs = []
    for _ in range(3000):
        target = random_bases(rng, int(rng.integers(50, 200)))
        query = "".join(b if rng.random() > 0.05 else "ACGT"[int(rng.integers(4))] for b in target[:100])
        pairs.append((query, target, 20))
    return warpdp.pack_seed_pairs(pairs)


def run_pairhmm(cancelled: CountingCheck, devices: list[int] | None) -> np.ndarray:
    from warpdp.kernels import pairhmm as gpu_pairhmm

    batches = pairhmm_input()
    out = np.full(batches.n_pairs, np.nan)
    gpu_pairhmm.forward(batches, out, chunk_cells=200_000, devices=devices, cancelled=cancelled)
    return out


def run_xdrop(cancelled: CountingCheck, devices: list[int] | None, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    from warpdp.kernels import xdrop as gpu_xdrop

    monkeypatch.setattr(gpu_xdrop, "_CHUNK_PAIRS", 16)
    result = warpdp.xdrop(xdrop_input(), k=17, x=20, backend="gpu", devices=devices, cancelled=cancelled)
    return np.stack([result.score, result.begin_h, result.end_h, result.begin_v, result.end_v])


def run_seedext(cancelled: CountingCheck, devices: list[int] | None, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    from warpdp.kernels import seedext as gpu_seedext

    monkeypatch.setattr(gpu_seedext, "_CHUNK_PAIRS", 256)
    return warpdp.seed_extend_with(seedext_input(), warpdp.SeedExtParams(), backend="gpu", devices=devices,
                                   cancelled=cancelled).table


FAMILIES: dict[str, Callable[[CountingCheck, list[int] | None, pytest.MonkeyPatch], np.ndarray]] = {
    "pairhmm": lambda check, devices, _monkeypatch: run_pairhmm(check, devices),
    "xdrop": run_xdrop,
    "seedext": run_seedext,
}


def _gpu_count() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("devices", [[0], None], ids=["one GPU", "every GPU"])
def test_a_cancelled_job_stops_between_chunks(family: str, devices: list[int] | None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    never = CountingCheck(None)
    whole = FAMILIES[family](never, devices, monkeypatch)
    assert never.calls >= 4, f"the input was meant to make several chunks, got {never.calls} checks"

    unchecked = FAMILIES[family](None, devices, monkeypatch)  # type: ignore[arg-type]
    np.testing.assert_array_equal(whole, unchecked)

    fires = CountingCheck(2)
    with pytest.raises(JobCancelled):
        FAMILIES[family](fires, devices, monkeypatch)
    # Stopped at the first check that fired: no chunk after it was enqueued. Over several GPUs
    # each device's thread checks before its own next chunk, and stops too.
    n_devices = 1 if devices else _gpu_count()
    assert 2 <= fires.calls <= 2 + n_devices - 1
