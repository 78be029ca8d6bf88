# cython: language_level=3, boundscheck=False, wraparound=False
"""The machine's hits that only write records, replayed compiled (the data
plane: docs/data-plane.md; ``MachineHits._machine_hit`` in
trace_machine_hits.py is the whole replay, and says what each hit is).

Most hits are a task's (its pid known) of a tracepoint with no code path
of its own (not a switch, a fork or an exec), or an allocator's (whoever
runs: ``_unattributed_hit``), probed by nothing, whose events' arrays
write the records as they come (``commit_way()`` PLAIN, or AFTER: with the
stack options).  ``written_hit`` replays those with no Python frame of its
own: the same records, stacks and task info, in the same order, from the
same draws (the stacks are still the workload's, in Python); any other hit
is left to the Python path.
"""

from fakefs.kernel.trace._trace_commit cimport (
    Committer, after_committed, commit_entry, committer, record_size)

from fakefs.kernel.trace._trace_commit import AFTER, COMMITTED

# tracepoints the scheduler fires itself when a machine drives the kernel
SYSCALL_TRACEPOINTS = ("sys_enter", "sys_exit")
# tracepoints always probed: the switches (who runs), and the code a
# task goes through for them (the calls on its way) — a switch's
# __schedule(), a fork's kernel_clone(), an exec's exec_binprm()
CODE_PATHS = ("sched_switch", "sched_process_fork", "sched_process_exec")
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


def written_hit(act, tuple hit, wl, rng, int cpu):
    """``act._machine_hit(hit, ...)`` (``act`` a ``TraceActivity``) of a
    hit such as the module's doc says, on ``cpu``; False (nothing done) for
    any other, or one whose recorders this window has not made yet (the
    Python path makes them).  The stack of an AFTER event is made when an
    array with ``stacktrace`` first needs it, for the event then committed,
    as the Python path's stack function does."""
    cdef int way
    name = hit[1]
    pid = hit[2]
    if pid is None:
        return _allocator_hit(act, hit, wl, rng, cpu)
    if name in CODE_PATHS or name == SYS_WORK:
        return False
    recorders = _written_by(act, name, hit[5], cpu)
    if recorders is None:
        return False
    args = hit[5]
    ts, flags, pc = hit[0], hit[3], hit[4]
    stack = None
    cdef dict committers = act._committers
    cdef int nr_cpus = len(act.curr)
    cdef Committer c
    for rec in recorders:
        ev, conv, etrs, way = <tuple> rec
        fields = args if conv is None else conv(args)
        entry = (ts, ev.id, pid, flags, pc, fields, None)
        payload = record_size(ev, fields)
        for tr in etrs:
            c = committer(committers, tr, cpu, nr_cpus)
            if commit_entry(c, cpu, entry, payload) and way == _AFTER:
                if stack is None and c.stacktrace:
                    stack = wl.event_stack(rng, cpu, ev.kind)
                stack = after_committed(c, cpu, entry, stack)
    return True


cdef list _written_by(act, name, args, int cpu):
    """The recorders of a hit of ``name`` on ``cpu`` (``MachineHits._recorders_of``:
    its cache this window) when they only write it (PLAIN, AFTER) and
    nothing probes the tracepoint; else None (not known yet: the Python
    path makes them)."""
    cache = act._recorders
    if cache is None or act._committers is None:
        return None
    recorders = cache.get((cpu, name, args[0]) if name in SYSCALL_TRACEPOINTS else (cpu, name))
    if recorders is None:
        return None
    hooks = act.tp_hooks
    if hooks and hooks.get(name):
        return None
    for rec in recorders:
        if (<tuple> rec)[3] == _COMMITTED:
            return None
    return recorders


cdef bint _allocator_hit(act, tuple hit, wl, rng, int cpu) except -1:
    """``written_hit`` of a hit of code that does not know who runs (an
    allocator's: ``MachineHits._unattributed_hit`` says how its task,
    stack and call site are found, and is the path of any other)."""
    cdef int way
    name = hit[1]
    args = hit[5]
    if act.kernel.driver is None:
        return False
    recorders = _written_by(act, name, args, cpu)
    if recorders is None:
        return False
    if not recorders:
        return True                     # nothing records it, nothing probes it
    ev = (<tuple> recorders[0])[0]
    task, stack = allocator_stack(act, name, args, ev, wl, rng, cpu)
    args, stack = at_call_site(name, args, stack)
    flags, pc = act.context_flags(stack)
    pid = task.pid
    ts = hit[0]
    cdef dict committers = act._committers
    cdef int nr_cpus = len(act.curr)
    cdef Committer c
    for rec in recorders:
        ev, _conv, etrs, way = <tuple> rec
        entry = (ts, ev.id, pid, flags, pc, args, None)
        payload = record_size(ev, args)
        for tr in etrs:
            c = committer(committers, tr, cpu, nr_cpus)
            if commit_entry(c, cpu, entry, payload) and way == _AFTER:
                stack = after_committed(c, cpu, entry, stack)
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
