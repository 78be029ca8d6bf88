"""Event triggers (kernel/trace/trace_events_trigger.c).

The ``trigger`` file of every event (and of ``ftrace/print``) takes
``[!]<command>[:<param>] [if <filter>]``.  Commands are
:class:`EventCommand` objects (``struct event_command``) in
``TRIGGER_COMMANDS``, in ``register_trigger_cmds()`` order: each has a name,
a trigger type, whether it runs after the record is written (post
trigger), and its parse/reg/unreg/print/trigger/count functions.  A
command type the kernel builds elsewhere (hist, enable_hist) is one more
:class:`EventCommand` appended with :func:`register_event_command`.

An array's triggers of one event live in ``tr.event_triggers[ev]``
(:class:`EventTriggers`: ``file->triggers``, newest first, the trigger-mode
reference and the TRIGGER_COND flag).  While an event has triggers it is
registered in soft mode, so a soft-disabled event still runs them.

What a trigger does when its event is hit is :meth:`EventCommand.trigger`;
when that happens is the commit path, ``trace_events_commit.py``.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import FileOperations, KernelError
from ..lib.ctype import skip_spaces
from ..lib.kstrtox import RangeError, kstrtoul
from .trace_events_filter import filters_of
from .trace_events_filter_fields import COMMON, FILTER_OTHER, FILTER_STATIC_STRING, GENERIC, Field
from .trace_snapshot import arm_snapshot, disarm_snapshot, snapshot_instance

PAGE_SIZE = 4096

# enum event_trigger_type
ETT_NONE = 0
ETT_TRACE_ONOFF = 1 << 0
ETT_SNAPSHOT = 1 << 1
ETT_STACKTRACE = 1 << 2
ETT_EVENT_ENABLE = 1 << 3
ETT_EVENT_HIST = 1 << 4
ETT_HIST_ENABLE = 1 << 5
ETT_EVENT_EPROBE = 1 << 6


class PrintEvent:
    """``ftrace/print`` as a trigger's event: its fields for an ``if``
    filter (``ip``, ``buf``: trace_export.c's; a ``char[]`` defined as
    FILTER_OTHER is typed by ``filter_assign_type()``: a static string of
    size 0, compared whole), seen in the record ``(ts, type, pid, flags, pc, (ip,
    buf), None)`` that :func:`trace_print_commit` hands the triggers."""

    system = "ftrace"
    name = "print"

    def __init__(self):
        out = {"ip": Field("ip", "unsigned long", 8, 0, FILTER_OTHER, "a[0]"),
               "buf": Field("buf", "char[]", 0, 0, FILTER_STATIC_STRING, "a[1]")}
        for f in GENERIC + COMMON:
            out.setdefault(f.name, f)
        self.filter_fields = out
        self.filter_values: dict = {}


PRINT_EVENT = PrintEvent()


class TriggerData:
    """``struct event_trigger_data``: one trigger on one event."""

    __slots__ = ("cmd", "count", "counted", "filter", "filter_str", "private", "paused", "ref")

    def __init__(self, cmd, counted: bool, private=None):
        self.cmd = cmd
        self.count = -1                  # -1: unlimited
        self.counted = counted           # EVENT_TRIGGER_FL_COUNT
        self.filter = None               # compiled ``if`` filter
        self.filter_str = None
        self.private = private           # EnableData of enable_event/disable_event
        self.paused = False
        self.ref = 0


class EnableData:
    """``struct enable_trigger_data``"""

    __slots__ = ("ev", "enable")

    def __init__(self, ev, enable: bool):
        self.ev = ev
        self.enable = enable


class EventTriggers:
    """The triggers of one event in one array: ``file->triggers`` (newest
    first), ``tm_ref`` and EVENT_FILE_FL_TRIGGER_COND."""

    __slots__ = ("triggers", "tm_ref", "cond")

    def __init__(self):
        self.triggers: list[TriggerData] = []
        self.tm_ref = 0
        self.cond = False

    def update_cond(self) -> None:
        """``update_cond_flag()``: a filter or a post trigger needs the record."""
        self.cond = any(d.filter is not None or d.cmd.post_trigger or d.cmd.needs_rec
                        for d in self.triggers)


# --- parsing helpers ------------------------------------------------------------

def _strsep(text: str, delims: str):
    """``strsep()``: (token, rest or None)."""
    for i, c in enumerate(text):
        if c in delims:
            return text[:i], text[i + 1:]
    return text, None


def separate_filter(param_and_filter, param_required: bool):
    """``event_trigger_separate_filter()``: (param, filter)."""
    if param_and_filter is None:
        if param_required:
            raise KernelError(errno.EINVAL)
        return None, None
    if not param_required and not param_and_filter[:1].isdigit():
        return None, param_and_filter
    param, rest = _strsep(param_and_filter, " \t")
    filt = None
    if rest is not None:
        filt = skip_spaces(rest) or None
    return param, filt


def parse_num(param, data: TriggerData) -> None:
    """``event_trigger_parse_num()``"""
    if param is None:
        return
    number = param.split(":", 1)[0]
    if not number:
        raise KernelError(errno.EINVAL)
    try:
        count = kstrtoul(number, 0)
    except RangeError:
        raise KernelError(errno.ERANGE)
    except ValueError:
        raise KernelError(errno.EINVAL)
    # kept in a long: ULONG_MAX is -1, unlimited
    data.count = count - (1 << 64) if count >> 63 else count


def set_trigger_filter(filter_str, data: TriggerData, tr, ev) -> None:
    """``set_trigger_filter()``: ``if <filter>``, for the trigger's own event."""
    if filter_str is None:
        data.filter = data.filter_str = None
        return
    word, rest = _strsep(filter_str, " \t")
    if word != "if" or rest is None:
        raise KernelError(errno.EINVAL)
    data.filter = filters_of(tr).create_filter(ev, rest)
    data.filter_str = rest


# --- trigger mode ----------------------------------------------------------------

def _soft(tr, ev, enable: bool) -> None:
    """``trace_event_enable_disable(file, enable, 1)`` (print has no enable)."""
    if ev is not PRINT_EVENT:
        tr.event_enable_disable(ev, enable, True)


def trigger_enable_disable(tr, ev, trig: EventTriggers, enable: bool) -> None:
    """``trace_event_trigger_enable_disable()``: the first trigger puts the
    event in soft mode, the last one takes it out."""
    if enable:
        trig.tm_ref += 1
        if trig.tm_ref == 1:
            _soft(tr, ev, True)
    else:
        trig.tm_ref -= 1
        if trig.tm_ref == 0:
            _soft(tr, ev, False)


def triggers_of(tr, ev) -> EventTriggers:
    trig = tr.event_triggers.get(ev)
    if trig is None:
        trig = tr.event_triggers[ev] = EventTriggers()
        tr.engage()
    return trig


def forget_if_empty(tr, ev, trig: EventTriggers) -> None:
    if not trig.triggers and not trig.tm_ref:
        tr.event_triggers.pop(ev, None)


# --- commands --------------------------------------------------------------------

class EventCommand:
    """``struct event_command``: the generic event_trigger_parse(),
    register_trigger(), unregister_trigger() and event_trigger_print().

    A command overrides what differs: ``parse(tr, ev, glob, param_and_filter)``
    (``glob`` keeps a leading ``!``; raise KernelError), ``reg``/``unreg``,
    ``print(data)`` (one listing line), ``count_func(data, tr)`` (whether a
    counted trigger acts now) and ``trigger(data, tr, cpu, rec, stack)``:
    ``rec`` is the entry tuple of the hit, ``stack`` its stack or a function
    making it.  ``needs_rec`` commands (hist) always get the record after its
    filter ran; ``unreg_all`` is what an O_TRUNC open of the file removes.
    """

    name = ""
    trigger_type = ETT_NONE
    post_trigger = False          # EVENT_CMD_FL_POST_TRIGGER
    needs_rec = False             # EVENT_CMD_FL_NEEDS_REC
    config = None                 # the CONFIG_ option it is built with
    unreg_all = None              # (tr, ev) -> None: what O_TRUNC removes

    def available(self, config) -> bool:
        return self.config is None or config.enabled(self.config)

    # -- parse / register -------------------------------------------------------
    def parse(self, tr, ev, glob: str, param_and_filter) -> None:
        param, filt = separate_filter(param_and_filter, False)
        data = TriggerData(self, param is not None)
        if glob.startswith("!"):
            self.unreg(tr, ev, data)
            return
        parse_num(param, data)
        set_trigger_filter(filt, data, tr, ev)
        self.reg(tr, ev, data)

    def same(self, a: TriggerData, b: TriggerData) -> bool:
        return a.cmd.trigger_type == b.cmd.trigger_type

    def reg(self, tr, ev, data: TriggerData) -> None:
        trig = tr.event_triggers.get(ev)
        if trig is not None and any(self.same(t, data) for t in trig.triggers):
            raise KernelError(errno.EEXIST)
        trig = triggers_of(tr, ev)
        data.ref += 1
        trig.triggers.insert(0, data)
        trig.update_cond()
        trigger_enable_disable(tr, ev, trig, True)

    def unreg(self, tr, ev, test: TriggerData) -> bool:
        """``try_unregister_trigger()``: True when one was removed."""
        trig = tr.event_triggers.get(ev)
        if trig is None:
            return False
        for data in trig.triggers:
            if self.same(data, test):
                trig.triggers.remove(data)
                trigger_enable_disable(tr, ev, trig, False)
                trig.update_cond()
                forget_if_empty(tr, ev, trig)
                self.free(tr, data)
                return True
        return False

    def free(self, tr, data: TriggerData) -> None:
        data.ref -= 1

    # -- at a hit -------------------------------------------------------------------
    def count_func(self, data: TriggerData, tr) -> bool:
        """``event_trigger_count()``"""
        if not data.count:
            return False
        if data.count != -1:
            data.count -= 1
        return True

    def trigger(self, data: TriggerData, tr, cpu: int, rec, stack) -> None:
        raise NotImplementedError

    def may_act(self, data: TriggerData, tr) -> bool:
        """Its next hit (count left) may change what the array records or
        shows beyond what a gap counts in aggregate (fakefs.sim.trace_backlog):
        a snapshot, a histogram, unless a command knows better."""
        return True

    # -- listing --------------------------------------------------------------------
    def print(self, data: TriggerData) -> str:
        return self.name + _count_and_filter(data)


def _count_and_filter(data: TriggerData) -> str:
    s = ":unlimited" if data.count == -1 else ":count=%d" % data.count
    if data.filter_str is not None:
        return s + " if %s\n" % data.filter_str
    return s + "\n"


class TraceOnCommand(EventCommand):
    name = "traceon"
    trigger_type = ETT_TRACE_ONOFF
    on = True

    def count_func(self, data, tr) -> bool:
        """``traceon_count_func()``: counts only when it switches tracing."""
        if not self.may_act(data, tr):
            return False
        return super().count_func(data, tr)

    def trigger(self, data, tr, cpu, rec, stack) -> None:
        if self.may_act(data, tr):
            tr.set_tracing_on(self.on)

    def may_act(self, data, tr) -> bool:
        return tr.tracing_is_on() != self.on


class TraceOffCommand(TraceOnCommand):
    name = "traceoff"
    post_trigger = True
    on = False


class SnapshotCommand(EventCommand):
    name = "snapshot"
    trigger_type = ETT_SNAPSHOT
    config = "TRACER_SNAPSHOT"

    def reg(self, tr, ev, data) -> None:
        """``register_snapshot_trigger()``: the snapshot is armed first."""
        arm_snapshot(tr)
        try:
            super().reg(tr, ev, data)
        except KernelError:
            disarm_snapshot(tr)
            raise

    def unreg(self, tr, ev, test) -> bool:
        if super().unreg(tr, ev, test):
            disarm_snapshot(tr)
            return True
        return False

    def trigger(self, data, tr, cpu, rec, stack) -> None:
        snapshot_instance(tr, cpu, rec[0], rec[2], rec[3], rec[4])


class StacktraceCommand(EventCommand):
    name = "stacktrace"
    trigger_type = ETT_STACKTRACE
    post_trigger = True
    config = "STACKTRACE"

    def trigger(self, data, tr, cpu, rec, stack) -> None:
        """``__trace_stack()`` into the array (nothing on a CPU left out of
        tracing_cpumask: that CPU's buffer takes nothing)."""
        if tr.cpumask >> cpu & 1:
            if callable(stack):
                stack = stack()
            tr.trace_stack(cpu, rec[0], rec[2], rec[3], rec[4], stack)

    def may_act(self, data, tr) -> bool:
        return False              # its entries are the buffer's, counted with them


class EnableEventCommand(EventCommand):
    """enable_event/disable_event:<system>:<event>[:count]
    (``event_enable_trigger_parse()`` and friends)."""

    name = "enable_event"
    trigger_type = ETT_EVENT_ENABLE
    enable = True

    def parse(self, tr, ev, glob, param_and_filter) -> None:
        if param_and_filter is None:
            raise KernelError(errno.EINVAL)
        param, filt = separate_filter(param_and_filter, True)
        system, param = _strsep(param, ":")
        if param is None:
            raise KernelError(errno.EINVAL)
        event, param = _strsep(param, ":")
        target = next((e for e in tr.tracing.events
                       if e.name == event and e.system == system), None)
        if target is None:
            raise KernelError(errno.EINVAL)
        data = TriggerData(self, param is not None, EnableData(target, self.enable))
        if glob.startswith("!"):
            self.unreg(tr, ev, data)
            return
        data.ref += 1
        try:
            parse_num(param, data)
            set_trigger_filter(filt, data, tr, ev)
            tr.event_enable_disable(target, True, True)
            try:
                self.reg(tr, ev, data)
            except KernelError:
                tr.event_enable_disable(target, False, True)
                raise
        finally:
            data.ref -= 1

    def same(self, a, b) -> bool:
        return a.cmd.trigger_type == b.cmd.trigger_type and a.private.ev is b.private.ev

    def free(self, tr, data) -> None:
        """``event_enable_trigger_free()``: the target leaves soft mode."""
        data.ref -= 1
        if not data.ref:
            tr.event_enable_disable(data.private.ev, False, True)

    def count_func(self, data, tr) -> bool:
        """Counts only when the target changes state."""
        if not self.may_act(data, tr):
            return False
        return super().count_func(data, tr)

    def trigger(self, data, tr, cpu, rec, stack) -> None:
        edata = data.private
        if edata.enable:
            tr.soft_disabled.discard(edata.ev)
        else:
            tr.soft_disabled.add(edata.ev)

    def may_act(self, data, tr) -> bool:
        edata = data.private
        return edata.enable != (edata.ev not in tr.soft_disabled)

    def print(self, data) -> str:
        ev = data.private.ev
        return "%s:%s:%s%s" % (self.name, ev.system, ev.name, _count_and_filter(data))


class DisableEventCommand(EnableEventCommand):
    name = "disable_event"
    enable = False


# register_trigger_cmds() order: what "# Available triggers:" lists
TRIGGER_COMMANDS: list[EventCommand] = [
    TraceOnCommand(), TraceOffCommand(), SnapshotCommand(), StacktraceCommand(),
    EnableEventCommand(), DisableEventCommand()]


def register_event_command(cmd: EventCommand) -> None:
    """``register_event_command()``: EBUSY for a name already taken."""
    if any(c.name == cmd.name for c in TRIGGER_COMMANDS):
        raise KernelError(errno.EBUSY)
    TRIGGER_COMMANDS.append(cmd)


def trigger_commands(config) -> list:
    return [c for c in TRIGGER_COMMANDS if c.available(config)]


def clear_event_triggers(tr) -> None:
    """``clear_event_triggers()``: every trigger of the array goes (an
    instance being removed); each one's ``free`` undoes what it holds."""
    for ev, trig in list(tr.event_triggers.items()):
        for data in list(trig.triggers):
            trigger_enable_disable(tr, ev, trig, False)
            trig.triggers.remove(data)
            data.cmd.free(tr, data)
        trig.update_cond()
        forget_if_empty(tr, ev, trig)


def triggers_may_act(tr) -> bool:
    """A trigger of the array with a count left may change what it records
    or shows at its next hit (``EventCommand.may_act``)."""
    return any(d.count and d.cmd.may_act(d, tr)
               for trig in tr.event_triggers.values() for d in trig.triggers)


def hit_counted_triggers(tr) -> list:
    """The array's triggers whose count goes down at every hit (their
    command counts with ``event_trigger_count()``) and is not used up."""
    return [d for trig in tr.event_triggers.values() for d in trig.triggers
            if d.count > 0 and type(d.cmd).count_func is EventCommand.count_func]


def trigger_process_regex(tr, ev, buff: str) -> None:
    """``trigger_process_regex()``: ``[!]command[:| |\\t]rest``."""
    buff = skip_spaces(buff)
    command, nxt = _strsep(buff, ": \t")
    if nxt is not None:
        nxt = skip_spaces(nxt) or None
    name = command[1:] if command.startswith("!") else command
    for p in trigger_commands(tr.kernel.config):
        if p.name == name:
            p.parse(tr, ev, command, nxt)
            return
    raise KernelError(errno.EINVAL)


# --- the trigger file -------------------------------------------------------------

class EventTriggerOps(FileOperations):
    """``events/<system>/<event>/trigger`` (``event_trigger_fops``); ``data``
    is (array, event).  It does not pin the array."""

    def __init__(self, tr, ev):
        self.tr = tr
        self.ev = ev

    @property
    def observes(self) -> bool:
        """Only counts of its triggers change as the machine runs."""
        return self.ev in self.tr.event_triggers


    def open(self, f):
        tr, ev = f.data
        if f.trunc and ev in tr.event_triggers:     # removes those that say so (hist)
            for p in trigger_commands(tr.kernel.config):
                if p.unreg_all is not None:
                    p.unreg_all(tr, ev)

    def show(self, f):
        tr, ev = f.data
        trig = tr.event_triggers.get(ev)
        # (an event probe's trigger is no user's: check_user_trigger())
        if trig is None or all(d.cmd.trigger_type == ETT_EVENT_EPROBE for d in trig.triggers):
            names = "".join(" " + p.name for p in trigger_commands(tr.kernel.config))
            return "# Available triggers:\n#" + names + "\n"
        return "".join(d.cmd.print(d) for d in trig.triggers)

    def write(self, f, data):
        """``event_trigger_regex_write()``: one command per write."""
        if not data:
            return 0
        if len(data) >= PAGE_SIZE:
            raise KernelError(errno.EINVAL)
        text = data.decode("latin-1").split("\0", 1)[0].strip(" \t\n\v\f\r")
        tr, ev = f.data
        trigger_process_regex(tr, ev, text)
        return len(data)
