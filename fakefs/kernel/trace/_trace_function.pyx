# cython: language_level=3, boundscheck=False, wraparound=False
"""The function tracer's entries, compiled (the data plane: docs/data-plane.md).

``FunctionWriter`` is ``function_trace_call()`` (and, with a stack option,
``function_stack_trace_call()``) of one array on one CPU: each call the
machine makes (fakefs/sim/_trace_calls.pyx steps its walk) written
straight from its frame into the ring buffer's raw sub-buffers
(``_ring_buffer``), no object per call; the stacks' ids come through
``StackIds`` (the stackmap's first shortcuts).

The tuples' path, for what the raw writer does not take (several arrays,
no overwrite with a stack option, a clock of the array's own):
``function_entries()`` makes the tuples the ring buffer holds (``struct
ftrace_entry``: ip and parent ip, with the common fields), with the
calls' frames beside them, whose stacks the stack options take; the
per-frame fields are the frame's ``call``, made by ``miss(fr)`` the first
time a frame is met; ``stack_records()`` adds the stacks' records.  Tests
hold both paths to the same bytes (tests/kernel/trace/test_trace_function.py).
"""

cimport cython
from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject
from libc.errno cimport ENOSPC
from fakefs.kernel._frames cimport frame_ips
from fakefs.kernel.trace._trace_stackmap cimport StackMapElt


def function_entries(list runs, times, miss, entry_type):
    """The TRACE_FN entries of the calls ``runs`` ([(task, [frame, ...])],
    as ``Walk.run_many()`` gives them) made at ``times``, in order, and
    their frames (whose stacks the stack options take): (entries, frames)."""
    cdef list entries = [], frames = []
    cdef Py_ssize_t i = 0, n = len(times)
    cdef Frame fr
    cdef tuple f
    for task, frs in runs:
        pid = task.pid
        for x in frs:
            if i >= n:
                return entries, frames
            fr = <Frame> x
            f = fr.call
            if f is None:
                f = miss(fr)
            entries.append((times[i], entry_type, pid, f[0], f[1], f[2], f[3]))
            frames.append(fr)
            i += 1
    return entries, frames


cdef class StackIds:
    """``FtraceStackMap.get_id()`` for a stretch of calls on one CPU, with
    its first shortcut in C: a stack the map holds (``_stored``) takes its
    remembered slot and counts (the CPU's successes added when done); a
    stack not held while no slot is left takes get_id's answer (a drop,
    -ENOSPC) without asking it; any other is asked.  A map being reset is
    always asked (it answers -EINVAL).

    ``of_frame()`` adds the second: a call's frame remembers the map's
    answer for its stack (the map's ``_stored``, which a reset replaces;
    the slot and the element, or a drop while every slot was claimed:
    slots are only vacated by a reset), so a call from a frame seen before
    takes it without making or hashing its stack; the uses counted there
    go to the elements' ref_count when the stretch is done (a sum: the
    same counts)."""

    def __cinit__(self, smap, int cpu, int max_depth):
        self.smap = smap
        self.get_id = smap.get_id
        self.cpu = cpu
        self.max_depth = max_depth
        self.found = self.drops = 0
        self.touched = []
        self.begin()

    cdef void begin(self) except *:
        """The map as it is now (a stretch begins): its slots, whether it is full."""
        self.stored = None if self.smap.resetting else self.smap._stored
        self.full = not self.smap.empty_slots

    cdef long long of(self, tuple stack) except? -1000:
        cdef PyObject *hit = NULL
        cdef long long sid
        cdef StackMapElt elt
        if self.stored is not None and 0 < len(stack) <= self.max_depth:
            hit = PyDict_GetItem(self.stored, stack)
            if hit is not NULL:
                slot = (<tuple> hit)[0]
                elt = <StackMapElt> (<tuple> hit)[1]
                elt.ref_count = (elt.ref_count + 1) & 0xFFFFFFFF
                self.found += 1
                return slot
            if self.full:
                self.drops += 1
                return -ENOSPC
        sid = self.get_id(stack, self.cpu)
        self.full = not self.smap.empty_slots
        return sid

    cdef long long of_frame(self, Frame fr) except? -1000:
        """``of(fr.stack)`` of a call made from ``fr``."""
        cdef PyObject *hit
        cdef long long sid
        cdef tuple stack
        if self.stored is not None and fr.sid_stored is self.stored:
            if fr.sid_slot < 0:             # not held, and no slot was left
                self.drops += 1
                return -ENOSPC
            if not fr.sid_pending:
                self.touched.append(fr)
            fr.sid_pending += 1
            self.found += 1
            return fr.sid_slot
        stack = fr.make_stack()
        sid = self.of(stack)
        if self.stored is None or len(stack) > self.max_depth or fr.sid_pending:
            return sid
        if sid >= 0:
            hit = PyDict_GetItem(self.stored, stack)
            if hit is not NULL:
                fr.sid_stored = self.stored
                fr.sid_slot = (<tuple> hit)[0]
                fr.sid_elt = (<tuple> hit)[1]
        elif sid == -ENOSPC and self.full:
            # every slot claimed and the stack in none: the map drops it
            # (of()'s short way) until a reset replaces ``stored``
            fr.sid_stored = self.stored
            fr.sid_slot = -ENOSPC
            fr.sid_elt = None
        return sid

    cdef void done(self) except *:
        """The counts kept here go to the map."""
        cdef Frame fr
        cdef StackMapElt elt
        for fr in self.touched:
            elt = <StackMapElt> fr.sid_elt
            elt.ref_count = (elt.ref_count + <unsigned long long> fr.sid_pending) & 0xFFFFFFFF
            fr.sid_pending = 0
        self.touched = []
        if self.found:
            self.smap.successes[self.cpu] += self.found
        if self.drops:
            self.smap.drops[self.cpu] += self.drops
        self.found = self.drops = 0


def stack_records(list entries, list frames, smap, int cpu, stack_id_type, full_type,
                  int fn_length, int stack_id_length, lengths_of, int max_depth):
    """``function_stack_trace_call()`` of each call in overwrite mode: its
    entry, then its stack's, the stack's id in the stackmap ``smap`` where
    it has one (``<stack_id N>``), else the stack in full: (records,
    lengths).  The ids come through ``StackIds`` (the map's first
    shortcuts in C)."""
    cdef list out = [], lengths = []
    cdef Py_ssize_t i, n = len(entries)
    cdef tuple e, stack
    cdef long long sid
    cdef Frame fr
    cdef StackIds ids = StackIds(smap, cpu, max_depth) if smap is not None else None
    try:
        for i in range(n):
            e = <tuple> entries[i]
            fr = <Frame> frames[i]
            out.append(e)
            lengths.append(fn_length)
            sid = ids.of_frame(fr) if ids is not None else -1
            if sid >= 0:
                out.append((e[0], stack_id_type, e[2], e[3], e[4], sid, None))
                lengths.append(stack_id_length)
            else:
                stack = fr.make_stack()
                out.append((e[0], full_type, e[2], e[3], e[4], stack, None))
                lengths.append(lengths_of[len(stack)])
    finally:
        if ids is not None:
            ids.done()
    return out, lengths


cdef enum:
    MAX_IPS = 256       # a stack put from the frames without a tuple (deeper: a tuple)


cdef class FunctionWriter:
    """``function_trace_call()`` (``function_stack_trace_call()`` with a
    stack option) of one array on one CPU, compiled: a call's entry written
    into the raw sub-buffer of the array's CPU buffer from its frame's
    fields (``context_flags[ctx]``: flags and preempt depth; the entry ip
    plus ``ip_off``; the return address into the caller), no object per
    call; with ``stacks``
    (overwrite mode), its stack's entry after it, the stack's id in the
    stackmap ``smap`` through ``StackIds`` (else the stack in full).  Made
    by the tracer for an array whose settings allow it
    (``FunctionTracer.call_writer``); the machine's loop of calls
    (fakefs/sim/_trace_calls.pyx) calls ``begin``, ``put`` per call and
    ``end`` for each stretch, the buffer as it is at the stretch.

    ``entered(frames, ts, pid, cb)``: the calls of the frames ``frames``
    (outermost first) the task ``pid`` entered at ``ts`` on its way to a
    switch, a fork or an exec; whether any entry was taken."""

    def __cinit__(self, bint overwrite, int length, tuple context_flags, long long ip_off,
                  int cpu=0, bint stacks=False, smap=None, int id_length=0, lengths_of=None,
                  int max_depth=0):
        cdef int k
        for k in range(8):
            self.cflags[k], self.cpc[k] = context_flags[k]
        self.ip_off = ip_off
        self.stacks = stacks
        self.id_length = id_length
        self.lengths_of = lengths_of
        self.out = PageWriter()
        self.ids = StackIds(smap, cpu, max_depth) if stacks and smap is not None else None
        self.overwrite = overwrite
        self.length = length

    cdef PageWriter begin(self, cb):
        """The page writer on the CPU buffer ``cb`` (None: None, the buffer
        records nothing), and the stack ids on the map as it is now."""
        if self.ids is not None:
            self.ids.begin()
        if cb is None:
            return None
        self.out._begin(cb, self.overwrite, self.length)
        return self.out

    cdef bint put(self, PageWriter out, Frame fr, long long ts, int pid) except -1:
        """The entry of a call made from ``fr`` at ``ts`` by ``pid`` (and
        its stack's); False: dropped (no overwrite, the buffer full)."""
        cdef int flags = self.cflags[fr.ctx & 7], pc = self.cpc[fr.ctx & 7], n
        cdef long long sid
        cdef tuple st
        cdef unsigned long long ips[MAX_IPS]
        if not out.fn(ts, pid, flags, pc, fr.entry + <unsigned long long> self.ip_off,
                      fr.site if fr.parent is not None else 0):
            return False
        if self.stacks:
            sid = self.ids.of_frame(fr) if self.ids is not None else -1
            if sid >= 0:
                out.stack_id(ts, pid, flags, pc, <unsigned int> sid, self.id_length)
            elif fr.depth <= MAX_IPS:
                n = frame_ips(fr, ips, MAX_IPS)
                out.stack_ips(ts, pid, flags, pc, ips, n, self.lengths_of[n], fr)
            else:
                st = fr.make_stack()
                out.stack(ts, pid, flags, pc, st, self.lengths_of[len(st)])
        return True

    cdef void end(self, PageWriter out) except *:
        if out is not None:
            out._done()
        if self.ids is not None:
            self.ids.done()

    def entered(self, tuple frames, long long ts, int pid, cb):
        """(the class says)"""
        cdef PageWriter out = self.begin(cb)
        cdef bint took = False
        try:
            for fr in frames:
                took |= self.put(out, <Frame> fr, ts, pid)
        finally:
            self.end(out)
        return took
