# cpu_common.h's declarations, for each family's .pxd (the drivers report bad arguments with
# warpdp_bad_argument).
from libc.stdint cimport int64_t

cdef extern from "cpu_common.h":
    int warpdp_cpu_supports(int isa)
    int warpdp_cpu_best_isa()
    ctypedef struct warpdp_bad_argument:
        int field
        int64_t index
    int WARPDP_BAD_ARGUMENT
    int WARPDP_MAX_THREADS
