"""Checks of the GATK test (tests/gatk/run.sh): VCF identity, Pair-HMM results-file agreement, calls
against the truth set. Each check prints a PASS or FAIL line; the last line is 'N passed, N failed'.

    python3 tests/gatk/compare.py CHECKS.json

CHECKS.json: {"identical_vcfs": [[name, a.vcf.gz, b.vcf.gz], ...],
              "compare_vcfs": [[name, a.vcf.gz, b.vcf.gz], ...] (informational),
              "compare_hmm": [[name, a.txt, b.txt], ...] (informational),
              "hmm_files": [[name, a.txt, b.txt], ...], "tolerance": 1e-4,
              "truth": [[name, calls.vcf.gz, truth.vcf.gz, ref.fasta], ...],
              "somatic_truth": [[name, calls.vcf.gz, truth.vcf.gz, ref.fasta, sample], ...],
              "logs": [[name, file, [texts that must appear], text that must not appear or null], ...],
              "workloads": [[name, workload.in, expected.out], ...],
              "sw_counts": [[name, alignments the server computed, alignments the shim logged or null], ...],
              "times": times.tsv}
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pysam

RESULTS: list[tuple[bool, str]] = []


def check(ok: bool, message: str) -> None:
    RESULTS.append((ok, message))
    print(f"{'PASS' if ok else 'FAIL'}: {message}", flush=True)


def records(path: str) -> list[tuple]:
    """Every record as (CHROM, POS, REF, ALT, FILTER, INFO items, per sample (GT, GQ, PL, and the other
    FORMAT fields))."""
    out = []
    with pysam.VariantFile(path) as vcf:
        for r in vcf:
            info = tuple(sorted((k, repr(v)) for k, v in r.info.items()))
            samples = tuple(tuple((k, repr(v)) for k, v in s.items()) for s in r.samples.values())
            out.append((r.chrom, r.pos, r.ref, r.alts, tuple(r.filter.keys()), info, samples))
    return out


def identical_vcfs(name: str, a: str, b: str) -> None:
    ra, rb = records(a), records(b)
    diffs = [(x, y) for x, y in zip(ra, rb) if x != y]
    ok = len(ra) == len(rb) and not diffs
    detail = f"{len(ra)} records" if ok else (f"{len(ra)} vs {len(rb)} records, {len(diffs)} differ"
                                               + (f"; first: {diffs[0][0]} vs {diffs[0][1]}" if diffs else ""))
    check(ok and len(ra) > 0, f"{name}: VCF records (CHROM POS REF ALT FILTER INFO FORMAT) identical: {detail}")


def vcf_differences(name: str, a: str, b: str) -> None:
    """Informational (not a check): how far apart two runs that need not agree exactly are."""
    ra = {r[:4]: r for r in records(a)}
    rb = {r[:4]: r for r in records(b)}
    common = ra.keys() & rb.keys()
    same = sum(ra[k] == rb[k] for k in common)
    gt = sum(dict(ra[k][6][0]).get("GT") == dict(rb[k][6][0]).get("GT") for k in common)
    print(f"INFO: {name}: {len(ra)} vs {len(rb)} records, {len(common)} at the same site and alleles, "
          f"{gt} of them with the same GT, {same} identical in every field", flush=True)


def hmm_values(path: str) -> list[float]:
    values = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            values.append(float(line.rsplit(None, 1)[1]))
    return values


def hmm_inputs(path: str) -> list[str]:
    with open(path) as f:
        return [line.rsplit(None, 1)[0] for line in f if line.strip() and not line.startswith("#")]


def hmm_differences(name: str, a: str, b: str) -> None:
    """Informational (not a check): the largest log10 difference of two results files of the same pairs."""
    va, vb = hmm_values(a), hmm_values(b)
    if len(va) != len(vb) or hmm_inputs(a) != hmm_inputs(b):
        print(f"INFO: {name}: the results files list different pairs ({len(va)} vs {len(vb)})", flush=True)
        return
    diffs = sorted(abs(x - y) for x, y in zip(va, vb))
    print(f"INFO: {name}: {len(va)} pairs, max |dlog10| = {diffs[-1]:.3g}, median {diffs[len(diffs) // 2]:.3g}, "
          f"{sum(d > 1e-4 for d in diffs)} pairs above 1e-4", flush=True)


def print_unit(text: str) -> float:
    """One unit in the last digit of a printed value (GATK writes %e with 6 decimals: 1e-4 at -1.2e+02)."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def hmm_files(name: str, a: str, b: str, tolerance: float) -> None:
    """Same pairs, values within the tolerance (or one printed unit where the file prints coarser)."""
    with open(a) as fa, open(b) as fb:
        ta = [line.rsplit(None, 1) for line in fa if line.strip() and not line.startswith("#")]
        tb = [line.rsplit(None, 1) for line in fb if line.strip() and not line.startswith("#")]
    same_inputs = [x[0] for x in ta] == [y[0] for y in tb]
    worst, over = math.inf, 0
    if ta and len(ta) == len(tb):
        worst = 0.0
        for (_, x), (_, y) in zip(ta, tb):
            d = abs(float(x) - float(y))
            worst = max(worst, d)
            # 1e-9 relative slack: the difference of two decimal prints is not exact in binary.
            over += d > max(tolerance, print_unit(x), print_unit(y)) * (1 + 1e-9)
    ok = len(ta) == len(tb) and len(ta) > 0 and same_inputs and over == 0
    check(ok, f"{name}: Pair-HMM results files: {len(ta)} vs {len(tb)} pairs, same inputs: {same_inputs}, "
              f"max |dlog10| = {worst:.3g}, {over} over the tolerance ({tolerance:g})")


def normalized(ref: pysam.FastaFile, chrom: str, pos: int, a: str, b: str) -> tuple[str, int, str, str]:
    """Left-aligned, minimal representation of a REF>ALT pair (pos 1-based)."""
    while len(a) > 1 and len(b) > 1 and a[-1] == b[-1]:
        a, b = a[:-1], b[:-1]
    while len(a) != len(b) and (a[-1] == b[-1]) and pos > 1:
        base = ref.fetch(chrom, pos - 2, pos - 1).upper()
        a, b, pos = base + a[:-1], base + b[:-1], pos - 1
        while len(a) > 1 and len(b) > 1 and a[-1] == b[-1]:
            a, b = a[:-1], b[:-1]
    while len(a) > 1 and len(b) > 1 and a[0] == b[0]:
        a, b, pos = a[1:], b[1:], pos + 1
    return chrom, pos, a, b


def alleles(path: str, ref: pysam.FastaFile, sample: int | str = 0) -> dict[tuple, str]:
    """Called non-reference alleles -> genotype class ('het' / 'hom')."""
    out = {}
    with pysam.VariantFile(path) as vcf:
        for r in vcf:
            if r.filter.keys() not in ([], ["PASS"]):
                continue
            gt = r.samples[sample].get("GT") if len(r.samples) else None
            for i, alt in enumerate(r.alts or (), start=1):
                if alt.startswith("<") or alt == "*":
                    continue
                if gt is not None and i not in gt:
                    continue
                kind = "hom" if gt is not None and all(g == i for g in gt) else "het"
                out[normalized(ref, r.chrom, r.pos, r.ref, alt)] = kind
    return out


def truth_check(name: str, calls: str, truth: str, fasta: str) -> None:
    ref = pysam.FastaFile(fasta)
    c, t = alleles(calls, ref), alleles(truth, ref)
    tp = len(c.keys() & t.keys())
    recall, precision = tp / max(1, len(t)), tp / max(1, len(c))
    gt_ok = sum(c[k] == t[k] for k in c.keys() & t.keys()) / max(1, tp)
    snv = {k for k in t if len(k[2]) == len(k[3])}
    indel = t.keys() - snv
    # A sanity check of the data set and the run, not a benchmark: loose bounds.
    check(recall > 0.8 and precision > 0.8,
          f"{name}: recall {recall:.3f} ({tp}/{len(t)}; SNVs {len(c.keys() & snv)}/{len(snv)}, indels "
          f"{len(c.keys() & indel)}/{len(indel)}), precision {precision:.3f} ({tp}/{len(c)}), genotype "
          f"agreement {gt_ok:.3f}")


def somatic_check(name: str, calls: str, truth: str, fasta: str, sample: str) -> None:
    ref = pysam.FastaFile(fasta)
    c, t = alleles(calls, ref, sample), alleles(truth, ref)
    tp = len(c.keys() & t.keys())
    recall = tp / max(1, len(t))
    # Unfiltered Mutect2 calls include the germline variants (no FilterMutectCalls, no germline resource):
    # only the recall of the somatic truth is checked.
    check(recall > 0.8, f"{name}: recall {recall:.3f} ({tp}/{len(t)}); {len(c)} unfiltered calls in {sample}")


def log_check(name: str, path: str, must: list[str], must_not: str | None) -> None:
    text = Path(path).read_text(errors="replace")
    ok = all(m in text for m in must) and (must_not is None or must_not not in text)
    check(ok, f"{name}: log {Path(path).name} has {must!r}" + (f" and not {must_not!r}" if must_not else ""))


def sw_count_check(name: str, on_server: int, by_shim: int | None) -> None:
    """The shim really aligned on the server (not vacuous), and the server saw every alignment it sent."""
    ok = on_server > 0 and (by_shim is None or by_shim == on_server)
    check(ok, f"{name}: {on_server} on the server's /metrics" + ("" if by_shim is None else f", {by_shim} logged by "
                                                                  "the shim"))


def workload_check(name: str, workload: str, expected: str) -> None:
    import numpy as np

    import warpdp
    batches = warpdp.read_pairhmm_text(workload)
    want = np.loadtxt(expected, ndmin=1)
    got = warpdp.pairhmm(batches)
    worst = float(np.max(np.abs(got - want))) if len(want) == len(got) and len(got) else math.inf
    check(worst <= 1e-4, f"{name}: {batches.n_batches} regions, {len(got)} pairs replayed with warpdp "
                         f"(CPU), max |dlog10| vs GKL = {worst:.3g}")


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    tolerance = float(spec.get("tolerance", 1e-4))
    for name, path, must, must_not in spec.get("logs", []):
        log_check(name, path, must, must_not)
    for name, on_server, by_shim in spec.get("sw_counts", []):
        sw_count_check(name, on_server, by_shim)
    for name, a, b in spec.get("identical_vcfs", []):
        identical_vcfs(name, a, b)
    for name, a, b in spec.get("compare_vcfs", []):
        vcf_differences(name, a, b)
    for name, a, b in spec.get("hmm_files", []):
        hmm_files(name, a, b, tolerance)
    for name, a, b in spec.get("compare_hmm", []):
        hmm_differences(name, a, b)
    for name, calls, truth, fasta in spec.get("truth", []):
        truth_check(name, calls, truth, fasta)
    for name, calls, truth, fasta, sample in spec.get("somatic_truth", []):
        somatic_check(name, calls, truth, fasta, sample)
    for name, workload, expected in spec.get("workloads", []):
        workload_check(name, workload, expected)
    if spec.get("times"):
        print("wall times:")
        print(Path(spec["times"]).read_text().rstrip())
    failed = sum(not ok for ok, _ in RESULTS)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
