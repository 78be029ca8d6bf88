"""The events the machine makes up at rates of their own (sim/rated_events.py)."""

from __future__ import annotations

import random

from fakefs import sim
from fakefs.kernel.trace.trace_output import TraceFormatter
from fakefs.sim.clock import ManualClock
from fakefs.sim.rated_events import RATED, make_fields, rate


def test_each_rated_event_is_the_kernel_s_and_its_fields_fill_its_format():
    k = sim.boot(seed=4, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    act, rng = k.trace_activity, random.Random(1)
    act.tasks = k.workload.tasks()
    by_key = {(ev.system, ev.name): ev for ev in k.tracing.events}
    for key, (per_s, _make) in RATED.items():
        ev = by_key[key]                             # (the kernel has the event)
        assert rate(ev) == per_s > 0
        task, stack = act.curr[1], k.workload.event_stack(rng, 1, ev.kind)
        args = make_fields(ev, rng, 1, task, stack, act)
        assert len(args) == len(ev.desc.fields if ev.desc is not None else ev.fields), key
        assert ev.text(args, TraceFormatter(k.tracing.global_trace)).startswith(ev.name + ": ")


def test_an_event_of_the_kernel_s_code_paths_has_no_rate():
    k = sim.boot(seed=4, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    by_key = {(ev.system, ev.name): ev for ev in k.tracing.events}
    for key in (("irq", "irq_handler_entry"), ("sched", "sched_process_fork"),
                ("raw_syscalls", "sys_enter")):
        assert rate(by_key[key]) == 0
