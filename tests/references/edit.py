"""Plain-Python edit distance (unit costs) as edlib defines it: a full DP for small pairs.

Modes: ``nw`` (whole query against whole target), ``shw`` (whole query against a prefix of the
target), ``hw`` (whole query against any substring of the target). Locations are edlib's: every
target end e (0-based, inclusive; -1 for the empty target prefix: SHW's, and HW's when the distance is
the query's length, start 0) whose column reaches the optimum, in increasing order, each with
the start of the LONGEST optimal alignment ending there (edlib takes the last optimal position of
the reversed prefix search); for nw and shw the start is 0.
"""
from __future__ import annotations

import re

MODES = ("nw", "shw", "hw")


def _last_row(query: str, target: str, free_start: bool) -> list[int]:
    m = len(query)
    prev = [0 if free_start else j for j in range(len(target) + 1)]
    for i in range(1, m + 1):
        cur = [i] + [0] * len(target)
        qi = query[i - 1]
        for j in range(1, len(target) + 1):
            cur[j] = min(prev[j - 1] + (qi != target[j - 1]), prev[j] + 1, cur[j - 1] + 1)
        prev = cur
    return prev


def distance(query: str, target: str, mode: str) -> int:
    row = _last_row(query, target, mode == "hw")
    # SHW and HW also count the empty target prefix (edlib's end -1): for HW it is optimal only
    # when the distance is m (row[0] = m).
    return row[-1] if mode == "nw" else min(row)


def locations(query: str, target: str, mode: str) -> list[tuple[int, int]]:
    """[(start, end)] with ends inclusive, as edlib reports them."""
    n = len(target)
    if mode == "nw":
        return [(0, n - 1)]
    row = _last_row(query, target, mode == "hw")
    best = min(row)
    ends = [j - 1 for j in range(n + 1) if row[j] == best]
    if mode == "shw":
        return [(0, e) for e in ends]
    found = []
    for e in ends:
        if e < 0:  # the empty prefix (HW's only when the distance is m): edlib's start 0
            found.append((0, e))
            continue
        # The reversed query against the reversed target prefix, prefix mode: the farthest
        # optimal end is the longest alignment.
        rrow = _last_row(query[::-1], target[: e + 1][::-1], False)
        last = max(j for j in range(1, e + 2) if rrow[j] == best)
        found.append((e + 1 - last, e))
    return found


def global_cigar(query: str, target: str) -> str:
    """One optimal global alignment as an extended CIGAR (=, X, I, D); ties prefer the diagonal."""
    m, n = len(query), len(target)
    d = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(m + 1):
        for j in range(n + 1):
            if i == 0 or j == 0:
                d[i][j] = i + j
            else:
                d[i][j] = min(d[i - 1][j - 1] + (query[i - 1] != target[j - 1]), d[i - 1][j] + 1, d[i][j - 1] + 1)
    ops = []
    i, j = m, n
    while i > 0 or j > 0:
        if i > 0 and j > 0 and d[i][j] == d[i - 1][j - 1] + (query[i - 1] != target[j - 1]):
            ops.append("=" if query[i - 1] == target[j - 1] else "X")
            i, j = i - 1, j - 1
        elif i > 0 and d[i][j] == d[i - 1][j] + 1:
            ops.append("I")
            i -= 1
        else:
            ops.append("D")
            j -= 1
    return compress(ops[::-1])


def compress(ops: list[str]) -> str:
    out, run = [], 1
    for k in range(1, len(ops) + 1):
        if k < len(ops) and ops[k] == ops[k - 1]:
            run += 1
        else:
            out.append(f"{run}{ops[k - 1]}")
            run = 1
    return "".join(out)


def cigar_runs(cigar: str) -> list[tuple[int, str]]:
    return [(int(n), op) for n, op in re.findall(r"(\d+)([=XID])", cigar)]


def rescore(query: str, target: str, cigar: str, t_begin: int = 0) -> tuple[int, int, int]:
    """(edits, query bases consumed, target end exclusive) of a CIGAR laid at target[t_begin:],
    raising AssertionError when an '=' or 'X' contradicts the bases."""
    i, j, edits = 0, t_begin, 0
    for run, op in cigar_runs(cigar):
        for _ in range(run):
            if op in "=X":
                assert (query[i] == target[j]) == (op == "="), (op, i, j)
                i, j = i + 1, j + 1
                edits += op == "X"
            elif op == "I":
                i, edits = i + 1, edits + 1
            else:
                j, edits = j + 1, edits + 1
    return edits, i, j


def hirschberg_cigar(query: str, target: str) -> str:
    """The one global alignment every warpdp backend returns (the plugin's documented rule):
    Hirschberg's recursion splitting the query at row len // 2 at the leftmost target column
    minimising forward + backward cost; a one-base query takes its leftmost equal target base
    (else a substitution on the first target base), the other target bases deleted."""
    ops: list[str] = []
    _hirschberg(query, target, ops)
    return compress(ops) if ops else ""


def _hirschberg(query: str, target: str, ops: list[str]) -> None:
    m, n = len(query), len(target)
    if n == 0 or m == 0:
        ops.extend("I" * m + "D" * n)
        return
    if m == 1:
        at = target.find(query)
        if at < 0:
            ops.extend("X" + "D" * (n - 1))
        else:
            ops.extend("D" * at + "=" + "D" * (n - at - 1))
        return
    mid = m // 2
    forward = _last_row(query[:mid], target, False)
    backward = _last_row(query[mid:][::-1], target[::-1], False)
    sums = [forward[j] + backward[n - j] for j in range(n + 1)]
    split = sums.index(min(sums))
    _hirschberg(query[:mid], target[:split], ops)
    _hirschberg(query[mid:], target[split:], ops)
