"""The ``fields`` trace option: ``print_event_fields()`` of
kernel/trace/trace_output.c.

An entry is shown as ``<event>:`` and then ` name=value` for each field of
its event in the order of its ``format`` (without the common ones), read
from the entry's binary record (trace_events_raw.py) by the field's filter
type and size:

* ``char x[N]`` (a static string) and ``__data_loc``/``__rel_loc char[]``:
  the text up to its NUL;
* ``const char *``: ``(0x<address>)`` (there is no kernel memory to read
  the string from);
* the function event's ``ip``/``parent_ip`` (``__field_fn``): ``%pS``;
* other fields by size: 1 byte ``'c'(n)`` (the quoted character only when
  printable), 2 ``0x%x (%d)``, 4 ``0x%x (%d)`` with the decimal read
  signed (a ``__data_loc`` array: its bytes ``xx,xx,...``), 8
  ``0x%llx (%lld)``; another size is ``<INVALID-SIZE>``;
* a field past the end of the record is ``<OVERFLOW>``, a ``__data_loc
  cpumask_t`` ``<INVALID-TYPE>``.

An ftrace entry type without an event is ``UNKNOWN TYPE <n>``; an event
without fields ``No fields found``.
"""

from __future__ import annotations

import re

from ..lib.ctype import isprint
from . import trace_entries as te
from .trace_events_filter_fields import (FILTER_DYN_STRING, FILTER_OTHER,
                                         FILTER_PTR_STRING, FILTER_RDYN_STRING,
                                         FILTER_STATIC_STRING, FILTER_TRACE_FN,
                                         filter_assign_type)

_FIELD_RE = re.compile(r"\tfield:(.*);\toffset:(\d+);\tsize:(\d+);\tsigned:(\d+);")
# the ftrace entry types trace_entries.h declares, by event name
FTRACE_TYPES = {"function": te.TRACE_FN, "kernel_stack": te.TRACE_STACK, "print": te.TRACE_PRINT,
                "raw_data": te.TRACE_RAW_DATA, "func_repeats": te.TRACE_FUNC_REPEATS,
                "stack_id": te.TRACE_STACK_ID, "user_stack": te.TRACE_USER_STACK,
                "context_switch": te.TRACE_CTX, "wakeup": te.TRACE_WAKE}


class Field:
    __slots__ = ("name", "type", "offset", "size", "filter")

    def __init__(self, name, type_, offset, size, filter_):
        self.name = name
        self.type = type_
        self.offset = offset
        self.size = size
        self.filter = filter_


def _parse(lines) -> list[Field]:
    out = []
    for line in lines:
        m = _FIELD_RE.match(line)
        if m is None:
            continue
        type_, _, name = m.group(1).rpartition(" ")
        if "[" in name:
            name, _, dim = name.partition("[")
            type_ = type_ + "[" + dim
        out.append(Field(name, type_.strip(), int(m.group(2)), int(m.group(3)), FILTER_OTHER))
    return out


class EventFields:
    """Each entry type's event name and fields, for one kernel's tracing."""

    def __init__(self, tracing, ftrace_specs):
        self.tracing = tracing
        self._by_type: dict[int, tuple | None] = {}
        self._ftrace = {}
        for desc in tracing.ftrace_events:            # the catalogue's
            t = FTRACE_TYPES.get(desc.name)
            if t is not None:
                self._ftrace[t] = (desc.name, [Field(f.name, f.type, f.offset, f.size, FILTER_OTHER)
                                               for f in desc.fields])
        for name, t, lines, _fmt, _files in ftrace_specs:
            self._ftrace.setdefault(t, (name, _parse(lines)))
        fn = self._ftrace.get(te.TRACE_FN)
        if fn is not None:
            for f in fn[1]:
                f.filter = FILTER_TRACE_FN                  # __field_fn

    def of(self, t: int):
        """(event name, fields) of entry type ``t``, or None."""
        got = self._by_type.get(t, False)
        if got is not False:
            return got
        got = self._ftrace.get(t)
        if got is None:
            ev = self.tracing.events_by_id.get(t)
            if ev is not None:
                if ev.desc is not None:
                    fields = [Field(f.name, f.type, f.offset, f.size, filter_assign_type(f.type))
                              for f in ev.desc.fields]
                else:
                    fields = _parse(ev.fields)
                    for f in fields:
                        f.filter = filter_assign_type(f.type)
                got = (ev.name, fields)
        self._by_type[t] = got
        return got


def _cstr(b: bytes) -> str:
    return b.split(b"\0", 1)[0].decode("latin-1")


def _array(rec: bytes, loc: int, base: int) -> str:
    """``print_array()``"""
    off, n = (loc & 0xFFFF) + base, loc >> 16
    if off + n > len(rec):
        return "<OVERFLOW>"
    return ",".join("%02x" % b for b in rec[off:off + n])


def fields_text(name: str, fields, rec: bytes, sym) -> str:
    """``<event>: a=… b=…\\n`` of one record; ``sym(ip)`` gives ``%pS``."""
    if not fields:
        return name + ":No fields found\n"
    out = [name + ":"]
    size = len(rec)
    for f in fields:
        out.append(" %s=" % f.name)
        if f.offset + f.size > size:
            out.append("<OVERFLOW>")
            continue
        pos = f.offset
        ft = f.filter
        if ft == FILTER_STATIC_STRING:
            out.append(_cstr(rec[pos:pos + f.size]))
        elif ft in (FILTER_DYN_STRING, FILTER_RDYN_STRING):
            loc = int.from_bytes(rec[pos:pos + 4], "little")
            off, n = loc & 0xFFFF, loc >> 16
            if ft == FILTER_RDYN_STRING:
                off += f.offset + 4
            out.append("<OVERFLOW>" if off + n > size else _cstr(rec[off:off + n]))
        elif ft == FILTER_PTR_STRING:
            out.append("(0x%016x)" % int.from_bytes(rec[pos:pos + 8], "little"))
        elif ft == FILTER_TRACE_FN:
            out.append(sym(int.from_bytes(rec[pos:pos + 8], "little")))
        elif ft == FILTER_OTHER:
            out.append(_number(f, rec, pos))
        else:
            out.append("<INVALID-TYPE>")
    out.append("\n")
    return "".join(out)


def _number(f, rec: bytes, pos: int) -> str:
    n = f.size
    if n == 1:
        c = rec[pos]
        return ("'%c'" % chr(c) if isprint(c) else "") + "(%d)" % c
    if n == 2:
        v = int.from_bytes(rec[pos:pos + 2], "little")
        return "0x%x (%d)" % (v, v)
    if n == 4:
        if "__data_loc" in f.type:
            return _array(rec, int.from_bytes(rec[pos:pos + 4], "little"), 0)
        if "__rel_loc" in f.type:
            return _array(rec, int.from_bytes(rec[pos:pos + 4], "little"), f.offset + 4)
        v = int.from_bytes(rec[pos:pos + 4], "little")
        return "0x%x (%d)" % (v, v - (1 << 32) if v >> 31 else v)
    if n == 8:
        v = int.from_bytes(rec[pos:pos + 8], "little")
        return "0x%x (%d)" % (v, v - (1 << 64) if v >> 63 else v)
    return "<INVALID-SIZE>"
