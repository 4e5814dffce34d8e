"""Plain-Python references for gapped X-drop seed extension, written for clarity, not speed.

`extend_pair` follows the definition in docs/semantics.md ("X-drop seed extension"): SeqAn 2's
_extendSeedGappedXDropOneDirection, restated on whole anti-diagonals kept in dicts keyed by
column, with Python integers (no overflow) and -inf for dropped cells. `full_matrix_scores`
is an independent NumPy cross-check for the case where X never drops a cell: then the
"longest" extension is the global alignment of the two flanks and the "best" one the best
prefix alignment.
"""
from __future__ import annotations

import numpy as np

UNDEFINED = float("-inf")


def _same(a: int, b: int) -> bool:
    # Bases compare case-insensitively; N equals N (SeqAn's Simple score on Dna5).
    return chr(a).upper() == chr(b).upper()


def extend_direction(q: bytes, t: bytes, *, match: int, mismatch: int, gap: int, x: int,
                     report: str = "longest") -> tuple[int, int, int]:
    """One direction: q (V flank) and t (H flank), both walking away from the seed.

    Returns (score, bases of q used, bases of t used)."""
    m, n = len(q), len(t)
    if m == 0 or n == 0:
        return 0, 0, 0
    # diagonals[d] = (lo, hi, {column: value}) over the window [lo, hi] of anti-diagonal d.
    first = gap if -gap <= x else UNDEFINED
    diagonals = [(0, 0, {0: 0}), (0, 1, {0: first, 1: first})]

    def value(d: int, c: int) -> float:
        lo, hi, cells = diagonals[d]
        assert lo <= c <= hi, "read outside a window"
        return cells[c]

    best = 0
    best_cell = (0, 0, 0)  # (score, column, row): the first cell reaching `best`
    min_col, max_col = 1, 2
    d = 1
    while min_col < max_col:
        d += 1
        lo, hi = min_col - 1, max_col
        threshold = best - x
        cells: dict[int, float] = {}
        edge = d * gap
        cells[lo] = edge if edge > threshold and lo == 0 else UNDEFINED  # first column
        cells[hi] = edge if edge > threshold and hi == d else UNDEFINED  # first row
        diagonal_best = UNDEFINED
        for c in range(lo + 1, hi):
            r = d - c
            score = match if _same(q[c - 1], t[r - 1]) else mismatch
            v = max(max(value(d - 1, c - 1), value(d - 1, c)) + gap, value(d - 2, c - 1) + score)
            if v < threshold:
                cells[c] = UNDEFINED
            else:
                cells[c] = v
                if v > diagonal_best:
                    diagonal_best = v
                    if v > best_cell[0]:
                        best_cell = (int(v), c, r)
        diagonals.append((lo, hi, cells))
        best = max(best, diagonal_best)
        # Next window: drop columns whose successors would all be undefined, stay in the matrix.
        previous = diagonals[d - 1][2]
        live_left = [c for c in range(lo + 1, hi + 1) if cells[c] != UNDEFINED or previous[c - 1] != UNDEFINED]
        live_right = [c for c in range(lo, hi) if cells[c] != UNDEFINED or previous[c] != UNDEFINED]
        min_col = live_left[0] if live_left else hi + 1
        max_col = live_right[-1] + 2 if live_right else lo + 1
        min_col = max(min_col, d + 1 - n)
        max_col = min(max_col, m + 1)

    if report == "best":
        return best_cell
    # SeqAn's longest extension.
    lo3, hi3, last = diagonals[d]
    lo2, hi2, before = diagonals[d - 1]
    col = hi3 - 1
    score, row = last[col], d - col
    if score == UNDEFINED:
        if before[hi2 - 1] != UNDEFINED:
            col = hi2 - 1
            score, row = before[col], d - 1 - col
        elif hi2 - lo2 + 1 > 2 and before[hi2 - 2] != UNDEFINED:
            col = hi2 - 2
            score, row = before[col], d - 1 - col
    if score == UNDEFINED:
        lo1, hi1, earlier = diagonals[d - 2]
        for c in range(lo1, hi1 + 1):
            if earlier[c] > score:
                score, col, row = earlier[c], c, d - 2 - c
    if score == UNDEFINED:  # SeqAn finds nothing: the seed stays, scored 0 (see warpdp.plugin.xdrop)
        return 0, 0, 0
    return int(score), col, row


def extend_pair(seq_h: bytes, pos_h: int, seq_v: bytes, pos_v: int, *, k: int, x: int, match: int = 1,
                mismatch: int = -1, gap: int = -1, report: str = "longest") -> tuple[int, int, int, int, int]:
    """(score, begin_h, end_h, begin_v, end_v) for one seed, both directions."""
    scores = dict(match=match, mismatch=mismatch, gap=gap, x=x, report=report)
    left, left_v, left_h = extend_direction(seq_v[:pos_v][::-1], seq_h[:pos_h][::-1], **scores)
    right, right_v, right_h = extend_direction(seq_v[pos_v + k:], seq_h[pos_h + k:], **scores)
    return (left + right + k * match, pos_h - left_h, pos_h + k + right_h, pos_v - left_v, pos_v + k + right_v)


def full_matrix_scores(q: bytes, t: bytes, *, match: int, mismatch: int, gap: int) -> np.ndarray:
    """The whole (len(q)+1) x (len(t)+1) matrix of prefix alignment scores (no X-drop)."""
    qa = np.frombuffer(bytes(q).upper(), dtype=np.uint8)
    ta = np.frombuffer(bytes(t).upper(), dtype=np.uint8)
    s = np.zeros((len(qa) + 1, len(ta) + 1), dtype=object)
    s[:, 0] = [i * gap for i in range(len(qa) + 1)]
    s[0, :] = [j * gap for j in range(len(ta) + 1)]
    for i in range(1, len(qa) + 1):
        for j in range(1, len(ta) + 1):
            sub = match if qa[i - 1] == ta[j - 1] else mismatch
            s[i, j] = max(s[i - 1, j - 1] + sub, s[i - 1, j] + gap, s[i, j - 1] + gap)
    return s
