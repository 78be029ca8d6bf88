"""What the simulated CPUs do while somebody traces them.

One time hook drives every source of ring-buffer entries, so that each
CPU's entries are written in timestamp order: traced function calls (while
an array runs the function tracer) and tracepoint hits (for enabled events).
Rates are per CPU per second; occurrences are spread over the interval being
caught up.  Stacks come from the workload: ``sample()`` for function calls,
``stacks_for_event(kind)`` for tracepoints.  After an entry, a stack is
recorded when the array asks for one (``stacktrace``, or the function
tracer's ``func_stack_trace``), through the stackmap when it is on.

The function tracer records ``fn_rate`` calls a second per CPU of the
time it is awake (``call_rates.py``), each CPU's a stream of its own
(``_trace_calls.AwakeCalls``: the same calls however a window is cut);
events with rates
of their own come at any time, as a device's would (on a halted CPU, in
the interrupt that wakes it).  A run of them with nothing else between is made
and written in one go when every array takes each call as it comes
(``_function_calls``); a function_graph array takes every call of the walk
one at a time, whatever its filters (``_graph_calls``).  The
functions a filtered function tracer or a function probe names
(``tr.ftrace_ops``, see ``ftrace.py``) get their own streams of calls at the
rate they are really made (``Workload.calls_to()``): a filter on
``schedule`` shows every schedule() call, a probe on ``kernel_clone`` fires
at each fork.  Every call goes to the function-tracing arrays (through
``ops.match()``) and to the probes of every array (``ops.after_call()``),
whatever its tracer.  While there are probes, which may switch tracing on or
off or enable events, the CPUs go through an interval together in time
order.
"""

from __future__ import annotations

import heapq
import zlib

from ..kernel.trace._trace_commit import reread_committers
from ..kernel.trace.ftrace_sysctl import ftrace_calls_enabled
from ..kernel.trace.trace_events_commit import trace_event_commit
from ..kernel.tracepoint import TracepointHooks
from .call_rates import CallGroup, call_groups, fn_rate
from ._trace_calls import AwakeCalls, instants_upto
from ._trace_machine_hits import MACHINE, HitWriter, LiveSink
from .rated_events import make_fields, rate
from .trace_call_writes import CallWrites
from .trace_machine_hits import SYS_WORK, MachineHits, recorders_key
from .trace_window import _BY_TIME_ID, Window

SWITCH_RATE = 800          # context switches per second per CPU
SWITCH = object()          # an unrecorded context switch


class TraceActivity(MachineHits, CallWrites):
    """``kernel.trace_activity``: the calls and events of the machine, and
    its tracepoints' hits (``kernel.trace_hits``), written window by window."""

    def __init__(self, kernel):
        self.kernel = kernel
        hits = self.hits = kernel.trace_hits
        self.fn_rate = fn_rate(kernel)
        self.rng = kernel.subsystem_rng("trace-activity")
        # the gap watcher: what tracing can show of a gap (trace_backlog.py;
        # None: every instant is simulated in full)
        self.backlog = None
        self.carry: dict[tuple, float] = {}
        # per CPU, its function calls over the time it is awake (``_calls_of``)
        self.awake_calls: list[AwakeCalls | None] = [None] * kernel.nr_cpus
        # the kernel's probes' (the same objects): the context a stack
        # implies, the hits waiting per CPU, who runs as of the last hit
        # traced, the tracepoint probe events, the events by name
        self.stack_context = hits.stack_context
        self.context_flags = hits.context_flags
        self.pending = hits.pending
        self.curr = hits.curr
        self.tp_hooks = hits.tp_hooks
        self._event_def = hits.event_def
        self.tasks: list = []
        self._target_addrs = frozenset()
        # the events with rates of their own, and the arrays' sets they are of
        self._events: list = []
        self._events_key: tuple = ()
        self._targets: tuple = ()
        self._syscall_events: dict = {}         # (tracepoint, nr) -> event
        # nr -> the ids a system call's work goes down (``MachineHits._syscall_work``)
        self._work_targets: dict[int, tuple] = {}
        # who records a hit, per (cpu, tracepoint[, nr]), while the arrays'
        # settings hold (None while probes may change them in a window)
        self._recorders: dict | None = None
        self._recorders_key: tuple = ()       # what they were made for (``recorders_key``)
        # the compiled writers of the function tracers' calls, per (CPU,
        # array), for the window under way (None: probes may change the
        # settings in it)
        self._call_writers: dict | None = None
        # per CPU, the last stretch's (arrays, probing arrays, CallWriter,
        # array) when the compiled writer took it: the next stretch of the
        # window with the same lists goes straight to it (``_function_calls``)
        self._stretch_writers: dict | None = None
        # the commits of the compiled replay, per array and CPU
        # (``_trace_commit.Committer``, read again as each window starts;
        # None: probes or triggers may change the settings in the window)
        self._committers: dict | None = None
        # the compiled replay's recorders as it writes them (``HitWriter``'s
        # ``known``: per CPU, and per CPU and system call direction), kept
        # while the recorders and the commits they hold are (None: made anew)
        self._hit_recs: tuple | None = None
        # the window under way, written as the machine runs (None: after it)
        self.window: Window | None = None
        self._begun = None                    # (t0, t1) of the window begun
        self._quiet = False                   # the gap watcher said it is quiet
        self.sink = None                      # the window's LiveSink

    # --- the hook -------------------------------------------------------------
    def _count(self, key, rate: float, dt: float) -> int:
        carry = self.carry.get(key)
        if carry is None:
            # a stream just started is somewhere in its period, not at its
            # beginning: else the first occurrence always waits a full one
            carry = zlib.crc32(repr(key).encode()) / 2**32
        want = carry + rate * dt
        n = int(want)
        self.carry[key] = want - n
        return n

    def _events_of(self, ev_trs, acting) -> list:
        """The events that hit with a rate of their own, in id order, of the
        arrays ``ev_trs``: made again only when their sets changed."""
        key = tuple((tr.enabled_events.version, -1 if tr in acting else tr.soft_disabled.version)
                    for tr in ev_trs) + (self.tp_hooks.version,)
        if key == self._events_key:
            return self._events
        events = set()
        for tr in ev_trs:
            # soft-disabled events are left out, unless a probe or a trigger
            # may enable them (or has triggers of its own)
            events |= tr.enabled_events if tr in acting else tr.enabled_events - tr.soft_disabled
        if self.tp_hooks:                   # probed tracepoints fire for their probes
            events |= {ev for ev in self.kernel.tracing.events if ev.tracepoint in self.tp_hooks}
        tps = self.kernel.tracepoints
        # the others never fire, or fire from a modelled code path
        events = {ev for ev in events if rate(ev) and not tps.get(ev.tracepoint).driven}
        self._events = sorted(events, key=lambda e: e.id)
        self._events_key = key
        return self._events

    # --- a window: the machine's step [t0, t1) ------------------------------------
    def begin(self, t0: int, t1: int) -> None:
        """The machine is about to run [t0, t1) (``Machine.run``): the
        arrays' settings for it, and, unless probes act on their arrays or
        something hits after the machine's run (``late_needs``), its hits
        are written as they fire (``_hit``)."""
        self.window = None
        self._begun = None
        if self.kernel.driver is None or any(fn(t0, t1) for fn in self.hits.late_needs):
            return
        w = self.window = self._window(t0, t1)
        self._begun = (t0, t1)
        if w is not None and not w.acting:
            w.live = True
            self.sink = LiveSink(self, w, w.hits, not (w.calls or w.targets or w.hp))
            self.hits.live[0] = self.sink

    def _hit(self, cpu: int, hit) -> None:
        """The machine fired a probed tracepoint on ``cpu`` (``LiveSink``
        passed it on: something of the CPU comes before it): that CPU's
        calls and events up to its instant, then the hit, are written now."""
        w = self.window
        ts = hit[0]
        sink = self.sink
        sink.in_hit = True
        try:
            if w.nothing_before(self, cpu, ts):       # (the hit alone: as _replay writes it)
                w.pos[cpu] = ts
                trs = w.trs[cpu]
                sw = w.switch[cpu]
                if sw is None:
                    sw = self._switch_calls(cpu, trs, w.probe_trs, w.wl, w.hits, w)
                if w.hits is None or not w.hits.write(hit, cpu, sw):
                    self._hit_alone(w, cpu, hit)
                return
            calls, occ = w.gather(self, cpu, ts, True)
            occ.append((ts, MACHINE, hit))
            self._replay(cpu, occ, w.trs[cpu], w.probe_trs, w.ev_trs, w.wl, self.rng, calls, w.hits,
                         w)
        finally:
            sink.in_hit = False

    def _hit_alone(self, w, cpu: int, hit) -> None:
        """A hit with nothing before it, the Python way (``_replay``'s)."""
        trs = w.trs[cpu]
        self._machine_hit(hit, w.ev_trs, trs[0], w.probe_trs, w.wl, self.rng, cpu, trs[2], trs[1])

    def run(self, t0: int, t1: int) -> None:
        """The step is over (the kernel's observer): what is left of it is
        written, each CPU up to ``t1`` (a window where probes act on their
        arrays: every CPU's in one time order)."""
        self.hits.live[0] = None
        w = self.window if self._begun == (t0, t1) else self._window(t0, t1)
        self.window = self._begun = None
        if self.backlog is not None:
            self.backlog.account(t0, t1, self._quiet)
        if w is None:
            self._follow_only(t1)
            return
        rng = self.rng
        if not w.acting:
            for cpu in range(self.kernel.nr_cpus):
                calls, occ = w.gather(self, cpu, t1)
                if occ or calls:
                    self._replay(cpu, occ, w.trs[cpu], w.probe_trs, w.ev_trs, w.wl, rng, calls,
                                 w.hits, w)
            return
        # probes act on the whole array (tracing_on, events): all CPUs in time order
        streams = []
        for cpu in range(self.kernel.nr_cpus):
            calls, occ = w.gather(self, cpu, t1)
            if calls:
                occ = sorted(occ + [(ts, 0, None) for ts in calls], key=_BY_TIME_ID)
            trs = w.trs[cpu]
            streams.append([(o[0], o[1], cpu, o[2], trs) for o in occ])
        for ts, _id, cpu, ev, trs in heapq.merge(*streams, key=lambda o: (o[0], o[1], o[2])):
            self._replay(cpu, ((ts, _id, ev),), trs, w.probe_trs, w.ev_trs, w.wl, rng)

    def _follow_only(self, t1: int) -> None:
        """Nothing is traced: the hits before ``t1`` only follow who runs."""
        driven = self.kernel.driver is not None
        wl = self.kernel.workload
        for cpu in range(self.kernel.nr_cpus):
            if driven:
                wl.follow(cpu, self.curr[cpu])
            q = self.pending[cpu]
            for hit in [h for h in q if h[0] < t1]:
                if driven:
                    self._follow(wl, cpu, hit)
            q[:] = [h for h in q if h[0] >= t1]

    def _window(self, t0: int, t1: int) -> Window | None:
        """The settings of the step [t0, t1), or None when nothing is
        traced in it (the hits queued are only followed: who runs)."""
        tracing = self.kernel.tracing
        arrays = list(tracing.arrays())
        probe_trs = [tr for tr in arrays if tr.ftrace_ops is not None and tr.ftrace_ops.probes]
        # arrays whose function probes or event triggers act on the array
        # (tracing_on, events, snapshot): they see everything, in time order
        acting = [tr for tr in arrays if tr.acts_on_itself()]
        # an array with function probes or triggers may have tracing switched
        # on by one; one a reader paused (pause-on-trace) takes nothing
        live = [tr for tr in arrays if tr.recording() or tr in acting]
        calls = ftrace_calls_enabled(self.kernel)      # /proc/sys/kernel/ftrace_enabled
        # the function tracer, a latency tracer with options/function-trace
        # (it records the calls only where and while it measures: calls_on())
        fn_trs = [tr for tr in live if calls and tr.current.takes_calls(tr)]
        # function_graph arrays take every call of the walk, in a row, and
        # keep their own return stacks (trace_functions_graph.py); one
        # that does not record now has nothing pushed meanwhile
        gr_trs = [tr for tr in live if calls and tr.current.name == "function_graph"]
        for tr in arrays:
            if tr.current.name == "function_graph" and tr not in gr_trs:
                tr.current.forget()
        ev_trs = [tr for tr in live if tr.enabled_events]
        plain_fn = [tr for tr in fn_trs if tr.ftrace_ops is None or not tr.ftrace_ops.filtering()]
        filt_fn = [tr for tr in fn_trs if tr not in plain_fn]
        wl = self.kernel.workload
        if wl is not None:
            self.stack_context.follow_frames(wl)
        driven = self.kernel.driver is not None
        targets = self._call_targets(wl, arrays, fn_trs)
        quiet = self.backlog is not None and self.backlog.quiet_step(t0, t1)
        self._quiet = quiet                     # (counted when the step is over: ``run``)
        nr = self.kernel.nr_cpus
        if quiet or (not plain_fn and not gr_trs and not ev_trs and not targets
                     and not self.tp_hooks):
            return None
        events = self._events_of(ev_trs, acting)
        if events:
            self.tasks = wl.tasks()
        rng = self.rng
        if driven:
            for cpu in range(nr):
                wl.follow(cpu, self.curr[cpu])   # the window starts with who ran then
        w = Window(t0, t1, nr)
        w.acting = bool(acting)
        w.probe_trs, w.ev_trs, w.wl = probe_trs, ev_trs, wl
        w.calls = bool(plain_fn or gr_trs)
        w.targets = targets
        w.sched = self.kernel.sched if driven else None
        if self.kernel.cpuhp and self.kernel.cpuhp.any_offline(t0):
            w.hp = self.kernel.cpuhp
        self._call_writers = None if acting else {}
        self._stretch_writers = None if acting else {}
        if acting:
            self._committers = self._recorders = self._hit_recs = None
        else:
            if self._committers is None:
                self._committers = {}
                self._hit_recs = None
            else:
                reread_committers(self._committers)
            key = recorders_key(ev_trs)
            if self._recorders is None or key != self._recorders_key:
                self._recorders = {}
                self._recorders_key = key
                self._hit_recs = None
        w.hits = HitWriter(self, wl, rng) if not acting else None
        dt, span = (t1 - t0) / 1e9, t1 - t0
        moving = bool(plain_fn or gr_trs or targets)
        for cpu in range(nr):
            # events with rates of their own come at any time, as a device's would
            occ = []
            if w.calls:             # (its calls go on from t0: ``Window.gather`` draws them)
                self._calls_of(cpu, t0)
            for ev in events:
                n = self._count((cpu, ev.id), rate(ev), dt)
                occ += [(t0 + int(rng.random() * span), ev.id, ev) for _ in range(n)]
            if not driven and events and not moving and not any(ev.kind == "sched_switch" for ev in events):
                # nothing else moves the CPUs from task to task: the scheduler runs
                # unrecorded so the traced events keep coming from changing tasks
                n = self._count((cpu, "switch"), SWITCH_RATE, dt)
                occ += [(t0 + int(rng.random() * span), -1, SWITCH) for _ in range(n)]
            occ.sort(key=_BY_TIME_ID)
            w.rated[cpu] = occ
            if occ:
                w.next_rated[cpu] = occ[0][0]
            w.trs.append(([tr for tr in fn_trs if tr.cpumask >> cpu & 1],
                          [tr for tr in filt_fn if tr.cpumask >> cpu & 1],
                          [tr for tr in gr_trs if tr.cpumask >> cpu & 1]))
        return w

    def _calls_of(self, cpu: int, t0: int) -> AwakeCalls:
        """The function calls of ``cpu`` (``AwakeCalls``: ``fn_rate`` a
        second of its awake time, a generator of their own), from ``t0``
        on (what was not simulated before it made none)."""
        calls = self.awake_calls[cpu]
        if calls is None:
            calls = self.awake_calls[cpu] = AwakeCalls(
                self.fn_rate, self.kernel.subsystem_rng(f"trace-activity:calls:{cpu}"), t0)
        calls.skip_to(t0)
        return calls

    def _replay(self, cpu, occ, trs, probe_trs, ev_trs, wl, rng, calls=(), hits=None,
                w=None) -> None:
        """The occurrences ``occ`` on ``cpu`` in time order, and among them
        the plain function calls at the instants ``calls`` (in order; one
        goes after the machine's hits of its instant, before its events);
        ``hits``: the window's compiled replay of the machine's hits (None:
        all go the Python way); ``w``: the window, which keeps who takes a
        switch's calls on each CPU for all its segments."""
        ftrs, filtered, graph = trs
        j = 0
        n = len(calls)
        switch_calls = w.switch[cpu] if w is not None else None
        if switch_calls is None:
            switch_calls = self._switch_calls(cpu, trs, probe_trs, wl, hits, w)
        i, m = 0, len(occ)
        while i < m:
            if hits is not None:     # (the hits it writes, compiled, up to the next call)
                i = hits.write_from(occ, i, cpu, switch_calls, calls[j] if j < n else None)
                if i == m:
                    break
            ts, _id, ev = occ[i]
            i += 1
            if j < n and calls[j] <= ts:
                k = instants_upto(calls, ts, j, _id >= 0)
                if k > j:
                    self._function_calls(ftrs, wl, rng, cpu, calls, probe_trs, graph, j, k)
                    j = k
            if _id == MACHINE:
                # (the hits that only write records: compiled, the same)
                if hits is None or not hits.write(ev, cpu, switch_calls):
                    self._machine_hit(ev, ev_trs, ftrs, probe_trs, wl, rng, cpu, graph, filtered)
            elif ev is None:
                if graph:
                    self._function_calls(ftrs, wl, rng, cpu, [ts], probe_trs, graph)
                else:
                    self._function_call(ftrs, wl, rng, cpu, ts, probe_trs)
            elif type(ev) is CallGroup:
                self._targeted_call(filtered, wl, rng, cpu, ts, probe_trs, ev.ids)
            elif ev is SWITCH:
                wl.stacks_for_event(rng, cpu, "sched_switch")
            else:
                self._tracepoint(ev, ev_trs, wl, rng, cpu, ts)
        if j < n:
            self._function_calls(ftrs, wl, rng, cpu, calls, probe_trs, graph, j, n)

    def _switch_calls(self, cpu, trs, probe_trs, wl, hits, w):
        """Who takes a switch's calls on ``cpu`` (``HitWriter.write``'s
        ``calls``), kept in the window ``w`` (if any) for its segments."""
        ftrs, _filtered, graph = trs
        # (somebody takes them on this CPU; where only the compiled writer
        # does, the replay's compiled switch writes them)
        kprobed = self._kprobed()
        switch_calls = bool(ftrs or probe_trs or graph) or kprobed
        if hits is not None and ftrs and not (probe_trs or graph or kprobed):
            switch_calls = self._entered_writer(ftrs, wl, cpu) or True
        if w is not None:
            w.switch[cpu] = switch_calls
        return switch_calls

    def _call_targets(self, wl, arrays, fn_trs):
        """The functions whose every call matters now (filtered function
        tracers, function probes), as :class:`CallGroup` streams."""
        addrs = frozenset()
        for tr in arrays:
            ops = tr.ftrace_ops
            if ops is not None and ftrace_calls_enabled(self.kernel):
                addrs |= ops.call_targets(tr in fn_trs)
        if self.kernel.kprobes is not None:
            addrs |= self.kernel.kprobes.call_targets()       # armed kprobes
        if addrs != self._target_addrs:
            self._target_addrs = addrs
            self._targets = call_groups(wl, addrs, self.fn_rate) if addrs else ()
        return self._targets

    def _kprobed(self) -> bool:
        """Some kprobe is armed: calls of its function are hits."""
        kprobes = self.kernel.kprobes
        return kprobes is not None and bool(kprobes.call_targets())

    def _tracepoint(self, ev, trs, wl, rng, cpu, ts) -> None:
        trs = [tr for tr in trs if (tr.event_recording(ev) and tr.cpumask >> cpu & 1)
               or ev in tr.event_triggers]
        hooks = self.tp_hooks.get(ev.tracepoint)
        if not trs and not hooks:
            return
        try:
            if self.kernel.driver is not None:
                task, stack = self.curr[cpu], wl.event_stack(rng, cpu, ev.kind)
            else:
                task, stack = wl.stacks_for_event(rng, cpu, ev.kind)
        except (ValueError, KeyError):
            task, stack = wl.sample(rng, cpu)
        flags, pc = self.context_flags(stack)
        args = make_fields(ev, rng, cpu, task, stack, self)
        if trs:
            trace_event_commit(trs, ev, cpu, (ts, ev.id, task.pid, flags, pc, args, None),
                               ev.record_size(args), stack)
        if hooks:
            TracepointHooks.run(hooks, cpu, ts, task, flags, pc, args, stack)


def start(kernel) -> TraceActivity | None:
    """The machine's trace activity, for a kernel that traces (its probes:
    ``kernel.trace_hits``), with its gap watcher (trace_backlog.py)."""
    hits = kernel.trace_hits
    if hits is None:
        return None
    act = kernel.trace_activity = TraceActivity(kernel)
    kernel.syscalls.wants_work(act.wants_work, hits.probe(SYS_WORK))
    kernel.add_timer_hook(act.run, observer=True)
    return act
