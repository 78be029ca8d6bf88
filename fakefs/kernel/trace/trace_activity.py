"""What the simulated CPUs do while somebody traces them.

One time hook drives every source of ring-buffer entries, so that each
CPU's entries are written in timestamp order: traced function calls (while
an array runs the function tracer) and tracepoint hits (for enabled events).
Rates are per CPU per second; occurrences are spread over the interval being
caught up.  Stacks come from the workload: ``sample()`` for function calls,
``stacks_for_event(kind)`` for tracepoints.  After an entry, a stack is
recorded when the array asks for one (``stacktrace``, or the function
tracer's ``func_stack_trace``), through the stackmap when it is on.
"""

from __future__ import annotations

from . import trace_entries as te

FN_RATE_DEFAULT = 4000
SWITCH_RATE = 300          # context switches per second per CPU
SWITCH = object()          # an unrecorded context switch

HARDIRQ_FUNCS = frozenset({
    "__sysvec_apic_timer_interrupt", "sysvec_apic_timer_interrupt", "hrtimer_interrupt",
    "handle_irq_event", "__handle_irq_event_percpu", "common_interrupt", "__common_interrupt",
    "sysvec_call_function_single", "__sysvec_call_function_single", "__sysvec_call_function",
    "__sysvec_irq_work", "sysvec_reschedule_ipi"})
SOFTIRQ_FUNCS = frozenset({
    "__do_softirq", "handle_softirqs", "net_rx_action", "rcu_core", "run_timer_softirq",
    "irq_exit_rcu"})


class TraceActivity:
    def __init__(self, kernel):
        self.kernel = kernel
        self.fn_rate = getattr(kernel, "_fn_rate", FN_RATE_DEFAULT)
        self.rng = kernel.subsystem_rng("trace-activity")
        self.carry: dict[tuple, float] = {}
        self._flags_cache: dict[tuple, tuple[int, int]] = {}
        self._addr_ctx: dict[int, int] = {}
        self.tasks: list = []

    # --- context flags ------------------------------------------------------
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
            # the innermost interrupt-entry frame tells the context: a softirq
            # run on irq exit is softirq context even under the hardirq frames
            ctx = next((c for c in map(self._frame_context, stack) if c), 0)
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

    # --- the hook -------------------------------------------------------------
    def _count(self, key, rate: float, dt: float) -> int:
        want = self.carry.get(key, 0.0) + rate * dt
        n = int(want)
        self.carry[key] = want - n
        return n

    def run(self, t0: int, t1: int) -> None:
        tracing = self.kernel.tracing
        live = [tr for tr in tracing.arrays() if tr.tracing_is_on()]
        fn_trs = [tr for tr in live if tr.current.name == "function" and tr.flag("function-trace")]
        ev_trs = [tr for tr in live if tr.enabled_events]
        if not fn_trs and not ev_trs:
            return
        events = set()
        for tr in ev_trs:
            events |= tr.enabled_events
        events = sorted(events, key=lambda e: e.id)
        wl = self.kernel.workload
        if events:
            self.tasks = wl.tasks()
        rng = self.rng
        dt = (t1 - t0) / 1e9
        span = t1 - t0
        for cpu in range(self.kernel.nr_cpus):
            occ = []
            if fn_trs:
                n = self._count((cpu, None), self.fn_rate, dt)
                occ += [(t0 + int(rng.random() * span), 0, None) for _ in range(n)]
            for ev in events:
                n = self._count((cpu, ev.id), ev.rate, dt)
                occ += [(t0 + int(rng.random() * span), ev.id, ev) for _ in range(n)]
            if events and not fn_trs and not any(ev.kind == "sched_switch" for ev in events):
                # nothing else moves the CPUs from task to task: let the
                # scheduler run unrecorded so the traced events keep coming
                # from changing tasks
                n = self._count((cpu, "switch"), SWITCH_RATE, dt)
                occ += [(t0 + int(rng.random() * span), -1, SWITCH) for _ in range(n)]
            if not occ:
                continue
            occ.sort(key=lambda o: (o[0], o[1]))
            ftrs = [tr for tr in fn_trs if tr.cpumask >> cpu & 1]
            for ts, _id, ev in occ:
                if ev is None:
                    self._function_call(ftrs, wl, rng, cpu, ts)
                elif ev is SWITCH:
                    wl.stacks_for_event(rng, cpu, "sched_switch")
                else:
                    self._tracepoint(ev, ev_trs, wl, rng, cpu, ts)

    def _function_call(self, trs, wl, rng, cpu, ts) -> None:
        if not trs:
            return
        task, stack = wl.sample(rng, cpu)
        flags, pc = self.context_flags(stack)
        pid = task.pid
        ip = wl.function_ip(stack)
        entry = (ts, te.TRACE_FN, pid, flags, pc, ip, stack[1] if len(stack) > 1 else 0)
        for tr in trs:
            ops = tr.ftrace_ops
            if ops is not None and not ops.match(ip, pid):
                continue
            if tr.write_entry(cpu, entry, te.FN_PAYLOAD) and (
                    tr.flag("stacktrace") or tr.current.opts.get("func_stack_trace")):
                tr.trace_stack(cpu, ts, pid, flags, pc, stack)
            if ops is not None:
                ops.after_call(tr, cpu, ts, ip, stack)

    def _tracepoint(self, ev, trs, wl, rng, cpu, ts) -> None:
        trs = [tr for tr in trs if ev in tr.enabled_events and tr.cpumask >> cpu & 1]
        if not trs:
            return
        try:
            task, stack = wl.stacks_for_event(rng, cpu, ev.kind)
        except ValueError:
            task, stack = wl.sample(rng, cpu)
        flags, pc = self.context_flags(stack)
        args = ev.make(rng, cpu, task, stack, self)
        entry = (ts, ev.id, task.pid, flags, pc, args, None)
        for tr in trs:
            flt = tr.event_filters.get(ev)
            if flt is not None and not flt(entry):
                continue
            if tr.write_entry(cpu, entry, ev.payload) and tr.flag("stacktrace"):
                tr.trace_stack(cpu, ts, task.pid, flags, pc, stack)


def register_trace_activity(kernel) -> None:
    act = TraceActivity(kernel)
    kernel.trace_activity = act
    kernel.add_timer_hook(act.run)
