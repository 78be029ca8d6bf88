"""Booting the simulated kernel (init/main.c).

``Kernel.boot()`` parses the command line, then runs the initcalls of every
subsystem in order.  Some places among them are the machine's (``MACHINE``):
what runs on its CPUs (the code the tasks go through, and the tasks:
``workload_init``), which the initcalls after it find as
``kernel.workload``, and what its running system holds once the allocators
are up (``alloc_steady_init``); whoever boots the kernel on a machine gives
its module (``boot(machine=...)``: fakefs.sim.machine_init), and without
one the kernel has neither.
Subsystems register:

* command-line handlers (``kernel.early_param(name, fn)``),
* time hooks (``kernel.add_timer_hook(fn)``): ``fn(t0_ns, t1_ns)`` simulates
  what happened between two instants.  They run only when somebody observes
  the kernel and moves it on (``fakefs.sim.timekeeper``: the kernel never
  moves itself), so an idle mount costs nothing.
* machine watchers (``kernel.add_machine_watcher(fn)``): ``fn()`` says
  whether anything can see what the simulated machine does now (a tracer,
  an event, a probe, the profilers).  While none can, the machine stands
  still: only the timer hooks see time pass, and the machine starts again
  (every CPU idle, every task asleep) at the instant something looks.
* gap watchers (``kernel.add_gap_watcher(w)``): what of a long unobserved
  stretch (a *gap*) can still be seen.  The timekeeper simulates in full only
  that, and skips the rest (the machine starts again after it, skip hooks
  and watchers account for it in aggregate).  A watcher has
  ``gap_threshold()``, the shortest stretch it wants treated as a gap;
  ``gap_begins(gap)``; ``full_from(t, gap)``, the earliest instant at or
  after ``t`` from which it needs the kernel simulated in full
  (``gap.end``: nothing more); and ``gap_ends(gap)`` once the kernel has
  caught up.  Without watchers' needs only the last ``GAP_WINDOW_NS`` of a
  gap are simulated.

The kernel reads no clock: ``kernel.now`` is the instant its caller gives
(a request's, a step's), ``kernel.sim_time`` the instant its machine has
been simulated to.

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
from .tracepoint import Tracepoints
from .version import linux_banner

# The machine's place among the initcalls (its module: ``boot(machine=)``).
MACHINE = "<machine>"

# the allocators' (CONFIG_MEM_ALLOC_PROFILING): the tags, boot's state,
# the machine's running state, the running system's settings
ALLOC_INITCALLS = [
    ("fakefs.kernel.mm.alloc_tag", "alloc_tag_init"),
    ("fakefs.kernel.mm.alloc_boot", "alloc_boot_init"),
    (MACHINE, "alloc_steady_init"),
    ("fakefs.kernel.mm.alloc_boot", "alloc_late_init"),
]

# (module, function) run in order at boot, like the initcall levels.
INITCALLS: list[tuple[str, str]] = [
    ("fakefs.kernel.printk", "devkmsg_init"),
    ("fakefs.kernel.kallsyms", "kallsyms_init"),
    ("fakefs.kernel.samples", "samples_init"),
    ("fakefs.kernel.ping", "ping_init"),
    ("fakefs.kernel.cpu", "cpu_dev_init"),
    (MACHINE, "workload_init"),
    ("fakefs.kernel.kprobes", "kprobes_init"),
    ("fakefs.kernel.trace.trace_init", "tracer_init_tracefs"),
    ("fakefs.kernel.trace.ftrace_boot", "set_ftrace_early_filters"),
    ("fakefs.kernel.trace.ftrace_sysctl", "ftrace_sysctl_init"),
    ("fakefs.kernel.trace.trace_stack", "stack_trace_init"),
    ("fakefs.kernel.fs.proc.base", "proc_root_init"),
    ("fakefs.kernel.version", "proc_version_init"),
    ("fakefs.kernel.irq_proc", "proc_interrupts_init"),
    ("fakefs.kernel.sched_rt", "sched_rt_sysctl_init"),
    *ALLOC_INITCALLS,
    ("fakefs.kernel.profile", "profile_init"),
    ("fakefs.kernel.fs.proc.profile", "proc_profile_init"),
    ("fakefs.kernel.system_map", "system_map_init"),
    ("fakefs.kernel.mm.heap_stress", "heap_stress_init"),
]

class Kernel:
    def __init__(self, persona: str = DEFAULT_PERSONA, cmdline: str = "", seed: int = 1,
                 config_overrides: dict | None = None, nr_cpus: int | None = None,
                 clock=None, host_kallsyms: bool = True):
        self.config = Kconfig.from_persona(persona, config_overrides)
        self.cmdline = CommandLine(cmdline)
        self.seed = seed
        self.rng = random.Random(seed)
        if clock is None:
            raise TypeError("a Kernel is given its clock (fakefs.sim.clock): its callers read it")
        self.clock = clock
        # the instant the kernel is at, given by its caller: the request being
        # served (fakefs.fuse, fakefs.sim.files), the machine's step being
        # simulated (fakefs.sim.timekeeper); the kernel reads no clock
        self.now = 0
        self.log = LogBuffer(self)
        self.printk = self.log.printk
        self.nr_cpus = nr_cpus or host_cpu_count()
        self.tracepoints = Tracepoints()
        self.sched = Scheduler(self.nr_cpus, self.tracepoints)
        self.irq = Interrupts(self.sched, self.tracepoints)
        self.lifecycle = Lifecycle(self.sched, self.tracepoints)
        self.syscalls = SyscallEntry(self.tracepoints)
        self.timers = TimerWheel(self.sched, self.tracepoints, JIFFY_NS)
        self.workqueues = Workqueues(self.sched, self.tracepoints, self.nr_cpus)
        self.tree = PseudoTree(kernel=self)
        self.host_kallsyms = host_kallsyms
        self._params: dict = {}
        # what depends on time (see above); read by what moves it
        self.timer_hooks: list = []
        self.observers: list = []
        self.skip_hooks: list = []
        self.gap_watchers: list = []
        self._machine_watchers: list = []
        # the instant the kernel has been simulated to, and whoever moves it
        # (fakefs.sim.timekeeper.Timekeeper: the kernel never moves itself)
        self.sim_time = 0
        self.timekeeper = None
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
        self.trace_hits = None            # trace.trace_hits.TraceHits: the probes on the machine
        # the machine's calls and events, traced (fakefs.sim.trace_activity)
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
        self.alloc_calls = None           # mm.alloc_calls.AllocCalls (CONFIG_MEM_ALLOC_PROFILING)
        # what the machine allocates at run time (fakefs.sim.alloc_workload)
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
        (self.observers if observer else self.timer_hooks).append(fn)
        if skip is not None:
            self.skip_hooks.append(skip)

    def add_machine_watcher(self, fn) -> None:
        """``fn()``: can anything see what the machine does now?"""
        self._machine_watchers.append(fn)

    def machine_seen(self) -> bool:
        return any(fn() for fn in self._machine_watchers)

    def add_gap_watcher(self, w) -> None:
        """``w`` says what of an unobserved stretch can be seen (see above)."""
        self.gap_watchers.append(w)

    def subsystem_rng(self, name: str) -> random.Random:
        """A deterministic RNG per subsystem, derived from the boot seed."""
        return random.Random(f"{self.seed}:{name}")

    # --- boot -----------------------------------------------------------
    def boot(self, initcalls=None, machine=None) -> "Kernel":
        """The initcalls (``initcalls``: those only), the machine's
        (``MACHINE``) from the module ``machine`` (None: none)."""
        self.printk(linux_banner(self).rstrip("\n"))
        self.printk("Command line: %s" % self.cmdline.text)
        fns = []
        registered = set()            # (a module's parameters once, however many initcalls it has)
        for modname, fname in (INITCALLS if initcalls is None else initcalls):
            if modname == MACHINE:
                if machine is None:
                    continue
                mod = machine
            else:
                mod = importlib.import_module(modname)
            setup = getattr(mod, "register_params", None)
            if setup is not None and id(mod) not in registered:
                registered.add(id(mod))
                setup(self)
            fns.append(getattr(mod, fname))
        self.cmdline.parse(self._params, self.log.pr_notice)
        for fn in fns:
            fn(self)
        self.booted = True
        return self
