"""The context a stack or a frame implies (trace_context.py)."""

from __future__ import annotations

import collections

from kfiles import wr

from fakefs import sim
from fakefs.sim.clock import ManualClock


def test_the_frames_context_is_their_stacks():
    """What a call at a frame records, from the frame's own fields (its
    context, made with it from its caller's: Frame.ctx; its entry and the
    return address into its caller), is what its whole stack implies
    (context_flags, function_ip, the caller's return address), for every
    frame a traced machine made: interrupts on tasks, on idle, softirqs on
    irq exit."""
    k = sim.boot(seed=4, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    for path, value in (("current_tracer", "function"), ("events/enable", "1")):
        wr(k, path, value)
    k.clock.advance(100_000_000)       # (a halted CPU makes no frames)
    k.timekeeper.run_until_now()
    frames, act = k.workload.frames, k.trace_activity
    todo = [*frames._roots.values(), *frames._user_irq.values()]
    seen = collections.Counter()
    while todo:
        fr = todo.pop()
        todo.extend(kid for kid in fr.kids.values() if kid)
        fields = act.call_fields(fr)
        assert fields[:2] == act.context_flags(fr.stack), [hex(ip) for ip in fr.stack]
        assert fields[2:] == (k.workload.function_ip(fr.stack),
                              fr.stack[1] if len(fr.stack) > 1 else 0)
        seen[fields[:2]] += 1
    assert len(seen) >= 4 and sum(seen.values()) > 5000, seen
