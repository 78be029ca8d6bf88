"""When and on which CPU the allocation workload's operations happen
(:mod:`.alloc_workload`), for the allocators' trace events.

The workload keeps its own clock; a step of it covers a window of the
kernel's time.  A new allocation happens where a task runs, not the idle
task: the allocators' callers are tasks.  And not just any task: the one
running must be able to make that allocation — get from one of its entry
points (system calls, a kernel thread's function, page faults) to the
function holding the allocation tag.  A kworker does not look up path
names (getname_flags()); a shell does.  So the instant is drawn uniformly
over the step's busy CPU time of the tasks that can (``Workload.reaches``),
over all busy time when none of them ran in the step (the allocation is
made anyway: the trace shows whatever ran), over all of the step when every
CPU idled through it.  An operation due at a given time (an object's
lifetime ran out) happens on any CPU, in whatever context frees it.

Draws come from the kernel's ``alloc_workload-moments`` RNG: the
workload's own draws are the same whether anybody traces.
"""

from __future__ import annotations

import bisect

TRIES = 8                  # instants drawn before looking at every busy span


class Moments:
    """The instants of one workload's operations: ``begin()`` a step,
    ``draw()`` for each operation, ``end()``."""

    def __init__(self, kernel, trace):
        self.rng = kernel.subsystem_rng("alloc_workload-moments")
        self.sched = kernel.sched
        self.trace = trace
        self.nr_cpus = kernel.nr_cpus
        self.hp = kernel.cpuhp
        wl = kernel.workload
        self.reaches = wl.reaches if wl is not None else None
        self.window = None                   # (workload time, kernel time, span) of the step
        self.busy = None                     # its busy CPU time (_busy_spans)

    def begin(self, base: int, k0: int | None, span: int) -> None:
        """A step: workload time ``base`` is kernel time ``k0`` (None: owed
        time, simulated untraced), for ``span`` ns."""
        self.window = (base, k0, span)
        self.busy = None

    def end(self) -> None:
        self.window = None
        self.trace.when = None

    def draw(self, w: int | None = None, site: int = 0) -> int | None:
        """The workload time of the next operation: ``w`` (an expiry), or
        drawn in the step for a new allocation at return address ``site``
        (0: unknown); the kernel time and CPU go to the allocators' trace.
        None outside a step."""
        win = self.window
        if win is None:
            return None
        base, k0, span = win
        r = self.rng
        if k0 is None:                       # owed time, simulated untraced
            return base + int(r.random() * span) if w is None else w
        if w is None:
            spans = self.busy
            if spans is None:
                spans = self.busy = self._busy_spans(k0, k0 + span)
            cum, where = spans
            if cum:
                i, t = self._instant(cum, where, site)
                cpu = where[i][0]
                self.trace.at(cpu, t)
                return base + (t - k0)
            w = base + int(r.random() * span)
        cpu, t = int(r.random() * self.nr_cpus), k0 + (w - base)
        if self.hp is not None and self.hp.changes:
            cpu = self.hp.cpu_at(cpu, t)        # (an offline CPU frees nothing)
        self.trace.at(cpu, t)
        return w

    def _instant(self, cum, where, site):
        """(span index, kernel time) of an instant of busy time where the
        running task can allocate at ``site``."""
        r = self.rng
        reaches = self.reaches if site else None
        first = None
        for _ in range(TRIES):
            x = r.random() * cum[-1]
            i = bisect.bisect_right(cum, x)
            got = (i, where[i][1] + int(x - (cum[i - 1] if i else 0)))
            if reaches is None or reaches(where[i][2].pid, site):
                return got
            if first is None:
                first = got
        # rarely runs: among the spans of the tasks that can, if any did
        lens, idx, prev = [], [], 0
        for i, c in enumerate(cum):
            if reaches(where[i][2].pid, site):
                lens.append(c - prev)
                idx.append(i)
            prev = c
        if not lens:
            return first
        x = r.random() * sum(lens)
        for i, n in zip(idx, lens):
            if x < n:
                return i, where[i][1] + int(x)
            x -= n
        i = idx[-1]
        return i, where[i][1]

    def _busy_spans(self, t0: int, t1: int):
        """The busy CPU time of [t0, t1): cumulative lengths, (cpu, start, task)."""
        cum, where, acc = [], [], 0
        history = self.sched.history
        for cpu, start, end in self.sched.busy_spans(t0, t1):
            h = history[cpu]
            j = bisect.bisect_right(h, start, key=_instant) - 1
            acc += end - start
            cum.append(acc)
            where.append((cpu, start, h[j][1]))
        return cum, where


def _instant(entry):
    return entry[0]
