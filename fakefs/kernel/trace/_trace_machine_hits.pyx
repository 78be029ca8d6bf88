# cython: language_level=3, boundscheck=False, wraparound=False
"""The machine's hits that only write records, replayed compiled (the data
plane: docs/data-plane.md; ``MachineHits._machine_hit`` in
trace_machine_hits.py is the whole replay, and says what each hit is).

Most hits are a task's (its pid known) of a tracepoint with no code path
of its own (not a switch, a fork or an exec), probed by nothing, whose
events' arrays write the records as they come (``commit_way()`` PLAIN, or
AFTER: with the stack options).  ``written_hit`` replays those with no
Python frame of its own: the same records, stacks and task info, in the
same order, from the same draws; any other hit is left to the Python
path.
"""

from fakefs.kernel.trace._trace_commit cimport after_commit, record_size, write_entry

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
    if pid is None or name in CODE_PATHS or name == SYS_WORK:
        return False
    cache = act._recorders
    if cache is None:
        return False
    args = hit[5]
    recorders = cache.get((cpu, name, args[0]) if name in SYSCALL_TRACEPOINTS else (cpu, name))
    if recorders is None:
        return False
    hooks = act.tp_hooks
    if hooks and hooks.get(name):
        return False
    for rec in recorders:
        if (<tuple> rec)[3] == _COMMITTED:
            return False
    ts, flags, pc = hit[0], hit[3], hit[4]
    stack = None
    for rec in recorders:
        ev, conv, etrs, way = <tuple> rec
        fields = args if conv is None else conv(args)
        entry = (ts, ev.id, pid, flags, pc, fields, None)
        payload = record_size(ev, fields)
        for tr in etrs:
            if write_entry(tr, cpu, entry, payload, None) and way == _AFTER:
                if stack is None and tr.flags.get("stacktrace"):
                    stack = wl.event_stack(rng, cpu, ev.kind)
                stack = after_commit(tr, cpu, entry, stack)
    return True
