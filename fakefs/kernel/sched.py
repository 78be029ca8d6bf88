"""Tasks, runqueues and the scheduler core (kernel/sched/core.c, fair.c).

Each CPU has a current task and a runqueue of runnable tasks; a task is
running (on one CPU at a time), runnable (queued), or asleep in a state
(``S``, ``D``, ``I``).  The code paths the machine drives are the
kernel's:

* ``schedule(cpu, ts, prev_state)``: the current task stops (it sleeps in
  ``prev_state``, or ``R+`` when preempted) and the next runnable one, or
  the idle task, is switched in — ``sched_switch`` fires with irqs off and
  preempt depth 2 (rq lock + ``__schedule``'s own preempt_disable);
* ``try_to_wake_up(task, cpu, ts, ctx)``: wakes a sleeping task from a
  context (task, softirq, hard irq); ``sched_waking`` fires under the
  task's pi_lock, ``sched_wakeup`` one level deeper under the target's rq
  lock, with need-resched set when the wakee preempts the waker's CPU;
  a wakeup onto another CPU than the task last ran on fires
  ``sched_migrate_task``;
* ``scheduler_tick(cpu, ts)``: the running task's slice ran out and others
  wait: need-resched is set and the switch follows the interrupt.

``update_curr()`` charges the running task the CPU time since it was last
charged and fires ``sched_stat_runtime``: when it leaves the CPU (``d..2.``,
before the switch), at the tick (``d.h1.``) and when a wakeup onto its CPU
checks for preemption (on the waker's CPU, one level under the wakee's rq
lock, before ``sched_wakeup``).  The idle task is never charged.

Tracepoints are :class:`~fakefs.kernel.tracepoint.Tracepoint` objects:
probes get ``(cpu, ts, pid, flags, preempt_count, args)``.  The context
flags and depths are what a 6.12 kernel records there (measured on a
stock kernel: ``d..2.`` for every switch; wakeups ``d..3.``/``d..4.`` from
tasks, ``d.s3.``/``d.s4.`` from softirqs, ``d.h2.``/``d.h3.`` from hard
irqs).
"""

from __future__ import annotations

import bisect
import os

from .tracepoint import Tracepoints

# struct trace_entry.flags bits (kernel/trace/trace.h)
IRQS_OFF = 0x01
NEED_RESCHED = 0x04
HARDIRQ = 0x08
SOFTIRQ = 0x10
PREEMPT_RESCHED = 0x20
RESCHED = NEED_RESCHED | PREEMPT_RESCHED

# where a wakeup comes from: (flags, preempt depth at sched_waking)
CTX_TASK = (IRQS_OFF, 3)
CTX_SOFTIRQ = (IRQS_OFF | SOFTIRQ, 3)
CTX_HARDIRQ = (IRQS_OFF | HARDIRQ, 2)

SWITCH_CTX = (IRQS_OFF, 2)
SLEEP_STATES = ("S", "D", "I")
BASE_SLICE_NS = 750_000           # sysctl_sched_base_slice before CPU scaling
MAX_RT_PRIO = 100             # prio below it: a real-time task (SCHED_FIFO/RR)
RESERVED_PIDS = 300          # alloc_pid() never hands out a lower pid again
AWAKE, HALTED, UNSEEN = 0, 1, 2   # a CPU's state in ``Scheduler.halts``
PWR_EVENT_EXIT = 0xFFFFFFFF       # cpu_idle's state when the CPU leaves idle


class Task:
    __slots__ = ("pid", "tgid", "comm", "prio", "cpu", "kthread", "bound", "allowed", "state",
                 "on_cpu", "slice_end", "exec_start", "sum_exec_runtime", "policy", "rt_priority",
                 "mm")

    def __init__(self, pid: int, comm: str, cpu: int = 0, tgid: int | None = None,
                 prio: int = 120, kthread: bool = False):
        self.pid = pid
        self.tgid = pid if tgid is None else tgid
        self.comm = comm[:15]
        self.prio = prio
        self.cpu = cpu
        self.kthread = kthread
        # it may run on its CPU only (a per-CPU kernel thread, kthread_bind());
        # False: on any
        self.bound = False
        # the CPUs it may run on (``cpus_mask``, set by sched_setaffinity()),
        # in order; None: every CPU
        self.allowed: tuple[int, ...] | None = None
        self.state = "R"          # R (running or runnable) or a sleep state
        self.on_cpu = False
        self.slice_end = 0
        self.exec_start = 0           # when update_curr() last charged it
        self.sum_exec_runtime = 0
        self.policy = 0               # SCHED_NORMAL; SCHED_FIFO 1, SCHED_RR 2 (prio 99 - rt_priority)
        self.rt_priority = 0
        # its user memory as probes read it (``copy_from_user_nofault()``):
        # an object with ``read(addr, size)`` and ``read_string(addr)``, None
        # when the model has none (a kernel thread; a simulated task's)
        self.mm = None

    def __repr__(self):
        return f"Task({self.comm}-{self.pid})"


TASK_STACK_BASE = 0xffffc90000000000   # vmalloc'ed kernel stacks (THREAD_SIZE 16 KiB)
TASK_STACK_SIZE = 0x4000


def task_stack(pid: int) -> int:
    """Where the kernel stack of task ``pid`` is (things kept on it, such
    as a sleeper's timer, have addresses in it)."""
    return TASK_STACK_BASE + (pid & 0xffff) * TASK_STACK_SIZE


def host_cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _ilog2(n: int) -> int:
    return max(0, n.bit_length() - 1)


def _awake_share(t: int, halted: int, unseen: int) -> float:
    """Of the time simulated before ``t``, the share not halted."""
    seen = t - unseen
    return (seen - halted) / seen if seen > 0 else 1.0


def _instant(entry) -> int:
    return entry[0]


class Scheduler:
    """The task list, per-CPU runqueues and current tasks."""

    def __init__(self, nr_cpus: int, tracepoints: Tracepoints | None = None):
        tps = tracepoints or Tracepoints()
        self.nr_cpus = nr_cpus
        self.tasks: dict[int, Task] = {}
        self.idle = [Task(0, "swapper/%d" % c, cpu=c, prio=120, kthread=True) for c in range(nr_cpus)]
        for t in self.idle:
            t.on_cpu = True
        self.curr = list(self.idle)
        self.rq: list[list[Task]] = [[] for _ in range(nr_cpus)]
        self.need_resched = [False] * nr_cpus
        self.next_pid = 1
        # pids the real machine's processes hold, when they are tasks here
        # too (see sim/host.py): fn(pid) -> bool, or None
        self.pid_in_use = None
        # where pids from RESERVED_PIDS on start (None: at once): past the
        # real machine's pid_max, where it hands out none, when its
        # processes are tasks here too -- it hands out the others again
        # and again as its pids wrap
        self.pid_floor: int | None = None
        # 6.12 scales the base slice by 1 + ilog2(min(ncpus, 8)) (SCHED_TUNABLESCALING_LOG)
        self.slice_ns = BASE_SLICE_NS * (1 + _ilog2(min(nr_cpus, 8)))
        self.tp_sched_switch = tps.get("sched_switch")
        self.tp_sched_waking = tps.get("sched_waking")
        self.tp_sched_wakeup = tps.get("sched_wakeup")
        self.tp_sched_migrate_task = tps.get("sched_migrate_task")
        self.tp_cpu_idle = tps.get("cpu_idle")
        self.tp_sched_stat_runtime = tps.get("sched_stat_runtime")
        self.idling = [False] * nr_cpus       # in the idle routine (halted)
        # cpu_active(): False from the moment a CPU starts going offline
        # (kernel/cpu.py): nothing new is put on it
        self.online = [True] * nr_cpus
        self.switch_hooks: list = []      # fn(cpu, ts, prev, next): who runs where
        # per CPU, (instant, task) of each switch since forget_before()'s
        # instant, the first one the task running then: who ran when
        self.history: list[list[tuple[int, Task]]] = [[(0, t)] for t in self.idle]
        # per CPU, (instant, state, ns halted before it, ns not simulated
        # before it) of each time it halted, woke or stopped being simulated
        # since forget_before()'s instant, the first one the state then
        # (AWAKE, HALTED, UNSEEN): when it was halted (a halted CPU does
        # nothing), when nobody knows (the machine did not run)
        self.halts: list[list[tuple[int, int, int, int]]] = [[(0, AWAKE, 0, 0)] for _ in self.idle]

    def spawn(self, comm: str, cpu: int = 0, kthread: bool = False, pid: int | None = None,
              tgid: int | None = None, prio: int = 120) -> Task:
        if pid is None:
            pid = self.alloc_pid()
        elif pid >= self.next_pid and self.pid_in_use is None:
            self.next_pid = pid + 1
        t = Task(pid, comm, cpu=cpu, kthread=kthread, tgid=tgid, prio=prio)
        self.tasks[pid] = t
        return t

    def alloc_pid(self) -> int:
        """``alloc_pid()``: the next pid not in use (here or, for the pids the
        real machine's processes hold, there), for a task about to be made
        (``spawn()`` without a pid, or ``spawn(pid=...)`` later)."""
        in_use = self.pid_in_use
        pid = self.next_pid
        floor = self.pid_floor
        if floor is not None and RESERVED_PIDS <= pid < floor:
            pid = floor
        while pid in self.tasks or (in_use is not None and in_use(pid)):
            pid += 1
        self.next_pid = pid + 1
        return pid

    def find(self, pid: int) -> Task | None:
        if pid == 0:
            return self.idle[0]
        return self.tasks.get(pid)

    def flags(self, cpu: int, base: int) -> int:
        return base | RESCHED if self.need_resched[cpu] else base

    def depth(self, cpu: int, pc: int) -> int:
        """The preempt depth an event records on ``cpu`` where the code
        path itself disabled preemption ``pc`` times: the idle task runs
        with preemption disabled (init_idle_preempt_count), so what it and
        the interrupts on top of it do is one deeper (``d.h1.``, ``..s1.``);
        an interrupt's own count is outside the depth's bits."""
        return pc + 1 if self.curr[cpu].pid == 0 else pc

    def fire(self, tp, cpu: int, t: int, base: int, pc: int, args) -> None:
        """Fire ``tp`` on ``cpu`` as its running task, in context ``base``
        (plus need-resched when set) at preempt depth ``pc`` (the path's:
        the idle task's own is added)."""
        if tp.probes:
            tp.fire(cpu, t, self.curr[cpu].pid, self.flags(cpu, base), self.depth(cpu, pc), args)

    # --- the code paths ---------------------------------------------------
    def enqueue(self, task: Task, cpu: int) -> None:
        """A runnable task that is not running joins ``cpu``'s runqueue."""
        task.state = "R"
        task.cpu = cpu
        self.rq[cpu].append(task)

    def schedule(self, cpu: int, ts: int, prev_state: str = "R+", pick: Task | None = None) -> Task:
        """__schedule(): ``cpu``'s task stops (asleep in ``prev_state``,
        ``R+`` preempted, ``R`` for the idle task); the first queued task
        (or ``pick``, a queued task with the earliest deadline, such as the
        wakee that preempted), or the idle task, runs next.  Returns the
        next task."""
        prev = self.curr[cpu]
        q = self.rq[cpu]
        if prev.pid == 0:
            prev_state = "R"
        if prev_state in ("R", "R+") and prev.pid != 0:
            q.append(prev)
            prev.state = "R"
        elif prev.pid != 0:
            prev.state = prev_state
        if pick is None and q:
            # pick_next_task(): a real-time task (prio < 100) before the
            # others, the highest first (the machine's are all prio 120 but
            # for real processes run with chrt)
            for x in q:
                if x.prio < MAX_RT_PRIO and (pick is None or x.prio < pick.prio):
                    pick = x
        if pick is not None and pick in q:
            q.remove(pick)
            nxt = pick
        else:
            nxt = q.pop(0) if q else self.idle[cpu]
        if nxt is prev:
            self.need_resched[cpu] = False
            return prev
        flags, pc = SWITCH_CTX
        self.update_curr(cpu, prev, ts, cpu, flags, pc)
        prev.on_cpu = False
        nxt.on_cpu = True
        nxt.cpu = cpu
        nxt.state = "R"
        nxt.slice_end = ts + self.slice_ns
        nxt.exec_start = ts
        self.curr[cpu] = nxt
        self.history[cpu].append((ts, nxt))
        self.need_resched[cpu] = False
        if self.tp_sched_switch.probes:
            self.tp_sched_switch.fire(cpu, ts, prev.pid, flags, pc,
                                      (prev.comm, prev.pid, prev.prio, prev_state,
                                       nxt.comm, nxt.pid, nxt.prio))
        for hook in self.switch_hooks:
            hook(cpu, ts, prev, nxt)
        return nxt

    def busy_spans(self, t0: int, t1: int) -> list[tuple]:
        """(cpu, start, end, task) of the time in [t0, t1) each CPU ran a
        task other than its idle task."""
        out = []
        for cpu, h in enumerate(self.history):
            i = max(bisect.bisect_right(h, t0, key=_instant) - 1, 0)
            for j in range(i, len(h)):
                start, task = h[j]
                if start >= t1:
                    break
                end = h[j + 1][0] if j + 1 < len(h) else t1
                start, end = max(start, t0), min(end, t1)
                if task.pid and end > start:
                    out.append((cpu, start, end, task))
        return out

    def forget_before(self, t: int) -> None:
        """Keep who ran, and when the CPUs were halted, from instant ``t`` on."""
        for h in self.history:
            i = bisect.bisect_right(h, t, key=_instant) - 1
            if i > 0:
                del h[:i]
        for h in self.halts:
            i = bisect.bisect_right(h, t, key=_instant) - 1
            if i > 0:
                del h[:i]

    def _halt(self, cpu: int, ts: int, state: int) -> None:
        """``cpu`` is in ``state`` from ``ts`` on."""
        h = self.halts[cpu]
        last, was, ch, cu = h[-1]
        if ts < last:
            ts = last
        h.append((ts, state, ch + ts - last if was == HALTED else ch,
                  cu + ts - last if was == UNSEEN else cu))

    def unseen(self, t: int) -> None:
        """From ``t`` nothing simulates the CPUs (the machine stands
        still or skips): nobody knows when they are halted."""
        for cpu in range(self.nr_cpus):
            self._halt(cpu, t, UNSEEN)

    def halted_spans(self, cpu: int, t0: int, t1: int) -> list[tuple[int, int]]:
        """(start, end) of the time in [t0, t1) ``cpu`` was halted (in its
        idle routine, waiting for an interrupt), in time order."""
        h = self.halts[cpu]
        last = h[-1]
        if last[0] <= t0:           # one state all along (a live segment's, mostly)
            return [(t0, t1)] if last[1] == HALTED and t1 > t0 else []
        out = []
        i = max(bisect.bisect_right(h, t0, key=_instant) - 1, 0)
        for j in range(i, len(h)):
            start, state, _ch, _cu = h[j]
            if start >= t1:
                break
            if state == HALTED:
                end = h[j + 1][0] if j + 1 < len(h) else t1
                start, end = max(start, t0), min(end, t1)
                if end > start:
                    out.append((start, end))
        return out

    def cpu_time(self, cpu: int, t: int) -> tuple[int, int]:
        """(ns halted, ns not simulated) of ``cpu`` before ``t``, since boot
        (``t`` at or after forget_before()'s instant); the rest it was
        awake: the idle time a kernel keeps (``get_cpu_idle_time_us()``),
        and what nobody saw."""
        h = self.halts[cpu]
        i = max(bisect.bisect_right(h, t, key=_instant) - 1, 0)
        start, state, ch, cu = h[i]
        d = t - start if t > start else 0
        return ch + (d if state == HALTED else 0), cu + (d if state == UNSEEN else 0)

    def cpu_times(self, t: int) -> list[tuple[int, int, int]]:
        """Per CPU, (``t``, ns halted, ns not simulated) before ``t``: a
        reading for ``awake_seconds()``."""
        return [(t, *self.cpu_time(cpu, t)) for cpu in range(self.nr_cpus)]

    def awake_share(self, cpu: int, t: int) -> float:
        """The share of the time simulated before ``t`` that ``cpu`` was
        awake: what counts for time nobody simulated."""
        return _awake_share(t, *self.cpu_time(cpu, t))

    @staticmethod
    def awake_seconds(before: list, now: list) -> list[float]:
        """Per CPU, the seconds it was awake between two ``cpu_times()``
        readings: the time it could do anything (time not simulated at its
        share of the time simulated)."""
        return [((t1 - t0) - (h1 - h0) - (u1 - u0) + (u1 - u0) * _awake_share(t1, h1, u1)) / 1e9
                for (t0, h0, u0), (t1, h1, u1) in zip(before, now)]

    def select_task_rq(self, task: Task) -> int:
        """Where a woken task goes: the CPU it is bound to, else its last
        CPU if idle, else an idle CPU, else its last CPU
        (select_idle_sibling, roughly)."""
        if task.bound:
            return task.cpu             # one CPU allowed: select_task_rq() asks nobody
        prev = task.cpu
        ok = task.allowed
        online = self.online
        if (ok is None or prev in ok) and online[prev] and self.curr[prev].pid == 0 \
                and not self.rq[prev]:
            return prev
        for c in range(self.nr_cpus) if ok is None else ok:
            if online[c] and self.curr[c].pid == 0 and not self.rq[c]:
                return c
        if (ok is None or prev in ok) and online[prev]:
            return prev
        for c in ok or ():                 # select_fallback_rq(): an allowed CPU online,
            if online[c]:
                return c
        return online.index(True)          # else any online CPU (the cpuset's)

    def set_cpus_allowed(self, task: Task, allowed, cpu: int, ts: int) -> None:
        """``__set_cpus_allowed_ptr()`` from ``cpu`` (the caller's) for a
        task that is not running: its new mask (None: every CPU); queued on
        a CPU it may no longer use, it moves to one it may
        (``move_queued_task()``, a ``sched_migrate_task``).  A running task
        must be switched out first (the stopper thread's work: the caller's)."""
        task.allowed = allowed
        if allowed is None or task.cpu in allowed:
            return
        assert not task.on_cpu, "a running task is switched out first"
        dest = self.select_task_rq(task)
        if task.state == "R" and task in self.rq[task.cpu]:
            self.rq[task.cpu].remove(task)
            if self.tp_sched_migrate_task.probes:
                # (under the runqueue's lock: irqs off, preemption disabled)
                self.tp_sched_migrate_task.fire(cpu, ts, self.curr[cpu].pid,
                                                self.flags(cpu, IRQS_OFF), self.depth(cpu, 1),
                                                (task.comm, task.pid, task.prio, task.cpu, dest))
            self.enqueue(task, dest)
        else:
            task.cpu = dest               # asleep: it wakes where it may run

    def try_to_wake_up(self, task: Task, cpu: int, ts: int, ctx=CTX_TASK,
                       preempt: bool = False) -> int | None:
        """Wake ``task`` (asleep) from ``cpu`` in context ``ctx``.  Returns
        the CPU that must reschedule (its task is preempted), or None."""
        if task.state not in SLEEP_STATES or task.on_cpu:
            return None                           # not asleep: nothing to do
        target = self.select_task_rq(task)
        base, depth = ctx
        waker = self.curr[cpu]
        at = self.depth(cpu, depth)
        if self.tp_sched_waking.probes:
            self.tp_sched_waking.fire(cpu, ts, waker.pid, self.flags(cpu, base), at,
                                      (task.comm, task.pid, task.prio, target))
        if target != task.cpu and self.tp_sched_migrate_task.probes:
            self.tp_sched_migrate_task.fire(cpu, ts, waker.pid, self.flags(cpu, base), at,
                                            (task.comm, task.pid, task.prio, task.cpu, target))
        self.enqueue(task, target)
        self.update_curr(cpu, self.curr[target], ts, target, self.flags(cpu, base), depth + 1)
        resched = None
        # a real-time wakee preempts a lower-priority task (check_preempt_curr())
        if self.curr[target].pid == 0 or preempt or (task.prio < MAX_RT_PRIO
                                                    and task.prio < self.curr[target].prio):
            resched = target
            if target == cpu:
                self.need_resched[cpu] = True
        if self.tp_sched_wakeup.probes:
            self.tp_sched_wakeup.fire(cpu, ts, waker.pid, self.flags(cpu, base), at + 1,
                                      (task.comm, task.pid, task.prio, target))
        return resched

    def cpu_dying(self, cpu: int, ts: int) -> tuple[list[int], list[Task]]:
        """``cpu`` goes offline at ``ts`` (not ``online`` any more): its
        task is switched out for the idle task (preempted: ``R+``), then it
        and every task queued there move to online CPUs (``sched_migrate_task``
        from the dying CPU, under its runqueue's lock); its per-CPU threads
        (``bound``) stay, asleep (parked).  Returns the CPUs the others went
        to (one entry a task) and the parked threads."""
        prev = self.curr[cpu]
        q = self.rq[cpu]
        if prev.pid != 0:
            flags, pc = SWITCH_CTX
            self.update_curr(cpu, prev, ts, cpu, flags, pc)
            prev.on_cpu = False
            prev.state = "R"
            idle = self.idle[cpu]
            idle.exec_start = ts
            self.curr[cpu] = idle
            self.history[cpu].append((ts, idle))
            self.need_resched[cpu] = False
            if self.tp_sched_switch.probes:
                self.tp_sched_switch.fire(cpu, ts, prev.pid, flags, pc,
                                          (prev.comm, prev.pid, prev.prio, "R+",
                                           idle.comm, idle.pid, idle.prio))
            for hook in self.switch_hooks:
                hook(cpu, ts, prev, idle)
            q.insert(0, prev)
        dests, parked = [], []
        for task in list(q):
            q.remove(task)
            if task.bound:
                task.state = "S"
                parked.append(task)
                continue
            dest = self.select_task_rq(task)
            if self.tp_sched_migrate_task.probes:
                self.tp_sched_migrate_task.fire(cpu, ts, 0, self.flags(cpu, IRQS_OFF),
                                                self.depth(cpu, 1),
                                                (task.comm, task.pid, task.prio, cpu, dest))
            self.enqueue(task, dest)
            dests.append(dest)
        self.need_resched[cpu] = False
        if self.idling[cpu]:
            self.idling[cpu] = False
            self._halt(cpu, ts, AWAKE)
        return dests, parked

    # --- the idle loop (kernel/sched/idle.c) ------------------------------
    def idle_enter(self, cpu: int, ts: int) -> None:
        """The idle task halts the CPU: ``cpu_idle`` with the state."""
        if self.idling[cpu]:
            if self.halts[cpu][-1][1] == UNSEEN:
                self._halt(cpu, ts, HALTED)      # (simulated again, as it was)
            return
        self.idling[cpu] = True
        self._halt(cpu, ts, HALTED)
        if self.tp_cpu_idle.probes:
            self.tp_cpu_idle.fire(cpu, ts, 0, self.flags(cpu, IRQS_OFF), 1, (1, cpu))

    def idle_exit(self, cpu: int, ts: int) -> None:
        """An interrupt woke the halted CPU: ``cpu_idle`` PWR_EVENT_EXIT."""
        if not self.idling[cpu]:
            return
        self.idling[cpu] = False
        self._halt(cpu, ts, AWAKE)
        if self.tp_cpu_idle.probes:
            self.tp_cpu_idle.fire(cpu, ts, 0, self.flags(cpu, IRQS_OFF), 1,
                                  (PWR_EVENT_EXIT, cpu))

    def update_curr(self, cpu: int, task: Task, ts: int, where: int, flags: int, pc: int) -> None:
        """Charge ``task``, running on CPU ``where``, its time since it was
        last charged (the code runs on ``cpu``)."""
        if task.pid == 0 or not task.on_cpu or task.cpu != where:
            return
        delta = ts - task.exec_start
        if delta <= 0:
            return
        task.exec_start = ts
        task.sum_exec_runtime += delta
        if self.tp_sched_stat_runtime.probes:
            self.tp_sched_stat_runtime.fire(cpu, ts, self.curr[cpu].pid, flags,
                                            self.depth(cpu, pc), (task.comm, task.pid, delta))

    def scheduler_tick(self, cpu: int, ts: int) -> bool:
        """The tick on a busy CPU: True when the running task's slice is
        over and another task waits (need-resched is set)."""
        curr = self.curr[cpu]
        self.update_curr(cpu, curr, ts, cpu, self.flags(cpu, IRQS_OFF | HARDIRQ), 1)
        if curr.pid != 0 and self.rq[cpu] and ts >= curr.slice_end:
            self.need_resched[cpu] = True
        return self.need_resched[cpu]
