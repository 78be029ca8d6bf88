# cython: language_level=3, boundscheck=False, wraparound=False
"""The machine's hits that only write records, replayed compiled (the data
plane: docs/data-plane.md; ``MachineHits._machine_hit`` in
trace_machine_hits.py is the whole replay, and says what each hit is).

Most hits are a task's (its pid known) of a tracepoint with no code path
of its own (not a switch, a fork or an exec), or an allocator's (whoever
runs: ``_unattributed_hit``), probed by nothing, whose events' arrays
write the records as they come (``commit_way()`` PLAIN, or AFTER: with the
stack options).  ``HitWriter.write`` replays those with no Python frame of its
own: the same records, stacks and task info, in the same order, from the
same draws (the stacks are still the workload's, in Python); any other hit
is left to the Python path.
"""

cimport cython

from fakefs.kernel.trace._trace_commit cimport (
    Committer, after_committed, commit_entry, committer, record_size)
from fakefs.kernel.trace._trace_hits cimport HitSink

from fakefs.sim import workload as _workload
from fakefs.sim._workload import event_stack as _event_stack, switch_path as _switch_path
from fakefs.kernel.trace._trace_commit import AFTER, COMMITTED
from fakefs.kernel.trace.trace_hits import CODE_PATHS

# tracepoints the scheduler fires itself when a machine drives the kernel
SYSCALL_TRACEPOINTS = ("sys_enter", "sys_exit")
# not a tracepoint: a real process's system call whose work is traced
# (``SyscallEntry.enter``), queued as the hits are
SYS_WORK = "sys_work"
# allocations and frees whose call site is an argument (the first)
CALL_SITE_TRACEPOINTS = ("kmalloc", "kmem_cache_alloc", "kfree", "kmem_cache_free")
# allocations: the index of their gfp_flags argument; one whose flags may
# sleep (__GFP_DIRECT_RECLAIM, as GFP_KERNEL's) is the running task's own,
# never an interrupt's (GFP_ATOMIC ones may be either)
TASK_TRACEPOINTS = {"kmalloc": 4, "kmem_cache_alloc": 4, "mm_page_alloc": 2}
GFP_DIRECT_RECLAIM = 0x400

cdef int _AFTER = AFTER, _COMMITTED = COMMITTED
# the occurrence id of a tracepoint hit the machine made (``TraceActivity``'s)
MACHINE = -2
cdef int _MACHINE = MACHINE


@cython.final
cdef class Rec:
    """One recorder of a name's hits on one CPU, as the window writes it:
    the event, its fields' maker (None: the hit's), the window's commits
    of the arrays that see it, how they commit it, and the record's
    payload where it has no ``__data_loc`` field (else -1: per hit)."""
    cdef object ev, conv, evid, kind
    cdef list commits
    cdef int way
    cdef Py_ssize_t payload


@cython.final
cdef class HitWriter:
    """The compiled replay of one window (``TraceActivity.run``, when no
    array acts on itself): what each hit reads of the activity, read once
    (the recorders' cache and the commits of the window, the tracepoint
    hooks' table, who runs), and per CPU and tracepoint (a system call's
    per number) its recorders as ``Rec``s once the Python path has made
    them, kept from window to window while the recorders and the commits
    are (``TraceActivity._hit_recs``: kept, every event traced ran 3 %
    faster, session 56's A/B); the same records, in the
    same order, from the same draws (tests/sim/test_trace_machine_hits.py)."""
    cdef object act, wl, rng, context_flags
    cdef dict recorders, committers, hooked
    cdef list known, sys_known, curr
    cdef int nr_cpus
    cdef bint driven
    # the memo's limits (``workload.FRAME_CAP``, ``EVENT_MEMO``,
    # ``EVENT_MEMO_KEYS``) as the window starts: the stacks are the compiled
    # ``_workload``'s, called as ``Workload.event_stack()``/``switch_path()``
    # call them
    cdef long frame_cap, memo, memo_keys

    def __cinit__(self, act, wl, rng):
        self.act, self.wl, self.rng = act, wl, rng
        self.recorders = act._recorders
        self.committers = act._committers
        self.hooked = act.tp_hooks.by_name          # (changed in place, never replaced)
        self.curr = act.curr
        self.nr_cpus = len(act.curr)
        self.driven = act.kernel.driver is not None
        self.context_flags = act.context_flags
        self.frame_cap, self.memo = _workload.FRAME_CAP, _workload.EVENT_MEMO
        self.memo_keys = _workload.EVENT_MEMO_KEYS
        kept = act._hit_recs
        if kept is None:
            kept = act._hit_recs = ([{} for _ in range(self.nr_cpus)],
                                    [{} for _ in range(2 * self.nr_cpus)])
        self.known, self.sys_known = kept

    cpdef bint write(self, tuple hit, int cpu, object calls=True) except -1:
        """``act._machine_hit(hit, ...)`` of a hit such as the module's
        doc says, on ``cpu``; False (nothing done) for any other, or one
        whose recorders this window has not made yet (the Python path
        makes them).  The stack of an AFTER event is made when an array
        with ``stacktrace`` first needs it, for the event then committed,
        as the Python path's stack function does.  ``calls``: who takes
        the calls on ``cpu`` (a switch's): nobody (False), only a
        function array's compiled writer ((the ``CallWriter``, its array):
        ``TraceActivity._entered_writer``), or (True) function tracers
        otherwise, probes, kprobes or function_graph arrays (the Python
        path)."""
        if hit[2] is None:
            return self._allocator(hit, cpu)
        if hit[1] == "sched_switch":
            if calls is True:
                return False
            return self._switch(hit, cpu, calls if calls is not False else None)
        recs = self._recs(hit[1], hit[5], cpu)
        if recs is None:
            return False
        self._commit(recs, cpu, hit[0], hit[5], hit[2], hit[3], hit[4], None)
        return True

    cpdef Py_ssize_t write_from(self, list occ, Py_ssize_t i, int cpu, object calls,
                                object stop) except -1:
        """``TraceActivity._replay``'s loop over the occurrences ``occ``
        (``(ts, id, what)``, in time order) from ``i``, while they are the
        machine's hits (id ``MACHINE``: a window not written live, its hits
        gathered with the rest, ``Window.gather``) coming before ``stop``
        (the next function call's instant; None: no end) that ``write``
        writes (``calls`` as there); the index of the first left to the
        caller's loop.  The same records in the same order as that loop's,
        without its Python per hit.  A hit ``write`` refused is left to the
        loop, which asks ``write`` again (it refuses before doing anything),
        then takes the Python path."""
        cdef Py_ssize_t m = len(occ)
        cdef long long stop_ts = 0
        cdef bint bounded = stop is not None
        cdef tuple o
        if bounded:
            stop_ts = stop
        while i < m:
            o = <tuple> occ[i]
            if o[1] != _MACHINE or (bounded and <long long> o[0] >= stop_ts):
                break
            if not self.write(<tuple> o[2], cpu, calls):
                break
            i += 1
        return i

    cdef object _commit(self, list recs, int cpu, ts, args, pid, flags, pc, stack,
                        bint convert=True):
        """The records of a hit at ``ts`` (its task ``pid``, context
        ``flags`` and ``pc``, fields ``args``, made each event's way where
        ``convert``: an allocator's are its own) by its recorders ``recs``;
        an AFTER event's stack options with ``stack``, or (None) the stack
        made when an array with ``stacktrace`` first needs it; the stack."""
        cdef Rec r
        cdef Committer c
        for rec in recs:
            r = <Rec> rec
            fields = args if r.conv is None or not convert else r.conv(args)
            entry = (ts, r.evid, pid, flags, pc, fields, None)
            payload = r.payload if r.payload >= 0 else record_size(r.ev, fields)
            for cc in r.commits:
                c = <Committer> cc
                if commit_entry(c, cpu, entry, payload) and r.way == _AFTER:
                    if stack is None and c.stacktrace:
                        stack = _event_stack(self.wl, self.rng, cpu, r.kind, False,
                                             self.frame_cap, self.memo)
                    stack = after_committed(c, cpu, entry, stack)
        return stack

    cdef object _recs(self, name, args, int cpu):
        """The ``Rec``s of a hit of ``name`` on ``cpu`` when its recorders
        only write it (PLAIN, AFTER) and nothing hooks the tracepoint; else
        None (not known yet: the Python path makes them; or not such a
        hit).  (``MachineHits._recorders_of`` makes them, its key: a
        system call's tracepoints by the call's number.)"""
        cdef dict known
        cdef int sysidx = -1
        if name == "sys_enter":
            sysidx = 0
        elif name == "sys_exit":
            sysidx = 1
        if sysidx >= 0:
            known = <dict> self.sys_known[2 * cpu + sysidx]
            key = args[0]
        else:
            known = <dict> self.known[cpu]
            key = name
        got = known.get(key)
        if got is None:
            if name in CODE_PATHS and name != "sched_switch" or name == SYS_WORK:
                known[key] = False          # (a switch's: ``_switch``)
                return None
            recorders = self.recorders.get((cpu, name, key) if sysidx >= 0 else (cpu, name))
            if recorders is None:
                return None
            got = known[key] = self._made(recorders, cpu)
        if got is False:
            return None
        if self.hooked and self.hooked.get(name):
            return None
        return got

    cdef bint _switch(self, tuple hit, int cpu, tuple calls) except -1:
        """A switch's hit where nothing takes its calls but a function
        array's compiled writer (``calls``: it and its array, or None):
        the path of the task going to __schedule() (drawn when an event
        records the switch or the writer takes the calls), the calls it
        entered on the way, the records with its stack, then the replay
        follows who runs (``MachineHits._machine_hit``, ``_entered_calls``,
        ``_follow``)."""
        args = hit[5]
        recs = self._recs("sched_switch", args, cpu)
        if recs is None:
            return False
        if recs or calls is not None:
            wl = self.wl
            if args[3] == "Z":
                stack, entered = wl.exit_switch_path(self.rng, cpu)
            else:
                stack, entered = _switch_path(wl, self.rng, cpu, self.frame_cap, self.memo,
                                               self.memo_keys)
            if calls is not None and entered:
                how, tr = calls
                buf = tr.buffer
                if not (buf.record_off or buf.record_disabled):
                    pid = self.curr[cpu].pid
                    if how.entered(entered, hit[0], pid, buf.cpus[cpu]):
                        tr._task_info(cpu, pid)
            if recs:
                self._commit(recs, cpu, hit[0], args, hit[2], hit[3], hit[4], stack)
        nxt = hit[6]
        self.curr[cpu] = nxt
        self.wl.follow(cpu, nxt)
        tracing = self.act.kernel.tracing          # (as MachineHits._follow)
        if tracing.taskinfo_pid[cpu] == args[1]:
            tracing.savedcmd.save(args[1], args[0])
        return True

    cdef object _made(self, list recorders, int cpu):
        """``recorders`` as ``Rec``s, or False where one commits the whole way."""
        cdef Rec r
        out = []
        for rec in recorders:
            ev, conv, etrs, way = <tuple> rec
            if way == _COMMITTED:
                return False
            r = Rec()
            r.ev, r.conv, r.evid, r.kind, r.way = ev, conv, ev.id, ev.kind, way
            r.commits = [committer(self.committers, tr, cpu, self.nr_cpus) for tr in etrs]
            dyn = ev._dynamic
            if dyn is None:
                dyn = ev.dynamic_fields()
            r.payload = -1 if dyn else ev.payload
            out.append(r)
        return out

    cdef bint _allocator(self, tuple hit, int cpu) except -1:
        """``write`` of a hit of code that does not know who runs (an
        allocator's: ``MachineHits._unattributed_hit`` says how its task,
        stack and call site are found, and is the path of any other)."""
        cdef Rec r
        if not self.driven:
            return False
        name = hit[1]
        args = hit[5]
        recs = self._recs(name, args, cpu)
        if recs is None:
            return False
        if not recs:
            return True                     # nothing records it, nothing probes it
        r = <Rec> (<list> recs)[0]
        task, stack = allocator_stack(self.act, name, args, r.ev, self.wl, self.rng, cpu)
        args, stack = at_call_site(name, args, stack)
        flags, pc = self.context_flags(stack)
        self._commit(recs, cpu, hit[0], args, task.pid, flags, pc, stack, False)
        return True


cpdef tuple allocator_stack(act, name, args, ev, wl, rng, int cpu):
    """(task, stack) of a hit of an allocator's tracepoint ``name`` (its
    event ``ev``) on ``cpu``: the task running there, or an interrupt on
    top of it, as the walk finds its way to the event's function (an
    allocation whose flags may sleep is the task's own); an allocation's
    or a free's stack goes through its call site's function where the
    call sites know it (the first argument)."""
    task = act.curr[cpu]
    gfp_arg = TASK_TRACEPOINTS.get(name)
    task_only = (task.pid != 0 and gfp_arg is not None
                 and bool(args[gfp_arg] & GFP_DIRECT_RECLAIM))
    stack = None
    if name in CALL_SITE_TRACEPOINTS and args[0]:
        stack = wl.call_site_stack(rng, cpu, ev.kind, args[0], task_only)
    if stack is None:
        stack = wl.event_stack(rng, cpu, ev.kind, task_only=task_only)
    return task, stack


cpdef tuple at_call_site(name, args, stack):
    """(args, stack) of a hit of ``name`` made at ``stack``: an allocation's
    or a free's call site (its first argument) is the stack's caller when
    not given; where the stack does not go through it (the graph does not
    know the tag's function or its callers), the allocator's frame, then
    the call site."""
    if name in CALL_SITE_TRACEPOINTS and len(stack) > 1:
        if not args[0]:
            args = (stack[1],) + args[1:]
        elif stack[1] != args[0]:
            stack = (stack[0], args[0])
    return args, stack


@cython.final
cdef class LiveSink(HitSink):
    """The window written as the machine runs (``TraceActivity.begin``):
    a hit of a CPU with nothing of it to write before (no calls drawn in
    the window, no rated event and no queued hit before its instant:
    ``Window.nothing_before``), whose switch's calls' taker is known, is
    written here (``HitWriter.write``, else the Python path for the hit);
    any other goes to ``act._hit`` (the CPU's segment, then the hit); one
    fired while a hit is being written, or outside the window, waits in
    ``pending``."""
    cdef object act, w
    cdef object hits                # (a HitWriter; tests wrap it)
    cdef HitWriter hw               # (the same, unwrapped: called in C; else None)
    cdef list pos, switch, pending, next_rated
    cdef long long t1
    cdef bint simple
    cdef public bint in_hit
    # the plain function calls before a hit, written here too (``_calls``):
    # the CPUs' ``AwakeCalls``, the scheduler (its halted spans), the window's
    # stretch writers (``TraceActivity._stretch_writers``), arrays per CPU,
    # probing arrays, and what follows the walk's frames after calls
    cdef bint calls_here
    cdef list awake, trs
    cdef object sched
    cdef dict stretch
    cdef object probe_trs, follow, wl

    def __cinit__(self, act, w, hits, bint simple):
        self.act, self.w = act, w
        self.hits = hits
        self.hw = hits if type(hits) is HitWriter else None
        self.pos, self.switch, self.next_rated = w.pos, w.switch, w.next_rated
        self.pending = act.pending
        self.t1 = w.t1
        self.simple = simple and hits is not None
        self.in_hit = False
        self.calls_here = (hits is not None and w.calls and not w.targets and w.hp is None
                           and w.sched is not None)
        self.awake, self.trs, self.probe_trs, self.wl = act.awake_calls, w.trs, w.probe_trs, w.wl
        self.sched = w.sched
        self.stretch = act._stretch_writers
        self.follow = act.stack_context.follow_frames

    cdef int take(self, int cpu, tuple hit) except -1:
        cdef long long ts = hit[0]
        if self.in_hit or ts >= self.t1 or ts < <long long> self.pos[cpu]:
            (<list> self.pending[cpu]).append(hit)
            return 0
        sw = self.switch[cpu]
        if ((not self.simple and not self.calls_here) or sw is None or self.pending[cpu]
                or <long long> self.next_rated[cpu] < ts):
            self.act._hit(cpu, hit)
            return 0
        if not self.simple and not self._calls(cpu, ts):
            self.act._hit(cpu, hit)
            return 0
        self.pos[cpu] = hit[0]
        self.in_hit = True
        try:
            if self.hw is not None:
                done = self.hw.write(hit, cpu, sw)
            else:
                done = self.hits.write(hit, cpu, sw)
            if not done:
                self.act._hit_alone(self.w, cpu, hit)
        finally:
            self.in_hit = False
        return 0

    cdef bint _calls(self, int cpu, long long ts) except -1:
        """The plain function calls of ``cpu`` before ``ts`` written, as
        ``TraceActivity._function_calls`` writes a stretch it has kept the
        compiled writer of (``_stretch_writers``); False (nothing done):
        not such a stretch (the Python path then)."""
        kept = self.stretch.get(cpu) if self.stretch is not None else None
        if kept is None:
            return False
        trs = <tuple> self.trs[cpu]
        if kept[0] is not trs[0] or kept[1] is not self.probe_trs or trs[2]:
            return False
        times = self.awake[cpu].upto(
            self.sched.halted_spans(cpu, <long long> self.pos[cpu], ts), ts)
        if not len(times):
            return True
        tr = kept[3]
        buf = tr.buffer
        cb = None if buf.record_off or buf.record_disabled else buf.cpus[cpu]
        self.in_hit = True
        try:
            pids = kept[2].calls(times, cb, 0, -1)
            self.follow(self.wl)
            for pid in pids:
                tr._task_info(cpu, pid)
        finally:
            self.in_hit = False
        return True
