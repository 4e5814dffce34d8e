"""Readers of the align and sw reference data (../shared/data/align, ../shared/data/sw), for tests."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from helpers.data import shared_file

MODES = ("global", "semiglobal", "local")
GAP_MODELS = ("linear", "affine")
# How the parasail outputs were made (../shared/data/README, align/): match 2, mismatch -3,
# affine open 5 / extend 2, linear 4 per base; a gap of length L costs open + (L-1)*extend.
MATCH, MISMATCH = 2, -3
GAPS = {"affine": (5, 2), "linear": (4, 4)}


def align_pairs() -> list[tuple[str, str]]:
    with open(shared_file("align", "pairs-400.tsv")) as lines:
        return [tuple(line.split()) for line in lines if line.strip()]  # type: ignore[misc]


def parasail_out(mode: str, gaps: str) -> list[tuple[int, int, int, int, int, str]]:
    """(score, q_begin, q_end, t_begin, t_end, cigar) with ends made exclusive."""
    rows = []
    with open(shared_file("align", f"pairs-400.{mode}.{gaps}.parasail.out")) as lines:
        for line in lines:
            score, qb, qe, tb, te, cigar = line.rstrip("\n").split("\t")
            rows.append((int(score), int(qb), int(qe) + 1, int(tb), int(te) + 1, cigar))
    return rows


def sw_cases() -> list[tuple[bytes, bytes, int, int, int, int, str]]:
    """(ref, alt, match, mismatch, gap_open, gap_extend, overhang) of gatk-sw-600.tsv."""
    cases = []
    with open(shared_file("sw", "gatk-sw-600.tsv")) as lines:
        for line in lines:
            ref, alt, match, mismatch, gap_open, gap_extend, overhang = line.rstrip("\n").split("\t")
            cases.append((ref.encode(), alt.encode(), int(match), int(mismatch), int(gap_open), int(gap_extend),
                          overhang))
    return cases


def sw_expected() -> list[tuple[str, int]]:
    with open(shared_file("sw", "gatk-sw-600.gkl.out")) as lines:
        return [(cigar, int(offset)) for cigar, offset in (line.split() for line in lines if line.strip())]


@contextmanager
def intra_pair_from(length: int) -> Iterator[None]:
    """Within the block, the SIMD variants send every generic-mode pair whose longer sequence has at
    least ``length`` bases to their intra-pair (anti-diagonal) kernel, whatever the output (the CPU
    backend's test hook; by default only long pairs needing traceback bits take it)."""
    from warpdp.cython_cpu import align as cpu_align

    previous = cpu_align.set_diag_min_length(length)
    try:
        yield
    finally:
        cpu_align.set_diag_min_length(previous)
