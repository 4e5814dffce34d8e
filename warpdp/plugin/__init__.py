"""warpdp's public API: scoring functions, data model, formats and the GKL-compatible facade."""
from .core.backend import BackendUnavailableError, choose_backend, gpu_status
from .gkl import GklPairHmm, HaplotypeDataHolder, ReadDataHolder
from .pairhmm import (
    PairHmmBatches,
    PairHmmParams,
    PairHmmRead,
    PairHmmResults,
    available_cpu_isas,
    pack_batches,
    pairhmm,
    score_reads,
)
from .pairhmm_text import read_pairhmm_text, write_likelihoods, write_pairhmm_text
from .seedext import (
    SeedExtPairs,
    SeedExtParams,
    SeedExtResults,
    pack_seed_pairs,
    seed_extend,
    seed_extend_with,
    seedext_cpu_isas,
)
from .seedext_io import read_seedext_fasta, read_seedext_tsv, write_seedext_results
from .xdrop import (
    XdropPair,
    XdropPairs,
    XdropParams,
    XdropResults,
    pack_xdrop_pairs,
    xdrop,
    xdrop_cpu_isas,
    xdrop_pair,
)
from .xdrop_io import read_logan_text, read_xdrop_fastx, read_xdrop_results, write_xdrop_results

__all__ = [
    "BackendUnavailableError",
    "GklPairHmm",
    "HaplotypeDataHolder",
    "PairHmmBatches",
    "PairHmmParams",
    "PairHmmRead",
    "PairHmmResults",
    "ReadDataHolder",
    "SeedExtPairs",
    "SeedExtParams",
    "SeedExtResults",
    "XdropPair",
    "XdropPairs",
    "XdropParams",
    "XdropResults",
    "available_cpu_isas",
    "choose_backend",
    "gpu_status",
    "pack_batches",
    "pack_seed_pairs",
    "pack_xdrop_pairs",
    "pairhmm",
    "read_logan_text",
    "read_pairhmm_text",
    "read_seedext_fasta",
    "read_seedext_tsv",
    "read_xdrop_fastx",
    "read_xdrop_results",
    "score_reads",
    "seed_extend",
    "seed_extend_with",
    "seedext_cpu_isas",
    "write_likelihoods",
    "write_pairhmm_text",
    "write_seedext_results",
    "write_xdrop_results",
    "xdrop",
    "xdrop_cpu_isas",
    "xdrop_pair",
]
