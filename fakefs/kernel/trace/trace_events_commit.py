"""The commit of a tracepoint hit into the trace arrays that see it
(``trace_event_buffer_commit()``, ``event_triggers_call()`` of
kernel/trace/trace_events_trigger.c, ``tracing_mark_write()``).

:func:`trace_event_commit` is where a hit goes into the arrays (the
machine's hits whose arrays only write them, ``commit_way()`` PLAIN or
AFTER, take the compiled ``_trace_commit`` way, the machine replaying them
through fakefs/sim/_trace_machine_hits.pyx, to
the same records): the pid lists and the event filter (``TraceArray.event_ignored``),
the triggers (``trace_events_trigger.py``), soft-disable and the
``stacktrace`` option are handled there.  As the kernel does it: with no
trigger needing the record (no filter, no post trigger) the triggers run
first, before anything else, even for a soft-disabled event or while
tracing is off; otherwise the record is built (whatever the buffer
accepts), the triggers whose filter matches run (post triggers are held
back), the record is committed unless soft-disabled or filtered out, and
then the held-back ones run.  ``trace_marker`` writes go through
:func:`trace_print_commit`.
"""

from __future__ import annotations

from . import trace_entries as te
from ._trace_commit import AFTER, COMMITTED, PLAIN, after_commit, commit_written
from .trace_events_trigger import ETT_NONE, PRINT_EVENT, EventTriggers, TriggerData


# --- the commit path ----------------------------------------------------------------

def _run(data: TriggerData, tr, cpu, rec, stack) -> None:
    """``data_ops_trigger()``"""
    cmd = data.cmd
    if data.counted and not cmd.count_func(data, tr):
        return
    cmd.trigger(data, tr, cpu, rec, stack)


def event_triggers_call(tr, trig: EventTriggers, cpu, rec, stack) -> int:
    """``event_triggers_call()`` with the record: the triggers whose filter
    matches run, post triggers are returned (their types) for later."""
    tt = ETT_NONE
    for data in list(trig.triggers):
        if data.paused:
            continue
        flt = data.filter
        if flt is not None and not flt(rec, cpu):
            continue
        if data.cmd.post_trigger:
            tt |= data.cmd.trigger_type
            continue
        _run(data, tr, cpu, rec, stack)
    return tt


def event_triggers_post_call(tr, trig: EventTriggers, tt: int, cpu, rec, stack) -> None:
    for data in list(trig.triggers):
        if not data.paused and data.cmd.trigger_type & tt:
            _run(data, tr, cpu, rec, stack)


# how a hit of an event is committed in an array (``commit_way``): COMMITTED
# the commit path (triggers, pid lists, the filter, then the record), AFTER
# the record then the stack options, PLAIN the record alone; the last two
# are compiled (``_trace_commit``)


def commit_way(tr, ev) -> int:
    """How a hit of ``ev`` (enabled in ``tr``) is committed there: PLAIN
    with no trigger, filter or pid list on it and no stack option, AFTER
    with a stack option only, else COMMITTED (the whole commit path)."""
    if ev in tr.event_triggers or ev in tr.event_filters or tr.event_pids.active():
        return COMMITTED
    return AFTER if tr.flags.get("stacktrace") or tr.flags.get("userstacktrace") else PLAIN


def trace_event_commit(trs, ev, cpu: int, entry, payload: int, stack, way: int = COMMITTED):
    """A hit of ``ev`` (its record ``entry``, ``payload`` bytes) for the
    arrays ``trs`` that see it (event enabled and not soft-disabled, CPU in
    tracing_cpumask; or with triggers on it).  ``stack`` is the hit's stack
    or a function making it, called at most once; it is returned as made.
    ``way``: the least ``commit_way()`` of the arrays where the caller knows
    it (the machine's hits keep it with their recorders)."""
    if way:
        return commit_written(trs, cpu, entry, payload, stack, way)
    for tr in trs:
        trig = tr.event_triggers.get(ev)
        if trig is not None:
            stack = _commit_triggered(tr, trig, ev, cpu, entry, payload, stack)
            continue
        if tr.event_ignored(ev, entry, cpu):
            continue
        if tr.write_entry(cpu, entry, payload):
            stack = after_commit(tr, cpu, entry, stack)
    return stack


def _commit_triggered(tr, trig, ev, cpu, entry, payload, stack):
    if not trig.cond:
        # trace_trigger_soft_disabled(): they all run first, whatever follows
        soft_off = ev in tr.soft_disabled
        for data in list(trig.triggers):
            if not data.paused:
                _run(data, tr, cpu, entry, stack)
        if soft_off or not tr.cpumask >> cpu & 1 or tr.event_ignored(ev, entry, cpu):
            return stack
        if tr.write_entry(cpu, entry, payload):
            stack = after_commit(tr, cpu, entry, stack)
        return stack
    # set_event_pid leaves it out before the record is made; else it is
    # reserved in the buffer (or in a scratch buffer when the buffer refuses
    # it: off, paused, CPU left out), the triggers see it, and it is
    # committed where it was reserved, even if a trigger has switched
    # tracing or swapped the buffers since
    if tr.event_pids.ignore(ev.tracepoint, entry):
        return stack
    into = tr.buffer.cpus[cpu] if tr.reserves_on(cpu) else None
    tracing = tr.tracing
    outer, tracing.nested = tracing.nested, []
    tt = event_triggers_call(tr, trig, cpu, entry, stack)
    if into is not None and ev not in tr.soft_disabled:
        flt = tr.event_filters.get(ev)
        if (flt is None or flt(entry, cpu)) and tr.write_entry(cpu, entry, payload, into):
            stack = after_commit(tr, cpu, entry, stack)
    _commit_nested(tracing, outer)
    if tt:
        event_triggers_post_call(tr, trig, tt, cpu, entry, stack)
    return stack


def _commit_nested(tracing, outer) -> None:
    """The events the triggers generated (synthetic events) go after the
    record they ran for: reserved while it was, they follow it in the
    buffer (``ring_buffer_nest_start()``)."""
    pending, tracing.nested = tracing.nested, outer
    for trs, ev, cpu, entry, payload in pending:
        trace_event_commit(trs, ev, cpu, entry, payload, None)


def nested_commit(tracing, trs, ev, cpu: int, entry, payload: int) -> None:
    """Commit an event a trigger generates (after the triggering record
    when there is one being committed)."""
    if tracing.nested is not None:
        tracing.nested.append((trs, ev, cpu, entry, payload))
    else:
        trace_event_commit(trs, ev, cpu, entry, payload, None)


def trace_print_commit(tr, cpu: int, entry, payload: int, buf: str, stack) -> bool:
    """``tracing_mark_write()`` from its reserve on: the triggers of
    ``ftrace/print`` see the record with ``buf`` as written (before a
    newline is added), then the entry is committed where it was reserved,
    then the post triggers run.  False when the buffer took nothing (the
    writer's EBADF): the reserve failed (tracing off, a reader paused it,
    the CPU out of tracing_cpumask; no trigger ran) or the commit did (full
    without overwrite: here found after the triggers ran)."""
    if not tr.reserves_on(cpu):
        return False
    trig = tr.event_triggers.get(PRINT_EVENT)
    if trig is None:
        return tr.write_entry(cpu, entry, payload)
    into = tr.buffer.cpus[cpu]
    rec = (entry[0], te.TRACE_PRINT, entry[2], entry[3], entry[4], (entry[5], buf), None)
    tracing = tr.tracing
    outer, tracing.nested = tracing.nested, []
    tt = event_triggers_call(tr, trig, cpu, rec, stack)
    committed = tr.write_entry(cpu, entry, payload, into)
    _commit_nested(tracing, outer)
    if tt:
        event_triggers_post_call(tr, trig, tt, cpu, rec, stack)
    return committed


# the path of a write(2) to trace_marker, innermost first
MARKER_PATH = ("tracing_mark_write", "vfs_write", "ksys_write", "__x64_sys_write",
               "x64_sys_call", "do_syscall_64", "entry_SYSCALL_64_after_hwframe")


def marker_stack(kernel) -> tuple:
    """The kernel stack of a trace_marker write (what ``stacktrace`` shows)."""
    ks = kernel.kallsyms
    return tuple(a for a in map(ks.addr_of, MARKER_PATH) if a)
