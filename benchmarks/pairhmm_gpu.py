"""Benchmark of the GPU Pair-HMM backend (issue 3).

Reports
  (a) kernel-only GCUPS on uniform lengths (reads 64..512 x haplotypes 128..1,024), input already
      on the device, and the peak over them;
  (b) end-to-end time and GCUPS, from packed arrays in host memory to results in host memory
      (warpdp.kernels.pairhmm.forward, after warm-up), on 10s.in and on a generated GATK-like
      input of >= 4e9 cells (fixed seed).
GCUPS counts useful cells (sum of read length x haplotype length), not padding.

Usage: python3 benchmarks/pairhmm_gpu.py [--quick] [--data DIR] [--markdown FILE]
"""
from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import warpdp  # noqa: E402
from bench_common import commit  # noqa: E402
from warpdp.kernels import pairhmm as gpu  # noqa: E402
from warpdp.plugin.pairhmm import PairHmmBatches, pairhmm  # noqa: E402

ALPHABET = np.frombuffer(b"ACGT", dtype=np.uint8)


def uniform_batches(read_len: int, hap_len: int, target_cells: float, seed: int = 1,
                    reads_per_batch: int = 16, haps_per_batch: int = 8) -> PairHmmBatches:
    """Equal lengths; reads copied from their batch's first haplotype with 1% errors."""
    rng = np.random.default_rng(seed)
    pairs_per_batch = reads_per_batch * haps_per_batch
    n_batches = max(1, int(round(target_cells / (read_len * hap_len * pairs_per_batch))))
    n_reads, n_haps = n_batches * reads_per_batch, n_batches * haps_per_batch
    # The haplotypes of a batch are one sequence with 1% substitutions (all but the first).
    first = ALPHABET[rng.integers(0, 4, (n_batches, 1, hap_len))]
    haps = np.repeat(first, haps_per_batch, axis=1)
    subs = rng.random(haps.shape) < 0.01
    subs[:, 0] = False
    haps[subs] = ALPHABET[rng.integers(0, 4, int(subs.sum()))]
    start = rng.integers(0, max(1, hap_len - read_len + 1), n_reads)
    batch_of_read = np.repeat(np.arange(n_batches), reads_per_batch)
    if read_len <= hap_len:
        cols = start[:, None] + np.arange(read_len)[None, :]
        reads = haps[batch_of_read[:, None], 0, cols]
    else:
        reads = ALPHABET[rng.integers(0, 4, (n_reads, read_len))]
    errors = rng.random(reads.shape) < 0.01
    reads[errors] = ALPHABET[rng.integers(0, 4, int(errors.sum()))]
    n_bases = n_reads * read_len
    return PairHmmBatches.from_arrays(
        read_bases=reads.reshape(-1), read_quals=rng.integers(10, 41, n_bases).astype(np.uint8),
        read_ins=np.full(n_bases, 45, np.uint8), read_del=np.full(n_bases, 45, np.uint8),
        read_gcp=np.full(n_bases, 10, np.uint8),
        read_offsets=np.arange(n_reads + 1, dtype=np.int64) * read_len,
        hap_bases=haps.reshape(-1), hap_offsets=np.arange(n_haps + 1, dtype=np.int64) * hap_len,
        batch_reads=np.arange(n_batches + 1, dtype=np.int64) * reads_per_batch,
        batch_haps=np.arange(n_batches + 1, dtype=np.int64) * haps_per_batch)


def gatk_like_batches(min_cells: float, seed: int = 2024) -> PairHmmBatches:
    """Active-region-like batches: 10-120 reads (70% of 151 bases, the rest 30-150 after
    clipping) against 2-8 haplotypes of 250-650 bases that are variants of one reference;
    reads come from a haplotype with 1% errors; base quals 10-40, GATK's default ins/del 45
    and gap continuation 10."""
    rng = np.random.default_rng(seed)
    reads_l, haps_l, batch_reads, batch_haps = [], [], [], []
    read_lens, hap_lens = [], []
    cells = 0.0
    while cells < min_cells:
        nr, nh = int(rng.integers(10, 121)), int(rng.integers(2, 9))
        ref_len = int(rng.integers(250, 651))
        ref = ALPHABET[rng.integers(0, 4, ref_len + 8)]
        haps = []
        for _ in range(nh):
            hl = ref_len + int(rng.integers(-6, 7))
            h = ref[:hl].copy()
            subs = rng.random(hl) < 0.005
            h[subs] = ALPHABET[rng.integers(0, 4, int(subs.sum()))]
            haps.append(h)
        lens = np.where(rng.random(nr) < 0.7, 151, rng.integers(30, 151, nr))
        for rl in lens:
            h = haps[int(rng.integers(0, nh))]
            s = int(rng.integers(0, len(h) - rl + 1))
            r = h[s:s + rl].copy()
            err = rng.random(rl) < 0.01
            r[err] = ALPHABET[rng.integers(0, 4, int(err.sum()))]
            reads_l.append(r)
        read_lens.extend(int(x) for x in lens)
        haps_l.extend(haps)
        hap_lens.extend(len(h) for h in haps)
        batch_reads.append(nr)
        batch_haps.append(nh)
        cells += float(lens.sum()) * sum(len(h) for h in haps)
    n_bases = int(sum(read_lens))

    def offsets(values: list[int]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(values, dtype=np.int64)])

    return PairHmmBatches.from_arrays(
        read_bases=np.concatenate(reads_l), read_quals=rng.integers(10, 41, n_bases).astype(np.uint8),
        read_ins=np.full(n_bases, 45, np.uint8), read_del=np.full(n_bases, 45, np.uint8),
        read_gcp=np.full(n_bases, 10, np.uint8), read_offsets=offsets(read_lens),
        hap_bases=np.concatenate(haps_l), hap_offsets=offsets(hap_lens),
        batch_reads=offsets(batch_reads), batch_haps=offsets(batch_haps))


def end_to_end(batches: PairHmmBatches, warmup: int, repeats: int) -> tuple[float, np.ndarray]:
    out = np.empty(batches.n_pairs)
    for _ in range(warmup):
        gpu.forward(batches, out)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        gpu.forward(batches, out)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer shapes and repeats")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "pairhmm")
    parser.add_argument("--cells", type=float, default=4.2e9, help="cells of the generated input")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    parser.add_argument("--read-lens", type=int, nargs="+", help="kernel-only read lengths (default: a sweep)")
    parser.add_argument("--hap-lens", type=int, nargs="+", help="kernel-only haplotype lengths")
    parser.add_argument("--kernel-only", action="store_true", help="skip the end-to-end part")
    args = parser.parse_args()

    info = gpu.device_info()
    lines = [f"Device: {info['name']} ({info['multiprocessors']} SMs, "
             f"{info['total_memory_bytes'] / 2**30:.0f} GiB), CuPy {info['cupy_version']}, "
             f"CUDA runtime {info['cuda_runtime_version']}; commit {commit()}",
             f"Command: python3 {' '.join(shlex.quote(a) for a in sys.argv)}", ""]

    # (a) kernel-only, uniform lengths
    read_lens = args.read_lens or ((64, 128, 256, 512) if args.quick else (64, 128, 160, 192, 256, 512, 1024))
    hap_lens = args.hap_lens or ((128, 512, 1024) if args.quick else (128, 256, 512, 1024))
    repeats = 3 if args.quick else 7
    rows = []
    gpu.forward(uniform_batches(64, 128, 1e6), np.empty(128))  # compile and warm up
    for rl in read_lens:
        for hl in hap_lens:
            if rl > hl:  # haplotypes are the longer sequence in practice (and a longer read is noise)
                continue
            batches = uniform_batches(rl, hl, 1e10)
            seconds = statistics.median(gpu.kernel_seconds(batches, repeats=repeats))
            rows.append((rl, hl, batches.n_pairs, batches.n_cells, seconds))
            print(f"kernel R={rl} H={hl}: {batches.n_cells / seconds / 1e9:.0f} GCUPS", flush=True)
    peak = max(rows, key=lambda r: r[3] / r[4])
    lines += ["### (a) Kernel only, uniform lengths (input on the device)", "",
              "| read length | hap length | pairs | cells | kernel ms | GCUPS |",
              "|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {rl} | {hl} | {n:,} | {c:.3g} | {s * 1e3:.2f} | {c / s / 1e9:,.0f} |" for rl, hl, n, c, s in rows]
    lines += ["", f"Peak: **{peak[3] / peak[4] / 1e12:.2f} TCUPS** (R={peak[0]}, H={peak[1]}); "
              "target >= 2.6 TCUPS.", ""]
    if args.kernel_only:
        print("\n".join(lines))
        return

    # (b) end to end
    e2e = []
    ten_s = args.data / "10s.in"
    if ten_s.exists():
        batches = warpdp.read_pairhmm_text(ten_s)
        seconds, out = end_to_end(batches, warmup=5, repeats=11 if args.quick else 51)
        expected_file = args.data / "10s.gkl.out"
        err = float(np.abs(out - np.loadtxt(expected_file)).max()) if expected_file.exists() else float("nan")
        t0 = time.perf_counter()
        pairhmm(batches, backend="cpu")
        cpu_seconds = time.perf_counter() - t0
        e2e.append(("10s.in", batches, seconds, f"max abs err vs GKL {err:.1e}; CPU backend "
                                                 f"{cpu_seconds * 1e3:.1f} ms; target < 1 ms, gpuPairHMM 1.8 ms"))
    else:
        print(f"skipping 10s.in: {ten_s} not found", flush=True)
    t0 = time.perf_counter()
    big = gatk_like_batches(args.cells)
    print(f"generated GATK-like input in {time.perf_counter() - t0:.1f} s: {big.n_pairs:,} pairs, "
          f"{big.n_cells:.3g} cells", flush=True)
    seconds, out = end_to_end(big, warmup=2, repeats=3 if args.quick else 7)
    kernel = statistics.median(gpu.kernel_seconds(big, repeats=3))
    dpath = float(np.mean(out < -28.0 - 120 * np.log10(2.0)))
    e2e.append(("GATK-like (generated, seed 2024)", big, seconds,
                 f"kernels alone {kernel * 1e3:.2f} ms ({big.n_cells / kernel / 1e12:.2f} TCUPS); "
                 f"{dpath:.1%} pairs on the double path; target >= 1.3 TCUPS, gpuPairHMM 0.97"))
    lines += ["### (b) End to end (host arrays to host results, after warm-up; median)", "",
              "| input | pairs | cells | time ms | GCUPS | pairs/s | notes |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for name, b, s, note in e2e:
        lines.append(f"| {name} | {b.n_pairs:,} | {b.n_cells:.3g} | {s * 1e3:.3f} | "
                     f"{b.n_cells / s / 1e9:,.0f} | {b.n_pairs / s:.3g} | {note} |")
    text = "\n".join(lines)
    print("\n" + text)
    if args.markdown:
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
