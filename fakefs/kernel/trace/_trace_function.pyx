# cython: language_level=3, boundscheck=False, wraparound=False
"""The function tracer's entries, compiled (the data plane: docs/data-plane.md).

``function_entries()`` is what ``function_trace_call()`` fills for each of
a stretch of calls (``struct ftrace_entry``: ip and parent ip, with the
common fields), as the tuples the ring buffer holds; the calls' stacks
beside them, for the stack options.  The per-frame fields (context flags,
preempt depth, ip, parent ip) are the frame's ``call``, made by
``miss(fr)`` the first time a frame is met.
"""

from fakefs.kernel._walk cimport Frame


def function_entries(list runs, list times, miss, entry_type):
    """The TRACE_FN entries of the calls ``runs`` ([(task, [frame, ...])],
    as ``Walk.run_many()`` gives them) made at ``times``, in order, and
    their stacks: (entries, stacks)."""
    cdef list entries = [], stacks = []
    cdef Py_ssize_t i = 0, n = len(times)
    cdef Frame fr
    cdef tuple f
    for task, frs in runs:
        pid = task.pid
        for x in frs:
            if i >= n:
                return entries, stacks
            fr = <Frame> x
            f = fr.call
            if f is None:
                f = miss(fr)
            entries.append((times[i], entry_type, pid, f[0], f[1], f[2], f[3]))
            stacks.append(fr.stack)
            i += 1
    return entries, stacks
