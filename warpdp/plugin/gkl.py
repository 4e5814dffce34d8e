"""A facade with the inputs, outputs and numerics of GKL's PairHMM as GATK calls it.

GATK hands GKL one active region at a time: an array of ReadDataHolder (readBases,
readQuals, insertionGOP, deletionGOP, overallGCP, all raw phred bytes) and an array of
HaplotypeDataHolder (haplotypeBases), plus a double[] of nReads * nHaps to fill read-major.
This class does the same from Python, with GKL's argument checks.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .core.packed import offsets_of
from .pairhmm import PairHmmBatches, check_output_array, pairhmm


@dataclass
class ReadDataHolder:
    """GATK's ReadDataHolder: raw phred values (not ASCII) and bases, all of one length."""

    readBases: bytes
    readQuals: bytes
    insertionGOP: bytes
    deletionGOP: bytes
    overallGCP: bytes


@dataclass
class HaplotypeDataHolder:
    """GATK's HaplotypeDataHolder."""

    haplotypeBases: bytes


_READ_FIELDS = ("readBases", "readQuals", "insertionGOP", "deletionGOP", "overallGCP")


class GklPairHmm:
    """GATK's PairHMMNativeBinding shape: ``initialize`` then ``compute_likelihoods`` per region.

    Any objects with the holders' attribute names are accepted (e.g. the dataclasses above).
    """

    def __init__(self, *, use_double_precision: bool = False, max_number_of_threads: int | None = None,
                 backend: str = "auto") -> None:
        self.initialize(use_double_precision=use_double_precision,
                        max_number_of_threads=max_number_of_threads, backend=backend)

    def initialize(self, *, use_double_precision: bool = False, max_number_of_threads: int | None = None,
                   backend: str = "auto") -> None:
        self.use_double_precision = bool(use_double_precision)
        self.max_number_of_threads = max_number_of_threads
        self.backend = backend

    def compute_likelihoods(self, read_data: Sequence[object], haplotype_data: Sequence[object],
                            likelihood_array: np.ndarray) -> None:
        """Fill ``likelihood_array[r * n_haps + h]`` with log10 P(read r | haplotype h)."""
        if read_data is None or haplotype_data is None or likelihood_array is None:
            raise TypeError("read_data, haplotype_data and likelihood_array must not be None")
        n_reads, n_haps = len(read_data), len(haplotype_data)
        check_output_array(likelihood_array, n_reads * n_haps)
        if n_reads == 0 or n_haps == 0:
            return
        columns: dict[str, list[bytes]] = {name: [] for name in _READ_FIELDS}
        read_lengths = []
        for r, holder in enumerate(read_data):
            if holder is None:
                raise TypeError(f"read_data[{r}] is None")
            values = [_field_bytes(holder, name, f"read_data[{r}]") for name in _READ_FIELDS]
            length = len(values[0])
            if length == 0:
                raise ValueError(f"read_data[{r}].readBases is empty")
            for name, value in zip(_READ_FIELDS, values):
                if len(value) != length:
                    raise ValueError(f"read_data[{r}].{name} has {len(value)} values "
                                     f"but readBases has {length}")
                columns[name].append(value)
            read_lengths.append(length)
        haplotypes = []
        for h, holder in enumerate(haplotype_data):
            if holder is None:
                raise TypeError(f"haplotype_data[{h}] is None")
            bases = _field_bytes(holder, "haplotypeBases", f"haplotype_data[{h}]")
            if len(bases) == 0:
                raise ValueError(f"haplotype_data[{h}].haplotypeBases is empty")
            haplotypes.append(bases)

        def packed(parts: list[bytes]) -> np.ndarray:
            return np.frombuffer(b"".join(parts), dtype=np.uint8)

        batches = PairHmmBatches.from_arrays(
            read_bases=packed(columns["readBases"]), read_quals=packed(columns["readQuals"]),
            read_ins=packed(columns["insertionGOP"]), read_del=packed(columns["deletionGOP"]),
            read_gcp=packed(columns["overallGCP"]),
            read_offsets=offsets_of(read_lengths),
            hap_bases=packed(haplotypes),
            hap_offsets=offsets_of([len(h) for h in haplotypes]),
            batch_reads=np.array([0, n_reads]), batch_haps=np.array([0, n_haps]),
        )
        pairhmm(batches, backend=self.backend, threads=self.max_number_of_threads,
                double=self.use_double_precision, out=likelihood_array)


def _field_bytes(holder: object, name: str, where: str) -> bytes:
    if not hasattr(holder, name):
        raise TypeError(f"{where} has no attribute {name!r}")
    value = getattr(holder, name)
    if value is None:
        raise TypeError(f"{where}.{name} is None")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, np.ndarray) and value.dtype in (np.uint8, np.int8) and value.ndim == 1:
        return value.tobytes()  # Java bytes are signed; the kernel masks qualities & 127 like GKL
    raise TypeError(f"{where}.{name} must be bytes or a 1-D int8/uint8 array, not {type(value).__name__}")
