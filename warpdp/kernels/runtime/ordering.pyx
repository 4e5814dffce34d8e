# cython: language_level=3, boundscheck=False, wraparound=False
"""Host-side helpers of the GPU launchers that numpy does too slowly for them.

The seed-extension launcher bins and sorts each chunk of pairs on worker threads while the GPU
computes earlier chunks, and planning must keep ahead of the GPU: this counting sort is about
three times as fast as numpy's stable argsort (BENCHMARKS.md, GPU runtime), and releases the GIL.
"""
from libc.stdint cimport int32_t, int64_t, uint16_t
from libc.stdlib cimport free, malloc

cdef enum:
    N_KEYS = 1 << 16
KEY_VALUES = N_KEYS


def stable_order_u16(const uint16_t[::1] keys, int32_t[::1] order, int64_t[::1] counts) -> None:
    """Fill ``order`` with the indices that sort ``keys`` (ties in index order, as numpy's
    stable argsort), and ``counts[k]`` with how many keys equal k (``counts`` has 65,536
    entries)."""
    cdef Py_ssize_t n = keys.shape[0], i
    cdef int64_t k, total = 0
    cdef int64_t *next_slot
    if order.shape[0] != n:
        raise ValueError(f"order has {order.shape[0]} entries for {n} keys")
    if counts.shape[0] != N_KEYS:
        raise ValueError(f"counts must have {N_KEYS} entries, not {counts.shape[0]}")
    if n > 2147483647:
        raise ValueError("more than 2^31 - 1 keys do not fit int32 indices")
    next_slot = <int64_t *>malloc(N_KEYS * sizeof(int64_t))
    if next_slot == NULL:
        raise MemoryError()
    with nogil:
        for k in range(N_KEYS):
            counts[k] = 0
        for i in range(n):
            counts[keys[i]] += 1
        for k in range(N_KEYS):  # where each key's run starts
            next_slot[k] = total
            total += counts[k]
        for i in range(n):
            k = keys[i]
            order[next_slot[k]] = <int32_t>i
            next_slot[k] += 1
    free(next_slot)
