"""What the simulated CPUs are doing: tasks, call paths, context switches.

The model is a random walk over a hand-written call graph of real kernel
paths (``data/callgraph.txt``, parsed by ``callgraph``, resolved against
the symbol table by ``walkgraph``).  Every task has its own position in the
graph (its kernel stack); the running task on a CPU advances by one
*traced function call* per ``sample()`` (the walk itself is ``walk``'s):
it calls into one of the current function's callees, or returns and
carries on in the caller.  Interrupts arrive on top of whatever runs, idle
CPUs wait in their halt instruction until one does, and entering
``__schedule`` (to sleep, or preempted at the end of a time slice)
switches to another task of that CPU's runqueue, which resumes where it
went to sleep.  Popularity of stacks is therefore skewed the way it is on
a real machine: a few paths (idle, timer tick, the busy tasks' syscalls)
take most hits, over a long tail.  The tasks are those of
``data/tasks.toml`` (``population``).

``stacks_for_event()`` gives the stack of the next tracepoint hit of a kind
(``EVENT_KINDS``; ``CODE_PATH_KINDS`` only for ``code_path()``): the walk
conditioned on getting to one of the functions where it fires (``reach``).
``sched_switch`` switches tasks, the other kinds now and then let the
running task sleep first, but the wakeup kinds (``NOSWITCH_KINDS``) never
do: the waker goes on running.
An allocation's stack (``call_site_stack()``) goes through its call site,
the function holding its allocation tag, and up that function's callers to
an entry point: the graph's, and for the many call sites the graph lacks
their callers in the 6.12 source first (``alloc_callers``, ``call_sites``).

Stacks are tuples of return addresses, innermost first, as
``stack_trace_save()`` stores them: ``stack[0]`` is inside the function being
entered (just after its ``__fentry__`` call; for events, at the tracepoint),
``stack[1]`` the call site in its caller, and so on to the entry point: a
path is one frame (``frames``), which makes its stack when asked (a
tracepoint's it keeps).  Names the symbol table lacks (inlined in that
build) are spliced out of the graph, so every frame resolves.
"""

from __future__ import annotations

import contextlib

from ..kernel.alloc_callers import AllocCallers
from ..kernel.callgraph import CallGraph, load_callgraph
from ..kernel.frames import ENTER, RESUME, Frames, interrupted
from ..kernel.kallsyms import Kallsyms, uses_host_table
from ..kernel.walkgraph import F_SWITCH, F_TRACE, FENTRY_IP, FENTRY_RET, WalkGraph
from ._workload import event_stack as compiled_event_stack, switch_path as compiled_switch_path
from .call_durations import durations
from .call_sites import CallSites
from .population import TaskTable, load_tasks, spawn_boot_tasks
from .reach import Reach
from .walk import Walk

EVENT_KINDS = ("kmem_cache_alloc", "kmalloc", "sched_switch", "page_alloc",
               "kfree", "kmem_cache_free", "sched_waking", "sched_wakeup", "signal_generate")
# kinds only a task that goes there itself takes (``code_path()``: a fork, an
# exec, an exit of the machine's tasks; its system calls' entry and exit, and
# where their work starts: ``work_path()``), never drawn for whatever runs
CODE_PATH_KINDS = ("sched_process_fork", "sched_process_exec", "sched_process_exit",
                   "sys_enter", "sys_exit", "task_dead", "syscall_work")
# programs whose kernel paths the graph has (data/callgraph.txt: the profile
# of that name), which a task that exec's them takes
EXEC_PROFILES = frozenset({"sleep"})
# kinds whose stacks never come with a context switch: the task that wakes
# another one goes on running (and the stacks must not move sched.curr)
NOSWITCH_KINDS = frozenset({"sched_waking", "sched_wakeup"})

# distinct stacks kept before the path cache restarts (the daemon's memory,
# issue 33's done-means 5).  With everything traced (function tracer, every
# event, stacktrace, stackmap) ~1,400 new frames a simulated second; a frame
# is 160 bytes with ~31 of kids' dicts (its stack is not kept: _walk.pyx),
# the event memo's share ~250 bytes a key.  Everything on, 64 MB a CPU, 150
# simulated seconds (session 42): 229.3 MB RSS with a cap of 50k, 223.5 with
# 35k, 220.0 with 25k (the allocator keeps the peak's arenas); the function
# tracer alone over 60 s: 7.91, 7.83 (30k), 7.80 simulated seconds a CPU
# second (restarts make the working set again: one every ~8 s at 25k)
FRAME_CAP = 25_000
EVENT_MEMO = 8             # event_stack(): paths sampled per (frame, kind) before reusing them
EVENT_MEMO_KEYS = 100_000
CALL_TRIES = 4             # calls_to(): tasks tried before giving up


class Workload:
    """``kernel.workload``: the tasks and what every CPU runs.

    Public: ``sample(rng, cpu)``, ``stacks_for_event(rng, cpu, kind)``,
    ``calls_to(rng, cpu, ids)`` (with ``call_ids(addrs)`` and
    ``call_profile()``: calls of chosen functions, and how common they are),
    ``current(cpu)``, ``tasks()``, ``profile_of(pid)``, ``function_ip(stack)``,
    ``distinct_paths()``; ``call_site_stack(rng, cpu, kind, site)``,
    ``reaches(pid, site)`` and ``site_reachable(site)`` (an allocation's
    stack from its call site, and who can make it); ``switch_hooks``
    (callables ``(cpu, prev, next, stack)`` run at every context switch,
    stack as seen by sched_switch); ``missing`` (graph names the symbol
    table lacks, spliced out).  Everything is deterministic given the
    kernel seed and the rng passed in.  ``graph`` (the call graph) and
    ``tasks`` (the task table) default to the bundled ones.  Parts: ``wg``
    (the resolved graph), ``frames``, ``reach``, ``walk`` (the CPUs and the
    tasks' walk states), ``sources`` (the source callers of the call sites
    the graph lacks), ``call_sites`` (the ways up from them).
    """

    def __init__(self, kernel, graph: CallGraph | None = None, tasks: TaskTable | None = None):
        self.kernel = kernel
        self.ks = kernel.kallsyms
        if self.ks is None:               # booted without kallsyms_init: the table alone
            self.ks = kernel.kallsyms = Kallsyms.load(host=uses_host_table(kernel))
        self.graph = graph or load_callgraph()
        p = self.graph.params
        self.p_event_switch = p.get("event_switch", 0.05)
        self.p_event_preempt = p.get("event_preempt", 0.25)
        self.wg = WalkGraph(self.ks, self.graph)
        self.frames = Frames(self.wg)
        self.reach = Reach(self.wg, self.frames, p.get("event_irq", 0.08))
        table = tasks if tasks is not None else load_tasks()
        self.walk = Walk(kernel, self.wg, self.frames, self.reach, table.idle_profiles)
        self.walk.frame_cap, self.walk.restart_frames = FRAME_CAP, self._maybe_restart_cache
        self._event_memo: dict[tuple, list] = {}      # event_stack(): paths seen
        self.sources = AllocCallers(self.ks)   # source callers of the call sites the graph lacks
        self.call_sites = CallSites(self.wg, self.frames, self.walk, self.sources)
        self._call_counts = None               # call_profile()
        self._durations = None                 # duration_profile()
        self._fid_by_addr = None               # call_ids()
        spawn_boot_tasks(table, kernel.sched, kernel.subsystem_rng("workload"), self.walk.add)
        self.walk.set_idle_weights(table.idle_weight_min, table.idle_weight_per_task_weight)
        self.walk.warm_up()

    @property
    def switch_hooks(self) -> list:
        return self.walk.switch_hooks

    @property
    def driven(self) -> bool:
        """Whether a machine decides who runs (``follow()``)."""
        return self.walk.driven

    @property
    def missing(self) -> list[str]:
        return self.wg.missing

    def _maybe_restart_cache(self):     # (bound memory: tasks keep their own frames)
        if self.frames.count > FRAME_CAP:
            self._event_memo = {}
            self.frames.restart(self.walk.kept_frames())

    def sample(self, rng, cpu):
        """One traced function call on ``cpu``: (running task, its stack)."""
        task, fr = self.walk.run(self.walk.cpus[cpu], rng)
        return task, fr.stack

    def sample_runs(self, rng, cpu, n: int) -> list:
        """``n`` traced function calls in a row on ``cpu``, as runs of one task:
        [(task, [frame, ...]), ...] (a call's stack is its frame's ``stack``);
        the draws of as many ``sample()`` calls (one run while a machine
        decides who runs: the walk then never switches tasks by itself)."""
        walk, c = self.stretch(cpu)
        return walk.run_many(c, rng, n)

    def stretch(self, cpu):
        """(walk, CPU state) for a stretch of ``cpu``'s calls (``sample_runs()``, or
        ``_trace_calls.CallWriter``); the walk restarts the frames itself
        when they are too many (``Walk.frame_cap``)."""
        return self.walk, self.walk.cpus[cpu]

    def switch_path(self, rng, cpu) -> tuple[tuple, tuple]:
        """The running task goes to __schedule(): (the stack where
        ``sched_switch`` fires, the frames of the traced functions it
        entered on the way there, outermost first).  Compiled where the
        memo has it (``_workload``); in full: ``_switch_path_memo``."""
        return compiled_switch_path(self, rng, cpu, FRAME_CAP, EVENT_MEMO, EVENT_MEMO_KEYS)

    def _switch_path_memo(self, rng, cpu) -> tuple[tuple, tuple]:
        """``switch_path()`` in Python (its specification)."""
        if self.frames.count > FRAME_CAP:
            self._maybe_restart_cache()
        c = self.walk.cpus[cpu]
        ts = c.ts
        key = (ts.frame, ts is c.idle, "\0switch")
        seen = self._event_memo.get(key)
        if seen is not None and len(seen) >= EVENT_MEMO:
            got = seen[int(rng.random() * len(seen))]
            if got is None:
                return (), ()
            n, entered = got
            ts.frame, ts.phase = n, RESUME
            return self.frames.tp_stack(n), entered
        got = self._enter_path(c, rng, "sched_switch", self.wg.events["sched_switch"])
        if len(self._event_memo) > EVENT_MEMO_KEYS:
            self._event_memo.clear()
        self._event_memo.setdefault(key, []).append(got)
        if got is None:
            return (), ()
        return self.frames.tp_stack(got[0]), got[1]

    def exit_switch_path(self, rng, cpu) -> tuple[tuple, tuple]:
        """``switch_path()`` of a task that exits: from wherever it was (its
        exit_group(), a fatal signal) it goes to do_task_dead() (by way of
        do_exit(): the sites of ``task_dead``), which calls __schedule()
        for the last time; the stacks entered on the way, outermost first."""
        c = self.walk.cpus[cpu]
        dead = self.wg.events.get("task_dead")
        got = self._enter_path(c, rng, "task_dead", dead) if dead else None
        if got is not None:
            n, entered = got
            e = self.wg.base_table[n.fn]
            switch = self.wg.events["sched_switch"]
            for g in (e[0] if e is not None else ()):
                if g in switch:
                    k = self.frames.child(n, g)
                    if k:
                        c.ts.frame, c.ts.phase = k, RESUME
                        if self.wg.flags[g] & F_TRACE:
                            entered += (k,)
                        return self.frames.tp_stack(k), entered
        return self.switch_path(rng, cpu)

    def code_path(self, rng, cpu, kind) -> tuple[tuple, tuple]:
        """The running task goes into the code where tracepoint ``kind``
        fires (a fork's kernel_clone(), an exec's exec_binprm()): (the
        stack there, the frames of the traced functions it entered on the
        way, outermost first); ((), ()) where the graph has no way there."""
        targets = self.wg.events.get(kind)
        if not targets:
            return (), ()
        if self.frames.count > FRAME_CAP:
            self._maybe_restart_cache()
        # the task comes back from that call (a fork returns to user
        # space): its walk stays where it was, so its next fork enters
        # kernel_clone() again
        got = self._enter_path(self.walk.cpus[cpu], rng, kind, targets, move=False)
        if got is None:
            return (), ()
        return self.frames.tp_stack(got[0]), got[1]

    def work_path(self, rng, cpu, then: tuple) -> tuple:
        """The running task's system call goes into its work: to
        x64_sys_call() (``syscall_work``, an event kind of the graph, so its
        reach tables stay cached), then down the functions ``then`` (ids),
        each called by the one before.  The frames of the traced functions
        it enters on the way, outermost first; () where the graph has no
        way there.  Its walk stays where it was, as ``code_path``'s (the
        call returns to user space)."""
        targets = self.wg.events.get("syscall_work")
        if not targets or not then:
            return ()
        if self.frames.count > FRAME_CAP:
            self._maybe_restart_cache()
        c = self.walk.cpus[cpu]
        n = self.reach.path(c, rng, "syscall_work", targets, task_only=True)
        if n is None:
            return ()
        entered = self._entered(n)
        for g in then:
            n = self.frames.child(n, g)
            if not n:
                break
            if self.wg.flags[g] & F_TRACE:
                entered += (n,)
        return entered

    def _enter_path(self, c, rng, kind, targets, move=True):
        n = self.reach.path(c, rng, kind, targets)
        if n is None:
            return None
        entered = self._entered(n)
        if move:
            c.ts.frame, c.ts.phase = n, RESUME
        return n, entered

    def _entered(self, f) -> tuple:
        """The frames of the traced functions from ``f`` up to where the
        last path called down from (``Reach.turn``, itself only if it was
        entered: a root or an interrupt): those the task entered to get to
        ``f``, outermost first.  Frames are shared by every call of a
        function from one caller, so the turn, not frame identity, tells
        a new call from the one the task is in."""
        turn, flags = self.reach.turn, self.wg.flags
        entered = []
        while f is not None:
            if f is turn and not self.reach.turn_entered:
                break
            if flags[f.fn] & F_TRACE:
                entered.append(f)
            if f is turn:
                break
            f = f.parent
        entered.reverse()
        return tuple(entered)

    def event_stack(self, rng, cpu, kind, task_only=False) -> tuple:
        """The stack of the running task (or an interrupt on top of it,
        unless ``task_only``) at a tracepoint of ``kind``, without
        switching tasks.  Compiled where the memo has it (``_workload``);
        in full: ``_event_stack``."""
        return compiled_event_stack(self, rng, cpu, kind, task_only, FRAME_CAP, EVENT_MEMO)

    def _event_stack(self, rng, cpu, kind, task_only=False) -> tuple:
        """``event_stack()`` in Python (its specification)."""
        if self.frames.count > FRAME_CAP:
            self._maybe_restart_cache()
        c = self.walk.cpus[cpu]
        targets = self.wg.events.get(kind)
        if targets is None:                # no path in the graph: where the task is
            fr = c.ts.frame or c.halt
            return fr.stack if fr is not None else ()
        ts = c.ts
        # where a task at this frame gets to first: sampled EVENT_MEMO times,
        # then drawn from those samples (the walk costs ~50 us a path)
        key = (ts.frame, ts is c.idle, kind, task_only)
        seen = self._event_memo.get(key)
        if seen is not None and len(seen) >= EVENT_MEMO:
            n = seen[int(rng.random() * len(seen))]
            if n is not None:
                ts.frame, ts.phase = n, ENTER
                return self.frames.tp_stack(n)
            fr = ts.frame or c.halt
            fr = interrupted(fr) if task_only else fr
            return fr.stack if fr is not None else ()
        before = ts.frame
        stack = self._event_noswitch(c, rng, kind, targets, task_only)[1]
        if len(self._event_memo) > EVENT_MEMO_KEYS:
            self._event_memo.clear()
        self._event_memo.setdefault(key, []).append(ts.frame if ts.frame is not before else None)
        return stack

    def call_site_stack(self, rng, cpu, kind, site: int, task_only=False):
        """The stack at a tracepoint of ``kind`` (an allocator's) called
        from the function holding the return address ``site`` (an
        allocation tag's), for the task running on ``cpu`` (or an
        interrupt on top of it, unless ``task_only``): from that function
        up its callers, in the source to the graph when the graph lacks it,
        then the graph's (drawn by the weights of the task's profile), to
        one of the task's entry points (``CallSites``).  None when no way
        up reaches an entry."""
        return self.call_sites.stack(rng, self.walk.cpus[cpu], kind, site, task_only)

    def reaches(self, pid: int, site: int) -> bool:
        """Whether task ``pid`` can call the allocator from ``site`` (the
        return address in an allocation tag's function)."""
        return self.call_sites.reaches(pid, site)

    def site_reachable(self, site: int, task_only=False) -> bool:
        """Whether any task (or an interrupt, unless ``task_only``: then in
        the task's own context) can call the allocator from ``site``."""
        return self.call_sites.reachable(site, task_only)

    def stacks_for_event(self, rng, cpu, kind):
        """(task, stack) for a tracepoint ``kind`` firing on ``cpu``.

        The running task returns from a few of its calls and goes down a
        path to one of the functions where the event fires (or an interrupt
        arriving now does); ``stack[0]`` is the tracepoint site in it.  For
        ``sched_switch`` the task is the one switched out and the switch
        happens (``switch_hooks`` see it too).  Now and then the running
        task sleeps before the event, so that events come from every task;
        never for ``NOSWITCH_KINDS`` (``sched_waking``, ``sched_wakeup``),
        whose stacks leave the running task of every CPU as it was.
        """
        targets = self.wg.events.get(kind)
        if targets is None:
            raise ValueError("unknown event kind %r" % (kind,))
        if self.frames.count > FRAME_CAP:
            self._maybe_restart_cache()
        c = self.walk.cpus[cpu]
        if kind in NOSWITCH_KINDS:
            return self._event_noswitch(c, rng, kind, targets)
        rnd = rng.random
        flags = self.wg.flags
        for _ in range(4):
            # a task just switched in runs on a little before anything else
            ts = c.ts
            if ts is c.idle or ts.frame is None or not flags[ts.frame.fn] & F_SWITCH:
                break
            self.walk.run(c, rng)
        if kind == "sched_switch":
            return self.walk.event_switch(c, rng, preempt=c.ts is not c.idle
                                          and rnd() < self.p_event_preempt)
        if rnd() < self.p_event_switch and not self.walk.driven:
            self.walk.event_switch(c, rng)
        n = self.reach.path(c, rng, kind, targets)
        ts = c.ts
        if n is None:                      # nothing gets there: plain sample
            task, fr = self.walk.run(c, rng)
            return task, self.frames.tp_stack(fr)
        ts.frame, ts.phase = n, ENTER
        return ts.task, self.frames.tp_stack(n)

    def _event_noswitch(self, c, rng, kind, targets, task_only=False):
        """(task, stack) for an event that comes with no context switch:
        the running task (or an interrupt on top of it, unless
        ``task_only``) gets to a target."""
        ts = c.ts
        n = self.reach.path(c, rng, kind, targets, task_only=task_only)
        if n is None and not task_only:
            n = self.reach.irq_path(c, rng, kind, targets)
        if n is None:                       # where the task is
            n = ts.frame or c.halt
            n = interrupted(n) if task_only else n
            return ts.task, self.frames.tp_stack(n) if n is not None else ()
        ts.frame, ts.phase = n, ENTER
        return ts.task, self.frames.tp_stack(n)

    def call_ids(self, addrs) -> frozenset:
        """Ids of the traced functions of the graph that start at one of
        ``addrs`` (function addresses): the ones ``calls_to()`` can reach."""
        by_addr = self._fid_by_addr
        if by_addr is None:
            by_addr = self._fid_by_addr = {}
            for i, a in enumerate(self.wg.addr):
                if self.wg.flags[i] & F_TRACE:
                    by_addr.setdefault(a, i)
        return frozenset(by_addr[a] for a in addrs if a in by_addr)

    @contextlib.contextmanager
    def _aside(self, own_switches: bool = False):
        """A run of the walk on the side: every task and CPU is put back
        where it was after it, no switch hook hears of it, and the frames'
        memory of what they called is left as it was (``walk.aside``).

        ``own_switches``: the CPUs switch among their own tasks, as before
        a machine drove the walk (which never switches by itself: a profile
        made once, ``call_profile()``/``duration_profile()``, was the task
        running then, an idle CPU's only the idle loop and interrupts)."""
        walk = self.walk
        sched = self.kernel.sched
        saved_cpus = [(c, c.ts, c.halt) for c in walk.cpus]
        saved_tasks = [(ts, ts.frame, ts.phase) for c in walk.cpus
                       for ts in [c.ts, c.idle] + c.rq]     # (c.ts: followed, on no rq)
        saved_curr = list(sched.curr)
        hooks, walk.switch_hooks = walk.switch_hooks, []
        driven = walk.driven
        if own_switches:
            walk.driven = False
        walk.aside = True
        try:
            yield walk
        finally:
            walk.aside = False
            walk.driven = driven
            walk.switch_hooks = hooks
            for c, cts, halt in saved_cpus:
                c.ts, c.halt = cts, halt
            for ts, frame, phase in saved_tasks:
                ts.frame, ts.phase = frame, phase
            sched.curr[:] = saved_curr

    def call_profile(self, n_per_cpu: int = 16000):
        """How often each traced function is called: per CPU, ``{id: calls}``
        among ``n_per_cpu`` calls of an unrecorded run of the walk, and
        ``n_per_cpu``.  The run is done once, on the side (``_aside()``)."""
        if self._call_counts is None:
            rng = self.kernel.subsystem_rng("workload-call-profile")
            counts = []
            with self._aside(own_switches=True) as walk:
                for c in walk.cpus:
                    hits: dict[int, int] = {}
                    for _ in range(n_per_cpu):
                        _task, fr = walk.run(c, rng)
                        hits[fr.fn] = hits.get(fr.fn, 0) + 1
                    counts.append(hits)
            self._call_counts = (counts, n_per_cpu)
        return self._call_counts

    def duration_profile(self, rate: int, n_per_cpu: int = 16000):
        """How long each traced function runs: per CPU, ``{id: sums}`` of its
        calls that returned among ``n_per_cpu`` calls of an unrecorded run of
        the walk made ``rate`` a second (exponential gaps), each call
        lasting until its task's next call from below it (as the function
        graph tracer sees them: ``trace_functions_graph.py``).  ``sums`` is
        a list per (graph-time, sleep-time) setting (``call_durations.py``).
        Done once, on the side (``_aside()``)."""
        if self._durations is None:
            rng = self.kernel.subsystem_rng("workload-duration-profile")
            out = []
            with self._aside(own_switches=True) as walk:
                for c in walk.cpus:
                    out.append(durations(walk, c, rng, rate, n_per_cpu))
            self._durations = out
        return self._durations

    def calls_aside(self, rng, n: int, targets: frozenset | None = None) -> list:
        """The frames of ``n`` traced calls, CPU after CPU, made on the side
        (``_aside()``): the calls of any function, or (``targets``, ids from
        ``call_ids()``) the next call of one of those, as ``calls_to()``
        finds it; a CPU where nothing gets to one adds nothing."""
        out = []
        with self._aside() as walk:
            cpus = walk.cpus
            for i in range(n):
                c = cpus[i % len(cpus)]
                if targets is None:
                    _task, fr = walk.run(c, rng)
                elif self.calls_to(rng, i % len(cpus), targets) is not None:
                    fr = c.ts.frame
                else:
                    fr = None
                if fr is not None:
                    out.append(fr)
        return out

    def calls_to(self, rng, cpu, targets: frozenset):
        """(task, stack, entered) of the next call on ``cpu`` of one of the
        functions ``targets`` (ids from ``call_ids()``), or None when nothing
        running there gets to one.  Like ``stacks_for_event()``: the CPU
        first goes on by one call, now and then its task sleeps, then the
        running task (or an interrupt) walks down a path to a target.
        ``stack[0]`` is the target's entry (as in ``sample()``), where the
        task now is; ``entered`` the stacks of the traced functions it
        entered on its way there (outermost first): a function tracer sees
        those calls first."""
        if not targets:
            return None
        if self.frames.count > FRAME_CAP:
            self._maybe_restart_cache()
        c = self.walk.cpus[cpu]
        # whatever it was doing goes on, to its next traced call: when that
        # is a target, it is the call
        _task, fr = self.walk.run(c, rng)
        if fr is not None and fr.fn in targets and c.ts.phase == ENTER:
            return c.ts.task, fr.stack, ()
        if rng.random() < self.p_event_switch and not self.walk.driven:
            self.walk.event_switch(c, rng)
        for _ in range(CALL_TRIES):
            n = self.reach.path(c, rng, targets, targets)
            if n is None:
                n = self.reach.irq_path(c, rng, targets, targets)
            if n is not None:
                break
            if self.walk.driven:
                return None                # who runs is the machine's to say
            # nothing running here gets there (an idle CPU, a task that
            # never makes such calls): the task sleeps, another one runs
            self.walk.event_switch(c, rng)
        else:
            return None
        ts = c.ts
        entered = self._entered(n)
        if entered and entered[-1] is n:
            entered = entered[:-1]            # the call itself
        ts.frame, ts.phase = n, ENTER
        return ts.task, n.stack, tuple(f.stack for f in entered)


    def follow(self, cpu, task) -> None:
        """The machine runs ``task`` on ``cpu`` now: the walk of that CPU
        goes on in that task's own kernel stack (the idle task's for pid 0)."""
        self.walk.follow(cpu, task)

    def exec_program(self, task, program: str) -> bool:
        """``task`` exec'ed ``program``: where the graph has its paths
        (``EXEC_PROFILES``), its calls are that program's from now on;
        else they stay its parent's (a forked command's: a shell's)."""
        if program not in EXEC_PROFILES or program not in self.wg.profiles:
            return False
        self.walk.reprofile(task, program)
        return True

    def current(self, cpu):
        """The task running on ``cpu``."""
        return self.walk.current(cpu)

    def tasks(self):
        """The simulated tasks (not the idle tasks), in pid order."""
        return self.walk.tasks()

    def inlined_into(self, name: str) -> str | None:
        """The function the symbol table has that ``name`` (missing from it:
        inlined) is part of: its nearest caller in the call graph that is
        not inlined too, else in the source (``AllocCallers``)."""
        seen, todo = {name}, [name]
        while todo:
            nxt = []
            for n in todo:
                for caller in self.graph.callers_of(n):
                    if caller in seen:
                        continue
                    if self.ks.addr_of(caller):
                        return caller
                    seen.add(caller)
                    nxt.append(caller)
            todo = nxt
        return self.sources.outer(name)

    def profile_of(self, pid: int) -> str | None:
        return self.walk.profile_of(pid)

    def function_ip(self, stack) -> int:
        """ftrace's ``ip`` of the function a sample() stack was taken in."""
        return stack[0] - FENTRY_RET + FENTRY_IP

    def distinct_paths(self) -> int:
        """How many distinct stacks the function tracer can see (an upper
        estimate: every path of the graph within the depth limit, with
        interrupts nested at every point they can arrive)."""
        return self.wg.distinct_paths()


def workload_init(kernel) -> None:
    kernel.workload = Workload(kernel)

