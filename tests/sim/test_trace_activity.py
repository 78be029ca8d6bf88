"""What the machine's activity reaches: whether anything sees it at all."""

import os

from kfiles import wr

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.sim.rated_events import rate
from fakefs.kernel.trace.trace_hits import machine_seen_by_tracing


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


def _function_trace(cmdline, settings, one_by_one, monkeypatch):
    from kfiles import rd
    from fakefs.sim import trace_activity
    if one_by_one:
        def each(self, trs, wl, rng, cpu, times, probe_trs, graph=(), lo=0, hi=None):
            for ts in times[lo:hi]:
                self._function_call(trs, wl, rng, cpu, ts, probe_trs)
        monkeypatch.setattr(trace_activity.TraceActivity, "_function_calls", each)
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), cmdline=cmdline, host_kallsyms=False)
    for path, value in settings:
        wr(k, path, value)
    for _ in range(8):
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
    out = (rd(k, "trace"), rd(k, "per_cpu/cpu1/stats"), rd(k, "saved_cmdlines"),
           rd(k, "stack_map_stat") if k.tracing.global_trace.stackmap is not None else "",
           rd(k, "stack_map") if k.tracing.global_trace.stackmap is not None else "")
    monkeypatch.undo()
    return out


def test_function_calls_in_bulk_are_the_calls_one_by_one(monkeypatch):
    """A run of plain function calls is written in one go: the same trace,
    counters, saved comms and stackmap (its counts too) as one _function_call() each (also
    with a full buffer, events between the calls, another trace clock,
    stacks through the stackmap or in full, and without overwrite)."""
    for cmdline, settings in (
            ("fakefs.fn_rate=300000", [("buffer_size_kb", "64"), ("current_tracer", "function")]),
            ("fakefs.fn_rate=20000", [("current_tracer", "function"), ("events/sched/enable", "1"),
                                      ("trace_clock", "global")]),
            ("fakefs.fn_rate=50000", [("buffer_size_kb", "128"), ("current_tracer", "function"),
                                      ("options/stacktrace", "1"), ("options/stackmap", "1")]),
            # a stackmap that fills: the drops the compiled path counts without asking
            ("fakefs.fn_rate=50000 ftrace_stackmap.bits=10",
             [("buffer_size_kb", "128"), ("current_tracer", "function"),
              ("options/stacktrace", "1"), ("options/stackmap", "1")]),
            ("fakefs.fn_rate=20000", [("buffer_size_kb", "128"), ("current_tracer", "function"),
                                      ("options/func_stack_trace", "1"), ("options/overwrite", "0")]),
            ("fakefs.fn_rate=20000", [("buffer_size_kb", "128"), ("current_tracer", "function"),
                                      ("options/func_stack_trace", "1")])):
        bulk = _function_trace(cmdline, settings, False, monkeypatch)
        each = _function_trace(cmdline, settings, True, monkeypatch)
        assert bulk[0].count("\n") > 1000
        assert bulk == each


def test_function_calls_in_bulk_across_restarts_of_the_walks_frames(monkeypatch):
    """The bulk path's fields, kept in each frame, and the context flags,
    cached per stack, hold the stacks of the walk's current generation only
    (a restart of the frames drops them, not kept alive by the cache), and
    the trace is still the calls one by one."""
    from fakefs.sim import workload
    from fakefs.sim import trace_call_writes
    settings = [("buffer_size_kb", "64"), ("current_tracer", "function")]
    monkeypatch.setattr(workload, "FRAME_CAP", 300)
    bulk = _function_trace("fakefs.fn_rate=100000", settings, False, monkeypatch)
    monkeypatch.setattr(workload, "FRAME_CAP", 300)
    each = _function_trace("fakefs.fn_rate=100000", settings, True, monkeypatch)
    assert bulk == each

    monkeypatch.setattr(workload, "FRAME_CAP", 300)
    # (the tuples' path keeps the fields in the frame; the raw writer
    # reads the frame's own fields)
    monkeypatch.setattr(trace_call_writes, "RAW_WRITES", False)
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), cmdline="fakefs.fn_rate=100000",
                 host_kallsyms=False)
    for path, value in settings:
        wr(k, path, value)
    for _ in range(8):
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
    frames, act = k.workload.frames, k.trace_activity
    assert frames.generation > 3
    met = [c.ts.frame for c in k.workload.walk.cpus if c.ts.frame.call is not None]
    assert met
    for fr in met:
        stack = fr.stack
        assert fr.call == act.context_flags(stack) + (stack[0] - 5, stack[1])
    # (kept frames and their callers survive a restart without being counted)
    assert len(act.stack_context._flags_cache) <= frames.count + 100


def test_the_events_with_rates_follow_every_change_of_the_arrays_sets():
    """``_events_of`` keeps its list until an array's enabled or soft-disabled
    set changes (their versions): each change shows at the next step."""
    k = sim.boot(seed=2, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    ta, tr = k.trace_activity, k.tracing.global_trace
    tps = k.tracepoints
    ev = next(e for e in k.tracing.events if rate(e) and not tps.get(e.tracepoint).driven)
    ev2 = next(e for e in k.tracing.events if not rate(e))
    assert ta._events_of([tr], []) == []
    tr.set_event_enabled(ev, True)
    assert ta._events_of([tr], []) == [ev]
    tr.set_event_enabled(ev2, True)
    tr.set_event_enabled(ev, False)                  # as many enabled as before
    assert ta._events_of([tr], []) == []
    tr.set_event_enabled(ev2, False)
    tr.event_enable_disable(ev, True, True)          # soft mode: soft-disabled
    assert ta._events_of([tr], []) == []
    assert ta._events_of([tr], [tr]) == [ev]         # a probe or trigger may enable it
    tr.event_enable_disable(ev, True, False)         # a plain enable: recorded
    assert ta._events_of([tr], []) == [ev]


def test_only_engaged_instances_are_asked_and_the_answer_is_the_full_walks():
    """machine_seen_by_tracing() and the backlog's gap_threshold() ask the
    top array and ``Tracing.engaged`` only: after every setting of every
    kind, in instances made and removed on the way, the answers are those
    of the walk over every array."""
    import random

    from fakefs.kernel.fs.pseudo import KernelError
    from fakefs.sim.trace_backlog import TRACED_GAP_NS, recording

    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    backlog = k.trace_activity.backlog
    settings = [("events/sched/sched_switch/enable", "1"), ("events/sched/sched_switch/enable", "0"),
                ("events/enable", "1"), ("events/enable", "0"),
                ("options/event-fork", "1"), ("options/event-fork", "0"),
                ("options/function-fork", "1"), ("options/function-fork", "0"),
                ("current_tracer", "function"), ("current_tracer", "nop"),
                ("set_ftrace_filter", "schedule:traceoff"), ("set_ftrace_filter", "!schedule:traceoff"),
                ("events/sched/sched_wakeup/trigger", "traceoff"),
                ("events/sched/sched_wakeup/trigger", "!traceoff"),
                ("tracing_on", "0"), ("tracing_on", "1")]
    rng = random.Random(7)
    names = []
    for step in range(300):
        r = rng.random()
        if r < 0.1 or not names:
            names.append(f"i{step}")
            k.tracing.instance_mkdir(names[-1])
        elif r < 0.15:
            k.tracing.instance_rmdir(names.pop(rng.randrange(len(names))))
        else:
            path, value = rng.choice(settings)
            where = rng.choice(names + [None])
            full = path if where is None else f"instances/{where}/{path}"
            flags = os.O_WRONLY | (os.O_APPEND if "filter" in path or "trigger" in path
                                   else os.O_TRUNC)
            try:
                wr(k, full, value + "\n", flags)
            except KernelError:
                pass                    # e.g. removing a probe that is not there
        arrays = list(k.tracing.arrays())
        assert machine_seen_by_tracing(k.tracing) is any(tr.sees_machine() for tr in arrays)
        want = TRACED_GAP_NS if any(recording(tr) for tr in arrays) else 1 << 62
        assert backlog.gap_threshold() == want
        assert k.tracing.engaged <= set(arrays)


def test_each_setting_that_sees_the_machine_engages_a_fresh_instance():
    from fakefs.sim.trace_backlog import TRACED_GAP_NS

    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    backlog = k.trace_activity.backlog
    append = os.O_WRONLY | os.O_APPEND
    for n, (path, value, flags, records) in enumerate([
            ("events/sched/sched_switch/enable", "1", os.O_WRONLY | os.O_TRUNC, True),
            ("options/event-fork", "1", os.O_WRONLY | os.O_TRUNC, False),
            ("options/function-fork", "1", os.O_WRONLY | os.O_TRUNC, False),
            ("current_tracer", "function", os.O_WRONLY | os.O_TRUNC, True),
            ("set_ftrace_filter", "schedule:traceoff", append, False),
            # a trigger enables its event in soft mode: it records
            ("events/sched/sched_wakeup/trigger", "traceoff", append, True)]):
        k.tracing.instance_mkdir(f"i{n}")
        assert not machine_seen_by_tracing(k.tracing)
        wr(k, f"instances/i{n}/{path}", value + "\n", flags)
        assert machine_seen_by_tracing(k.tracing), path
        assert (backlog.gap_threshold() == TRACED_GAP_NS) is records, path
        k.tracing.instance_rmdir(f"i{n}")
        assert not machine_seen_by_tracing(k.tracing) and not k.tracing.engaged, path

