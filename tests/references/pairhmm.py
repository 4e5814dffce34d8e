"""An independent float64 NumPy implementation of the Pair-HMM forward algorithm.

Written from docs/semantics.md's definition (GKL's numerics) without looking at the C kernels:
anti-diagonal sweeps (every cell of a diagonal depends only on the two before it),
probabilities in double, scaled by 2^1020 like GKL's double path.
"""
from __future__ import annotations

import numpy as np

_JACOBIAN = np.log10(1.0 + 10.0 ** (-np.arange(80001) * 1e-4))
_SCALE = 2.0**1020


def phred_to_prob(q: np.ndarray) -> np.ndarray:
    return 10.0 ** (-(q.astype(np.float64)) / 10.0)


def match_to_match(ins: np.ndarray, dels: np.ndarray) -> np.ndarray:
    """1 - (p(ins) + p(del)) as GKL computes it: a log10-sum through its Jacobian table."""
    hi = np.maximum(ins, dels).astype(np.float64)
    lo = np.minimum(ins, dels).astype(np.float64)
    big, small = -0.1 * lo, -0.1 * hi
    diff = big - small
    index = np.minimum(np.floor(diff * 1e4 + 0.5).astype(np.int64), len(_JACOBIAN) - 1)
    log10_sum = np.where(diff >= 8.0, big, big + _JACOBIAN[index])
    with np.errstate(divide="ignore"):  # log1p(-1) = -inf gives a probability of 0, as in GKL
        return 10.0 ** (np.log1p(-np.minimum(1.0, 10.0**log10_sum)) * 0.434294)


def _is_acgt(codes: np.ndarray) -> np.ndarray:
    return np.isin(codes, np.frombuffer(b"ACGT", dtype=np.uint8))


def forward_log10(read: bytes, hap: bytes, quals, ins, dels, gcp) -> float:
    """log10 P(read | hap) for raw phred qualities (masked & 127 as GKL does)."""
    r = np.frombuffer(bytes(read), dtype=np.uint8)
    h = np.frombuffer(bytes(hap), dtype=np.uint8)
    q, i, d, c = (np.asarray(bytearray(x), dtype=np.int64) & 127 for x in (quals, ins, dels, gcp))
    R, H = len(r), len(h)
    p_q = phred_to_prob(q)
    mm = match_to_match(i, d)
    gapm = 1.0 - phred_to_prob(c)
    mx, my, gap_ext = phred_to_prob(i), phred_to_prob(d), phred_to_prob(c)
    # Emission for every cell: 1 - e on a match (or N on either side), e / 3 otherwise.
    match = (r[:, None] == h[None, :]) | ~_is_acgt(r)[:, None] | ~_is_acgt(h)[None, :]
    emission = np.where(match, (1.0 - p_q)[:, None], (p_q / 3.0)[:, None])

    M = np.zeros((R + 1, H + 1))
    X = np.zeros((R + 1, H + 1))
    Y = np.zeros((R + 1, H + 1))
    Y[0, :] = _SCALE / H
    for diag in range(2, R + H + 1):
        i_lo, i_hi = max(1, diag - H), min(R, diag - 1)
        if i_lo > i_hi:
            continue
        rows = np.arange(i_lo, i_hi + 1)
        cols = diag - rows
        t = rows - 1  # transition index of each row
        M[rows, cols] = emission[t, cols - 1] * (
            (M[rows - 1, cols - 1] * mm[t] + X[rows - 1, cols - 1] * gapm[t]) + Y[rows - 1, cols - 1] * gapm[t])
        X[rows, cols] = M[rows - 1, cols] * mx[t] + X[rows - 1, cols] * gap_ext[t]
        Y[rows, cols] = M[rows, cols - 1] * my[t] + Y[rows, cols - 1] * gap_ext[t]
    total = M[R, 1:].sum() + X[R, 1:].sum()
    with np.errstate(divide="ignore"):
        return float(np.log10(total) - np.log10(_SCALE))
