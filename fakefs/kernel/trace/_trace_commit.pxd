# An entry's commit into an array's CPU buffer (_trace_commit.pyx), as the
# compiled replay of the machine's hits uses it.

from fakefs.kernel.trace._ring_buffer cimport CpuBufferCore


cdef class Committer:
    cdef object tr, tracing, smap
    cdef list taskinfo                # tracing.taskinfo_pid (the same list for good)
    cdef CpuBufferCore cb             # None: the buffer records nothing now
    cdef bint overwrite, tgids, stacktrace, userstack, plain
    cdef int cpu
    cdef int read(self) except -1


cdef Committer committer(dict committers, tr, int cpu, int nr_cpus)
cpdef void reread_committers(dict committers) except *
cdef bint commit_entry(Committer c, int cpu, tuple entry, int payload) except -1
cdef object after_committed(Committer c, int cpu, tuple entry, stack)
cpdef bint write_entry(tr, int cpu, entry, int payload, into=*) except -1
cpdef void trace_stack(tr, int cpu, ts, pid, flags, pc, stack) except *
cpdef after_commit(tr, int cpu, tuple entry, stack)
cpdef Py_ssize_t record_size(ev, args) except -1
