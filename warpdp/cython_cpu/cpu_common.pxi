# Shared by every CPU extension (each .pyx includes this file): the names of the SIMD
# variants, which of them this CPU runs, and small buffer helpers.
# The C declarations these helpers use come from cpu_common_c.pxi, which each family's .pxd includes.
from libc.stdint cimport int64_t, uint8_t

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


cdef int64_t* int64_ptr(int64_t[::1] view):
    return &view[0] if view.shape[0] > 0 else NULL


cdef int threads_arg(object threads) except -1:
    """A thread count for a C driver (0: all cores), checked as a Python int so that no
    value can overflow C's int on the way."""
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be an int, not {type(threads).__name__}")
    if not 0 <= threads <= WARPDP_MAX_THREADS:
        raise ValueError(f"threads must be within 0..{WARPDP_MAX_THREADS} (0: all cores), not {threads}")
    return threads


cdef object bad_argument_error(tuple fields, object items, warpdp_bad_argument bad):
    """The ValueError for a driver's WARPDP_BAD_ARGUMENT: names the field and the item at fault
    (``items``: what the index counts, one word for every field or a tuple by field)."""
    known = 0 <= bad.field < len(fields)
    name = fields[bad.field] if known else f"argument {bad.field}"
    item = items if isinstance(items, str) else (items[bad.field] if known else "item")
    where = f" ({item} {bad.index})" if bad.index >= 0 else ""
    return ValueError(f"{name} is out of range{where}: refused by the CPU driver before any work")
