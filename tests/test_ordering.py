"""The counting sort the GPU launchers plan chunks with, against numpy's stable argsort."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from warpdp.kernels.runtime.ordering import KEY_VALUES, stable_order_u16


def order_and_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.full(len(keys), -1, np.int32)
    counts = np.full(KEY_VALUES, -1, np.int64)
    stable_order_u16(keys, order, counts)
    return order, counts


@settings(max_examples=200, deadline=None)
@given(arrays(np.uint16, st.integers(0, 3000), elements=st.one_of(st.integers(0, 20), st.integers(0, 65535))))
def test_matches_numpy_stable_argsort(keys: np.ndarray) -> None:
    order, counts = order_and_counts(keys)
    assert np.array_equal(order, np.argsort(keys, kind="stable"))
    assert np.array_equal(counts, np.bincount(keys, minlength=KEY_VALUES))


def test_large_input_with_many_ties() -> None:
    keys = np.random.default_rng(7).integers(0, 300, 262_144).astype(np.uint16)
    keys[::5] = 65535  # the largest key too
    order, counts = order_and_counts(keys)
    assert np.array_equal(order, np.argsort(keys, kind="stable"))
    assert counts[65535] == len(keys[::5]) and counts.sum() == len(keys)


def test_empty_input() -> None:
    order, counts = order_and_counts(np.zeros(0, np.uint16))
    assert len(order) == 0 and not counts.any()


def test_bad_arguments_are_named() -> None:
    keys = np.zeros(4, np.uint16)
    with pytest.raises(ValueError, match="order has 3 entries for 4 keys"):
        stable_order_u16(keys, np.empty(3, np.int32), np.empty(KEY_VALUES, np.int64))
    with pytest.raises(ValueError, match="counts must have 65536 entries"):
        stable_order_u16(keys, np.empty(4, np.int32), np.empty(10, np.int64))
    with pytest.raises(ValueError):  # keys of another type: the buffer's dtype is refused
        stable_order_u16(np.zeros(4, np.int32), np.empty(4, np.int32), np.empty(KEY_VALUES, np.int64))
