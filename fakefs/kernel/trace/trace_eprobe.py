"""Event probes (kernel/trace/trace_eprobe.c): the ``e`` command of
``dynamic_events``.

``e[:[GROUP/][EVENT]] SYSTEM.EVENT [ARGS] [if FILTER]`` (or
``SYSTEM/EVENT``) makes an event, in ``eprobes`` by default and named as
the attached event, whose record is made from each record of the
attached event: ``$field`` fetches one of its fields (its own fields, not
the common ones), ``$comm`` the task's name, and the rest of the fetch
arguments work on those values (dereference, types, immediates); no
registers, no ``$argN``.  The filter applies to the attached event's
record and is checked when the command is given.

While an eprobe's event is enabled in an array, the attached event of
that array carries an eprobe trigger (``EprobeCommand``: not listed in the
``trigger`` file, and not a command it takes): the attached event is in
soft mode then, so it fires even when not enabled itself, and each of its
hits (through the filter) is a record of the eprobe's event.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from .events_defs import EventDef
from .trace_dynevent import DynEventOps
from .trace_events import remove_event_call
from .trace_events_commit import trace_event_commit
from .trace_events_filter import filters_of
from .trace_events_filter_fields import COMMON, parse_field_decl
from .trace_events_trigger import (ETT_EVENT_EPROBE, EventCommand, TriggerData, forget_if_empty,
                                   trigger_enable_disable, triggers_of)
from .trace_kprobe import add_probe_event, event_name_used
from .trace_kprobe_regs import _text
from .trace_probe import (FL_KERNEL, FL_TEVENT, MAX_EVENT_NAME_LEN, MAX_TRACE_ARGS, ParseContext,
                          parse_event_name, parse_probe_arg)
from .trace_probe_log import ProbeError, ProbeLog, run_probe_command
from .trace_probe_tmpl import (ProbeMemory, ProbeRegs, data_size, fetch_args, field_line,
                               print_args, print_fmt, update_arg)

EPROBE_EVENT_SYSTEM = "eprobes"
ENTRY_HEAD = 8                     # struct eprobe_trace_entry_head: the trace_entry


class EprobeEvent(EventDef):
    """The eprobe's ``trace_event_call``: its fields are its arguments."""

    def __init__(self, group: str, name: str, args: list):
        fields = [field_line(a.field_type(), a.name, ENTRY_HEAD + a.offset, a.size(), a.type.signed)
                  for a in args]
        super().__init__(group, name, fields, print_fmt(args, False, True), ENTRY_HEAD, None)
        self.tracepoint = "\0eprobe:%s/%s" % (group, name)
        self.args = args
        self.probes: list[TraceEprobe] = []
        self.was_enabled: set = set()

    def render(self, a, fmt) -> str:
        ep = self.probes[0]
        return "(%s.%s)%s" % (ep.attached.system, ep.attached.name,
                              print_args(self.args, a, fmt.kallsyms))


class TraceEprobe:
    """``struct trace_eprobe``: the probe (a dynamic event) and what it is
    attached to."""

    __slots__ = ("ops", "event", "attached", "args", "filter_str", "triggers")

    def __init__(self, ops, attached, args, filter_str):
        self.ops = ops
        self.event: EprobeEvent | None = None
        self.attached = attached          # the EventDef it reads
        self.args = args
        self.filter_str = filter_str
        self.triggers: dict = {}          # array -> its TriggerData on the attached event


class EprobeCommand(EventCommand):
    """``event_trigger_eprobe_cmd``: made by an eprobe, never parsed from
    a trigger file, and printing nothing there."""

    name = "eprobe"
    trigger_type = ETT_EVENT_EPROBE
    needs_rec = True
    # (runs after the attached event's record is in the buffer, which was
    # reserved first: the probe's record follows it)
    post_trigger = True

    def may_act(self, data, tr) -> bool:
        return True

    def print(self, data) -> str:
        return ""

    def trigger(self, data, tr, cpu, rec, stack) -> None:
        ep = data.private
        ep.ops.record(ep, tr, cpu, rec, stack)


EPROBE_COMMAND = EprobeCommand()


def _own_fields(ev) -> dict:
    """The attached event's own fields (``trace_get_fields()``): name ->
    (index in the record, conversion to the value the buffer holds)."""
    out = {}
    common = {f.name for f in COMMON}
    convs = ev.filter_values
    for i, line in enumerate(ev.fields):
        _t, name, _size, _signed = parse_field_decl(line)
        if name not in common:
            out.setdefault(name, (i, convs.get(name)))
    return out


class EprobeOps(DynEventOps):
    """``eprobe_dyn_event_ops`` and the event probes of one kernel."""

    def __init__(self, kernel, dyn):
        self.kernel = kernel
        self.tracing = kernel.tracing
        self.dyn = dyn
        self.first_dynamic_id = dyn.first_dynamic_id
        self.tracing.file_hooks.append(self._file_changed)

    # --- dyn_event_operations ---------------------------------------------------
    def create(self, raw: str) -> None:
        run_probe_command(raw, self._create)

    def show(self, ep) -> str:
        return "e:%s/%s %s.%s%s\n" % (ep.event.system, ep.event.name, ep.attached.system,
                                      ep.attached.name,
                                      "".join(" %s=%s" % (a.name, a.comm) for a in ep.args))

    def is_busy(self, ep) -> bool:
        return ep.event.tracepoint in self.tracing.tracepoint_users

    def match(self, system, event, argv, ep) -> bool:
        ev = ep.event
        if system is not None and system != ev.system:
            return False
        if event and event != ev.name:
            return False
        if not argv:
            return True
        head = argv[0]
        cut = head.find("/")
        if cut < 0:
            cut = head.find(".")
        if cut < 0:
            return False
        if head[:cut] != ep.attached.system or head[cut + 1:] != ep.attached.name:
            return False
        rest = argv[1:]
        if len(ep.args) < len(rest):
            return False
        return all(w == "%s=%s" % (a.name, a.comm) for w, a in zip(rest, ep.args))

    def free(self, ep) -> None:
        if self.is_busy(ep):
            raise KernelError(errno.EBUSY)
        ev = ep.event
        for tr in list(ev.was_enabled):
            if tr in self.tracing.arrays():
                tr.reset_buffer()
        remove_event_call(self.tracing, ev)
        self.dyn.remove(ep)

    # --- __trace_eprobe_create -------------------------------------------------------
    def _create(self, argv: list[str]) -> None:
        if len(argv) < 2 or argv[0][0] != "e":
            raise ProbeError(errno.ECANCELED)
        log = ProbeLog(self.tracing.global_trace, "event_probe", argv)
        group, name = EPROBE_EVENT_SYSTEM, None
        colon = argv[0].find(":", 1)
        if colon >= 0:
            g, name = parse_event_name(argv[0][colon + 1:], log, colon + 1)
            group = g or group
        log.set_index(1)
        try:
            sys_name, sys_event = parse_event_name(argv[1], log, 0)
        except ProbeError:
            sys_name = sys_event = None
        if not sys_name or not sys_event:
            raise log.fail(0, "NO_EVENT_INFO")
        if name is None:
            name = sys_event[:MAX_EVENT_NAME_LEN - 1]
        args = argv[2:]
        filter_words = None
        if "if" in args:
            at = args.index("if")
            filter_words = args[at + 1:]
            args = args[:at]
            filter_idx = at + 3
        if len(args) > MAX_TRACE_ARGS:
            raise ProbeError(errno.E2BIG)
        attached = next((ev for ev in self.tracing.events
                         if ev.system == sys_name and ev.name == sys_event), None)
        if attached is None:
            raise log.fail(0, "BAD_ATTACH_EVENT", errno.ENODEV)
        filter_str = None
        if filter_words is not None:
            log.set_index(filter_idx)
            if not filter_words:
                raise log.fail(0, "NO_EP_FILTER")
            filter_str = " ".join(filter_words)
            filters_of(self.tracing.global_trace).create_filter(attached, filter_str)
        ctx = ParseContext(FL_KERNEL | FL_TEVENT, _own_fields(attached))
        pargs, size = [], 0
        for i, a in enumerate(args):
            log.set_index(i + 2)
            ctx.offset = 0
            parg, size = parse_probe_arg(pargs, i, a, ctx, log, size)
            ret = update_arg(parg, self.kernel.kallsyms.addr_of)
            if ret:
                raise ProbeError(-ret)
            pargs.append(parg)
        ep = TraceEprobe(self, attached, pargs, filter_str)
        if event_name_used(self.tracing, group, name):
            log.set_index(0)
            raise log.fail(0, "EVENT_EXIST", errno.EEXIST)
        ev = EprobeEvent(group, name, pargs)
        add_probe_event(self.tracing, ev, self.first_dynamic_id)
        ep.event = ev
        ev.probes.append(ep)
        self.dyn.add(ep)

    # --- enabling and hits -------------------------------------------------------------
    def _file_changed(self, tr, ev, on: bool) -> None:
        """``enable_trace_eprobe()``/``disable_trace_eprobe()`` in one
        array: the eprobe's trigger on the attached event there."""
        if not isinstance(ev, EprobeEvent):
            return
        ep = ev.probes[0]
        if on:
            ev.was_enabled.add(tr)
        self._set_trigger(ep, tr, on)

    def _set_trigger(self, ep: TraceEprobe, tr, on: bool) -> None:
        data = ep.triggers.get(tr)
        if on and data is None:
            data = TriggerData(EPROBE_COMMAND, False, ep)
            if ep.filter_str is not None:
                data.filter = filters_of(tr).create_filter(ep.attached, ep.filter_str)
                data.filter_str = ep.filter_str
            trig = triggers_of(tr, ep.attached)
            trig.triggers.append(data)
            trig.update_cond()
            trigger_enable_disable(tr, ep.attached, trig, True)
            ep.triggers[tr] = data
        elif not on and data is not None:
            del ep.triggers[tr]
            trig = tr.event_triggers.get(ep.attached)
            if trig is not None and data in trig.triggers:
                trig.triggers.remove(data)
                trigger_enable_disable(tr, ep.attached, trig, False)
                trig.update_cond()
                forget_if_empty(tr, ep.attached, trig)

    def record(self, ep: TraceEprobe, tr, cpu: int, rec, stack) -> None:
        """``__eprobe_trace_func()``: a record of the attached event in
        ``tr`` makes one of the eprobe's event there."""
        ev = ep.event
        if not (tr.event_recording(ev) and tr.cpumask >> cpu & 1) and ev not in tr.event_triggers:
            return
        ts, _type, pid, flags, pc, fields = rec[:6]
        task = self.kernel.sched.find(pid) if pid else None
        comm = task.comm if task is not None else (
            "swapper/%d" % cpu if not pid else self.tracing.savedcmd.lookup(pid) or "<...>")
        umem = task.mm if task is not None else None
        mem = ProbeMemory(self.kernel.seed, _text(self.kernel), self.kernel.kallsyms.data_contents,
                          None, umem=umem)
        regs = ProbeRegs({}, [], comm, mem, self.kernel.kallsyms, event_args=tuple(fields),
                         umem=umem)
        values = fetch_args(ep.args, regs)
        entry = (ts, ev.id, pid, flags, pc, values, None)
        trace_event_commit([tr], ev, cpu, entry, ev.payload + data_size(ep.args, values), stack)


def init_eprobe_trace(tracing, dyn) -> EprobeOps:
    """``trace_events_eprobe_init_early()``: the e command of dynamic_events."""
    ops = EprobeOps(tracing.kernel, dyn)
    dyn.register(ops)
    return ops
