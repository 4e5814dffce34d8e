"""The GPU launchers' threaded host copy (runs without a GPU)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warpdp.kernels import host_copy


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 5000), min_size=0, max_size=6), wide=st.booleans(),
       share=st.integers(1, 4096))
def test_every_byte_is_copied_whatever_the_split(sizes: list[int], wide: bool, share: int) -> None:
    rng = np.random.default_rng(len(sizes) * 7919 + share)
    dtype = np.int64 if wide else np.uint8
    sources = [rng.integers(0, 100, n).astype(dtype) for n in sizes]
    targets = [np.full_like(src, -1 if wide else 255) for src in sources]
    with pytest.MonkeyPatch.context() as patch:
        # Tiny thresholds force the threaded path with many shares on small arrays.
        patch.setattr(host_copy, "PARALLEL_FROM_BYTES", 0)
        patch.setattr(host_copy, "SHARE_BYTES", share)
        patch.setattr(host_copy, "_THREADS", 4)
        host_copy.copy_arrays(list(zip(targets, sources)))
    for src, dst in zip(sources, targets):
        np.testing.assert_array_equal(dst, src)


def test_large_copy_uses_the_default_thresholds() -> None:
    src = np.random.default_rng(1).integers(0, 255, 5 << 20, dtype=np.uint8)
    dst = np.zeros_like(src)
    host_copy.copy_arrays([(dst[:len(src) // 2], src[:len(src) // 2]), (dst[len(src) // 2:], src[len(src) // 2:])])
    np.testing.assert_array_equal(dst, src)


def test_a_lower_threshold_spreads_a_smaller_copy_over_threads(monkeypatch) -> None:
    threads: set[str] = set()
    real_run = host_copy._run

    def run(share):
        import threading
        threads.add(threading.current_thread().name)
        real_run(share)

    monkeypatch.setattr(host_copy, "_run", run)
    monkeypatch.setattr(host_copy, "_THREADS", 4)
    src = np.random.default_rng(2).integers(0, 255, 4 << 20, dtype=np.uint8)  # under the default threshold
    dst = np.zeros_like(src)
    host_copy.copy_arrays([(dst, src)])
    assert len(threads) == 1
    dst[:] = 0
    host_copy.copy_arrays([(dst, src)], parallel_from_bytes=1 << 20)
    np.testing.assert_array_equal(dst, src)
    assert len(threads) > 1
