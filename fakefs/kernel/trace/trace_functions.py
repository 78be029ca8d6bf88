"""The function tracer (kernel/trace/trace_functions.c) and its event source.

While ``current_tracer`` is ``function`` and tracing is on, every simulated
CPU makes traced function calls at ``fn_rate`` calls per second (boot
parameter ``fakefs.fn_rate=``, default 4000).  Each call writes a
``TRACE_FN`` entry (ip, parent_ip); a stack follows it when the tracer option
``func_stack_trace`` is set or — following the stackmap series, which
documents it for this kernel persona — when the ``stacktrace`` option is set.
The stack goes through the stackmap when ``stackmap`` is on.

Calls are generated lazily for the interval being caught up, so an idle or
non-tracing kernel costs nothing.
"""

from __future__ import annotations

from . import trace_entries as te
from .trace import Tracer

FN_RATE_DEFAULT = 4000

HARDIRQ_FUNCS = frozenset({
    "__sysvec_apic_timer_interrupt", "sysvec_apic_timer_interrupt", "hrtimer_interrupt",
    "handle_irq_event", "__handle_irq_event_percpu", "common_interrupt", "__common_interrupt",
    "sysvec_call_function_single", "sysvec_reschedule_ipi"})
SOFTIRQ_FUNCS = frozenset({
    "__do_softirq", "handle_softirqs", "net_rx_action", "rcu_core", "run_timer_softirq",
    "irq_exit_rcu"})


class FunctionTracer(Tracer):
    name = "function"
    options = {"func_stack_trace": False, "func-no-repeats": False}
    allow_instances = True


class FunctionEventSource:
    """Per-CPU stream of traced calls, shared by every array tracing functions."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.rate = getattr(kernel, "_fn_rate", FN_RATE_DEFAULT)
        self.rng = kernel.subsystem_rng("function-tracer")
        self.carry = [0.0] * kernel.nr_cpus
        self._flags_cache: dict[tuple, tuple[int, int]] = {}
        self._addr_ctx: dict[int, int] = {}

    def _consumers(self):
        tracing = self.kernel.tracing
        return [tr for tr in tracing.arrays()
                if tr.current.name == "function" and tr.tracing_is_on() and tr.flag("function-trace")]

    def _frame_context(self, ip: int) -> int:
        """2 for a hardirq entry frame, 1 for softirq, 0 otherwise (cached per address)."""
        c = self._addr_ctx.get(ip)
        if c is None:
            hit = self.kernel.kallsyms.lookup(ip)
            name = hit[0] if hit else ""
            c = 2 if name in HARDIRQ_FUNCS else 1 if name in SOFTIRQ_FUNCS else 0
            self._addr_ctx[ip] = c
        return c

    def context_flags(self, stack: tuple) -> tuple[int, int]:
        """irq/softirq context and preempt count implied by the frames."""
        r = self._flags_cache.get(stack)
        if r is None:
            ctx = max(map(self._frame_context, stack), default=0)
            if ctx == 2:
                r = (te.TRACE_FLAG_HARDIRQ | te.TRACE_FLAG_IRQS_OFF, 1)
            elif ctx == 1:
                r = (te.TRACE_FLAG_SOFTIRQ, 1)
            else:
                r = (0, 0)
            if len(self._flags_cache) > 1 << 16:
                self._flags_cache.clear()
            self._flags_cache[stack] = r
        return r

    def run(self, t0: int, t1: int) -> None:
        consumers = self._consumers()
        if not consumers:
            return
        wl = self.kernel.workload
        rng = self.rng
        dt = (t1 - t0) / 1e9
        for cpu in range(self.kernel.nr_cpus):
            want = self.carry[cpu] + self.rate * dt
            n = int(want)
            self.carry[cpu] = want - n
            if n <= 0:
                continue
            trs = [tr for tr in consumers if tr.cpumask >> cpu & 1]
            if not trs:
                continue
            step = (t1 - t0) / n
            for i in range(n):
                ts = t0 + int(step * i + rng.random() * step)
                task, stack = wl.sample(rng, cpu)
                flags, pc = self.context_flags(stack)
                pid = task.pid
                entry = (ts, te.TRACE_FN, pid, flags, pc, stack[0], stack[1] if len(stack) > 1 else 0)
                for tr in trs:
                    if not tr.write_entry(cpu, entry, te.FN_PAYLOAD):
                        continue
                    if tr.current.opts.get("func_stack_trace") or tr.flag("stacktrace"):
                        tr.trace_stack(cpu, ts, pid, flags, pc, stack)


def register_function_tracer_hooks(kernel) -> None:
    if not kernel.config.enabled("FUNCTION_TRACER"):
        return
    src = FunctionEventSource(kernel)
    kernel.function_events = src
    kernel.add_timer_hook(src.run)
