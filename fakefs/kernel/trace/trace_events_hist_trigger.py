"""Hist triggers in the event trigger framework: the ``hist``,
``enable_hist`` and ``disable_hist`` commands (``trigger_hist_cmd``,
``trigger_hist_enable_cmd`` and ``trigger_hist_disable_cmd`` of
kernel/trace/trace_events_hist.c) and each event's ``hist`` file
(``event_hist_fops``).

A hist trigger is a :class:`TriggerData` of :data:`HIST_CMD` whose
``private`` is the :class:`trace_events_hist.HistTrigger`; it goes at the
tail of the event's trigger list (the other commands go at the head).  It
needs the record (EVENT_CMD_FL_NEEDS_REC), so it runs once the record is
built, and keeps its own filter and paused state.  ``enable_hist`` and
``disable_hist`` are enable_event's parsing with another action: they
continue or pause the hist triggers of their target event.

Importing this module registers the three commands, after the framework's
own, in ``register_trigger_cmds()`` order.
"""

from __future__ import annotations

from .trace_events_hist import check_var_refs, event_hist_trigger_parse, ftrace_print_fields, hist_text
from .trace_events_trigger import (ETT_EVENT_HIST, ETT_HIST_ENABLE, PRINT_EVENT, EnableEventCommand,
                                   EventCommand, TriggerData, forget_if_empty, register_event_command,
                                   trigger_enable_disable, triggers_of)
from .trace_ref import ArrayFileOps


def hist_datas(tr, ev, trigger_type=ETT_EVENT_HIST) -> list:
    """The event's hist triggers (their TriggerData), in list order; or
    those of another type."""
    trig = tr.event_triggers.get(ev)
    if trig is None:
        return []
    return [d for d in trig.triggers if d.cmd.trigger_type == trigger_type]


def registered_hists(tr) -> list:
    """(event, HistData) of every hist trigger of the array."""
    return [(ev, d.private.hist) for ev, trig in tr.event_triggers.items()
            for d in trig.triggers if d.cmd.trigger_type == ETT_EVENT_HIST]


def _unlink(tr, ev, data) -> None:
    trig = tr.event_triggers[ev]
    trig.triggers.remove(data)
    trigger_enable_disable(tr, ev, trig, False)
    trig.update_cond()
    forget_if_empty(tr, ev, trig)


def _unreg_all(tr, ev, trigger_type) -> None:
    """What an O_TRUNC open of the trigger file removes of a type."""
    for data in hist_datas(tr, ev, trigger_type):
        _unlink(tr, ev, data)
        data.cmd.free(tr, data)


class HistCommand(EventCommand):
    """``hist:...``: parsing and matching are ``event_hist_trigger_parse()``
    of trace_events_hist.py; this is its registration."""

    name = "hist"
    trigger_type = ETT_EVENT_HIST
    needs_rec = True
    config = "HIST_TRIGGERS"

    def parse(self, tr, ev, glob, param_and_filter) -> None:
        datas = hist_datas(tr, ev)
        fields = ftrace_print_fields() if ev is PRINT_EVENT else None
        op = event_hist_trigger_parse(tr.tracing.hist_named, tr, ev, glob, param_and_filter,
                                      [d.private for d in datas], fields,
                                      registered=lambda: registered_hists(tr),
                                      run_hist=lambda e, g, cmd: self.parse(tr, e, g, cmd))
        if op.kind == "add":
            # hist_trigger_enable(): at the tail, then soft mode
            data = TriggerData(self, False, op.trigger)
            data.ref += 1
            trig = triggers_of(tr, ev)
            trig.triggers.append(data)
            trig.update_cond()
            trigger_enable_disable(tr, ev, trig, True)
        elif op.kind == "remove":
            # hist_unregister_trigger(): the histogram was freed already
            data = next(d for d in datas if d.private is op.trigger)
            data.ref -= 1
            _unlink(tr, ev, data)

    def unreg(self, tr, ev, test) -> bool:
        return False              # only ``!hist:...`` through parse() removes one

    def unreg_all(self, tr, ev) -> None:
        """``hist_unreg_all()``: what an O_TRUNC open of the trigger file
        removes: nothing while another trigger refers to a variable of one
        of them (``hist_file_check_refs()``)."""
        regs = registered_hists(tr)
        if any(check_var_refs(d.private.hist, regs) for d in hist_datas(tr, ev)):
            return
        _unreg_all(tr, ev, ETT_EVENT_HIST)

    def free(self, tr, data) -> None:
        """``event_hist_trigger_free()``"""
        data.ref -= 1
        data.private.free()

    def trigger(self, data, tr, cpu, rec, stack) -> None:
        """``event_hist_trigger()``: paused triggers and records its own
        filter rejects are skipped by the trigger itself."""
        t = data.private
        if callable(stack) and t.takes_stack:
            stack = stack()
        t.hit(rec, cpu, None if callable(stack) else stack)

    def print(self, data) -> str:
        return data.private.listing()


class HistEnableCommand(EnableEventCommand):
    """``enable_hist:<system>:<event>[:count]``: continues the target's
    hist triggers (``hist_enable_trigger()``)."""

    name = "enable_hist"
    trigger_type = ETT_HIST_ENABLE
    config = "HIST_TRIGGERS"
    enable = True
    count_func = EventCommand.count_func     # event_trigger_count(): every hit counts

    def trigger(self, data, tr, cpu, rec, stack) -> None:
        edata = data.private
        for d in hist_datas(tr, edata.ev):
            if edata.enable:
                d.private.cont()
            else:
                d.private.pause()

    def may_act(self, data, tr) -> bool:
        edata = data.private
        return any(d.private.paused == edata.enable for d in hist_datas(tr, edata.ev))

    def unreg_all(self, tr, ev) -> None:
        """``hist_enable_unreg_all()``: O_TRUNC removes these too."""
        _unreg_all(tr, ev, ETT_HIST_ENABLE)


class HistDisableCommand(HistEnableCommand):
    name = "disable_hist"
    enable = False


HIST_CMD = HistCommand()


def register_trigger_hist_cmds() -> None:
    """``register_trigger_hist_enable_disable_cmds()`` then
    ``register_trigger_hist_cmd()``."""
    register_event_command(HistEnableCommand())
    register_event_command(HistDisableCommand())
    register_event_command(HIST_CMD)


register_trigger_hist_cmds()


class EventHistOps(ArrayFileOps):
    """``events/<system>/<event>/hist`` (``event_hist_fops``): the tables of
    the event's hist triggers; ``data`` is (array, event), the event None
    for an ftrace event other than ``print`` (it takes no triggers).  Its
    open pins the array (``tracing_open_file_tr()``)."""

    def array(self, f):
        return f.data[0]

    def show(self, f):
        tr, ev = f.data
        return hist_text(tr, [d.private for d in hist_datas(tr, ev)])
