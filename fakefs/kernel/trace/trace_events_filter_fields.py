"""The fields an event filter can name (``struct ftrace_event_field``).

What kernel/trace/trace_events.c keeps per event for the filter: the event's
own fields read from its ``format`` (``trace_define_field()``, typed by
``filter_assign_type()``), the generic fields without storage
(``trace_define_generic_fields()``: ``CPU``/``cpu``/``common_cpu``,
``COMM``/``comm``, ``stacktrace``) and the common ones of every entry
(``common_pid`` ...), looked up in ``trace_find_event_field()`` order.

A :class:`Field` also says where a compiled filter finds its value in the
ring-buffer entry tuple ``(ts, type, pid, flags, preempt_count, args, _)``.
"""

from __future__ import annotations

import re

# --- field kinds (enum filter_type) -----------------------------------------
(FILTER_OTHER, FILTER_STATIC_STRING, FILTER_DYN_STRING, FILTER_RDYN_STRING,
 FILTER_PTR_STRING, FILTER_TRACE_FN, FILTER_CPUMASK, FILTER_COMM, FILTER_CPU,
 FILTER_STACKTRACE) = range(10)
_STRING_TYPES = frozenset({FILTER_STATIC_STRING, FILTER_DYN_STRING, FILTER_RDYN_STRING,
                           FILTER_PTR_STRING, FILTER_COMM})

TASK_COMM_LEN = 16


class Field:
    """One field a predicate can name (``struct ftrace_event_field``).

    ``expr`` is the Python expression giving its value inside a compiled
    filter, where ``e`` is the entry, ``a`` its field tuple, ``cpu`` the CPU
    and ``comm(pid)`` the comm of a task.
    """

    __slots__ = ("name", "type", "size", "signed", "filter_type", "expr", "conv")

    def __init__(self, name, type_, size, signed, filter_type, expr, conv=None):
        self.name = name
        self.type = type_
        self.size = size
        self.signed = signed
        self.filter_type = filter_type
        self.expr = expr
        self.conv = conv

    @property
    def is_string(self) -> bool:
        return self.filter_type in _STRING_TYPES


def filter_assign_type(type_: str) -> int:
    """``filter_assign_type()`` of a tracepoint field's type."""
    if "__data_loc" in type_:
        if "char" in type_:
            return FILTER_DYN_STRING
        if "cpumask_t" in type_:
            return FILTER_CPUMASK
    if "__rel_loc" in type_:
        if "char" in type_:
            return FILTER_RDYN_STRING
        if "cpumask_t" in type_:
            return FILTER_CPUMASK
    if "[" in type_ and "char" in type_:
        return FILTER_STATIC_STRING
    if type_ in ("char *", "const char *"):
        return FILTER_PTR_STRING
    return FILTER_OTHER


_FIELD_RE = re.compile(r"\tfield:(.*);\toffset:(\d+);\tsize:(\d+);\tsigned:(\d+);")

# the common fields of every entry, and where the entry tuple keeps them
COMMON = [Field("common_type", "unsigned short", 2, 0, FILTER_OTHER, "e[1]"),
          Field("common_flags", "unsigned char", 1, 0, FILTER_OTHER, "e[3]"),
          Field("common_preempt_count", "unsigned char", 1, 0, FILTER_OTHER, "e[4]"),
          Field("common_pid", "int", 4, 1, FILTER_OTHER, "e[2]")]
# generic fields: no storage in the entry (trace_define_generic_fields())
HEADER64 = "(e[1] | e[3] << 16 | e[4] << 24 | (e[2] & 0xffffffff) << 32)"
GENERIC = [Field("CPU", "int", 4, 1, FILTER_CPU, "cpu"),
           Field("cpu", "int", 4, 1, FILTER_CPU, "cpu"),
           Field("common_cpu", "int", 4, 1, FILTER_CPU, "cpu"),
           Field("COMM", "char *", 8, 0, FILTER_COMM, "comm(e[2])"),
           Field("comm", "char *", 8, 0, FILTER_COMM, "comm(e[2])"),
           # a stacktrace field sits at offset 0: a number compares the header
           Field("stacktrace", "char *", 8, 0, FILTER_STACKTRACE, HEADER64),
           Field("STACKTRACE", "char *", 8, 0, FILTER_STACKTRACE, HEADER64)]


def parse_field_decl(line: str):
    """(type, name, size, signed) of one ``format`` field line."""
    m = _FIELD_RE.match(line)
    if m is None:
        raise ValueError("bad field line %r" % line)
    decl, size, signed = m.group(1), int(m.group(3)), int(m.group(4))
    type_, _, name = decl.rpartition(" ")
    if "[" in name:
        name, _, dim = name.partition("[")
        type_ = type_ + "[" + dim
    return type_.strip(), name, size, signed


def event_fields(ev) -> dict:
    """name -> Field for a tracepoint, in ``trace_find_event_field()`` order:
    the event's own fields, then the generic, then the common ones."""
    cached = ev.filter_fields
    if cached is not None:
        return cached
    convs = ev.filter_values
    out: dict[str, Field] = {}
    for idx, line in enumerate(ev.fields):
        type_, name, size, signed = parse_field_decl(line)
        conv = convs.get(name)
        expr = "a[%d]" % idx if conv is None else "cv_%s(a[%d])" % (name, idx)
        out.setdefault(name, Field(name, type_, size, signed, filter_assign_type(type_),
                                   expr, conv))
    for f in GENERIC + COMMON:
        out.setdefault(f.name, f)
    ev.filter_fields = out
    return out
