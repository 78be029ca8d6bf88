"""Function probes: the commands of set_ftrace_filter that act on calls.

``<glob>:traceon``, ``traceoff`` and ``stacktrace``, each with an optional
``:count`` (the probe callbacks of kernel/trace/trace_functions.c), and
``<glob>:enable_event:<system>:<event>`` / ``disable_event`` with an
optional count (``event_enable_func()`` of kernel/trace/trace_events.c: the
event is in soft mode while a probe holds it); a leading ``!`` takes them
off again.  They are registered as ``register_ftrace_function_probe()`` of
kernel/trace/ftrace.c does: one :class:`FuncProbe` per command, counted or
not, in ``FtraceOps.probes`` of the trace array (ftrace.py).  The functions
here take that ``FtraceOps`` as ``ops`` where the kernel's take the array.

``snapshot[:count]`` (``ftrace_trace_snapshot_callback()`` of
kernel/trace/trace.c) arms the array's snapshot buffer while registered and
swaps it at each call (trace_snapshot.py).  ``dump`` and ``cpudump``
(``ftrace_dump_probe()``/``ftrace_cpudump_probe()``) always carry a count
of 1, whatever was written: the first call dumps the top-level buffer (all
CPUs, or only the calling one) into the kernel log (trace_dump.py), later
calls do nothing until the probe is written again.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..lib.kstrtox import kstrtoul
from .ftrace_records import Glob, filter_parse_regex
from .trace_dump import DUMP_ALL, DUMP_ORIG, ftrace_dump
from .trace_snapshot import arm_snapshot, disarm_snapshot, snapshot_instance


class EventProbeData:
    """``struct event_probe_data``: one enable_event/disable_event command."""

    __slots__ = ("ev", "enable", "count", "ref")

    def __init__(self, ev, enable, count):
        self.ev = ev
        self.enable = enable
        self.count = count
        self.ref = 0


class FuncProbe:
    """``struct ftrace_func_probe``: the functions one probe type runs on.
    ``entries``: record -> count (traceon/traceoff/stacktrace with a count,
    None without) or EventProbeData."""

    __slots__ = ("cmd", "counted", "entries")

    def __init__(self, cmd, counted):
        self.cmd = cmd
        self.counted = counted
        self.entries: dict[int, object] = {}

    def line(self, records, rec) -> str:
        name = records.display(rec)
        data = self.entries[rec]
        if self.cmd in ("enable_event", "disable_event"):
            ev = data.ev
            head = "%s:%s:%s:%s" % (name, self.cmd, ev.system, ev.name)
            if data.count == -1:
                return head + ":unlimited\n"
            return head + ":count=%d\n" % data.count
        if data is None:
            return "%s:%s:unlimited\n" % (name, self.cmd)
        return "%s:%s:count=%d\n" % (name, self.cmd, data)


PROBE_COMMANDS = ("traceon", "traceoff", "stacktrace", "snapshot", "dump", "cpudump",
                  "enable_event", "disable_event")
DUMP_COMMANDS = {"dump": DUMP_ALL, "cpudump": DUMP_ORIG}


# --------------------------------------------------------------- callbacks
def fire_probe(ops, probe, rec, cpu, ts, stack) -> None:
    """The probe's callback for a call of record ``rec``."""
    tr = ops.tr
    cmd = probe.cmd
    data = probe.entries[rec]
    if cmd in ("traceon", "traceoff"):
        on = cmd == "traceon"
        if data is None:
            if tr.tracing_is_on() != on:
                tr.set_tracing_on(on)
            return
        if data <= 0 or tr.tracing_is_on() == on:
            return
        tr.set_tracing_on(on)
        probe.entries[rec] = data - 1
        ops.count_changed()
    elif cmd == "stacktrace":
        if data is not None:
            # the counted variant looks at the top-level tracing_on
            if not tr.tracing.global_trace.tracing_is_on() or not data:
                return
            probe.entries[rec] = data - 1
            ops.count_changed()
        _trace_stack(ops, cpu, ts, stack)
    elif cmd == "snapshot":
        if data is not None:
            if data <= 0:
                return
            probe.entries[rec] = data - 1
            ops.count_changed()
        _snapshot(ops, cpu, ts, stack)
    elif cmd in DUMP_COMMANDS:
        if data <= 0:                 # update_count()
            return
        probe.entries[rec] = data - 1
        ops.count_changed()
        ftrace_dump(tr.tracing, DUMP_COMMANDS[cmd], cpu, ts)
    else:
        ev = data.ev
        if probe.counted:
            if not data.count:
                return
            if data.enable == (ev not in tr.soft_disabled):
                return
            if data.count != -1:
                data.count -= 1
                ops.count_changed()
        if data.enable:
            tr.soft_disabled.discard(ev)
        else:
            tr.soft_disabled.add(ev)


def probes_may_act(ops) -> bool:
    """A probe's next call may change what the array records or shows
    beyond what a gap counts in aggregate (fakefs.sim.trace_backlog): switch its
    tracing or an event, take a snapshot, dump.  A stacktrace probe writes
    entries of the buffer, counted with them."""
    tr = ops.tr
    for probe in ops.probes:
        cmd = probe.cmd
        if cmd == "stacktrace":
            continue
        if cmd in ("traceon", "traceoff"):
            if tr.tracing_is_on() == (cmd == "traceon"):
                continue
            if not probe.counted or any(n > 0 for n in probe.entries.values()):
                return True
        elif cmd == "snapshot":
            if not probe.counted or any(n > 0 for n in probe.entries.values()):
                return True
        elif cmd in DUMP_COMMANDS:
            if any(n > 0 for n in probe.entries.values()):
                return True
        elif any(d.count and d.enable != (d.ev not in tr.soft_disabled)
                 for d in probe.entries.values()):
            return True
    return False


def hit_counted_probes(ops) -> list:
    """(probe, record) of the counted stacktrace probes with a count left:
    their count goes down at every call."""
    return [(p, rec) for p in ops.probes if p.cmd == "stacktrace" and p.counted
            for rec, n in p.entries.items() if n > 0]


def _context(ops, cpu, stack) -> tuple:
    """(pid, flags, preempt count) of the call on ``cpu``."""
    k = ops.kernel
    act = k.trace_hits
    flags, pc = act.context_flags(stack) if act is not None else (0, 0)
    return k.workload.current(cpu).pid, flags, pc


def _trace_stack(ops, cpu, ts, stack) -> None:
    tr = ops.tr
    if not tr.cpumask >> cpu & 1:
        return                       # tracing_cpumask: that CPU records nothing
    tr.trace_stack(cpu, ts, *_context(ops, cpu, stack), stack)


def _snapshot(ops, cpu, ts, stack) -> None:
    snapshot_instance(ops.tr, cpu, ts, *_context(ops, cpu, stack))


# --------------------------------------------------------------- commands
def _find_probe(ops, cmd, counted):
    for p in ops.probes:
        if p.cmd == cmd and p.counted == counted:
            return p
    return None


def trace_probe_command(ops, glob, cmd, param, enable) -> None:
    """traceon/traceoff/stacktrace/dump/cpudump
    (``ftrace_trace_probe_callback()``) and snapshot
    (``ftrace_trace_snapshot_callback()``: armed while registered)."""
    if not enable:
        raise KernelError(errno.EINVAL)
    if cmd in DUMP_COMMANDS:
        param = "1"                   # "Only dump once."
    counted = param is not None
    if glob.startswith("!"):
        _unregister(ops, glob[1:], cmd, counted)
        if cmd == "snapshot":
            disarm_snapshot(ops.tr)
        return
    count = -1
    if param:
        number = param.split(":", 1)[0]
        if number:
            try:
                count = kstrtoul(number, 0)
            except ValueError:
                raise KernelError(errno.EINVAL)
    if cmd != "snapshot":
        _register(ops, glob, cmd, counted, lambda: count if counted else None)
        return
    arm_snapshot(ops.tr)
    try:
        _register(ops, glob, cmd, counted, lambda: count if counted else None)
    except KernelError:
        disarm_snapshot(ops.tr)
        raise


def event_probe_command(ops, glob, cmd, param, enable) -> None:
    """enable_event/disable_event:<system>:<event>[:count]
    (``event_enable_func()``)."""
    if not enable or param is None:
        raise KernelError(errno.EINVAL)
    system, sep, rest = param.partition(":")
    if not sep:
        raise KernelError(errno.EINVAL)
    event, sep, rest = rest.partition(":")
    param = rest if sep else None
    tr = ops.tr
    ev = next((e for e in tr.tracing.events if e.system == system and e.name == event), None)
    if ev is None:
        raise KernelError(errno.EINVAL)
    on = cmd == "enable_event"
    counted = param is not None
    if glob.startswith("!"):
        _unregister(ops, glob[1:], cmd, counted)
        return
    data = EventProbeData(ev, on, -1)
    if param is not None:
        number = param.split(":", 1)[0]
        if not number:
            raise KernelError(errno.EINVAL)
        try:
            data.count = kstrtoul(number, 0)
        except ValueError:
            raise KernelError(errno.EINVAL)
    tr.event_enable_disable(ev, True, True)
    try:
        _register(ops, glob, cmd, counted, lambda: data, edata=data)
    except KernelError:
        if not data.ref:
            tr.event_enable_disable(ev, False, True)
        raise


def _register(ops, glob, cmd, counted, init, edata=None) -> None:
    """``register_ftrace_function_probe()``: every matching function
    not yet in the probe gets it; nothing new is an error."""
    recs, _clear = ops.records.match(glob, None)
    if not recs:
        raise KernelError(errno.EINVAL)
    probe = _find_probe(ops, cmd, counted)
    new = probe is None
    if new:
        probe = FuncProbe(cmd, counted)
    added = 0
    for rec in recs:
        if rec in probe.entries:
            continue
        probe.entries[rec] = init()
        if edata is not None:
            edata.ref += 1
        added += 1
    if not added:
        raise KernelError(errno.EINVAL)
    if new:
        ops.probes.insert(0, probe)
    ops.changed()


def _unregister(ops, glob, cmd, counted) -> None:
    """``unregister_ftrace_function_probe_func()``."""
    probe = _find_probe(ops, cmd, counted)
    if probe is None:
        raise KernelError(errno.ENODEV)
    if glob in ("", "*"):
        recs = list(probe.entries)
    else:
        t, s, neg = filter_parse_regex(glob)
        if neg:
            raise KernelError(errno.EINVAL)
        g = Glob(t, s)
        names = ops.records.names
        recs = [r for r in probe.entries if g.match(names[r])]
    if not recs:
        raise KernelError(errno.EINVAL)
    for rec in recs:
        _free_entry(ops, probe, probe.entries.pop(rec))
    if not probe.entries:
        ops.probes.remove(probe)
    ops.changed()


def unregister_all(ops, probe) -> None:
    """Take ``probe`` off every function (the array goes away)."""
    for rec in list(probe.entries):
        _free_entry(ops, probe, probe.entries.pop(rec))
    if probe in ops.probes:
        ops.probes.remove(probe)


def _free_entry(ops, probe, data) -> None:
    if isinstance(data, EventProbeData):
        data.ref -= 1
        if not data.ref:
            ops.tr.event_enable_disable(data.ev, False, True)   # leaves soft mode
