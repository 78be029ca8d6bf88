"""A real process's system calls that reach the mount, as the simulated kernel's syscall events.

While the daemon serves a FUSE request, the thread that sent it is blocked
in the system call that needed it: ``/proc/<tid>/syscall`` gives the call's
number and its six argument registers (``procfd.caller_syscall``).  With
syscall events on (a probe on the ``sys_enter`` or ``sys_exit``
tracepoint), the request that does a call's work makes the call the
simulated kernel's: ``sys_enter`` fires as the request comes (the process
runs on a CPU of the machine, ``HostProcesses.enter``), ``sys_exit`` with
what the call returns as the request is answered — before the answer, so
that a probe fired at the exit still reads the caller's memory (a
``ustring`` of the name it passed, ``Task.mm``).

Which request does which call's work (``COMPLETES``): OPEN and OPENDIR for
open(), creat(), openat() and openat2(), which return the descriptor
``get_unused_fd_flags()`` reserved before the path walk
(``procfd.lowest_free_fd``); READ for read() and pread64() and WRITE for
write() and pwrite64(), which return the bytes (a call larger than a
request is sent as several: it returns after the last, which is short or
completes its count); MKDIR and RMDIR for theirs (0); GETATTR for the stat
calls (0).  A request answered with an error ends the call it does the work
of with that error; so does a LOOKUP that finds nothing for an open without
O_CREAT or a stat (the walk stops there).

What the mount does not see is not made up: a LOOKUP on the way to a file
belongs to a call whose end may never reach the mount (a stat answered
from the attribute cache), a getdents64() of a directory comes as READDIR
without its caller, and the calls that touch no file of the mount (the
shell's own chdir()) never come here at all.  None of those are events.
"""

from __future__ import annotations

import errno
import os

from .procfd import CallerSyscall, caller_syscall, lowest_free_fd

OPEN_NRS = frozenset((2, 85, 257, 437))          # open, creat, openat, openat2
READ_NRS = frozenset((0, 17))                    # read, pread64: the count in arg 2
WRITE_NRS = frozenset((1, 18))                   # write, pwrite64
STAT_NRS = frozenset((4, 5, 6, 262, 332))        # stat, fstat, lstat, newfstatat, statx
COMPLETES = {
    "open": OPEN_NRS,
    "opendir": OPEN_NRS,
    "read": READ_NRS,
    "write": WRITE_NRS,
    "mkdir": frozenset((83, 258)),               # mkdir, mkdirat
    "rmdir": frozenset((84, 263)),               # rmdir, unlinkat(AT_REMOVEDIR)
    "getattr": STAT_NRS,
}
# the requests whose "no such entry" ends a call: the path walk stops there
LOOKUP_ENDS = OPEN_NRS | STAT_NRS
# where each open call keeps its flags (openat2()'s are in user memory: never O_CREAT-checked)
OPEN_FLAGS_ARG = {2: 1, 257: 2}
REQUESTS = frozenset(COMPLETES) | {"lookup"}


class _Pending:
    """A read or write call sent as several requests: the bytes so far."""

    __slots__ = ("call", "syscall", "done")

    def __init__(self, call, syscall: CallerSyscall):
        self.call = call
        self.syscall = syscall
        self.done = 0


class CallerSyscalls:
    """The adapter's side: for each request, the caller's system call it
    does the work of, and the events it makes (see the module's doc)."""

    def __init__(self, fs):
        self.fs = fs
        self.pending: dict[int, _Pending] = {}       # tid -> its read/write so far

    def watching(self, request: str) -> bool:
        """Would ``request`` make events (syscall events are on, a machine
        runs the real processes)?"""
        k = self.fs.kernel
        return getattr(k.driver, "host", None) is not None and k.syscalls.traced()

    async def begin(self, request: str, tid: int):
        """Before ``request`` of thread ``tid`` runs: the call it serves
        (entered now if the request does its work), or None."""
        if not tid:
            return None
        sc = caller_syscall(tid)
        if sc is None:
            return None
        if request == "lookup":
            return _Lookup(sc)
        if sc.nr not in COMPLETES[request]:
            return None
        p = self.pending.get(tid)
        if p is not None and p.syscall == sc:
            return p                                 # the next part of a long read/write
        self.pending.pop(tid, None)
        call = await self._enter(tid, sc.nr, sc.args)
        if call is None:
            return None
        p = _Pending(call, sc)
        if request in ("read", "write"):
            self.pending[tid] = p
        return p

    async def done(self, request: str, tid: int, p, result, asked: int = 0) -> None:
        """The request succeeded with ``result`` (``asked``: the bytes the
        READ asked for, or the WRITE was given): the call returns, unless
        more of it is to come."""
        if isinstance(p, _Lookup):
            return
        nr = p.syscall.nr
        if request in ("read", "write"):
            n = len(result) if request == "read" else result
            p.done += n
            if n == asked and p.done < p.syscall.args[2]:
                return                               # the kernel sends the rest next
            self.pending.pop(tid, None)
            ret = p.done
        elif nr in OPEN_NRS:
            ret = lowest_free_fd(tid)
            if ret is None:              # not known: no exit, never a made-up value
                self.fs.kernel.driver.host.abandon(p.call)
                return
        else:
            ret = 0
        await self._leave(p.call, ret)

    async def failed(self, request: str, tid: int, p, err: int) -> None:
        """The request is answered with ``-err``: the call returns it (a
        LOOKUP only where its walk stops the call: see the module's doc)."""
        if isinstance(p, _Lookup):
            sc = p.syscall
            if sc.nr not in LOOKUP_ENDS or err not in (errno.ENOENT, errno.ENOTDIR) \
                    or self._creates(sc):
                return
            call = await self._enter(tid, sc.nr, sc.args)
            if call is not None:
                await self._leave(call, -err)
            return
        self.pending.pop(tid, None)
        await self._leave(p.call, -err)

    async def notified(self, tid: int, nr: int, args: tuple, ret: int) -> None:
        """Thread ``tid`` made call ``nr`` (argument registers ``args``),
        which returns ``ret``, without touching the mount (a seccomp
        notification: ``seccomp_notify.py``): its enter and exit now."""
        call = await self._enter(tid, nr, args)
        if call is not None:
            await self._leave(call, ret)

    async def _enter(self, tid: int, nr: int, args: tuple):
        """``sys_enter`` of thread ``tid``'s call at the request's instant;
        the machine is simulated to where its work begins, so that its
        entry is traced before what its work makes."""
        fs = self.fs
        with fs.at(await fs.observe()):
            call = fs.kernel.driver.host.enter(tid, fs.kernel.sim_time, nr, args)
        if call is not None:
            fs.kernel.timekeeper.advance_to(call.t)
        return call

    @staticmethod
    def _creates(sc: CallerSyscall) -> bool:
        i = OPEN_FLAGS_ARG.get(sc.nr)
        return sc.nr == 85 or (i is not None and bool(sc.args[i] & os.O_CREAT))

    async def _leave(self, call, ret: int) -> None:
        """``sys_exit`` of ``call``; the machine is then simulated past it,
        so that what its hit makes (a trigger's synthetic event, an eprobe
        reading the caller's memory) is done while the caller still waits.
        (Caught up first: a window made while the request waited is moved,
        not simulated here.)"""
        fs = self.fs
        k = fs.kernel
        with fs.at(await fs.observe()):
            t = k.driver.host.leave(call, k.sim_time, ret)
        k.timekeeper.advance_to(t + 1)


class _Lookup:
    """A LOOKUP's call: an event only if the lookup ends it."""

    __slots__ = ("syscall",)

    def __init__(self, syscall: CallerSyscall):
        self.syscall = syscall
