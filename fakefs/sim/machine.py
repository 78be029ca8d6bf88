"""The simulated machine: CPUs, their interrupt sources and the tasks' behaviour.

This is the world outside the kernel model.  It decides *when* things happen
— a task's burst ends and it blocks, a timer or a device interrupt wakes a
task, the tick finds a slice used up — and drives the kernel's own code
paths for them (``schedule``, ``try_to_wake_up``, ``scheduler_tick`` in
``fakefs/kernel/sched.py``), which fire the tracepoints.

Events are handled in global time order (one heap for all CPUs), and every
CPU's clock only moves forward, so each CPU's timeline is consistent: the
task a switch takes off a CPU is the one the previous switch put there, a
task runs on one CPU at a time, only sleeping tasks are woken, and a task
that went to sleep is woken before it runs again.

How tasks behave is data (``data/machine.toml``): per workload profile a
mean burst of CPU time, the sleep state, a mean sleep and what wakes it.
User tasks make system calls (``data/syscalls.toml``, ``syscalls.py``): a
burst ends in the call the task sleeps in, which returns when it runs
again; while it runs it makes other calls — those only while somebody
traces them (the machine pays for what can be observed).  A shell's
command is clone, wait4 and, in the child, execve and exit_group; the
reaped child is freed an RCU grace period later, in the RCU softirq of a
tick on the parent's CPU.  The machine runs lazily: ``run(t0, t1)`` handles
what falls in [t0, t1), called by the kernel's catch-up when somebody observes.
"""

from __future__ import annotations

from ..kernel.lib._mt import expovariate
from ..kernel.sched import CTX_HARDIRQ, CTX_SOFTIRQ, CTX_TASK, task_stack
from ..kernel.timer import TimerList
from ._event_queue import EventQueue
from .behaviour import US, Behaviour, Device, TaskRun, load_behaviour
from .host import HOST, HOST_PROFILE, HostProcesses
from .alloc_arrivals import Arrivals
from .kinds import (_ALLOC, _ALLOC_DUE, _CONT, _DOWN, _END, _EXIT_WAKE, _IPI, _RESCHED, _SYSCALL,
                    _TICK, _TIMER_WAKE, _UP, _WAKE, _WHEEL_WAKE)
from .machine_percpu import PerCpu
from .syscalls import Syscalls

SCHEDULE_TIMEOUT_OFF = 0x3e28   # schedule_timeout()'s timer on the sleeper's stack
RCU_GRACE_TICKS = 3        # a callback queued now runs at the third tick after


class Machine(PerCpu):
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
        self.entry = kernel.syscalls
        self.calls = Syscalls(kernel.subsystem_rng("syscalls"))
        self.host_calls = self.calls.of_profile(HOST_PROFILE)   # a real process's (see _invents)
        self.irq = kernel.irq
        self.irq.set_symbols(kernel.kallsyms)
        for tp in (self.sched.tp_sched_switch, self.sched.tp_sched_waking,
                   self.sched.tp_sched_wakeup):
            tp.driven = True                  # no stream of their own: the machine's
        self.timers = kernel.timers
        self.wq = kernel.workqueues
        self.wq.set_symbols(kernel.kallsyms)
        self.process_timeout = kernel.kallsyms.addr_of("process_timeout") or 0

        devs = {d["wakes"]: Device(d) for d in spec["device"]}
        self.devices = (devs["S"], devs["D"])     # network for S sleepers, disk for D
        for dev in self.devices:
            self.irq.request_irq(dev.irq, dev.name, dev.chip, dev.hwirq)
        self.rng = kernel.subsystem_rng("machine")
        # where user space's SIGCHLD handler is (a shell's), as signal_deliver shows it
        self.sigchld_handler = 0x55ff206a4e40 + (self.rng.randrange(1 << 20) << 12)
        self.clock = [0] * self.sched.nr_cpus       # each CPU's last event
        self.heap = EventQueue()              # (t, seq, kind, a, b) by (t, seq)
        self.seq = 0
        self.tokens = 0                       # the last token a run was given (``_void``)
        self.runs: dict[int, TaskRun] = {}
        # tasks between do_exit() and their last switch (a task preempted
        # there goes on to its end when it runs again)
        self.exiting: set[int] = set()
        self.host = HostProcesses(self)       # the real processes using the mount
        self.rcu: list[list] = [[] for _ in range(self.sched.nr_cpus)]   # (due, comm, pid, prio)
        # per CPU: wheel timers armed, as a heap of (bucket instant, seq, pid)
        self.wheel: list[list] = [[] for _ in range(self.sched.nr_cpus)]
        self.time = 0
        self.frozen = False                   # nothing can see it: it stands still
        # CPU hotplug: the CPUs dead (offline: nothing happens on them), and
        # per CPU the pids of its per-CPU threads woken while it was
        self.down_cpus: set[int] = set()
        self.parked: dict[int, dict[int, None]] = {}     # (pids in order)
        # the allocation workload's operations while traced (alloc_arrivals.py)
        aw = kernel.alloc_workload
        self.allocs = Arrivals(aw, self) if aw is not None else None
        if aw is not None:
            aw.arrivals = self.allocs
        self.begins = [g for g in (self.allocs, kernel.trace_activity) if g is not None]
        wl = kernel.workload
        for task in sorted(self.sched.tasks.values(), key=lambda t: t.pid):
            prof = wl.profile_of(task.pid) if wl is not None else None
            beh = profiles.get(prof or "default", profiles["default"])
            self.runs[task.pid] = self._run(task, beh, prof or "default")

    def _run(self, task, beh, profile: str, **kw) -> TaskRun:
        calls = None if task.kthread else self.calls.of_profile(profile)
        tc = self.calls.task(task.tgid, kw.get("program", "")) if calls is not None else None
        if tc is not None and not kw.get("host"):
            task.mm = tc                        # its user memory: the strings its calls pass
        r = TaskRun(task, beh, calls=calls, tc=tc, **kw)
        if task.kthread and beh.waker == "timer" and beh.pool is None:
            # schedule_timeout(): a timer on its stack calling process_timeout
            r.timer = TimerList(task_stack(task.pid) + SCHEDULE_TIMEOUT_OFF, self.process_timeout)
        return r

    # --- set-up -------------------------------------------------------------
    def start(self, t: int) -> None:
        """Every task asleep where it waits, every CPU idle, at ``t``.
        What the real processes did meanwhile still happens (from ``t``)."""
        for when, action in self._take_host_actions():
            self.queue_host(max(when, t), action)
        self.time = t
        if self.allocs is not None:
            self.allocs.restarted(t)
        sched = self.sched
        for cpu in range(sched.nr_cpus):
            sched.curr[cpu] = sched.idle[cpu]
            sched.rq[cpu].clear()
            sched.need_resched[cpu] = False
            self.clock[cpu] = t
            if cpu in self.down_cpus:
                continue                  # offline: no tick
            sched.idle_enter(cpu, t)      # (halted until something wakes it)
            self._push(t + self.tick_ns - (cpu * self.tick_ns // sched.nr_cpus) % self.tick_ns,
                       _TICK, cpu, 0)
        for pid in self.exiting:          # on their way out when nobody looked
            r = self.runs.pop(pid, None)
            if r is not None:
                r.task.state = "Z"
        self.exiting.clear()
        for q in self.rcu:
            q.clear()
        for q in self.wheel:
            q.clear()
        for r in self.runs.values():
            r.task.state = r.beh.state
            r.task.on_cpu = False
            r.left = self._burst(r)
            r.sys = r.calls.block if self._invents(r) else None   # asleep in it
            r.sysret = self._ret(r, r.sys) if r.sys is not None else 0
            r.reap = None
            r.work = None
            if r.beh.pool == "highpri":
                r.work = self.wq.pick(r.beh.pool, r.task.cpu, self.rng.random())
            # asleep for a while already: the residual of an exponential sleep
            # (a real process wakes only with its next system call)
            if r.host:
                continue
            if r.timer is not None or r.beh.pool in ("percpu", "unbound"):
                self._wheel_sleep(r, r.task.cpu, t, self._sleep(r), armed=False)
            else:
                self._push(t + self._sleep(r), _WAKE, r.task.pid, 0)

    def _burst(self, r) -> int:
        return max(1000, int(expovariate(self.rng, 1.0) * r.beh.burst_ns))

    def _sleep(self, r) -> int:
        return max(1000, int(expovariate(self.rng, 1.0) * r.beh.sleep_ns))

    # --- running ------------------------------------------------------------
    def run(self, t0: int, t1: int) -> None:
        """Handle everything that happens before ``t1``."""
        heap = self.heap
        clock = self.clock
        for g in self.begins:                 # (what writes as the machine runs)
            g.begin(t0, t1)
        pop = heap.pop_before
        while True:
            e = pop(t1)
            if e is None:
                break
            t, _seq, kind, a, b = e
            if kind == HOST:
                self.host.run(t, b)
                continue
            if self.down_cpus and kind != _WAKE and a in self.down_cpus:
                if kind == _UP:           # (what else was due on a dead CPU is void)
                    self._up(t, a)
                continue
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
            elif kind == _SYSCALL:
                self._syscall(t, a, b)
            elif kind == _ALLOC:
                self.allocs.fire(t, a, b)
            elif kind == _ALLOC_DUE:
                self.allocs.due(t, a, b)
            elif kind == _DOWN:
                self._down(t, a)
            elif kind == _UP:
                pass                      # (up already)
            else:
                self._resched(t, a)
        self.time = max(self.time, t1)

    def _switched_in(self, cpu: int, t: int, nxt) -> None:
        if nxt.pid == 0:
            self.sched.idle_enter(cpu, self._at(cpu, t + 1000))
            return
        r = self.runs.get(nxt.pid)
        if r is None:
            return
        if nxt.pid in self.exiting:             # preempted in do_exit(): it ends now
            self._push(self._at(cpu, t + 1000), _CONT, cpu, (nxt.pid, _EXIT_WAKE))
            return
        if r.early:                             # the timeout it beat goes
            r.early = False
            t = self._at(cpu, t + 1000)
            self.irq.hrtimer_cancel(cpu, t, nxt.pid)
        if r.sys is not None:                   # back from the call it slept in
            t = self._at(cpu, t + 1000)
            self.entry.exit(cpu, t, nxt.pid, r.sys.nr, r.sysret)
            r.sys = None
        if r.reap is not None:                  # wait4() reaped a child: freed later
            self.rcu[cpu].append((t + RCU_GRACE_TICKS * self.tick_ns,) + r.reap)
            r.reap = None
        if r.sigchld:                           # on the way out: the signal
            r.sigchld = False
            t = self._at(cpu, t + 2000)
            self.life.deliver_sigchld(nxt, cpu, t, self.sigchld_handler)
        if r.work is not None:                  # a kworker: the work it was woken for
            t = self._at(cpu, t + 1000)
            self.wq.execute_start(cpu, t, r.work)
        if r.program:                           # a new child: execve() first
            t = self._call(r, cpu, self._at(cpu, t + 2000), self.calls.execve, 30000,
                           lambda t: self.life.exec(nxt, cpu, t, r.program))
            r.program = ""
        if r.left <= 0:
            r.left = self._burst(r)
        r.since = t
        self._set_end(cpu, r, t)
        if self.allocs is not None and self.allocs.live:    # (its allocations: a stint's)
            self.allocs.arm(cpu, r, t)

    def _set_end(self, cpu: int, r, t: int) -> None:
        """``r``'s burst ends ``r.left`` after it began (an end set before
        is void); its calls meanwhile from ``t`` on."""
        self._void(r)
        self._push(r.since + r.left, _END, cpu, r.token)
        if self._makes_calls(r):
            self._push(t + self.calls.gap(r.calls), _SYSCALL, cpu, r.token)

    def _void(self, r) -> None:
        """``r``'s pending end and calls are void: it takes a new token, the
        machine's next.  Their events stay queued and match by CPU and token
        only: tokens counted per task (from 0) let one task's void end, come
        due, end the burst of another on that CPU whose count had got there
        (a kernel thread's cut perf ftrace's sleep before its loader's
        read()s)."""
        self.tokens += 1
        r.token = self.tokens

    def _makes_calls(self, r) -> bool:
        """``r``'s task makes its calls while it runs: somebody records
        them, or (a real process the model knows) waits for their work."""
        return self._invents(r) and (self.entry.traced() or r.host and self.entry.work_wanted())

    def _invents(self, r) -> bool:
        """``r``'s task makes calls of its profile: a simulated task, or a
        real process running a program whose calls the model knows
        (``host.OWN_PROFILES``); any other real process's calls are its own
        that reach the mount (fuse/syscall_events.py), none made up."""
        return r.calls is not None and not (r.host and r.calls is self.host_calls)

    def keep_running(self, r, cpu: int, until: int) -> None:
        """``r``'s task, running on ``cpu``, runs on at least until ``until``."""
        if self.sched.curr[cpu] is r.task and r.since + r.left < until:
            r.left = until - r.since
            self._set_end(cpu, r, self.clock[cpu])

    def _ret(self, r, call, child: int = 0) -> int:
        return self.calls.values(r.tc, call, child)[1]

    def _call(self, r, cpu: int, t: int, call, took: int, inside=None) -> int:
        """``r``'s task makes ``call`` at ``t`` (``inside(t)`` is what the
        kernel does in it, returning the pid of a child it made); returns
        the instant it has returned."""
        args, ret = self.calls.values(r.tc, call)
        self.entry.enter(cpu, t, r.task.pid, call.nr, args, r.host)
        t = self._at(cpu, t + took)
        if inside is not None:
            child = inside(t)
            if child is not None:
                ret = self.calls.values(r.tc, call, child)[1]
            t = self._at(cpu, t + 1000)
        self.entry.exit(cpu, t, r.task.pid, call.nr, ret)
        return t

    def _syscall(self, t: int, cpu: int, token: int) -> None:
        """A call of the running task in the middle of its burst."""
        task = self.sched.curr[cpu]
        r = self.runs.get(task.pid)
        if r is None or r.token != token or r.calls is None or t >= r.since + r.left:
            return
        t = self._at(cpu, t)
        took = 500 + int(self.calls.rng.random() * 3000)
        if r.startup:                   # its loader's, in order; then its main() sleeps
            t = self._call(r, cpu, t, r.startup.pop(0), took)
            if not r.startup:
                r.left = t + 1000 - r.since
                self._set_end(cpu, r, t)
                return
        else:
            t = self._call(r, cpu, t, self.calls.next_call(r.calls), took)
        if self._makes_calls(r):
            self._push(t + self.calls.gap(r.calls), _SYSCALL, cpu, token)

    def _switch(self, cpu: int, t: int, prev_state: str, pick=None) -> None:
        prev = self.sched.curr[cpu]
        r = self.runs.get(prev.pid)
        if r is not None:
            r.left -= t - r.since
            self._void(r)                         # its pending end is void
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
            prog = self.rng.choice(r.beh.programs)
            forked = []

            def fork(t):
                child = self.life.fork(task, cpu, t)
                cr = self._run(child, self.child_behaviour, "child", parent=task.pid,
                               program=prog)
                if cr.calls is not None:      # it returns from clone() when it first runs
                    cr.sys, cr.sysret = self.calls.clone, 0
                self.runs[child.pid] = cr
                forked.append(child.pid)
                return child.pid

            if r.calls is not None:
                t = self._call(r, cpu, t, self.calls.clone, 15000, fork)
                t = self._at(cpu, t + 2000)
                # (the child's pid is what clone returned: fill it in)
                args, _ret = self.calls.values(r.tc, self.calls.wait4)
                self.entry.enter(cpu, t, task.pid, self.calls.wait4.nr, args)
                r.sys, r.sysret = self.calls.wait4, forked[0]
            else:
                fork(t)
            t = self._at(cpu, t + 1000)
            self.life.wait(task, cpu, t)
            self._switch(cpu, self._at(cpu, t + 3000), "S")
            return
        timeout = 0
        if self._invents(r):                    # into the call it sleeps in
            r.sys = r.calls.block
            args, r.sysret = self.calls.values(r.tc, r.sys)
            self.entry.enter(cpu, t, task.pid, r.sys.nr, args)
            t = self._at(cpu, t + 1000)
            timeout = r.sys.timeout_ns(args) if r.beh.waker == "irq" else 0
        if r.host:
            self._switch(cpu, t, r.beh.state)
            return
        sleep = self._sleep(r)
        done = r.work
        if r.timer is not None or r.beh.pool in ("percpu", "unbound"):
            # the work re-arms its delayed work (or the next one is armed)
            self._wheel_sleep(r, cpu, t, sleep)
        elif r.beh.pool is not None:            # highpri: woken for the next
            r.work = self.wq.pick(r.beh.pool, cpu, self.rng.random())
            self._push(t + sleep, _WAKE, task.pid, 0)
        else:
            if r.beh.waker == "timer" or timeout:
                self.irq.hrtimer_sleep(cpu, t, task.pid, t + (timeout or sleep))
            r.early, r.timed_out = sleep < timeout, sleep >= timeout > 0
            self._push(t + min(sleep, timeout or sleep), _WAKE, task.pid, 0)
        if done is not None:
            self.wq.execute_end(cpu, t, done)
            t = self._at(cpu, t + 1000)
        self._switch(cpu, t, r.beh.state)

    def _exit(self, r, cpu: int, t: int) -> None:
        self._void(r)                         # its burst's end is void: it exits
        self.exiting.add(r.task.pid)
        if r.calls is not None:
            args, _ret = self.calls.values(r.tc, self.calls.exit_group)
            self.entry.enter(cpu, t, r.task.pid, self.calls.exit_group.nr, args)
            t = self._at(cpu, t + 2000)
        parent = self.life.exit(r.task, cpu, t)
        r.parent = parent.pid if parent is not None else 0
        # exit_notify() wakes the parent at its own instant (others see it then)
        self._push(self._at(cpu, t + 5000), _CONT, cpu, (r.task.pid, _EXIT_WAKE))

    def _exit_notify(self, t: int, cpu: int, r) -> None:
        task = r.task
        if self.sched.curr[cpu] is not task:
            return          # preempted on its way out: it goes on when it runs again
        pr = self.runs.get(r.parent)
        if pr is not None and pr.task.state in ("S", "D", "I"):
            last = self.clock[pr.task.cpu]
            if t <= last:       # it went to sleep over there at ``last``: wake it after
                self._push(last + 1, _CONT, cpu, (task.pid, _EXIT_WAKE))
                return
            pr.sigchld = True
            pr.reap = (task.comm, task.pid, task.prio)
            self._try_wake(pr, cpu, t, CTX_TASK)
        del self.runs[task.pid]
        self.exiting.discard(task.pid)
        self._switch(cpu, self._at(cpu, t + 3000), "Z")

    def _wake(self, t: int, pid: int) -> None:
        """A sleeper's wait ends: the timer, device or task that wakes it
        runs on a CPU and wakes it from there."""
        r = self.runs.get(pid)
        if r is None or r.task.on_cpu or r.task.state == "R":
            return
        sched = self.sched
        waker = "timer" if r.timed_out else r.beh.waker
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
            cpu = self._live(r.task.cpu)      # (a dead CPU's timers moved)
            if t < self.clock[cpu]:
                self._push(self.clock[cpu], _WAKE, pid, 0)
                return
            tw = self.irq.timer_begin(cpu, self._at(cpu, t), pid)
            self._at(cpu, tw)
            self._push(tw, _CONT, cpu, (pid, _TIMER_WAKE))
            return
        cpu = self._live(self.rng.randrange(sched.nr_cpus))   # (irqs avoid dead CPUs)
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
        pid, how = what[0], what[1]
        r = self.runs.get(pid)
        if how == _WHEEL_WAKE:
            self._wheel_wake(t, cpu, r, what[2], what[3])
            return
        if how == _EXIT_WAKE:
            if r is not None and r.task.pid in self.exiting:
                self._exit_notify(t, cpu, r)
            return
        if how == _TIMER_WAKE:
            self._try_wake(r, cpu, t, CTX_HARDIRQ)
            t = self._at(cpu, self.irq.timer_end(cpu, t, pid))
        else:
            if r.work is not None:              # the device's softirq queues the work
                self.wq.queue_work(cpu, t, r.work, softirq=True)
            self._try_wake(r, cpu, t, CTX_SOFTIRQ)
            t = self._at(cpu, self.irq.softirq_end(cpu, t, how))
        self._back_to_idle(cpu, t)

    def _back_to_idle(self, cpu: int, t: int) -> None:
        """An interrupt on a halted CPU is over: it halts again unless it
        has a task to run."""
        sched = self.sched
        if sched.curr[cpu].pid == 0 and not sched.need_resched[cpu]:
            sched.idle_enter(cpu, self._at(cpu, t + 1000))

    def _try_wake(self, r, cpu: int, t: int, ctx) -> int:
        """try_to_wake_up() from ``cpu``; a preempted CPU reschedules (this
        one on the way out, another one through a reschedule IPI)."""
        sched = self.sched
        if r.task.bound and not sched.online[r.task.cpu]:
            # a parked per-CPU thread: it runs when its CPU is back
            self.parked.setdefault(r.task.cpu, {})[r.task.pid] = None
            return t
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
        if not sched.need_resched[cpu] or sched.idling[cpu]:
            return          # (a halted CPU waits for the reschedule IPI in flight)
        t = self._at(cpu, t)
        if not sched.rq[cpu]:
            sched.need_resched[cpu] = False
            self._back_to_idle(cpu, t)
            return
        self._switch(cpu, t, "R+")

    def _ipi(self, t: int, cpu: int) -> None:
        t = self._at(cpu, self.irq.reschedule_ipi(cpu, self._at(cpu, t)))
        self._resched(t, cpu)
