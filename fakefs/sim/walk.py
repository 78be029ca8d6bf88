"""The walk: what every simulated CPU runs, one traced call at a time.

Every task has its own position in the resolved call graph (its kernel
stack, a ``Frame``) in a ``TaskState``; every CPU (``Cpu``) has a runqueue
of them and an idle task.  ``Walk.run()`` advances a CPU's running task to
its next traced function call: it calls into one of the current
function's callees, or returns and carries on in the caller.  Interrupts
arrive on top of whatever runs, idle CPUs wait in their halt instruction
until one does, and entering ``__schedule`` (to sleep, or preempted at the
end of a time slice) switches to another task of that CPU's runqueue,
which resumes where it went to sleep (``switch()``; the ``switch_hooks``
hear of it).  When a machine decides who runs (``follow()``, ``driven``),
the walk never switches tasks by itself.
"""

from __future__ import annotations

from collections import deque

from ..kernel.frames import ENTER, RESUME
from ..kernel.walkgraph import IDLE, KMODE, NOVELTY, UMODE
from . import _walk
from ._walk import run, run_many, switched_top

ADOPTED_KEPT = 1024        # walk states of tasks the task table does not have


class TaskState:
    """Where one task is in the graph, and how much it runs."""

    __slots__ = ("task", "profile", "table", "roots", "frame", "phase", "weight", "user", "mode")

    def __init__(self, task, profile, table, roots, weight, user):
        self.task = task
        self.profile = profile
        self.table = table
        self.roots = roots
        self.frame = None
        self.phase = ENTER
        self.weight = weight
        self.user = user
        self.mode = UMODE if user else IDLE if task.pid == 0 else KMODE


class Cpu:
    """One CPU: its running task, idle task and runqueue."""

    __slots__ = ("cpu", "ts", "idle", "rq", "idle_weight", "halt")

    def __init__(self, cpu, idle):
        self.cpu = cpu
        self.ts = idle
        self.idle = idle
        self.rq = []
        self.idle_weight = 1.0
        self.halt = None            # the idle task's frame waiting for irqs


class Walk:
    """The CPUs of ``kernel`` walking the resolved graph ``wg``.

    ``idle_profiles``: the idle tasks' profiles, CPU 0's then the others'.
    ``add()`` puts the tasks on their CPUs, then ``warm_up()`` starts them.
    """

    def __init__(self, kernel, wg, frames, reach, idle_profiles):
        self.kernel = kernel
        self.wg = wg
        self.frames = frames
        self.reach = reach
        self.flags = wg.flags
        self.max_depth = wg.max_depth
        self.cgraph = reach.cgraph       # the graph's arrays as the compiled run() reads them
        p = wg.graph.params
        self.p_irq = p.get("irq", 0.001)
        self.p_preempt = p.get("preempt", 0.004)
        self.novelty = p.get("novelty", NOVELTY)
        # set while a run on the side (Workload._aside) leaves what the
        # frames have called as it was
        self.aside = False
        # the bound on memory: past ``frame_cap`` frames, the walk calls
        # ``restart_frames()`` where it is about to make one more (the owner
        # sets both; the frames' memory of what they called goes with them)
        self.frame_cap: int | None = None
        self.restart_frames = None
        self.switch_hooks: list = []
        # set when a machine decides who runs (``follow``): the walk then
        # never switches tasks by itself
        self.driven = False
        self.states: dict[int, TaskState] = {}
        self._adopted: deque[int] = deque()           # pids follow() made a state for
        self.cpus: list[Cpu] = []
        sched = kernel.sched
        for cpu in range(sched.nr_cpus):
            ts = self.state(sched.idle[cpu], idle_profiles[0 if cpu == 0 else 1], 0.0, False)
            self.cpus.append(Cpu(cpu, ts))

    def state(self, task, profile, weight, user):
        """A walk state for ``task`` (pid 0: CPU ``task.cpu``'s idle task)."""
        prof = self.wg.profiles[profile]
        ts = TaskState(task, profile, self.wg.tables[profile], prof["root_table"], weight, user)
        self.states[task.pid if task.pid else -1 - task.cpu] = ts
        return ts

    def add(self, task, profile, weight, user):
        """``task`` runs on its CPU now and then (``weight``), in ``profile``
        (``"profile:threadfn"``: with kthread() calling ``threadfn``)."""
        if ":" in profile:
            profile = self.wg.variant(*profile.split(":", 1))
        ts = self.state(task, profile, weight, user)
        self.cpus[task.cpu].rq.append(ts)
        return ts

    def set_idle_weights(self, minimum, per_task_weight):
        """How often a CPU goes idle when its running task sleeps: in
        proportion to the weights of its tasks, at least ``minimum``."""
        for c in self.cpus:
            busy = sum(ts.weight for ts in c.rq)
            c.idle_weight = max(minimum, per_task_weight * busy)

    def warm_up(self):
        """Start every task asleep where it naturally waits, every CPU idle."""
        rng = self.kernel.subsystem_rng("workload-warmup")
        for c in self.cpus:
            for ts in c.rq:
                c.ts = ts
                self.run(c, rng, until_switch=True)
            c.ts = c.idle
            self.run(c, rng, until_halt=True)
            c.halt = c.idle.frame
            self.kernel.sched.curr[c.cpu] = c.idle.task

    def _pick_next(self, c, rng, prev):
        cands = [ts for ts in c.rq if ts is not prev]
        if prev is c.idle:
            tot = sum(ts.weight for ts in cands)
            if tot <= 0:
                return prev
            x = rng.random() * tot
        else:
            tot = sum(ts.weight for ts in cands) + c.idle_weight
            x = rng.random() * tot
            if x >= tot - c.idle_weight:
                return c.idle
        for ts in cands:
            x -= ts.weight
            if x < 0:
                return ts
        return cands[-1] if cands else c.idle

    def switch(self, c, rng, fr):
        """``c``'s task entered __schedule at ``fr``: run another one."""
        prev = c.ts
        prev.frame = fr
        prev.phase = RESUME
        nxt = self._pick_next(c, rng, prev)
        if nxt is not prev:
            c.ts = nxt
            self.kernel.sched.curr[c.cpu] = nxt.task
            if self.switch_hooks:
                st = self.frames.tp_stack(fr)
                for hook in self.switch_hooks:
                    hook(c.cpu, prev.task, nxt.task, st)
        return nxt

    def run(self, c, rng, until_switch=False, until_halt=False, limit=200_000):
        """Advance ``c`` to its next traced call; return (task, frame).
        Compiled (``_walk.run``); the same walk in plain Python, which it
        is tested against, is walk_reference.py."""
        return run(self, c, rng, until_switch, until_halt, limit)

    def compiled(self) -> bool:
        """The walk is the compiled one (walk_reference swaps in the plain
        Python walk, which only ``run()`` and ``run_many()`` take)."""
        return run_many is _walk.run_many

    def run_many(self, c, rng, n):
        """``n`` traced calls in a row on ``c``, as runs of one task:
        [(task, [frame, ...]), ...]; the draws of ``n`` ``run()`` calls."""
        return run_many(self, c, rng, n)

    def event_switch(self, c, rng, preempt=False):
        """The running task sleeps (or is preempted): (prev task, stack)."""
        targets = self.wg.events["sched_switch"]
        n = self.reach.path(c, rng, "sched_switch", targets, preempt)
        ts = c.ts
        if n is None:
            task, fr = self.run(c, rng)
            return task, self.frames.tp_stack(fr)
        prev = ts.task
        st = self.frames.tp_stack(n)
        self.switch(c, rng, n)
        return prev, st

    def follow(self, cpu, task) -> None:
        """The machine runs ``task`` on ``cpu`` now: the walk of that CPU
        goes on in that task's own kernel stack (the idle task's for pid 0)."""
        self.driven = True
        c = self.cpus[cpu]
        if task.pid:
            ts = self.states.get(task.pid)
            if ts is None:                 # a forked command, a real process: a shell's paths
                ts = self.state(task, "shell", 0.0, True)
                self._adopted.append(task.pid)
                if len(self._adopted) > ADOPTED_KEPT:   # forget exited ones
                    old = self._adopted.popleft()
                    if old not in self.kernel.sched.tasks:
                        self.states.pop(old, None)
        else:
            ts = c.idle
        c.ts = ts
        # woken up: it returns from __schedule() and from the function that
        # called it (schedule(), schedule_idle() ...), so that its next
        # sleep enters them again (the outermost switching frame: compiled)
        top = switched_top(ts.frame, self.flags)
        if top is not None and top.parent is not None:
            ts.frame, ts.phase = top.parent.parent, RESUME

    def reprofile(self, task, profile) -> None:
        """``task`` (a real process) exec'ed a program whose paths are
        ``profile``'s: its walk goes on in them, from user space."""
        old = self.states.get(task.pid)
        ts = self.state(task, profile, 0.0, True)
        if old is None:
            self._adopted.append(task.pid)       # forgotten once exited, as follow()'s
        for c in self.cpus:
            if old is not None and c.ts is old:
                c.ts = ts

    def current(self, cpu):
        """The task running on ``cpu``."""
        return self.cpus[cpu].ts.task

    def tasks(self):
        """The simulated tasks (not the idle tasks), in pid order."""
        return sorted((ts.task for c in self.cpus for ts in c.rq), key=lambda t: t.pid)

    def profile_of(self, pid: int) -> str | None:
        ts = self.states.get(pid)
        return ts.profile if ts else None

    def kept_frames(self):
        """The frames every task is in (the task table's, the ones
        ``follow()`` adopted, the running ones) and the idle tasks wait in:
        all a restart of the frames must leave reachable."""
        for c in self.cpus:
            yield from (c.halt, c.ts.frame)
        for ts in self.states.values():
            yield ts.frame
