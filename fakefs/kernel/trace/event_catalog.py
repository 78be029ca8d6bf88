"""The catalogue of trace events of Debian's Linux 6.12 amd64 kernel (data/events-6.12.gz).

Every event the kernel registers — the tracepoints of vmlinux, the syscall events, the
ftrace-internal events of ``trace_entries.h`` and the events of a set of modules — with
what ``events/<system>/<name>/format`` shows: :meth:`EventDesc.format_text` gives the file
byte for byte (``f_show()``) once given an id.  ``tools/mkevents.py`` generates the data
from the kernel Debian built; see tools/README.md.

Ids and order (kernel/trace/trace_events.c, trace_output.c):

* ftrace-internal events have fixed ids (``enum trace_type``); every other event gets, when
  it is registered, the lowest free id from ``__TRACE_LAST_TYPE`` up (an IDA): vmlinux
  events at boot in ``_ftrace_events`` link order (``Catalog.events`` order), then each
  module's events when it loads, in its own section order.  :meth:`Catalog.assign_ids`.
  (Unloading a module frees its ids, and the next registration takes the lowest free one;
  that is left to the caller.)
* ``available_events`` (and ``set_event``) walk ``tr->events``, which ``list_add()`` fills
  at the head: for the top-level instance, created at boot after the vmlinux events, that
  is the events of modules loaded since boot newest first, then the vmlinux events in
  registration order; an instance made later lists the events registered before it in
  registration order, after those registered since, newest first.  Events that cannot be
  enabled (``ftrace/*``) are not listed.  :meth:`Catalog.listing_order`.

Pure Python, stdlib only.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from dataclasses import dataclass

__all__ = ["Field", "EventDesc", "Catalog", "load_catalog"]

_DATA = os.path.join(os.path.dirname(__file__), "data")


@dataclass(frozen=True, slots=True)
class Field:
    """One field as ``struct ftrace_event_field`` holds it.  ``type`` is the C type string
    (``char[16]``, ``__data_loc char[]``, ``__rel_loc char[]``...), ``len`` the element
    count of a fixed array (0 otherwise)."""

    type: str
    name: str
    offset: int
    size: int
    signed: int
    len: int = 0

    @property
    def is_array(self) -> bool:
        return "[" in self.type and not self.type.startswith("__data_loc")

    @property
    def is_dynamic(self) -> bool:
        """A ``__data_loc`` or ``__rel_loc`` field (a u32 giving offset and length)."""
        return self.type.startswith(("__data_loc", "__rel_loc"))

    def format_line(self) -> str:
        """The line ``f_show()`` prints for this field."""
        tail = "\toffset:%d;\tsize:%d;\tsigned:%d;\n" % (self.offset, self.size,
                                                          1 if self.signed else 0)
        if not self.is_array:
            return "\tfield:%s %s;%s" % (self.type, self.name, tail)
        base = self.type[:self.type.index("[")]
        if self.len:
            return "\tfield:%s %s[%d];%s" % (base, self.name, self.len, tail)
        return "\tfield:%s %s[];%s" % (base, self.name, tail)


@dataclass(slots=True)
class EventDesc:
    system: str
    name: str
    module: str                 # "" for vmlinux
    fields: tuple               # of Field: the event's own fields, after the common ones
    print_fmt: str              # the text after "print fmt: "
    fixed_id: int | None        # enum trace_type for ftrace-internal events, else None
    size: int                   # sizeof() the record's C struct (common header included)
    listed: bool                # in available_events (can be enabled)
    common: tuple = ()

    @property
    def key(self) -> tuple:
        return (self.system, self.name)

    def format_text(self, id: int) -> str:
        """The whole ``format`` file with this ID."""
        return "name: %s\nID: %d\nformat:\n%s\n%s\nprint fmt: %s\n" % (
            self.name, id, "".join(f.format_line() for f in self.common),
            "".join(f.format_line() for f in self.fields), self.print_fmt)


class Catalog:
    __slots__ = ("version", "kernel", "trace_last_type", "common_fields", "events",
                 "modules", "default_modules", "_by_key", "_by_module")

    def __init__(self, data: dict):
        self.version = data["version"]
        self.kernel = data["kernel"]
        self.trace_last_type = data["trace_last_type"]
        self.common_fields = tuple(Field(*f) for f in data["common_fields"])
        cols = data["event_columns"]
        assert cols == ["module", "system", "name", "fields", "print_fmt", "size",
                        "fixed_id", "listed"], cols
        # one string object for each value: the parser makes a new one at every
        # occurrence (716 syscall events share a print format, 1,244 say "xfs",
        # field types and names repeat): ~1.3 MB of duplicates kept otherwise
        one = {}.setdefault
        fieldcache: dict = {}
        self.events = []
        for mod, system, name, fields, fmt, size, fixed, listed in data["events"]:
            fl = tuple(fieldcache.get(tuple(f)) or fieldcache.setdefault(
                tuple(f), Field(one(f[0], f[0]), one(f[1], f[1]), *f[2:])) for f in fields)
            self.events.append(EventDesc(one(system, system), name, one(mod, mod), fl,
                                         one(fmt, fmt), fixed, size, bool(listed),
                                         self.common_fields))
        self.modules = [m for m, _default, _n in data["modules"]]
        self.default_modules = [m for m, default, _n in data["modules"] if default]
        self._by_key = {}
        self._by_module: dict = {}
        for ev in self.events:
            self._by_module.setdefault(ev.module, []).append(ev)
            self._by_key.setdefault(ev.key, ev)

    def event(self, system: str, name: str) -> EventDesc:
        return self._by_key[(system, name)]

    def module_events(self, module: str) -> list:
        """The events of a module ("" for vmlinux) in registration order; [] for a module
        the catalogue does not know (a module without events)."""
        return list(self._by_module.get(module, ()))

    def loaded(self, modules_loaded) -> list:
        """The catalogued modules of ``modules_loaded`` in load order, each once (names as
        the kernel spells them: ``xhci_hcd``; a '-' is taken as '_')."""
        seen, out = set(), []
        for m in modules_loaded:
            m = m.replace("-", "_")
            if m in self._by_module and m and m not in seen:
                seen.add(m)
                out.append(m)
        return out

    def registration_order(self, modules_loaded=None) -> list:
        """Events in the order the kernel registers them: vmlinux, then each module."""
        mods = self.default_modules if modules_loaded is None else modules_loaded
        out = list(self._by_module.get("", ()))
        for m in self.loaded(mods):
            out += self._by_module[m]
        return out

    def assign_ids(self, modules_loaded=None, trace_last_type: int | None = None) -> dict:
        """{(system, name): id} after boot and loading ``modules_loaded`` in that order
        (default: ``default_modules``).  ``trace_last_type`` overrides ``__TRACE_LAST_TYPE``
        for a persona that adds entry types (the first dynamic id)."""
        nxt = self.trace_last_type if trace_last_type is None else trace_last_type
        ids = {}
        for ev in self.registration_order(modules_loaded):
            if ev.fixed_id is not None:
                ids[ev.key] = ev.fixed_id
            else:
                ids[ev.key] = nxt
                nxt += 1
        return ids

    def listing_order(self, modules_loaded=None, created_after: int = 0) -> list:
        """``available_events`` order as [(system, name)] for a trace array created after
        boot and after the first ``created_after`` modules of ``modules_loaded`` were
        loaded (0: the top-level instance; ``len(modules_loaded)``: an instance made
        after all of them)."""
        mods = self.loaded(self.default_modules if modules_loaded is None
                           else modules_loaded)
        mods_all = list(self.default_modules if modules_loaded is None else modules_loaded)
        before_set = set(self.loaded(mods_all[:created_after]))
        before = list(self._by_module.get("", ()))
        after = []
        for m in mods:
            if m in before_set:
                before += self._by_module[m]
            else:
                after += self._by_module[m]
        order = list(reversed(after)) + before
        return [ev.key for ev in order if ev.listed]

    def systems(self, modules_loaded=None) -> list:
        """Event systems in first-registration order."""
        return list(dict.fromkeys(ev.system for ev in self.registration_order(modules_loaded)))


def load_catalog(version: str = "6.12") -> Catalog:
    """The catalogue of a kernel version (data/events-<version>.gz), read once a process."""
    return _load(version)


@functools.lru_cache(maxsize=None)
def _load(version: str) -> Catalog:
    path = os.path.join(_DATA, "events-%s.gz" % version)
    with gzip.open(path, "rt", encoding="ascii") as fh:
        return Catalog(json.load(fh))
