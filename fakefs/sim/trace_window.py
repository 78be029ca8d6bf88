"""One window of the machine's trace activity (``TraceActivity``): the
arrays' settings read once for a step of the machine, and where each CPU's
writing has got.

A CPU's window is written in segments: the calls of [``pos``, b) over
the time it was awake then (its ``AwakeCalls``: the halts up to b are
known when the machine is at b, and the calls do not depend on where the
segments end), the events with rates of their own whose
instants (drawn for the whole window when it begins: they do not depend
on what the machine does) fall there, and the hits queued for it, then the
hit at b, if any.  While the machine runs, every hit it fires ends a
segment of its CPU (``TraceActivity._hit``): written when it fires; the
window's end writes what is left up to ``t1``.
"""

from __future__ import annotations

import bisect
from operator import itemgetter

from ._trace_machine_hits import MACHINE
from .call_rates import AwakeTime

_BY_TIME_ID = itemgetter(0, 1)  # occurrences in time order, ties by id
NEVER = 1 << 62


class Window:
    """The settings of the step [t0, t1) and each CPU's place in it."""

    __slots__ = ("t0", "t1", "acting", "live", "trs", "probe_trs", "ev_trs", "calls", "targets",
                 "hp", "hits", "rated", "ri", "next_rated", "pos", "switch", "wl", "sched")

    def __init__(self, t0: int, t1: int, nr_cpus: int):
        self.t0, self.t1 = t0, t1
        self.acting = False         # probes or triggers act on their arrays: all CPUs in order
        self.live = False           # written as the machine runs
        self.trs: list = []         # per CPU: (function arrays, filtered ones, graph ones)
        self.probe_trs: list = []   # arrays with function probes
        self.ev_trs: list = []      # arrays recording events
        self.calls = False          # the function or graph tracer takes the walk's calls
        self.targets: tuple = ()    # streams of calls of filtered or probed functions
        self.hp = None              # CPU hotplug, when a CPU was offline in the window
        self.hits = None            # the compiled replay of the hits (HitWriter), if any
        self.rated: list = [[] for _ in range(nr_cpus)]   # per CPU: sorted (ts, id, event)
        self.ri = [0] * nr_cpus     # per CPU: the next of ``rated`` to write
        self.next_rated = [NEVER] * nr_cpus   # ... and its instant (``LiveSink`` reads it)
        self.pos = [t0] * nr_cpus   # per CPU: written up to here
        self.switch = [None] * nr_cpus   # per CPU: who takes a switch's calls (``_replay``)
        self.wl = None
        self.sched = None

    def nothing_before(self, act, cpu: int, b: int) -> bool:
        """Nothing of ``cpu`` comes between ``pos`` and a hit at ``b``:
        no calls are drawn, no rated event falls there, no hit is queued."""
        if self.calls or self.targets or self.hp is not None or act.pending[cpu]:
            return False
        rated = self.rated[cpu]
        i = self.ri[cpu]
        return i >= len(rated) or rated[i][0] >= b

    def gather(self, act, cpu: int, b: int, hit: bool = False):
        """(calls, occurrences) of ``cpu`` in [pos, b): the calls' instants
        (sorted), the targeted calls, rated events and queued hits as
        (ts, id, what), in time order; ``pos`` moves to ``b``.  Before a
        ``hit`` at ``b``, the hits queued at ``b`` too (fired before it)."""
        a = self.pos[cpu]
        self.pos[cpu] = b
        occ: list = []
        calls = ()
        rng = act.rng
        if self.calls and b > a:
            # a halted CPU calls nothing: the calls come over the time it
            # was awake (a busy CPU's, an idle one's interrupts)
            calls = act.awake_calls[cpu].upto(
                self.sched.halted_spans(cpu, a, b) if self.sched is not None else [], b)
        if self.targets and b > a:
            awake = AwakeTime(self.sched, cpu, a, b)
            secs = awake.ns / 1e9
            for group in self.targets:
                n = act._count((cpu, group.ids), group.rates[cpu], secs)
                occ += [(ts, 0, group) for ts in awake.draws(rng, n)]
        rated = self.rated[cpu]
        i = self.ri[cpu]
        if i < len(rated) and rated[i][0] < b:
            j = bisect.bisect_left(rated, b, i, key=_ts)
            occ += rated[i:j]
            self.ri[cpu] = j
            self.next_rated[cpu] = rated[j][0] if j < len(rated) else NEVER
        q = act.pending[cpu]
        if q:
            end = b + 1 if hit else b
            hits = [(h[0], MACHINE, h) for h in q if h[0] < end]
            if len(hits) == len(q):
                q.clear()
            elif hits:
                q[:] = [h for h in q if h[0] >= end]
            occ += hits
        if self.hp is not None:             # an offline CPU runs nothing (kernel/cpu.py)
            calls, occ = self.hp.cut(cpu, a, b, calls, occ, MACHINE)
        if len(occ) > 1:
            occ.sort(key=_BY_TIME_ID)
        return calls, occ


def _ts(o):
    return o[0]

