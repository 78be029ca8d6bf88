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


# what a system call's handler (``__x64_sys_<name>``, called by
# x64_sys_call()) calls on the way to its work, each function called by the
# one before: a filter or a probe on one of them sees the call (a read()'s
# vfs_read(), a pread64()'s too, from ksys_pread64()); not named: the
# handler only
SYSCALL_WORK = {
    "read": "ksys_read vfs_read", "pread64": "ksys_pread64 vfs_read",
    "write": "ksys_write vfs_write", "writev": "do_writev vfs_writev",
    "openat": "do_sys_open do_sys_openat2 do_filp_open path_openat vfs_open",
    "close": "filp_flush", "newfstatat": "vfs_fstatat",
    "mmap": "ksys_mmap_pgoff vm_mmap_pgoff do_mmap", "munmap": "__vm_munmap",
    "brk": "do_brk_flags", "mprotect": "do_mprotect_pkey", "futex": "do_futex",
    "clock_nanosleep": "common_nsleep hrtimer_nanosleep", "getdents64": "iterate_dir",
    "epoll_wait": "do_epoll_wait", "ppoll": "do_sys_poll", "recvfrom": "__sys_recvfrom",
    "sendto": "__sys_sendto", "recvmsg": "__sys_recvmsg", "sendmsg": "__sys_sendmsg",
    "accept4": "__sys_accept4", "lseek": "ksys_lseek", "rt_sigaction": "do_sigaction",
    "rt_sigprocmask": "sigprocmask", "timerfd_settime": "do_timerfd_settime",
}


def syscall_work(nr: int) -> tuple:
    """The functions system call ``nr`` goes through below x64_sys_call(),
    outermost first: its handler, then SYSCALL_WORK's (() for no such call)."""
    entry = syscall_table()[1].get(nr)
    if entry is None:
        return ()
    name = entry[len("sys_"):]
    return ("__x64_sys_" + name,) + tuple(SYSCALL_WORK.get(name, "").split())


def syscall_nr(name: str) -> int:
    """The number of the system call ``name`` (``read``, ``wait4``...)."""
    return syscall_table()[0]["sys_" + name]


class SyscallEntry:
    """The two ends of a system call, on the CPU the task runs on.  The
    work of a real process's call matters too while ``work()`` says so (a
    filtered function tracer or a probe waits for the functions it goes
    through; a simulated task's calls are in the walk's calls already):
    its entry is then given to ``work_hit`` (the tracing code's probe of
    a ``sys_work`` hit), whether an event records it or not."""

    __slots__ = ("tp_enter", "tp_exit", "work", "work_hit")

    def __init__(self, tracepoints):
        self.tp_enter = tracepoints.get("sys_enter")
        self.tp_exit = tracepoints.get("sys_exit")
        self.work = None            # fn() -> bool
        self.work_hit = None        # the probe taking a call for its work

    def wants_work(self, work, work_hit) -> None:
        self.work, self.work_hit = work, work_hit

    def traced(self) -> bool:
        """Somebody records system calls (a probe is on a tracepoint)."""
        return bool(self.tp_enter.probes or self.tp_exit.probes)

    def work_wanted(self) -> bool:
        """Somebody waits for the functions calls go through."""
        return self.work is not None and self.work()

    def enter(self, cpu: int, t: int, pid: int, nr: int, args: tuple,
              work: bool = False) -> None:
        """``work``: the call's work is traced where wanted (a real
        process's call the model makes, see the class's doc)."""
        if self.tp_enter.probes:
            self.tp_enter.fire(cpu, t, pid, 0, 0, (nr, args))
        if work and self.work_wanted():
            self.work_hit(cpu, t, pid, 0, 0, (nr,))

    def exit(self, cpu: int, t: int, pid: int, nr: int, ret: int) -> None:
        if self.tp_exit.probes:
            self.tp_exit.fire(cpu, t, pid, 0, 0, (nr, ret))
