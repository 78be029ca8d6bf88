# The function tracer's compiled entry writer, as the machine's call loop
# uses it (_trace_function.pyx; fakefs/sim/_trace_calls.pyx makes the calls).

cimport cython

from fakefs.kernel._frames cimport Frame
from fakefs.kernel.trace._ring_buffer cimport PageWriter


cdef class StackIds:
    cdef object smap, get_id
    cdef dict stored
    cdef int cpu, max_depth
    cdef bint full
    cdef long long found, drops
    cdef list touched           # frames whose uses are still to add

    cdef void begin(self) except *
    cdef long long of(self, tuple stack) except? -1000
    cdef long long of_frame(self, Frame fr) except? -1000
    cdef void done(self) except *


@cython.final
cdef class FunctionWriter:
    cdef int cflags[8]              # context_flags[ctx]: flags, preempt depth
    cdef int cpc[8]
    cdef long long ip_off
    cdef bint stacks
    cdef int id_length
    cdef object lengths_of
    cdef PageWriter out
    cdef StackIds ids
    cdef bint overwrite
    cdef int length

    cdef PageWriter begin(self, cb)
    cdef bint put(self, PageWriter out, Frame fr, long long ts, int pid) except -1
    cdef void end(self, PageWriter out) except *
