"""What each CPU of the machine keeps: its tick and wheel timers, and whether it is
online (CPU hotplug, kernel/cpu.py).  A part of ``Machine`` (its base; the
fields are ``MachineState``'s).

Wheel timers: a kernel thread's ``schedule_timeout()``, a kworker's delayed
work sleep on a timer of the CPU's wheel (``wheel``: a heap of (bucket
instant, seq, pid)), run in the TIMER softirq of the tick that finds them
expired, with the RCU softirq after it.

Hotplug: a CPU going offline (``cpu_down``) takes nothing new from the
moment it starts (``Scheduler.online`` False: wakeups, device interrupts and
timers go to online CPUs, ``_live``), finishes the interrupts, IPIs and
reschedules it has in flight, then dies (``_down``): its task and queue move
away, its wheel timers and RCU callbacks go to the next online CPU, its
per-CPU threads stay parked (a wakeup of one is kept in ``parked``), and
whatever was still due on it (its tick, a burst's end) is void.  ``_up``
starts it again idle, with its tick, its parked threads asleep.
"""

from __future__ import annotations

import heapq

from ..kernel.irq import SOFTIRQ_RCU, SOFTIRQ_TIMER
from ..kernel.sched import CTX_SOFTIRQ, CTX_TASK
from .machine_host import HostQueue
from .kinds import _CONT, _DOWN, _IPI, _RESCHED, _TICK, _UP, _WAKE, _WHEEL_WAKE

_INFLIGHT = (_CONT, _IPI, _RESCHED)   # what a CPU going offline finishes first


class PerCpu(HostQueue):
    """``Machine``'s wheel timers and CPU hotplug."""

    def _tick(self, t: int, cpu: int) -> None:
        self._push(t + self.tick_ns, _TICK, cpu, 0)
        wheel = self.wheel[cpu]
        timers = bool(wheel) and wheel[0][0] <= t
        if self.sched.curr[cpu].pid == 0 and not timers:
            return          # NO_HZ: an idle CPU has no tick, but wakes for its timers
        q = self.rcu[cpu]
        rcu = bool(q) and q[0][0] <= t
        t1 = self._at(cpu, self.irq.tick(cpu, self._at(cpu, t), self.tick_ns, rcu=rcu))
        self._timer_softirq(cpu, t1, t, rcu)

    def _wheel_sleep(self, r, cpu: int, t: int, sleep: int, armed: bool = True) -> None:
        """``r``'s task sleeps on a wheel timer: a kernel thread's
        schedule_timeout(), a kworker's next delayed work.  ``armed``: the
        arming is traced (not for the timers armed before the machine
        started)."""
        if r.beh.pool is not None:
            r.work = self.wq.pick(r.beh.pool, r.task.cpu, self.rng.random())
            if r.work is None or r.work.timer is None:
                self._push(t + sleep, _WAKE, r.task.pid, 0)     # no such work here
                return
            timer = r.work.timer
        else:
            timer = r.timer
            if armed:
                self.timers.init(cpu, t, timer)
        timeout = max(1, -(-sleep // self.tick_ns))
        if armed:
            due = self.timers.start(cpu, t, timer, timeout)
        else:
            timer.expires = timer.bucket_expiry = self.timers.jiffies(t) + timeout
            due = self.timers.time_of(timer.bucket_expiry)
        self.seq += 1
        heapq.heappush(self.wheel[self._live(r.task.cpu)], (due, self.seq, r.task.pid))

    def _timer_softirq(self, cpu: int, t: int, due: int, rcu: bool) -> None:
        """The TIMER softirq of a tick (at ``due``) from ``t`` on: the next
        expired wheel timer runs — its function wakes a task at its own
        instant (a ``_CONT``), which goes on here — then the softirq ends,
        and the RCU softirq runs the callbacks whose grace period is over."""
        wheel = self.wheel[cpu]
        while wheel and wheel[0][0] <= due:
            pid = heapq.heappop(wheel)[2]
            r = self.runs.get(pid)
            timer = None
            if r is not None:
                timer = r.timer if r.timer is not None else \
                    r.work.timer if r.work is not None else None
            if timer is None:
                continue
            self.timers.expire_begin(cpu, t, timer)
            t = self._at(cpu, t + 1000)
            self._push(t, _CONT, cpu, (pid, _WHEEL_WAKE, due, rcu))
            return
        t = self._at(cpu, self.irq.softirq_end(cpu, t, SOFTIRQ_TIMER))
        if rcu:
            q = self.rcu[cpu]
            t = self._at(cpu, self.irq.softirq_begin(cpu, t, SOFTIRQ_RCU))
            while q and q[0][0] <= due:
                _due, comm, pid, prio = q.pop(0)
                self.life.delayed_put_task_struct(cpu, t, comm, pid, prio)
                t = self._at(cpu, t + 1000)
            t = self._at(cpu, self.irq.softirq_end(cpu, t, SOFTIRQ_RCU))
        if self.sched.need_resched[cpu]:
            self._push(t + self.switch_ns, _RESCHED, cpu, 0)
        else:
            self._back_to_idle(cpu, t)

    def _wheel_wake(self, t: int, cpu: int, r, due: int, rcu: bool) -> None:
        """A wheel timer's function: process_timeout wakes a kernel thread,
        delayed_work_timer_fn queues a kworker's work (which wakes it)."""
        timer = r.timer if r.timer is not None else r.work.timer
        if r.work is not None:
            self.wq.queue_work(cpu, t, r.work, softirq=True)
        if r.task.state in ("S", "D", "I") and not r.task.on_cpu:
            self._try_wake(r, cpu, t, CTX_SOFTIRQ)
        t = self._at(cpu, t + 1000)
        self.timers.expire_end(cpu, t, timer)
        self._timer_softirq(cpu, self._at(cpu, t + 1000), due, rcu)

    # --- CPU hotplug ---------------------------------------------------------
    def _live(self, cpu: int) -> int:
        """``cpu``, or if it is offline the next CPU online (where its
        timers and interrupts went)."""
        online = self.sched.online
        if online[cpu]:
            return cpu
        n = len(online)
        for i in range(1, n):
            c = (cpu + i) % n
            if online[c]:
                return c
        return cpu

    def cpu_dead(self, cpu: int) -> bool:
        return cpu in self.down_cpus

    def cpu_down(self, cpu: int, t: int) -> None:
        """``cpu`` starts going offline at ``t``: nothing new goes to it;
        it dies once what it is in the middle of is over (``_down``)."""
        self.sched.online[cpu] = False
        self._push(t, _DOWN, cpu, 0)

    def cpu_up(self, cpu: int, t: int) -> None:
        """``cpu`` comes back at ``t`` (``_up``)."""
        self._push(t, _UP, cpu, 0)

    def cpu_state(self, cpu: int, online: bool, t: int) -> None:
        """The machine stands still: ``cpu``'s state changes at once (its
        start puts nothing on a dead CPU)."""
        if online:
            self.down_cpus.discard(cpu)
            for pid in self.parked.pop(cpu, ()):
                r = self.runs.get(pid)
                if r is not None and not r.task.on_cpu and r.task.state != "R":
                    self._push(t + self._sleep(r), _WAKE, pid, 0)
        else:
            self.down_cpus.add(cpu)

    def _down(self, t: int, cpu: int) -> None:
        """take_cpu_down(): once no interrupt, IPI or reschedule of
        ``cpu`` is pending, its tasks move away (``Scheduler.cpu_dying``),
        its timers and RCU callbacks go to the next online CPU, and it is
        dead."""
        if self.sched.online[cpu]:
            return                            # (brought back before it died)
        last = max((e[0] for e in self.heap if e[2] in _INFLIGHT and e[3] == cpu), default=None)
        if last is not None:
            self._push(max(last, self.clock[cpu]) + 1, _DOWN, cpu, 0)
            return
        sched = self.sched
        t = self._at(cpu, t)
        r = self.runs.get(sched.curr[cpu].pid) if sched.curr[cpu].pid else None
        if r is not None:
            r.left -= t - r.since
            self._void(r)                     # its pending end is void
        dests, parked = sched.cpu_dying(cpu, t)
        for task in parked:
            self.parked.setdefault(cpu, {})[task.pid] = None
        for dest in sorted(set(dests)):
            if sched.curr[dest].pid == 0:     # an idle CPU: it must look at its queue
                sched.need_resched[dest] = True
                self.irq.send_reschedule(cpu, t, dest, CTX_TASK)
                self._push(t + self.ipi_ns, _IPI, dest, 0)
        to = self._live(cpu)
        for e in self.wheel[cpu]:
            heapq.heappush(self.wheel[to], e)
        self.wheel[cpu] = []
        if self.rcu[cpu]:
            self.rcu[to] = sorted(self.rcu[to] + self.rcu[cpu], key=lambda e: e[0])
            self.rcu[cpu] = []
        self.down_cpus.add(cpu)
        hp = self.kernel.cpuhp
        if hp is not None:
            hp.note(cpu, t, False)

    def _up(self, t: int, cpu: int) -> None:
        """The CPU is back at ``t``: idle, its tick again, its parked threads
        asleep as they would be."""
        if cpu not in self.down_cpus:
            return
        sched = self.sched
        t = self._at(cpu, t)
        self.down_cpus.discard(cpu)
        sched.online[cpu] = True
        sched.curr[cpu] = sched.idle[cpu]
        sched.need_resched[cpu] = False
        sched.idle_enter(cpu, t)
        self._push(t + self.tick_ns, _TICK, cpu, 0)
        self.cpu_state(cpu, True, t)
        hp = self.kernel.cpuhp
        if hp is not None:
            hp.note(cpu, t, True)
