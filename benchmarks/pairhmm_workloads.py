"""Synthetic Pair-HMM workloads shaped like GATK HaplotypeCaller's active regions.

Each batch is one active region: tens of reads (100-250 bp, derived from a haplotype with
sequencing errors, GATK-like base and gap qualities) against a few haplotypes (200-500 bp,
variants of each other). Deterministic for a given seed.
"""
from __future__ import annotations

import numpy as np

from warpdp.plugin.pairhmm import PairHmmBatches

_ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)


class _Regions:
    """Active regions collected into packed batches."""

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in ("bases", "quals", "ins", "del", "gcp", "haps")}
        self.read_lens: list[int] = []
        self.hap_lens: list[int] = []
        self.batch_reads: list[int] = []
        self.batch_haps: list[int] = []

    def add(self, rng: np.random.Generator, n_reads: int, n_haps: int, hap_len: int,
            read_len: tuple[int, int]) -> int:
        """One region: n_haps haplotypes of hap_len bases (a random sequence and its variants at 1 %
        SNPs) and n_reads reads of read_len[0]..read_len[1] bases sampled from them with 1 %
        sequencing errors; returns its cells."""
        base_hap = rng.choice(_ACGT, hap_len)
        haps = []
        for _ in range(n_haps):
            hap = base_hap.copy()
            snps = rng.random(hap_len) < 0.01
            hap[snps] = rng.choice(_ACGT, int(snps.sum()))
            haps.append(hap)
        for _ in range(n_reads):
            length = int(rng.integers(read_len[0], min(read_len[1] + 1, hap_len)))
            start = int(rng.integers(0, hap_len - length + 1))
            read = haps[int(rng.integers(0, n_haps))][start:start + length].copy()
            errors = rng.random(length) < 0.01
            read[errors] = rng.choice(_ACGT, int(errors.sum()))
            self.parts["bases"].append(read)
            self.parts["quals"].append(rng.integers(6, 41, length, dtype=np.uint8))
            self.parts["ins"].append(rng.integers(40, 46, length, dtype=np.uint8))
            self.parts["del"].append(rng.integers(40, 46, length, dtype=np.uint8))
            self.parts["gcp"].append(np.full(length, 10, dtype=np.uint8))
            self.read_lens.append(length)
        self.parts["haps"].extend(haps)
        self.hap_lens.extend(len(h) for h in haps)
        self.batch_reads.append(n_reads)
        self.batch_haps.append(n_haps)
        return sum(self.read_lens[len(self.read_lens) - n_reads:]) * sum(self.hap_lens[-n_haps:])

    def batches(self) -> PairHmmBatches:
        def offsets(lengths: list[int]) -> np.ndarray:
            return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])

        parts = self.parts
        return PairHmmBatches.from_arrays(
            read_bases=np.concatenate(parts["bases"]), read_quals=np.concatenate(parts["quals"]),
            read_ins=np.concatenate(parts["ins"]), read_del=np.concatenate(parts["del"]),
            read_gcp=np.concatenate(parts["gcp"]), read_offsets=offsets(self.read_lens),
            hap_bases=np.concatenate(parts["haps"]).astype(np.uint8), hap_offsets=offsets(self.hap_lens),
            batch_reads=offsets(self.batch_reads), batch_haps=offsets(self.batch_haps),
        )


def gatk_like_batches(target_cells: float, seed: int = 1) -> PairHmmBatches:
    """Batches whose read x haplotype cells add up to at least ``target_cells``."""
    rng = np.random.default_rng(seed)
    regions = _Regions()
    cells = 0
    while cells < target_cells:
        n_reads, n_haps = int(rng.integers(10, 80)), int(rng.integers(2, 9))
        hap_len = int(rng.integers(200, 500))
        cells += regions.add(rng, n_reads, n_haps, hap_len, (100, 250))
    return regions.batches()


def active_region_batches(rng: np.random.Generator, n_batches: int, reads: tuple[int, int] = (10, 50),
                          haps: tuple[int, int] = (2, 5), read_len: tuple[int, int] = (100, 150),
                          hap_len: tuple[int, int] = (200, 400)) -> PairHmmBatches:
    """n_batches regions with the given (inclusive) ranges of reads, haplotypes (at least one
    each) and lengths; contents as gatk_like_batches'."""
    regions = _Regions()
    for _ in range(n_batches):
        n_reads = int(rng.integers(max(1, reads[0]), reads[1], endpoint=True))
        n_haps = int(rng.integers(max(1, haps[0]), haps[1], endpoint=True))
        regions.add(rng, n_reads, n_haps, int(rng.integers(hap_len[0], hap_len[1], endpoint=True)), read_len)
    return regions.batches()
