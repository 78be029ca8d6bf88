"""The scheduler wakeup latency tracers (kernel/trace/trace_sched_wakeup.c,
CONFIG_SCHED_TRACER): ``wakeup``, ``wakeup_rt`` and ``wakeup_dl``.

Each measures the time from a task's wakeup to the moment it runs: probes
on the machine's ``sched_wakeup``/``sched_wakeup_new`` hits pick the task
to follow (``probe_wakeup()``), the ``sched_switch`` hit that puts it on a
CPU ends the measure (``probe_wakeup_sched_switch()``), and
``sched_migrate_task`` follows it to another CPU.  Which wakeups count
(6.12's rules):

* ``wakeup``: any task with a higher priority (a lower ``prio``) than the
  one followed so far and than the task that wakes it;
* ``wakeup_rt``: real-time and deadline tasks only (``prio`` < 100);
* ``wakeup_dl``: deadline tasks only (none on this machine);
* once a deadline task is followed, nothing else until it runs.

A wakeup writes, into the buffer of the CPU it happens on, a ``wakeup``
entry (`` 0:120:R   + [003]  2389: 94:R sleep``), a ``<stack trace>``
and the function entry of ``ttwu_do_activate <-try_to_wake_up`` (the
stack's first two frames); the switch a function entry (``__schedule``
...), a ``context_switch`` entry (``==>``) and a stack.  A latency above
``tracing_max_latency`` (or at least ``tracing_thresh`` when set) swaps
the whole buffer into the max buffer (``update_max_tr()``), which ``trace``
shows from the wakeup on, in the latency format, with the woken task in
the header.  The buffer is not reset between wakeups (6.12 does not):
``trace`` skips what came before the wakeup.

With the ``function-trace`` option (on by default) the tracer's ftrace
callback is registered (``wakeup_function_set()``): every traced function
call (the array's filters and pid lists apply) made on the CPU the woken
task is on, from the wakeup to the switch, is a function entry
(``wakeup_tracer_call()``): TraceActivity gives it the machine's calls
(``takes_calls``/``calls_on``), the calls on the way to the switch
(``__schedule()``'s path) among them.  One
array at a time may have one of them (EBUSY); each keeps ``overwrite`` on
(clearing it is EINVAL) and sets ``latency-format`` while current.
"""

from __future__ import annotations

from . import trace_entries as te
from .trace_functions import FN_LENGTH
from .trace_latency_files import LatencyTracer, report_latency
from .trace_snapshot import update_max_tr

MAX_RT_PRIO = 100
UINT_MAX = (1 << 32) - 1
PROBES = ("sched_wakeup", "sched_wakeup_new", "sched_switch", "sched_migrate_task")
# task_state_index() of a switch's prev_state as the machine writes it
STATE_INDEX = {"R": 0, "R+": 0, "S": 1, "D": 2, "T": 3, "t": 4, "X": 5, "Z": 6, "P": 7, "I": 8}
# ns between the entries a probe writes (the stack saved in between)
ENTRY_NS = 300


class WakeupTracer(LatencyTracer):
    name = "wakeup"
    wakeup_rt = False
    wakeup_dl = False
    busy = "wakeup_busy"

    def __init__(self, tr):
        super().__init__(tr)
        self.hooks = None
        self._clear()

    def _clear(self) -> None:
        """``__wakeup_reset()``"""
        self.wakeup_cpu = -1
        self.wakeup_current_cpu = -1
        self.wakeup_prio = UINT_MAX            # unsigned: -1
        self.tracing_dl = False
        self.wakeup_task = None
        self.preempt_timestamp = 0

    # --- tracer ops -------------------------------------------------------------
    def init(self, tr) -> None:
        """``__wakeup_tracer_init()``"""
        self.take(tr)
        self._start(tr)

    def reset(self, tr) -> None:
        """``wakeup_tracer_reset()``"""
        self._stop(tr)
        tr.reset_buffer()                      # wakeup_reset()
        self._clear()
        self.give_back(tr)

    def _start(self, tr) -> None:
        """``start_wakeup_tracer()``: the probes, then ``wakeup_reset()``."""
        self.register_probes(tr)
        tr.reset_buffer()
        self._clear()

    def register_probes(self, tr) -> None:
        """The tracepoint probes (again at boot: ``ftrace=wakeup`` chooses
        the tracer before the replay of the machine's hits exists)."""
        act = tr.kernel.trace_hits
        if act is not None and self.hooks is None:
            self.hooks = {"sched_wakeup": self.probe_wakeup, "sched_wakeup_new": self.probe_wakeup,
                          "sched_switch": self.probe_switch,
                          "sched_migrate_task": self.probe_migrate}
            for name in PROBES:
                act.add_tp_hook(name, self.hooks[name])

    def _stop(self, tr) -> None:
        act = tr.kernel.trace_hits
        if act is not None and self.hooks is not None:
            for name in PROBES:
                act.remove_tp_hook(name, self.hooks[name])
        self.hooks = None

    # --- the function calls ---------------------------------------------------------
    def takes_calls(self, tr) -> bool:
        """``wakeup_function_set()``: the callback is there with ``function-trace``."""
        return tr.flag("function-trace")

    def calls_on(self, cpu: int) -> bool:
        """``func_prolog_preempt_disable()``: while a wakeup is followed, on
        the CPU of the woken task."""
        return self.wakeup_task is not None and cpu == self.wakeup_current_cpu

    def record_calls(self, tr, cpu: int, entries: list, frames: list) -> None:
        """``wakeup_tracer_call()`` of each of ``entries`` (``trace_function()``)."""
        tr.write_entries(cpu, entries, FN_LENGTH)

    # --- the probes ---------------------------------------------------------------
    def _enabled(self) -> bool:
        """``tracer_enabled``: set while tracing is on (the tracer's
        start/stop follow ``tracing_is_enabled()``)."""
        return self.tr.tracing.global_trace.tracing_is_on()

    def _skip(self, prio: int, waker_prio: int) -> bool:
        dl = prio < 0
        if self.tracing_dl or (self.wakeup_dl and not dl) or (self.wakeup_rt and prio >= MAX_RT_PRIO):
            return True
        return not dl and ((prio & UINT_MAX) >= self.wakeup_prio or prio >= waker_prio)

    def probe_wakeup(self, cpu, ts, waker, flags, pc, args, stack) -> None:
        """``probe_wakeup()`` at a wakeup hit: ``waker`` runs on ``cpu``;
        ``args`` (comm, pid, prio, target CPU)."""
        if not self._enabled():
            return
        tr = self.tr
        comm, pid, prio, target = args[0], args[1], args[2], args[3]
        tracing = tr.tracing
        tracing.savedcmd.save(pid, comm)               # tracing_record_cmdline(p)
        if waker is not None and waker.pid:
            tracing.savedcmd.save(waker.pid, waker.comm)
        waker_prio = waker.prio if waker is not None else 120
        if self._skip(prio, waker_prio):
            return
        task = tr.kernel.sched.find(pid)
        self._clear()
        self.wakeup_cpu = self.wakeup_current_cpu = target
        self.wakeup_prio = prio & UINT_MAX
        self.tracing_dl = prio < 0
        self.wakeup_task = task if task is not None else _Named(comm, pid, prio)
        self.preempt_timestamp = ts
        wpid = waker.pid if waker is not None else 0
        entry = (ts, te.TRACE_WAKE, wpid, flags, pc,
                 (wpid, waker_prio, 0, pid, prio, 0, target), None)
        tr.write_entry(cpu, entry, te.CTX_PAYLOAD)
        stack = tuple(stack or ())
        t = ts + ENTRY_NS
        if stack:
            tr.trace_stack(cpu, t, wpid, flags, pc, stack)
            if len(stack) > 1:
                t += ENTRY_NS
                tr.write_entry(cpu, (t, te.TRACE_FN, wpid, flags, pc, stack[0], stack[1]),
                               te.FN_PAYLOAD)

    def probe_migrate(self, cpu, ts, task, flags, pc, args, stack) -> None:
        """``probe_wakeup_migrate_task()``: args (comm, pid, prio, from, to)."""
        w = self.wakeup_task
        if w is not None and args[1] == w.pid:
            self.wakeup_current_cpu = args[4]

    def probe_switch(self, cpu, ts, prev, flags, pc, args, stack) -> None:
        """``probe_wakeup_sched_switch()``: args (prev comm, pid, prio,
        state, next comm, pid, prio)."""
        tr = self.tr
        if args[1]:
            tr.tracing.savedcmd.save(args[1], args[0])  # tracing_record_cmdline(prev)
        if not self._enabled():
            return
        w = self.wakeup_task
        if w is None or args[5] != w.pid:
            return
        ppid, pprio = args[1], args[2]
        stack = tuple(stack or ())
        t = ts
        if len(stack) > 1:
            tr.write_entry(cpu, (t, te.TRACE_FN, ppid, flags, pc, stack[0], stack[1]), te.FN_PAYLOAD)
            t += ENTRY_NS
        entry = (t, te.TRACE_CTX, ppid, flags, pc,
                 (ppid, pprio, STATE_INDEX.get(args[3], 0), args[5], args[6], 0, cpu), None)
        tr.write_entry(cpu, entry, te.CTX_PAYLOAD)
        if stack:
            t += ENTRY_NS
            tr.trace_stack(cpu, t, ppid, flags, pc, stack)
        delta = t - self.preempt_timestamp
        if report_latency(tr, delta) and tr.tracing_is_on():
            tr.max_latency = delta
            update_max_tr(tr, w, self.wakeup_cpu, self.preempt_timestamp)
        self._clear()


class _Named:
    """A woken task the scheduler no longer knows (its pid, comm, prio)."""

    __slots__ = ("comm", "pid", "prio")

    def __init__(self, comm, pid, prio):
        self.comm, self.pid, self.prio = comm, pid, prio


class WakeupRtTracer(WakeupTracer):
    name = "wakeup_rt"
    wakeup_rt = True


class WakeupDlTracer(WakeupTracer):
    name = "wakeup_dl"
    wakeup_dl = True


def wakeup_tracers(config) -> list:
    """``init_wakeup_tracer()``'s three, in registration order."""
    if not config.enabled("SCHED_TRACER"):
        return []
    return [WakeupTracer, WakeupRtTracer, WakeupDlTracer]
