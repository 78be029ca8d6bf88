# cython: language_level=3, boundscheck=False, wraparound=False
"""An entry's commit into a trace array's CPU buffer, compiled (the data
plane: docs/data-plane.md): ``TraceArray.write_entry()`` and
``TraceArray.trace_stack()`` (trace.py's methods are these), and an event
hit's commit in arrays that only write its record (PLAIN) or write it and
add the stack options (AFTER: ``trace_buffer_unlock_commit_regs()``);
``trace_events_commit.commit_way()`` says which, the whole commit path
(triggers, pid lists, filters) stays there.

The buffer's side is C (``CpuBufferCore.write()``); the array's settings
and the task info saved at a commit are read as the Python did, so this is
the same code with no Python frame per step: a machine's hit went through
five of them (commit, write, the stack option, its stack's write, the CPU
buffer's write).

``Committer``: the same commit for the compiled replay of the machine's
hits in a window in which no array's settings can change (no event trigger
or function probe in any array: ``TraceActivity.run``), with what it reads
of the array on a CPU read once (``committer()``); the same records, in
the same order (tests/sim/test_trace_machine_hits.py).
"""

cimport cython

from fakefs.kernel.trace._ring_buffer cimport CpuBufferCore
from fakefs.kernel.trace._ring_buffer_bpage cimport rb_event_length
from fakefs.kernel.trace._trace_stackmap cimport get_id

from fakefs.kernel.mm.mmap import user_stack
from fakefs.kernel.trace import trace_entries as te

# how a hit of an event is committed in an array (``trace_events_commit.commit_way``)
COMMITTED = 0       # the commit path: triggers, pid lists, the filter, then the record
AFTER = 1           # the record, then the stack options (none of the others)
PLAIN = 2           # the record alone

cdef int _AFTER = AFTER
cdef int TRACE_STACK = te.TRACE_STACK, TRACE_STACK_ID = te.TRACE_STACK_ID
cdef int STACK_ID_PAYLOAD = te.STACK_ID_PAYLOAD, ENTRY_HDR = te.TRACE_ENTRY_HDR
cdef int TRACE_USER_STACK = te.TRACE_USER_STACK, USERSTACK_PAYLOAD = te.USERSTACK_PAYLOAD
cdef int TRACE_FLAG_NMI = te.TRACE_FLAG_NMI


@cython.final
cdef class Committer:
    """What ``write_entry()`` and ``after_commit()`` read of array ``tr`` on
    one CPU, read once a window (see the module's doc; ``reread_committers``)."""

    def __cinit__(self, tr, int cpu):
        self.tr = tr
        self.cpu = cpu
        self.tracing = tr.tracing
        self.taskinfo = self.tracing.taskinfo_pid     # (cleared in place, never replaced)
        self.read()

    cdef int read(self) except -1:
        """What it reads of the array, read now."""
        tr = self.tr
        buf = tr.buffer
        self.cb = None if buf.record_off or buf.record_disabled else buf.cpus[self.cpu]
        flags = tr.flags
        self.overwrite = flags["overwrite"]
        self.tgids = bool(self.tracing.tgids.ref)
        self.stacktrace = bool(flags.get("stacktrace"))
        self.userstack = bool(flags.get("userstacktrace"))
        self.smap = tr.stackmap if flags.get("stackmap") else None
        self.plain = tr.clock_reader is None
        return 0


cpdef void reread_committers(dict committers) except *:
    """Each ``Committer`` of ``committers`` reads its array again (a new
    window: settings may have been written since the last; the window's
    ``Rec``s keep them, ``_trace_machine_hits``)."""
    for got in committers.values():
        for c in <list> got:
            if c is not None:
                (<Committer> c).read()


cdef Committer committer(dict committers, tr, int cpu, int nr_cpus):
    """The array's ``Committer`` on ``cpu`` in ``committers`` (array -> one
    per CPU: the window's), made the first time."""
    got = committers.get(tr)
    if got is None:
        got = committers[tr] = [None] * nr_cpus
    c = (<list> got)[cpu]
    if c is None:
        c = (<list> got)[cpu] = Committer(tr, cpu)
    return <Committer> c


cdef bint _commit(tr, list taskinfo, CpuBufferCore cb, bint overwrite, tgids, int cpu, entry,
                  int payload) except -1:
    """The commit itself, whoever read the array's settings: ``entry``
    (stamped by the array's clock) into ``cb`` (None: the buffer records
    nothing), then ``_task_info()`` when another task committed last on
    ``cpu`` or tgids are recorded."""
    if cb is None:
        return False
    if not cb.write(entry, rb_event_length(payload), overwrite):
        return False
    pid = entry[2]
    if pid != taskinfo[cpu] or tgids:
        tr._task_info(cpu, pid)
    return True


cdef bint commit_entry(Committer c, int cpu, tuple entry, int payload) except -1:
    """``write_entry(c.tr, cpu, entry, payload)`` with the window's settings."""
    if not c.plain:
        return write_entry(c.tr, cpu, entry, payload, None)
    return _commit(c.tr, c.taskinfo, c.cb, c.overwrite, c.tgids, cpu, entry, payload)


cpdef bint write_entry(tr, int cpu, entry, int payload, into=None) except -1:
    """``TraceArray.write_entry()``: reserve and commit ``entry`` (its
    record ``payload`` bytes) in array ``tr``'s buffer for ``cpu``, then
    ``_task_info()``.  ``into``: the CPU buffer it was reserved in before
    triggers ran (which may have switched tracing or swapped it out since);
    default: the CPU's now.  Whether it was taken."""
    reader = tr.clock_reader
    if reader is not None:
        entry = (reader(entry[0]),) + entry[1:]
    if into is None:
        buf = tr.buffer
        if buf.record_off or buf.record_disabled:
            return False
        into = buf.cpus[cpu]
    tracing = tr.tracing
    return _commit(tr, tracing.taskinfo_pid, <CpuBufferCore?> into, tr.flags["overwrite"],
                   tracing.tgids.ref, cpu, entry, payload)


cdef bint _write(tr, Committer c, int cpu, tuple entry, int payload) except -1:
    return write_entry(tr, cpu, entry, payload, None) if c is None else \
        commit_entry(c, cpu, entry, payload)


cdef void _stack(tr, Committer c, smap, int cpu, ts, pid, flags, pc, stack) except *:
    """``__ftrace_trace_stack()`` with the stackmap series applied: the
    stack's id in the stackmap ``smap`` (None: ``stackmap`` off) where it
    has one, else the stack in full; written by ``c`` (None: by
    ``write_entry``)."""
    cdef long long sid
    if smap is not None:
        sid = get_id(smap, stack, cpu)
        if sid >= 0 and _write(tr, c, cpu, (ts, TRACE_STACK_ID, pid, flags, pc, sid, None),
                               STACK_ID_PAYLOAD):
            return
    _write(tr, c, cpu, (ts, TRACE_STACK, pid, flags, pc, stack, None),
           ENTRY_HDR + 8 + 8 * len(stack))


cpdef void trace_stack(tr, int cpu, ts, pid, flags, pc, stack) except *:
    """``TraceArray.trace_stack()``: ``_stack()`` by the array's settings now."""
    _stack(tr, None, tr.stackmap if tr.flags.get("stackmap") else None, cpu, ts, pid, flags,
           pc, stack)


cdef object _after(tr, Committer c, bint stacktrace, bint userstack, int cpu, tuple entry,
                   stack):
    """``trace_buffer_unlock_commit_regs()`` after an event's commit: the
    kernel stack (``stacktrace``; ``stack`` the hit's, or a function making
    it, called at most once), then the user stack (``userstack``); the
    stack, as made."""
    if stacktrace:
        if callable(stack):
            stack = stack()
        if c is None:
            trace_stack(tr, cpu, entry[0], entry[2], entry[3], entry[4], stack)
        else:
            _stack(tr, c, c.smap, cpu, entry[0], entry[2], entry[3], entry[4], stack)
    if userstack:
        ftrace_trace_userstack(tr, cpu, entry)
    return stack


cpdef after_commit(tr, int cpu, tuple entry, stack):
    """``_after()`` by the array's settings now."""
    flags = tr.flags
    return _after(tr, None, bool(flags.get("stacktrace")), bool(flags.get("userstacktrace")),
                  cpu, entry, stack)


cdef object after_committed(Committer c, int cpu, tuple entry, stack):
    """``_after()`` by the window's settings."""
    return _after(c.tr, c, c.stacktrace, c.userstack, cpu, entry, stack)


cdef void ftrace_trace_userstack(tr, int cpu, tuple entry) except *:
    """``ftrace_trace_userstack()``: the current task's tgid and user
    stack (mm/mmap.py); none in NMI context."""
    if entry[3] & TRACE_FLAG_NMI:
        return
    k = tr.kernel
    task = k.sched.find(entry[2])
    tgid = task.tgid if task is not None and task.pid else 0
    write_entry(tr, cpu, (entry[0], TRACE_USER_STACK, entry[2], entry[3], entry[4], tgid,
                          user_stack(k.seed, task)), USERSTACK_PAYLOAD)


def commit_written(trs, int cpu, tuple entry, int payload, stack, int way):
    """``trace_event_commit()`` where the arrays' least way is AFTER or
    PLAIN: each array writes the record, and with AFTER adds its stack
    options; the stack, as made."""
    for tr in trs:
        if write_entry(tr, cpu, entry, payload, None) and way == _AFTER:
            stack = after_commit(tr, cpu, entry, stack)
    return stack


cpdef Py_ssize_t record_size(ev, args) except -1:
    """``EventDef.record_size()``: bytes a hit of ``ev`` with fields
    ``args`` takes in its record: the struct, plus the strings of its
    ``__data_loc`` fields (each with its NUL) that go after it."""
    dyn = ev._dynamic
    if dyn is None:
        dyn = ev.dynamic_fields()
    cdef Py_ssize_t n = ev.payload
    for i in dyn:
        v = args[i]
        if isinstance(v, str):
            n += len(<str> v) + 1
        elif isinstance(v, (bytes, bytearray)):
            n += len(v)
    return n
