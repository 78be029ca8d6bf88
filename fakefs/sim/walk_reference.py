"""The walk's step in plain Python: the specification of the compiled one.

``run(walk, c, rng, ...)`` is ``Walk.run()`` as ``_walk.pyx`` compiles it:
it advances CPU ``c``'s running task to its next traced function call,
with the same draws in the same order.  Nothing in the kernel calls it:
tests/sim/test_walk_compiled.py proves the compiled walk takes its
steps, and ``make bench`` times it as the baseline (``use_reference()``,
which also has the paths' walks up and down in plain Python: reach_reference).
"""

from __future__ import annotations

from bisect import bisect_right

import contextlib

from ..kernel.frames import ENTER, RESUME
from ..kernel.walkgraph import F_DISPATCH, F_HALT, F_SWITCH, F_TRACE, REDRAWS, pick
from . import call_sites as call_sites_module, reach as reach_module, reach_reference, walk as walk_module


def run(self, c, rng, until_switch=False, until_halt=False, limit=200_000):
    """Advance ``c`` to its next traced call; return (task, frame)."""
    rnd = rng.random
    ts = c.ts
    fr, ph = ts.frame, ts.phase
    table = ts.table
    flags = self.flags
    again = self.wg.again
    maxd = self.max_depth
    pirq = self.p_irq
    ppre = pirq + self.p_preempt
    irqd = maxd - 8
    frames = self.frames
    irq_table = self.wg.irq_table
    novelty = self.novelty
    remember = not self.aside
    cap = self.frame_cap if self.frame_cap is not None else 1 << 62
    for _ in range(limit):
        if fr is None:
            # in user space: enter the kernel (or take an interrupt)
            if rnd() < pirq * 4:
                fr = frames.irq_child(None, pick(irq_table, rnd))
            else:
                fr = frames.root(pick(ts.roots, rnd), ts.mode)
            ph = ENTER
            if flags[fr.fn] & F_TRACE and not (until_switch or until_halt):
                ts.frame, ts.phase = fr, ENTER
                return ts.task, fr
            continue
        f = fr.fn
        if ph == ENTER:
            fl = flags[f]
            if fl & (F_HALT | F_SWITCH):
                if fl & F_HALT:
                    if until_halt:
                        ts.frame, ts.phase = fr, ENTER
                        return ts.task, fr
                    if fr.irq or fr.depth > irqd:
                        fr, ph = fr.parent, RESUME
                        continue
                    fr = frames.irq_child(fr, pick(irq_table, rnd))
                    if flags[fr.fn] & F_TRACE:
                        ts.frame, ts.phase = fr, ENTER
                        return ts.task, fr
                    continue
                if until_switch:
                    ts.frame, ts.phase = fr, RESUME
                    return ts.task, fr
                if until_halt:
                    ph = RESUME
                    continue
                if self.driven:
                    ph = RESUME
                    continue
                nts = self.switch(c, rng, fr)
                if nts is not ts:
                    ts = nts
                    fr, ph = ts.frame, ts.phase
                    table = ts.table
                    continue
                ph = RESUME
                continue
            e = table[f]
            if e is None or fr.depth >= maxd:
                fr, ph = fr.parent, RESUME
                continue
        else:
            r = rnd()
            if r < ppre and not fr.irq and not flags[f] & F_SWITCH:
                if r < pirq:
                    if fr.depth <= irqd:
                        fr = frames.irq_child(fr, pick(irq_table, rnd))
                        ph = ENTER
                        if flags[fr.fn] & F_TRACE and not (until_switch or until_halt):
                            ts.frame, ts.phase = fr, ENTER
                            return ts.task, fr
                        continue
                elif ts is not c.idle and not (until_switch or until_halt or self.driven):
                    # the task sleeps or its time slice ends
                    ts.frame, ts.phase = fr, ph
                    self.event_switch(c, rng, preempt=r < pirq + 0.6 * self.p_preempt)
                    ts = c.ts
                    fr, ph = ts.frame, ts.phase
                    table = ts.table
                    continue
            e = table[f]
            if e is None or fr.depth >= maxd or rnd() >= again[f]:
                fr = fr.parent
                continue
        # call one of f's callees (one this frame has not called yet only
        # now and then: walkgraph, "a frame repeats what it did")
        callees, cum, total = e
        g = callees[bisect_right(cum, rnd() * total)]
        k = False
        if g >= 0:
            k = fr.kid(g)
            if (not _made(k) and fr.visits and not flags[f] & F_DISPATCH
                    and rnd() * (fr.visits + novelty) >= novelty):
                for _j in range(REDRAWS):
                    g = callees[bisect_right(cum, rnd() * total)]
                    if g < 0:
                        k = False
                        break
                    k = fr.kid(g)
                    if _made(k):
                        break
            if k is None:
                if frames.count > cap and remember:
                    ts.frame, ts.phase = fr, ph
                    self.restart_frames()
                k = frames.child(fr, g)
        if remember:
            fr.visits += 1
            if k is not False:
                k.called = True
        if k is False:              # "_", or not from this mode: return
            fr, ph = fr.parent, RESUME
            continue
        fr = k
        ph = ENTER
        if flags[g] & F_TRACE and not (until_switch or until_halt):
            ts.frame, ts.phase = fr, ENTER
            return ts.task, fr
    ts.frame, ts.phase = fr, ph
    return ts.task, fr



def _made(k):
    """A frame's kid is a call the walk made from it (not one only made
    elsewhere, nor one it cannot make)."""
    return k is not None and k is not False and k.called


def run_many(self, c, rng, n):
    """``Walk.run_many()``: ``n`` calls of ``run()``, as runs of one task."""
    runs: list = []
    for _ in range(n):
        task, fr = self.run(c, rng)
        if runs and runs[-1][0] is task:
            runs[-1][1].append(fr)
        else:
            runs.append((task, [fr]))
    return runs


@contextlib.contextmanager
def use_reference():
    """Meanwhile every walk steps in plain Python (the kernels booted
    meanwhile too, from their warm-up on)."""
    saved = (walk_module.run, walk_module.run_many, reach_module.climb_up, reach_module.call_down,
             reach_module.path_once, call_sites_module.way_up)
    walk_module.run, walk_module.run_many = run, run_many
    reach_module.climb_up, reach_module.call_down = reach_reference.climb, reach_reference.descend
    reach_module.path_once = reach_module.Reach._path_once
    call_sites_module.way_up = reach_reference.way_up
    try:
        yield
    finally:
        (walk_module.run, walk_module.run_many, reach_module.climb_up,
         reach_module.call_down, reach_module.path_once, call_sites_module.way_up) = saved
