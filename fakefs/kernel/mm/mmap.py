"""A user process's mappings, as far as a user stack trace can see them
(``find_vma()`` of mm/mmap.c, ``stack_trace_save_user()``).

The simulated machine's user processes are Debian 12 programs: a PIE
executable and glibc's ``libc.so.6``, each placed by ASLR (the bases come
from the process's tgid and the boot seed, so they stay put for the life of
a process and differ between processes).  A task enters the kernel from a
system call wrapper in libc's text: that is the user IP a trace sees.
Debian builds user space without frame pointers, so the walk of the frame
chain that follows finds nothing it may follow: a user stack is that one
return address.  Kernel threads (and the idle tasks) have no user stack.
"""

from __future__ import annotations

import zlib

LIBC_PATH = "/usr/lib/x86_64-linux-gnu/libc.so.6"
# libc.so.6's executable segment (Debian 12, glibc 2.36): where it starts
# in the mapping and how long it is
LIBC_TEXT_OFFSET = 0x26000
LIBC_TEXT_SIZE = 0x155000
# where in that segment the system call wrappers return to (the simulated
# libc's read, write, poll, epoll_wait, nanosleep, futex wrappers)
SYSCALL_SITES = (0xca3a1, 0xca441, 0xd2e7f, 0xd5a76, 0xb6d97, 0x66f53)


class Vma:
    __slots__ = ("start", "end", "path")

    def __init__(self, start: int, end: int, path: str):
        self.start = start
        self.end = end
        self.path = path


def _mix(seed, tgid: int, what: str) -> int:
    return zlib.crc32(("%s:%d:%s" % (seed, tgid, what)).encode())


def libc_text(seed, tgid: int) -> Vma:
    """The r-x mapping of libc in process ``tgid``."""
    base = 0x7F0000000000 | (_mix(seed, tgid, "libc") & 0xFFFFFFF) << 12
    start = base + LIBC_TEXT_OFFSET
    return Vma(start, start + LIBC_TEXT_SIZE, LIBC_PATH)


def user_stack(seed, task) -> tuple:
    """``stack_trace_save_user()`` of ``task`` at a kernel entry: the
    return address in its libc (empty for a kernel thread)."""
    if task is None or task.kthread or task.pid == 0:
        return ()
    vma = libc_text(seed, task.tgid)
    site = SYSCALL_SITES[_mix(seed, task.pid, "site") % len(SYSCALL_SITES)]
    return (vma.start + site,)


def find_vma(seed, task, ip: int) -> Vma | None:
    """The mapping of ``task``'s process that holds ``ip``, or None."""
    if task is None or task.kthread or task.pid == 0:
        return None
    vma = libc_text(seed, task.tgid)
    return vma if vma.start <= ip < vma.end else None
