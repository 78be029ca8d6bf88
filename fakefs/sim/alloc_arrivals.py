"""The allocation workload's operations as events of the machine, while the
allocators are traced (issue 33: a tracepoint writes its record when it
fires, so an operation must happen at its instant, not be placed there
after the step).

Each kind of operation (:class:`OpKind`: a churning call site, a readahead,
a packet, a path lookup ...) has a rate for the whole machine and a call
site; only a task that gets to that call site makes it (``Workload.reaches``:
a kworker does not look up path names; a site of 0 is any task's, an
atomic allocation made in an interrupt on top of whatever runs).  So the
rate is spread over the CPU time of the tasks that can: while such a task
runs, it makes operations of that kind at ``rate / share``, where ``share``
is the number of CPUs those tasks kept busy lately (an estimate from the
scheduler's history, a second's moving average: :class:`Shares`).  A
running task's operations are a Poisson process of the sum of its kinds'
intensities: the machine queues its first arrival when the task is
switched in (``Machine._switched_in``), for that stint (the task's pid and
the stint's start: one that comes after it was switched out is void) and,
when one comes, the task makes one operation of a kind drawn by intensity
and the next is queued.

What is due at an instant (an object's lifetime runs out, a tree walk, the
sample module's timer) is one more queued event of the machine, on a CPU
drawn at random (an offline one frees nothing), at the instant it is due.
The workload's clock (``AllocWorkload.now``) runs ``shift`` behind the
kernel's: time the machine skipped is time it did nothing.

Draws: the operations' own from the workload's RNG, the instants and kinds
from ``alloc_workload-moments``.
"""

from __future__ import annotations

import bisect

from ..kernel.lib._mt import expovariate
from .kinds import _ALLOC, _ALLOC_DUE

NS = 1_000_000_000
# the shares' moving average: how far back the estimate looks, how often it
# is folded in, and the least share assumed (a site only a task running
# 1 % of a CPU gets to is made at most 100x its rate while it runs)
SHARE_TAU_NS = NS
SHARE_FOLD_NS = 20_000_000
SHARE_FLOOR = 0.01


class OpKind:
    """One kind of operation: ``rate`` a second on the whole machine, made
    by the tasks that get to return address ``site`` (0: any), ``do()``
    making it (the workload's lifetime clock already at its instant)."""

    __slots__ = ("rate", "site", "do")

    def __init__(self, rate: float, site: int, do):
        self.rate = rate
        self.site = site
        self.do = do


class Shares:
    """How many CPUs the tasks able to make each kind kept busy lately:
    the prior from the tasks' behaviour (mean burst over burst plus
    sleep), then the scheduler's history of the steps folded in."""

    __slots__ = ("value", "acc", "acc_ns")

    def __init__(self, n: int):
        self.value = [0.0] * n
        self.acc = [0] * n          # busy ns per kind since the last fold
        self.acc_ns = 0

    def prior(self, tasks, kinds_of, nr_cpus: int) -> None:
        """From each task's (pid, long-run share of a CPU)."""
        v = [0.0] * len(self.value)
        total = sum(s for _pid, s in tasks) or 1.0
        scale = min(1.0, nr_cpus / total)       # (more wanted than there is)
        for pid, s in tasks:
            for i in kinds_of(pid):
                v[i] += s * scale
        self.value = v
        self.acc = [0] * len(v)
        self.acc_ns = 0

    def add(self, busy: dict, kinds_of_group, span: int) -> bool:
        """A step of ``span`` ns with ``busy`` ns per group of tasks;
        True when the estimate moved (folded in)."""
        acc = self.acc
        for g, ns in busy.items():
            for i in kinds_of_group(g):
                acc[i] += ns
        self.acc_ns += span
        if self.acc_ns < SHARE_FOLD_NS:
            return False
        a = min(1.0, self.acc_ns / SHARE_TAU_NS)
        span_ns = self.acc_ns
        self.value = [v + a * (x / span_ns - v) for v, x in zip(self.value, acc)]
        self.acc = [0] * len(acc)
        self.acc_ns = 0
        return True


class Arrivals:
    """``Machine.allocs``: the allocation workload's operations as the
    machine's events while the allocators are traced (``live``)."""

    __slots__ = ("aw", "machine", "sched", "rng", "nr_cpus", "life", "trace", "kinds", "shares",
                 "live",
                 "shift", "groups", "weights", "armed_at", "armed_n", "window", "_states")

    def __init__(self, aw, machine):
        self.aw = aw
        self.machine = machine
        self.sched = machine.sched
        self.rng = aw.moments.rng
        self.nr_cpus = self.sched.nr_cpus
        self.life = aw.life                 # the objects due (alloc_history.Lifetimes)
        self.trace = aw.calls.trace         # where and when the allocators' events happen
        self.kinds: list[OpKind] = []
        self.shares = Shares(0)
        self.live = False
        self.shift = 0              # kernel time - the workload's time
        self.groups: dict = {}      # group key -> the kinds its tasks make (indices)
        self.weights: dict = {}     # group key -> (cumulative intensities, kinds)
        self.armed_at = None        # the instant of the due event queued, if any
        self.armed_n = 0            # ... and its number (an older one is void)
        self.window = None          # the step the machine runs live
        wl = machine.kernel.workload
        self._states = wl.walk.states if wl is not None else {}

    # --- the step -----------------------------------------------------------
    def pay_slice(self) -> bool:
        """A slice of the time the workload owes, when the next step runs
        live (the allocators are traced) and it owes some (else ``begin``
        settles it all at once: up to OWED_MAX_NS of operations, ~140 ms of
        work on a slow host): whether it did one (``Timekeeper.debts``)."""
        aw = self.aw
        if self.live or aw.owed <= 0 or not aw.calls.trace.traced():
            return False
        aw.settle_slice()
        return True

    def begin(self, t0: int, t1: int) -> None:
        """The machine runs [t0, t1): live while the allocators are traced."""
        aw = self.aw
        traced = aw.calls.trace.traced()
        if traced and not self.live:
            aw.settle()                          # what was owed, untraced, first
            self.kinds = aw.op_kinds()
            self.groups.clear()
            self.weights.clear()
            self.shares = Shares(len(self.kinds))
            self.shares.prior(self._task_shares(), self._kinds_of_pid, self.nr_cpus)
            self.live = True
            self.shift = t0 - aw.now
            self.armed_at = None
            m = self.machine
            for cpu in range(self.nr_cpus):      # the tasks running now
                r = m.runs.get(self.sched.curr[cpu].pid)
                if r is not None:
                    self.arm(cpu, r, max(t0, m.clock[cpu]))
        elif not traced:
            self.live = False                    # (queued arrivals are void)
        self.window = (t0, t1) if self.live else None
        if self.live:
            if self.armed_at is not None and self.armed_at < t0:
                self.armed_at = None             # (its CPU went down: void)
            self._rearm(t0)

    def end(self, t0: int, t1: int) -> bool:
        """The workload's step hook for [t0, t1): True when the machine ran
        it live (its operations are made); the estimate takes the step."""
        if not self.live or self.window != (t0, t1):
            self.live = False
            return False
        self.window = None
        self.aw.now = t1 - self.shift
        if self.shares.add(self._busy(t0, t1), self._kinds_of_group, t1 - t0):
            self.weights.clear()
        return True

    def restarted(self, t: int) -> None:
        """The machine starts again at ``t`` (its queue emptied): the
        workload's clock stood still over what was skipped."""
        if self.live:
            self.shift = t - self.aw.now
        self.armed_at = None

    # --- arrivals -----------------------------------------------------------
    def arm(self, cpu: int, r, t: int, w=None) -> None:
        """``r``'s task runs on ``cpu`` from ``t``: its next operation is
        queued (``w``: its ``_weights``, when known)."""
        if w is None:
            w = self._weights(r.task.pid)
            if w is None:
                return
        dt = int(expovariate(self.rng, w[0][-1]) * NS) + 1
        self.machine._push(t + dt, _ALLOC, cpu, (r.task.pid, r.since))

    def fire(self, t: int, cpu: int, stint) -> None:
        """The arrival queued for ``stint`` (pid, since) comes on ``cpu`` at
        ``t``: void unless that task still runs there, in that stint and burst."""
        m = self.machine
        task = self.sched.curr[cpu]
        if task.pid != stint[0] or not self.live:
            return
        r = m.runs.get(task.pid)
        if r is None or r.since != stint[1] or t >= r.since + r.left:
            return
        t = m._at(cpu, t)
        w = self._weights(task.pid)
        if w is None:
            return
        cum, idx = w
        k = self.kinds[idx[bisect.bisect_right(cum, self.rng.random() * cum[-1])]]
        self._make(cpu, t, k.do)
        first = self.life.first()
        if self.armed_at is None or first is not None and first + self.shift < self.armed_at:
            self._rearm(t)
        self.arm(cpu, r, t, w)

    def _make(self, cpu: int, t: int, do) -> None:
        self.life.op_time = t - self.shift
        self.trace.at(cpu, t)
        do()
        self.trace.when = None

    # --- what is due --------------------------------------------------------
    def due(self, t: int, cpu: int, n: int) -> None:
        """The due event number ``n`` on ``cpu`` at ``t``: what is due by
        then happens (at its instant, or when the CPU got there)."""
        if n != self.armed_n or not self.live:
            return
        self.armed_at = None
        aw = self.aw
        t = self.machine._at(cpu, t)
        w = t - self.shift
        life = self.life
        self.trace.at(cpu, t)                   # (each at its instant, or when the CPU got there)
        for _when, fn, obj in life.due(w + 1):
            life.op_time = w
            fn(obj)
        life.op_time = w
        aw.now = w
        aw.timed(w, _nothing)                   # (a tree walk, ctagmod's timer)
        self.trace.when = None
        self._rearm(t)

    def _rearm(self, t: int) -> None:
        """The earliest thing due is queued (a new event when it is earlier
        than the one queued)."""
        aw = self.aw
        nxt = aw.next_timed()
        first = aw.life.first()
        if first is not None and first < nxt:
            nxt = first
        at = max(nxt + self.shift, t)
        if self.armed_at is not None and self.armed_at <= at:
            return
        self.armed_at = at
        self.armed_n += 1
        m = self.machine
        m._push(at, _ALLOC_DUE, m._live(int(self.rng.random() * self.nr_cpus)), self.armed_n)

    # --- intensities --------------------------------------------------------
    def _group(self, pid: int):
        ts = self._states.get(pid)
        return (ts.profile, id(ts.roots)) if ts is not None else None

    def _kinds_of_pid(self, pid: int) -> list:
        return self._group_kinds(pid)[1]

    def _group_kinds(self, pid: int) -> tuple:
        """(group key, the kinds its tasks make) of task ``pid``."""
        g = self._group(pid)
        got = self.groups.get(g)
        if got is None:
            reaches = self.machine.kernel.workload.reaches
            got = self.groups[g] = [i for i, k in enumerate(self.kinds)
                                    if not k.site or reaches(pid, k.site)]
        return g, got

    def _kinds_of_group(self, g) -> list:
        return self.groups.get(g, ())

    def _weights(self, pid: int):
        """(cumulative intensities, kinds) of task ``pid``'s operations,
        or None when it makes none."""
        g = self._group(pid)
        w = self.weights.get(g, False)
        if w is False:
            idx = self._kinds_of_pid(pid)
            share = self.shares.value
            cum, acc = [], 0.0
            for i in idx:
                acc += self.kinds[i].rate / max(share[i], SHARE_FLOOR)
                cum.append(acc)
            w = self.weights[g] = (cum, idx) if acc > 0 else None
        return w

    def _task_shares(self):
        out = []
        for pid, r in self.machine.runs.items():
            b = r.beh
            if pid and b.burst_ns + b.sleep_ns > 0:
                out.append((pid, b.burst_ns / (b.burst_ns + b.sleep_ns)))
        return out

    def _busy(self, t0: int, t1: int) -> dict:
        """Busy ns of [t0, t1) per group of tasks (making sure each group's
        kinds are known)."""
        out: dict = {}
        for _cpu, start, end, task in self.sched.busy_spans(t0, t1):
            g = self._group_kinds(task.pid)[0]
            out[g] = out.get(g, 0) + end - start
        return out


def _nothing() -> None:
    pass
