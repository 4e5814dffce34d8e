"""Pair-HMM inputs the tests share: random packed batches, local scoring, gRPC requests."""
from __future__ import annotations

import numpy as np

import warpdp
from warpdp.grpc import warpdp_pb2
from warpdp.grpc._algorithms import PAIRHMM
from warpdp.plugin.pairhmm import PairHmmBatches


def make_batches(seed: int, n_batches: int, reads=(1, 8), haps=(1, 4), read_len=(10, 150),
                 hap_len=(20, 300)) -> warpdp.PairHmmBatches:
    """Random packed batches (bases with a few N, GATK-like quality ranges)."""
    rng = np.random.default_rng(seed)
    n_reads = rng.integers(reads[0], reads[1], n_batches, endpoint=True)
    n_haps = rng.integers(haps[0], haps[1], n_batches, endpoint=True)
    read_lens = rng.integers(read_len[0], read_len[1], int(n_reads.sum()), endpoint=True)
    hap_lens = rng.integers(hap_len[0], hap_len[1], int(n_haps.sum()), endpoint=True)
    alphabet = np.frombuffer(b"ACGTN", dtype=np.uint8)
    p = [0.245, 0.245, 0.245, 0.245, 0.02]
    n_read_bases, n_hap_bases = int(read_lens.sum()), int(hap_lens.sum())

    def offsets(lengths: np.ndarray) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    return warpdp.PairHmmBatches.from_arrays(
        read_bases=rng.choice(alphabet, n_read_bases, p=p),
        read_quals=rng.integers(6, 41, n_read_bases).astype(np.uint8),
        read_ins=rng.integers(20, 50, n_read_bases).astype(np.uint8),
        read_del=rng.integers(20, 50, n_read_bases).astype(np.uint8),
        read_gcp=np.full(n_read_bases, 10, dtype=np.uint8),
        read_offsets=offsets(read_lens),
        hap_bases=rng.choice(alphabet, n_hap_bases, p=p),
        hap_offsets=offsets(hap_lens),
        batch_reads=offsets(n_reads),
        batch_haps=offsets(n_haps),
    )


def local(batches: warpdp.PairHmmBatches, double: bool = False) -> np.ndarray:
    return warpdp.pairhmm(batches, backend="cpu", double=double)


def request_for(batches: warpdp.PairHmmBatches, double: bool = False) -> warpdp_pb2.PairHmmRequest:
    return PAIRHMM.request(batches, double)


def random_batches(rng: np.random.Generator, *, n_batches: int, reads: tuple[int, int],
                   haps: tuple[int, int], read_len: tuple[int, int], hap_len: tuple[int, int],
                   n_rate: float = 0.01, related: float = 0.8, qual_high: int = 40,
                   wild_quals: float = 0.0) -> PairHmmBatches:
    """Random packed batches: reads mostly taken from a haplotype with errors, some unrelated.

    ``qual_high`` bounds the qualities drawn; ``wild_quals`` is the share of values drawn from
    0..255 instead (covering GKL's & 127 masking). Any byte other than ACGT is an N.
    """
    alphabet = np.frombuffer(b"ACGT", dtype=np.uint8)
    others = np.frombuffer(b"NnRacgtX", dtype=np.uint8)

    def with_ns(s: np.ndarray) -> np.ndarray:
        s = s.copy()
        mask = rng.random(len(s)) < n_rate
        s[mask] = others[rng.integers(0, len(others), int(mask.sum()))]
        return s

    def mutate(s: np.ndarray, rate: float) -> np.ndarray:
        s = s.copy()
        subs = rng.random(len(s)) < rate
        s[subs] = alphabet[rng.integers(0, 4, int(subs.sum()))]
        if len(s) > 2 and rng.random() < 0.5:  # one small indel
            at = int(rng.integers(1, len(s) - 1))
            if rng.random() < 0.5:
                s = np.concatenate([s[:at], alphabet[rng.integers(0, 4, int(rng.integers(1, 4)))], s[at:]])
            else:
                s = np.concatenate([s[:at], s[at + int(rng.integers(1, 3)):]])
        return s

    def quals(n: int, low: int, high: int) -> np.ndarray:
        q = rng.integers(low, high + 1, n)
        wild = rng.random(n) < wild_quals
        q[wild] = rng.integers(0, 256, int(wild.sum()))
        return q.astype(np.uint8)

    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("b", "q", "i", "d", "g", "h")}
    read_lens, hap_lens, n_reads, n_haps = [], [], [], []
    for _ in range(n_batches):
        nr = int(rng.integers(reads[0], reads[1] + 1))
        nh = int(rng.integers(haps[0], haps[1] + 1))
        # The haplotypes of a batch are variants of one reference, as in an active region.
        reference = alphabet[rng.integers(0, 4, hap_len[1] + 8)]
        common = int(rng.integers(hap_len[0], hap_len[1] + 1))
        batch_haps = []
        for _ in range(nh):
            n = int(np.clip(common + rng.integers(-3, 4), hap_len[0], hap_len[1]))
            hap = with_ns(mutate(reference[:n], 0.01))
            batch_haps.append(hap if len(hap) else alphabet[:1].copy())
        for h in batch_haps:
            parts["h"].append(h)
            hap_lens.append(len(h))
        for _ in range(nr):
            n = int(rng.integers(read_len[0], read_len[1] + 1))
            source = batch_haps[int(rng.integers(0, nh))]
            if rng.random() < related and len(source) >= n:
                start = int(rng.integers(0, len(source) - n + 1))
                read = mutate(source[start:start + n], 0.02)[:n]
                if len(read) < n:
                    read = np.concatenate([read, alphabet[rng.integers(0, 4, n - len(read))]])
                read = with_ns(read)
            else:
                read = with_ns(alphabet[rng.integers(0, 4, n)])
            parts["b"].append(read)
            parts["q"].append(quals(n, 2, qual_high))
            parts["i"].append(quals(n, 10, 60))
            parts["d"].append(quals(n, 10, 60))
            parts["g"].append(quals(n, 3, 40))
            read_lens.append(n)
        n_reads.append(nr)
        n_haps.append(nh)

    def cat(key: str) -> np.ndarray:
        return np.concatenate(parts[key]) if parts[key] else np.zeros(0, np.uint8)

    def offsets(lengths: list[int]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])

    return PairHmmBatches.from_arrays(
        read_bases=cat("b"), read_quals=cat("q"), read_ins=cat("i"), read_del=cat("d"),
        read_gcp=cat("g"), read_offsets=offsets(read_lens), hap_bases=cat("h"),
        hap_offsets=offsets(hap_lens), batch_reads=offsets(n_reads), batch_haps=offsets(n_haps))
