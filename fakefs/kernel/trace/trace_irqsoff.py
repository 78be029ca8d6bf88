"""The irqs-off and preempt-off latency tracers (kernel/trace/trace_irqsoff.c):
``irqsoff`` (CONFIG_IRQSOFF_TRACER), ``preemptoff`` (CONFIG_PREEMPT_TRACER)
and ``preemptirqsoff`` (both).

Each measures critical sections: from the moment interrupts (irqsoff),
preemption (preemptoff) or either (preemptirqsoff) are switched off on a
CPU to the moment they are back on.  A section longer than the longest so
far (``tracing_max_latency``; with ``tracing_thresh`` set, any section at
least that long) becomes the max trace: the CPU's buffer is swapped into
the max buffer (``update_max_tr_single()``), which is what ``trace``
shows, in the latency format, with the section's record in the header
(``# latency: N us ... => started at: ... => ended at:``).

What a section writes (``start_critical_timing()`` /
``stop_critical_timing()`` / ``check_critical_timing()``): a function entry
of where it started (``ip <-parent``), with the ``function-trace`` option
each traced call made inside it (``irqsoff_tracer_call()``: the array's
ftrace filters apply), a function entry where it ended, and for a new
maximum a ``<stack trace>`` from the function that ended it down.  (6.12
also writes two entries of the tracer's own function, ``tracer_preempt_on``
or ``tracer_hardirqs_on``, and starts its stack at the enabling function:
this kernel's symbol table is Debian's text, which has none of them, so
they are left out: ``#E/T`` counts one entry less.)

The sections come from :func:`critical_section`, which the simulated
kernel's code calls where a section is modelled: today only the sample
module ``preemptirq_delay_test`` (``samples.py``).  The simulated machine's
own irqs-off and preempt-off stretches (its interrupt handlers, spinlocks,
the scheduler) are not seen by these tracers: the walk knows a call's
context flags, not where a section begins and ends (docs/tracefs-6.12.md).
The three tracers share one busy flag (a second array asking for one gets
EBUSY); each keeps the array's ``overwrite`` on while current (clearing it
is EINVAL) and sets ``latency-format``, both put back at reset, as 6.12.
"""

from __future__ import annotations

from . import trace_entries as te
from .trace_functions import FN_LENGTH
from .ftrace_sysctl import ftrace_calls_enabled
from .trace_latency_files import LatencyTracer, report_latency
from .trace_snapshot import update_max_tr_single

TRACER_IRQS_OFF = 1
TRACER_PREEMPT_OFF = 2
# ns from the section's end entry to the check's clock read, and what
# saving a stack takes (the entries' spacing in the latency format)
CHECK_NS = 700
STACK_NS = 1_900


class _CpuData:
    """The fields of ``trace_array_cpu`` the tracer uses, and the per-CPU
    ``tracing_cpu``."""

    __slots__ = ("critical_start", "critical_end", "preempt_timestamp", "critical_sequence",
                 "tracing")

    def __init__(self):
        self.critical_start = 0
        self.critical_end = 0
        self.preempt_timestamp = 0
        self.critical_sequence = 0
        self.tracing = False


class IrqsoffTracer(LatencyTracer):
    name = "irqsoff"
    trace_type = TRACER_IRQS_OFF
    busy = "irqsoff_busy"

    def __init__(self, tr):
        super().__init__(tr)
        self.cpus = [_CpuData() for _ in range(tr.kernel.nr_cpus)]

    def init(self, tr) -> None:
        """``__irqsoff_tracer_init()``; the ``function-trace`` option (the
        function callback registered or not) is read at each section."""
        self.take(tr)
        for d in self.cpus:
            d.__init__()
        tr.tracing.max_sequence = getattr(tr.tracing, "max_sequence", 0)

    def reset(self, tr) -> None:
        """``__irqsoff_tracer_reset()``"""
        for d in self.cpus:
            d.tracing = False
        self.give_back(tr)

    # --- the sections -------------------------------------------------------------
    def traces(self, kind: int) -> bool:
        return bool(self.trace_type & kind)

    def start(self, cpu: int, ts: int, pid: int, flags: int, pc: int, ip: int, parent: int) -> bool:
        """``start_critical_timing()``: False when nothing started."""
        tr = self.tr
        d = self.cpus[cpu]
        if not tr.tracing.global_trace.tracing_is_on() or d.tracing:
            return False
        d.critical_sequence = tr.tracing.max_sequence
        d.preempt_timestamp = ts
        d.critical_start = parent or ip
        tr.write_entry(cpu, (ts, te.TRACE_FN, pid, flags, pc, ip, parent), te.FN_PAYLOAD)
        d.tracing = True
        return True

    def calls(self, cpu: int, pid: int, flags: int, pc: int, ip: int, parent: int,
              stamps) -> None:
        """``irqsoff_tracer_call()`` of the calls to ``ip`` from ``parent``
        at each of ``stamps`` (a range of instants, in order): with
        ``function-trace`` set, ftrace enabled and the array's filters
        taking it.  A run longer than the CPU's buffer holds writes the
        entries it keeps and counts the rest as overwritten."""
        tr = self.tr
        if not tr.flag("function-trace") or not ftrace_calls_enabled(tr.kernel):
            return
        ops = tr.ftrace_ops
        if ops is not None and not ops.match(ip, pid):
            return
        cb = tr.buffer.cpus[cpu]
        room = cb.nr_pages * (cb.subbuf_size // FN_LENGTH)
        n = len(stamps)
        if n > room and tr.flag("overwrite") and not tr.buffer.record_off \
                and not tr.buffer.record_disabled:
            lost = n - room
            cb.unrecorded(lost, lost * FN_LENGTH, stamps[lost], True)
            stamps = stamps[lost:]
        entries = [(t, te.TRACE_FN, pid, flags, pc, ip, parent) for t in stamps]
        tr.write_entries(cpu, entries, FN_LENGTH)

    def stop(self, cpu: int, ts: int, task, flags: int, pc: int, ip: int, parent: int,
             stack: tuple) -> None:
        """``stop_critical_timing()`` and ``check_critical_timing()``:
        ``stack`` is where the section ended and its callers.  The check's
        two function entries of the tracer's own code (``tracer_preempt_on``,
        ``tracer_hardirqs_on`` and the enabling function) are not written:
        this kernel's symbol table (Debian's text) has no such functions,
        so they could not be named (docs/tracefs-6.12.md)."""
        tr = self.tr
        d = self.cpus[cpu]
        if not d.tracing:
            return
        d.tracing = False
        if not tr.tracing.global_trace.tracing_is_on() or not d.critical_start:
            return
        pid = task.pid
        tr.write_entry(cpu, (ts, te.TRACE_FN, pid, flags, pc, ip, parent), te.FN_PAYLOAD)
        end = parent or ip
        t = ts + CHECK_NS
        delta = t - d.preempt_timestamp          # T1: ftrace_now() in the check
        tracing = tr.tracing
        if report_latency(tr, delta):
            t += STACK_NS
            tr.trace_stack(cpu, t, pid, flags, pc, stack)
            t += CHECK_NS
            if d.critical_sequence == tracing.max_sequence:
                d.critical_end = end
                if tr.tracing_is_on():           # is_tracing_stopped()
                    tr.max_latency = delta
                    update_max_tr_single(tr, cpu, task, d.preempt_timestamp,
                                         d.critical_start, d.critical_end)
                tracing.max_sequence += 1
        d.critical_sequence = tracing.max_sequence
        d.preempt_timestamp = t
        d.critical_start = 0


class PreemptoffTracer(IrqsoffTracer):
    name = "preemptoff"
    trace_type = TRACER_PREEMPT_OFF


class PreemptirqsoffTracer(IrqsoffTracer):
    name = "preemptirqsoff"
    trace_type = TRACER_IRQS_OFF | TRACER_PREEMPT_OFF


def irqsoff_tracers(config) -> list:
    """The tracers of this family the build has (``register_tracer()`` in
    ``init_irqsoff_tracer()``)."""
    out = []
    if config.enabled("IRQSOFF_TRACER"):
        out.append(IrqsoffTracer)
    if config.enabled("PREEMPT_TRACER"):
        out.append(PreemptoffTracer)
    if config.enabled("IRQSOFF_TRACER") and config.enabled("PREEMPT_TRACER"):
        out.append(PreemptirqsoffTracer)
    return out


def section_tracer(kernel, kind: int):
    """The irqsoff-family tracer that measures sections of ``kind`` now
    (one array at most: they share a busy flag), or None."""
    tracing = kernel.tracing
    if tracing is None or not getattr(tracing, "irqsoff_busy", False):
        return None
    for tr in tracing.arrays():
        t = tr.current
        if isinstance(t, IrqsoffTracer) and t.traces(kind):
            return t
    return None
