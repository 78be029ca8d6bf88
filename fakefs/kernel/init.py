"""Booting the simulated kernel (init/main.c).

``Kernel.boot()`` parses the command line, then runs the initcalls of every
subsystem in order.  Subsystems register:

* command-line handlers (``kernel.early_param(name, fn)``),
* time hooks (``kernel.add_timer_hook(fn)``): ``fn(t0_ns, t1_ns)`` simulates
  what happened between two instants.  They run only when somebody observes
  the kernel (``catch_up``), so an idle mount costs nothing.
* machine watchers (``kernel.add_machine_watcher(fn)``): ``fn()`` says
  whether anything can see what the simulated machine does now (a tracer,
  an event, a probe, the profilers).  While none can, the machine stands
  still: only the timer hooks see time pass, and the machine starts again
  (every CPU idle, every task asleep) at the instant something looks.
* gap watchers (``kernel.add_gap_watcher(w)``): what of a long unobserved
  stretch (a *gap*) can still be seen.  ``catch_up`` simulates in full only
  that, and skips the rest (the machine starts again after it, skip hooks
  and watchers account for it in aggregate).  A watcher has
  ``gap_threshold()``, the shortest stretch it wants treated as a gap;
  ``gap_begins(gap)``; ``full_from(t, gap)``, the earliest instant at or
  after ``t`` from which it needs the kernel simulated in full
  (``gap.end``: nothing more); and ``gap_ends(gap)`` once the kernel has
  caught up.  Without watchers' needs only the last ``GAP_WINDOW_NS`` of a
  gap are simulated.

The mounted tree is one :class:`PseudoTree` laid out like a machine root:
``sys/kernel/tracing``, ``proc``, ``boot``.
"""

from __future__ import annotations

import importlib
import random

from .config import Kconfig, DEFAULT_PERSONA
from .fs.pseudo import PseudoTree
from .params import CommandLine
from .printk import LogBuffer
from .fork import Lifecycle
from .entry_common import SyscallEntry
from .irq import Interrupts
from .timer import JIFFY_NS, TimerWheel
from .workqueue import Workqueues
from .sched import Scheduler, host_cpu_count
from .time import Clock
from .tracepoint import Tracepoints
from .version import linux_banner

# (module, function) run in order at boot, like the initcall levels.
INITCALLS: list[tuple[str, str]] = [
    ("fakefs.kernel.printk", "devkmsg_init"),
    ("fakefs.kernel.kallsyms", "kallsyms_init"),
    ("fakefs.kernel.samples", "samples_init"),
    ("fakefs.kernel.ping", "ping_init"),
    ("fakefs.kernel.cpu", "cpu_dev_init"),
    ("fakefs.kernel.workload", "workload_init"),
    ("fakefs.kernel.kprobes", "kprobes_init"),
    ("fakefs.kernel.trace.trace_init", "tracer_init_tracefs"),
    ("fakefs.kernel.trace.ftrace_boot", "set_ftrace_early_filters"),
    ("fakefs.kernel.trace.ftrace_sysctl", "ftrace_sysctl_init"),
    ("fakefs.kernel.trace.trace_stack", "stack_trace_init"),
    ("fakefs.kernel.fs.proc.base", "proc_root_init"),
    ("fakefs.kernel.version", "proc_version_init"),
    ("fakefs.kernel.irq_proc", "proc_interrupts_init"),
    ("fakefs.kernel.sched_rt", "sched_rt_sysctl_init"),
    ("fakefs.kernel.mm.alloc_tag", "alloc_tag_init"),
    ("fakefs.kernel.mm.alloc_workload", "alloc_workload_init"),
    ("fakefs.kernel.profile", "profile_init"),
    ("fakefs.kernel.fs.proc.profile", "proc_profile_init"),
    ("fakefs.kernel.system_map", "system_map_init"),
    ("fakefs.kernel.mm.heap_stress", "heap_stress_init"),
]

# Simulated time handed to the timer hooks in one step, and the most a single
# observation will replay; older backlog is skipped (see ``catch_up``).
STEP_NS = 20_000_000
MAX_BACKLOG_NS = 30_000_000_000
# An unobserved stretch longer than this is a gap: the kernel simulates of it
# what its watchers need, and at least the last GAP_WINDOW_NS (allocations,
# profile ticks and the scheduler's state come from that part)
GAP_NS = 2_000_000_000
GAP_WINDOW_NS = 200_000_000
# Simulated time advances in whole milliseconds: requests arriving within
# the same millisecond find the kernel up to date and cost no simulation.
TICK_NS = 1_000_000
# A skip stops at what the machine must show (``driver.shown_before``: a
# followed real process's fork, exec or exit): from the tick it falls in,
# this much is simulated in full (its system call and what it starts), then
# the skip goes on
SHOWN_NS = 2 * TICK_NS


class Gap:
    """An unobserved stretch being caught up (see ``Kernel.catch_up``)."""

    __slots__ = ("start", "end", "full", "skipped", "skip_end", "resume", "shown_to")

    def __init__(self, start: int, end: int):
        self.start = start
        self.end = end
        self.full = 0           # ns simulated in full so far
        self.skipped = 0        # ns skipped so far
        self.skip_end = start   # where the last skip ended
        self.resume = 0         # a skip stopped at what must be shown goes on to here
        self.shown_to = 0       # after the stretch in full up to here


class Kernel:
    def __init__(self, persona: str = DEFAULT_PERSONA, cmdline: str = "", seed: int = 1,
                 config_overrides: dict | None = None, nr_cpus: int | None = None,
                 clock=None, host_kallsyms: bool = True):
        self.config = Kconfig.from_persona(persona, config_overrides)
        self.cmdline = CommandLine(cmdline)
        self.seed = seed
        self.rng = random.Random(seed)
        self.clock = clock or Clock()
        self.log = LogBuffer(self.clock)
        self.printk = self.log.printk
        self.nr_cpus = nr_cpus or host_cpu_count()
        self.tracepoints = Tracepoints()
        self.sched = Scheduler(self.nr_cpus, self.tracepoints)
        self.irq = Interrupts(self.sched, self.tracepoints)
        self.lifecycle = Lifecycle(self.sched, self.tracepoints)
        self.syscalls = SyscallEntry(self.tracepoints)
        self.timers = TimerWheel(self.sched, self.tracepoints, JIFFY_NS)
        self.workqueues = Workqueues(self.sched, self.tracepoints, self.nr_cpus)
        self.tree = PseudoTree()
        self.tree.kernel = self
        self.host_kallsyms = host_kallsyms
        self._params: dict = {}
        self._timer_hooks: list = []
        self._observers: list = []
        self._skip_hooks: list = []
        self._gap_watchers: list = []
        self._machine_watchers: list = []
        self._gap: Gap | None = None       # the gap being caught up
        self.sim_time = 0
        self.booted = False
        # the world that drives this kernel's code paths (fakefs.sim.Machine):
        # ``run(t0, t1)`` and ``skip(t0, t1)`` before the timer hooks see [t0, t1);
        # ``freeze(t)``/``thaw(t)`` while nothing sees it (``frozen``)
        self.driver = None
        # the host's view of a real process talking to the mount (its comm),
        # given by whoever serves the kernel; None: unknown
        self.host_comm = None
        # fn(pid) -> the start time of the real process ``pid`` (None: gone),
        # telling a reused pid from its earlier holder; None: unknown
        self.host_start = None
        # the real processes using the mount are tasks of the simulated
        # machine (their pids filter set_ftrace_pid): not yet
        self.host_tasks = False
        # values of boot parameters, by name, for the initcalls that use them
        # (``early_param`` handlers fill it: trace_buf_size, ftrace= ...)
        self.setup: dict[str, object] = {}
        self.tainted: set[str] = set()      # taint flags (P, O, E ...)
        # filled in by initcalls
        self.kallsyms = None
        self.workload = None
        self.tracing = None
        self.trace_activity = None
        self.kprobes = None               # kprobes.Kprobes (CONFIG_KPROBES)
        self.uprobes = None               # uprobes.Uprobes (CONFIG_UPROBE_EVENTS)
        # fn(pid, path) -> uprobes.HostFile: a file of the real machine as the
        # process ``pid`` sees ``path`` (KernelError with the lookup's errno),
        # given by whoever serves the kernel; None: the path as it is here
        self.host_file = None
        self.ftrace_sysctl = None         # trace.ftrace_sysctl.FtraceSysctl (CONFIG_FUNCTION_TRACER)
        self.stack_tracer = None          # trace.trace_stack.StackTracer (CONFIG_STACK_TRACER)
        self.profile = None
        self.alloc_tag = None
        self.alloc_workload = None
        self.page_alloc = None
        self.slab = None
        self.vmalloc = None
        self.percpu = None
        self.heap_stress = None
        self.modules = None               # module.Modules: the loader and what it loaded
        self.cpuhp = None                 # cpu.CpuHotplug: the CPUs online (cpu_dev_init)

    # --- registration -------------------------------------------------
    def early_param(self, name: str, fn) -> None:
        self._params[name] = fn

    def add_timer_hook(self, fn, skip=None, observer: bool = False) -> None:
        """``fn(t0, t1)`` simulates [t0, t1); an ``observer`` (tracing)
        records what the others did, so it runs after them."""
        (self._observers if observer else self._timer_hooks).append(fn)
        if skip is not None:
            self._skip_hooks.append(skip)

    def add_machine_watcher(self, fn) -> None:
        """``fn()``: can anything see what the machine does now?"""
        self._machine_watchers.append(fn)

    def machine_seen(self) -> bool:
        return any(fn() for fn in self._machine_watchers)

    def add_gap_watcher(self, w) -> None:
        """``w`` says what of an unobserved stretch can be seen (see above)."""
        self._gap_watchers.append(w)

    def subsystem_rng(self, name: str) -> random.Random:
        """A deterministic RNG per subsystem, derived from the boot seed."""
        return random.Random(f"{self.seed}:{name}")

    # --- boot -----------------------------------------------------------
    def boot(self, initcalls=None) -> "Kernel":
        self.printk(linux_banner(self).rstrip("\n"))
        self.printk("Command line: %s" % self.cmdline.text)
        fns = []
        for modname, fname in (INITCALLS if initcalls is None else initcalls):
            mod = importlib.import_module(modname)
            setup = getattr(mod, "register_params", None)
            if setup is not None:
                setup(self)
            fns.append(getattr(mod, fname))
        self.cmdline.parse(self._params, self.log.pr_notice)
        for fn in fns:
            fn(self)
        self.sim_time = self.clock.now_ns()
        self.booted = True
        return self

    # --- lazy time ------------------------------------------------------
    def now_ns(self) -> int:
        return self.clock.now_ns()

    def catch_up(self, max_steps: int = 8, until: int | None = None,
                 step_ns: int = STEP_NS) -> bool:
        """Simulate up to ``max_steps`` steps towards ``until`` (default: now).

        Returns True while more remains, so a caller on an event loop can
        yield between calls; a caller passes the instant its request came
        as ``until``, so that a machine simulated slower than real time is
        not chased for ever, and may take steps shorter than STEP_NS
        (``step_ns``) so that each call takes a short while.  Of a gap (more than GAP_NS since the kernel
        was last observed), only what can still be seen is simulated in
        full: what the gap watchers need, the last GAP_WINDOW_NS, and never
        more than MAX_BACKLOG_NS in all; the rest is skipped, the skip hooks
        and watchers accounting for it.  A gap, once begun, ends where it
        was meant to.
        """
        now = self.clock.now_ns() if until is None else until
        now -= now % TICK_NS
        # what can see the machine changes only with settings, which a
        # catch-up does not change unless something sees it
        seen = self.machine_seen() if self.driver is not None else None
        # (unseen, nothing records: no gap watcher asks for less than GAP_NS)
        for _ in range(max_steps):
            gap = self._gap
            if gap is None:
                if self.sim_time >= now:
                    break
                if now - self.sim_time <= (GAP_NS if seen is False else self.gap_threshold()):
                    self._step(min(now, self.sim_time + step_ns), seen)
                    continue
                gap = self._gap = Gap(self.sim_time, now)
                for w in self._gap_watchers:
                    w.gap_begins(gap)
            h = self._full_from(gap)
            if h > self.sim_time:
                gap.skipped += h - self.sim_time
                gap.skip_end = h
                self._skip(h)
            else:
                t1 = min(gap.end, self.sim_time + step_ns)
                if gap.resume:
                    t1 = min(t1, gap.shown_to)
                gap.full += t1 - self.sim_time
                self._step(t1, seen)
            if self.sim_time >= gap.end:
                self._end_gap(gap)
        return self._gap is not None or self.sim_time < now

    def _end_gap(self, gap: Gap) -> None:
        self._gap = None
        for w in self._gap_watchers:
            w.gap_ends(gap)

    def next_boundary(self) -> int | None:
        """Where, in the gap under way, what a step costs changes (the
        window a gap watcher keeps begins: before it the machine runs and
        nothing is recorded), or None."""
        if self._gap is None:
            return None
        t = self.sim_time
        ends = [b for b in (w.boundary() for w in self._gap_watchers) if b is not None and b > t]
        return min(ends) if ends else None

    @property
    def gap(self) -> Gap | None:
        """The gap being caught up, if any."""
        return self._gap

    def gap_threshold(self) -> int:
        """How long an unobserved stretch must be to be caught up as a gap:
        GAP_NS, or less if a watcher asks (costly tracing)."""
        return min([GAP_NS] + [w.gap_threshold() for w in self._gap_watchers])

    def _full_from(self, gap: Gap) -> int:
        """Where the full simulation of the gap must go on from: what the
        watchers need, stopped at what the machine must show
        (``_shown_first``)."""
        t = self.sim_time
        h = self._wanted_from(gap)
        if gap.resume:                       # a skip stopped for what must be shown
            if t < gap.shown_to:
                return t
            h, gap.resume = max(h, gap.resume), 0
        return self._shown_first(gap, h)

    def _shown_first(self, gap: Gap, h: int) -> int:
        """A skip to ``h`` stops at the tick of the first thing the machine
        must show before it (``driver.shown_before``: what a followed real
        process did can be traced, and nothing would count it): SHOWN_NS
        from there are simulated in full, then the skip goes on to ``h``."""
        t = self.sim_time
        if h <= t or self.driver is None:
            return h
        w = self.driver.shown_before(h)
        if w is None:
            return h
        stop = max(t, w - w % TICK_NS)
        if stop + SHOWN_NS < h:
            gap.resume, gap.shown_to = h, stop + SHOWN_NS
        return stop

    def _wanted_from(self, gap: Gap) -> int:
        """Where the watchers want the full simulation to go on from."""
        t, end = self.sim_time, gap.end
        if gap.full >= MAX_BACKLOG_NS:
            return end                       # enough replayed: the rest is skipped
        h = min([end - GAP_WINDOW_NS] + [w.full_from(t, gap) for w in self._gap_watchers])
        if h > t:
            # a skip: what follows it in full fits in what is left of the cap
            # (a watcher that needs the kernel now, measuring at the gap's
            # start, is not skipped past: MAX_BACKLOG_NS above ends it)
            h = max(h, end - MAX_BACKLOG_NS + gap.full)
        return max(t, h - h % TICK_NS)

    def _skip(self, t1: int) -> None:
        """Nobody can see [sim_time, t1): the machine starts again at ``t1``."""
        t0 = self.sim_time
        if self.driver is not None and not self.driver.frozen:
            self.driver.skip(t0, t1)
        for fn in self._skip_hooks:
            fn(t0, t1)
        self.sim_time = t1

    def _step(self, t1: int, seen: bool | None = None) -> None:
        """Simulate [sim_time, t1): the machine, then the timer hooks
        (``seen``: ``machine_seen()``, when the caller knows it)."""
        self.sched.forget_before(self.sim_time)
        driver = self.driver
        if driver is not None:
            if self.machine_seen() if seen is None else seen:
                if driver.frozen:
                    driver.thaw(self.sim_time)
                driver.run(self.sim_time, t1)
            elif not driver.frozen:
                driver.freeze(self.sim_time)
        for fn in self._timer_hooks:
            fn(self.sim_time, t1)
        if driver is None or not driver.frozen:
            for fn in self._observers:
                fn(self.sim_time, t1)
        self.sim_time = t1

    def advance_to(self, t: int) -> None:
        """Simulate up to the instant ``t`` (not rounded to a tick): what a
        system call made now must come after, in every CPU's timeline."""
        while self.sim_time < t:
            self._step(min(t, self.sim_time + STEP_NS))

    def run_until_now(self) -> None:
        """Catch up with the instant of the call."""
        until = self.clock.now_ns()
        while self.catch_up(1 << 30, until):
            pass
