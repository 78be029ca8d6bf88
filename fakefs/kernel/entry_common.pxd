# The system calls' two ends as a C struct (an augmenting .pxd: entry_common.py
# stays the one source; docs/data-plane.md "Typed fields").
from fakefs.kernel.tracepoint cimport Tracepoint

cdef class SyscallEntry:
    cdef public Tracepoint tp_enter, tp_exit
    cdef public object work, work_hit

    cpdef bint traced(self) except -1
    cpdef bint work_wanted(self) except -1
    cpdef enter(self, int cpu, t, pid, nr, args, bint work=*)
    cpdef exit(self, int cpu, t, pid, nr, ret)
