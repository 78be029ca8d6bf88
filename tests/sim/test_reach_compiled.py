"""The compiled reach tables (``fakefs/sim/_reach.pyx``) are the plain
Python computation's (reach_reference.py), to the bit, for every profile
and every kind of target: event sites, and sets of functions."""

from __future__ import annotations

import random
import zlib

import pytest
from workload_helpers import boot

from fakefs.sim._reach import compute
from fakefs.sim._walk import Graph
from fakefs.sim.reach_reference import compute as reference
from fakefs.kernel.walkgraph import table_items


@pytest.fixture(scope="module")
def k():
    return boot(seed=2, nr_cpus=2)


class Called(random.Random):
    """A generator the compiled code calls (not drawn from in C)."""

    def random(self):
        return super().random()


def _kinds(w):
    rng = random.Random(5)
    ids = range(len(w.wg.names))
    sets = [frozenset(rng.sample(ids, n)) for n in (1, 3, 40, 400)]
    return sorted(w.wg.events) + sets


def test_the_tables_are_the_references(k):
    w = k.workload
    reach = w.reach
    seen = 0
    for profile, table in sorted(w.wg.tables.items()):
        for kind in _kinds(w):
            got = reach._compute(table, kind)
            want = reference(reach, table, kind)
            alone = compute(table, reach._targets_of(kind), Graph(w.wg))   # (its table made anew)
            assert [bytes(a) for a in alone[1]] == [bytes(a) for a in
                                                    (got[1].start, got[1].callees, got[1].cum,
                                                     got[1].far, got[1].prem)]
            assert alone[0] == got[0] and alone[2] == got[2]
            assert got[0] == want[0], (profile, kind)                  # dist
            for name in ("start", "callees", "cum", "far", "prem"):
                assert getattr(got[1], name) == getattr(want[1], name), (profile, kind, name)
            assert got[2] == want[2], (profile, kind)                  # P
            seen += sum(1 for p in want[2] if 0 < p < 1)
    assert seen > 1000          # chances strictly between 0 and 1: the arithmetic was compared


def _random_frame(frames, roots, ids, pick, lo, hi):
    """A frame down a random way from a root of ``roots``: between ``lo``
    and ``hi`` calls drawn from ``ids``, fewer where one cannot be made."""
    fr = frames.root(pick.choice([g for g, _ in roots] or [0]), 0)
    for _ in range(pick.randrange(lo, hi)):
        kid = frames.child(fr, pick.choice(ids))
        if kid is False:
            break
        fr = kid
    return fr


def test_the_way_down_is_the_references(k):
    """``_reach.descend`` and ``reach_reference.descend`` from the same
    frames with generators in the same state: the same frame reached (or
    None), the same draws taken, for every profile, event kind and sets of
    functions, from roots, frames deep down (near the depth limit) and
    interrupts; with a generator drawn from in C and one called."""
    from fakefs.sim._reach import descend as compiled
    from fakefs.sim.reach_reference import descend as reference

    w = k.workload
    reach, frames = w.reach, w.frames
    pick = random.Random(8)
    ids = range(len(w.wg.names))
    reached = deep = 0
    for profile in sorted(w.wg.tables):
        for kind in _kinds(w):
            dist, rtab, roots, irqs = reach.tables(profile, kind)
            targets = reach._targets_of(kind)
            starts = [frames.root(g, 0) for g, _ in roots[:6]]
            starts += [frames.irq_child(None, g) for g, _ in irqs[:3]]
            # (a random way down, then from deep in it)
            starts += [_random_frame(frames, roots, ids, pick, 5, reach.max_depth)
                       for _ in range(6)]
            for i, start in enumerate(starts):
                seed = zlib.crc32(repr((profile, str(kind), i)).encode())
                for cls in (random.Random, Called):
                    a, b = cls(seed), cls(seed)
                    got = compiled(frames, start, targets, rtab, dist, a.random, reach.max_depth)
                    want = reference(frames, start, targets, rtab, dist, b.random, reach.max_depth)
                    assert got is want, (profile, kind, i)
                    assert a.random() == b.random()
                reached += got is not None
                deep += start.depth > reach.max_depth - 12
    assert reached > 500 and deep > 20


def test_the_way_up_is_the_references(k):
    """``_reach.climb`` and ``reach_reference.climb`` from the same frames
    with generators in the same state: the same frame stopped at and found,
    the same draws taken (a caller found, a looping frame, past the
    outermost)."""
    from fakefs.sim._reach import climb as compiled
    from fakefs.sim.reach_reference import climb as reference
    w = k.workload
    reach, frames, flags = w.reach, w.frames, w.wg.flags
    pick = random.Random(9)
    ids = range(len(w.wg.names))
    outcomes = set()
    for profile in sorted(w.wg.tables):
        for kind in _kinds(w):
            dist, rtab, roots, _irqs = reach.tables(profile, kind)
            targets = reach._targets_of(kind)
            for i in range(8):
                fr = _random_frame(frames, roots, ids, pick, 1, reach.max_depth)
                a, b = random.Random(i), random.Random(i)
                got = compiled(fr, rtab, targets, dist, flags, reach.max_depth, a.random)
                want = reference(fr, rtab, targets, dist, flags, reach.max_depth, b.random)
                assert got[0] is want[0] and got[1] is want[1], (profile, kind, i)
                assert a.random() == b.random()
                outcomes.add("found" if got[1] is not None else "top" if got[0] is None else "loop")
    assert outcomes == {"found", "top", "loop"}


def test_a_call_sites_way_up_is_the_references(k):
    """``_reach.way_up`` and ``reach_reference.way_up`` (``CallSites._way_up``'s
    climbs up the callers to an entry) from the same function with
    generators in the same state: the same chain (or None), the same
    draws taken, the same callers kept; for every profile and the common
    table, a task's entries and the interrupts', task only or not, with a
    generator drawn from in C and one called."""
    from fakefs.sim._reach import way_up as compiled
    from fakefs.sim.reach_reference import way_up as reference
    from fakefs.sim.call_sites import TRIES

    w = k.workload
    cs, wg = w.call_sites, w.wg
    pick = random.Random(10)
    outcomes = {"found": 0, "none": 0, "long": 0}
    for profile in [None] + sorted(wg.tables):
        tables = wg.base_table if profile is None else wg.tables[profile]
        rev = {}
        for caller, table in enumerate(tables):
            for callee, wt in zip(*table_items(table)):
                if callee >= 0 and wt > 0:
                    rev.setdefault(callee, []).append((caller, wt))
        root_table = wg.profiles[profile]["root_table"] if profile else wg.profiles["shell"]["root_table"]
        for roots in (root_table, wg.irq_table):
            for task_only in (False, True):
                key, reach = cs._reach_of(profile, roots, task_only)
                fids = pick.sample(sorted(reach), min(12, len(reach)))
                mine, theirs = {}, {}
                # (with one entry of them, some climbs find no way: the strict last try too)
                one = frozenset(sorted(key[1])[:1])
                for i, (fid, entries) in enumerate((f, e) for f in fids for e in (key[1], one)):
                    for cls in (random.Random, Called):
                        a, b = cls(i), cls(i)
                        got = compiled(mine, key, rev, reach, entries, fid, wg.max_depth, TRIES,
                                       a.random)
                        want = reference(theirs, key, rev, reach, entries, fid, wg.max_depth, TRIES,
                                         b.random)
                        assert got == want, (profile, task_only, fid)
                        assert a.random() == b.random()
                    outcomes["found" if got else "none"] += 1
                    outcomes["long"] += bool(got) and len(got) > 4
                assert mine == theirs
    assert all(n > 5 for n in outcomes.values()), outcomes


def test_a_path_is_the_references(k):
    """``_reach.path_once`` and ``Reach._path_once`` (a path's one try: up
    the running task's frames, afresh from its entries or by an
    interrupt, then down) from the same task state with generators in the
    same state: the same frame reached (or None), the same draws taken,
    the same task state and turn left; for a task of each profile and the
    idle task (back to its halt), every event kind and sets of functions,
    from frames deep down, in an interrupt and in user mode, with
    ``irq`` and ``task_only``; with a generator drawn from in C and one
    called."""
    from fakefs.sim._reach import path_once as compiled

    w = k.workload
    reach, frames = w.reach, w.frames
    reference = type(reach)._path_once
    pick = random.Random(12)
    ids = range(len(w.wg.names))
    irq_entries = table_items(w.wg.irq_table)[0]
    c = w.walk.cpus[0]
    was = c.ts, c.halt
    by_profile = {}
    for ts in w.walk.states.values():
        by_profile.setdefault(ts.profile, ts)
    states = [by_profile[p] for p in sorted(by_profile)] + [c.idle]
    outcomes = {"found": 0, "none": 0, "irq": 0, "halt": 0}
    try:
        for i, ts in enumerate(states):
            roots = [(g, 1.0) for g in w.wg.profiles[ts.profile]["root_table"][0]]
            halt = frames.root(roots[0][0], ts.mode) if ts is c.idle else None
            for kind in _kinds(w):
                targets = reach._targets_of(kind)
                for j in range(4):
                    fr = _random_frame(frames, roots, ids, pick, 1, reach.max_depth)
                    if j == 1:                     # in an interrupt
                        fr = frames.irq_child(fr, pick.choice(irq_entries)) or fr
                    elif j == 2:                   # in user mode
                        fr = None
                    irq, task_only = j == 3 and i % 2 == 0, j == 3 and i % 2 == 1
                    seed = zlib.crc32(repr((i, str(kind), j)).encode())
                    for cls in (random.Random, Called):
                        got = []
                        for way in (compiled, reference):
                            c.ts, c.halt = ts, halt
                            ts.frame, ts.phase = fr, 1
                            reach.turn = reach.turn_entered = None
                            g = cls(seed)
                            n = way(reach, c, g, kind, targets, irq, task_only)
                            got.append((n, ts.frame, ts.phase, reach.turn, reach.turn_entered,
                                        g.random()))
                        assert got[0] == got[1] and got[0][0] is got[1][0], (i, kind, j)
                    n = got[0][0]
                    outcomes["none" if n is None else "irq" if n.irq else "found"] += 1
                    outcomes["halt"] += ts is c.idle and got[0][1] is halt
    finally:
        c.ts, c.halt = was
    assert min(outcomes.values()) > 5, outcomes
