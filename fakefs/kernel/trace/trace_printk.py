"""``printk_formats`` (kernel/trace/trace_printk.c): the strings a trace
entry may point to instead of carrying them, with their addresses, so
that a reader of the binary buffer (trace-cmd, perf) can print them.

A 6.12 kernel lists the ``trace_printk()`` formats of vmlinux (none in a
distribution build), then its ``tracepoint_string()`` strings, then the
``trace_printk()`` formats of loaded modules.  The simulated kernel is
Debian's 6.12 amd64 build: ``data/printk_formats-6.12.tsv`` holds its
strings in section order, as offsets from ``_text``
(tools/mkprintkfmt.py reads them from the dbg vmlinux); the simulated
modules have no ``trace_printk()`` formats.  An entry the section holds
twice is listed twice, as ``t_show()`` walks pointers, not strings.

Each line is ``0x<address> : "<string>"``, newlines and tabs written as
``\\n`` and ``\\t``, double quotes escaped (a backslash stays a single
one, as ``t_show()`` has it).
"""

from __future__ import annotations

import functools
import json
import os

from ..fs.pseudo import FileOperations

DATA_PATH = os.path.join(os.path.dirname(__file__), "data", "printk_formats-6.12.tsv")
_ESCAPES = {"\n": "\\n", "\t": "\\t", '"': '\\"'}


@functools.cache
def tracepoint_strings() -> tuple[tuple[int, str], ...]:
    """(offset from ``_text``, string) in the order the kernel lists them."""
    out = []
    with open(DATA_PATH) as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            off, _, text = line.rstrip("\n").partition("\t")
            out.append((int(off, 16), json.loads(text)))
    return tuple(out)


def format_line(addr: int, text: str) -> str:
    return '0x%x : "%s"\n' % (addr, "".join(_ESCAPES.get(c, c) for c in text))


class PrintkFormatsOps(FileOperations):
    """printk_formats (``ftrace_formats_fops``), top level only."""

    observes = False

    def __init__(self, kallsyms):
        self.kallsyms = kallsyms

    def show(self, f):
        base = self.kallsyms.addr_of("_text") or 0
        return "".join(format_line(base + off, s) for off, s in tracepoint_strings())
