"""How many blocks of a kernel the device holds at once."""
from __future__ import annotations

from typing import Any

from .slots import round_up

__all__ = ["resident_blocks_per_sm"]

# sm_90's per-SM limits, used when the device's own are unknown.
REGS_PER_SM = 65536
SHARED_PER_SM = 228 << 10
THREADS_PER_SM = 2048
SHARED_RESERVED_PER_BLOCK = 1024  # the runtime's own shared memory per block


def resident_blocks_per_sm(kernel: Any, threads: int, shared_bytes: int = 0, *, regs_per_sm: int = REGS_PER_SM,
                           shared_per_sm: int = SHARED_PER_SM) -> int:
    """Blocks of ``kernel`` (a CuPy Function) with ``threads`` threads and ``shared_bytes`` of
    dynamic shared memory resident on one SM (at least 1). The driver's occupancy query, else
    (older CuPy) an estimate from registers, shared memory and threads."""
    try:
        from cupy.cuda import driver

        per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, threads, shared_bytes)
    except Exception:
        per_sm = fallback_blocks_per_sm(kernel.num_regs, threads, shared_bytes, regs_per_sm, shared_per_sm)
    return max(1, int(per_sm))


def fallback_blocks_per_sm(num_regs: int, threads: int, shared_bytes: int, regs_per_sm: int = REGS_PER_SM,
                           shared_per_sm: int = SHARED_PER_SM) -> int:
    """A conservative estimate: registers are allocated per warp in steps of 8 per thread."""
    regs = round_up(max(num_regs, 1), 8) * threads
    return max(1, min(regs_per_sm // regs, shared_per_sm // (shared_bytes + SHARED_RESERVED_PER_BLOCK),
                      THREADS_PER_SM // threads))
