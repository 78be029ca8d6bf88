"""When the CPUs call functions (sim/call_rates.py): while they are
awake, never while halted."""

import bisect
import random

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.sim.call_rates import AwakeTime
from kfiles import wr


class Halts:
    def __init__(self, spans):
        self.spans = spans

    def halted_spans(self, cpu, t0, t1):
        return [(max(a, t0), min(b, t1)) for a, b in self.spans if min(b, t1) > max(a, t0)]


def test_instants_skip_the_halted_spans_as_the_slow_path_does():
    """AwakeTime's draws (over the awake time, moved past the halts in C)
    are the slow path's: each draw placed in the n-th awake
    ns, counting the awake ns one span at a time."""
    spans = [(1_000, 5_000), (5_000, 5_001), (9_000, 20_000), (30_000, 31_000)]
    awake = AwakeTime(Halts(spans), 0, 0, 40_000)
    assert awake.ns == 40_000 - 4_000 - 1 - 11_000 - 1_000
    got = list(awake.draws(random.Random(5), 5000))
    draws = random.Random(5)
    want = []
    for _ in range(5000):
        x = int(draws.random() * awake.ns)
        t = 0
        for a, b in spans:          # the x-th awake ns
            if x < a - t:
                break
            x -= a - t
            t = b
        want.append(t + x)
    assert got == sorted(want)
    assert not [t for t in got for a, b in spans if a <= t < b]
    assert AwakeTime(None, 0, 0, 40_000).ns == 40_000


def test_no_traced_call_while_halted():
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "buffer_size_kb", "8192")
    wr(k, "current_tracer", "function")
    halted = [[], []]                   # each step's halts, as the machine made them
    k.add_timer_hook(lambda t0, t1: [halted[c].extend(k.sched.halted_spans(c, t0, t1))
                                     for c in range(2)])
    for _ in range(5):
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
    for cb in k.tracing.global_trace.buffer.cpus:
        spans = halted[cb.cpu]
        assert sum(b - a for a, b in spans) > 10_000_000      # idle part of the time
        ts = [e[0] for e in cb.iter_events()]
        assert len(ts) > 10_000
        starts = [a for a, _b in spans]
        inside = [t for t in ts if (i := bisect.bisect_right(starts, t) - 1) >= 0 and t < spans[i][1]]
        assert not inside, inside[:5]
