"""The compiled event stacks (``fakefs/sim/_workload.pyx``) are the
Python ones (``Workload._event_stack``, ``Workload._switch_path_memo``):
from the same task state, memo and generator state, the same stack (and
frames entered), the same draws, the same task state and memo after."""

from __future__ import annotations

import random

from fakefs import sim
from fakefs.sim.clock import ManualClock


class Called(random.Random):
    """A generator the compiled code calls (not drawn from in C)."""

    def random(self):
        return super().random()


def _state(wl, cpu):
    c = wl.walk.cpus[cpu]
    return c.ts, c.ts.frame, c.ts.phase, {k: list(v) for k, v in wl._event_memo.items()}


def _put(wl, cpu, state):
    ts, frame, phase, memo = state
    c = wl.walk.cpus[cpu]
    c.ts, ts.frame, ts.phase = ts, frame, phase
    wl._event_memo = {k: list(v) for k, v in memo.items()}


def _both(wl, cpu, call, seed, cls):
    """(answer, task state after, memo after, next draw) of the compiled
    way and of the specification, from the same state."""
    was = _state(wl, cpu)
    out = []
    for compiled in (True, False):
        _put(wl, cpu, was)
        rng = cls(seed)
        got = call(rng, compiled)
        ts = wl.walk.cpus[cpu].ts
        out.append((got, ts.frame, ts.phase, wl._event_memo, rng.random()))
    return out


def test_event_stacks_are_the_references():
    k = sim.boot(seed=4, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wl = k.workload
    for _ in range(30):                       # the memo fills as the machine runs
        k.clock.advance(10_000_000)
        k.timekeeper.run_until_now()
    kinds = sorted(wl.wg.events) + ["irq_handler_entry", "no_such_kind"]
    pick = random.Random(3)
    hits = misses = switches = switch_misses = 0
    for i in range(3000):
        cpu = i % 2
        kind = pick.choice(kinds)
        task_only = pick.random() < 0.3
        seed = pick.randrange(1 << 30)
        cls = Called if i % 5 == 0 else random.Random
        full = len(wl._event_memo.get((wl.walk.cpus[cpu].ts.frame,
                                       wl.walk.cpus[cpu].ts is wl.walk.cpus[cpu].idle,
                                       kind, task_only), ())) >= 8
        if i % 3 == 0:
            c = wl.walk.cpus[cpu]
            switch_misses += len(wl._event_memo.get((c.ts.frame, c.ts is c.idle, "\0switch"),
                                                    ())) < 8
            a, b = _both(wl, cpu, lambda rng, c: (wl.switch_path if c else wl._switch_path_memo)(rng, cpu),
                         seed, cls)
            switches += 1
        else:
            a, b = _both(wl, cpu, lambda rng, c: (wl.event_stack if c else wl._event_stack)(
                rng, cpu, kind, task_only), seed, cls)
            hits += full
            misses += not full
        assert a == b, (i, kind, task_only)
        if i % 7 == 0:                         # move on: the task somewhere else
            wl.sample(random.Random(i), cpu)
    assert hits > 300 and misses > 300 and switches > 500 and switch_misses > 100, (
        hits, misses, switches, switch_misses)
