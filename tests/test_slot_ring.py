"""The GPU launchers' chunk slots taken in turn across calls (runs without a GPU: fake events)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from warpdp.kernels.runtime.slots import SlotRing


class FakeEvent:
    """A `done` event that is complete `delay` seconds after it is recorded."""

    def __init__(self, delay: float = 0.0, fail: bool = False) -> None:
        self.ready_at = time.monotonic() + delay
        self.fail = fail
        self.waits = 0

    def synchronize(self) -> None:
        self.waits += 1
        if self.fail:
            raise RuntimeError("device error")
        time.sleep(max(0.0, self.ready_at - time.monotonic()))


def enqueue(ring: SlotRing, results: list, value: int, delay: float = 0.0, fail: bool = False):
    index, slot = ring.take()
    slot.done = FakeEvent(delay, fail)
    slot.pinned_out = value  # what the "GPU" wrote

    def copy_out(done_slot) -> int:
        results.append(done_slot.pinned_out)
        return done_slot.pinned_out * 10

    return index, ring.hold(index, copy_out)


def test_a_later_call_finishes_the_chunk_in_the_slot_it_takes() -> None:
    ring = SlotRing()
    a_out, b_out, c_out = [], [], []
    a = [enqueue(ring, a_out, 1)]
    b = [enqueue(ring, b_out, 2)]
    assert a_out == [] and b_out == []  # nothing waited for yet
    c = [enqueue(ring, c_out, 3)]       # takes slot 0: a's chunk is copied out now
    assert a_out == [1] and a[0][0] == c[0][0]
    assert ring.collect(a) == [10] and a_out == [1]  # copied once, result kept
    assert ring.collect(b) == [20] and ring.collect(c) == [30]
    assert (a_out, b_out, c_out) == ([1], [2], [3])
    assert all(slot.pending is None for slot in ring.slots)


def test_a_call_with_more_chunks_than_slots_finishes_its_own() -> None:
    ring = SlotRing()
    out: list = []
    mine = [enqueue(ring, out, k) for k in range(5)]
    assert out == [0, 1, 2]  # chunks 0-2 were finished when chunks 2-4 took their slots
    assert ring.collect(mine) == [0, 10, 20, 30, 40] and out == [0, 1, 2, 3, 4]


def test_a_failed_wait_frees_the_slot() -> None:
    ring = SlotRing()
    out: list = []
    bad = [enqueue(ring, out, 1, fail=True)]
    with pytest.raises(RuntimeError, match="device error"):
        ring.collect(bad)
    assert ring.slots[bad[0][0]].pending is None
    good = [enqueue(ring, out, 2), enqueue(ring, out, 3)]
    assert ring.collect(good) == [20, 30] and out == [2, 3]


def test_concurrent_calls_each_get_their_own_results() -> None:
    ring = SlotRing()
    lock = threading.Lock()  # the launcher's lock: one call at a time takes and enqueues
    rng = np.random.default_rng(5)
    plans = [[int(v) for v in rng.integers(0, 1000, int(rng.integers(1, 6)))] for _ in range(24)]
    outputs: list[list] = [[] for _ in plans]
    returned: list = [None] * len(plans)

    def call(k: int) -> None:
        mine = []
        try:
            with lock:
                for value in plans[k]:
                    mine.append(enqueue(ring, outputs[k], value, delay=0.002 * (value % 3)))
        finally:
            returned[k] = ring.collect(mine)

    threads = [threading.Thread(target=call, args=(k,)) for k in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k, values in enumerate(plans):
        assert sorted(outputs[k]) == sorted(values)  # each chunk copied out once, to its own call
        assert returned[k] == [10 * v for v in values]
