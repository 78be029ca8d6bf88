# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The reach tables' computation, and the way down them, compiled (the data
plane: docs/data-plane.md).

``compute()`` is ``Reach._compute()`` for one pick table list and one set
of targets: the chance each function gets to a target (``P``, cycles cut
where the depth-first pass meets a function it is inside), the chance
after its current call returns (``prem``), the fewest calls to a target
(``dist``), and per function its callees that get there with their
cumulative weights.  The same arithmetic in the same order as the plain
Python of ``reach_reference.py``, which tests/sim/test_reach_compiled.py
holds it equal to, to the bit.

``climb()`` and ``descend()`` are a path's two walks (``Reach._path_once``,
``Reach.descend``): up the running task's frames to one that goes on to a
target, and a call down the tables to one, drawing as the plain Python of
``reach_reference`` does (the same draws in the same order, the frames
made by ``Frames.child``), held equal by the same tests.
"""

from array import array

from cpython cimport array as carray
from cpython.ref cimport PyObject
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from fakefs.kernel._frames cimport Frame, frame_kid
from fakefs.sim._walk cimport Graph, Table
from fakefs.kernel.lib._mt cimport direct, fakefs_mt_t, mt_random

from fakefs.kernel import walkgraph as _wg

cdef int F_SWITCH = _wg.F_SWITCH, F_LOOP = _wg.F_LOOP
cdef signed char FAR = 99          # "no way there"


cdef inline double hit(double h, double a):
    """Chance that a function which makes 1 + Geometric(a) calls, each
    getting somewhere with chance h, gets there (reach._hit)."""
    if h <= 0.0:
        return 0.0
    if a >= 1.0:
        return 1.0
    return 1.0 - (1.0 - h) * (1.0 - a) / (1.0 - a * (1.0 - h))


cdef struct State:
    int *off              # the pick tables (a _walk.Table's arrays)
    int *callee
    double *cum
    double *total
    char *has
    char *target
    char *blocked
    char *busy
    char *known
    double *P
    double *H
    double *again


cdef double prob(State *s, int f):
    cdef double h, prev, c, pg
    cdef int i, g
    if s.known[f]:
        return s.P[f]
    if s.target[f]:
        s.known[f] = 1
        s.P[f] = 1.0
        return 1.0
    if not s.has[f] or s.blocked[f] or s.busy[f]:
        return 0.0
    s.busy[f] = 1
    h = 0.0
    prev = 0.0
    for i in range(s.off[f], s.off[f + 1]):
        g = s.callee[i]
        c = s.cum[i]
        pg = prob(s, g) if g >= 0 else 0.0
        if pg != 0.0:
            h += (c - prev) * pg
        prev = c
    h /= s.total[f]
    s.busy[f] = 0
    s.H[f] = h
    s.known[f] = 1
    s.P[f] = hit(h, s.again[f])
    return s.P[f]


def compute(list table, targets, Graph graph):
    """(dist, (start, callees, cum, far, prem), P) as arrays, for
    ``ReachTable.of()`` (``far`` and ``prem`` alongside the callees, a
    function's at its first); ``graph``: the graph's arrays in C (its flags,
    its chances to call again, and ``table``'s, kept there)."""
    cdef int nf = len(table), f, g, i, n
    cdef Table t = graph.table(table)
    cdef State s
    cdef signed char *dist
    cdef int *ncallers
    cdef int *cstart
    cdef int *callers
    cdef int *frontier
    cdef int *nxt
    cdef int nfront, nnext, j
    cdef double w, acc, prev, a, h, c
    cdef signed char far
    s.off, s.callee, s.cum, s.total, s.has = t.off, t.callee, t.cum, t.total, t.has
    buf = bytearray(4 * nf)
    cdef char *target = buf
    cdef char *blocked = target + nf
    cdef char *busy = blocked + nf
    cdef char *known = busy + nf
    s.target, s.blocked, s.busy, s.known = target, blocked, busy, known
    P_arr = array("d", bytes(8 * nf))
    H_arr = array("d", bytes(8 * nf))
    cdef double[:] Pv = P_arr, Hv = H_arr
    s.P = &Pv[0] if nf else NULL
    s.H = &Hv[0] if nf else NULL
    s.again = graph.again
    for g in targets:
        target[g] = 1
    for f in range(nf):
        blocked[f] = 1 if (graph.flags[f] & F_SWITCH) and not target[f] else 0
    for f in range(nf):
        prob(&s, f)
    # fewest calls to a target: breadth first up the callers
    dist_arr = array("b", bytes(nf))
    cdef signed char[:] dv = dist_arr
    n = t.off[nf] if nf else 0
    ncallers = <int *> malloc((nf + 1) * sizeof(int))
    cstart = <int *> malloc((nf + 1) * sizeof(int))
    callers = <int *> malloc((n + 1) * sizeof(int))
    frontier = <int *> malloc((nf + 1) * sizeof(int))
    nxt = <int *> malloc((nf + 1) * sizeof(int))
    cdef int *o_start = <int *> malloc((nf + 1) * sizeof(int))
    cdef int *o_callee = <int *> malloc((n + 1) * sizeof(int))
    cdef double *o_cum = <double *> malloc((n + 1) * sizeof(double))
    cdef signed char *o_far = <signed char *> malloc(n + 1)
    cdef double *o_prem = <double *> malloc((n + 1) * sizeof(double))
    cdef int lo, m = 0
    if not (ncallers and cstart and callers and frontier and nxt and o_start and o_callee
            and o_cum and o_far and o_prem):
        free(ncallers); free(cstart); free(callers); free(frontier); free(nxt)
        free(o_start); free(o_callee); free(o_cum); free(o_far); free(o_prem)
        raise MemoryError()
    try:
        for f in range(nf + 1):
            ncallers[f] = 0
        for f in range(nf):
            if t.has[f] and not blocked[f]:
                for i in range(t.off[f], t.off[f + 1]):
                    g = t.callee[i]
                    if g >= 0:
                        ncallers[g] += 1
        j = 0
        for f in range(nf):
            cstart[f] = j
            j += ncallers[f]
            ncallers[f] = 0
        cstart[nf] = j
        for f in range(nf):
            if t.has[f] and not blocked[f]:
                for i in range(t.off[f], t.off[f + 1]):
                    g = t.callee[i]
                    if g >= 0:
                        callers[cstart[g] + ncallers[g]] = f
                        ncallers[g] += 1
        nfront = 0
        for f in range(nf):
            dv[f] = FAR
        for f in range(nf):
            if target[f]:
                dv[f] = 0
                frontier[nfront] = f
                nfront += 1
        while nfront:
            nnext = 0
            for j in range(nfront):
                g = frontier[j]
                for i in range(cstart[g], cstart[g] + ncallers[g]):
                    f = callers[i]
                    if dv[f] == FAR:
                        dv[f] = dv[g] + 1
                        nxt[nnext] = f
                        nnext += 1
            frontier, nxt = nxt, frontier
            nfront = nnext
        # per function, its callees that get there
        o_start[0] = 0
        for f in range(nf):
            if t.has[f] and not blocked[f]:
                lo = m
                acc = 0.0
                prev = 0.0
                far = -1
                for i in range(t.off[f], t.off[f + 1]):
                    g = t.callee[i]
                    c = t.cum[i]
                    w = (c - prev) * (s.P[g] if known[g] else 0.0) if g >= 0 else 0.0
                    prev = c
                    if w > 0 and dv[g] < FAR:
                        acc += w
                        o_callee[m] = g
                        o_cum[m] = acc
                        o_far[m] = 0
                        o_prem[m] = 0.0
                        m += 1
                        if dv[g] > far:
                            far = dv[g]
                if far >= 0:
                    o_far[lo] = far
                    a = s.again[f]
                    h = s.H[f] if not target[f] else acc / t.total[f]
                    o_prem[lo] = hit(h, a) if a >= 1.0 else (
                        1.0 - (1.0 - a) / (1.0 - a * (1.0 - h)))
            o_start[f + 1] = m
        start = array("i", bytes(4 * (nf + 1)))
        rcallees = array("i", bytes(4 * m))
        rcum = array("d", bytes(8 * m))
        far_arr = array("b", bytes(m))
        prem_arr = array("d", bytes(8 * m))
        memcpy((<carray.array> start).data.as_ints, o_start, (nf + 1) * sizeof(int))
        if m:
            memcpy((<carray.array> rcallees).data.as_ints, o_callee, m * sizeof(int))
            memcpy((<carray.array> rcum).data.as_doubles, o_cum, m * sizeof(double))
            memcpy((<carray.array> far_arr).data.as_schars, o_far, m)
            memcpy((<carray.array> prem_arr).data.as_doubles, o_prem, m * sizeof(double))
    finally:
        free(ncallers); free(cstart); free(callers); free(frontier); free(nxt)
        free(o_start); free(o_callee); free(o_cum); free(o_far); free(o_prem)
    for f in range(nf):
        if not known[f]:
            s.P[f] = 0.0
    return dist_arr, (start, rcallees, rcum, far_arr, prem_arr), P_arr


def descend(frames, Frame n, targets, rtab, carray.array dist, rnd, int maxd):
    """Call down from frame ``n`` to one of ``targets`` (function ids),
    each callee drawn from ``rtab`` (``reach.ReachTable``) by its weight;
    near the depth limit (``maxd``), or where a drawn callee cannot be
    called in the frame's mode, among the callees with room (``dist``)
    only.  The frame reached, or None if stuck.  ``rnd`` is a
    ``random.Random``'s ``random`` (drawn from in C where it may be)."""
    cdef carray.array a_start = rtab.start, a_callees = rtab.callees, a_cum = rtab.cum
    cdef carray.array a_far = rtab.far
    cdef int *start = a_start.data.as_ints
    cdef int *callees = a_callees.data.as_ints
    cdef double *cum = a_cum.data.as_doubles
    cdef signed char *far = a_far.data.as_schars
    cdef signed char *dst = dist.data.as_schars
    cdef fakefs_mt_t *mt = direct(getattr(rnd, "__self__", None))
    cdef int f, g, lo, hi, room, mid, i
    cdef double x, tot
    cdef PyObject *hit
    cdef list opts
    while n.fn not in targets:
        f = n.fn
        lo = start[f]
        hi = start[f + 1]
        if lo == hi:
            return None
        room = maxd - n.depth - 1
        if far[lo] <= room:                 # (f's far: at its first callee)
            # (the callees' total weight: the last one's cumulative weight)
            x = (mt_random(mt) if mt != NULL else <double> rnd()) * cum[hi - 1]
            while lo < hi:                  # bisect_right(cum, x, lo, hi)
                mid = (lo + hi) >> 1
                if x < cum[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            g = callees[lo]
            hit = frame_kid(n, g)
            k = <object> hit if hit is not NULL else frames.child(n, g)
            if k is not False:
                n = <Frame> k
                continue
            lo = start[f]
            hi = start[f + 1]
        # near the depth limit, or a callee not allowed in this mode
        opts = [(callees[i], cum[i] - (cum[i - 1] if i > lo else 0.0)) for i in range(lo, hi)
                if dst[callees[i]] <= room]
        while True:
            if not opts:
                return None
            tot = 0.0
            for o in opts:
                tot += <double> (<tuple> o)[1]
            x = (mt_random(mt) if mt != NULL else <double> rnd()) * tot
            for i in range(len(opts)):
                x -= <double> (<tuple> opts[i])[1]
                if x < 0:
                    break
            g = (<tuple> opts[i])[0]
            k = frames.child(n, g)
            if k is not False:
                break
            del opts[i]
        n = <Frame> k
    return n


def climb(Frame n, rtab, targets, carray.array dist, list flags, int maxd, rnd):
    """From frame ``n`` up its callers: the first whose chance of going on
    to a target after its current call (``rtab``'s ``prem``) comes true (drawn), with
    room for the calls down (``dist``); none past a frame that loops
    (``F_LOOP``).  (the frame it stopped at, the one found or None): the
    first None when it went past the outermost."""
    cdef carray.array a_start = rtab.start, a_prem = rtab.prem
    cdef int *start = a_start.data.as_ints
    cdef double *pr = a_prem.data.as_doubles
    cdef signed char *dst = dist.data.as_schars
    cdef fakefs_mt_t *mt = direct(getattr(rnd, "__self__", None))
    cdef int f
    cdef double p
    while n is not None:
        f = n.fn
        p = pr[start[f]] if start[f] != start[f + 1] else 0.0
        if p and f not in targets and dst[f] + n.depth <= maxd and \
                (mt_random(mt) if mt != NULL else <double> rnd()) < p:
            return n, n
        if <int> flags[f] & F_LOOP:
            return n, None
        n = n.parent
    return None, None


def way_up(dict ups, key, rev, dict reach, entries, long fid, int maxd, int tries, rnd):
    """``reach_reference.way_up()`` (a call site's way up its callers to an
    entry): the same draws, the same chain; no list per step (the callers
    that qualify are counted, then drawn from, in one pass each)."""
    cdef fakefs_mt_t *mt = direct(getattr(rnd, "__self__", None))
    cdef int t, n, cnt
    cdef bint strict
    cdef long df, dg, g
    cdef double tot, x, w
    cdef list chain, reached
    cdef set seen
    cdef tuple item
    for t in range(tries):
        strict = t == tries - 1
        chain = [fid]
        seen = {fid}
        f = fid
        while f not in entries:
            df = reach[f]
            reached = ups.get((key, f))
            if reached is None:
                reached = ups[(key, f)] = [(g2, w2, reach[g2]) for g2, w2 in rev.get(f, ())
                                           if g2 in reach]
            n = len(chain)
            tot = 0.0
            cnt = 0
            for item in reached:
                dg = item[2]
                if (dg < df if strict else dg + n < maxd) and item[0] not in seen:
                    tot += <double> item[1]
                    cnt += 1
            if not cnt:
                break
            x = (mt_random(mt) if mt != NULL else <double> rnd()) * tot
            chosen = None
            for item in reached:
                dg = item[2]
                if (dg < df if strict else dg + n < maxd) and item[0] not in seen:
                    chosen = item[0]
                    x -= <double> item[1]
                    if x < 0:
                        break
            chain.append(chosen)
            seen.add(chosen)
            f = chosen
        if f in entries:
            chain.reverse()
            return chain
    return None


cdef int ENTER = 0          # frames.ENTER: the frame's function was just called


cdef inline object _choose(list opts, double x):
    """``reach._choose``: the option ``x`` falls on (the last one past the end)."""
    for o in opts:
        x -= <double> (<tuple> o)[1]
        if x < 0:
            return (<tuple> o)[0]
    return (<tuple> opts[len(opts) - 1])[0]


cdef double _total(list opts):
    """``sum(o[1] for o in opts)``: left to right, from 0."""
    cdef double t = 0.0
    for o in opts:
        t += <double> (<tuple> o)[1]
    return t


def path_once(reach, c, rng, kind, targets, bint irq=False, bint task_only=False):
    """``Reach._path_once`` (reach.py: its specification and its doc) of
    the ``Reach`` ``reach``: the same draws in the same order, the same
    frames, the same turn left in ``reach``; its climb and descent are
    this module's, no list or generator per path."""
    cdef list flags = reach.flags
    cdef int maxd = reach.max_depth
    cdef Frame at
    cdef double rtot, itot, x, s
    cdef signed char *dst
    cdef carray.array dist
    cdef list opts, iopts
    rnd = rng.random
    ts = c.ts
    halt = c.halt
    idle = ts is c.idle
    if idle and halt is not None:
        f0 = ts.frame
        if f0 is None or <int> flags[(<Frame> f0).fn] & F_SWITCH:
            ts.frame, ts.phase = halt, ENTER          # back to waiting
    dist, rtab, root_opts, irq_opts = <tuple> reach.tables(ts.profile, kind)
    dst = dist.data.as_schars
    fr = ts.frame
    if task_only:
        while fr is not None and (<Frame> fr).irq:
            fr = (<Frame> fr).parent
    n = fr
    cand = None
    fresh = False
    if not irq:
        n, cand = <tuple> climb(fr, rtab, targets, dist, flags, maxd, rnd)
        fresh = n is None and ts.user
    # where an interrupt would arrive
    if cand is not None or irq:
        at_o = fr
        while at_o is not None and ((<Frame> at_o).irq or
                                    <int> flags[(<Frame> at_o).fn] & F_SWITCH):
            at_o = (<Frame> at_o).parent
    elif fresh or n is None:
        at_o = None
    elif idle and halt is not None:
        ts.frame, ts.phase = halt, ENTER
        at_o = halt
    else:
        at_o = n
    n = cand
    if n is None or (not task_only and rnd() < reach.p_event_irq):
        # enter the kernel afresh, or take an interrupt that gets there
        opts = <list> root_opts if fresh else []
        iopts = []
        if not task_only and (at_o is None or (not (<Frame> at_o).irq
                                               and (<Frame> at_o).depth + 8 < maxd)):
            depth = (<Frame> at_o).depth if at_o is not None else 0
            iopts = [o for o in <list> irq_opts if dst[<int> (<tuple> o)[0]] + depth < maxd]
        rtot = _total(opts)
        itot = _total(iopts)
        if rtot or n is not None:
            itot *= 0.1
        if rtot + itot > 0:
            x = rnd() * (rtot + itot)
            if x < rtot:
                n = reach.frames.root(_choose(opts, x), ts.mode)
            else:
                s = _total(iopts)
                x = (x - rtot) / (itot / s)
                n = reach.frames.irq_child(at_o, _choose(iopts, x))
    for start in ((n, cand) if n is not cand else (n,)):
        if start is not None:
            reach.turn, reach.turn_entered = start, start is not cand
            got = descend(reach.frames, start, targets, rtab, dist, rnd, maxd)
            if got is not None:
                return got
    return None


cdef Py_ssize_t _callers_pass(list tables, int *at, int *cl, double *wt) except -1:
    """One pass over the calls of the pick tables ``tables`` that have a
    weight (a callee, and its cumulative weight less the one before): with
    ``cl`` NULL each is counted at ``at[callee + 1]``, else its caller and
    weight go to ``cl``/``wt`` at ``at[callee]``, which moves on.  How many."""
    cdef Py_ssize_t f, i, n = 0
    cdef int g
    cdef double prev, c, w
    for f in range(len(tables)):
        e = tables[f]
        if e is None:
            continue
        callees, cum = (<tuple> e)[0], (<tuple> e)[1]
        prev = 0.0
        for i in range(len(callees)):
            c = cum[i]
            w = c - prev
            prev = c
            g = callees[i]
            if g >= 0 and w > 0:
                if cl == NULL:
                    at[g + 1] += 1
                else:
                    cl[at[g]] = <int> f
                    wt[at[g]] = w
                    at[g] += 1
                n += 1
    return n


def caller_arrays(list tables):
    """``call_sites.CallerTable``'s arrays for the pick tables ``tables``
    (start, caller, weight): each callee's callers with the weight of the
    call in the caller's table (its cumulative weight less the one before),
    callers in table order; two passes over the tables (counted, then
    placed), no edge list (test_call_sites.py holds it to the tables turned
    round as a dict)."""
    cdef int nf = len(tables), f
    start = array("i", bytes(4 * (nf + 1)))
    cdef int *st = (<carray.array> start).data.as_ints
    cdef Py_ssize_t n = _callers_pass(tables, st, NULL, NULL)
    for f in range(nf):
        st[f + 1] += st[f]
    caller = array("i", bytes(4 * n))
    weight = array("d", bytes(8 * n))
    cdef int *place = <int *> malloc((nf + 1) * sizeof(int))
    if place == NULL:
        raise MemoryError()
    try:
        memcpy(place, st, (nf + 1) * sizeof(int))
        _callers_pass(tables, place, (<carray.array> caller).data.as_ints,
                      (<carray.array> weight).data.as_doubles)
    finally:
        free(place)
    return start, caller, weight
