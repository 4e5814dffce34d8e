"""Makes the small, realistic data set of the GATK test (tests/gatk/run.sh), from a fixed seed, with
nothing downloaded:

- ref.fasta (+ .fai, .dict): one synthetic contig with segmental duplications, dispersed repeat copies,
  homopolymers, short tandem repeats and GC-rich / AT-rich stretches;
- truth.vcf.gz (+ .tbi): germline SNPs and indels of 1-50 bp, het and hom-alt, sample "sample1";
- sample.bam (+ .bai): simulated paired 2x150 reads of sample1 (insert ~350 bp) at --depth, with
  quality-dependent substitution errors, aligned as simulated (CIGAR through the indels; mapping quality 0
  for half the reads inside segmental duplications), read group with SM;
- with --somatic: normal.bam (SM normal: the same germline genome) and tumor.bam (SM tumor: germline plus
  somatic SNVs and indels in a fraction --purity of the cells), and somatic_truth.vcf.gz.

    python3 tests/gatk/make_dataset.py OUTDIR [--length 300000] [--depth 35] [--seed 1]
"""
from __future__ import annotations

import argparse
import array
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pysam

BASES = np.frombuffer(b"ACGT", dtype=np.uint8)
COMPLEMENT = bytes.maketrans(b"ACGTN", b"TGCAN")
CONTIG = "chrS"
READ_LEN = 150


def random_seq(rng: np.random.Generator, n: int, gc: float = 0.41) -> np.ndarray:
    p = np.array([(1 - gc) / 2, gc / 2, gc / 2, (1 - gc) / 2])
    return BASES[rng.choice(4, size=n, p=p)]


def mutate(rng: np.random.Generator, seq: np.ndarray, rate: float) -> np.ndarray:
    out = seq.copy()
    hit = rng.random(len(out)) < rate
    out[hit] = BASES[rng.integers(0, 4, hit.sum())]
    return out


def make_reference(rng: np.random.Generator, length: int) -> tuple[bytes, list[tuple[int, int]]]:
    """A contig of background sequence with the repeat content that makes calling hard, and the intervals
    of its segmental duplications (both copies)."""
    # Background in 5-20 kb blocks of varying GC content.
    parts, n = [], 0
    while n < length:
        block = int(rng.integers(5_000, 20_000))
        parts.append(random_seq(rng, block, gc=float(rng.choice([0.35, 0.41, 0.41, 0.5, 0.6]))))
        n += block
    seq = np.concatenate(parts)[:length]

    def put(pos: int, piece: np.ndarray) -> None:
        end = min(length, pos + len(piece))
        seq[pos:end] = piece[: end - pos]

    # A 300 bp element dispersed ~10% diverged (Alu-like), one copy per ~8 kb.
    element = random_seq(rng, 300, gc=0.52)
    for pos in rng.integers(1_000, length - 1_000, length // 8_000):
        piece = mutate(rng, element, 0.10)
        put(int(pos), piece if rng.random() < 0.5 else piece[::-1])
    # Segmental duplications: 2-5 kb copied elsewhere with 1-2% divergence.
    dups = []
    for _ in range(max(1, length // 100_000)):
        size = int(rng.integers(2_000, 5_000))
        src = int(rng.integers(1_000, length - size - 1_000))
        dst = int(rng.integers(1_000, length - size - 1_000))
        put(dst, mutate(rng, seq[src:src + size].copy(), float(rng.uniform(0.01, 0.02))))
        dups += [(src, src + size), (dst, dst + size)]
    # Homopolymers (8-25 bp) and short tandem repeats (unit 2-6, 20-80 bp), one of each per ~2 kb.
    for pos in rng.integers(500, length - 500, length // 2_000):
        put(int(pos), np.full(int(rng.integers(8, 26)), BASES[rng.integers(0, 4)]))
    for pos in rng.integers(500, length - 500, length // 2_000):
        unit = random_seq(rng, int(rng.integers(2, 7)))
        total = int(rng.integers(20, 81))
        put(int(pos), np.tile(unit, total // len(unit) + 1)[:total])
    return seq.tobytes(), dups


@dataclass
class Variant:
    pos: int        # 0-based position of REF's first base
    ref: bytes
    alt: bytes
    haps: tuple[int, ...]   # haplotypes carrying it: (0,), (1,) or (0, 1)


def make_variants(rng: np.random.Generator, ref: bytes, every: int, avoid: set[int] = frozenset(),
                  hom_fraction: float = 0.4, max_indel: int = 50) -> list[Variant]:
    """SNPs (~70%), insertions and deletions of 1-max_indel bp (most short), spaced at least 80 bp."""
    length = len(ref)
    variants: list[Variant] = []
    pos = 1_000 + int(rng.integers(0, every))
    while pos < length - 1_000:
        kind = rng.random()
        size = int(min(max_indel, rng.geometric(0.35) if rng.random() < 0.85 else rng.integers(10, max_indel + 1)))
        if kind < 0.7:
            alt = bytes([int(rng.choice([b for b in b"ACGT" if b != ref[pos]]))])
            v = Variant(pos, ref[pos:pos + 1], alt, ())
        elif kind < 0.85:
            v = Variant(pos, ref[pos:pos + 1], ref[pos:pos + 1] + random_seq(rng, size).tobytes(), ())
        else:
            v = Variant(pos, ref[pos:pos + size + 1], ref[pos:pos + 1], ())
        if b"N" not in v.ref and not any(abs(pos - a) < 100 for a in avoid):
            v.haps = (0, 1) if rng.random() < hom_fraction else ((0,) if rng.random() < 0.5 else (1,))
            variants.append(v)
        pos += len(v.ref) + 80 + int(rng.integers(0, 2 * every))
    return variants


class Haplotype:
    """The reference with some variants applied, and where each of its bases sits on the reference."""

    def __init__(self, ref: bytes, variants: list[Variant]):
        seq, ref_pos, last = [], [], 0
        for v in sorted(variants, key=lambda v: v.pos):
            seq.append(ref[last:v.pos])
            ref_pos.append(np.arange(last, v.pos))
            # Anchor base, then the ALT's remaining bases as an insertion (-1) or nothing for a deletion.
            common = min(len(v.ref), len(v.alt))
            seq.append(v.alt)
            if len(v.ref) == len(v.alt):
                ref_pos.append(np.arange(v.pos, v.pos + len(v.ref)))
            else:
                ref_pos.append(np.concatenate([np.arange(v.pos, v.pos + common),
                                               np.full(len(v.alt) - common, -1)]))
            last = v.pos + len(v.ref)
        seq.append(ref[last:])
        ref_pos.append(np.arange(last, len(ref)))
        self.seq = b"".join(seq)
        self.ref_pos = np.concatenate(ref_pos).astype(np.int64)

    def alignment(self, start: int, end: int) -> tuple[int, list[tuple[int, int]]] | None:
        """Reference start and CIGAR of hap[start:end]; None when no base is on the reference."""
        rp = self.ref_pos[start:end]
        on_ref = np.flatnonzero(rp >= 0)
        if len(on_ref) == 0:
            return None
        if len(on_ref) == len(rp) and rp[-1] - rp[0] == len(rp) - 1:
            return int(rp[0]), [(0, len(rp))]
        first, last = int(on_ref[0]), int(on_ref[-1])
        cigar: list[tuple[int, int]] = []

        def add(op: int, n: int) -> None:
            if n:
                if cigar and cigar[-1][0] == op:
                    cigar[-1] = (op, cigar[-1][1] + n)
                else:
                    cigar.append((op, n))

        add(4, first)  # leading inserted bases: soft clip
        prev = None
        for i in range(first, last + 1):
            p = int(rp[i])
            if p < 0:
                add(1, 1)
                continue
            if prev is not None and p > prev + 1:
                add(2, p - prev - 1)
            add(0, 1)
            prev = p
        add(4, len(rp) - 1 - last)
        return int(rp[first]), cigar


def quality_profile(rng: np.random.Generator, n: int) -> np.ndarray:
    """Illumina-like qualities: high at the start, falling along the read, with the odd low-quality base."""
    trend = np.linspace(37, 26, READ_LEN)
    q = trend[None, :] + rng.normal(0, 3, (n, READ_LEN))
    dips = rng.random((n, READ_LEN)) < 0.01
    q[dips] = rng.integers(2, 12, dips.sum())
    return np.clip(np.rint(q), 2, 41).astype(np.uint8)


def add_errors(rng: np.random.Generator, bases: np.ndarray, quals: np.ndarray) -> np.ndarray:
    """Substitutions with probability 10^(-Q/10) at each base."""
    err = rng.random(bases.shape) < 10.0 ** (-quals.astype(np.float64) / 10.0)
    shift = rng.integers(1, 4, err.sum()).astype(np.uint8)
    idx = np.searchsorted(BASES, bases[err])
    out = bases.copy()
    out[err] = BASES[(idx + shift) % 4]
    return out


def simulate_reads(rng: np.random.Generator, haps: list[Haplotype], weights: list[float], depth: float,
                   ref_len: int, name: str) -> list[tuple]:
    """Pairs from the haplotypes in proportion to weights; each read as
    (ref_start, name, flag, seq, quals, cigar, mate_start, tlen)."""
    n_pairs = int(depth * ref_len / (2 * READ_LEN))
    hap_of = rng.choice(len(haps), size=n_pairs, p=np.asarray(weights) / np.sum(weights))
    inserts = np.clip(rng.normal(350, 50, n_pairs), 2 * READ_LEN // 2 + 20, 600).astype(np.int64)
    quals = quality_profile(rng, 2 * n_pairs)
    reads = []
    for i in range(n_pairs):
        hap = haps[hap_of[i]]
        ins = int(inserts[i])
        frag = int(rng.integers(0, len(hap.seq) - ins))
        s1, s2 = frag, frag + ins - READ_LEN
        a1, a2 = hap.alignment(s1, s1 + READ_LEN), hap.alignment(s2, s2 + READ_LEN)
        if a1 is None or a2 is None:
            continue
        q1, q2 = quals[2 * i], quals[2 * i + 1]
        b1 = add_errors(rng, np.frombuffer(hap.seq[s1:s1 + READ_LEN], dtype=np.uint8), q1)
        # Read 2 is sequenced from the other end: its qualities fall towards the fragment's start.
        q2 = q2[::-1]
        b2 = add_errors(rng, np.frombuffer(hap.seq[s2:s2 + READ_LEN], dtype=np.uint8), q2)
        qname = f"{name}:{i}"
        p1, c1 = a1
        p2, c2 = a2
        tlen = p2 + sum(n for op, n in c2 if op in (0, 2)) - p1
        # Either strand of the fragment is read first: first-forward (99/147) or second-forward (163/83).
        f1, f2 = (99, 147) if rng.random() < 0.5 else (163, 83)
        reads.append((p1, qname, f1, b1.tobytes(), q1, c1, p2, tlen))
        reads.append((p2, qname, f2, b2.tobytes(), q2, c2, p1, -tlen))
    return reads


def write_bam(path: Path, reads: list[tuple], ref_len: int, sample: str, rng: np.random.Generator,
              ambiguous: list[tuple[int, int]]) -> None:
    """Sorted, indexed BAM. A read mostly inside a segmental duplication gets mapping quality 0 half the
    time (an aligner cannot always tell the copies apart), else 60."""
    header = {"HD": {"VN": "1.6", "SO": "coordinate"},
              "SQ": [{"SN": CONTIG, "LN": ref_len}],
              "RG": [{"ID": f"{sample}.rg1", "SM": sample, "LB": f"{sample}.lib1", "PL": "ILLUMINA",
                      "PU": f"{sample}.unit1"}],
              "PG": [{"ID": "make_dataset", "PN": "warpdp tests/gatk/make_dataset.py"}]}
    reads.sort(key=lambda r: (r[0], r[1], r[2]))
    with pysam.AlignmentFile(str(path), "wb", header=header) as out:
        for pos, qname, flag, seq, qual, cigar, mpos, tlen in reads:
            a = pysam.AlignedSegment(out.header)
            a.query_name, a.flag, a.reference_id, a.reference_start = qname, flag, 0, pos
            inside = any(min(pos + READ_LEN, e) - max(pos, s) >= READ_LEN // 2 for s, e in ambiguous)
            a.mapping_quality = 0 if inside and rng.random() < 0.5 else 60
            a.cigartuples = cigar
            a.next_reference_id, a.next_reference_start, a.template_length = 0, mpos, tlen
            a.query_sequence = seq.decode()
            a.query_qualities = array.array("B", qual.tobytes())
            a.set_tag("RG", f"{sample}.rg1")
            out.write(a)
    pysam.index(str(path))


def write_reference(out: Path, ref: bytes) -> None:
    fasta = out / "ref.fasta"
    with open(fasta, "w") as f:
        f.write(f">{CONTIG}\n")
        for i in range(0, len(ref), 60):
            f.write(ref[i:i + 60].decode() + "\n")
    pysam.faidx(str(fasta))
    md5 = hashlib.md5(ref.upper()).hexdigest()
    (out / "ref.dict").write_text("@HD\tVN:1.6\tSO:unsorted\n"
                                  f"@SQ\tSN:{CONTIG}\tLN:{len(ref)}\tM5:{md5}\tUR:file:{fasta.resolve()}\n")


def write_vcf(path: Path, variants: list[Variant], ref_len: int, sample: str) -> None:
    plain = path.with_suffix("")  # x.vcf.gz -> x.vcf
    with open(plain, "w") as f:
        f.write("##fileformat=VCFv4.2\n"
                f"##contig=<ID={CONTIG},length={ref_len}>\n"
                '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
                f"#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t{sample}\n")
        for v in sorted(variants, key=lambda v: v.pos):
            gt = "1|1" if v.haps == (0, 1) else ("1|0" if v.haps == (0,) else "0|1")
            f.write(f"{CONTIG}\t{v.pos + 1}\t.\t{v.ref.decode()}\t{v.alt.decode()}\t.\tPASS\t.\tGT\t{gt}\n")
    pysam.tabix_index(str(plain), preset="vcf", force=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--length", type=int, default=300_000, help="contig length (bp)")
    ap.add_argument("--depth", type=float, default=35.0, help="read depth of sample.bam")
    ap.add_argument("--variant-spacing", type=int, default=700, help="mean distance between germline variants")
    ap.add_argument("--somatic", action="store_true", help="also make tumor.bam and normal.bam")
    ap.add_argument("--somatic-length", type=int, default=0,
                    help="simulate the tumour/normal reads on the first N bp only (0: the whole contig)")
    ap.add_argument("--purity", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)

    ref, dups = make_reference(rng, args.length)
    write_reference(args.out, ref)
    germline = make_variants(rng, ref, args.variant_spacing)
    write_vcf(args.out / "truth.vcf.gz", germline, len(ref), "sample1")
    haps = [Haplotype(ref, [v for v in germline if h in v.haps]) for h in (0, 1)]
    write_bam(args.out / "sample.bam", simulate_reads(rng, haps, [1, 1], args.depth, len(ref), "s1"),
              len(ref), "sample1", rng, dups)
    print(f"{args.out}: {len(ref)} bp, {len(germline)} germline variants "
          f"({sum(len(v.ref) != len(v.alt) for v in germline)} indels), sample.bam at {args.depth}x")

    if args.somatic:
        span = args.somatic_length or len(ref)
        somatic = make_variants(rng, ref[:span], 3_000, avoid={v.pos for v in germline}, hom_fraction=0.0,
                                max_indel=20)
        for v in somatic:
            v.haps = (0,)
        write_vcf(args.out / "somatic_truth.vcf.gz", somatic, len(ref), "tumor")
        # Germline and somatic variants never overlap (avoid), so they apply together.
        tumour_hap = Haplotype(ref, [v for v in germline if 0 in v.haps] + somatic)
        sub_ref = ref[:span]
        # Reads only over the first `span` bases: haplotypes cut where their reference position passes it.
        def cut(h: Haplotype) -> Haplotype:
            keep = int(np.searchsorted(np.maximum.accumulate(h.ref_pos), span))
            c = Haplotype.__new__(Haplotype)
            c.seq, c.ref_pos = h.seq[:keep], h.ref_pos[:keep]
            return c
        normal_haps = [cut(h) for h in haps]
        tumour_haps = normal_haps + [cut(tumour_hap)]
        p = args.purity
        write_bam(args.out / "normal.bam", simulate_reads(rng, normal_haps, [1, 1], 30, len(sub_ref), "n"),
                  len(ref), "normal", rng, dups)
        write_bam(args.out / "tumor.bam",
                  simulate_reads(rng, tumour_haps, [0.5 * (1 - p), 0.5, 0.5 * p], 40, len(sub_ref), "t"),
                  len(ref), "tumor", rng, dups)
        print(f"{args.out}: {len(somatic)} somatic variants on the first {span} bp (purity {p}), "
              f"normal.bam 30x, tumor.bam 40x")


if __name__ == "__main__":
    main()
