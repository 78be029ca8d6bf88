"""``printk_formats`` (kernel/trace/trace_printk.c): the strings a trace
entry may point to instead of carrying them, with their addresses, so
that a reader of the binary buffer (trace-cmd, perf) can print them.

A 6.12 kernel lists the ``trace_printk()`` formats of vmlinux (none in a
distribution build), then its ``tracepoint_string()`` strings, then the
``trace_printk()`` formats of loaded modules.  The simulated kernel is
Debian's 6.12 amd64 build: ``data/printk_formats-6.12.tsv`` holds its
strings in section order, as offsets from ``_text``
(tools/mkprintkfmt.py reads them from the dbg vmlinux).  A module's
constant ``trace_printk()`` formats are copied into kmalloc'ed memory
when it is loaded (``hold_module_trace_bprintk_format()``, once per
string) and stay listed after it is unloaded: entries in the buffer may
still point to them.  An entry the section holds twice is listed twice,
as ``t_show()`` walks pointers, not strings.

:func:`trace_printk` writes what a ``trace_printk()``/``trace_puts()``
call of a module's code puts in the top-level buffer (the first use
allocates the per-CPU buffers and says so in the kernel log, as
``trace_printk_init_buffers()`` does).  The simulated kernel writes
every such message as a ``print`` entry, the text already formatted:
the kernel uses ``bputs``/``bprint`` entries for a constant format (a
pointer into printk_formats and the arguments); what ``trace`` shows is
the same.

Each line is ``0x<address> : "<string>"``, newlines and tabs written as
``\\n`` and ``\\t``, double quotes escaped (a backslash stays a single
one, as ``t_show()`` has it).
"""

from __future__ import annotations

import functools
import json
import os

from ..fs.pseudo import FileOperations
from ..module import STATE_COMING
from ..printk import KERN_WARNING
from . import trace_entries as te
from .trace_probe_tmpl import DIRECT_MAP

DATA_PATH = os.path.join(os.path.dirname(__file__), "data", "printk_formats-6.12.tsv")
_ESCAPES = {"\n": "\\n", "\t": "\\t", '"': '\\"'}
KMALLOC_STEP = 64                 # the copies come from kmalloc-64 (or larger) objects
_BAR = "*" * 58
_N = "**   NOTICE NOTICE NOTICE NOTICE NOTICE NOTICE NOTICE   **"
_E = "**" + " " * 54 + "**"
NOTICE = ("", _BAR, _N, _E,
          "** trace_printk() being used. Allocating extra memory.  **", _E,
          "** This means that this is a DEBUG kernel and it is     **",
          "** unsafe for production use.                           **", _E,
          "** If you see this message and you are not debugging    **",
          "** the kernel, report this immediately to your vendor!  **", _E, _N, _BAR)


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


class ModuleFormats:
    """``trace_bprintk_fmt_list``: the modules' formats, each string once,
    in the order they came, with the address of its copy."""

    __slots__ = ("kernel", "formats", "buffers_allocated", "_next")

    def __init__(self, kernel):
        self.kernel = kernel
        self.formats: dict[str, int] = {}
        self.buffers_allocated = False
        self._next = 0

    def hold(self, formats) -> None:
        """``hold_module_trace_bprintk_format()`` at MODULE_STATE_COMING."""
        if formats:
            self.init_buffers()
        for fmt in formats:
            if fmt in self.formats:
                continue
            if self._next == 0:
                rng = self.kernel.subsystem_rng("trace_bprintk_fmt")
                self._next = DIRECT_MAP + (rng.randrange(0x100000, 0x200000) << 12)
            size = -(-(len(fmt) + 1) // KMALLOC_STEP) * KMALLOC_STEP
            self.formats[fmt] = self._next
            self._next += size

    def init_buffers(self) -> None:
        """``trace_printk_init_buffers()``: once, with its notice."""
        if self.buffers_allocated:
            return
        self.buffers_allocated = True
        for line in NOTICE:
            self.kernel.printk(line, KERN_WARNING)
        tracing = self.kernel.tracing
        if tracing is not None:
            tracing.global_trace.ensure_expanded()

    def text(self) -> str:
        return "".join(format_line(a, s) for s, a in self.formats.items())


def module_formats(kernel) -> ModuleFormats:
    mods = kernel.modules
    if mods.printk_formats is None:
        mods.printk_formats = ModuleFormats(kernel)
    return mods.printk_formats


def module_notify(kernel):
    """``module_trace_bprintk_format_notify()``: a coming module's formats
    are kept."""
    def notify(mod, state):
        if state == STATE_COMING and mod.image.formats:
            module_formats(kernel).hold(mod.image.formats)
    return notify


def trace_printk(kernel, ctx, ip: int, text: str, flags: int = 0, pc: int = 0) -> bool:
    """A module's ``trace_printk()`` at ``ip``, run by ``ctx`` ((pid, cpu,
    ns) of the task): a print entry in the top-level buffer, unless the
    ``trace_printk`` option is off or recording is."""
    tracing = kernel.tracing
    if tracing is None:
        return False
    tr = tracing.global_trace
    if not tr.flag("trace_printk"):
        return False
    pid, cpu, ts = ctx
    entry = (ts, te.TRACE_PRINT, pid, flags, pc, ip, text)
    return tr.write_entry(cpu, entry, te.TRACE_ENTRY_HDR + 8 + len(text.encode("latin-1", "replace")) + 1)


class PrintkFormatsOps(FileOperations):
    """printk_formats (``ftrace_formats_fops``), top level only."""

    observes = False

    def __init__(self, kallsyms):
        self.kallsyms = kallsyms

    def show(self, f):
        base = self.kallsyms.addr_of("_text") or 0
        text = "".join(format_line(base + off, s) for off, s in tracepoint_strings())
        k = f.data.kernel
        if k.modules is not None and k.modules.printk_formats is not None:
            text += k.modules.printk_formats.text()
        return text
