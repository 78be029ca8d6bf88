"""Interrupts: hard irqs, softirqs, the local timer and IPIs (kernel/irq/handle.c,
kernel/softirq.c, kernel/time/hrtimer.c, arch/x86/kernel/apic, smp.c).

The machine raises an interrupt on a CPU at an instant; these paths run it
as the kernel does and fire the tracepoints in order, each a microsecond or
so after the previous one, with the context the kernel has there (measured
on a stock kernel: ``d.h..`` in the handlers, ``d.h1.`` for ``hrtimer_start``
under the hrtimer base lock, ``..s..`` in softirqs):

* ``device_irq_begin`` / ``softirq_end``: ``irq_handler_entry/exit``, the
  softirq it raises, then on the way out the softirq (``softirq_entry/exit``),
  where the wakeup it brings happens, between the two halves;
* ``hrtimer_sleep``: a task going to sleep until an instant arms its
  on-stack hrtimer (``hrtimer_init``, ``hrtimer_start`` of ``hrtimer_wakeup``,
  ``d..1.``); ``hrtimer_cancel``: one woken before takes it off (``d..1.``);
* ``timer_begin`` / ``timer_end``: ``local_timer_entry``, a sleeper's
  hrtimer (``hrtimer_expire_entry`` of ``hrtimer_wakeup``; the wakeup happens
  between the halves), ``hrtimer_expire_exit``, ``local_timer_exit``;
* ``tick``: the tick's hrtimer, re-armed (``hrtimer_start``), and the TIMER
  softirq, where the timer wheel's timers run (the caller runs them and
  ends the softirq: ``softirq_end``), then the RCU softirq if raised;
* ``reschedule_ipi``: ``reschedule_entry/exit`` on the CPU another one woke a
  task for.

A halted CPU leaves idle first (``cpu_idle`` exit).  Each path returns the
instant it ends (or, for a first half, the instant of the wakeup: the caller
runs the wakeup then, so that other CPUs see it when it happens).
"""

from __future__ import annotations

from .sched import HARDIRQ, IRQS_OFF, SOFTIRQ, task_stack

# the functions an interrupt enters by: a stack through one of the first is
# in hard-irq context, through one of the second (and none of the first
# below it) in softirq context; code that may sleep never runs under them
HARDIRQ_FUNCS = frozenset({
    "__sysvec_apic_timer_interrupt", "sysvec_apic_timer_interrupt", "hrtimer_interrupt",
    "handle_irq_event", "__handle_irq_event_percpu", "common_interrupt", "__common_interrupt",
    "sysvec_call_function_single", "__sysvec_call_function_single", "__sysvec_call_function",
    "__sysvec_irq_work", "sysvec_reschedule_ipi"})
SOFTIRQ_FUNCS = frozenset({
    "__do_softirq", "handle_softirqs", "net_rx_action", "rcu_core", "run_timer_softirq",
    "irq_exit_rcu"})
INTERRUPT_FUNCS = HARDIRQ_FUNCS | SOFTIRQ_FUNCS

US = 1000
LOCAL_TIMER_VECTOR = 236
RESCHEDULE_VECTOR = 253
HRTIMER_MODE_ABS = 0              # the tick is re-armed with hrtimer_forward(): ABS
SOFTIRQ_TIMER = 1
SOFTIRQ_RCU = 9
HARD = IRQS_OFF | HARDIRQ
# per-CPU tick_sched hrtimers and a sleeper's hrtimer_sleeper, as kernel addresses
TICK_HRTIMER_BASE = 0xffff88807dc1e4c0
SLEEPER_HRTIMER_OFF = 0x3d68      # a sleeper's hrtimer on its kernel stack
HRTIMER_MODE_REL = 1
CLOCK_MONOTONIC = 1
TIMER_SLACK_NS = 50_000           # a normal task's default timer slack
CPU_AREA = 0x40000


def sleeper_hrtimer(pid: int) -> int:
    """Where the ``hrtimer_sleeper`` of task ``pid`` is (on its stack)."""
    return task_stack(pid) + SLEEPER_HRTIMER_OFF


class Interrupts:
    def __init__(self, sched, tracepoints):
        self.sched = sched
        # what /proc/interrupts counts (irq_proc.py): per device line (its
        # irq: request_irq()'s row), local timer and rescheduling IPIs per CPU
        nr = sched.nr_cpus
        self.lines: dict[int, list] = {}
        self.loc = [0] * nr
        self.res = [0] * nr
        tp = tracepoints.get
        self.tp_irq_entry = tp("irq_handler_entry")
        self.tp_irq_exit = tp("irq_handler_exit")
        self.tp_softirq_raise = tp("softirq_raise")
        self.tp_softirq_entry = tp("softirq_entry")
        self.tp_softirq_exit = tp("softirq_exit")
        self.tp_timer_entry = tp("local_timer_entry")
        self.tp_timer_exit = tp("local_timer_exit")
        self.tp_hrtimer_expire_entry = tp("hrtimer_expire_entry")
        self.tp_hrtimer_expire_exit = tp("hrtimer_expire_exit")
        self.tp_hrtimer_init = tp("hrtimer_init")
        self.tp_hrtimer_start = tp("hrtimer_start")
        self.tp_hrtimer_cancel = tp("hrtimer_cancel")
        self.tp_resched_entry = tp("reschedule_entry")
        self.tp_resched_exit = tp("reschedule_exit")
        self.tp_ipi_send_cpu = tp("ipi_send_cpu")
        self.tick_fn = 0           # addresses of tick_nohz_handler, hrtimer_wakeup ...
        self.wakeup_fn = 0
        self.resched_site = 0

    def set_symbols(self, kallsyms) -> None:
        """Where the functions the events name are in this boot."""
        addr = kallsyms.addr_of
        self.tick_fn = addr("tick_nohz_handler") or addr("tick_sched_timer") or 0
        self.wakeup_fn = addr("hrtimer_wakeup") or 0
        site = addr("resched_curr")
        if site:                       # the call of smp_send_reschedule() in it
            hit = kallsyms.lookup(site)
            site += (hit[2] * 3 // 4) & ~3 if hit else 0
        self.resched_site = site or 0

    def request_irq(self, irq: int, name: str, chip: str = "-", hwirq: int = 0) -> list:
        """A device's handler on line ``irq`` (``request_irq()``; its
        interrupt chip and number there): its /proc/interrupts row,
        [name, count per CPU, chip, hwirq]."""
        line = self.lines.get(irq)
        if line is None:
            line = self.lines[irq] = [name, [0] * len(self.loc), chip, hwirq]
        return line

    # --- the paths -----------------------------------------------------------
    def device_irq_begin(self, cpu: int, t: int, irq: int, name: str, vec: int) -> int:
        """A device interrupt up to its softirq's work: returns the instant
        the softirq handler does it (``softirq_end`` goes on from there)."""
        self.request_irq(irq, name)[1][cpu] += 1
        self.sched.idle_exit(cpu, t)
        self.sched.fire(self.tp_irq_entry, cpu, t, HARD, 0, (irq, name))
        t += 2 * US
        self.sched.fire(self.tp_irq_exit, cpu, t, HARD, 0, (irq, 1))
        self.sched.fire(self.tp_softirq_raise, cpu, t, HARD, 0, (vec,))
        t += US
        self.sched.fire(self.tp_softirq_entry, cpu, t, SOFTIRQ, 0, (vec,))
        return t + 3 * US

    def softirq_end(self, cpu: int, t: int, vec: int) -> int:
        t += 2 * US
        self.sched.fire(self.tp_softirq_exit, cpu, t, SOFTIRQ, 0, (vec,))
        return t + US

    def hrtimer_sleep(self, cpu: int, t: int, pid: int, wake: int) -> None:
        """Task ``pid`` sleeps until ``wake`` (``schedule_hrtimeout_range()``,
        ``nanosleep``): its hrtimer on its stack is set up (a stock kernel
        has no debug objects for timers: ``hrtimer_init_sleeper()`` traces
        it) and armed with the default slack."""
        self.sched.fire(self.tp_hrtimer_init, cpu, t, 0, 0,
                        (sleeper_hrtimer(pid), CLOCK_MONOTONIC, HRTIMER_MODE_REL))
        self.sched.fire(self.tp_hrtimer_start, cpu, t, IRQS_OFF, 1,
                   (sleeper_hrtimer(pid), self.wakeup_fn, wake, wake - TIMER_SLACK_NS,
                    HRTIMER_MODE_REL, False))            # (was_armed: a bool)

    def hrtimer_cancel(self, cpu: int, t: int, pid: int) -> None:
        """Task ``pid``, woken before its sleep's timeout, takes its hrtimer
        off the queue (``hrtimer_cancel()`` at the end of
        ``schedule_hrtimeout_range()``, under the base lock)."""
        self.sched.fire(self.tp_hrtimer_cancel, cpu, t, IRQS_OFF, 1, (sleeper_hrtimer(pid),))

    def timer_begin(self, cpu: int, t: int, pid: int) -> int:
        """The hrtimer of sleeper ``pid`` fires: returns the instant
        ``hrtimer_wakeup`` wakes it (``timer_end`` goes on from there)."""
        self.loc[cpu] += 1
        self.sched.idle_exit(cpu, t)
        self.sched.fire(self.tp_timer_entry, cpu, t, HARD, 0, (LOCAL_TIMER_VECTOR,))
        t += US
        self.sched.fire(self.tp_hrtimer_expire_entry, cpu, t, HARD, 0,
                   (sleeper_hrtimer(pid), t, self.wakeup_fn))
        return t

    def timer_end(self, cpu: int, t: int, pid: int) -> int:
        t += 2 * US
        self.sched.fire(self.tp_hrtimer_expire_exit, cpu, t, HARD, 0, (sleeper_hrtimer(pid),))
        self.sched.fire(self.tp_timer_exit, cpu, t + US, HARD, 0, (LOCAL_TIMER_VECTOR,))
        return t + 2 * US

    def tick(self, cpu: int, t: int, tick_period: int, rcu: bool = False) -> int:
        """The scheduler tick: its hrtimer, ``scheduler_tick()``, re-armed
        for the next period, then the TIMER softirq: returns the instant the
        softirq runs the wheel's expired timers (``softirq_end`` ends it).
        With ``rcu`` (callbacks whose grace period ended wait on this CPU)
        the tick raises the RCU softirq too, which runs after TIMER's
        (``softirq_begin``)."""
        self.loc[cpu] += 1
        self.sched.idle_exit(cpu, t)
        self.sched.fire(self.tp_timer_entry, cpu, t, HARD, 0, (LOCAL_TIMER_VECTOR,))
        t += US
        timer = TICK_HRTIMER_BASE + cpu * CPU_AREA
        self.sched.fire(self.tp_hrtimer_expire_entry, cpu, t, HARD, 0, (timer, t, self.tick_fn))
        self.sched.scheduler_tick(cpu, t)
        self.sched.fire(self.tp_softirq_raise, cpu, t, HARD, 0, (SOFTIRQ_TIMER,))
        if rcu:
            self.sched.fire(self.tp_softirq_raise, cpu, t, HARD, 0, (SOFTIRQ_RCU,))
        t += 2 * US
        self.sched.fire(self.tp_hrtimer_expire_exit, cpu, t, HARD, 0, (timer,))
        expires = (t // tick_period + 1) * tick_period
        self.sched.fire(self.tp_hrtimer_start, cpu, t, HARD, 1,
                   (timer, self.tick_fn, expires, expires, HRTIMER_MODE_ABS, False))
        t += US
        self.sched.fire(self.tp_timer_exit, cpu, t, HARD, 0, (LOCAL_TIMER_VECTOR,))
        t += US
        self.sched.fire(self.tp_softirq_entry, cpu, t, SOFTIRQ, 0, (SOFTIRQ_TIMER,))
        return t + US

    def softirq_begin(self, cpu: int, t: int, vec: int) -> int:
        """The next raised softirq of the same ``__do_softirq()`` run."""
        self.sched.fire(self.tp_softirq_entry, cpu, t, SOFTIRQ, 0, (vec,))
        return t + US

    def send_reschedule(self, cpu: int, t: int, target: int, ctx) -> None:
        """``resched_curr()`` of a remote CPU: the IPI leaves from ``cpu``."""
        base, depth = ctx
        self.sched.fire(self.tp_ipi_send_cpu, cpu, t, base, depth + 1,
                   (target, self.resched_site, 0))

    def reschedule_ipi(self, cpu: int, t: int) -> int:
        self.res[cpu] += 1
        self.sched.idle_exit(cpu, t)
        self.sched.fire(self.tp_resched_entry, cpu, t, HARD, 0, (RESCHEDULE_VECTOR,))
        t += US
        self.sched.fire(self.tp_resched_exit, cpu, t, HARD, 0, (RESCHEDULE_VECTOR,))
        return t + US
