"""Synthetic Pair-HMM workloads shaped like GATK HaplotypeCaller's active regions.

Each batch is one active region: tens of reads (100-250 bp, derived from a haplotype with
sequencing errors, GATK-like base and gap qualities) against a few haplotypes (200-500 bp,
variants of each other). Deterministic for a given seed.
"""
from __future__ import annotations

import numpy as np

from warpdp.plugin.pairhmm import PairHmmBatches

_ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)


def gatk_like_batches(target_cells: float, seed: int = 1) -> PairHmmBatches:
    """Batches whose read x haplotype cells add up to at least ``target_cells``."""
    rng = np.random.default_rng(seed)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("bases", "quals", "ins", "del", "gcp", "haps")}
    read_lens, hap_lens, batch_reads, batch_haps = [], [], [], []
    cells = 0
    while cells < target_cells:
        n_reads, n_haps = int(rng.integers(10, 80)), int(rng.integers(2, 9))
        hap_len = int(rng.integers(200, 500))
        base_hap = rng.choice(_ACGT, hap_len)
        haps = []
        for _ in range(n_haps):
            hap = base_hap.copy()
            snps = rng.random(hap_len) < 0.01
            hap[snps] = rng.choice(_ACGT, int(snps.sum()))
            haps.append(hap)
        for _ in range(n_reads):
            length = int(rng.integers(100, min(251, hap_len)))
            start = int(rng.integers(0, hap_len - length + 1))
            read = haps[int(rng.integers(0, n_haps))][start:start + length].copy()
            errors = rng.random(length) < 0.01
            read[errors] = rng.choice(_ACGT, int(errors.sum()))
            parts["bases"].append(read)
            parts["quals"].append(rng.integers(6, 41, length, dtype=np.uint8))
            parts["ins"].append(rng.integers(40, 46, length, dtype=np.uint8))
            parts["del"].append(rng.integers(40, 46, length, dtype=np.uint8))
            parts["gcp"].append(np.full(length, 10, dtype=np.uint8))
            read_lens.append(length)
        parts["haps"].extend(haps)
        hap_lens.extend(len(h) for h in haps)
        batch_reads.append(n_reads)
        batch_haps.append(n_haps)
        cells += sum(read_lens[-n_reads:]) * sum(hap_lens[-n_haps:])

    def offsets(lengths: list[int]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])

    return PairHmmBatches.from_arrays(
        read_bases=np.concatenate(parts["bases"]), read_quals=np.concatenate(parts["quals"]),
        read_ins=np.concatenate(parts["ins"]), read_del=np.concatenate(parts["del"]),
        read_gcp=np.concatenate(parts["gcp"]), read_offsets=offsets(read_lens),
        hap_bases=np.concatenate(parts["haps"]).astype(np.uint8), hap_offsets=offsets(hap_lens),
        batch_reads=offsets(batch_reads), batch_haps=offsets(batch_haps),
    )
