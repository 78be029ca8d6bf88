"""The reach tables' computation and the way down them in plain Python: the
specification of the compiled ``_reach.compute``, ``climb`` and ``descend``
(tests/sim/test_reach_compiled.py holds them equal, to the bit and to
the draw).  ``compute(reach, table, kind)`` is ``Reach._compute()``;
``climb(...)`` and ``descend(...)`` are a path's walks up and down while
``walk_reference.use_reference()`` holds (the bench's baseline); nothing
else in the kernel calls them.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right

from ..kernel.walkgraph import F_LOOP, F_SWITCH
from .reach import ReachTable, _hit


def compute(self, table, kind):
    targets = self._targets_of(kind)
    nf = len(self.wg.names)
    flags = self.flags
    again = self.wg.again
    blocked = [bool(flags[f] & F_SWITCH) and f not in targets for f in range(nf)]
    # probability of reaching a target from each function (cycles cut)
    P = [None] * nf
    H = [0.0] * nf
    busy = [False] * nf

    def prob(f):
        v = P[f]
        if v is not None:
            return v
        if f in targets:
            P[f] = 1.0
            return 1.0
        e = table[f]
        if e is None or blocked[f] or busy[f]:
            return 0.0
        busy[f] = True
        callees, cum, total = e
        h = 0.0
        prev = 0.0
        for g, c in zip(callees, cum):
            pg = prob(g) if g >= 0 else 0.0
            if pg:
                h += (c - prev) * pg
            prev = c
        h /= total
        busy[f] = False
        H[f] = h
        a = again[f]
        P[f] = v = _hit(h, a)
        return v

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    try:
        for f in range(nf):
            prob(f)
    finally:
        sys.setrecursionlimit(old)
    prob = None             # (it referred to itself: a cycle for the collector otherwise)
    # fewest calls to a target, for the depth limit
    callers: dict[int, list[int]] = {}
    for f in range(nf):
        e = table[f]
        if e is None or blocked[f]:
            continue
        for g in e[0]:
            if g >= 0:
                callers.setdefault(g, []).append(f)
    dist = [99] * nf
    for t in targets:
        dist[t] = 0
    frontier = list(targets)
    while frontier:
        nxt = []
        for g in frontier:
            for f in callers.get(g, ()):
                if dist[f] == 99:
                    dist[f] = dist[g] + 1
                    nxt.append(f)
        frontier = nxt
    rtab = ReachTable()
    for f in range(nf):
        e = table[f]
        if e is None or blocked[f]:
            rtab.close(f)
            continue
        callees, cum, total = e
        edges = []
        prev = 0.0
        for g, c in zip(callees, cum):
            w = (c - prev) * (P[g] or 0.0) if g >= 0 else 0.0
            prev = c
            if w > 0 and dist[g] < 99:
                edges.append((g, w))
        if edges:
            acc = 0.0
            for g, w in edges:
                acc += w
                rtab.edge(g, acc)
            a = again[f]
            h = H[f] if f not in targets else acc / total
            rtab.facts(max(dist[g] for g, _ in edges), _hit(h, a) if a >= 1.0 else (
                1.0 - (1.0 - a) / (1.0 - a * (1.0 - h))))
        rtab.close(f)
    # compact (a table per profile and kind is kept): machine numbers,
    # not lists of objects; a chance never computed (cut off) is 0
    return array("b", dist), rtab, array("d", [p or 0.0 for p in P])


def descend(frames, n, targets, rtab, dist, rnd, maxd):
    """Call down from frame ``n`` to one of ``targets`` (None if stuck):
    each callee drawn from ``rtab`` by its weight; near the depth limit
    ``maxd``, or where a drawn callee cannot be called in the frame's mode,
    among the callees with room (``dist``) only."""
    start, callees, cum, far = rtab.start, rtab.callees, rtab.cum, rtab.far
    while n.fn not in targets:
        f = n.fn
        lo, hi = start[f], start[f + 1]
        if lo == hi:
            return None
        room = maxd - n.depth - 1
        if far[lo] <= room:             # (f's far: at its first callee)
            g = callees[bisect_right(cum, rnd() * cum[hi - 1], lo, hi)]
            k = frames.child(n, g)
            if k is not False:
                n = k
                continue
        # near the depth limit, or a callee not allowed in this mode
        opts = [(callees[i], cum[i] - (cum[i - 1] if i > lo else 0.0)) for i in range(lo, hi)
                if dist[callees[i]] <= room]
        while True:
            if not opts:
                return None
            tot = sum(w for _, w in opts)
            x = rnd() * tot
            for i, (g, w) in enumerate(opts):
                x -= w
                if x < 0:
                    break
            k = frames.child(n, g)
            if k is not False:
                break
            del opts[i]
        n = k
    return n


def climb(n, rtab, targets, dist, flags, maxd, rnd):
    """From frame ``n`` up its callers: the first whose chance of going on
    to a target after its current call (``rtab.prem_of``) comes true, with room
    for the calls down; none past a frame that loops.  (the frame it
    stopped at, the one found or None): the first None past the outermost."""
    while n is not None:
        f = n.fn
        pr = rtab.prem_of(f)
        if pr and f not in targets and dist[f] + n.depth <= maxd and rnd() < pr:
            return n, n
        if flags[f] & F_LOOP:
            return n, None
        n = n.parent
    return None, None


def way_up(ups, key, rev, reach, entries, fid, maxd, tries, rnd):
    """``CallSites._way_up()``'s climbs: function ids from one of
    ``entries`` down to ``fid``, each calling the next (``rev``: a
    function's callers with their weights; ``reach``: the fewest calls
    from an entry; ``ups[(key, f)]``: f's callers the entries reach, made
    here the first time), or None after ``tries`` climbs found none."""
    for t in range(tries):
        # any caller the entries reach, with room left to get to one of
        # them; the last try only callers nearer to them (it gets there)
        strict = t == tries - 1
        chain, seen, f = [fid], {fid}, fid
        while f not in entries:
            df = reach[f]
            reached = ups.get((key, f))
            if reached is None:
                reached = ups[(key, f)] = [(g, w, reach[g]) for g, w in rev.get(f, ())
                                           if g in reach]
            ups_f = [(g, w) for g, w, dg in reached if g not in seen
                     and (dg < df if strict else dg + len(chain) < maxd)]
            if not ups_f:
                break
            x = rnd() * sum(w for _, w in ups_f)
            for g, w in ups_f:
                x -= w
                if x < 0:
                    break
            chain.append(g)
            seen.add(g)
            f = g
        if f in entries:
            chain.reverse()
            return chain
    return None
