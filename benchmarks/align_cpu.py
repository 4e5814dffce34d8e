"""CPU alignment on one thread: warpdp's align family against parasail's fastest vectorised function.

    python benchmarks/align_cpu.py [--pairs 2000] [--lengths 125,512] [--long-pairs 32] [--long-lengths 2000,5000]
                                   [--modes global,semiglobal,local,extension] [--isa avx512] [--repeats 3]
                                   [--ksw2-lib /path/to/libksw2.so]

Workload: benchmarks/align.py's pairs (targets of L random bases, queries with 5-10 % differences):
--pairs of each of --lengths, then --long-pairs of each of --long-lengths (fewer: the DP is quadratic),
affine gaps, match 2, mismatch -3, open 5, extend 2 (a gap of length L costs 5 + 2*(L-1), parasail's
convention). Modes and parasail's functions: global = nw, semiglobal = sg_dx (free target ends),
local = sw. For each mode parasail's striped, scan and diag functions with 16-bit and saturation-checked
lanes are timed and the fastest is the baseline; with CIGAR, their ``_trace_`` forms plus
``get_cigar``. Extension (no z-drop) is compared with ksw2's ``ksw_extd2_sse`` (KSW_EZ_EXTZ_ONLY, both
gap models set to open 3, extend 2: its gap of length L costs 3 + 2L, the same 5 + 2(L-1); no band),
called per pair through ctypes from a shared library built beside the project
(``gcc -O3 -march=native -shared -fPIC -o libksw2.so ksw2_extd2_sse.c kalloc.c`` in a ksw2 checkout);
its best scores are checked against warpdp's. Times are CPU seconds of this process (``time.process_time``) on one thread
(warpdp ``threads=1``; parasail is single-threaded), the median of --repeats runs over the same
pairs. parasail is called once per pair from Python (its binding has no batch call); the per-pair
call overhead, measured on 1-base pairs, is printed and NOT subtracted. X
time over warpdp's (above 1: warpdp is faster). parasail is a benchmark-only dependency
(``pip install parasail``, the ``dev`` extra).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from align import make_pairs  # noqa: E402
from bench_common import commit, cpu_name  # noqa: E402
from warpdp.plugin.align import AlignPairs, AlignParams, align  # noqa: E402

PARASAIL_MODES = {"global": "nw", "semiglobal": "sg_dx", "local": "sw"}
VARIANTS = ("striped_16", "scan_16", "diag_16", "striped_sat", "scan_sat", "diag_sat")
OPEN, EXTEND = 5, 2


def as_strings(pairs: AlignPairs) -> list[tuple[str, str]]:
    q, t = bytes(pairs.query_bases), bytes(pairs.target_bases)
    qo, to = pairs.query_offsets, pairs.target_offsets
    return [(q[qo[i]:qo[i + 1]].decode(), t[to[i]:to[i + 1]].decode()) for i in range(len(qo) - 1)]


def cpu_seconds(run, repeats: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def parasail_runner(parasail, name: str, strings, matrix, cigar: bool):
    function = getattr(parasail, name)
    if cigar:
        def run():
            for query, target in strings:
                function(query, target, OPEN, EXTEND, matrix).get_cigar()
    else:
        def run():
            for query, target in strings:
                function(query, target, OPEN, EXTEND, matrix)
    return run


def fastest_parasail(parasail, mode: str, strings, matrix, cigar: bool, repeats: int) -> tuple[str, float]:
    prefix = PARASAIL_MODES[mode] + ("_trace_" if cigar else "_")
    best = ("", float("inf"))
    for variant in VARIANTS:
        name = prefix + variant
        if not hasattr(parasail, name):
            continue
        seconds = cpu_seconds(parasail_runner(parasail, name, strings, matrix, cigar), repeats)
        if seconds < best[1]:
            best = (name, seconds)
    return best


def ksw2_runner(path: str, strings, cigar: bool):
    """ksw_extd2_sse over every pair (module doc); run() returns the best scores."""
    import ctypes

    class Extension(ctypes.Structure):  # ksw_extz_t
        _fields_ = [("max_zdropped", ctypes.c_uint32), ("max_q", ctypes.c_int), ("max_t", ctypes.c_int),
                    ("mqe", ctypes.c_int), ("mqe_t", ctypes.c_int), ("mte", ctypes.c_int), ("mte_q", ctypes.c_int),
                    ("score", ctypes.c_int), ("m_cigar", ctypes.c_int), ("n_cigar", ctypes.c_int),
                    ("reach_end", ctypes.c_int), ("cigar", ctypes.POINTER(ctypes.c_uint32))]

    lib = ctypes.CDLL(path)
    function = lib.ksw_extd2_sse
    i8 = ctypes.c_int8
    function.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, i8,
                         ctypes.POINTER(i8), i8, i8, i8, i8, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                         ctypes.POINTER(Extension)]
    matrix = (i8 * 25)(*[2 if a == b and a < 4 else -3 for a in range(5) for b in range(5)])
    table = bytes.maketrans(b"ACGTN", bytes(range(5)))
    coded = [(q.encode().translate(table), t.encode().translate(table)) for q, t in strings]
    flag = 0x40 | (0 if cigar else 0x01)  # KSW_EZ_EXTZ_ONLY, KSW_EZ_SCORE_ONLY
    result = Extension()

    def run():
        scores = []
        for q, t in coded:
            function(None, len(q), q, len(t), t, 5, matrix, 3, 2, 3, 2, -1, -1, 0, flag, ctypes.byref(result))
            scores.append(result.max_zdropped & 0x7FFFFFFF)
        return scores
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2000, help="pairs per length")
    parser.add_argument("--lengths", default="125,512")
    parser.add_argument("--long-pairs", type=int, default=32, help="pairs per long length")
    parser.add_argument("--long-lengths", default="2000,5000", help="'' for none")
    parser.add_argument("--modes", default="global,semiglobal,local,extension")
    parser.add_argument("--isa", default=None, help="warpdp CPU variant (default: the best this CPU runs)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-parasail", action="store_true", help="warpdp rows only")
    parser.add_argument("--ksw2-lib", help="ksw2's shared library (module doc), for the extension rows")
    args = parser.parse_args()
    parasail = None if args.no_parasail else __import__("parasail")
    print(f"machine: {cpu_name()}, {len(os.sched_getaffinity(0))} cores; commit {commit()}")
    print(f"command: python {' '.join(sys.argv)}")
    if parasail is not None:
        matrix = parasail.matrix_create("ACGTN", 2, -3)
        print(f"parasail {parasail.__version__}")
        overhead = cpu_seconds(parasail_runner(parasail, "nw_striped_16", [("A", "A")] * 10000, matrix, False), 3)
        print(f"parasail per-call overhead (1-base pairs): {overhead / 10000 * 1e6:.2f} us")
    print("\n| length | mode | output | warpdp s | warpdp pairs/s | baseline function | baseline s | ratio |")
    print("| ---: | --- | --- | ---: | ---: | --- | ---: | ---: |")
    workloads = [(args.pairs, int(x)) for x in args.lengths.split(",") if x]
    workloads += [(args.long_pairs, int(x)) for x in args.long_lengths.split(",") if x]
    for count, length in workloads:
        pairs = make_pairs(count, length)
        strings = as_strings(pairs)
        for mode in args.modes.split(","):
            for cigar in (False, True):
                params = AlignParams(mode=mode, cigar=cigar)
                ours = cpu_seconds(lambda: align(pairs, params, backend="cpu", threads=1, cpu_isa=args.isa),
                                   args.repeats)
                name, theirs = ("-", float("nan"))
                if parasail is not None and mode in PARASAIL_MODES:
                    name, theirs = fastest_parasail(parasail, mode, strings, matrix, cigar, args.repeats)
                if args.ksw2_lib and mode == "extension":
                    run = ksw2_runner(args.ksw2_lib, strings, cigar)
                    if run() != list(align(pairs, params, backend="cpu").columns["score"]):
                        raise SystemExit("ksw2 and warpdp disagree on an extension score")
                    name, theirs = "ksw_extd2_sse", cpu_seconds(run, args.repeats)
                print(f"| {length} | {mode} | {'CIGAR' if cigar else 'score'} | {ours:.4f} | "
                      f"{count / ours:,.0f} | {name} | {theirs:.4f} | {theirs / ours:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
