"""System call entry and exit (kernel/entry/common.c, arch/x86/entry/syscall_64.c).

A task running in user space enters the kernel with a system call number
and six argument registers and leaves it with a return value.  With
syscall tracing on, ``syscall_trace_enter()`` fires the ``sys_enter``
tracepoint and ``syscall_exit_work()`` fires ``sys_exit`` — both in plain
task context with interrupts on (``.....``), as a stock kernel records
them.  The per-syscall events (``syscalls/sys_enter_<name>``) are probes
on these two tracepoints (``kernel/trace/trace_syscalls.py``).

The numbers are the x86-64 ABI's (``data/syscall_64.txt``).
"""

from __future__ import annotations

import functools
import os

_TABLE = os.path.join(os.path.dirname(__file__), "data", "syscall_64.txt")


@functools.lru_cache(maxsize=1)
def syscall_table() -> tuple[dict, dict]:
    """({entry name: nr}, {nr: entry name}) with entry names as
    ``sys_read``, ``sys_newfstatat``."""
    by_name, by_nr = {}, {}
    with open(_TABLE) as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            nr, entry = line.split()
            by_name[entry] = int(nr)
            by_nr[int(nr)] = entry
    return by_name, by_nr


def syscall_nr(name: str) -> int:
    """The number of the system call ``name`` (``read``, ``wait4``...)."""
    return syscall_table()[0]["sys_" + name]


class SyscallEntry:
    """The two ends of a system call, on the CPU the task runs on."""

    __slots__ = ("tp_enter", "tp_exit")

    def __init__(self, tracepoints):
        self.tp_enter = tracepoints.get("sys_enter")
        self.tp_exit = tracepoints.get("sys_exit")

    def traced(self) -> bool:
        """Somebody records system calls (a probe is on a tracepoint)."""
        return bool(self.tp_enter.probes or self.tp_exit.probes)

    def enter(self, cpu: int, t: int, pid: int, nr: int, args: tuple) -> None:
        if self.tp_enter.probes:
            self.tp_enter.fire(cpu, t, pid, 0, 0, (nr, args))

    def exit(self, cpu: int, t: int, pid: int, nr: int, ret: int) -> None:
        if self.tp_exit.probes:
            self.tp_exit.fire(cpu, t, pid, 0, 0, (nr, ret))
