"""Pair-HMM forward algorithm: packed data model, validation and the scoring entry points.

Numerics are GKL's (the native library GATK HaplotypeCaller calls): see docs/semantics.md and README.md.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cancel import CancelCheck
from .core.backend import check_devices, choose_backend, resolve_cpu_isa, resolve_threads
from .core.packed import (SequenceInput, byte_array, check_array, check_offsets, concat, int64_array, offsets_of,
                          sequence_bytes)
from .core.params import Params

# GATK's defaults when a read carries no BI/BD tags, and its constant gap continuation penalty.
DEFAULT_INSERTION_QUAL = 45
DEFAULT_DELETION_QUAL = 45
DEFAULT_GCP = 10

QualityInput = str | bytes | bytearray | Sequence[int] | np.ndarray


@dataclass(frozen=True)
class PairHmmBatches:
    """Many Pair-HMM batches in packed form (the project's data model, docs/design.md).

    Read ``r`` is ``read_bases[read_offsets[r]:read_offsets[r+1]]`` and its four quality
    arrays are sliced the same way (raw phred values, not ASCII). Haplotype ``h`` is
    ``hap_bases[hap_offsets[h]:hap_offsets[h+1]]``. Batch ``b`` holds reads
    ``batch_reads[b]:batch_reads[b+1]`` and haplotypes ``batch_haps[b]:batch_haps[b+1]``;
    every read of a batch is scored against every haplotype of the same batch, and results
    come batch after batch, read-major inside a batch (``out[r * n_haps + h]``), as GATK's
    likelihood array is laid out.
    """

    read_bases: np.ndarray
    read_quals: np.ndarray
    read_ins: np.ndarray
    read_del: np.ndarray
    read_gcp: np.ndarray
    read_offsets: np.ndarray
    hap_bases: np.ndarray
    hap_offsets: np.ndarray
    batch_reads: np.ndarray
    batch_haps: np.ndarray

    @property
    def n_batches(self) -> int:
        return len(self.batch_reads) - 1

    @property
    def n_reads(self) -> int:
        return len(self.read_offsets) - 1

    @property
    def n_haps(self) -> int:
        return len(self.hap_offsets) - 1

    def pairs_per_batch(self) -> np.ndarray:
        # Slices, not np.diff: this runs several times per served request, mostly on 2 offsets.
        reads, haps = self.batch_reads, self.batch_haps
        return (reads[1:] - reads[:-1]) * (haps[1:] - haps[:-1])

    @property
    def n_pairs(self) -> int:
        return int(self.pairs_per_batch().sum())

    def cells_per_batch(self) -> np.ndarray:
        """Sum of read length x haplotype length over the pairs of each batch."""
        # Offsets are cumulative lengths, so a batch's total length is a difference of two.
        read_sums = self.read_offsets[self.batch_reads[1:]] - self.read_offsets[self.batch_reads[:-1]]
        hap_sums = self.hap_offsets[self.batch_haps[1:]] - self.hap_offsets[self.batch_haps[:-1]]
        return read_sums * hap_sums

    @property
    def n_cells(self) -> int:
        return int(self.cells_per_batch().sum())

    def select(self, start: int, stop: int) -> PairHmmBatches:
        """Batches ``start:stop`` as a new packed set (used to chunk long inputs)."""
        r0, r1 = int(self.batch_reads[start]), int(self.batch_reads[stop])
        h0, h1 = int(self.batch_haps[start]), int(self.batch_haps[stop])
        return self._take(r0, r1, h0, h1, self.batch_reads[start:stop + 1] - r0,
                          self.batch_haps[start:stop + 1] - h0)

    def sub_batch(self, batch: int, r0: int, r1: int, h0: int, h1: int) -> PairHmmBatches:
        """Reads ``r0:r1`` x haplotypes ``h0:h1`` of one batch (indices inside it), as one batch.

        Splits a batch too large for one submission or message: results are read-major, so
        read ranges (and, for a single read, haplotype ranges) keep the output contiguous.
        """
        ra, ha = int(self.batch_reads[batch]) + r0, int(self.batch_haps[batch]) + h0
        return self._take(ra, ra + r1 - r0, ha, ha + h1 - h0, np.array([0, r1 - r0], dtype=np.int64),
                          np.array([0, h1 - h0], dtype=np.int64))

    def _take(self, r0: int, r1: int, h0: int, h1: int, batch_reads: np.ndarray,
              batch_haps: np.ndarray) -> PairHmmBatches:
        """Reads r0:r1 and haplotypes h0:h1, grouped by batch offsets relative to them."""
        b0, b1 = int(self.read_offsets[r0]), int(self.read_offsets[r1])
        s0, s1 = int(self.hap_offsets[h0]), int(self.hap_offsets[h1])
        return PairHmmBatches(
            read_bases=self.read_bases[b0:b1], read_quals=self.read_quals[b0:b1],
            read_ins=self.read_ins[b0:b1], read_del=self.read_del[b0:b1], read_gcp=self.read_gcp[b0:b1],
            read_offsets=self.read_offsets[r0:r1 + 1] - b0,
            hap_bases=self.hap_bases[s0:s1], hap_offsets=self.hap_offsets[h0:h1 + 1] - s0,
            batch_reads=batch_reads, batch_haps=batch_haps,
        )

    @classmethod
    def from_arrays(cls, **arrays: np.ndarray) -> PairHmmBatches:
        """Build from arrays of any layout, checking dtypes and consistency (see :meth:`validate`)."""
        converted = {}
        for name in _BYTE_FIELDS:
            converted[name] = byte_array(arrays.pop(name), name)
        for name in _OFFSET_FIELDS:
            converted[name] = int64_array(arrays.pop(name), name)
        if arrays:
            raise TypeError(f"unexpected field(s) for PairHmmBatches: {', '.join(sorted(arrays))}")
        batches = cls(**converted)
        batches.validate()
        return batches

    def validate(self, params: PairHmmParams | None = None) -> None:
        """Raise ValueError/TypeError naming the field when the arrays are inconsistent (no
        Pair-HMM parameter constrains the batches; ``params`` is taken as every family's
        ``validate`` takes it)."""
        for name in _BYTE_FIELDS:
            check_array(getattr(self, name), name, np.uint8)
        for name in _OFFSET_FIELDS:
            check_array(getattr(self, name), name, np.int64)
        n_bases = len(self.read_bases)
        for name in ("read_quals", "read_ins", "read_del", "read_gcp"):
            if len(getattr(self, name)) != n_bases:
                raise ValueError(f"{name} has {len(getattr(self, name))} values but read_bases has {n_bases}")
        check_offsets(self.read_offsets, "read_offsets", len(self.read_bases), "read", nonempty=True)
        check_offsets(self.hap_offsets, "hap_offsets", len(self.hap_bases), "haplotype", nonempty=True)
        check_offsets(self.batch_reads, "batch_reads", self.n_reads, "batch")
        check_offsets(self.batch_haps, "batch_haps", self.n_haps, "batch")
        if len(self.batch_reads) != len(self.batch_haps):
            raise ValueError(f"batch_reads describes {len(self.batch_reads) - 1} batches "
                             f"but batch_haps describes {len(self.batch_haps) - 1}")


_BYTE_FIELDS = ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp", "hap_bases")
_OFFSET_FIELDS = ("read_offsets", "hap_offsets", "batch_reads", "batch_haps")


@dataclass(frozen=True)
class PairHmmRead:
    """One read for the convenience API.

    Qualities given as ``str`` are phred+33 text (as in SAM/FASTQ); ``bytes``, integer
    sequences and numpy arrays are raw phred values (as GATK passes them to GKL).
    Missing insertion/deletion qualities and gap continuation penalties take GATK's
    defaults (45, 45, 10).
    """

    bases: SequenceInput
    quals: QualityInput
    ins_quals: QualityInput | None = None
    del_quals: QualityInput | None = None
    gcp: QualityInput | None = None


def quality_bytes(value: object, what: str, length: int, default: int | None = None) -> np.ndarray:
    """Qualities as raw phred uint8 of the given length (str = phred+33 text)."""
    if value is None:
        if default is None:
            raise ValueError(f"{what} is missing")
        return np.full(length, default, dtype=np.uint8)
    if isinstance(value, str):
        raw = np.frombuffer(value.encode("ascii", errors="replace"), dtype=np.uint8).astype(np.int16) - 33
        if len(raw) and raw.min() < 0:
            raise ValueError(f"{what} has a character below '!' (phred+33 text expected)")
        array = raw.astype(np.uint8)
    elif isinstance(value, (bytes, bytearray)):
        array = np.frombuffer(bytes(value), dtype=np.uint8)
    else:
        array = np.asarray(value)
        if array.dtype.kind not in "iu" or array.ndim != 1:
            raise TypeError(f"{what} must be str, bytes or a 1-D sequence of integers, not {array.dtype}")
        if len(array) and (array.min() < 0 or array.max() > 255):
            raise ValueError(f"{what} values must be within 0..255")
        array = array.astype(np.uint8)
    if len(array) != length:
        raise ValueError(f"{what} has {len(array)} values but the read has {length} bases")
    return array


def pack_batches(batches: Iterable[tuple[Sequence[PairHmmRead], Sequence[SequenceInput]]]) -> PairHmmBatches:
    """Pack ``[(reads, haplotypes), ...]`` into the packed form; this is where per-read checks happen."""
    bases, quals, ins, dels, gcps, read_lens = [], [], [], [], [], []
    hap_parts, hap_lens, batch_n_reads, batch_n_haps = [], [], [], []
    for b, (reads, haplotypes) in enumerate(batches):
        for r, read in enumerate(reads):
            if not isinstance(read, PairHmmRead):
                raise TypeError(f"batch {b} read {r}: expected PairHmmRead, not {type(read).__name__}")
            where = f"batch {b} read {r}"
            read_bases = sequence_bytes(read.bases, f"{where} bases")
            n = len(read_bases)
            if n == 0:
                raise ValueError(f"{where} is empty")
            bases.append(read_bases)
            quals.append(quality_bytes(read.quals, f"{where} quals", n))
            ins.append(quality_bytes(read.ins_quals, f"{where} ins_quals", n, DEFAULT_INSERTION_QUAL))
            dels.append(quality_bytes(read.del_quals, f"{where} del_quals", n, DEFAULT_DELETION_QUAL))
            gcps.append(quality_bytes(read.gcp, f"{where} gcp", n, DEFAULT_GCP))
            read_lens.append(n)
        for h, hap in enumerate(haplotypes):
            hap_array = sequence_bytes(hap, f"batch {b} haplotype {h}")
            if len(hap_array) == 0:
                raise ValueError(f"batch {b} haplotype {h} is empty")
            hap_parts.append(hap_array)
            hap_lens.append(len(hap_array))
        batch_n_reads.append(len(reads))
        batch_n_haps.append(len(haplotypes))
    return PairHmmBatches.from_arrays(
        read_bases=concat(bases), read_quals=concat(quals), read_ins=concat(ins),
        read_del=concat(dels), read_gcp=concat(gcps), read_offsets=offsets_of(read_lens),
        hap_bases=concat(hap_parts), hap_offsets=offsets_of(hap_lens),
        batch_reads=offsets_of(batch_n_reads), batch_haps=offsets_of(batch_n_haps),
    )


# The log10 likelihoods, one float64 per pair (batch after batch, read-major inside a batch).
# A plain ndarray, not a results class: callers index, reshape and compare it as one.
PairHmmResults = np.ndarray


@dataclass(frozen=True)
class PairHmmParams(Params):
    """Pair-HMM parameters. ``double``: every pair in double precision (GATK's
    ``--native-pair-hmm-use-double-precision``); otherwise float, with pairs whose float result
    falls below 1e-28 recomputed in double, as GKL does."""

    double: bool = False

    def validate(self) -> None:
        if not isinstance(self.double, (bool, np.bool_)) and self.double not in (0, 1):
            raise TypeError(f"double must be a bool, not {type(self.double).__name__}")
        object.__setattr__(self, "double", bool(self.double))


def pairhmm(
    batches: PairHmmBatches,
    params: PairHmmParams | None = None,
    *,
    backend: str = "auto",
    threads: int | None = None,
    cpu_isa: str | None = None,
    out: np.ndarray | None = None,
    devices: Sequence[int] | None = None,
    cancelled: CancelCheck | None = None,
    **legacy: Any,
) -> PairHmmResults:
    """Log10 likelihoods of every (read, haplotype) pair of every batch, GKL's numerics.

    ``params`` is a :class:`PairHmmParams`; its fields may be given as keywords instead
    (``pairhmm(batches, double=True)``). ``threads`` bounds CPU threads (default: all cores).
    ``out`` may be a float64 array of ``n_pairs`` to fill. ``cpu_isa`` forces a CPU variant
    ("scalar", "avx2", "avx512"; default: the environment variable ``WARPDP_CPU_ISA`` if set,
    else the best one this CPU supports). ``devices`` lists the GPUs to spread the batches
    over (default: every GPU this process sees; the CPU backend ignores it). ``cancelled`` is
    checked between GPU chunks (warpdp.plugin.cancel).
    """
    params = PairHmmParams.from_kwargs(params, **legacy)
    if not isinstance(batches, PairHmmBatches):
        raise TypeError(f"batches must be PairHmmBatches, not {type(batches).__name__} (see pack_batches)")
    batches.validate()
    return _run(batches, params, backend, threads, cpu_isa, out, cancelled, devices)


def pairhmm_validated(batches: PairHmmBatches, *, backend: str = "auto", threads: int | None = None,
                      double: bool = False, out: np.ndarray | None = None, cpu_isa: str | None = None,
                      cancelled: CancelCheck | None = None, devices: Sequence[int] | None = None) -> PairHmmResults:
    """:func:`pairhmm` for batches already validated: the gRPC server validates every request
    as it decodes it, and a large job's chunks need not be checked once each again."""
    return _run(batches, PairHmmParams(double=double), backend, threads, cpu_isa, out, cancelled, devices)


def _run(batches: PairHmmBatches, params: PairHmmParams, backend: str, threads: int | None, cpu_isa: str | None,
         out: np.ndarray | None, cancelled: CancelCheck | None, devices: Sequence[int] | None) -> PairHmmResults:
    n_threads = resolve_threads(threads)
    device_ids = check_devices(devices)
    if out is None:
        out = np.empty(batches.n_pairs, dtype=np.float64)
    else:
        check_output_array(out, batches.n_pairs)
    chosen = choose_backend(backend, "pairhmm")
    if chosen == "gpu":
        from ..kernels import pairhmm as gpu_pairhmm

        gpu_pairhmm.forward(batches, out, use_double=params.double, devices=device_ids, cancelled=cancelled)
    else:
        from ..cython_cpu import pairhmm as cpu_pairhmm

        cpu_isa = resolve_cpu_isa(cpu_isa, cpu_pairhmm.ISA_NAMES)
        cpu_pairhmm.run(batches, params, out, threads=n_threads, isa=cpu_isa)
    return out


def check_output_array(out: object, n_pairs: int) -> None:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"the output array must be a numpy array, not {type(out).__name__}")
    if out.dtype != np.float64:
        raise TypeError(f"the output array must have dtype float64, not {out.dtype}")
    if out.ndim != 1 or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("the output array must be 1-D, C-contiguous and writeable")
    if len(out) != n_pairs:
        raise ValueError(f"the output array has {len(out)} entries but there are {n_pairs} pairs")


def score_reads(
    reads: Sequence[PairHmmRead],
    haplotypes: Sequence[SequenceInput],
    params: PairHmmParams | None = None,
    *,
    backend: str = "auto",
    threads: int | None = None,
    cpu_isa: str | None = None,
    **legacy: Any,
) -> np.ndarray:
    """One batch from Python objects: a (n_reads, n_haplotypes) array of log10 likelihoods
    (``params`` or its fields as keywords, as for :func:`pairhmm`)."""
    params = PairHmmParams.from_kwargs(params, **legacy)
    batches = pack_batches([(reads, haplotypes)])
    values = pairhmm(batches, params, backend=backend, threads=threads, cpu_isa=cpu_isa)
    return values.reshape(len(reads), len(haplotypes))


def available_cpu_isas() -> list[str]:
    """CPU variants this machine can run, slowest first (the last is the default)."""
    from ..cython_cpu import pairhmm as cpu_pairhmm

    return cpu_pairhmm.available_isas()
