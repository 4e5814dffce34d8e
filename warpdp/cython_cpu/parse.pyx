# cython: language_level=3, boundscheck=False, wraparound=False
"""Fast scanners for the text readers (parse_*.c): LOGAN text, seed-extension TSV, Pair-HMM text.

Each takes the whole input as ASCII bytes (any buffer: bytes, an mmap) and returns the packed
arrays of its family as a dict, or None when the scanner declines the input (a malformed line,
a byte it does not handle): the reader then runs its Python path, which accepts the input or
names the line at fault. The arrays are allocated at a bound the input's size gives and shrunk
in place to what was written.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t

cnp.import_array()

cdef extern from "parse_scan.h" nogil:
    enum:
        PARSE_OK
    int64_t parse_count_lines(const uint8_t *text, int64_t size)
    void parse_small_pages(void *memory, int64_t bytes)

    ctypedef struct parse_logan_out:
        uint8_t *v_bases
        uint8_t *h_bases
        int64_t *v_offsets
        int64_t *h_offsets
        int64_t *v_pos
        int64_t *h_pos
        int64_t max_pairs
        int64_t n_pairs, v_total, h_total
    int parse_logan(const uint8_t *text, int64_t size, int64_t k, parse_logan_out *out)

    ctypedef struct parse_seedext_out:
        uint8_t *query
        uint8_t *target
        int64_t *query_offsets
        int64_t *target_offsets
        int64_t *h0
        int64_t max_pairs
        int64_t n_pairs, query_total, target_total
    int parse_seedext(const uint8_t *text, int64_t size, int64_t max_h0, parse_seedext_out *out)

    ctypedef struct parse_pairhmm_out:
        uint8_t *read_bases
        uint8_t *read_quals
        uint8_t *read_ins
        uint8_t *read_del
        uint8_t *read_gcp
        uint8_t *hap_bases
        int64_t *read_offsets
        int64_t *hap_offsets
        int64_t *batch_reads
        int64_t *batch_haps
        int64_t read_capacity, max_lines
        int64_t n_reads, n_haps, n_batches
    int parse_pairhmm(const uint8_t *text, int64_t size, int min_base_qual, parse_pairhmm_out *out)


cdef uint8_t *u8(cnp.ndarray array):
    return <uint8_t *>cnp.PyArray_DATA(array)


def _empty(int64_t length, dtype):
    """np.empty, on small pages (parse_small_pages says why) where numpy would ask for huge ones."""
    array = np.empty(length, dtype)
    if array.nbytes >= 1 << 22:  # numpy's threshold for huge pages; smaller arrays may share the heap
        parse_small_pages(cnp.PyArray_DATA(array), array.nbytes)
    return array


cdef int64_t *i64(cnp.ndarray array):
    return <int64_t *>cnp.PyArray_DATA(array)


cdef dict _shrunk(dict arrays, dict lengths):
    # In place (realloc): the arrays own their memory and nothing else refers to them yet.
    for name, length in lengths.items():
        arrays[name].resize(length, refcheck=False)
    return arrays


cdef int64_t _max_lines(const uint8_t *data, int64_t size) noexcept nogil:
    return parse_count_lines(data, size) + 1


def logan(text, int64_t k):
    """XdropPairs.from_arrays's arrays from LOGAN text (strand c applied), or None."""
    cdef const uint8_t[::1] view = text
    cdef int64_t size = view.shape[0]
    cdef const uint8_t *data = &view[0] if size else NULL
    cdef int64_t max_pairs
    with nogil:
        max_pairs = _max_lines(data, size)
    arrays = dict(v_bases=_empty(size, np.uint8), h_bases=_empty(size, np.uint8),
                  v_offsets=_empty(max_pairs + 1, np.int64), h_offsets=_empty(max_pairs + 1, np.int64),
                  v_pos=_empty(max_pairs, np.int64), h_pos=_empty(max_pairs, np.int64))
    cdef parse_logan_out out
    out.v_bases, out.h_bases = u8(arrays["v_bases"]), u8(arrays["h_bases"])
    out.v_offsets, out.h_offsets = i64(arrays["v_offsets"]), i64(arrays["h_offsets"])
    out.v_pos, out.h_pos = i64(arrays["v_pos"]), i64(arrays["h_pos"])
    out.max_pairs = max_pairs
    cdef int status
    with nogil:
        status = parse_logan(data, size, k, &out)
    if status != PARSE_OK:
        return None
    n = out.n_pairs
    return _shrunk(arrays, dict(v_bases=out.v_total, h_bases=out.h_total, v_offsets=n + 1, h_offsets=n + 1,
                                v_pos=n, h_pos=n))


def seedext(text, int64_t max_h0):
    """SeedExtPairs.from_arrays's arrays from seed-extension TSV, or None."""
    cdef const uint8_t[::1] view = text
    cdef int64_t size = view.shape[0]
    cdef const uint8_t *data = &view[0] if size else NULL
    cdef int64_t max_pairs
    with nogil:
        max_pairs = _max_lines(data, size)
    arrays = dict(query=_empty(size, np.uint8), target=_empty(size, np.uint8),
                  query_offsets=_empty(max_pairs + 1, np.int64),
                  target_offsets=_empty(max_pairs + 1, np.int64), h0=_empty(max_pairs, np.int64))
    cdef parse_seedext_out out
    out.query, out.target = u8(arrays["query"]), u8(arrays["target"])
    out.query_offsets, out.target_offsets = i64(arrays["query_offsets"]), i64(arrays["target_offsets"])
    out.h0 = i64(arrays["h0"])
    out.max_pairs = max_pairs
    cdef int status
    with nogil:
        status = parse_seedext(data, size, max_h0, &out)
    if status != PARSE_OK:
        return None
    n = out.n_pairs
    return _shrunk(arrays, dict(query=out.query_total, target=out.target_total, query_offsets=n + 1,
                                target_offsets=n + 1, h0=n))


_READ_FIELDS = ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp")
_OFFSET_FIELDS = ("read_offsets", "hap_offsets", "batch_reads", "batch_haps")


def pairhmm(text, int min_base_qual):
    """PairHmmBatches.from_arrays's arrays from Pair-HMM text (qualities as phred values, base
    qualities raised to min_base_qual, bases in upper case), or None."""
    cdef const uint8_t[::1] view = text
    cdef int64_t size = view.shape[0]
    cdef const uint8_t *data = &view[0] if size else NULL
    cdef int64_t max_lines
    with nogil:
        max_lines = _max_lines(data, size)
    # A read line holds five fields of the read's length, so the reads hold at most size / 5 bases.
    cdef int64_t read_capacity = size // 5 + 1
    arrays = {name: _empty(read_capacity, np.uint8) for name in _READ_FIELDS}
    arrays["hap_bases"] = _empty(size, np.uint8)
    arrays.update({name: _empty(max_lines + 1, np.int64) for name in _OFFSET_FIELDS})
    cdef parse_pairhmm_out out
    out.read_bases, out.read_quals = u8(arrays["read_bases"]), u8(arrays["read_quals"])
    out.read_ins, out.read_del, out.read_gcp = u8(arrays["read_ins"]), u8(arrays["read_del"]), u8(arrays["read_gcp"])
    out.hap_bases = u8(arrays["hap_bases"])
    out.read_offsets, out.hap_offsets = i64(arrays["read_offsets"]), i64(arrays["hap_offsets"])
    out.batch_reads, out.batch_haps = i64(arrays["batch_reads"]), i64(arrays["batch_haps"])
    out.read_capacity, out.max_lines = read_capacity, max_lines
    cdef int status
    with nogil:
        status = parse_pairhmm(data, size, min_base_qual, &out)
    if status != PARSE_OK:
        return None
    read_total = int(arrays["read_offsets"][out.n_reads])
    lengths = {name: read_total for name in _READ_FIELDS}
    lengths.update(hap_bases=int(arrays["hap_offsets"][out.n_haps]), read_offsets=out.n_reads + 1,
                   hap_offsets=out.n_haps + 1, batch_reads=out.n_batches + 1, batch_haps=out.n_batches + 1)
    return _shrunk(arrays, lengths)
