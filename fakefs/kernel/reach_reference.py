"""The reach tables' computation in plain Python: the specification of the
compiled ``_reach.compute`` (tests/kernel/test_reach_compiled.py holds them
equal, to the bit).  ``compute(reach, table, kind)`` is ``Reach._compute()``;
nothing in the kernel calls it.
"""

from __future__ import annotations

import sys
from array import array

from .reach import ReachTable, _hit
from .walkgraph import F_SWITCH


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
    rtab = ReachTable(nf)
    prem = [0.0] * nf
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
            rtab.total[f] = acc
            rtab.far[f] = max(dist[g] for g, _ in edges)
            a = again[f]
            h = H[f] if f not in targets else acc / total
            prem[f] = _hit(h, a) if a >= 1.0 else (
                1.0 - (1.0 - a) / (1.0 - a * (1.0 - h)))
        rtab.close(f)
    # compact (a table per profile and kind is kept): machine numbers,
    # not lists of objects; a chance never computed (cut off) is 0
    return (array("b", dist), rtab, array("d", prem),
            array("d", [p or 0.0 for p in P]))
