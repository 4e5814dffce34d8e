"""X-drop inputs and checks the tests share."""
from __future__ import annotations

import numpy as np

import warpdp
from warpdp.plugin.xdrop import XdropPairs, pack_xdrop_pairs

from .sequences import mutate


K = 17


def make_xdrop_pairs(seed: int, n: int, length: tuple[int, int] = (0, 300)) -> warpdp.XdropPairs:
    """Random pairs sharing an exact k-mer seed: related (with errors) or unrelated flanks, some N,
    seeds at either end (empty flanks) included."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"ACGTN", dtype=np.uint8)
    p = [0.245, 0.245, 0.245, 0.245, 0.02]
    pairs = []
    for i in range(n):
        seed_bases = rng.choice(alphabet[:4], K)
        left, right = (rng.choice(alphabet, int(rng.integers(*length, endpoint=True)), p=p) for _ in range(2))
        if i % 7 == 0:
            left = left[:0]
        if i % 5 == 0:
            right = right[:0]
        if i % 3 == 0:  # unrelated
            other_left = rng.choice(alphabet, len(left), p=p)
            other_right = rng.choice(alphabet, len(right), p=p)
        else:
            other_left, other_right = mutate(left, rng, 0.15), mutate(right, rng, 0.15)
        h = np.concatenate([left, seed_bases, right])
        v = np.concatenate([other_left, seed_bases, other_right])
        pairs.append((h, len(left), v, len(other_left)))
    return warpdp.pack_xdrop_pairs(pairs)


def local_xdrop(pairs: warpdp.XdropPairs, **params) -> warpdp.XdropResults:
    return warpdp.xdrop(pairs, backend="cpu", **params)


def assert_xdrop_equal(got: warpdp.XdropResults, expected: warpdp.XdropResults) -> None:
    assert isinstance(got, warpdp.XdropResults)
    for name in ("score", "begin_h", "end_h", "begin_v", "end_v", "cells"):
        value = getattr(got, name)
        assert value.dtype == np.int64 and value.flags.c_contiguous, name
        np.testing.assert_array_equal(value, getattr(expected, name), err_msg=name)


def random_pairs(seed: int, count: int, max_flank: int, k: int = 5) -> XdropPairs:
    """Identical, unrelated, mutated and lower-case mutated pairs, N-rich ones, and seeds at the
    ends (empty flanks)."""
    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(count):
        alphabet = list("ACGTN") if i % 7 == 0 else list("ACGT")
        v = "".join(rng.choice(alphabet, int(rng.integers(k, max_flank))))
        kind = i % 4
        if kind == 0:
            h = v
        elif kind == 1:
            h = "".join(rng.choice(alphabet, int(rng.integers(k, max_flank))))
        else:
            h = "".join(c if rng.random() > 0.1 else str(rng.choice(alphabet)) for c in v)
            if rng.random() < 0.5:  # indels too, so that the best path leaves the diagonal
                cut = int(rng.integers(0, len(h)))
                h = h[:cut] + "".join(rng.choice(alphabet, int(rng.integers(0, 4)))) + h[cut + int(rng.integers(0, 4)):]
                h = h if len(h) >= k else v
            h = h.lower() if kind == 3 else h
        pv = int(rng.integers(0, len(v) - k + 1)) if i % 5 else (0 if i % 2 else len(v) - k)
        ph = min(pv, len(h) - k)
        pairs.append((h, ph, v, pv))
    return pack_xdrop_pairs(pairs)


def noisy_copies(seed: int, count: int, length: int, k: int = 17, error_rate: float = 0.15) -> XdropPairs:
    """benchmarks/xdrop.py's workload in small: H = V with substitutions, insertions and
    deletions, an exact k-mer seed in the middle."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        v = "".join(rng.choice(list("ACGT"), length))
        at = length // 2 - k // 2
        h_left, h_right = [], []
        for part, out in ((v[:at], h_left), (v[at + k:], h_right)):
            for c in part:
                u = rng.random()
                if u < error_rate / 3:
                    out.append(str(rng.choice([b for b in "ACGT" if b != c])))
                elif u < 2 * error_rate / 3:
                    continue
                elif u < error_rate:
                    out.extend([str(rng.choice(list("ACGT"))), c])
                else:
                    out.append(c)
        pairs.append(("".join(h_left) + v[at:at + k] + "".join(h_right), len(h_left), v, at))
    return pack_xdrop_pairs(pairs)


def items_of(pairs: XdropPairs, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(V flank, H flank) per work item, as xdrop.py's plan orders them (2i left, 2i+1 right)."""
    m = np.empty(2 * pairs.n_pairs, dtype=np.int64)
    n = np.empty(2 * pairs.n_pairs, dtype=np.int64)
    m[0::2], n[0::2] = pairs.v_pos, pairs.h_pos
    m[1::2] = np.diff(pairs.v_offsets) - pairs.v_pos - k
    n[1::2] = np.diff(pairs.h_offsets) - pairs.h_pos - k
    return m, n
