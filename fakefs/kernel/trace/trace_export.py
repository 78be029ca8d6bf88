"""The ftrace-internal entry types as events (kernel/trace/trace_export.c):
the ``format`` of the ones the catalogue does not describe, and the
common fields every event's format starts with."""

from __future__ import annotations

from . import trace_entries as te

COMMON_FIELDS = (
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
)


def _field(decl: str, offset: int, size: int, signed: int) -> str:
    return "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n" % (decl, offset, size, signed)


_STACK_FMT = ('"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n" "\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n" '
              '"\\t=> %ps\\n\\t=> %ps\\n", '
              + ", ".join("(void *)REC->caller[%d]" % i for i in range(8)))

# name, id, fields, print fmt, files
FTRACE_EVENTS = [
    ("function", te.TRACE_FN,
     [_field("unsigned long ip", 8, 8, 0), _field("unsigned long parent_ip", 16, 8, 0)],
     '" %ps <-- %ps", (void *)REC->ip, (void *)REC->parent_ip', ("format", "id")),
    ("kernel_stack", te.TRACE_STACK,
     [_field("int size", 8, 4, 1), _field("unsigned long caller[8]", 16, 64, 0)],
     _STACK_FMT, ("format",)),
    ("print", te.TRACE_PRINT,
     [_field("unsigned long ip", 8, 8, 0), _field("char buf[]", 16, 0, 0)],
     '"%ps: %s", (void *)REC->ip, REC->buf', ("format", "id", "trigger")),
    ("stack_id", te.TRACE_STACK_ID,
     [_field("int stack_id", 8, 4, 1)],
     '"<stack_id %d>", REC->stack_id', ("format",)),
]
