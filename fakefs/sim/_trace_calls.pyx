# cython: language_level=3, boundscheck=False, wraparound=False
"""The machine's calls into the function tracer, compiled (the data plane:
docs/data-plane.md).

``CallWriter`` makes a stretch of a CPU's calls: it steps the walk (its
``Walker``: the draws of as many ``run()`` calls) and hands each call, at
its instant, to the array's ``FunctionWriter`` (the kernel's
``function_trace_call()``, fakefs/kernel/trace/_trace_function.pyx), no
object per call.  ``call_instants()`` says when a stretch's calls happen,
``past_halts()`` moves them past the times the CPU was halted, and
``instants_upto()`` finds an instant among them.  ``AwakeCalls`` is a
CPU's stream of calls over the time it is awake, asked for a stretch at a
time (the instants do not depend on how the time is cut into stretches).
"""

cimport cython
from cpython cimport array
from libc.stdlib cimport calloc, free, malloc, qsort

import array as _array

from fakefs.kernel._frames cimport Frame
from fakefs.sim._walk cimport Walker
from fakefs.kernel.lib._mt cimport direct, fakefs_mt_t, mt_random
from fakefs.kernel.trace._ring_buffer cimport PageWriter
from fakefs.kernel.trace._trace_function cimport FunctionWriter


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


cdef enum:
    CHUNK_NS = 1_000_000        # ``AwakeCalls`` draws this much awake time's calls at once
CHUNK = CHUNK_NS


@cython.final
cdef class AwakeCalls:
    """A CPU's calls, ``rate`` a second of the time it is awake (a halted
    CPU calls nothing), from a generator of their own, ``rng``.

    ``upto(spans, b)``: the instants, in order, of the calls from where
    the last stretch ended (``pos``) to ``b``, as an ``array('q')``;
    ``spans`` are the CPU's halted spans in [pos, b) (``Scheduler
    .halted_spans``: (start, end) in time order; empty: always awake).
    ``skip_to(t)``: nothing was simulated before ``t``: the stream goes on
    from there (its next call is the one it would have made next).

    The calls are placed on the CPU's own count of awake time: chunk after
    chunk of CHUNK awake ns, each holding ``carry + rate * CHUNK`` calls
    (the fraction carried to the next) at uniform draws, sorted.  So the
    instants depend only on the awake time and the generator: the same
    whether the time is asked for in one stretch or cut at every hit."""

    cdef readonly long long pos     # written up to this instant
    cdef readonly long long awake   # awake ns counted, up to ``pos``
    cdef double per_ns, carry
    cdef long long chunk_end        # awake ns the chunks drawn reach
    cdef array.array drawn          # the last chunk's offsets (awake ns), sorted
    cdef Py_ssize_t next            # the next of them not yet placed
    cdef object rng

    def __cinit__(self, double rate, rng, long long pos=0):
        self.per_ns = rate / 1e9
        self.rng = rng
        self.carry = rng.random()       # (a stream is somewhere in its period)
        self.pos = pos
        self.awake = self.chunk_end = 0
        self.drawn = array.clone(_QARRAY, 0, zero=False)
        self.next = 0

    def skip_to(self, long long t):
        """(the class says)"""
        if t > self.pos:
            self.pos = t

    cdef void _chunk(self) except *:
        """The next CHUNK awake ns' calls."""
        cdef double want = self.carry + self.per_ns * CHUNK_NS
        cdef Py_ssize_t n = <Py_ssize_t> want
        self.carry = want - n
        self.drawn = call_instants(self.rng, self.chunk_end, CHUNK_NS, n)
        self.next = 0
        self.chunk_end += CHUNK_NS

    def upto(self, list spans not None, long long b):
        """(the class says)"""
        cdef long long t = self.pos, e, a0, a1, off
        cdef Py_ssize_t k = 0, nh = len(spans), m = 0, cap
        cdef array.array out
        cdef long long *op
        cdef long long *dp
        if b <= t:
            return array.clone(_QARRAY, 0, zero=False)
        cap = <Py_ssize_t> (((b - t) // CHUNK_NS + 2) * (self.per_ns * CHUNK_NS + 1)) + 1
        out = array.clone(_QARRAY, cap, zero=False)
        op = out.data.as_longlongs
        while t < b:
            # the awake interval [t, e) up to the next halt, then past it
            e = b
            if k < nh:
                h0, h1 = spans[k]
                e = min(max(<long long> h0, t), b)
            if e > t:
                a0 = self.awake
                a1 = a0 + (e - t)
                while True:
                    if self.next < len(self.drawn):
                        dp = self.drawn.data.as_longlongs
                        off = dp[self.next]
                        if off >= a1:
                            break
                        if m == cap:        # (never: the bound holds; kept safe)
                            cap *= 2
                            array.resize(out, cap)
                            op = out.data.as_longlongs
                        op[m] = t + (off - a0)
                        m += 1
                        self.next += 1
                    elif self.chunk_end < a1:
                        self._chunk()
                    else:
                        break
                self.awake = a1
            if k < nh:
                t = min(max(<long long> h1, e), b)
                k += 1
            else:
                t = b
        self.pos = b
        array.resize(out, m)
        return out


@cython.final
cdef class CallWriter:
    """The function tracer's calls on CPU ``c`` (a walk ``Cpu``) written by
    one array's ``FunctionWriter`` ``fw`` (``FunctionTracer.call_writer``),
    set up once for as many stretches as the array's settings hold (a
    window: the caller keeps it that long).

    ``calls(times, cb)``: the next ``len(times)`` calls of the walk made at
    ``times``, written into the CPU buffer ``cb`` (None: the buffer records
    nothing, the calls are still made) as ``function_entries()`` and
    ``write_many()`` would.  Returns the pids of the entries taken, each
    run of one pid once (``TraceArray._task_info`` takes them).  The
    walker takes the task state the CPU is in at each stretch (Python
    moves it between them).

    ``entered(frames, ts, pid, cb)``: the writer's, for calls already made
    (``FunctionWriter.entered``)."""

    cdef Walker w
    cdef object walk, c
    cdef FunctionWriter fw

    def __cinit__(self, walk, c, rng, FunctionWriter fw not None):
        self.walk = walk
        self.c = c
        self.w = Walker(walk, c, rng)
        self.fw = fw

    def calls(self, array.array times not None, cb, Py_ssize_t lo=0, Py_ssize_t hi=-1):
        """(the class says; ``times[lo:hi]``, ``hi`` -1: to the end)"""
        cdef Walker w = self.w
        cdef FunctionWriter fw = self.fw
        cdef PageWriter out
        cdef long long *tp = _instants(times)
        cdef Py_ssize_t i, n = len(times)
        cdef Frame fr
        cdef int pid = 0, last_pid = -1
        cdef list pids = []
        cdef object ts_obj = None
        w._task(self.c.ts)
        w.remember = not self.walk.aside
        out = fw.begin(cb)
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
                if fw.put(out, fr, tp[i], pid) and pid != last_pid:
                    pids.append(pid)
                    last_pid = pid
        finally:
            w.flush()
            fw.end(out)
        return pids

    def entered(self, tuple frames, long long ts, int pid, cb):
        """(the class says)"""
        return self.fw.entered(frames, ts, pid, cb)
