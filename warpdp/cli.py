"""The `warpdp` command: scoring subcommands, server, and environment information.

Start-up is kept short (`warpdp --help`/`--version`): this module imports only the standard
library and warpdp.registry at load time, and builds only the subparser of the subcommand asked
for (the others are listed by their summary line); NumPy, gRPC and the kernels load when a
subcommand runs.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__, registry

logger = logging.getLogger("warpdp")

# Inputs above this many cells are scored in chunks so a progress bar can move.
PROGRESS_CHUNK_CELLS = 200_000_000


def _add_backend_options(parser: argparse.ArgumentParser) -> None:
    from .plugin.core.backend import BACKENDS

    parser.add_argument("--backend", choices=BACKENDS, default="auto",
                        help="where to compute: auto = GPU if usable, else CPU (default: auto)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads (default: $OMP_NUM_THREADS if set, else all cores)")


PAIRHMM_DESCRIPTION = """\
Score every read against every haplotype of each record, with GKL's numerics (float, and
double for a pair whose float result is below 1e-28).

Input: the PairHMM text format (INPUT; gzip or plain, '-' for stdin): per record a line 'R H',
R read lines 'bases quals insGOP delGOP GCP' (qualities phred+33) and H haplotype lines;
or the reads of a BAM/CRAM region (--reads, --region) against every haplotype of a FASTA
(--haplotypes). Lower-case bases read as upper case.

Output (log10 likelihoods, 8 decimals, read-major: read 0 x haplotypes 0..H-1, read 1 x ...):
  --layout tsv      a header line, then per pair (tab separated):
                      read              the read's name (BAM/CRAM), else rec<b>.read<i>
                      haplotype         the haplotype's FASTA name, else rec<b>.hap<j>
                      log10_likelihood  log10 P(read | haplotype)
                    (b, i, j: 0-based record, read and haplotype numbers within the record).
                    The default for BAM/CRAM input.
  --layout lines    one value per line (GKL's .gkl.out layout); the default for the text format.
  --layout records  gpuPairHMM's layout: per record 'R H', then R lines of H values."""


def add_pairhmm_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "pairhmm", help="Pair-HMM forward likelihoods (GATK/GKL numerics)",
        formatter_class=argparse.RawDescriptionHelpFormatter, description=PAIRHMM_DESCRIPTION)
    p.add_argument("input", nargs="?", help="input in the PairHMM text format ('-' for stdin)")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    _add_backend_options(p)
    p.add_argument("--double", action="store_true",
                   help="compute every pair in double precision (GATK's --native-pair-hmm-use-double-precision)")
    p.add_argument("--layout", choices=("lines", "records", "tsv"), default=None,
                   help="output layout, see above (default: tsv for BAM/CRAM input, lines for the text format)")
    p.add_argument("--min-base-qual", type=int, default=None,
                   help="raise base qualities below this (default: 6 for the text format, as its harnesses "
                        "do; 0 for BAM/CRAM)")
    bam = p.add_argument_group("BAM/CRAM input (instead of INPUT)")
    bam.add_argument("--reads", help="indexed BAM or CRAM file")
    bam.add_argument("--region", help="region to score, e.g. chr20:10000-10500")
    bam.add_argument("--haplotypes", help="FASTA of haplotypes to score every read against")
    bam.add_argument("--reference", help="reference FASTA (CRAM only)")
    bam.add_argument("--min-mapq", type=int, default=None, help="skip reads below this mapping quality (default 20)")
    from .grpc.cli import add_client_arguments

    add_client_arguments(p)
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress bar on stderr (auto: only when stderr is a terminal)")
    p.set_defaults(run=_run_pairhmm)


def _load_pairhmm_input(args: argparse.Namespace) -> tuple[Any, list[str] | None, list[str] | None]:
    """The batches to score, with the read and haplotype names where the input has them."""
    import numpy as np

    from .plugin.packed import check_int
    from .plugin.pairhmm_text import FORMAT_MIN_BASE_QUAL, read_pairhmm_text

    bam_args = (args.reads, args.region, args.haplotypes)
    if any(bam_args):
        if args.input:
            raise ValueError("give either INPUT or --reads/--region/--haplotypes, not both")
        if not all(bam_args):
            raise ValueError("BAM/CRAM input needs all of --reads, --region and --haplotypes")
        from .plugin.pairhmm_bam import DEFAULT_MIN_MAPPING_QUALITY, read_bam_region

        batches, read_names, hap_names = read_bam_region(
            args.reads, args.region, args.haplotypes, reference=args.reference,
            min_mapping_quality=DEFAULT_MIN_MAPPING_QUALITY if args.min_mapq is None else args.min_mapq)
        if args.min_base_qual:
            check_int(args.min_base_qual, "--min-base-qual", 0, 127)  # before np.uint8, which would overflow
            np.maximum(batches.read_quals, np.uint8(args.min_base_qual), out=batches.read_quals)
        return batches, read_names, hap_names
    if not args.input:
        raise ValueError("no input: give INPUT (PairHMM text format) or --reads/--region/--haplotypes")
    source = sys.stdin if args.input == "-" else args.input
    min_qual = FORMAT_MIN_BASE_QUAL if args.min_base_qual is None else args.min_base_qual
    return read_pairhmm_text(source, min_base_qual=min_qual), None, None


def _chunk_bounds(cells_per_batch: Any, chunk_cells: int) -> list[tuple[int, int]]:
    """Consecutive batch ranges of about chunk_cells each (at least one batch per range)."""
    bounds, start, acc = [], 0, 0
    for b, cells in enumerate(cells_per_batch):
        acc += int(cells)
        if acc >= chunk_cells:
            bounds.append((start, b + 1))
            start, acc = b + 1, 0
    if start < len(cells_per_batch):
        bounds.append((start, len(cells_per_batch)))
    return bounds


def _progress_bar(total_cells: int, show: bool) -> Any:
    """tqdm's bar on stderr where asked for and tqdm is installed; else one that shows nothing."""
    try:
        from tqdm import tqdm
    except ImportError:
        if show:
            logger.warning("no progress bar: tqdm is not installed (pip install tqdm)")
        show = False
        tqdm = None
    if not show:
        return contextlib.nullcontext(_NoBar())
    return tqdm(total=total_cells, unit="cell", unit_scale=True, desc="pairhmm", file=sys.stderr)


class _NoBar:
    def update(self, _: int) -> None:
        pass


def _run_pairhmm(args: argparse.Namespace) -> int:
    import numpy as np

    from .plugin.pairhmm import pairhmm
    from .plugin.pairhmm_text import write_likelihoods

    batches, read_names, hap_names = _load_pairhmm_input(args)
    if args.input:
        warn_if_empty(batches.n_pairs, args)
    with contextlib.ExitStack() as stack:
        from .grpc.cli import client_from_args

        client = client_from_args(args)
        if client is not None:
            stack.enter_context(client)

            def score(part):
                return client.pairhmm(part, double=args.double)
        else:
            def score(part):
                return pairhmm(part, backend=args.backend, threads=args.threads, double=args.double)

        values = np.empty(batches.n_pairs, dtype=np.float64)
        cells = batches.cells_per_batch()
        show = args.progress == "always" or (args.progress == "auto" and sys.stderr.isatty())
        chunks = _chunk_bounds(cells, PROGRESS_CHUNK_CELLS)
        pair_starts = np.concatenate([[0], np.cumsum(batches.pairs_per_batch())])
        with _progress_bar(int(cells.sum()), show and len(chunks) >= 2) as bar:
            for start, stop in chunks:
                values[pair_starts[start]:pair_starts[stop]] = score(batches.select(start, stop))
                bar.update(int(cells[start:stop].sum()))
    out = sys.stdout if args.output == "-" else args.output
    layout = args.layout or ("tsv" if read_names is not None else "lines")
    write_likelihoods(values, out, layout=layout, batches=batches, read_names=read_names, hap_names=hap_names)
    return 0


def _run_info(args: argparse.Namespace) -> int:
    from .plugin.backend import cpu_name

    isas = registry.host_cpu_variants()
    print(f"warpdp {__version__}")
    print(f"CPU: {cpu_name()}; variants: {', '.join(isas)} (default: {isas[-1]})")
    for family in registry.families():
        for line in family.info_lines():
            print(line)
    from .kernels.runtime.prebuilt import summary

    print(summary())
    return 0


SERVE_SUMMARY = "run the gRPC server (GPU if usable, else CPU)"


def _add_serve_parser(subparsers: Any) -> None:
    from .grpc.cli import add_serve_arguments, run_serve

    p = subparsers.add_parser(
        "serve", help=SERVE_SUMMARY,
        description="Serve every warpdp kernel over gRPC (package warpdp.v1), batching concurrent "
                    "callers onto one backend. See docs/grpc.md.")
    add_serve_arguments(p)
    p.set_defaults(run=run_serve)


SEEDEXT_DESCRIPTION = """\
Extend seeds as BWA-MEM's ksw_extend2 does: both sequences start right after the seed (the
query is the read past the seed, the target the reference window past it), h0 is the seed's
score, the extension is banded (-w) and may stop early (z-drop).

Input: lines 'query<TAB>target<TAB>h0' (gzip or plain, '-' for stdin), or with --targets, a
FASTA/FASTQ of queries whose k-th record pairs with the k-th record of TARGETS (h0 from an
'h0=N' word in the query's header, else --h0). Lower-case bases read as upper case.

Output: one line per pair, in input order, six integers separated by spaces:
  score    best score of an extension (h0 when nothing beats the seed)
  qle      query bases in that best extension: it covers query[0:qle] (0: none)
  tle      target bases in it: target[0:tle] (0-based, end exclusive, like qle)
  gtle     target bases of the best extension that reaches the query's end (0: none)
  gscore   that extension's score (-1: no extension reached the query's end)
  max_off  largest distance from the diagonal of the successive best cells
           (BWA-MEM retries with a doubled band when this reaches 3/4 of -w)"""


def add_seedext_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "seedext", help="seed extension (BWA-MEM ksw_extend2 semantics)",
        formatter_class=argparse.RawDescriptionHelpFormatter, description=SEEDEXT_DESCRIPTION)
    p.add_argument("input", help="pairs as TSV ('-' for stdin), or the queries FASTA/FASTQ with --targets")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    p.add_argument("--targets", default=None, help="FASTA/FASTQ of targets: INPUT is then the queries FASTA/FASTQ")
    p.add_argument("--h0", type=int, default=None, help="h0 for FASTA queries whose header has no h0=N")
    scoring = p.add_argument_group("scoring (BWA-MEM's defaults)")
    scoring.add_argument("-a", type=int, default=1, help="match score (default 1)")
    scoring.add_argument("-b", type=int, default=4, help="mismatch penalty (default 4); N scores -1")
    scoring.add_argument("--o-del", type=int, default=6, help="deletion open penalty (default 6)")
    scoring.add_argument("--e-del", type=int, default=1, help="deletion extension penalty (default 1)")
    scoring.add_argument("--o-ins", type=int, default=6, help="insertion open penalty (default 6)")
    scoring.add_argument("--e-ins", type=int, default=1, help="insertion extension penalty (default 1)")
    scoring.add_argument("-w", type=int, default=100, help="band width (default 100)")
    scoring.add_argument("--end-bonus", type=int, default=5, help="end bonus (default 5)")
    scoring.add_argument("--zdrop", type=int, default=100, help="z-drop (default 100; 0 disables it)")
    _add_backend_options(p)
    from .grpc.cli import add_client_arguments

    add_client_arguments(p)
    p.set_defaults(run=_run_seedext)


def _run_seedext(args: argparse.Namespace) -> int:
    from .plugin.seedext import SeedExtParams
    from .plugin.seedext_io import read_seedext_fasta, read_seedext_tsv, write_seedext_results

    params = SeedExtParams(a=args.a, b=args.b, o_del=args.o_del, e_del=args.e_del, o_ins=args.o_ins,
                           e_ins=args.e_ins, w=args.w, end_bonus=args.end_bonus, zdrop=args.zdrop)
    params.validate()  # before reading a possibly large input
    if args.targets:
        pairs = read_seedext_fasta(args.input, args.targets, h0=args.h0)
    else:
        if args.h0 is not None:
            raise ValueError("--h0 applies to FASTA input (--targets); TSV lines carry their own h0")
        pairs = read_seedext_tsv(sys.stdin if args.input == "-" else args.input)
    warn_if_empty(pairs.n_pairs, args)
    from .grpc.cli import run_family

    results = run_family(args, "seedext", pairs, params)
    write_seedext_results(results, sys.stdout if args.output == "-" else args.output)
    return 0


XDROP_DESCRIPTION = """\
Extend seeds of length k in both directions with gapped X-drop, as SeqAn 2's
extendSeed(..., GappedXDrop()) does for BELLA and LOGAN (linear gaps).

Input: LOGAN's text format (gzip or plain, '-' for stdin), one pair per line
'seqV posV seqH posH strand'; the seed is seqV[posV:posV+k] and seqH[posH:posH+k] (0-based);
strand c: seqH is complemented and posH = len(seqH) - posH - k, as LOGAN's demo does.
Or with --seqs-h, INPUT is a FASTA/FASTQ of V sequences whose i-th record pairs with the
i-th record of SEQS_H and the i-th line 'posV posH [strand]' of SEEDS.
Lower-case bases read as upper case.

Output: one line per pair, in input order, five integers separated by spaces:
  score   left extension score + right extension score + k * match (as BELLA and LOGAN
          report it; --report longest: SeqAn's longest extension, best: the best cell)
  beginH  start of the extended seed in seqH (0-based)
  endH    its end in seqH, EXCLUSIVE: the extension covers seqH[beginH:endH]
  beginV  start in seqV (0-based)
  endV    end in seqV, exclusive
(for strand c, H coordinates are in the complemented seqH, as LOGAN reports them)"""


def add_xdrop_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "xdrop", help="gapped X-drop seed extension (SeqAn 2 / BELLA / LOGAN semantics)",
        formatter_class=argparse.RawDescriptionHelpFormatter, description=XDROP_DESCRIPTION)
    p.add_argument("input", help="pairs in LOGAN's text format ('-' for stdin), or the V FASTA/FASTQ with --seqs-h")
    p.add_argument("-k", type=int, required=True, help="seed length")
    p.add_argument("-x", type=int, required=True, help="X-drop: cells more than X below the best score are dropped")
    p.add_argument("--match", type=int, default=1, help="match score (default 1)")
    p.add_argument("--mismatch", type=int, default=-1, help="mismatch score (default -1)")
    p.add_argument("--gap", type=int, default=-1, help="gap score, linear (default -1)")
    p.add_argument("--report", choices=("longest", "best"), default="longest",
                   help="longest: SeqAn's longest extension (BELLA/LOGAN); best: the best-scoring cell "
                        "(default: longest)")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    p.add_argument("--seqs-h", default=None, help="FASTA/FASTQ of H sequences: INPUT is then the V FASTA/FASTQ")
    p.add_argument("--seeds", default=None, help="with --seqs-h: one line 'posV posH [strand]' per pair")
    _add_backend_options(p)
    from .grpc.cli import add_client_arguments

    add_client_arguments(p)
    p.set_defaults(run=_run_xdrop)


def _run_xdrop(args: argparse.Namespace) -> int:
    from .plugin.xdrop import check_scores, xdrop
    from .plugin.xdrop_io import read_logan_text, read_xdrop_fastx, write_xdrop_results

    check_scores(args.match, args.mismatch, args.gap, args.x)  # before reading a possibly large input
    if args.seqs_h or args.seeds:
        if not (args.seqs_h and args.seeds):
            raise ValueError("FASTA/FASTQ input needs both --seqs-h and --seeds")
        pairs = read_xdrop_fastx(args.input, args.seqs_h, args.seeds, k=args.k)
    else:
        pairs = read_logan_text(sys.stdin if args.input == "-" else args.input, k=args.k)
    warn_if_empty(pairs.n_pairs, args)
    scoring = dict(k=args.k, x=args.x, match=args.match, mismatch=args.mismatch, gap=args.gap, report=args.report)
    from .grpc.cli import client_from_args

    client = client_from_args(args)
    if client is not None:
        with client:
            results = client.xdrop(pairs, **scoring)
    else:
        results = xdrop(pairs, **scoring, backend=args.backend, threads=args.threads)
    write_xdrop_results(results, sys.stdout if args.output == "-" else args.output)
    return 0


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand argv names: its first word that is not an option (the top-level options
    take no values), or None."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `warpdp` parser. With ``command``, only that subcommand's parser is built in full and
    the other families are listed by their summary (which loads none of their modules)."""
    parser = argparse.ArgumentParser(prog="warpdp", description="GPU and SIMD CPU dynamic-programming kernels "
                                     "for genomics (GATK/GKL-exact Pair-HMM, ...)",
                                     epilog="'warpdp COMMAND --help' explains a command's input, output columns "
                                            "and coordinates (0-based, end exclusive).")
    parser.add_argument("--version", action="version", version=f"warpdp {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more (backend choice, timings)")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for family in registry.families():  # each family's own subcommand, where it has one
        if family.add_cli is None:
            continue
        if command != family.name and family.summary is not None:
            subparsers.add_parser(family.name, help=family.summary)
        else:
            registry.resolve(family.add_cli)(subparsers)
    if command == "serve":
        _add_serve_parser(subparsers)
    else:
        subparsers.add_parser("serve", help=SERVE_SUMMARY)
    info = subparsers.add_parser("info", help="show the CPU variants and GPU found")
    info.set_defaults(run=_run_info)
    return parser


# Files the subcommands read, by argparse destination, as their messages name them.
_INPUT_FILES = {"input": "INPUT", "reads": "--reads", "haplotypes": "--haplotypes", "reference": "--reference",
                "targets": "--targets", "seqs_h": "--seqs-h", "seeds": "--seeds",
                "server_token_file": "--server-token-file", "server_tls_ca": "--server-tls-ca"}


def check_input_files(args: argparse.Namespace) -> None:
    """ValueError naming the option when a file to read is missing, a directory or unreadable
    (before any of them is parsed, and before pysam or htslib report it in their own words)."""
    for dest, option in _INPUT_FILES.items():
        path = getattr(args, dest, None)
        if not isinstance(path, str) or path == "-":
            continue
        if not os.path.exists(path):
            raise ValueError(f"{option} {path}: no such file")
        if os.path.isdir(path):
            raise ValueError(f"{option} {path}: is a directory, not a file")
        if not os.access(path, os.R_OK):
            raise ValueError(f"{option} {path}: permission denied")


def warn_if_empty(n_pairs: int, args: argparse.Namespace) -> None:
    """An input without a single pair is not an error (an empty shard of a larger job gives an
    empty output, exit status 0), but it is said on stderr, since it is often a mistake."""
    if n_pairs == 0:
        source = "standard input" if args.input == "-" else args.input
        print(f"warpdp: warning: {source} holds no {args.command} input; the output is empty", file=sys.stderr)


def _os_error_message(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        reason = "no space left on the device"
    name = "standard output" if exc.filename == "<stdout>" else exc.filename
    return f"{name}: {reason}" if name else reason


def _stdout_to_devnull() -> None:
    """Point standard output's descriptor at /dev/null (what is left in its buffer cannot be
    written), so that the interpreter's own flush at exit does not fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)


def _flush_stdout() -> None:
    """Flush standard output here, where a failure can still be reported (a full disk, a closed
    pipe), rather than at interpreter exit."""
    try:
        sys.stdout.flush()
    except OSError as error:
        _stdout_to_devnull()
        if isinstance(error, BrokenPipeError):
            raise
        raise type(error)(error.errno, error.strerror or str(error), "standard output") from None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C: no traceback, the shell's status for SIGINT
        print("warpdp: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(_command_in(argv))
    except ImportError as exc:  # an optional extra the subcommand needs (MissingExtraError says which)
        print(f"warpdp: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    # The server always says where it listens and what it runs on; other commands stay quiet.
    verbose = args.verbose or args.command == "serve"
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        check_input_files(args)
        status = args.run(args)
        if args.command != "serve":
            _flush_stdout()
        return status
    except BrokenPipeError:  # the reader went away (e.g. `| head`): not an error
        _stdout_to_devnull()
        return 0
    except OSError as exc:
        print(f"warpdp: error: {_os_error_message(exc)}", file=sys.stderr)
        return 2
    except MemoryError:
        print("warpdp: error: out of memory (split the input, or lower --threads)", file=sys.stderr)
        return 2
    except (ValueError, TypeError, RuntimeError, LookupError, ImportError) as exc:
        print(f"warpdp: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
