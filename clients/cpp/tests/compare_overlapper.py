"""ctest: the example overlapper against the Python API on the same candidates.

    compare_overlapper.py --overlapper PATH --work DIR

Simulates long reads (a random genome, reads of 1-4 kb with ~8% errors, half of them from the
reverse strand; once as FASTA, once as FASTQ), runs the overlapper with --candidates, and checks:
the candidate set is what the stated rule gives (recomputed here: pairs i < j with at least
min-shared k-mer hits per strand, k-mers occurring at most max-occurrences times, the seed the
first shared k-mer along read j's oriented copy at its first occurrence in read i); every seed is
a shared k-mer; and every output line equals the one built from warpdp.xdrop (Python API) on the
same pairs (read j reverse-complemented for strand -).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

import warpdp

RNG = np.random.default_rng(2929)
COMPLEMENT = bytes.maketrans(b"ACGTN", b"TGCAN")
K, X, MIN_SHARED, MAX_OCC = 17, 7, 2, 64


def revcomp(s: bytes) -> bytes:
    return s.translate(COMPLEMENT)[::-1]


def simulate(n_reads: int = 40) -> list[tuple[str, bytes]]:
    genome = bytes(RNG.choice(np.frombuffer(b"ACGT", np.uint8), 30000))
    reads = []
    for r in range(n_reads):
        length = int(RNG.integers(1000, 4000))
        start = int(RNG.integers(0, len(genome) - length))
        read = bytearray()
        for base in genome[start:start + length]:
            u = RNG.random()
            if u < 0.03:
                read += bytes(RNG.choice(np.frombuffer(b"ACGT", np.uint8), 1))
            elif u < 0.05:
                continue
            elif u < 0.08:
                read += bytes([base]) + bytes(RNG.choice(np.frombuffer(b"ACGT", np.uint8), 1))
            else:
                read.append(base)
        seq = bytes(read)
        reads.append((f"read{r}", revcomp(seq) if RNG.random() < 0.5 else seq))
    return reads


def write(reads: list[tuple[str, bytes]], path: Path, fastq: bool) -> None:
    with open(path, "w") as out:
        for name, seq in reads:
            if fastq:
                out.write(f"@{name} simulated\n{seq.decode()}\n+\n{'I' * len(seq)}\n")
            else:
                text = seq.decode()
                out.write(f">{name}\n" + "".join(text[i:i + 80] + "\n" for i in range(0, len(text), 80)))


def kmers(seq: bytes) -> list[tuple[bytes, int]]:
    return [(seq[p:p + K], p) for p in range(len(seq) - K + 1) if set(seq[p:p + K]) <= set(b"ACGT")]


def expected_candidates(reads: list[bytes]) -> list[tuple[int, int, str, int, int]]:
    index: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for r, seq in enumerate(reads):
        for kmer, pos in kmers(seq):
            index[kmer].append((r, pos))
    out = []
    for j, seq in enumerate(reads):
        for strand, oriented in (("+", seq), ("-", revcomp(seq))):
            hits: dict[int, list] = {}
            for kmer, pos in kmers(oriented):
                occurrences = index.get(kmer, [])
                if len(occurrences) > MAX_OCC:
                    continue
                for i, pos_i in occurrences:
                    if i < j:
                        entry = hits.setdefault(i, [0, pos_i, pos])
                        entry[0] += 1
            out += [(i, j, strand, first_i, first_j) for i, (count, first_i, first_j) in sorted(hits.items())
                    if count >= MIN_SHARED]
    return out


def check(overlapper: str, reads_file: Path, reads: list[tuple[str, bytes]], work: Path) -> list[str]:
    candidates_file = work / (reads_file.name + ".candidates")
    done = subprocess.run([overlapper, str(reads_file), "-k", str(K), "-x", str(X), "--min-shared", str(MIN_SHARED),
                           "--max-occurrences", str(MAX_OCC), "--candidates", str(candidates_file)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return [f"{reads_file.name}: overlapper exit {done.returncode}: {done.stderr.strip()}"]
    lines = done.stdout.splitlines()
    seqs = [seq for _, seq in reads]
    cands = [(int(i), int(j), s, int(a), int(b)) for i, j, s, a, b in
             (line.split("\t") for line in candidates_file.read_text().splitlines())]
    problems = []
    if cands != expected_candidates(seqs):
        problems.append(f"{reads_file.name}: the candidates differ from the rule's")
    pairs = []
    for i, j, strand, seed_i, seed_j in cands:
        v = seqs[j] if strand == "+" else revcomp(seqs[j])
        if seqs[i][seed_i:seed_i + K] != v[seed_j:seed_j + K]:
            problems.append(f"{reads_file.name}: candidate {i} {j} {strand}: the seed is not a shared k-mer")
        pairs.append((seqs[i], seed_i, v, seed_j))
    result = warpdp.xdrop(warpdp.pack_xdrop_pairs(pairs), k=K, x=X, backend="cpu")
    want = []
    for p, (i, j, strand, seed_i, seed_j) in enumerate(cands):
        len_j = len(seqs[j])
        bv, ev = int(result.begin_v[p]), int(result.end_v[p])
        begin_j, end_j = (bv, ev) if strand == "+" else (len_j - ev, len_j - bv)
        bh, eh = int(result.begin_h[p]), int(result.end_h[p])
        want.append("\t".join(str(f) for f in (reads[i][0], len(seqs[i]), bh, eh, strand, reads[j][0], len_j, begin_j,
                                               end_j, int(result.score[p]), max(eh - bh, ev - bv), 255,
                                               f"sd:Z:{seed_i},{seed_j}")))
    if lines != want:
        differ = [n for n, (a, b) in enumerate(zip(lines, want)) if a != b]
        problems.append(f"{reads_file.name}: {len(lines)} lines vs {len(want)} from the Python API; first differing "
                        f"{differ[:3]}")
    opposite = sum(c[2] == "-" for c in cands)
    good = int((result.score >= 500).sum())
    print(f"{reads_file.name}: {len(cands)} candidates ({opposite} on opposite strands), {good} scoring >= 500")
    if len(cands) < 20 or opposite == 0 or good == 0:
        problems.append(f"{reads_file.name}: the simulation should give overlaps on both strands")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--overlapper", required=True)
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    reads = simulate()
    problems = []
    for fastq in (False, True):
        path = args.work / ("reads.fq" if fastq else "reads.fa")
        write(reads, path, fastq)
        problems += check(args.overlapper, path, reads, args.work)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
