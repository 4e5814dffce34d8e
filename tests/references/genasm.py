"""Scrooge's windowed GenASM (CPU, SENE + DENT + early termination), restated as a plain DP.

Facts of Scrooge's algorithm this follows (its own code is bit-parallel; this is an independent
restatement that gives the same answers):
- The read (pattern) is aligned window by window against the reference (text) from position 0:
  each window takes m = min(W, read left) pattern and n = min(W, text left) text characters.
- In a window, cost(i, j) = fewest edits aligning pattern[j:m] to a PREFIX of text[i:n] (the
  text's end is free); the window's distance is cost(0, 0).
- The traceback starts at (0, 0) with d = cost(0, 0) and walks forwards until the pattern ends
  or either i or j reaches W - O (only that much is kept; the rest is redone by the next window).
  Each step takes the first of: insertion (cost(i, j+1) <= d-1), deletion (i < n and
  cost(i+1, j) <= d-1), substitution (i < n and cost(i+1, j+1) <= d-1), else a match; on the
  window's last pattern character it takes an insertion whenever d > 0 (no deletion there).
- The edits spent in the kept part are added to the distance and the next window starts where
  the traceback stopped. Trailing text is never written as deletions.
"""
from __future__ import annotations


def _window_costs(text: str, pattern: str) -> list[list[int]]:
    n, m = len(text), len(pattern)
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for j in range(m + 1):
        cost[n][j] = m - j
    for i in range(n - 1, -1, -1):
        row, below = cost[i], cost[i + 1]
        row[m] = 0
        for j in range(m - 1, -1, -1):
            row[j] = min(below[j + 1] + (text[i] != pattern[j]), row[j + 1] + 1, below[j] + 1)
    return cost


def genasm(query: str, target: str, window: int = 64, overlap: int = 33) -> tuple[int, str]:
    """(edit distance, CIGAR with runs merged across windows) as Scrooge's CPU GenASM writes them."""
    limit = window - overlap
    t0 = q0 = 0
    total = 0
    ops: list[str] = []
    while q0 < len(query):
        text, pattern = target[t0:t0 + window], query[q0:q0 + window]
        n, m = len(text), len(pattern)
        cost = _window_costs(text, pattern)
        d = start = cost[0][0]
        i = j = 0
        while j < m and i < limit and j < limit:
            if j < m - 1:
                can_ins = d > 0 and cost[i][j + 1] <= d - 1
                can_del = d > 0 and i < n and cost[i + 1][j] <= d - 1
                can_sub = d > 0 and i < n and cost[i + 1][j + 1] <= d - 1
            else:
                can_ins, can_del, can_sub = d > 0, False, d > 0 and i < n
            if can_ins:
                ops.append("I")
                j, d = j + 1, d - 1
            elif can_del:
                ops.append("D")
                i, d = i + 1, d - 1
            elif can_sub:
                ops.append("X")
                i, j, d = i + 1, j + 1, d - 1
            else:
                ops.append("=")
                i, j = i + 1, j + 1
        total += start - d
        t0, q0 = t0 + i, q0 + j
    from references.edit import compress
    return total, compress(ops) if ops else ""
