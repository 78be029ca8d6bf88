"""How often the simulated CPUs call traced functions.

Every CPU makes ``fn_rate`` traced calls a second while it is awake
(default 500,000, a busy machine's rate; ``fakefs.fn_rate=N`` on the
command line sets another).  A halted CPU (its idle task waiting for an
interrupt: ``Scheduler.halted_spans()``) calls nothing, so an idle CPU's
calls are those of its interrupts and of its idle loop around them.
Calls of the functions a filter or a probe names come at the rate they do
in the unfiltered function tracer: ``fn_rate`` times the share of them the
walk gives those functions (``Workload.call_profile()``, CALL_PROFILE_N
calls per CPU), counting CALL_PRIOR calls for each function there that it
never got to.  ``call_groups()`` makes the streams of such calls the
activity draws (``fakefs.sim.trace_activity``); the function profiler and the stack
tracer count with the same shares.
"""

from __future__ import annotations

from array import array

from ._trace_calls import past_halts

FN_RATE_DEFAULT = 500_000  # traced calls a second per CPU: a busy machine's
CALL_PROFILE_N = 16_000
CALL_PRIOR = 0.5
TARGETED_MAX = 1000        # per CPU: a broad filter costs no more than this
SINGLE_STREAMS = 16        # up to this many functions get a stream each


def fn_rate(kernel) -> int:
    """Traced function calls a second per CPU (``fakefs.fn_rate=``)."""
    return kernel.setup.get("fakefs.fn_rate", FN_RATE_DEFAULT)


class CallGroup:
    """Calls of one of ``ids`` (workload function ids), ``rates[cpu]`` a second."""

    __slots__ = ("ids", "rates")

    def __init__(self, ids, rates):
        self.ids = ids
        self.rates = rates


def call_groups(wl, addrs, rate: int) -> tuple:
    """The streams of calls of the functions at ``addrs``: each function
    gets its own (so a rare one is called at its own rate, not drowned by a
    frequent one), unless there are many: then one stream goes to all of
    them as the walk gets there."""
    ids = wl.call_ids(addrs)
    if not ids:
        return ()
    counts, n = wl.call_profile(CALL_PROFILE_N)

    def rates(group):
        return [rate * (sum(c.get(i, 0) for i in group) + CALL_PRIOR * len(group)) / n
                for c in counts]

    if len(ids) <= SINGLE_STREAMS:
        groups = [CallGroup(frozenset((i,)), None) for i in sorted(ids)]
    else:
        groups = [CallGroup(ids, None)]
    for g in groups:
        g.rates = rates(g.ids)
    for cpu in range(len(counts)):
        total = sum(g.rates[cpu] for g in groups)
        if total > TARGETED_MAX:
            for g in groups:
                g.rates[cpu] *= TARGETED_MAX / total
    return tuple(groups)


class AwakeTime:
    """The time a CPU was awake (not halted) in [t0, t1), where its calls
    fall: ``ns`` of it, the halted spans between (``Scheduler.halted_spans``;
    none without a machine: every CPU is awake)."""

    __slots__ = ("t0", "halts", "ns")

    def __init__(self, sched, cpu: int, t0: int, t1: int):
        self.t0 = t0
        self.halts = sched.halted_spans(cpu, t0, t1) if sched is not None else []
        self.ns = t1 - t0 - sum([end - start for start, end in self.halts])

    def draws(self, rng, n: int):
        """``n`` calls' instants, uniform over the awake time, one
        ``rng.random()`` each (sorted where the CPU halted)."""
        t0, ns = self.t0, self.ns
        made = [t0 + int(rng.random() * ns) for _ in range(n)]
        if not self.halts or not made:
            return made
        times = array("q", sorted(made))
        past_halts(times, t0, self.halts)
        return times


def call_seconds(kernel, since: int, before: list, t: int) -> tuple[list, list[float]]:
    """Per CPU, the seconds of [since, t) in which function calls reached an
    ftrace_ops: the time it was awake (``Scheduler.awake_seconds``; a halted
    CPU calls nothing), in the proportion ``ftrace_enabled`` was 1; and the
    CPUs' times at ``t`` (``before``: theirs at ``since``)."""
    sched = kernel.sched
    now = sched.cpu_times(t)
    secs = sched.awake_seconds(before, now)
    sysctl = kernel.ftrace_sysctl          # ftrace_enabled 0: no calls reach it
    if sysctl is not None:
        on = sysctl.enabled_ns(since, t) / (t - since)
        secs = [s * on for s in secs]
    return now, secs
