"""Plain-Python reference for BWA's ``ksw_extend2`` (seed extension), for the tests.

Written from the definition of the routine, cell by cell, with none of the kernels' tricks:
one pair at a time, Python integers (no overflow, no saturation), no SIMD layout. It keeps
BWA's one-row state (``eh_h[j]`` = H of the row above at column j-1, ``eh_e[j]`` = E of this
row at column j) because ksw_extend2's answers depend on exactly which cells of that state
are rewritten when the band moves (cells left behind keep their old values).
"""
from __future__ import annotations

from typing import NamedTuple

ACGT_CODES = {ord(c): i for i, c in enumerate("ACGT")} | {ord(c): i for i, c in enumerate("acgt")}


class Extension(NamedTuple):
    score: int
    qle: int
    tle: int
    gtle: int
    gscore: int
    max_off: int


def base_codes(seq: bytes | str) -> list[int]:
    """A/C/G/T (either case) -> 0..3, anything else -> 4 (N)."""
    raw = seq.encode("ascii") if isinstance(seq, str) else bytes(seq)
    return [ACGT_CODES.get(c, 4) for c in raw]


def pair_score(x: int, y: int, a: int, b: int) -> int:
    """BWA's 5x5 matrix: a on the diagonal, -b off it, -1 when either base is N."""
    if x == 4 or y == 4:
        return -1
    return a if x == y else -b


def narrowed_band(qlen: int, a: int, o_del: int, e_del: int, o_ins: int, e_ins: int,
                  w: int, end_bonus: int) -> int:
    """BWA caps w by the longest insertion and deletion that could still pay off."""
    best = max(a, 0)  # the largest matrix entry (0 at least, as BWA starts its max at 0)
    for o, e in ((o_ins, e_ins), (o_del, e_del)):
        longest = int((qlen * best + end_bonus - o) / e + 1.0)  # C's (int) truncates toward 0
        w = min(w, max(longest, 1))
    return w


def ksw_extend2(query: bytes | str, target: bytes | str, h0: int, *, a: int = 1, b: int = 4,
                o_del: int = 6, e_del: int = 1, o_ins: int = 6, e_ins: int = 1, w: int = 100,
                end_bonus: int = 5, zdrop: int = 100) -> Extension:
    q, t = base_codes(query), base_codes(target)
    qlen, tlen = len(q), len(t)
    oe_del, oe_ins = o_del + e_del, o_ins + e_ins
    # Row "-1": H(-1, -1) = h0, then an insertion run along the query. One spare entry so an
    # empty query has somewhere to put its first insertion cell, as BWA's allocation does.
    eh_h = [0] * (qlen + 2)
    eh_e = [0] * (qlen + 2)
    eh_h[0] = h0
    for j in range(1, qlen + 1):
        eh_h[j] = max(h0 - o_ins - e_ins * j, 0)
    w = narrowed_band(qlen, a, o_del, e_del, o_ins, e_ins, w, end_bonus)

    best, best_i, best_j = h0, -1, -1
    gscore, gscore_i, max_off = -1, -1, 0
    beg, end = 0, qlen
    for i in range(tlen):
        beg = max(beg, i - w)
        end = min(end, i + w + 1, qlen)
        # H(i, beg-1): the first column (a deletion run from the seed) only when beg is 0.
        h_left = max(h0 - (o_del + e_del * (i + 1)), 0) if beg == 0 else 0
        f = 0
        row_max, row_max_j = 0, -1
        for j in range(beg, end):
            diag, e = eh_h[j], eh_e[j]  # H(i-1, j-1) and E(i, j)
            eh_h[j] = h_left  # becomes H(i, j-1) for the next row
            # A zero diagonal does not restart an alignment (no "local" restarts).
            m = diag + pair_score(t[i], q[j], a, b) if diag else 0
            h = max(m, e, f)
            h_left = h
            if h >= row_max:  # ties go to the later column
                row_max, row_max_j = h, j
            eh_e[j] = max(e - e_del, max(m - oe_del, 0))  # E(i+1, j)
            f = max(f - e_ins, max(m - oe_ins, 0))  # F(i, j+1)
        eh_h[end] = h_left
        eh_e[end] = 0
        last_column = end if beg < end else beg
        if last_column == qlen:  # this row reached the end of the query
            if h_left >= gscore:
                gscore, gscore_i = h_left, i
        if row_max == 0:
            break
        if row_max > best:
            best, best_i, best_j = row_max, i, row_max_j
            max_off = max(max_off, abs(row_max_j - i))
        elif zdrop > 0:
            di, dj = i - best_i, row_max_j - best_j
            # The drop, less what a gap of the diagonal offset would cost.
            if di > dj:
                if best - row_max - (di - dj) * e_del > zdrop:
                    break
            elif best - row_max - (dj - di) * e_ins > zdrop:
                break
        # Trim the zero cells off both ends of the next row.
        j = beg
        while j < end and eh_h[j] == 0 and eh_e[j] == 0:
            j += 1
        beg = j
        j = end
        while j >= beg and eh_h[j] == 0 and eh_e[j] == 0:
            j -= 1
        end = min(j + 2, qlen)
    return Extension(best, best_j + 1, best_i + 1, gscore_i + 1, gscore, max_off)
