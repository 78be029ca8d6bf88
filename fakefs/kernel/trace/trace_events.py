"""The events/ directory (kernel/trace/trace_events.c, trace_export.c).

It holds the ftrace-internal events of trace_entries.h — the entry types
the function tracer and the stackmap write — with their ``format`` files
(they cannot be enabled; ``print`` has a ``trigger`` file), the tracepoints
of ``events_defs.py`` with ``enable``/``filter``/``format``/``id``, each
system with ``enable`` and ``filter``, and the top-level ``enable``,
``header_page`` and ``header_event``.  Filters are ``trace_events_filter.py``;
every event's ``trigger`` file is ``trace_events_trigger.py``.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import FileOperations, KernelError, TRACE_MODE_READ, TRACE_MODE_WRITE
from ..lib.kstrtox import kstrtoul
from .trace_events_filter import filters_of, write_text
from .trace_events_hist_trigger import EventHistOps
from .trace_events_trigger import PRINT_EVENT, EventTriggerOps
from .trace_ref import ArrayFileOps
from .trace_export import COMMON_FIELDS, FTRACE_EVENTS

HEADER_PAGE = ("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
               "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
               "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
               "\tfield: char data;\toffset:16;\tsize:%u;\tsigned:0;\n")
HEADER_EVENT = ("# compressed entry header\n"
                "\ttype_len    :    5 bits\n"
                "\ttime_delta  :   27 bits\n"
                "\tarray       :   32 bits\n"
                "\n"
                "\tpadding     : type == 29\n"
                "\ttime_extend : type == 30\n"
                "\ttime_stamp : type == 31\n"
                "\tdata max type_len  == 28\n")

class HeaderPageOps(FileOperations):
    """events/header_page: ``ring_buffer_print_page_header()`` of the
    array's buffer (the data size follows buffer_subbuf_size_kb)."""

    observes = False

    def show(self, f):
        return HEADER_PAGE % f.data.buffer.subbuf_size


class ConstOps(FileOperations):
    observes = False

    def __init__(self, text: str):
        self.text = text

    def show(self, f):
        return self.text


class FormatOps(FileOperations):
    observes = False

    def show(self, f):
        name, eid, fields, fmt, _files = f.data
        return ("name: %s\nID: %d\nformat:\n%s\n%s\nprint fmt: %s\n"
                % (name, eid, COMMON_FIELDS, "".join(fields), fmt))


class CatalogFormatOps(FileOperations):
    """``format`` of an entry type the catalogue describes (its fixed id)."""

    observes = False

    def show(self, f):
        return f.data.format_text(f.data.fixed_id)


class CatalogIdOps(FileOperations):
    observes = False

    def show(self, f):
        return "%d\n" % f.data.fixed_id


# events/ftrace/<name>: the files besides ``format`` (perf can use function
# and print; print takes triggers)
FTRACE_EXTRA_FILES = {"function": ("id",), "print": ("id", "trigger")}


class IdOps(FileOperations):
    observes = False

    def show(self, f):
        return "%d\n" % f.data[1]


def _enable_state(tr, events) -> str:
    on = sum(1 for ev in events if ev in tr.enabled_events)
    if on == 0:
        return "0\n"
    return "1\n" if on == len(events) else "X\n"


def _parse_01(data: bytes) -> int:
    try:
        val = kstrtoul(data.decode("latin-1"), 10)
    except ValueError:
        raise KernelError(errno.EINVAL)
    if val not in (0, 1):
        raise KernelError(errno.EINVAL)
    return val


def set_events(tr, events, on: bool) -> None:
    """Enable (disable) each of ``events``; the first error counts."""
    err = None
    for ev in events:
        try:
            tr.set_event_enabled(ev, on)
        except KernelError as e:          # (a uprobe's registration) the first one counts,
            err = err or e                # the others are still enabled
    if err is not None:
        raise err


class _EnableOps(ArrayFileOps):
    """What an enable file shows or is written changes only with writes,
    unless triggers or function probes of its array may switch events."""


    def __init__(self, tr):
        self.tr = tr

    @property
    def observes(self) -> bool:
        return self.tr.acts_on_itself()


class EventsEnableOps(_EnableOps):
    """events/enable and events/<system>/enable: 0, 1 or X (mixed)."""

    def __init__(self, tr, system=None):
        super().__init__(tr)
        self.system = system

    def _events(self, tr):
        return [ev for ev in tr.tracing.events if self.system in (None, ev.system)]

    def show(self, f):
        return _enable_state(f.data, self._events(f.data))

    def write(self, f, data):
        val = _parse_01(data)
        set_events(f.data, self._events(f.data), bool(val))
        return len(data)


class EventEnableOps(_EnableOps):
    """events/<system>/<event>/enable"""

    def array(self, f):
        return f.data[0]

    def show(self, f):
        tr, ev = f.data
        return tr.event_enable_text(ev)

    def write(self, f, data):
        tr, ev = f.data
        set_events(tr, (ev,), bool(_parse_01(data)))
        return len(data)


class EventFormatOps(FileOperations):
    observes = False

    def show(self, f):
        return f.data[1].format_text()


class EventIdOps(FileOperations):
    observes = False

    def show(self, f):
        return "%d\n" % f.data[1].id


class _FilterFileOps(ArrayFileOps):
    """Filter files are read in one piece: a read past offset 0 gets nothing
    (``event_filter_read()``, ``subsystem_filter_read()``)."""

    def array(self, f):
        return f.data[0]

    def read(self, f, off, size):
        if off:
            return b""
        return self.show(f).encode("latin-1")[:size]


    def write(self, f, data):
        text = write_text(data)
        tr = f.data[0]
        self.apply(filters_of(tr), f.data[1], text)
        return len(data)


class EventFilterOps(_FilterFileOps):
    """events/<system>/<event>/filter"""

    observes = False

    def show(self, f):
        tr, ev = f.data
        return filters_of(tr).event_text(ev)

    @staticmethod
    def apply(filters, ev, text):
        filters.apply_event_filter(ev, text)


class SubsystemFilterOps(_FilterFileOps):
    """events/<system>/filter: sets the filter of every event of the system."""

    observes = False

    def show(self, f):
        tr, system = f.data
        return filters_of(tr).system_text(system)

    @staticmethod
    def apply(filters, system, text):
        filters.apply_subsystem_filter(system, text)


def event_trace_add_tracer(tr, parent) -> None:
    """Create ``events/`` for a trace array: as eventfs does, its entries
    are made when first looked at (an instance's mkdir makes none)."""
    tr.kernel.tree.create_dir("events", parent, 0o755, data=tr, populate=_populate_events,
                              subdirs=_nr_subdirs(tr.tracing))


def _nr_subdirs(tracing) -> int:
    """What ``events/`` will hold as directories: ftrace/ and one a system."""
    return 1 + len(tracing.event_systems)


def _populate_events(evdir) -> None:
    tr = evdir.data
    tree = tr.kernel.tree
    tree.create_file("enable", TRACE_MODE_WRITE, evdir, tr, EventsEnableOps(tr))
    tree.create_file("header_page", TRACE_MODE_READ, evdir, tr, HeaderPageOps())
    tree.create_file("header_event", TRACE_MODE_READ, evdir, tr, ConstOps(HEADER_EVENT))
    ftrace = tree.create_dir("ftrace", evdir, 0o755)
    has_stackmap = tr.kernel.config.enabled("FTRACE_STACKMAP")
    described = set()
    for desc in tr.tracing.ftrace_events:
        described.add(desc.name)
        d = tree.create_dir(desc.name, ftrace, 0o755)
        tree.create_file("format", TRACE_MODE_READ, d, desc, CatalogFormatOps())
        for fname in FTRACE_EXTRA_FILES.get(desc.name, ()):
            if fname == "id":
                tree.create_file("id", TRACE_MODE_READ, d, desc, CatalogIdOps())
            else:
                tree.create_file("trigger", TRACE_MODE_WRITE, d, (tr, PRINT_EVENT),
                                 EventTriggerOps(tr, PRINT_EVENT))
        _hist_file(d, tr, PRINT_EVENT if desc.name == "print" else None)
    for spec in FTRACE_EVENTS:
        name, _id, _fields, _fmt, files = spec
        if name in described or (name == "stack_id" and not has_stackmap):
            continue
        d = tree.create_dir(name, ftrace, 0o755)
        for fname in files:
            if fname == "format":
                tree.create_file("format", TRACE_MODE_READ, d, spec, FormatOps())
            elif fname == "id":
                tree.create_file("id", TRACE_MODE_READ, d, spec, IdOps())
            elif fname == "trigger":
                tree.create_file("trigger", TRACE_MODE_WRITE, d, (tr, PRINT_EVENT),
                                 EventTriggerOps(tr, PRINT_EVENT))
        _hist_file(d, tr, PRINT_EVENT if name == "print" else None)
    # eventfs: a system's directory and each event's are filled in when
    # first looked at (some 2,500 events x 4 files for every instance)
    systems: dict[str, list] = {}
    for ev in tr.tracing.events:
        systems.setdefault(ev.system, []).append(ev)
    for system, events in systems.items():
        tree.create_dir(system, evdir, 0o755, data=(tr, system, events),
                        populate=_populate_system, subdirs=len(events))


def _populate_system(sd) -> None:
    tr, system, events = sd.data
    tree = tr.kernel.tree
    tree.create_file("filter", TRACE_MODE_WRITE, sd, (tr, system), SubsystemFilterOps())
    tree.create_file("enable", TRACE_MODE_WRITE, sd, tr, EventsEnableOps(tr, system))
    for ev in events:
        tree.create_dir(ev.name, sd, 0o755, data=(tr, ev), populate=_populate_event)


def _populate_event(d) -> None:
    tree = d.tree
    data = d.data
    tree.create_file("enable", TRACE_MODE_WRITE, d, data, EventEnableOps(data[0]))
    tree.create_file("filter", TRACE_MODE_WRITE, d, data, EventFilterOps())
    tree.create_file("format", TRACE_MODE_READ, d, data, EventFormatOps())
    tree.create_file("id", TRACE_MODE_READ, d, data, EventIdOps())
    tree.create_file("trigger", TRACE_MODE_WRITE, d, data, EventTriggerOps(*data))
    _hist_file(d, *data)


def _hist_file(d, tr, ev) -> None:
    """``hist`` (CONFIG_HIST_TRIGGERS): in every event's directory, the
    ftrace ones included (only ``print`` takes triggers among those)."""
    if tr.kernel.config.enabled("HIST_TRIGGERS"):
        d.tree.create_file("hist", TRACE_MODE_READ, d, (tr, ev), EventHistOps())


# --- dynamic events (trace_add_event_call / trace_remove_event_call) ----------------

def _event_dirs(tr):
    """(the array's events/ directory, its system directories); None
    while ``events/`` is not filled in (it will be from the events then:
    only its count of directories follows them)."""
    evdir = tr.dir.children["events"]
    if evdir.populate is not None:
        evdir.subdirs = _nr_subdirs(tr.tracing)
        return None
    return evdir, evdir.children


def _events_changed(tracing) -> None:
    """The activity looks a hit's event up by name again (a module's came
    or went: its cache would miss them)."""
    hits = tracing.kernel.trace_hits
    if hits is not None:
        hits.events_changed()


def add_event_call(tracing, ev) -> None:
    """``trace_add_event_call()``: register ``ev`` and give it a directory
    in every array's ``events/<system>/`` (made for the first event of a
    system).  ``ev.id`` must be set."""
    tracing.events.append(ev)
    _events_changed(tracing)
    tracing.event_systems[ev.system] = tracing.event_systems.get(ev.system, 0) + 1
    tracing.events_by_key[(ev.system, ev.name)] = ev
    tracing.events_by_id[ev.id] = ev
    tracing.events_listing.append(ev)
    if tracing.instance_listing is not tracing.events_listing:
        tracing.instance_listing.append(ev)
    tree = tracing.kernel.tree
    for tr in tracing.arrays():
        dirs = _event_dirs(tr)
        if dirs is None:
            continue
        evdir, systems = dirs
        sd = systems.get(ev.system)
        if sd is None:
            tree.create_dir(ev.system, evdir, 0o755, data=(tr, ev.system, [ev]),
                            populate=_populate_system, subdirs=1)
        elif sd.populate is not None:
            sd.data[2].append(ev)
            sd.subdirs += 1
        else:
            tree.create_dir(ev.name, sd, 0o755, data=(tr, ev), populate=_populate_event)


def remove_event_call(tracing, ev) -> None:
    """``trace_remove_event_call()`` (the caller checked it is not busy):
    its directories go, and a system's once its last event is gone."""
    tracing.events.remove(ev)
    _events_changed(tracing)
    left = tracing.event_systems.pop(ev.system) - 1
    if left:
        tracing.event_systems[ev.system] = left
    tracing.events_by_key.pop((ev.system, ev.name), None)
    tracing.events_by_id.pop(ev.id, None)
    tracing.events_listing.remove(ev)
    if tracing.instance_listing is not tracing.events_listing:
        tracing.instance_listing.remove(ev)
    tree = tracing.kernel.tree
    for tr in tracing.arrays():
        tr.event_filters.pop(ev, None)
        dirs = _event_dirs(tr)
        if dirs is None:
            continue
        sd = dirs[1].get(ev.system)
        if sd is None:
            continue
        if sd.populate is not None:
            sd.data[2].remove(ev)
            sd.subdirs -= 1
            if not sd.data[2]:
                tree.remove(sd)
            continue
        d = sd.children.get(ev.name)
        if d is not None:
            tree.remove(d)
        if not any(c.is_dir for c in sd.created_children()):
            tree.remove(sd)
