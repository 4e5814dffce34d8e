# cython: language_level=3, boundscheck=False, wraparound=False
"""CUDA driver calls recorded from Python and made in one go, with the interpreter lock given
up once (a host-side helper of the GPU launchers, like ``ordering``).

A launcher enqueues each chunk with some thirty asynchronous calls: copies, kernel launches,
event records and stream waits. Made through CuPy, every call gives up the interpreter lock
and must win it back. In the gRPC server, whose other threads keep the lock busy, winning it
back kept the GPU waiting for the chunk (BENCHMARKS.md, gRPC service). A
:class:`CallList` records the calls (a few machine words each) and :meth:`CallList.issue`
makes them all, in order, in one stretch without the lock.

The driver library is opened at the first issue, so this module builds and imports on
machines without CUDA. Handles are CuPy's: ``Stream.ptr``, ``Event.ptr`` and a kernel's
``Function.ptr`` are the driver's CUstream, CUevent and CUfunction.
"""
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, realloc

cdef extern from "<dlfcn.h>" nogil:
    void *dlopen(const char *filename, int flags)
    void *dlsym(void *handle, const char *symbol)
    char *dlerror()
    int RTLD_NOW
    int RTLD_LOCAL

# The driver API's entry points used here (CUresult is an int; handles are pointers).
ctypedef int (*to_device_fn)(uint64_t, const void *, size_t, void *) noexcept nogil
ctypedef int (*to_host_fn)(void *, uint64_t, size_t, void *) noexcept nogil
ctypedef int (*launch_fn)(void *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                          unsigned int, unsigned int, void *, void **, void **) noexcept nogil
ctypedef int (*record_fn)(void *, void *) noexcept nogil
ctypedef int (*wait_fn)(void *, void *, unsigned int) noexcept nogil
ctypedef int (*context_get_fn)(void **) noexcept nogil
ctypedef int (*context_set_fn)(void *) noexcept nogil
ctypedef int (*error_name_fn)(int, const char **) noexcept nogil

cdef enum Kind:
    TO_DEVICE = 1
    TO_HOST = 2
    LAUNCH = 3
    RECORD = 4
    WAIT = 5

cdef enum:
    MAX_ARGS = 3

_KIND_NAMES = {TO_DEVICE: "copy to device", TO_HOST: "copy to host", LAUNCH: "kernel launch",
               RECORD: "event record", WAIT: "stream wait"}


cdef struct Call:
    int kind
    void *stream           # the stream every kind of call is made on
    uint64_t target        # copies: destination; record and wait: the event; launch: the function
    uint64_t source        # copies: source
    size_t nbytes
    unsigned int grid, block, shared_bytes
    # Kernel arguments, each in a 64-bit word: cuLaunchKernel reads as many bytes as the
    # kernel's parameter has, which for a 32-bit parameter are the low ones (little-endian).
    uint64_t args[MAX_ARGS]


cdef to_device_fn _to_device = NULL
cdef to_host_fn _to_host = NULL
cdef launch_fn _launch = NULL
cdef record_fn _record = NULL
cdef wait_fn _wait = NULL
cdef context_get_fn _context_get = NULL
cdef context_set_fn _context_set = NULL
cdef error_name_fn _error_name = NULL


cdef void *_symbol(void *library, const char *name) except NULL:
    cdef void *found = dlsym(library, name)
    if found == NULL:
        raise RuntimeError(f"libcuda.so.1 has no {name.decode()}")
    return found


cdef int _load() except -1:
    global _to_device, _to_host, _launch, _record, _wait, _context_get, _context_set, _error_name
    if _error_name != NULL:
        return 0
    cdef void *library = dlopen(b"libcuda.so.1", RTLD_NOW | RTLD_LOCAL)
    if library == NULL:
        message = dlerror()
        raise RuntimeError("cannot load the CUDA driver (libcuda.so.1): "
                           + (message.decode(errors="replace") if message != NULL else "unknown error"))
    _to_device = <to_device_fn>_symbol(library, b"cuMemcpyHtoDAsync_v2")
    _to_host = <to_host_fn>_symbol(library, b"cuMemcpyDtoHAsync_v2")
    _launch = <launch_fn>_symbol(library, b"cuLaunchKernel")
    _record = <record_fn>_symbol(library, b"cuEventRecord")
    _wait = <wait_fn>_symbol(library, b"cuStreamWaitEvent")
    _context_get = <context_get_fn>_symbol(library, b"cuCtxGetCurrent")
    _context_set = <context_set_fn>_symbol(library, b"cuCtxSetCurrent")
    _error_name = <error_name_fn>_symbol(library, b"cuGetErrorName")  # set last: marks the table complete
    return 0


cdef class CallList:
    """Asynchronous CUDA calls recorded in order, made by :meth:`issue`. Not thread-safe: a
    launcher records and issues under its own lock."""

    cdef Call *calls
    cdef Py_ssize_t count, room

    def __dealloc__(self) -> None:
        free(self.calls)

    def __len__(self) -> int:
        return self.count

    cdef Call *_next(self) except NULL:
        cdef Call *grown
        if self.count == self.room:
            grown = <Call *>realloc(self.calls, (2 * self.room + 16) * sizeof(Call))
            if grown == NULL:
                raise MemoryError()
            self.calls, self.room = grown, 2 * self.room + 16
        self.count += 1
        return &self.calls[self.count - 1]

    def to_device(self, uint64_t destination, uint64_t source, size_t nbytes, uint64_t stream) -> None:
        """Copy nbytes from host address source to device address destination."""
        cdef Call *call = self._next()
        call.kind, call.stream, call.target, call.source, call.nbytes = TO_DEVICE, <void *>stream, destination, source, nbytes

    def to_host(self, uint64_t destination, uint64_t source, size_t nbytes, uint64_t stream) -> None:
        """Copy nbytes from device address source to host address destination."""
        cdef Call *call = self._next()
        call.kind, call.stream, call.target, call.source, call.nbytes = TO_HOST, <void *>stream, destination, source, nbytes

    def launch(self, uint64_t function, unsigned int grid, unsigned int block, unsigned int shared_bytes,
               uint64_t stream, tuple args) -> None:
        """Launch a kernel on a 1-D grid; args: its (at most three) integer arguments."""
        cdef Py_ssize_t i
        if len(args) > MAX_ARGS:
            raise ValueError(f"at most {MAX_ARGS} kernel arguments, not {len(args)}")
        cdef Call *call = self._next()
        call.kind, call.stream, call.target = LAUNCH, <void *>stream, function
        call.grid, call.block, call.shared_bytes = grid, block, shared_bytes
        for i in range(len(args)):
            call.args[i] = <uint64_t>(<long long>args[i])

    def record(self, uint64_t event, uint64_t stream) -> None:
        """Record event on stream."""
        cdef Call *call = self._next()
        call.kind, call.stream, call.target = RECORD, <void *>stream, event

    def wait(self, uint64_t stream, uint64_t event) -> None:
        """Make stream wait for the last record of event."""
        cdef Call *call = self._next()
        call.kind, call.stream, call.target = WAIT, <void *>stream, event

    def clear(self) -> None:
        self.count = 0

    def issue(self, uint64_t context) -> None:
        """Make the recorded calls in order, in the CUDA context given (the one CuPy uses),
        with the interpreter lock given up once; the list is empty afterwards. RuntimeError
        names the call that failed (the ones before it were made)."""
        cdef Py_ssize_t i, n = self.count, failed = -1
        cdef int status = 0
        cdef void *current = NULL
        cdef void *params[MAX_ARGS]
        cdef Call *call
        if n == 0:
            return
        try:
            _load()
        except BaseException:
            self.count = 0
            raise
        with nogil:
            status = _context_get(&current)
            if status == 0 and current != <void *>context:
                status = _context_set(<void *>context)
            for i in range(n):
                if status != 0:
                    break
                call = &self.calls[i]
                failed = i
                if call.kind == TO_DEVICE:
                    status = _to_device(call.target, <const void *>call.source, call.nbytes, call.stream)
                elif call.kind == TO_HOST:
                    status = _to_host(<void *>call.target, call.source, call.nbytes, call.stream)
                elif call.kind == LAUNCH:
                    params[0], params[1], params[2] = &call.args[0], &call.args[1], &call.args[2]
                    status = _launch(<void *>call.target, call.grid, 1, 1, call.block, 1, 1, call.shared_bytes,
                                     call.stream, params, NULL)
                elif call.kind == RECORD:
                    status = _record(<void *>call.target, call.stream)
                else:
                    status = _wait(call.stream, <void *>call.target, 0)
        self.count = 0
        if status != 0:
            what = "setting the CUDA context" if failed < 0 else (
                f"call {failed + 1} of {n} ({_KIND_NAMES[self.calls[failed].kind]})")
            raise RuntimeError(f"{what} failed: {_error_text(status)}")


cdef str _error_text(int status):
    cdef const char *name = NULL
    if _error_name(status, &name) == 0 and name != NULL:
        return f"{name.decode()} ({status})"
    return f"CUDA error {status}"
