"""The simulated machine: CPUs, their interrupt sources and the tasks' behaviour.

This is the world outside the kernel model.  It decides *when* things happen
— a task's burst of CPU time ends and it blocks, a timer or a device
interrupt wakes a task, the scheduler tick finds a slice used up — and drives
the kernel's own code paths for them (``Scheduler.schedule``,
``try_to_wake_up``, ``scheduler_tick`` in ``fakefs/kernel/sched.py``), which
fire the tracepoints.

Events are handled in global time order (one heap for all CPUs), and every
CPU's clock only moves forward, so each CPU's timeline is consistent: the
task a switch takes off a CPU is the one the previous switch put there, a
task runs on one CPU at a time, only sleeping tasks are woken, and a task
that went to sleep is woken before it runs again.

How tasks behave is data (``data/machine.toml``): per workload profile a
mean burst of CPU time, the sleep state, a mean sleep and what wakes it.
The machine runs lazily: ``run(t0, t1)`` handles what falls in [t0, t1),
called by the kernel's catch-up when somebody observes.
"""

from __future__ import annotations

import heapq
import os
import tomllib

from ..kernel.sched import CTX_HARDIRQ, CTX_SOFTIRQ, CTX_TASK

DATA_PATH = os.path.join(os.path.dirname(__file__), "data", "machine.toml")
US = 1000

_END, _WAKE, _RESCHED, _TICK, _IPI, _CONT = 0, 1, 2, 3, 4, 5
_TIMER_WAKE = -1           # a _CONT in an hrtimer (else: the softirq vector)
_WAKERS = ("timer", "irq", "task")


def load_behaviour(path: str = DATA_PATH) -> dict:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


class Behaviour:
    """How the tasks of one profile run and sleep."""

    __slots__ = ("burst_ns", "sleep_ns", "state", "waker", "cpu_bound", "fork", "programs")

    def __init__(self, spec: dict):
        self.burst_ns = int(spec["burst_us"] * US)
        self.sleep_ns = int(spec["sleep_us"] * US)
        self.state = spec["state"]
        self.waker = spec["waker"]
        self.cpu_bound = bool(spec.get("cpu_bound", False))
        self.fork = float(spec.get("fork", 0.0))      # share of bursts ending in fork + wait
        self.programs = list(spec.get("programs", ()))
        if self.state not in ("S", "D", "I") or self.waker not in _WAKERS:
            raise ValueError("bad behaviour %r" % (spec,))


class Device:
    """An interrupt source: its irq line and name, the softirq it raises."""

    __slots__ = ("irq", "name", "softirq")

    def __init__(self, spec: dict):
        self.irq = int(spec["irq"])
        self.name = spec["name"]
        self.softirq = int(spec["softirq"])


class _Run:
    """Machine-side state of one task: what is left of its burst.  A task
    of the real machine (``host``) is only woken by its own system calls."""

    __slots__ = ("task", "beh", "left", "since", "token", "host", "parent", "program",
                 "sigchld")

    def __init__(self, task, beh, host: bool = False, parent: int = 0, program: str = ""):
        self.task = task
        self.beh = beh
        self.left = 0
        self.since = 0
        self.token = 0
        self.host = host
        self.parent = parent          # a forked child: it exits after its burst
        self.program = program        # ... and execs this first
        self.sigchld = False          # a child exited: SIGCHLD to take


class Machine:
    def __init__(self, kernel, spec: dict | None = None):
        spec = spec or load_behaviour()
        self.kernel = kernel
        self.sched = kernel.sched
        m = spec["machine"]
        self.tick_ns = 1_000_000_000 // int(m["hz"])
        self.ipi_ns = int(m["ipi_latency_us"] * US)
        self.switch_ns = int(m["switch_latency_us"] * US)
        profiles = {name: Behaviour(p) for name, p in spec["profile"].items()}
        self.host_behaviour = profiles["host"]
        self.child_behaviour = profiles["child"]
        self.life = kernel.lifecycle
        self.irq = kernel.irq
        self.irq.set_symbols(kernel.kallsyms)

        devs = {d["wakes"]: Device(d) for d in spec["device"]}
        self.devices = (devs["S"], devs["D"])     # network for S sleepers, disk for D
        self.rng = kernel.subsystem_rng("machine")
        # where user space's SIGCHLD handler is (a shell's), as signal_deliver shows it
        self.sigchld_handler = 0x55ff206a4e40 + (self.rng.randrange(1 << 20) << 12)
        self.clock = [0] * self.sched.nr_cpus       # each CPU's last event
        self.heap: list = []
        self.seq = 0
        self.runs: dict[int, _Run] = {}
        self.time = 0
        wl = kernel.workload
        for task in sorted(self.sched.tasks.values(), key=lambda t: t.pid):
            prof = wl.profile_of(task.pid) if wl is not None else None
            beh = profiles.get(prof or "default", profiles["default"])
            self.runs[task.pid] = _Run(task, beh)

    # --- set-up -------------------------------------------------------------
    def start(self, t: int) -> None:
        """Every task asleep where it waits, every CPU idle, at ``t``."""
        self.heap.clear()
        self.time = t
        sched = self.sched
        for cpu in range(sched.nr_cpus):
            sched.curr[cpu] = sched.idle[cpu]
            sched.rq[cpu].clear()
            sched.need_resched[cpu] = False
            self.clock[cpu] = t
            self._push(t + self.tick_ns - (cpu * self.tick_ns // sched.nr_cpus) % self.tick_ns,
                       _TICK, cpu, 0)
        for r in self.runs.values():
            r.task.state = r.beh.state
            r.task.on_cpu = False
            r.left = self._burst(r)
            # asleep for a while already: the residual of an exponential sleep
            # (a real process wakes only with its next system call)
            if not r.host:
                self._push(t + self._sleep(r), _WAKE, r.task.pid, 0)

    def _push(self, t, kind, a, b) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, a, b))

    def _burst(self, r) -> int:
        return max(1000, int(self.rng.expovariate(1.0) * r.beh.burst_ns))

    def _sleep(self, r) -> int:
        return max(1000, int(self.rng.expovariate(1.0) * r.beh.sleep_ns))

    # --- running ------------------------------------------------------------
    def run(self, t0: int, t1: int) -> None:
        """Handle everything that happens before ``t1``."""
        heap = self.heap
        clock = self.clock
        while heap and heap[0][0] < t1:
            t, _seq, kind, a, b = heapq.heappop(heap)
            if kind != _WAKE and t < clock[a]:
                # that CPU is still busy (an interrupt, a switch): one thing
                # at a time, and what others see happens when it is stamped
                self._push(clock[a], kind, a, b)
                continue
            if kind == _TICK:
                self._tick(t, a)
            elif kind == _END:
                self._end(t, a, b)
            elif kind == _WAKE:
                self._wake(t, a)
            elif kind == _IPI:
                self._ipi(t, a)
            elif kind == _CONT:
                self._cont(t, a, b)
            else:
                self._resched(t, a)
        self.time = max(self.time, t1)

    def _at(self, cpu: int, t: int) -> int:
        """The time an event of ``cpu`` happens: never before its last one."""
        c = self.clock[cpu]
        if t < c:
            t = c
        self.clock[cpu] = t
        return t

    def _switched_in(self, cpu: int, t: int, nxt) -> None:
        if nxt.pid == 0:
            self.sched.idle_enter(cpu, self._at(cpu, t + 1000))
            return
        r = self.runs.get(nxt.pid)
        if r is None:
            return
        if r.sigchld:                           # back from wait(): the signal first
            r.sigchld = False
            t = self._at(cpu, t + 2000)
            self.life.deliver_sigchld(nxt, cpu, t, self.sigchld_handler)
        if r.program:                           # a new child: execve() first
            t = self._at(cpu, t + 30000)
            self.life.exec(nxt, cpu, t, r.program)
            r.program = ""
        if r.left <= 0:
            r.left = self._burst(r)
        r.since = t
        r.token += 1
        self._push(t + r.left, _END, cpu, r.token)

    def _switch(self, cpu: int, t: int, prev_state: str, pick=None) -> None:
        prev = self.sched.curr[cpu]
        r = self.runs.get(prev.pid)
        if r is not None:
            r.left -= t - r.since
            r.token += 1                          # its pending end is void
        nxt = self.sched.schedule(cpu, t, prev_state, pick=pick)
        if nxt is not prev:
            self._switched_in(cpu, t, nxt)

    def _end(self, t: int, cpu: int, token: int) -> None:
        task = self.sched.curr[cpu]
        r = self.runs.get(task.pid)
        if r is None or r.token != token:
            return
        t = self._at(cpu, t)
        r.left = 0
        if r.parent:                            # a child's work is done: exit
            self._exit(r, cpu, t)
            return
        if r.beh.fork and self.rng.random() < r.beh.fork:
            # fork a child that runs a program, and wait for it
            child = self.life.fork(task, cpu, t)
            prog = self.rng.choice(r.beh.programs)
            self.runs[child.pid] = _Run(child, self.child_behaviour, parent=task.pid,
                                        program=prog)
            self._switch(cpu, self._at(cpu, t + 20000), "S")
            return
        self._switch(cpu, t, r.beh.state)
        if not r.host:
            self._push(t + self._sleep(r), _WAKE, task.pid, 0)

    def _exit(self, r, cpu: int, t: int) -> None:
        parent = self.life.exit(r.task, cpu, t)
        pr = self.runs.get(parent.pid) if parent is not None else None
        t = self._at(cpu, t + 5000)
        if pr is not None and pr.task.state in ("S", "D", "I"):
            pr.sigchld = True
            self._try_wake(pr, cpu, t, CTX_TASK)
        del self.runs[r.task.pid]
        self._switch(cpu, self._at(cpu, t + 3000), "Z")

    def _wake(self, t: int, pid: int) -> None:
        """A sleeper's wait ends: the timer, device or task that wakes it
        runs on a CPU and wakes it from there."""
        r = self.runs.get(pid)
        if r is None or r.task.on_cpu or r.task.state == "R":
            return
        sched = self.sched
        waker = r.beh.waker
        if waker == "task":
            busy = [c for c in range(sched.nr_cpus) if sched.curr[c].pid != 0]
            if busy:
                cpu = self.rng.choice(busy)
                if t < self.clock[cpu]:
                    self._push(self.clock[cpu], _WAKE, pid, 0)
                    return
                self._try_wake(r, cpu, self._at(cpu, t), CTX_TASK)
                return
            waker = "timer"                     # nobody runs: a timeout does it
        if waker == "timer":
            cpu = r.task.cpu
            if t < self.clock[cpu]:
                self._push(self.clock[cpu], _WAKE, pid, 0)
                return
            tw = self.irq.timer_begin(cpu, self._at(cpu, t))
            self._at(cpu, tw)
            self._push(tw, _CONT, cpu, (pid, _TIMER_WAKE))
            return
        cpu = self.rng.randrange(sched.nr_cpus)
        if t < self.clock[cpu]:
            self._push(self.clock[cpu], _WAKE, pid, 0)
            return
        dev = self.devices[r.beh.state == "D"]
        tw = self.irq.device_irq_begin(cpu, self._at(cpu, t), dev.irq, dev.name, dev.softirq)
        self._at(cpu, tw)
        self._push(tw, _CONT, cpu, (pid, dev.softirq))

    def _cont(self, t: int, cpu: int, what) -> None:
        """The wakeup inside an interrupt, at the instant it happens, and
        the rest of the interrupt."""
        pid, how = what
        r = self.runs[pid]
        if how == _TIMER_WAKE:
            self._try_wake(r, cpu, t, CTX_HARDIRQ)
            self._at(cpu, self.irq.timer_end(cpu, t))
        else:
            self._try_wake(r, cpu, t, CTX_SOFTIRQ)
            self._at(cpu, self.irq.softirq_end(cpu, t, how))

    def _try_wake(self, r, cpu: int, t: int, ctx) -> int:
        """try_to_wake_up() from ``cpu``; a preempted CPU reschedules (this
        one on the way out, another one through a reschedule IPI)."""
        sched = self.sched
        target_curr = sched.curr[sched.select_task_rq(r.task)]
        tr = self.runs.get(target_curr.pid)
        preempt = tr is not None and tr.beh.cpu_bound and not r.beh.cpu_bound
        resched = sched.try_to_wake_up(r.task, cpu, t, ctx, preempt=preempt)
        if resched is None:
            return t
        if resched == cpu:
            self._push(t + self.switch_ns, _RESCHED, cpu, 0)
        else:
            sched.need_resched[resched] = True
            self.irq.send_reschedule(cpu, t, resched, ctx)
            self._push(t + self.ipi_ns, _IPI, resched, 0)
        return t

    def _resched(self, t: int, cpu: int) -> None:
        sched = self.sched
        if not sched.need_resched[cpu]:
            return
        t = self._at(cpu, t)
        if not sched.rq[cpu]:
            sched.need_resched[cpu] = False
            return
        self._switch(cpu, t, "R+")

    def _ipi(self, t: int, cpu: int) -> None:
        t = self._at(cpu, self.irq.reschedule_ipi(cpu, self._at(cpu, t)))
        self._resched(t, cpu)

    def _tick(self, t: int, cpu: int) -> None:
        self._push(t + self.tick_ns, _TICK, cpu, 0)
        if self.sched.curr[cpu].pid == 0:
            return                                  # NO_HZ: an idle CPU has no tick
        t = self._at(cpu, self.irq.tick(cpu, self._at(cpu, t), self.tick_ns))
        if self.sched.need_resched[cpu]:
            self._push(t + self.switch_ns, _RESCHED, cpu, 0)

    def host_task(self, pid: int, comm: str, t: int) -> tuple[int, int]:
        """A process of the real machine makes a system call into the
        simulated kernel at ``t`` (a write to trace_marker): it is woken
        (its terminal's interrupt), preempts a CPU, runs for a moment and
        goes back to sleep.  Returns (its CPU, the instant its call runs)."""
        sched = self.sched
        task = sched.tasks.get(pid)
        if task is None:
            task = sched.spawn(comm, pid=pid)
            task.state = "S"
        r = self.runs.get(pid)
        if r is None:
            r = self.runs[pid] = _Run(task, self.host_behaviour, host=True)
        if task.on_cpu:
            cpu = task.cpu
            return cpu, self._at(cpu, t)
        if task.state == "R":                 # preempted earlier, still queued
            cpu = task.cpu
            t = self._at(cpu, t)
        else:
            idle = [c for c in range(sched.nr_cpus) if sched.curr[c].pid == 0]
            cpu = idle[0] if idle else self.rng.randrange(sched.nr_cpus)
            t = self._at(cpu, t)
            task.cpu = cpu
            sched.idle_exit(cpu, t)
            sched.try_to_wake_up(task, cpu, t, CTX_HARDIRQ, preempt=True)
        t = self._at(cpu, t + self.switch_ns)
        r.left = 5000 + self._burst(r)          # its call runs 1 us after it is in
        self._switch(cpu, t, "R+", pick=task)
        return cpu, self._at(cpu, t + 1000)

    def skip(self, t0: int, t1: int) -> None:
        """Nobody looked from ``t0`` to ``t1``: start again from ``t1``."""
        self.start(t1)
