"""`warpdp edit`: the edit family's subcommand (registered through warpdp.registry)."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from .cli import _add_backend_options


def add_edit_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "edit", help="edit distance + CIGAR (edlib's NW/SHW/HW, Scrooge's windowed GenASM)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""Levenshtein distance (unit costs) of whole queries against targets.

Modes: nw = whole query vs whole target; shw = whole query vs a prefix of the target;
hw = whole query vs any substring of the target. -k bounds the distance (above it: -1).
--method windowed (mode shw only) reproduces Scrooge's GenASM with window W and overlap O
(defaults W=64 O=33 for long reads; Scrooge uses W=32 O=17 for short ones).

Input: a TSV of 'query target' lines ('-' for stdin), or with --targets, INPUT is a
FASTA/FASTQ of queries whose i-th record pairs with the i-th record of TARGETS.

Output (TSV, a header line, one line per pair in input order):
  distance      edit distance; -1 when above -k
  target_begin  start of the first optimal location in the target (0-based)
  target_end    its end, EXCLUSIVE (the query is always aligned whole)
  cigar         --task path: =, X, I (query base vs gap), D (target base vs gap)
  locations     --task locations/path: every optimal location as begin-end (end exclusive),
                comma-separated, as edlib reports them (ends in increasing order, each with
                the start of the longest optimal alignment ending there)
Or SAM (--sam, task path): each target a reference of its own, NM = distance.

Ties between optimal CIGARs: Hirschberg's split at query row floor(m/2) at the leftmost
optimal target column; a one-base query takes its leftmost equal target base.""")
    p.add_argument("input", help="TSV pairs ('-' for stdin), or the query FASTA/FASTQ with --targets")
    p.add_argument("--targets", default=None, help="FASTA/FASTQ of targets: INPUT is then the query FASTA/FASTQ")
    p.add_argument("--mode", default="nw", help="nw, shw or hw (default nw)")
    p.add_argument("-k", type=int, default=-1, help="distance bound; -1 (default): none")
    p.add_argument("--task", default="distance", help="distance, locations or path (default distance)")
    p.add_argument("--method", default="exact", help="exact or windowed (default exact)")
    p.add_argument("--window", type=int, default=64, help="windowed: W, 2..64 (default 64)")
    p.add_argument("--overlap", type=int, default=33, help="windowed: O, 0..W-1 (default 33)")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    p.add_argument("--sam", action="store_true", help="write SAM (needs --task path and -o FILE)")
    _add_backend_options(p)
    from .grpc.cli import add_client_arguments

    add_client_arguments(p)
    p.set_defaults(run=_run_edit)


def _run_edit(args: argparse.Namespace) -> int:
    from .plugin.edit import EditParams
    from .plugin.edit_io import read_edit_fastx, read_edit_tsv, write_edit_sam, write_edit_tsv

    # Checked before reading a possibly large input.
    params = EditParams(mode=args.mode, k=args.k, task=args.task, method=args.method, window=args.window,
                        overlap=args.overlap)
    if args.sam and (params.task != "path" or args.output == "-"):
        raise ValueError("--sam needs --task path and an output file (-o FILE)")
    names: tuple[list[str] | None, list[str] | None] = (None, None)
    if args.targets:
        pairs, query_names, target_names = read_edit_fastx(args.input, args.targets)
        names = (query_names, target_names)
    else:
        pairs = read_edit_tsv(sys.stdin if args.input == "-" else args.input)
    from .cli import warn_if_empty
    from .grpc.cli import run_family

    warn_if_empty(pairs.n_pairs, args)
    results = run_family(args, "edit", pairs, params)
    if args.sam:
        write_edit_sam(results, pairs, args.output, *names)
    else:
        write_edit_tsv(results, sys.stdout if args.output == "-" else args.output)
    return 0
