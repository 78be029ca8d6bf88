"""System call events (kernel/trace/trace_syscalls.c, include/trace/events/syscalls.h).

Two kinds record the ``sys_enter`` / ``sys_exit`` tracepoints of the entry
code (``kernel/entry_common.py``):

* ``raw_syscalls:sys_enter`` / ``sys_exit``: every call, its number and the
  six argument registers (or the return value);
* ``syscalls:sys_enter_<name>`` / ``sys_exit_<name>``: one system call
  each, with its own arguments as fields.  Their lines are printed by the
  syscall output functions, not by a print fmt: ``sys_read(fd: 3, buf:
  7ffd…, count: 340)`` (each value ``%lx``; with the ``verbose`` option the
  argument's type before its name) and ``sys_read -> 0x340``.

Formats, ids and sizes are the catalogue's.
"""

from __future__ import annotations

from ..entry_common import syscall_table
from .events_defs import EventDef

MASK64 = (1 << 64) - 1
ENTER_PREFIX = "sys_enter_"
EXIT_PREFIX = "sys_exit_"


class RawSysEnter(EventDef):
    """Args: (id, (six registers))."""

    def render(self, a, fmt):
        nr, regs = a
        return "NR %d (%s)" % (nr, ", ".join("%x" % (r & MASK64) for r in regs))


class RawSysExit(EventDef):
    def render(self, a, fmt):
        return "NR %d = %d" % a


class SyscallEvent(EventDef):
    """One system call's enter or exit event (``nr`` is its number)."""

    def __init__(self, system: str, name: str, nr: int, tracepoint: str):
        super().__init__(system, name, [], "", 0, tracepoint)
        self.nr = nr
        self.tracepoint = tracepoint

    @property
    def syscall_name(self) -> str:
        """``sys_read``: the metadata's name, which the lines print."""
        return "sys_" + self.name.split("_", 2)[2]


class SyscallEnter(SyscallEvent):
    """Args: (__syscall_nr, arg0, ...) as the fields hold them."""

    def from_raw(self, raw: tuple) -> tuple:
        nr, regs = raw
        return (nr,) + tuple(regs[: len(self.fields) - 1])

    def text(self, a, fmt):
        names = self.desc.fields[1:] if self.desc is not None else ()
        verbose = fmt.tr.flag("verbose")
        parts = []
        for f, v in zip(names, a[1:]):
            parts.append("%s%s: %x" % (f.type + " " if verbose else "", f.name, v & MASK64))
        return "%s(%s)\n" % (self.syscall_name, ", ".join(parts))


class SyscallExit(SyscallEvent):
    """Args: (__syscall_nr, ret)."""

    def from_raw(self, raw: tuple) -> tuple:
        return raw

    def text(self, a, fmt):
        return "%s -> 0x%x\n" % (self.syscall_name, a[1] & MASK64)


def syscall_event(desc) -> SyscallEvent | None:
    """The event of a ``syscalls`` catalogue entry, bound to its number
    (None for a name the x86-64 table does not have)."""
    by_name = syscall_table()[0]
    if desc.name.startswith(ENTER_PREFIX):
        cls, tp, entry = SyscallEnter, "sys_enter", "sys_" + desc.name[len(ENTER_PREFIX):]
    elif desc.name.startswith(EXIT_PREFIX):
        cls, tp, entry = SyscallExit, "sys_exit", "sys_" + desc.name[len(EXIT_PREFIX):]
    else:
        return None
    nr = by_name.get(entry)
    if nr is None:
        return None
    return cls(desc.system, desc.name, nr, tp)


def raw_syscall_events() -> list[EventDef]:
    return [RawSysEnter("raw_syscalls", "sys_enter", [], "", 0, "sys_enter"),
            RawSysExit("raw_syscalls", "sys_exit", [], "", 0, "sys_exit")]
