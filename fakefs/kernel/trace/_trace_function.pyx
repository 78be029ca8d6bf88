# cython: language_level=3, boundscheck=False, wraparound=False
"""The function tracer's entries, compiled (the data plane: docs/data-plane.md).

``CallWriter`` is ``function_trace_call()`` (and, with a stack option,
``function_stack_trace_call()``) for a stretch of calls: the walk's steps
written straight into the ring buffer's raw sub-buffers (``_ring_buffer``),
no object per call; the stacks' ids come through ``StackIds`` (the
stackmap's first shortcuts).  ``call_instants()`` says when a stretch's
calls happen.

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
from cpython cimport array
from libc.errno cimport ENOSPC
from libc.stdlib cimport calloc, free, malloc, qsort

import array as _array

from fakefs.kernel._walk cimport Frame, Walker, frame_ips
from fakefs.kernel.trace._ring_buffer cimport PageWriter
from fakefs.kernel.trace._trace_stackmap cimport StackMapElt
from fakefs.kernel.lib._mt cimport direct, fakefs_mt_t, mt_random


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

    cdef object smap, get_id
    cdef dict stored
    cdef int cpu, max_depth
    cdef bint full
    cdef long long found, drops
    cdef list touched           # frames whose uses are still to add

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


cdef void sort_spread(long long *a, Py_ssize_t n, long long t0, long long span) noexcept nogil:
    """Sort ``a`` (``n`` values in [t0, t0 + span), spread about evenly) in
    place: a bucket per value by where it falls, then insertion within the
    buckets (linear for such values, exact for any)."""
    cdef Py_ssize_t i, j, b
    cdef long long v
    cdef Py_ssize_t *start = <Py_ssize_t *> calloc(n + 1, sizeof(Py_ssize_t))
    cdef long long *tmp = <long long *> malloc(n * sizeof(long long))
    cdef double per = <double> n / <double> span if span > 0 else 0.0
    if start == NULL or tmp == NULL:
        free(start)
        free(tmp)
        qsort(a, n, sizeof(long long), cmp_i64)
        return
    for i in range(n):
        b = <Py_ssize_t> (<double> (a[i] - t0) * per)
        start[min(max(b, 0), n - 1) + 1] += 1
    for b in range(n):
        start[b + 1] += start[b]
    for i in range(n):
        b = <Py_ssize_t> (<double> (a[i] - t0) * per)
        b = min(max(b, 0), n - 1)
        tmp[start[b]] = a[i]
        start[b] += 1
    for i in range(n):                  # (the buckets are in order: sort within)
        v = tmp[i]
        j = i
        while j > 0 and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v
    free(start)
    free(tmp)


cdef int cmp_i64(const void *a, const void *b) noexcept nogil:
    cdef long long x = (<const long long *> a)[0], y = (<const long long *> b)[0]
    return (x > y) - (x < y)


def call_instants(rng, long long t0, long long span, Py_ssize_t n):
    """``sorted(t0 + int(rng.random() * span) for _ in range(n))``: the
    instants of ``n`` calls spread uniformly over [t0, t0 + span), from
    ``n`` draws, as an ``array('q')`` (no object per call; bisect and
    slices take it as a list)."""
    cdef array.array out = array.clone(_QARRAY, n, zero=False)
    cdef long long *ts = out.data.as_longlongs
    cdef Py_ssize_t i
    cdef double fspan = <double> span
    cdef fakefs_mt_t *mt = direct(rng)
    rnd = rng.random
    for i in range(n):
        ts[i] = t0 + <long long> ((mt_random(mt) if mt != NULL else <double> rnd()) * fspan)
    if n > 1:
        sort_spread(ts, n, t0, span)
    return out


def past_halts(array.array times not None, long long t0, list spans not None):
    """The instants ``times`` (sorted, over [t0, t0 + awake time): from
    ``call_instants()`` given only the time the CPU was awake) moved, in
    place, past the halted ``spans`` ((start, end) in [t0, ...), in time
    order) that come before them: spread over the time it was awake."""
    cdef long long *ts = _instants(times)
    cdef Py_ssize_t n = len(times), i = 0, j, ns = len(spans)
    cdef long long add = 0, start, end
    for j in range(ns):
        start, end = spans[j]
        # (the span begins here in the awake time's count)
        while i < n and ts[i] - t0 < start - t0 - add:
            ts[i] += add
            i += 1
        add += end - start
    while i < n:
        ts[i] += add
        i += 1


cdef array.array _QARRAY = _array.array("q")


cdef long long *_instants(array.array times) except? NULL:
    """The values of ``times``, an ``array('q')`` (``call_instants()``'s;
    an empty one's may be NULL)."""
    if times.ob_descr.typecode != b"q":
        raise TypeError("instants are an array('q'), not '%s'" % times.typecode)
    return times.data.as_longlongs


def instants_upto(array.array times not None, long long ts, Py_ssize_t lo, bint right):
    """``bisect_right(times, ts, lo)`` (``right``) or ``bisect_left``, for
    the sorted instants ``times`` (``call_instants()``'s array), in C."""
    cdef long long *a = _instants(times)
    cdef Py_ssize_t hi = len(times), mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < ts or (right and a[mid] == ts):
            lo = mid + 1
        else:
            hi = mid
    return lo


@cython.final
cdef class CallWriter:
    """The function tracer's calls on CPU ``c`` (a walk ``Cpu``) written
    into one array's CPU buffers, set up once for as many stretches as the
    array's settings hold (a window: the caller keeps it that long).

    ``calls(times, cb)``: the next ``len(times)`` calls of the walk (its
    ``Walker``: the draws of as many ``run()`` calls), made at ``times``,
    written as TRACE_FN entries into the CPU buffer ``cb`` (None: the
    buffer records nothing, the calls are still made) as
    ``function_entries()`` and ``write_many()`` would, without an object
    per call: the record is written into the raw sub-buffer from the
    frame's fields (``context_flags[ctx]``: flags and preempt depth, the
    entry ip plus ``ip_off``: ftrace's ip, the return address into the
    caller: parent ip).  With ``stacks`` (overwrite mode), each entry is
    followed by its stack's as ``stack_records()`` makes it: its id in the
    stackmap ``smap`` (``id_length`` bytes, ``StackIds``), else the stack
    in full (``lengths_of[depth]`` bytes).  Returns the pids of the entries
    taken, each run of one pid once (``TraceArray._task_info`` takes
    them).  The walker takes the task state the CPU is in at each stretch
    (Python moves it between them).

    ``entered(frames, ts, pid, cb)``: the same for calls already made: the
    task ``pid`` entered the frames ``frames`` (outermost first) at ``ts``
    on its way to a switch, a fork or an exec.  Whether any entry was
    taken."""

    cdef Walker w               # (None: entered() only)
    cdef object walk, c
    cdef PageWriter out
    cdef CallFields cf
    cdef StackIds ids
    cdef bint overwrite
    cdef int length

    def __cinit__(self, walk, c, rng, bint overwrite, int length, tuple context_flags,
                  long long ip_off, int cpu=0, bint stacks=False, smap=None, int id_length=0,
                  lengths_of=None, int max_depth=0):
        self.walk = walk
        self.c = c
        self.w = Walker(walk, c, rng) if walk is not None else None
        self.out = PageWriter()
        self.cf = CallFields(context_flags, ip_off, stacks, id_length, lengths_of)
        self.ids = StackIds(smap, cpu, max_depth) if stacks and smap is not None else None
        self.overwrite = overwrite
        self.length = length

    cdef PageWriter _begin(self, cb):
        """The page writer on ``cb`` (None: None), and the stack ids on the
        map as it is now."""
        if self.ids is not None:
            self.ids.begin()
        if cb is None:
            return None
        self.out._begin(cb, self.overwrite, self.length)
        return self.out

    cdef void _end(self, PageWriter out) except *:
        if out is not None:
            out._done()
        if self.ids is not None:
            self.ids.done()

    def calls(self, array.array times not None, cb, Py_ssize_t lo=0, Py_ssize_t hi=-1):
        """(the class says; ``times[lo:hi]``, ``hi`` -1: to the end)"""
        cdef Walker w = self.w
        cdef PageWriter out
        cdef long long *tp = _instants(times)
        cdef Py_ssize_t i, n = len(times)
        cdef Frame fr
        cdef int pid = 0, last_pid = -1
        cdef list pids = []
        cdef object ts_obj = None
        cdef CallFields cf = self.cf
        cdef StackIds ids = self.ids
        w._task(self.c.ts)
        w.remember = not self.walk.aside
        out = self._begin(cb)
        if hi < 0 or hi > n:
            hi = n
        try:
            for i in range(lo, hi):
                fr = w.step(False, False, 200_000)
                if w.ts is not ts_obj:
                    ts_obj = w.ts
                    pid = ts_obj.task.pid
                if out is None:
                    continue
                if cf.put(out, ids, fr, tp[i], pid) and pid != last_pid:
                    pids.append(pid)
                    last_pid = pid
        finally:
            w.flush()
            self._end(out)
        return pids

    def entered(self, tuple frames, long long ts, int pid, cb):
        """The calls of the frames ``frames`` (outermost first) a task
        entered at ``ts`` on its way to a hit (``TraceActivity
        ._write_entered``): whether any was taken."""
        cdef PageWriter out = self._begin(cb)
        cdef bint took = False
        try:
            for fr in frames:
                took |= self.cf.put(out, self.ids, <Frame> fr, ts, pid)
        finally:
            self._end(out)
        return took


cdef enum:
    MAX_IPS = 256       # a stack put from the frames without a tuple (deeper: a tuple)


@cython.final
cdef class CallFields:
    """What a function tracer's entry of a call records from its frame
    (``context_flags[ctx]``: flags and preempt depth; the entry ip plus
    ``ip_off``; the return address into the caller), and whether its
    stack follows it (``stacks``: an id in the stackmap, ``id_length``
    bytes, else in full, ``lengths_of[depth]``)."""

    cdef int cflags[8]
    cdef int cpc[8]
    cdef long long ip_off
    cdef bint stacks
    cdef int id_length
    cdef object lengths_of

    def __cinit__(self, tuple context_flags, long long ip_off, bint stacks, int id_length,
                  lengths_of):
        cdef int k
        for k in range(8):
            self.cflags[k], self.cpc[k] = context_flags[k]
        self.ip_off = ip_off
        self.stacks = stacks
        self.id_length = id_length
        self.lengths_of = lengths_of

    cdef bint put(self, PageWriter out, StackIds ids, Frame fr, long long ts, int pid) except -1:
        """The call's entry (and its stack's); False: dropped (no
        overwrite, the buffer full)."""
        cdef int flags = self.cflags[fr.ctx & 7], pc = self.cpc[fr.ctx & 7], n
        cdef long long sid
        cdef tuple st
        cdef unsigned long long ips[MAX_IPS]
        if not out.fn(ts, pid, flags, pc, fr.entry + <unsigned long long> self.ip_off,
                      fr.site if fr.parent is not None else 0):
            return False
        if self.stacks:
            sid = ids.of_frame(fr) if ids is not None else -1
            if sid >= 0:
                out.stack_id(ts, pid, flags, pc, <unsigned int> sid, self.id_length)
            elif fr.depth <= MAX_IPS:
                n = frame_ips(fr, ips, MAX_IPS)
                out.stack_ips(ts, pid, flags, pc, ips, n, self.lengths_of[n], fr)
            else:
                st = fr.make_stack()
                out.stack(ts, pid, flags, pc, st, self.lengths_of[len(st)])
        return True
