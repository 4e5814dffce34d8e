"""`warpdp align`: the align family's subcommand (registered by warpdp.registry's align entry)."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from .plugin.align import GAP_CONVENTIONS, GAP_MODELS, MODES, OVERHANGS

DESCRIPTION = """\
Align pairs: global (Needleman-Wunsch), semiglobal (whole query inside the target), local
(Smith-Waterman), extension (anchored at both starts, best cell, optional z-drop) or gatk (GATK's
Smith-Waterman exactly as Intel GKL computes it; query = alt, target = ref).
Input: TSV lines 'query<TAB>target', or with --targets a FASTA/FASTQ of queries whose k-th record
aligns with the k-th record of TARGETS.
Output (TSV): a header line, then per pair: score, query_begin, query_end, target_begin, target_end
(0-based, end exclusive: the aligned query is query[query_begin:query_end]) and, with --cigar, the
CIGAR (= X I D; I = query base against a gap, D = target base against a gap; gatk: M I D S, and
target_begin is GKL's alignment offset). With FASTA input the first columns are query_name and
target_name. --sam writes SAM instead (needs pysam; the target is the reference).
Gaps: a gap of length L costs gap_open + (L-1)*gap_extend (--gap-convention L-1, default: parasail,
GATK) or gap_open + L*gap_extend (L: BWA, ksw2); --gaps linear: L*gap_extend. Penalties are positive
(gatk: GATK's SWParameters, mismatch/open/extend <= 0 and added).
Ties: the end cell is the first best (smallest query end, then target end; semiglobal: smallest
target end); from there the traceback prefers the diagonal, then D, then I, and inside a gap takes
the gap's opening cell before extending it (local stops on a 0 cell first)."""


def add_align_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("align", help="pairwise alignment with CIGAR; GATK's Smith-Waterman",
                              description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="pairs as TSV ('-' for stdin), or the queries FASTA/FASTQ with --targets")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout; --sam needs a path or '-')")
    p.add_argument("--targets", default=None, help="FASTA/FASTQ of targets: INPUT is then the queries FASTA/FASTQ")
    p.add_argument("--mode", default="global", help=f"one of {', '.join(MODES)} (default global)")
    p.add_argument("--cigar", action="store_true", help="report CIGARs (keeps one byte per DP cell per pair)")
    p.add_argument("--sam", action="store_true", help="write SAM (implies --cigar)")
    scoring = p.add_argument_group("scoring")
    scoring.add_argument("--match", type=int, default=None, help="match score (default 2; gatk 200)")
    scoring.add_argument("--mismatch", type=int, default=None, help="mismatch score, negative (default -3; gatk -150)")
    scoring.add_argument("--gap-open", type=int, default=None, help="gap open penalty (default 5; gatk -260)")
    scoring.add_argument("--gap-extend", type=int, default=None, help="gap extend penalty (default 2; gatk -11)")
    scoring.add_argument("--gaps", default="affine", help=f"one of {', '.join(GAP_MODELS)} (default affine)")
    scoring.add_argument("--gap-convention", default="L-1", help=f"one of {', '.join(GAP_CONVENTIONS)} (default L-1)")
    scoring.add_argument("--zdrop", type=int, default=None, help="z-drop (extension only; default none)")
    scoring.add_argument("--overhang", default="SOFTCLIP", help=f"gatk: one of {', '.join(OVERHANGS)}")
    p.add_argument("--backend", default="auto", help="auto, cpu or gpu (default auto)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    from .grpc.cli import add_client_arguments

    add_client_arguments(p)
    p.set_defaults(run=run_align)


_GATK_DEFAULTS = {"match": 200, "mismatch": -150, "gap_open": -260, "gap_extend": -11}


def run_align(args: argparse.Namespace) -> int:
    from .plugin.align import AlignParams
    from .plugin.align_io import read_align_fastx, read_align_tsv, write_align_sam, write_align_tsv

    fields: dict[str, Any] = dict(mode=args.mode, gaps=args.gaps, gap_convention=args.gap_convention,
                                  zdrop=args.zdrop, overhang=args.overhang, cigar=args.cigar or args.sam)
    for name in ("match", "mismatch", "gap_open", "gap_extend"):
        value = getattr(args, name)
        if value is None and args.mode == "gatk":
            value = _GATK_DEFAULTS[name]
        if value is not None:
            fields[name] = value
    params = AlignParams(**fields)  # checked before reading a possibly large input
    query_names = target_names = None
    if args.targets:
        pairs, query_names, target_names = read_align_fastx(args.input, args.targets)
    else:
        pairs = read_align_tsv(sys.stdin if args.input == "-" else args.input)
    from .cli import warn_if_empty
    from .grpc.cli import run_family

    warn_if_empty(pairs.n_pairs, args)
    results = run_family(args, "align", pairs, params)
    if args.sam:
        write_align_sam(results, pairs, args.output, query_names, target_names)
    else:
        write_align_tsv(results, sys.stdout if args.output == "-" else args.output, query_names, target_names)
    return 0
