"""The compiled walk (``fakefs/sim/_walk.pyx``) takes exactly the steps
of the plain-Python one (walk_reference.py): the same frames from the same
draws, whether it runs alone, for events, or under a machine with
everything traced."""

from __future__ import annotations

import contextlib
import random

import pytest
from workload_helpers import boot

from fakefs import sim
from fakefs.sim.files import read_file, write_file
from fakefs.sim.clock import ManualClock
from fakefs.sim.walk_reference import use_reference

T = "sys/kernel/tracing/"


def _steps(k, seed: int, n: int):
    """What ``n`` mixed uses of the walk give: samples, runs of calls and
    event stacks, the CPUs in turn, as (pid, stack) pairs."""
    w = k.workload
    rng = random.Random(seed)
    out = []
    for i in range(n):
        cpu = i % k.nr_cpus
        kind = i % 5
        if kind == 0:
            task, stack = w.sample(rng, cpu)
            out.append((task.pid, stack))
        elif kind == 1:
            for task, frs in w.sample_runs(rng, cpu, 7):
                out.extend((task.pid, fr.stack) for fr in frs)
        elif kind == 2:
            task, stack = w.stacks_for_event(rng, cpu, "sched_switch")
            out.append((task.pid, stack))
        elif kind == 3:
            task, stack = w.stacks_for_event(rng, cpu, "kmem_cache_alloc")
            out.append((task.pid, stack))
        else:
            got = w.calls_to(rng, cpu, w.call_ids([k.kallsyms.addr_of("ktime_get")]))
            out.append(got and (got[0].pid, got[1], got[2]))
    return out


@pytest.mark.parametrize("seed,nr_cpus", [(1, 2), (7, 4)])
def test_the_walk_takes_the_reference_steps(seed, nr_cpus):
    with use_reference():
        a = _steps(boot(seed=seed, nr_cpus=nr_cpus), seed, 4000)
    b = _steps(boot(seed=seed, nr_cpus=nr_cpus), seed, 4000)
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert x == y, "step %d differs" % i
    assert len({x[1] for x in a if x is not None}) > 500   # not a few paths over again


def test_a_traced_machine_writes_the_same_trace():
    """Function tracer, every event, stacks and the stackmap, under the
    machine: the same bytes in ``trace`` with either walk."""
    out = []
    for reference in (True, False):
        with use_reference() if reference else contextlib.nullcontext():
            k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
            for path, value in (("current_tracer", "function"), ("events/enable", "1"),
                                ("options/stacktrace", "1"), ("options/stackmap", "1")):
                write_file(k, T + path, value.encode())
            k.clock.advance(30_000_000)
            k.timekeeper.run_until_now()
            out.append(read_file(k, T + "trace", 1 << 24))
    assert out[0].count(b"\n") > 1000
    assert out[0] == out[1]
