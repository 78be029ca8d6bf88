"""The registered trace events: the kernel's ``ftrace_events`` list (trace_events.c).

At boot the kernel registers every event of vmlinux in link order, then the
events of each module as it loads; ids come from ``event_init()`` /
``register_trace_event()``.  The events, their formats, ids and listing
order are those of the catalogue of the persona's kernel
(``event_catalog.py``, Debian's 6.12 build).  Most of them can be enabled,
filtered and read like on a machine where that subsystem is idle; the ones
the simulated machine drives (``events_defs.py``: the scheduler's, kmem,
signal) fire, with the catalogue's format.

Personas older than the catalogue keep the hand-written events of
``events_defs.py`` alone.
"""

from __future__ import annotations

import dataclasses

from . import trace_entries as te
from .event_catalog import Field, load_catalog
from .events_defs import EventDef, all_events
from .events_machine import machine_events
from .trace_syscalls import raw_syscall_events, syscall_event


class CatalogEvent(EventDef):
    """An event nothing in the simulated machine fires (yet)."""

    def render(self, args, fmt) -> str:
        return ""


class EventList:
    """Registered events: ``events`` in registration order, ``listing`` in
    ``available_events`` order (the top-level array's ``tr->events``),
    ``instance_listing`` the order of an instance made after the modules
    loaded (module events last, not first), lookups by id and by (system,
    name)."""

    __slots__ = ("events", "listing", "instance_listing", "by_id", "by_key", "modules", "ftrace")

    def __init__(self, events, listing, modules=(), ftrace=(), instance_listing=None):
        self.events = list(events)
        self.listing = list(listing)
        self.instance_listing = self.listing if instance_listing is None else list(instance_listing)
        self.by_id = {ev.id: ev for ev in self.events}
        self.by_key = {(ev.system, ev.name): ev for ev in self.events}
        self.modules = list(modules)
        # the ftrace-internal entry types (trace_entries.h) the catalogue
        # describes: events/ftrace/<name>/format
        self.ftrace = list(ftrace)


def _from_catalogue(config) -> EventList:
    cat = load_catalog("6.12")
    driven = {(ev.system, ev.name): ev
              for ev in all_events() + machine_events() + raw_syscall_events()}
    last = te.TRACE_STACK_ID + 1 if config.enabled("FTRACE_STACKMAP") else None
    modules = cat.default_modules
    ids = cat.assign_ids(modules, trace_last_type=last)
    events, ftrace = [], []
    lines_of: dict = {}             # a field's format line, one string for equal fields
    for desc in cat.registration_order(modules):
        if desc.system == "ftrace":
            if desc.name == "funcgraph_exit" and config.enabled("FUNCTION_GRAPH_RETVAL"):
                desc = graph_exit_with_retval(desc)
            ftrace.append(desc)          # entry types: format files only
            continue
        ev = driven.pop(desc.key, None)
        if ev is None and desc.system == "syscalls":
            ev = syscall_event(desc)
        lines = [lines_of.get(f) or lines_of.setdefault(f, f.format_line()) for f in desc.fields]
        if ev is None:
            ev = CatalogEvent(desc.system, desc.name, lines, desc.print_fmt, desc.size, None)
        elif ev.fields and [f.name for f in desc.fields] != [
                ln.split(";")[0].split()[-1].split("[")[0] for ln in ev.fields]:
            raise ValueError("%s:%s: fields differ from the catalogue's" % desc.key)
        ev.fields = lines
        ev.print_fmt = desc.print_fmt
        ev.payload = desc.size
        ev.id = ids[desc.key]
        ev.desc = desc
        events.append(ev)
    if driven:
        raise ValueError("driven events missing from the catalogue: %s" % sorted(driven))
    by_key = {(ev.system, ev.name): ev for ev in events}
    listing = [by_key[k] for k in cat.listing_order(modules) if k in by_key]
    later = [by_key[k] for k in cat.listing_order(modules, created_after=len(modules)) if k in by_key]
    return EventList(events, listing, modules, ftrace, later)


def graph_exit_with_retval(desc):
    """``funcgraph_exit`` as CONFIG_FUNCTION_GRAPH_RETVAL declares it (the
    catalogue is a build without): ``retval`` after ``func``, the rest 8
    bytes on, the value at the end of the print format."""
    fields = [desc.fields[0], Field("unsigned long", "retval", 16, 8, 0)]
    fields += [dataclasses.replace(f, offset=f.offset + 8) for f in desc.fields[1:]]
    fmt = desc.print_fmt.replace('over: %d"', 'over: %d retval: %lx"') + ", REC->retval"
    return dataclasses.replace(desc, fields=tuple(fields), print_fmt=fmt, size=desc.size + 8)


def _hand_written() -> EventList:
    events = all_events()
    for i, ev in enumerate(events):
        ev.id = te.TRACE_STACK_ID + 1 + i
    return EventList(events, events)


def register_events(config) -> EventList:
    if config.version_at_least(6, 12):
        return _from_catalogue(config)
    return _hand_written()
