"""The real machine's processes that use the mount, as tasks of the simulated one.

A shell running ftracetest writes to ``set_event_pid`` with its own pid,
forks ``cat``, waits for it: the simulated kernel must know those tasks.
The daemon reports what it learns (see ``fakefs/fuse/cnproc.py``):

* ``caller(pid, comm)``: a process made a request (a write to
  ``trace_marker`` runs in its system call);
* ``event(ev)``: a fork, exec, exit or rename of a followed process, at the
  instant the host stamped it.

A process is followed from its first request on, and so are the children
it forks afterwards.  Each of its events becomes the machine's at its own
instant (a ``HOST`` entry of the machine's queue), driving the kernel code
paths a real one goes through: the forking task is woken (its terminal's
interrupt) and runs ``clone()`` (``kernel_clone``: ``task_newtask``,
``sched_process_fork``, ``sched_wakeup_new``), the child runs and calls
``execve()`` (``sched_process_exec``), and at its end ``exit_group()``
(``sched_process_exit``, SIGCHLD to its parent, which is woken).  Their
memory goes through the simulated allocators as they do so (the fork's
copy, the exec's path lookups and new mm, the exit's frees:
``kernel/mm/alloc_tasks.py``).  Between
those, a real process is asleep here: only its system calls into this
kernel (and the ones the host reports) show it running.
"""

from __future__ import annotations

import os
from collections import OrderedDict

from .timekeeper import SHOWN_NS
from ..kernel.mm.alloc_tasks import EXEC_LOOKUPS, LOOKUP_NS
from ..kernel.sched import CTX_HARDIRQ, CTX_TASK
from ..kernel.trace.trace_events_pid import follow_fork

HOST = 7                   # the machine's queue: a real process's event
# a real process's event is simulated this long after its instant (the
# daemon makes sure a request sees what its callers did before it)
SETTLE_NS = 200_000
CALL_NS = {"clone": 15000, "execve": 30000}
HOST_PROFILE = "shell"
# programs a real process may exec whose system calls are not a shell's:
# each makes them by the profile of its name in data/syscalls.toml
OWN_PROFILES = {"sleep"}
EXITED_KEPT = 4096     # the system calls a real process makes meanwhile
# a kernel that does not follow the real processes keeps a pid of its own
# for this many of them (the least recently seen that have gone leave
# first, see own_pid)
WRITERS_KEPT = 1024
WRITERS_LOOKED_AT = 16     # of the least recently seen, looked at for each new one
SYSCALL_IN_NS = (1200, 4800)    # a real process's call: from its entry to the work it does


MAX_RT_PRIO = 100
SCHED_RESET_ON_FORK = 0x40000000


def host_rt_policy(pid: int):
    """(policy, rt_priority) of the real process ``pid`` when it runs
    SCHED_FIFO or SCHED_RR (set before its exec, as chrt does), else None:
    system calls, never a /proc read (the daemon may be serving it)."""
    try:
        policy = os.sched_getscheduler(pid) & ~SCHED_RESET_ON_FORK
        prio = os.sched_getparam(pid).sched_priority
    except OSError:
        return None
    if policy in (os.SCHED_FIFO, os.SCHED_RR) and 0 < prio < MAX_RT_PRIO:
        return policy, prio
    return None


class HostCall:
    """A real process's system call in the simulated kernel: its task's
    pid here, the call's number, and when its work began (its way in done)."""

    __slots__ = ("pid", "nr", "t")

    def __init__(self, pid: int, nr: int, t: int):
        self.pid = pid
        self.nr = nr
        self.t = t


class HostProcesses:
    """What the machine knows of the real processes it follows."""

    def __init__(self, machine):
        self.machine = machine
        self.followed: set[int] = set()
        self.comms: dict[int, str] = {}
        self.exited: set[int] = set()      # exit done: nothing more of them runs
        # children whose fork is queued but not done: when it will run
        self.forking: dict[int, int] = {}
        # fn(pid) -> bool: does a process of the real machine hold the pid
        # (the daemon's /proc check; None: only the followed ones count)
        self.exists = None
        # fn(pid) -> the CPUs the real process ``pid`` may run on, or None
        # when it may run on all (its affinity is its CPUs here; None: not read)
        self.affinity = None
        # the allocators' model of their memory (None: a kernel without it)
        calls = machine.kernel.alloc_calls
        self.memory = calls.tasks if calls is not None else None
        # (host pid, its start time) -> its pid here, for a kernel that
        # does not follow the real processes (see own_pid), least recently
        # seen first
        self.writers: OrderedDict[tuple[int, int], int] = OrderedDict()
        self.last_call: dict[int, int] = {}    # pid -> when its last call here ran
        # pid -> the system call it is in (entered, not returned: ``enter``)
        self.calls: dict[int, HostCall] = {}
        # fn(host pid) -> its memory as probes read it (``Task.mm``); None: not read
        self.user_memory = None
        self.ran_at = -SHOWN_NS             # when the machine last did one of their events

    def standing_still(self) -> bool:
        """Nothing sees the machine: its real processes' events are facts only.
        (Frozen but seen since, by a setting a request just made: its next
        step starts it again, so what they do now is to be run, not noted.)"""
        m = self.machine
        return m.frozen and not m.kernel.machine_seen()

    def pid_taken(self, pid: int) -> bool:
        """For the scheduler's pid allocation: a real process has ``pid``."""
        return pid in self.followed or (self.exists is not None and self.exists(pid))

    def own_pid(self, pid: int) -> int:
        """The pid here of the real process ``pid`` making a call.  A kernel
        that follows the real processes (``host_tasks``: its pid filters
        take their pids) knows them by their own pids.  One that does not
        (a virtual clock, no proc connector) gives each a pid of its own
        the first time it calls, as it does a new task: what the simulated
        machine hands out never depends on the host's pids.  A process is
        known by its pid and start time (``kernel.host_start``), so a
        reused pid is another process; it keeps its pid here while it lives.
        Of the ones seen least recently, those gone from the host exit here
        too once more than WRITERS_KEPT are known."""
        if not pid or self.machine.kernel.host_tasks:
            return pid
        key = (pid, self._start(pid))
        own = self.writers.get(key)
        if own is not None:
            self.writers.move_to_end(key)
            return own
        own = self.writers[key] = self.machine.sched.alloc_pid()
        if len(self.writers) > WRITERS_KEPT:
            self._retire_writers()
        return own

    def _start(self, pid: int) -> int:
        """The host's start time of its process ``pid`` (0: unknown or gone)."""
        start = self.machine.kernel.host_start
        return (start(pid) or 0) if start is not None else 0

    def _retire_writers(self) -> None:
        """Of the least recently seen writers, the ones gone from the host
        (no start time to tell: all of them) exit here by the machine's own
        exit path; the live ones are seen again."""
        writers = self.writers
        for _ in range(min(WRITERS_LOOKED_AT, len(writers) - 1)):
            if len(writers) <= WRITERS_KEPT:
                return
            (pid, start), own = next(iter(writers.items()))
            if start and self._start(pid) == start:
                writers.move_to_end((pid, start))
                continue
            del writers[pid, start]
            self.last_call.pop(own, None)
            self.event("exit", self.machine.kernel.sim_time, own)

    def syscall(self, pid: int, t: int, enters: tuple | None = None) -> tuple[int, int, int]:
        """The real process ``pid`` makes a system call into the simulated
        kernel at ``t`` (a write to trace_marker): it is woken (its
        terminal's interrupt), preempts a CPU, runs for a moment and goes
        back to sleep.  Returns (its pid here, its CPU, the instant its call
        gets to its work: the way in, vfs_write(), takes a moment).  Its
        comm is read from the host (``kernel.host_comm``) when it is new.
        ``enters``: (nr, args) of the call, whose ``sys_enter`` fires as it
        gets into the kernel.  Inside a call already entered (``enter``)
        the way in is behind it: it runs its work from ``t`` on."""
        m = self.machine
        host_pid, pid = pid, self.own_pid(pid)
        if pid and pid not in self.followed:
            lookup = m.kernel.host_comm
            self.caller(pid, lookup(host_pid) if lookup is not None else None)
        task = self.task(pid)
        if task is not None and self.user_memory is not None and task.mm is None:
            task.mm = self.user_memory(host_pid)
        if pid in self.calls and task is not None and not m.frozen:
            cpu, t = self.on_cpu(task, max(t, self.calls[pid].t))
            return pid, cpu, t
        took = m.rng.randrange(*SYSCALL_IN_NS)
        if task is None:                      # a simulated task has that pid
            cpu = m.sched.tasks[pid].cpu
            return pid, cpu, t + took if m.frozen else m._at(cpu, t + took)
        t = self._affine(task, host_pid, t)
        if m.frozen:                          # nobody sees the CPUs: where it ran last
            cpu, t = task.cpu, max(t, self.last_call.get(pid, 0)) + took
        else:
            cpu, t = self.on_cpu(task, t)
            if enters is not None:
                m.entry.enter(cpu, t, pid, *enters)
            t = m._at(cpu, t + took)
        if len(self.last_call) > EXITED_KEPT:
            self.last_call.clear()
        self.last_call[pid] = t
        return pid, cpu, t

    def enter(self, host_pid: int, t: int, nr: int, args: tuple) -> "HostCall | None":
        """The real process ``host_pid`` entered system call ``nr`` with the
        argument registers ``args`` (its request reached the mount at
        ``t``): it runs (``syscall``), and ``sys_enter`` fires when its call
        gets to the kernel.  None while nothing sees the machine or when a
        simulated task holds the pid."""
        m = self.machine
        m.looked_at()
        pid = self.own_pid(host_pid)
        r = m.runs.get(pid)
        if m.frozen or not pid or (r is not None and not r.host):
            return None
        self.calls.pop(pid, None)             # (one it never left: a signal, a lost reply)
        pid, _cpu, t = self.syscall(host_pid, t, (nr, args))
        call = self.calls[pid] = HostCall(pid, nr, t)
        return call

    def abandon(self, call: "HostCall") -> None:
        """``call`` ends without an exit (what it returned is not known)."""
        if self.calls.get(call.pid) is call:
            del self.calls[call.pid]

    def leave(self, call: "HostCall", t: int, ret: int) -> int:
        """The call returns ``ret`` at ``t`` (or when its work is done, if
        later): ``sys_exit`` fires on the CPU the process runs on then (it
        is woken if it slept in the call).  Returns the instant."""
        m = self.machine
        self.abandon(call)
        task = self.task(call.pid)
        if task is None or m.frozen:
            return t
        cpu, t = self.on_cpu(task, max(t, call.t))
        m.entry.exit(cpu, t, call.pid, call.nr, ret)
        return t

    def _affine(self, task, host_pid: int, t: int) -> int:
        """The real process's affinity (``sched_setaffinity()`` on the host)
        is its task's CPUs here (a ``trace_marker`` write pinned to CPU 1
        lands in CPU 1's buffer).  Read at each of its calls, which is when
        the machine learns of a change: a task still running on a CPU it
        may no longer use is moved first, as the stopper thread would.
        Returns when the call goes on (after such a move)."""
        if self.affinity is None:
            return t
        m = self.machine
        nr = m.sched.nr_cpus
        cpus = self.affinity(host_pid)
        ok = tuple(sorted(c for c in cpus if 0 <= c < nr)) if cpus else ()
        allowed = ok if ok and len(ok) < nr else None   # none of ours, or all: any CPU
        if allowed == task.allowed:
            return t
        cpu = task.cpu
        if allowed is not None and task.on_cpu and cpu not in allowed:
            stopper = self._stopper(cpu)
            if stopper is not None:
                # migration_cpu_stop(): the CPU's stopper thread preempts
                # it, moves it (queued now), and sleeps again
                t = m._at(cpu, t)
                m.sched.try_to_wake_up(stopper, cpu, t, CTX_TASK, preempt=True)
                m._switch(cpu, t, "R+", pick=stopper)
                t = m._at(cpu, t + 1000)
                m.sched.set_cpus_allowed(task, allowed, cpu, t)
                t = m._at(cpu, t + 1000)
                m._switch(cpu, t, "S")
                return t
        m.sched.set_cpus_allowed(task, allowed, cpu, m._at(cpu, t))
        return t

    def _stopper(self, cpu: int):
        """``migration/cpu``, the CPU's stopper thread (None: the machine has none)."""
        name = "migration/%d" % cpu
        for task in self.machine.sched.tasks.values():
            if task.comm == name and task.bound and task.cpu == cpu:
                return task
        return None

    def skipped(self, actions, t1: int) -> None:
        """The machine starts again at ``t1``, nobody having seen it before:
        of the queued ``actions`` ((when, action) in order), what the real
        processes did before ``t1`` is left as facts only (as while it
        stands still), not done at ``t1``, where it would be seen at the
        wrong time (``sleep 2`` would seem shorter); the rest stays queued."""
        for when, action in actions:
            if when < t1:
                self.note(action)
            else:
                self.machine.queue_host(when, action)

    # --- what the daemon reports ---------------------------------------------
    def caller(self, pid: int, comm: str | None) -> None:
        """``pid`` made a request: it is followed from now on."""
        if pid and pid not in self.followed:
            r = self.machine.runs.get(pid)
            if r is not None and not r.host:
                return                 # a simulated task holds that pid
            self.followed.add(pid)
            # a process that makes a request lives: an earlier one with its
            # pid (the host's pids wrap) has exited, this one has not
            self.exited.discard(pid)
            if comm:
                self.comms[pid] = comm

    def event(self, kind: str, t: int, pid: int, ppid: int = 0, tgid: int = 0,
              comm: str = "", filename: str = "", exe=None) -> int | None:
        """A followed process forked, exec'ed, exited or was renamed at
        ``t`` (the simulated clock): queued for the machine.  Returns the
        instant by which the machine will have done it, or None when the
        process is not followed."""
        m = self.machine
        if kind == "fork":
            if ppid not in self.followed:
                return None
            self.followed.add(pid)             # named after its parent, as fork does
            action = ("fork", ppid, pid, tgid or pid)
        elif pid not in self.followed:
            return None
        elif kind == "exec":
            action = ("exec", pid, filename, host_rt_policy(pid), exe)
        elif kind == "exit":
            self.followed.discard(pid)
            action = ("exit", pid)
        elif kind == "comm":
            action = ("comm", pid, comm)
        else:
            raise ValueError(kind)
        m.looked_at()
        if m.frozen:
            self.note(action)
            return None
        t = max(t, m.kernel.sim_time)
        m.queue_host(t, action)
        if kind == "fork":
            self.forking[pid] = t
        return t + SETTLE_NS

    def pull_in(self, t: int) -> int | None:
        """A request is served at ``t`` on a machine lagging the host: what
        the real processes did before it, queued for later instants, happens
        at ``t`` (``Machine.pull_host``).  The instant by which the machine
        will have done it, or None when nothing was queued after ``t``."""
        if not self.machine.pull_host(t):
            return None
        for pid, when in self.forking.items():
            if when > t:
                self.forking[pid] = t
        return t + SETTLE_NS

    def note(self, action) -> None:
        """While the machine stands still (nothing can see it): what the
        event leaves behind, without running it.  A child is made a task
        when first needed; an exec renames; an exit takes the task away."""
        kind, pid = action[0], action[1]
        m = self.machine
        if kind in ("uprobe", "lookup"):          # a probe hit, a lookup nobody sees
            return
        if kind == "fork":                        # ("fork", ppid, pid, tgid)
            self.exited.discard(action[2])
            self.forking.pop(action[2], None)
            if m.kernel.tracing is not None:      # the fork probes run, traced or not
                follow_fork(m.kernel.tracing, pid, action[2])
            parent = m.sched.tasks.get(pid) if self._is_host(pid) else None
            comm = self.comms.get(pid) or (parent.comm if parent is not None else "")
            if comm:
                self.comms[action[2]] = comm      # fork keeps the comm
            return
        self.forking.pop(pid, None)
        task = m.sched.tasks.get(pid) if self._is_host(pid) else None
        if kind in ("exec", "comm"):
            name = action[2].rsplit("/", 1)[-1][:15] if kind == "exec" else action[2][:15]
            if name:
                self.comms[pid] = name
                if task is not None:
                    task.comm = name
        elif kind == "exit":
            self.exited.add(pid)
            self.comms.pop(pid, None)
            if m.kernel.tracing is not None:      # freed: off the pid lists that followed it
                follow_fork(m.kernel.tracing, None, pid)
            if self.memory is not None:
                self.memory.host_exit(pid, None, 0)
            if len(self.exited) > EXITED_KEPT:
                self.exited.clear()
            if task is not None:
                m.runs.pop(pid, None)
                m.exiting.discard(pid)
                m.sched.tasks.pop(pid, None)

    def shown_in(self, t0: int, t1: int) -> bool:
        """Did the machine do one of their events in [t0, t1), or less than
        SHOWN_NS before (what it started), or will it (queued: asked before
        it runs the step)?  Such a step is traced even
        before a gap's window (``TraceBacklog.traced_needs``): a skip stops
        at these events (``Timekeeper._shown_first``) for tracing to see them."""
        return t0 - SHOWN_NS < self.ran_at < t1 or self.machine.shown_before(t1) is not None

    # --- the machine runs them -----------------------------------------------
    def run(self, t: int, action) -> None:
        kind = action[0]
        m = self.machine
        if kind == "fork":
            self.exited.discard(action[2])       # the pid is in use again
        elif action[1] in self.forking:
            # the child's own events come after its fork, which a busy CPU
            # put off: they follow it
            m.queue_host(max(t, self.forking[action[1]]) + 1, action)
            return
        if action[1] in self.exited:
            if kind == "fork":
                self.forking.pop(action[2], None)
            return
        r = m.runs.get(action[1])
        if r is not None:
            c = m.clock[r.task.cpu]
            if t <= c:      # where it ran last is further on: what it does is later
                m.queue_host(c + 1, action)
                if kind == "fork":
                    self.forking[action[2]] = c + 1
                return
            if kind == "exit" and r.startup and r.task.state == "R" and m._makes_calls(r):
                # its program's loader has calls left, and it is making them
                # (running or runnable): a process exits after them, also
                # where the host's exec and exit came dated alike (both while
                # a request's catch-up held the clock still, or taken after
                # the kernel had passed them: perf ftrace's sleep showed no
                # vfs_read).  The exit waits for them
                m.queue_host(t + len(r.startup) * r.calls.every_ns, action)
                return
        self.ran_at = t                          # (done now, not put off)
        if kind == "fork":
            self.forking.pop(action[2], None)
            self._fork(t, *action[1:])
        elif kind == "exec":
            self._exec(t, *action[1:])
        elif kind == "exit":
            self._exit(t, action[1])
        elif kind == "lookup":                  # ("lookup", pid): its loader's
            r = m.runs.get(action[1])             # (none after its exit)
            if r is not None and r.host and self.memory is not None:
                self.memory.lookup(r.task.cpu, m._at(r.task.cpu, t))
        elif kind == "uprobe":                  # ("uprobe", pid, handler)
            task = self.task(action[1])
            if task is not None and m.kernel.uprobes is not None:
                cpu, t = self.on_cpu(task, t)
                m.kernel.uprobes.fire(task, cpu, t, action[2])
        else:
            task = self.machine.sched.tasks.get(action[1])
            if task is not None and self._is_host(task.pid):
                task.comm = action[2][:15]

    def _is_host(self, pid: int) -> bool:
        r = self.machine.runs.get(pid)
        return r is not None and r.host

    def task(self, pid: int):
        """The host task ``pid`` (made on first need: a new one where an
        exited task had the pid), or None when a simulated task holds it."""
        m = self.machine
        r = m.runs.get(pid)
        if r is not None:
            return r.task if r.host else None
        task = m.sched.spawn(self.comms.get(pid) or "?", pid=pid)
        task.state = "S"
        m.runs[pid] = m._run(task, m.host_behaviour, HOST_PROFILE, host=True)
        return task

    def on_cpu(self, task, t: int) -> tuple[int, int]:
        """The real process runs now (woken by its terminal's interrupt if
        it slept): (its CPU, the instant it runs)."""
        m = self.machine
        sched = m.sched
        r = m.runs[task.pid]
        if task.on_cpu:
            cpu = task.cpu
            return cpu, m._at(cpu, t)
        if task.state == "R":                 # preempted earlier, or woken and queued
            cpu = task.cpu
            t = m._at(cpu, t)
            sched.idle_exit(cpu, t)           # its CPU halted, the IPI still on its way
        else:
            ok = task.allowed
            online = sched.online
            idle = [c for c in (range(sched.nr_cpus) if ok is None else ok)
                    if sched.curr[c].pid == 0 and online[c]]
            cpu = m._live(idle[0] if idle else m.rng.randrange(sched.nr_cpus) if ok is None
                          else ok[m.rng.randrange(len(ok))])
            t = m._at(cpu, t)
            task.cpu = cpu
            sched.idle_exit(cpu, t)
            sched.try_to_wake_up(task, cpu, t, CTX_HARDIRQ, preempt=True)
            if task.cpu != cpu:      # queued elsewhere (a wakeup already took this CPU)
                sched.need_resched[task.cpu] = True
                m.irq.send_reschedule(cpu, t, task.cpu, CTX_HARDIRQ)
                cpu = task.cpu
                t = m._at(cpu, m.irq.reschedule_ipi(cpu, m._at(cpu, t + m.ipi_ns)))
        t = m._at(cpu, t + m.switch_ns)
        r.left = 5000 + m._burst(r)          # it runs a moment, then sleeps again
        m._switch(cpu, t, "R+", pick=task)
        return cpu, m._at(cpu, t + 1000)

    def _fork(self, t: int, ppid: int, pid: int, tgid: int) -> None:
        m = self.machine
        parent = self.task(ppid)
        if parent is None or pid in m.runs:
            return
        cpu, t = self.on_cpu(parent, t)
        r = m.runs[ppid]

        def fork(t):
            child = m.life.fork(parent, cpu, t, pid=pid, tgid=tgid)
            if self.memory is not None:
                self.memory.host_fork(pid, cpu, t, thread=tgid != pid)
            cr = m.runs[pid] = m._run(child, m.host_behaviour, HOST_PROFILE, host=True)
            if cr.calls is not None:          # it returns from clone() when it first runs
                cr.sys, cr.sysret = m.calls.clone, 0
            return pid

        if r.calls is not None:
            m._call(r, cpu, t, m.calls.clone, CALL_NS["clone"], fork)
        else:
            fork(t)

    def _exec(self, t: int, pid: int, filename: str, rt=None, exe=None) -> None:
        m = self.machine
        task = self.task(pid)
        if task is None:
            return
        cpu, t = self.on_cpu(task, t)
        r = m.runs[pid]
        name = filename or task.comm

        def exec_(t):
            if self.memory is not None:
                self.memory.host_exec(pid, cpu, t)
                for i in range(1, EXEC_LOOKUPS):    # (the loader's, as it starts)
                    m.queue_host(t + i * LOOKUP_NS, ("lookup", pid))
            m.life.exec(task, cpu, t, name)
            if rt is not None:                # a real-time program (chrt -f 5 sleep 1)
                task.policy, task.rt_priority = rt
                task.prio = MAX_RT_PRIO - 1 - task.rt_priority
            program = name.rsplit("/", 1)[-1]
            if program in OWN_PROFILES and r.calls is not None:   # its calls from now on
                r.calls = m.calls.of_profile(program)
                r.startup = list(r.calls.startup)                # its loader's first
            return None

        if r.calls is not None:
            t = m._call(r, cpu, t, m.calls.execve, CALL_NS["execve"], exec_)
        else:
            exec_(t)
        uprobes = m.kernel.uprobes
        if uprobes is not None and exe is not None:
            # the new program's start runs code of the file: its uprobes
            for delay, handler in uprobes.program_start(exe, pid):
                m.queue_host(t + delay, ("uprobe", pid, handler))
        if self.memory is not None:
            # the new program starts: its loader's lookups are its own
            m.keep_running(r, cpu, t + EXEC_LOOKUPS * LOOKUP_NS)
        if r.startup and m._makes_calls(r):   # and so are its loader's calls (the last ends it)
            m.keep_running(r, cpu, t + 4 * len(r.startup) * r.calls.every_ns)
        else:                                 # (made, but nobody sees them: not later either)
            r.startup = []

    def _exit(self, t: int, pid: int) -> None:
        m = self.machine
        task = self.task(pid)
        if task is None:
            return
        cpu, t = self.on_cpu(task, t)
        self.exited.add(pid)
        self.comms.pop(pid, None)
        if len(self.exited) > EXITED_KEPT:
            self.exited.clear()
        if self.memory is not None:
            self.memory.host_exit(pid, cpu, t)
        m._exit(m.runs[pid], cpu, t)
