"""Independent reference for GATK's Smith-Waterman as Intel GKL's `IntelSmithWaterman.align` returns it
(../shared/data/sw/README): plain Python, one cell at a time; written from the algorithm's description
(GATK's SmithWatermanJavaAligner semantics), not from its source.

The DP (rows = ref, columns = alt; match/mismatch/open/extend as GATK's SWParameters hold them: match
positive, the other three negative and ADDED to the score; a gap of length L scores open + (L-1)*extend):
- row 0 and column 0 are 0, except for INDEL and LEADING_INDEL where they hold the gap score of their
  length; there is no floor at 0 (scores may go negative).
- per cell, the best vertical gap (down a column) and horizontal gap (along a row) are kept with their
  lengths: a gap opened just before the cell replaces the running best only when strictly better than
  extending it.
- the cell takes the diagonal when it is >= both gaps, else the horizontal gap when >= the vertical,
  else the vertical; the back-track remembers the gap's length.
Best cell: INDEL = the bottom-right corner. Otherwise the last column's best (>=, so the last row among
equals), then for SOFTCLIP and IGNORE the bottom row (j from 1) replaces it when strictly better, or equal
and nearer the diagonal (|ref_len - j| < |p1 - p2|).
Traceback to row 0 or column 0; the remaining alt prefix becomes S (SOFTCLIP), part of the first element whatever its op
(IGNORE, offset p1 - p2) or an I/D run (INDEL, LEADING_INDEL; offset 0). An alt suffix past the bottom row
is written S (GKL's spelling for SOFTCLIP and IGNORE).
"""
from __future__ import annotations

STRATEGIES = ("SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE")
LOW = -(1 << 30)


def gatk_sw(ref: bytes, alt: bytes, match: int, mismatch: int, gap_open: int, gap_extend: int,
            overhang: str) -> tuple[str, int]:
    """(CIGAR string, alignment offset) of alt against ref."""
    if overhang not in STRATEGIES:
        raise ValueError(f"overhang must be one of {STRATEGIES}")
    n_ref, n_alt = len(ref), len(alt)
    sw = [[0] * (n_alt + 1) for _ in range(n_ref + 1)]
    bt = [[0] * (n_alt + 1) for _ in range(n_ref + 1)]  # 0 diagonal, +k vertical gap of k, -k horizontal
    if overhang in ("INDEL", "LEADING_INDEL"):
        for j in range(1, n_alt + 1):
            sw[0][j] = gap_open + (j - 1) * gap_extend
        for i in range(1, n_ref + 1):
            sw[i][0] = gap_open + (i - 1) * gap_extend
    gap_v = [LOW] * (n_alt + 1)
    len_v = [0] * (n_alt + 1)
    for i in range(1, n_ref + 1):
        prev, row, back = sw[i - 1], sw[i], bt[i]
        a = ref[i - 1]
        gap_h, len_h = LOW, 0
        for j in range(1, n_alt + 1):
            diag = prev[j - 1] + (match if a == alt[j - 1] else mismatch)
            opened = prev[j] + gap_open
            gap_v[j] += gap_extend
            if opened > gap_v[j]:
                gap_v[j], len_v[j] = opened, 1
            else:
                len_v[j] += 1
            opened = row[j - 1] + gap_open
            gap_h += gap_extend
            if opened > gap_h:
                gap_h, len_h = opened, 1
            else:
                len_h += 1
            if diag >= gap_v[j] and diag >= gap_h:
                row[j], back[j] = diag, 0
            elif gap_h >= gap_v[j]:
                row[j], back[j] = gap_h, -len_h
            else:
                row[j], back[j] = gap_v[j], len_v[j]
    tail = 0
    if overhang == "INDEL":
        p1, p2 = n_ref, n_alt
    else:
        p2, p1, best = n_alt, 0, None
        for i in range(1, n_ref + 1):
            if best is None or sw[i][n_alt] >= best:
                p1, best = i, sw[i][n_alt]
        if overhang != "LEADING_INDEL":
            for j in range(1, n_alt + 1):
                score = sw[n_ref][j]
                if score > best or (score == best and abs(n_ref - j) < abs(p1 - p2)):
                    p1, p2, best, tail = n_ref, j, score, n_alt - j
    elements: list[tuple[str, int]] = []  # reversed
    if tail:
        elements.append(("S", tail))
    while p1 > 0 and p2 > 0:
        move = bt[p1][p2]
        if move > 0:
            elements.append(("D", move))
            p1 -= move
        elif move < 0:
            elements.append(("I", -move))
            p2 += move
        else:
            elements.append(("M", 1))
            p1, p2 = p1 - 1, p2 - 1
    if overhang == "SOFTCLIP":
        if p2 > 0:
            elements.append(("S", p2))
        offset = p1
    elif overhang == "IGNORE":
        # the alt prefix joins the traceback's last element, whatever its op
        last = elements[-1][0] if elements and elements[-1][0] != "S" else "M"
        elements.append((last, p2))
        offset = p1 - p2
    else:
        if p1 > 0:
            elements.append(("D", p1))
        elif p2 > 0:
            elements.append(("I", p2))
        offset = 0
    merged: list[list] = []
    for op, length in reversed(elements):
        if length == 0:
            continue
        if merged and merged[-1][0] == op:
            merged[-1][1] += length
        else:
            merged.append([op, length])
    return "".join(f"{length}{op}" for op, length in merged), offset
