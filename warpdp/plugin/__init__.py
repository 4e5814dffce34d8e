"""warpdp's public API: scoring functions, data model, formats and the GKL-compatible facade."""
from .backend import BackendUnavailableError, choose_backend, gpu_status
from .gkl import GklPairHmm, HaplotypeDataHolder, ReadDataHolder
from .pairhmm import (
    PairHmmBatches,
    PairHmmRead,
    available_cpu_isas,
    pack_batches,
    pairhmm,
    score_reads,
)
from .pairhmm_text import read_pairhmm_text, write_likelihoods, write_pairhmm_text

__all__ = [
    "BackendUnavailableError",
    "GklPairHmm",
    "HaplotypeDataHolder",
    "PairHmmBatches",
    "PairHmmRead",
    "ReadDataHolder",
    "available_cpu_isas",
    "choose_backend",
    "gpu_status",
    "pack_batches",
    "pairhmm",
    "read_pairhmm_text",
    "score_reads",
    "write_likelihoods",
    "write_pairhmm_text",
]
