"""The trace event code's probes on the machine's tracepoints
(``kernel.trace_hits``).

A tracepoint the machine fires (a switch, a wakeup, a fork, a system call's
entry and exit, an allocation) is probed while an event recording it is
enabled somewhere, or another probe is on it (``add_tp_hook``: a
tracepoint probe event, a latency tracer, uprobes), and ``sched_switch``
and the other code paths' tracepoints always (``FOLLOWED``: who runs, and
the calls on a task's way to them).  While the machine's trace activity
(:mod:`fakefs.sim.trace_activity`) writes as the machine runs, a probe's
hit goes to it (``live``): it writes the calls and events of that CPU up
to the hit's instant, then the hit.  Else (a request's hit, at an instant
the machine has not reached; a window where probes act on their arrays)
the hit waits, per CPU, in ``pending`` (``HitProbe``) until the activity
gets there.

Also here: the context (flags, preempt depth) a stack implies
(``context_flags``, for whatever records a call or a hit), the events by
tracepoint name, and what must be traced before a gap's window
(``traced_needs``).
"""

from __future__ import annotations

from ..tracepoint import TracepointHooks
from ._trace_hits import HitProbe
from .trace_context import StackContext

# tracepoints always probed: the switches (who runs), and the code a
# task goes through for them (the calls on its way) — a switch's
# __schedule(), a fork's kernel_clone(), an exec's exec_binprm()
CODE_PATHS = ("sched_switch", "sched_process_fork", "sched_process_exec")
FOLLOWED = CODE_PATHS


class TraceHits:
    """``kernel.trace_hits``."""

    def __init__(self, kernel):
        self.kernel = kernel
        # the context (flags, preempt depth) a stack or a frame implies
        self.stack_context = StackContext(kernel)
        self.context_flags = self.stack_context.context_flags
        # hits of the machine's tracepoints not yet traced, per CPU:
        # (ts, event name, pid, flags, preempt_count, args, task running after)
        self.pending: list[list] = [[] for _ in range(kernel.nr_cpus)]
        # [fn(cpu, hit)] while the activity writes as the machine runs, else [None]
        self.live: list = [None]
        self.curr = list(kernel.sched.curr)     # who runs, as of the last hit traced
        self._events_by_name: dict = {}
        self._probes: dict = {}
        self.tp_hooks = TracepointHooks()       # tracepoint probe events
        # fn(t0, t1) -> bool: something of the model hits a probed
        # tracepoint in [t0, t1) (a sample module's thread, a followed real
        # process), so a gap's step is traced even before its window
        self.traced_needs: list = []
        # fn(t0, t1) -> bool: something hits a probed tracepoint in [t0, t1)
        # after the machine ran that step (a timer hook: a sample module's
        # thread), so the step's hits are written after it, all in order
        self.late_needs: list = []
        for name in FOLLOWED:
            self.set_probe(name, True)
        if kernel.tracing is not None:         # events enabled at boot (trace_event=)
            for name in kernel.tracing.tracepoint_users:
                self.set_probe(name, True)

    def probe(self, name):
        """The probe on tracepoint ``name`` (made once)."""
        probe = self._probes.get(name)
        if probe is None:
            probe = self._probes[name] = HitProbe(name, self.pending, self.kernel.sched.curr,
                                                   self.live)
        return probe

    def set_probe(self, name: str, on: bool) -> None:
        """The trace event code's probe on tracepoint ``name``: on while an
        event recording it is enabled somewhere, or another probe is on it
        (``sched_switch`` always: the replay follows who runs)."""
        tp = self.kernel.tracepoints.get(name)
        if on or name in FOLLOWED or name in self.tp_hooks:
            tp.register(self.probe(name))
        else:
            tp.unregister(self.probe(name))

    def add_tp_hook(self, name: str, handler) -> None:
        self.tp_hooks.add(name, handler)
        self.set_probe(name, True)

    def remove_tp_hook(self, name: str, handler) -> None:
        if self.tp_hooks.remove(name, handler):
            self.set_probe(name, name in self.kernel.tracing.tracepoint_users)

    def event_def(self, name):
        """The trace event of tracepoint ``name`` (a probe event may have its
        name, e.g. ``t sched_switch``'s: it records its own hits)."""
        d = self._events_by_name
        if not d:
            d.update((ev.name, ev) for ev in self.kernel.tracing.events if ev.tracepoint == ev.name)
        return d.get(name)

    def events_changed(self) -> None:
        """An event came or went (a module's): look them up again."""
        self._events_by_name.clear()


def register_trace_hits(kernel) -> TraceHits:
    """At tracer init: the probes, and the machine seen while tracing could
    see it."""
    hits = kernel.trace_hits = TraceHits(kernel)
    kernel.tracing.probe_hooks.append(hits.set_probe)
    kernel.add_machine_watcher(lambda: machine_seen_by_tracing(kernel.tracing))
    return hits


def machine_seen_by_tracing(tracing) -> bool:
    """What the machine does matters to some trace array (only the top one
    and the engaged instances can: ``Tracing.engaged``)."""
    return tracing.global_trace.sees_machine() or any(tr.sees_machine() for tr in tracing.engaged)
