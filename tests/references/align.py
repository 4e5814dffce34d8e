"""Independent reference for the `align` family: a plain NumPy Gotoh DP with full matrices and a
traceback, for every mode and gap model. Slow (rows vectorised, traceback in Python); for small pairs.

Conventions (the same as warpdp's documented ones, see warpdp/plugin/align.py):
- rows i = query (0..m), columns j = target (0..n); a gap of length L costs
  ``first + (L-1)*ext`` (``first = open`` for convention "L-1", ``open + extend`` for "L";
  linear gaps: first = ext = gap_extend).
- CIGAR ops: ``=``/``X`` (diagonal), ``I`` (query base against a gap), ``D`` (target base
  against a gap).
- Best cell: local = highest score over all cells, ties to the smallest i then smallest j;
  semiglobal = highest in the last row, ties to the smallest j; extension = highest over all cells
  including (0, 0), ties to the smallest i then smallest j (z-drop checked after each row).
- Traceback priorities: in H, local stops on a 0 cell; else diagonal, then D (E), then I (F);
  in E or F, opening the gap (back to H) before extending it.
"""
from __future__ import annotations

import numpy as np

MODES = ("global", "semiglobal", "local", "extension")
NEG = -(1 << 40)
_CODE = np.full(256, 4, dtype=np.int64)
for _i, _b in enumerate(b"ACGT"):
    _CODE[_b] = _i
    _CODE[_b + 32] = _i


def codes(seq: bytes | str) -> np.ndarray:
    if isinstance(seq, str):
        seq = seq.encode()
    return _CODE[np.frombuffer(seq, dtype=np.uint8)]


def simple_matrix(match: int, mismatch: int) -> np.ndarray:
    """5x5 (A C G T N): match on the ACGT diagonal, mismatch elsewhere (N included)."""
    matrix = np.full((5, 5), mismatch, dtype=np.int64)
    for k in range(4):
        matrix[k, k] = match
    return matrix


def gap_costs(gap_open: int, gap_extend: int, gaps: str = "affine", convention: str = "L-1") -> tuple[int, int]:
    """(first, ext): a gap of length L costs first + (L-1)*ext."""
    if gaps == "linear":
        return gap_extend, gap_extend
    return (gap_open, gap_extend) if convention == "L-1" else (gap_open + gap_extend, gap_extend)


def align(query, target, matrix: np.ndarray, first: int, ext: int, mode: str, zdrop: int = -1):
    """(score, q_begin, q_end, t_begin, t_end, cigar string); ends exclusive."""
    q, t = codes(query), codes(target)
    m, n = len(q), len(t)
    H = np.full((m + 1, n + 1), NEG, dtype=np.int64)
    E = np.full((m + 1, n + 1), NEG, dtype=np.int64)
    F = np.full((m + 1, n + 1), NEG, dtype=np.int64)
    cols = np.arange(n + 1, dtype=np.int64)
    H[0, 0] = 0
    gap_j = -(first + (cols[1:] - 1) * ext)
    if mode in ("global", "extension"):
        H[0, 1:] = gap_j
        E[0, 1:] = gap_j
    else:
        H[0, 1:] = 0
    local = mode == "local"
    best, bi, bj = (0, 0, 0)
    if mode == "local":
        best = -1  # any cell beats it; an all-zero matrix gives the empty alignment
    for i in range(1, m + 1):
        if mode == "local":
            H[i, 0] = 0
        else:
            H[i, 0] = -(first + (i - 1) * ext)
            F[i, 0] = H[i, 0]
        F[i, 1:] = np.maximum(H[i - 1, 1:] - first, F[i - 1, 1:] - ext)
        part = np.maximum(H[i - 1, :-1] + matrix[q[i - 1], t], F[i, 1:])
        if local:
            part = np.maximum(part, 0)
        row = np.concatenate([[H[i, 0]], part])
        # E[i][j] = max_{k<j} row[k] - first - (j-1-k)*ext, as a running maximum.
        shifted = np.maximum.accumulate(row + cols * ext)
        E[i, 1:] = shifted[:-1] - first - (cols[1:] - 1) * ext
        H[i, 1:] = np.maximum(part, E[i, 1:])
        if local:
            k = int(np.argmax(H[i, 1:]))
            if H[i, 1 + k] > best:
                best, bi, bj = int(H[i, 1 + k]), i, 1 + k
        elif mode == "extension":
            k = int(np.argmax(H[i]))
            if H[i, k] > best:
                best, bi, bj = int(H[i, k]), i, k
            if zdrop >= 0 and best - int(H[i, k]) > zdrop + ext * abs((i - bi) - (k - bj)):
                break
    if mode == "global":
        best, bi, bj = int(H[m, n]), m, n
    elif mode == "semiglobal":
        k = int(np.argmax(H[m]))
        best, bi, bj = int(H[m, k]), m, k
    elif mode == "local" and best <= 0:
        return 0, 0, 0, 0, 0, ""
    ops: list[str] = []
    i, j, state = bi, bj, "H"
    while True:
        if state == "H":
            if mode == "semiglobal" and i == 0:
                break
            if i == 0 and j == 0:
                break
            if local and H[i, j] == 0:
                break
            if i > 0 and j > 0 and H[i, j] == H[i - 1, j - 1] + matrix[q[i - 1], t[j - 1]]:
                ops.append("=" if q[i - 1] == t[j - 1] and q[i - 1] < 4 else "X")
                i, j = i - 1, j - 1
            elif j > 0 and H[i, j] == E[i, j]:
                state = "E"
            else:
                assert i > 0 and H[i, j] == F[i, j], (i, j)
                state = "F"
        elif state == "E":
            ops.append("D")
            opened = E[i, j] == H[i, j - 1] - first
            j -= 1
            if opened:
                state = "H"
        else:
            ops.append("I")
            opened = F[i, j] == H[i - 1, j] - first
            i -= 1
            if opened:
                state = "H"
    ops.reverse()
    return best, i, bi, j, bj, runs(ops)


def runs(ops) -> str:
    out, k = [], 0
    while k < len(ops):
        start = k
        while k < len(ops) and ops[k] == ops[start]:
            k += 1
        out.append(f"{k - start}{ops[start]}")
    return "".join(out)


def parse_cigar(cigar: str) -> list[tuple[int, str]]:
    import re

    return [(int(length), op) for length, op in re.findall(r"(\d+)([MIDNSHP=X])", cigar)]


def rescore(query, target, q_begin: int, t_begin: int, cigar: str, matrix: np.ndarray, first: int, ext: int):
    """(score, q_end, t_end) of a CIGAR placed at (q_begin, t_begin); each I or D run is one gap."""
    q, t = codes(query), codes(target)
    i, j, score = q_begin, t_begin, 0
    for length, op in parse_cigar(cigar):
        if op in "=XM":
            score += int(matrix[q[i:i + length], t[j:j + length]].sum())
            if op == "=":
                assert np.array_equal(q[i:i + length], t[j:j + length]), "'=' over different bases"
            i, j = i + length, j + length
        elif op == "I":
            score -= first + (length - 1) * ext
            i += length
        elif op == "D":
            score -= first + (length - 1) * ext
            j += length
        else:
            raise ValueError(f"op {op} in an alignment CIGAR")
    return score, i, j
