"""Where the walk can get to: the way down to chosen functions.

``Reach.tables(profile, kind)`` tells how a task of ``profile`` gets to the
functions of a *kind*: the functions where a tracepoint fires (an event
kind of ``WalkGraph.events``) or a frozenset of function ids
(``Workload.calls_to()``).  Per function: the fewest calls to one
(``dist``), its callees weighted by their chance of getting there
(``rtab``, which also holds the chance it still gets there after its
current call returns: ``prem``), and the entry points (roots, interrupts) weighted by that
chance on entry (``P``, not kept).

``path()`` samples the walk conditioned on getting to one: the running
task of a CPU returns from its calls until one of its callers goes on to a
target, or enters the kernel afresh, or an interrupt gets there
(``irq_path()`` for interrupts only); then ``descend()`` calls down to it.
The frames are ``Frames``'; the CPU and task states are the walk's.
"""

from __future__ import annotations

from array import array

from ..kernel.frames import ENTER, interrupted
from ..kernel.walkgraph import F_SWITCH, table_items
from ._reach import compute
from ._walk import Graph
# a path's walks up and down, and a path (walk_reference.use_reference
# swaps them: ``path_once`` for ``Reach._path_once``, its specification)
from ._reach import climb as climb_up, descend as call_down, path_once

TARGET_SETS_KEPT = 20      # target sets (frozensets of ids) whose tables are cached


class Reach:
    """The reach tables of the resolved graph ``wg``, and paths down them."""

    def __init__(self, wg, frames, p_event_irq):
        self.wg = wg
        self.frames = frames
        self.flags = wg.flags
        self.max_depth = wg.max_depth
        self.p_event_irq = p_event_irq      # path(): chance an interrupt gets there instead
        self.cgraph = Graph(wg)             # the graph's arrays in C (the walk's too)
        self._reach_cache: dict = {}
        self._target_sets: list = []        # frozenset kinds in _reach_cache
        # where the last path called down from: a frame the task was in
        # (not entered again), or a new one (a root, an interrupt: entered)
        self.turn = None
        self.turn_entered = False

    def path(self, c, rng, kind, targets, irq=False, task_only=False):
        """A frame of one of ``targets`` (the sites of ``kind``) that the
        running task of CPU ``c`` (or an interrupt, first when ``irq``; never
        when ``task_only``) gets to next, or None.  Moves nothing but an
        idle task back to its halt."""
        for _ in range(4):
            n = path_once(self, c, rng, kind, targets, irq, task_only)
            if n is not None:
                return n
            irq = False
        # still nothing: the nearest caller that can get there, if any
        ts = c.ts
        dist, rtab, root_opts, _ = self.tables(ts.profile, kind)
        n = interrupted(ts.frame) if task_only else ts.frame
        while n is not None:
            if n.fn not in targets and rtab.has(n.fn):
                got = self._descend_from(n, False, targets, rtab, dist, rng.random)
                if got is not None:
                    return got
            n = n.parent
        if ts.user:
            for g, _ in root_opts:
                got = self._descend_from(self.frames.root(g, ts.mode), True, targets, rtab,
                                         dist, rng.random)
                if got is not None:
                    return got
        return None

    def _path_once(self, c, rng, kind, targets, irq=False, task_only=False):
        """A frame of one of ``targets`` the running task gets to next
        (compiled: ``_reach.path_once``, which this is the specification of).

        Sampled from the walk conditioned on reaching a target: the task
        returns from its calls until one of its callers goes on to reach
        one (with the probability it does), then calls down to it choosing
        each callee by weight times its chance of getting there."""
        rnd = rng.random
        ts = c.ts
        flags = self.flags
        idle = ts is c.idle
        if idle and c.halt is not None and (ts.frame is None or flags[ts.frame.fn] & F_SWITCH):
            ts.frame, ts.phase = c.halt, ENTER      # back to waiting
        reach = self.tables(ts.profile, kind)
        dist, rtab, root_opts, irq_opts = reach
        maxd = self.max_depth
        fr = interrupted(ts.frame) if task_only else ts.frame
        n = fr
        cand = None
        fresh = False
        if not irq:
            n, cand = climb_up(fr, rtab, targets, dist, flags, maxd, rnd)
            fresh = n is None and ts.user
        # where an interrupt would arrive
        if cand is not None or irq:
            at = fr
            while at is not None and (at.irq or flags[at.fn] & F_SWITCH):
                at = at.parent
        elif fresh or n is None:
            at = None
        elif idle and c.halt is not None:
            ts.frame, ts.phase = c.halt, ENTER
            at = c.halt
        else:
            at = n
        n = cand
        if n is None or (not task_only and rnd() < self.p_event_irq):
            # enter the kernel afresh, or take an interrupt that gets there
            opts = root_opts if fresh else ()
            iopts = ()
            if not task_only and (at is None or (not at.irq and at.depth + 8 < maxd)):
                depth = at.depth if at is not None else 0
                iopts = [o for o in irq_opts if dist[o[0]] + depth < maxd]
            rtot = sum(o[1] for o in opts)
            itot = sum(o[1] for o in iopts)
            if rtot or n is not None:
                itot *= 0.1
            if rtot + itot > 0:
                x = rnd() * (rtot + itot)
                if x < rtot:
                    n = self.frames.root(_choose(opts, x), ts.mode)
                else:
                    x = (x - rtot) / (itot / sum(o[1] for o in iopts))
                    n = self.frames.irq_child(at, _choose(iopts, x))
        for start in (n, cand) if n is not cand else (n,):
            if start is not None:
                got = self._descend_from(start, start is not cand, targets, rtab, dist, rnd)
                if got is not None:
                    return got
        return None

    def _descend_from(self, n, entered, targets, rtab, dist, rnd):
        self.turn, self.turn_entered = n, entered
        return self.descend(n, targets, rtab, dist, rnd)

    def descend(self, n, targets, rtab, dist, rnd):
        """Call down from ``n`` to one of ``targets`` (None if stuck):
        compiled (``_reach.descend``; reach_reference.descend is its
        specification)."""
        return call_down(self.frames, n, targets, rtab, dist, rnd, self.max_depth)

    def irq_path(self, c, rng, kind, targets):
        """A target reached by an interrupt arriving where the running task
        is (or further out, where there is room for it), or None."""
        rnd = rng.random
        ts = c.ts
        flags = self.flags
        dist, rtab, _, irq_opts = self.tables(ts.profile, kind)
        if not irq_opts:
            return None
        at = ts.frame
        if ts is c.idle and c.halt is not None and (at is None or flags[at.fn] & F_SWITCH):
            at = c.halt
        while at is not None and (at.irq or flags[at.fn] & F_SWITCH):
            at = at.parent
        while True:
            if at is None and not ts.user:
                return None                 # kernel threads are never in user mode
            opts = list(irq_opts)
            while opts:
                tot = sum(w for _, w in opts)
                g = _choose(opts, rnd() * tot)
                got = self._descend_from(self.frames.irq_child(at, g), True, targets, rtab,
                                         dist, rnd)
                if got is not None:
                    return got
                opts = [o for o in opts if o[0] != g]
            if at is None:
                return None
            at = at.parent

    def tables(self, profile, kind):
        """How a task of ``profile`` gets to the sites of ``kind``: per
        function, the fewest calls to one (dist), its callees weighted by
        their chance of getting there and the chance it still gets there
        after its current call returns (rtab), and the entry points (roots,
        interrupts) weighted by their chance (that on entry, P)."""
        key = (profile, kind)
        r = self._reach_cache.get(key)
        if r is None:
            if isinstance(kind, frozenset):
                self._note_target_set(kind)
            dist, rtab, P = self._compute(self.wg.tables[profile], kind)
            targets = self._targets_of(kind)
            maxd = self.max_depth

            def opts(table):
                out = []
                for g, w in zip(*table_items(table)):
                    if g in targets:
                        out.append((g, w))
                    elif rtab.has(g) and dist[g] < maxd and P[g]:
                        out.append((g, w * P[g]))
                return out

            # (P, the chance on entry, weighs the entry points and goes:
            # ~12 KB an entry, and hundreds are kept)
            r = (dist, rtab, opts(self.wg.profiles[profile]["root_table"]),
                 opts(self.wg.irq_table))
            self._reach_cache[key] = r
        return r

    def _note_target_set(self, kind):
        """Keep the reach tables of the last few target sets only."""
        kinds = self._target_sets
        if kind in kinds:
            return
        kinds.append(kind)
        if len(kinds) > TARGET_SETS_KEPT:
            old = kinds.pop(0)
            for key in [k for k in self._reach_cache if k[1] == old]:
                del self._reach_cache[key]

    def _targets_of(self, kind):
        """The function ids a reach ``kind`` leads to: an event kind's sites,
        or the set itself when ``kind`` is a frozenset of ids (calls_to)."""
        return kind if isinstance(kind, frozenset) else self.wg.events[kind]

    def _compute(self, table, kind):
        """The reach tables of pick table list ``table`` for ``kind``:
        (dist, rtab, P).  Compiled (``_reach.compute``); the same
        computation in plain Python is reach_reference.py."""
        dist, rt, P = compute(table, self._targets_of(kind), self.cgraph)
        return dist, ReachTable.of(*rt), P


class ReachTable:
    """``rtab``: per function, its callees that get there, each with its
    cumulative weight, the most calls a callee still needs (``far``) and
    the chance the function still gets there after its current call
    returns (``prem``) — kept in flat arrays (one table per profile and
    kind is cached): the callees of ``f`` are ``callees[start[f]:start[f +
    1]]``; their total weight is the last one's cumulative weight
    (``total(f)``).  ``far`` and ``prem`` run alongside the callees, a
    function's at its first one (``far_of``, ``prem_of``): both are 0 for a
    function with none, ~80 % of them, and arrays by function were ~10 KB
    of a table's ~26."""

    __slots__ = ("start", "callees", "cum", "far", "prem")

    def __init__(self):
        self.start = array("i", [0])
        self.callees = array("i")
        self.cum = array("d")
        self.far = array("b")
        self.prem = array("d")

    def edge(self, g: int, cum: float) -> None:
        """The next callee of the function being filled in."""
        self.callees.append(g)
        self.cum.append(cum)
        self.far.append(0)
        self.prem.append(0.0)

    def facts(self, far: int, prem: float) -> None:
        """The function being filled in (its callees given): ``far``, ``prem``."""
        lo = self.start[-1]
        assert lo < len(self.callees)
        self.far[lo], self.prem[lo] = far, prem

    def close(self, f: int) -> None:
        """Function ``f`` (the next one, in order) is complete."""
        assert len(self.start) == f + 1
        self.start.append(len(self.callees))

    @classmethod
    def of(cls, start, callees, cum, far, prem) -> ReachTable:
        """A table made whole (by ``_reach.compute``)."""
        rt = cls.__new__(cls)
        rt.start, rt.callees, rt.cum, rt.far, rt.prem = start, callees, cum, far, prem
        return rt

    def total(self, f: int) -> float:
        """The callees' total weight (0.0 when none gets there)."""
        hi = self.start[f + 1]
        return self.cum[hi - 1] if hi > self.start[f] else 0.0

    def has(self, f: int) -> bool:
        """Some callee of ``f`` gets there."""
        return self.start[f] != self.start[f + 1]

    def far_of(self, f: int) -> int:
        """The most calls one of ``f``'s callees still needs (0: none gets there)."""
        lo = self.start[f]
        return self.far[lo] if lo != self.start[f + 1] else 0

    def prem_of(self, f: int) -> float:
        """The chance ``f`` still gets there after its current call returns."""
        lo = self.start[f]
        return self.prem[lo] if lo != self.start[f + 1] else 0.0


# ---------------------------------------------------------------- helpers
def _hit(h, a):
    """Chance that a function which makes 1 + Geometric(a) calls, each
    getting somewhere with chance h, gets there."""
    if h <= 0.0:
        return 0.0
    if a >= 1.0:
        return 1.0
    return 1.0 - (1.0 - h) * (1.0 - a) / (1.0 - a * (1.0 - h))


def _choose(opts, x):
    for g, w in opts:
        x -= w
        if x < 0:
            return g
    return opts[-1][0]
