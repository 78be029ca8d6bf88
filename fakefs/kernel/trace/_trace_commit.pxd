# An entry's commit into an array's CPU buffer (_trace_commit.pyx), as the
# compiled replay of the machine's hits uses it.

cpdef bint write_entry(tr, int cpu, entry, int payload, into=*) except -1
cpdef void trace_stack(tr, int cpu, ts, pid, flags, pc, stack) except *
cpdef after_commit(tr, int cpu, tuple entry, stack)
cpdef Py_ssize_t record_size(ev, args) except -1
