# Shared by every CPU extension (each .pyx includes this file): the names of the SIMD
# variants, which of them this CPU runs, and small buffer helpers.
from libc.stdint cimport uint8_t

cdef extern from "cpu_common.h":
    int warpdp_cpu_supports(int isa)
    int warpdp_cpu_best_isa()

ISA_NAMES = ("scalar", "avx2", "avx512")


def available_isas() -> list[str]:
    """The SIMD variants this CPU can run, slowest first."""
    return [name for code, name in enumerate(ISA_NAMES) if warpdp_cpu_supports(code)]


def best_isa() -> str:
    """The variant used unless one is asked for."""
    return ISA_NAMES[warpdp_cpu_best_isa()]


cdef int isa_code(str isa) except -1:
    """The C code of a variant name (None: the best this CPU runs)."""
    return warpdp_cpu_best_isa() if isa is None else ISA_NAMES.index(isa)


cdef const uint8_t* bytes_ptr(const uint8_t[::1] view):
    # Zero-length arrays have no element to take the address of.
    return &view[0] if view.shape[0] > 0 else NULL
