"""Frames: stacks as the walk sees them, one object per path."""

from __future__ import annotations

import collections
import gc
import random

import pytest
from workload_helpers import boot, graph_edges, run

from fakefs import sim
from fakefs.sim import workload
from fakefs.sim.files import write_file
from fakefs.sim.clock import ManualClock
from fakefs.kernel.walkgraph import F_ENTRY, F_TRACE, FENTRY_IP, FENTRY_RET


@pytest.fixture(scope="module")
def k():
    return boot(nr_cpus=4)


def test_depth_and_resolution(k):
    w, ks = k.workload, k.kallsyms
    edges = graph_edges(w)
    ids = w.wg.ids
    depths = collections.Counter()
    for task, stack in run(w, 6000, seed=2):
        assert isinstance(stack, tuple)
        depths[len(stack)] += 1
        assert 2 <= len(stack) <= 30
        names = []
        for ip in stack:
            hit = ks.lookup(ip)
            assert hit is not None, hex(ip)
            name, off, size, _ = hit
            assert 0 < off < size
            names.append(name)
        # stack[0] is the traced function, just after its __fentry__ call
        f0 = ids[names[0]]
        assert w.wg.flags[f0] & F_TRACE, names[0]
        assert stack[0] == w.wg.addr[f0] + FENTRY_RET
        assert w.function_ip(stack) == w.wg.addr[f0] + FENTRY_IP
        # each frame called the one above it (or was interrupted there)
        for callee, caller in zip(names, names[1:]):
            pair = (ids[caller], ids[callee])
            assert pair in edges or w.wg.flags[ids[callee]] & F_ENTRY, (caller, callee)
    within = sum(n for d, n in depths.items() if 10 <= d <= 30)
    assert within >= 0.75 * sum(depths.values())


def test_identical_paths_are_one_frame(k):
    """A path is one frame (whose stack is made anew when asked for: equal,
    never the same tuple); no two frames have equal stacks."""
    w = k.workload
    rng = random.Random(4)
    first = {}
    for i in range(5000):
        _, fr = w.walk.run(w.walk.cpus[i % 4], rng)
        assert first.setdefault(fr.stack, fr) is fr
        assert fr.stack == fr.stack and fr.stack is not fr.stack
    assert len(first) > 300


def test_a_stack_made_when_asked_is_the_callers_with_the_return_address(k):
    """A frame's stack is made lazily from its entry and the return address
    into its caller: it is the caller's stack with the function's entry
    above the return address, however deep the caller's was made first,
    the frame's fields alone say what the function tracer records."""
    frames = k.workload.walk.frames
    seen = 0
    for _, stack in run(k.workload, 3000, seed=6):
        seen += 1
    todo = [*frames._roots.values()]
    checked = 0
    while todo and checked < 5000:
        fr = todo.pop()
        kids = [kd for kd in fr.kids.values() if kd]
        todo.extend(kids)
        for kd in kids:
            # kids asked first, their parent after: both orders build the same
            st = kd.stack
            assert st[0] == kd.entry and st[1] == kd.site
            assert st[2:] == fr.stack[1:]
            # (one int object an address: what keeps stacks keeps no copies)
            assert all(a is b for a, b in zip(st[2:], fr.stack[1:]))
            assert len(st) == kd.depth == fr.depth + 1
            checked += 1
    assert checked > 500 and seen


def test_restart_forgets_the_paths_but_not_where_tasks_are():
    k = boot(seed=2, nr_cpus=2)
    w = k.workload
    before = {s for _, s in run(w, 3000, ncpu=2)}
    assert w.frames.count > 100
    where = [(ts, ts.frame) for ts in w.walk.states.values()]
    kept = [fr for fr in w.walk.kept_frames() if fr is not None]
    w.frames.restart(w.walk.kept_frames())
    assert w.frames.count == 0
    assert all(fr.kids == {} for fr in kept)
    assert all(ts.frame is fr for ts, fr in where)
    after = [s for _, s in run(w, 3000, seed=2, ncpu=2)]
    assert all(k.kallsyms.lookup(ip) for s in after for ip in s)
    assert len(before & set(after)) > 20          # the same paths give the same stacks


def test_a_busy_kernel_makes_no_reference_cycles(monkeypatch):
    """The daemon freezes what requests leave out of the cycle collector's
    sight (fuse/heap.py): the model must free everything by reference
    counts.  A frame and its caller refer to each other, so ``restart()``
    breaks the old tree apart; the reach tables' recursive helper lets go of
    itself.  Everything on, frames restarted every 2000."""
    monkeypatch.setattr(workload, "FRAME_CAP", 2000)
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    t = "sys/kernel/tracing/"
    for path, value in (("current_tracer", "function"), ("events/enable", "1"),
                        ("options/stacktrace", "1"), ("options/stackmap", "1")):
        write_file(k, t + path, value.encode())
    k.clock.advance(20_000_000)
    k.timekeeper.run_until_now()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gen = k.workload.frames.generation
        for _ in range(10):
            k.clock.advance(20_000_000)
            k.timekeeper.run_until_now()
        gc.collect()
        garbage = collections.Counter(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert k.workload.frames.generation >= gen + 2
    assert not garbage, garbage.most_common(5)


def test_still_open_is_the_calls_below_the_new_one():
    """``still_open()`` climbs by depth once; it answers what a set of
    the caller's ancestors would (random stacks of walked frames)."""
    import random
    from fakefs.kernel.frames import still_open
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    walk = k.workload.walk
    rng = random.Random(1)
    frs = [walk.run(walk.cpus[i % 2], rng)[1] for i in range(3000)]

    def chain(fr):
        out = []
        while fr is not None:
            out.append(fr)
            fr = fr.parent
        return out[::-1]

    def by_set(frames, fr, inside):
        above = set(chain(fr if inside else fr.parent))
        n = len(frames)
        while n and frames[n - 1] not in above:
            n -= 1
        return n

    kept = 0
    for _ in range(2000):
        a, b = rng.choice(frs), rng.choice(frs)
        stack = [f for f in chain(a) if rng.random() < 0.7]
        for inside in (False, True):
            n = still_open(stack, b, inside)
            assert n == by_set(stack, b, inside)
            kept += n > 0
    assert kept > 200


def test_a_frames_kids_are_a_mapping_by_key():
    """A frame keeps its first kid in two fields and the others in a dict
    (``frame_kid``/``frame_put_kid``): what it answers is a dict's."""
    from fakefs.kernel._frames import Frame
    fr = Frame(1, None, 0x1000, 0, False, 0, 0)
    kids = [Frame(g, fr, 0x2000 + g, 0x1005, False, 0, 0) for g in range(4)]
    assert fr.kid(0) is None and fr.kids == {}
    fr.set_kid(3, kids[3])
    fr.set_kid(-1 - 7, False)          # an interrupt entry's key; False: cannot be made
    fr.set_kid(0, kids[0])
    fr.set_kid(3, kids[1])             # replaced, in its place
    want = {3: kids[1], -8: False, 0: kids[0]}
    assert fr.kids == want and list(fr.kids) == [3, -8, 0]
    assert fr.kid(3) is kids[1] and fr.kid(-8) is False and fr.kid(0) is kids[0]
    assert fr.kid(1) is None and fr.kid(-1) is None
    fr.forget_kids()
    assert fr.kids == {} and fr.kid(3) is None
    fr.set_kid(2, kids[2])
    assert fr.kids == {2: kids[2]}
