# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The walk's hot loop, compiled (the data plane: docs/data-plane.md).

The machine's CPUs running code: ``run()`` is ``Walk.run()``: it advances a CPU's running task to its
next traced call.  It makes exactly the draws, in the same order, that
``walk_reference.py`` (the walk written in plain Python, the
specification) makes, so both give the same frames for the same seed; the
test comparing them is tests/sim/test_walk_compiled.py.

What makes it fast: the graph's per-function arrays (flags, the chance to
call again, pick tables, entry ips, contexts) are C arrays (``Graph``, made
once per pick table list), frames are a C struct's fields, a callee is
drawn by a binary search over C doubles.  The random numbers are the
generator's own stream, drawn from its state in C (``lib/_mt.pxd``).  A
call not made before from a frame makes the new frame here
(``Walker.child``: ``Frames.child`` in C, its return address asked of
``Frames.site_of``); the roots, interrupt entries and context switches go
back to Python.  The walker holds where its task is (``fr``, ``ph``) and
writes it to the task state before any Python that may look and when done
(``flush()``).
"""

from cpython.ref cimport PyObject

cdef extern from "Python.h":
    PyObject *list_item "PyList_GET_ITEM"(PyObject *lst, Py_ssize_t i)
from libc.stdlib cimport free, malloc

cimport cython

from fakefs.kernel.lib._mt cimport direct, fakefs_mt_t, mt_random

from fakefs.kernel import walkgraph as _wg

cdef int F_TRACE = _wg.F_TRACE, F_HALT = _wg.F_HALT, F_SWITCH = _wg.F_SWITCH
cdef int F_DISPATCH = _wg.F_DISPATCH
cdef int ENTER = 0, RESUME = 1
cdef int REDRAWS = _wg.REDRAWS


cdef class Table:
    """One pick table list (a profile's ``wg.tables[...]``) as C arrays:
    function ``f``'s callees are ``callee[off[f]:off[f + 1]]`` with the
    cumulative weights ``cum[...]`` and ``total[f]``; ``has[f]`` is 0 where
    the list holds None (its fields: _walk.pxd)."""

    def __cinit__(self, list table):
        cdef int nf = len(table), n = 0, f, i
        self.nf = nf
        self.source = table
        for e in table:
            if e is not None:
                n += len(e[0])
        self.off = <int *> malloc((nf + 1) * sizeof(int))
        self.callee = <int *> malloc(max(n, 1) * sizeof(int))
        self.cum = <double *> malloc(max(n, 1) * sizeof(double))
        self.total = <double *> malloc(max(nf, 1) * sizeof(double))
        self.has = <char *> malloc(max(nf, 1))
        if not (self.off and self.callee and self.cum and self.total and self.has):
            raise MemoryError()
        n = 0
        for f in range(nf):
            e = table[f]
            self.off[f] = n
            if e is None:
                self.has[f] = 0
                self.total[f] = 0.0
                continue
            callees, cum, total = e
            self.has[f] = 1
            self.total[f] = total
            for i in range(len(callees)):
                self.callee[n] = callees[i]
                self.cum[n] = cum[i]
                n += 1
        self.off[nf] = n

    def __dealloc__(self):
        free(self.off)
        free(self.callee)
        free(self.cum)
        free(self.total)
        free(self.has)


cdef class Graph:
    """The walk graph's per-function arrays as C arrays, and the compiled
    pick tables made so far (one per table list): fields in _walk.pxd."""

    def __cinit__(self, wg):
        cdef int f
        self.nf = len(wg.flags)
        self.flags = <int *> malloc(max(self.nf, 1) * sizeof(int))
        self.again = <double *> malloc(max(self.nf, 1) * sizeof(double))
        self.entry = <unsigned long long *> malloc(max(self.nf, 1) * sizeof(unsigned long long))
        self.fctx = <int *> malloc(max(self.nf, 1) * sizeof(int))
        if not (self.flags and self.again and self.entry and self.fctx):
            raise MemoryError()
        for f in range(self.nf):
            self.flags[f] = wg.flags[f]
            self.again[f] = wg.again[f]
            self.entry[f] = wg.entry[f]
            self.fctx[f] = wg.fctx[f]
        self.ints = list(range(self.nf))
        self.tables = {}

    def __dealloc__(self):
        free(self.flags)
        free(self.again)
        free(self.entry)
        free(self.fctx)

    cdef Table table(self, list table):
        t = self.tables.get(id(table))
        if t is None:
            t = self.tables[id(table)] = Table(table)
        return <Table> t


cdef inline int inner_context(int own, int below) noexcept:
    """``walkgraph.inner_context()``."""
    return (own & 3 if own & 3 else below & 3) | ((own | below) & 4)


cdef inline int bisect_right(double *a, int lo, int hi, double x):
    """The first index in a[lo:hi] whose value is greater than ``x``
    (``bisect.bisect_right``: the same comparisons)."""
    cdef int mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef inline bint _made(PyObject *hit):
    """A frame's kid (from its ``kids``) is a call the walk made from it
    (not one only made elsewhere, nor one it cannot make: False; whether a
    kid is there must not change the draws)."""
    if hit is NULL or <object> hit is False:
        return False
    return (<Frame> hit).called


@cython.final
cdef class Walker:
    """One CPU's walk for a stretch of calls: what ``run()`` reads of the
    walk, the CPU and the generator, fetched once (fields in _walk.pxd)."""

    def __cinit__(self, walk, c, rng):
        self.walk = walk
        self.c = c
        self.rng = rng
        self.rnd = rng.random
        self.mt = direct(rng)
        self.g = walk.cgraph
        self.frames = walk.frames
        self.irq_table = walk.wg.irq_table
        self.maxd = walk.max_depth
        self.irqd = self.maxd - 8
        self.pirq = walk.p_irq
        self.ppre = self.pirq + walk.p_preempt
        self.preempt_cut = self.pirq + 0.6 * walk.p_preempt
        self.novelty = walk.novelty
        self.remember = not walk.aside
        self.cap = walk.frame_cap if walk.frame_cap is not None else 1 << 62
        self._task(c.ts)

    cdef inline double draw(self) except? -1.0:
        """``rng.random()`` (inlined: the call is out of line)."""
        if self.mt != NULL:
            return mt_random(self.mt)
        return self.called()

    cdef double called(self) except? -1.0:
        return <double> self.rnd()

    cdef object child(self, Frame fr, int g):
        """``Frames.child()`` of a call not made before from ``fr``: the new
        frame, or False where ``g`` cannot be called in ``fr``'s mode."""
        cdef int mode = _wg.callee_mode(self.g.flags[g], fr.mode)
        cdef Frame k
        key = self.g.ints[g]
        if mode < 0:
            frame_put_kid(fr, g, False, key)
            return False
        frames = self.frames
        k = Frame.__new__(Frame)
        k.fn = g
        k.parent = fr
        k.entry = self.g.entry[g]
        k.site = frames.site_of(fr.fn, key)
        k.k1key = NO_KID
        k.depth = fr.depth + 1
        k.irq = fr.irq
        k.mode = mode
        k.ctx = inner_context(self.g.fctx[g], fr.ctx)
        frame_put_kid(fr, g, k, key)
        frames.count += 1
        return k

    cdef void _task(self, ts):
        """The walk goes on in task state ``ts`` (where it is: its
        ``frame`` and ``phase``, held here until ``flush()``)."""
        cdef list tl = ts.table
        self.ts = ts
        if tl is not self.tlist:            # (a task of another profile)
            self.table = self.g.table(tl)
            self.tlist = tl
        self.fr = ts.frame
        self.ph = ts.phase

    cdef void flush(self):
        """The task state says where the walk is (the steps keep it here)."""
        self.ts.frame, self.ts.phase = self.fr, self.ph

    cdef Frame step(self, bint until_switch, bint until_halt, int limit):
        """Advance to the next traced call (or switch, or halt): the frame
        there (``self.ts`` is the task)."""
        cdef int *flags = self.g.flags
        cdef double *again = self.g.again
        cdef list ints = self.g.ints
        cdef int maxd = self.maxd, irqd = self.irqd
        cdef double pirq = self.pirq, ppre = self.ppre, novelty = self.novelty
        cdef bint stop_at_trace = not (until_switch or until_halt)
        cdef Frame fr
        cdef int ph, f, fl, gi, i, j, lo, hi
        cdef double r, x
        cdef Table table = self.table
        cdef PyObject *hit
        frames = self.frames
        irq_table = self.irq_table
        walk = self.walk
        c = self.c
        ts = self.ts
        fr = self.fr
        ph = self.ph
        for i in range(limit):
            if fr is None:
                # in user space: enter the kernel (or take an interrupt)
                if self.draw() < pirq * 4:
                    fr = frames.irq_child(None, _pick(irq_table, self))
                else:
                    fr = frames.root(_pick(ts.roots, self), ts.mode)
                ph = ENTER
                if flags[fr.fn] & F_TRACE and stop_at_trace:
                    self.fr, self.ph = fr, ENTER
                    return fr
                continue
            f = fr.fn
            if ph == ENTER:
                fl = flags[f]
                if fl & (F_HALT | F_SWITCH):
                    if fl & F_HALT:
                        if until_halt:
                            self.fr, self.ph = fr, ENTER
                            return fr
                        if fr.irq or fr.depth > irqd:
                            fr, ph = fr.parent, RESUME
                            continue
                        fr = frames.irq_child(fr, _pick(irq_table, self))
                        if flags[fr.fn] & F_TRACE:
                            self.fr, self.ph = fr, ENTER
                            return fr
                        continue
                    if until_switch:
                        self.fr, self.ph = fr, RESUME
                        return fr
                    if until_halt or walk.driven:
                        ph = RESUME
                        continue
                    ts.frame, ts.phase = self.fr, self.ph    # (where the last step left it)
                    nts = walk.switch(c, self.rng, fr)
                    if nts is not ts:
                        self._task(nts)
                        ts, table = nts, self.table
                        fr, ph = self.fr, self.ph
                        continue
                    ph = RESUME
                    continue
                if not table.has[f] or fr.depth >= maxd:
                    fr, ph = fr.parent, RESUME
                    continue
            else:
                r = self.draw()
                if r < ppre and not fr.irq and not flags[f] & F_SWITCH:
                    if r < pirq:
                        if fr.depth <= irqd:
                            fr = frames.irq_child(fr, _pick(irq_table, self))
                            ph = ENTER
                            if flags[fr.fn] & F_TRACE and stop_at_trace:
                                self.fr, self.ph = fr, ENTER
                                return fr
                            continue
                    elif ts is not c.idle and stop_at_trace and not walk.driven:
                        # the task sleeps or its time slice ends
                        ts.frame, ts.phase = fr, ph
                        walk.event_switch(c, self.rng, preempt=r < self.preempt_cut)
                        self._task(c.ts)
                        ts, table = self.ts, self.table
                        fr, ph = self.fr, self.ph
                        continue
                if not table.has[f] or fr.depth >= maxd or self.draw() >= again[f]:
                    fr = fr.parent
                    continue
            # call one of f's callees, drawn from f's table; one this frame
            # has not called yet only with chance novelty / (calls it made +
            # novelty), else drawn again (walkgraph: a frame repeats what it did)
            lo = table.off[f]
            hi = table.off[f + 1]
            gi = table.callee[bisect_right(table.cum, lo, hi, self.draw() * table.total[f])]
            got = False
            if gi >= 0:
                hit = frame_kid(fr, gi, list_item(<PyObject *> ints, gi))
                if (not _made(hit) and fr.visits and not flags[f] & F_DISPATCH
                        and self.draw() * (fr.visits + novelty) >= novelty):
                    for j in range(REDRAWS):
                        gi = table.callee[bisect_right(table.cum, lo, hi,
                                                       self.draw() * table.total[f])]
                        if gi < 0:
                            break
                        hit = frame_kid(fr, gi, list_item(<PyObject *> ints, gi))
                        if _made(hit):
                            break
                if gi >= 0:
                    if hit is NULL:
                        if frames.count > self.cap and self.remember:
                            # (here, not between calls: where the walk is
                            # the same whichever path runs it)
                            self.fr, self.ph = fr, ph
                            self.flush()
                            walk.restart_frames()
                        got = self.child(fr, gi)
                    else:
                        got = <object> hit
            if self.remember:
                fr.visits += 1
                if got is not False:
                    (<Frame> got).called = True
            if got is False:            # "_", or not from this mode: return
                fr, ph = fr.parent, RESUME
                continue
            fr = <Frame> got
            ph = ENTER
            if flags[fr.fn] & F_TRACE and stop_at_trace:
                self.fr, self.ph = fr, ENTER
                return fr
        self.fr, self.ph = fr, ph
        return fr


def run(walk, c, rng, bint until_switch=False, bint until_halt=False, int limit=200_000):
    """``Walk.run()``: advance CPU ``c`` to its next traced call; return
    (task, frame)."""
    cdef Walker w = Walker(walk, c, rng)
    fr = w.step(until_switch, until_halt, limit)
    w.flush()
    return w.ts.task, fr


def run_many(walk, c, rng, int n):
    """``n`` traced calls in a row on CPU ``c``, as runs of one task:
    [(task, [frame, ...]), ...]; the draws of as many ``run()`` calls."""
    cdef Walker w = Walker(walk, c, rng)
    cdef list runs = [], frs = None
    cdef int i
    task = None
    try:
        for i in range(n):
            fr = w.step(False, False, 200_000)
            t = w.ts.task
            if t is not task:
                task = t
                frs = []
                runs.append((task, frs))
            frs.append(fr)
    finally:
        w.flush()
    return runs


cdef object _pick(object table, Walker w):
    """``walkgraph.pick()``: a callee of the pick table ``table``."""
    callees, cum, total = table
    cdef double x = w.draw() * <double> total
    cdef int lo = 0, hi = len(cum), mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if x < <double> cum[mid]:
            hi = mid
        else:
            lo = mid + 1
    return callees[lo]


def switched_top(Frame f, list flags):
    """The outermost frame from ``f`` down (``f`` and its callers) whose
    function switches tasks (``F_SWITCH`` in ``flags``), or None
    (``Walk.follow``: where a woken task returns from)."""
    top = None
    while f is not None:
        if <int> flags[f.fn] & F_SWITCH:
            top = f
        f = f.parent
    return top
