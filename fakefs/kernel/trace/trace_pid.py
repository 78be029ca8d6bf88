"""Pid lists (kernel/trace/pid_list.c, trace_pid_write() in trace.c).

The lists behind ``set_event_pid``/``set_event_notrace_pid`` and
``set_ftrace_pid``/``set_ftrace_notrace_pid``: immutable sets (None: no
list), rebuilt whole by every write and by every fork or exit they follow.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..lib.kstrtox import kstrtoul

PID_BUF_SIZE = 127           # one pid word (trace_pid_write())
MAX_PID = 1 << 30            # pid_list.h: what a list holds (not pid_max, not PID_MAX_LIMIT)


def trace_pid_write(cur: frozenset | None, text: str) -> frozenset | None:
    """``trace_pid_write()``: the pids of ``text`` added to ``cur``, all or
    nothing; a list left empty is no list."""
    new = set(cur or ())
    n = len(new)
    for word in text.split():
        if len(word) > PID_BUF_SIZE:
            raise KernelError(errno.EINVAL)
        try:
            pid = kstrtoul(word, 0)
        except ValueError:
            raise KernelError(errno.EINVAL)
        pid &= 0xffffffff                # (pid_t)val, then unsigned in pid_split()
        if pid >= MAX_PID:               # trace_pid_list_set() fails: the write returns -1
            raise KernelError(errno.EPERM)
        new.add(pid)
        n += 1
    return frozenset(new) if n else None


def pids_text(pids: frozenset | None) -> str:
    """One pid a line, in order (``trace_pid_show()``)."""
    return "".join("%d\n" % p for p in sorted(pids or ()))


def ignore_this_task(pids: frozenset | None, no_pids: frozenset | None, pid: int) -> bool:
    """``trace_ignore_this_task()``: not on the list, or on the no-list."""
    if pids is not None and pid not in pids:
        return True
    return no_pids is not None and pid in no_pids


def add_remove_task(pids: frozenset | None, parent: int | None, pid: int) -> frozenset | None:
    """``trace_filter_add_remove_task()``: a fork by a listed ``parent``
    lists the child; an exit (``parent`` None) unlists ``pid``."""
    if pids is None:
        return None
    if parent is not None:
        return pids | {pid} if parent in pids else pids
    return pids - {pid} if pid in pids else pids
