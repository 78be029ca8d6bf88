"""A tracepoint writes its record when it fires: the machine's trace
activity writes each CPU's calls and events up to a hit, then the hit, as
the machine runs (fakefs/sim/trace_window.py, TraceActivity.begin/_hit)."""

from __future__ import annotations

import re

import pytest

from kfiles import rd, wr

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.timeline import check

MS = 1_000_000


def _kernel(**kw):
    return sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False, **kw)


def _run(k, ms: int, step_ms: int = 20) -> None:
    for _ in range(ms // step_ms):
        k.clock.advance(step_ms * MS)
        k.timekeeper.run_until_now()


def _at_fire(k, name):
    """Per firing of ``name`` (a probe after the trace event code's):
    (cpu, ts, the CPU buffer's newest timestamp and entries written then)."""
    buf = k.tracing.global_trace.buffer
    out = []

    def probe(cpu, ts, pid, flags, pc, args):
        cb = buf.cpus[cpu]
        out.append((cpu, ts, cb.last_ts, cb.written))

    k.tracepoints.get(name).register(probe)
    return out


@pytest.mark.parametrize("event, least", [("sched/sched_switch", 50),
                                          ("kmem/kmem_cache_alloc", 100)])
def test_a_hit_is_in_the_buffer_when_it_fires(event, least):
    """A switch, or an allocation the machine makes: its record is in the
    buffer when the tracepoint fires."""
    k = _kernel()
    wr(k, "events/%s/enable" % event, "1")
    fired = _at_fire(k, event.split("/")[1])
    _run(k, 200)
    assert len(fired) > least
    assert all(last == ts for _cpu, ts, last, _n in fired)
    assert k.trace_activity.window is None          # (the step's end closed it)


def test_the_calls_before_a_hit_are_written_before_it():
    """With the function tracer, the calls of a CPU up to a switch are in
    its buffer when the switch fires, and they go on between switches."""
    k = _kernel()
    wr(k, "current_tracer", "function")
    wr(k, "events/sched/sched_switch/enable", "1")
    fired = _at_fire(k, "sched_switch")
    _run(k, 100)
    by_cpu = {}
    for cpu, ts, last, n in fired:
        assert last == ts
        by_cpu.setdefault(cpu, []).append(n)
    grew = sum(b - a > 1 for ns in by_cpu.values() for a, b in zip(ns, ns[1:]))
    assert grew > len(fired) // 2


def test_hits_of_a_request_wait_for_the_machine_then_come_in_order():
    """A hit fired outside a step (at an instant the machine has not
    reached) waits in ``pending`` and is written in its place."""
    k = _kernel()
    wr(k, "events/sched/sched_switch/enable", "1")
    _run(k, 20)
    hits = k.trace_hits
    t = k.sim_time + 5 * MS
    hits.probe("sched_switch")(0, t, 0, 0, 0, ("x", 0, 120, "R", "y", 0, 120))
    assert hits.pending[0]
    _run(k, 40)
    assert not hits.pending[0]
    lines = [ln for ln in rd(k, "per_cpu/cpu0/trace").splitlines() if "sched_switch" in ln]
    stamps = [float(re.search(r"(\d+\.\d+): ", ln).group(1)) for ln in lines]
    assert stamps == sorted(stamps) and ("%.6f" % (t / 1e9)) in rd(k, "per_cpu/cpu0/trace")


def test_every_event_with_the_function_tracer_keeps_one_timeline():
    k = _kernel()
    wr(k, "buffer_size_kb", "16384")
    wr(k, "events/enable", "1")
    wr(k, "current_tracer", "function")
    _run(k, 60)
    wr(k, "tracing_on", "0")
    text = rd(k, "trace")
    assert text.count("sched_switch:") > 20 and text.count("kmem_cache_alloc:") > 20
    rep = check(text.splitlines())
    assert rep.lines > 1000 and not rep.violations, rep.examples


def test_probes_acting_on_their_array_write_after_the_step_in_one_order():
    """A trigger that acts on its array (traceoff) keeps the post-step
    path: every CPU's occurrences merged in time order."""
    k = _kernel()
    wr(k, "current_tracer", "function")
    wr(k, "events/sched/sched_switch/trigger", "traceoff:1")
    fired = _at_fire(k, "sched_switch")
    _run(k, 40)
    assert fired and k.tracing.global_trace.buffer.record_off
    assert any(last < ts for _cpu, ts, last, _n in fired)   # (written after the step)
