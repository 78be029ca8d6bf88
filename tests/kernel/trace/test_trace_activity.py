"""What the machine's activity reaches: whether anything sees it at all."""

import os

from kfiles import wr

from fakefs import sim
from fakefs.kernel.time import ManualClock
from fakefs.kernel.trace.trace_activity import machine_seen_by_tracing


def _slow(tracing) -> bool:
    """The rule in the arrays' own terms (sees_machine() inlines it)."""
    return any(tr.follows_machine() or tr.flag("event-fork") or tr.flag("function-fork")
               for tr in tracing.arrays())


def test_machine_seen_follows_every_setting_that_records_or_follows_forks():
    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.tracing.instance_mkdir("a")
    steps = [("instances/a/events/sched/sched_switch/enable", "1", True),
             ("instances/a/events/sched/sched_switch/enable", "0", False),
             ("instances/a/options/event-fork", "1", True),
             ("instances/a/options/event-fork", "0", False),
             ("current_tracer", "function", True),
             ("current_tracer", "nop", False),
             ("set_ftrace_filter", "schedule:traceoff", True),
             ("set_ftrace_filter", "!schedule:traceoff", False),
             ("events/sched/sched_switch/trigger", "traceoff", True),
             ("events/sched/sched_switch/trigger", "!traceoff", False),
             ("options/function-fork", "1", True),
             ("options/function-fork", "0", False)]
    assert not machine_seen_by_tracing(k.tracing)
    for path, value, want in steps:
        flags = os.O_WRONLY | (os.O_APPEND if "filter" in path else os.O_TRUNC)
        wr(k, path, value + "\n", flags)
        assert machine_seen_by_tracing(k.tracing) is want is _slow(k.tracing), path
