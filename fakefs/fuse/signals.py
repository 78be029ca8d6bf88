"""Is a signal pending for a process?  (pyfuse3 exposes no FUSE_INTERRUPT.)

A process blocked in a FUSE read sits in the kernel until the filesystem
answers; its pending signals are visible in ``/proc/<pid>/status``.  A
signal that is pending and neither blocked nor ignored (or SIGKILL, which a
fatal signal becomes) means the reader wants out: the blocking read then
returns EINTR.
"""

from __future__ import annotations

import os

SIGKILL_MASK = 1 << (9 - 1)


def signal_pending(pid: int, proc: str = "/proc") -> bool:
    try:
        with open(f"{proc}/{pid}/status") as fh:
            text = fh.read()
    except OSError:
        return True          # the opener is gone: stop waiting for it
    fields = {}
    for line in text.splitlines():
        key, _, val = line.partition(":")
        if key in ("SigPnd", "ShdPnd", "SigBlk", "SigIgn"):
            fields[key] = int(val.strip(), 16)
    pending = fields.get("SigPnd", 0) | fields.get("ShdPnd", 0)
    if pending & SIGKILL_MASK:
        return True
    return bool(pending & ~fields.get("SigBlk", 0) & ~fields.get("SigIgn", 0))


class SignalWatch:
    """``signal_pending`` for many waiting readers at a low cost.

    A process blocked in a FUSE read sleeps until the filesystem answers;
    a signal it does not block wakes it (the kernel then sends
    FUSE_INTERRUPT, which pyfuse3 drops, and waits on killable): it runs,
    and ``/proc/<pid>/schedstat`` (its run time and count of runs, one
    short line) changes.  So ``/proc/<pid>/status`` is parsed only when
    that line changed since the last check that found nothing pending, or
    could not be read; the file is kept open (``pread``: one system call)
    while the process has readers waiting, up to MAX_HELD files."""

    MAX_HELD = 512

    __slots__ = ("proc", "held", "clean")

    def __init__(self, proc: str = "/proc"):
        self.proc = proc
        self.held: dict[int, int] = {}      # pid -> its schedstat's descriptor
        self.clean: dict[int, bytes] = {}   # pid -> schedstat when nothing was pending

    def _schedstat(self, pid: int) -> bytes | None:
        fd = self.held.get(pid)
        try:
            if fd is None:
                path = f"{self.proc}/{pid}/schedstat"
                if len(self.held) >= self.MAX_HELD:
                    with open(path, "rb", buffering=0) as fh:
                        return fh.read(256)
                fd = self.held[pid] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            now = os.pread(fd, 256, 0)
        except OSError:
            return None              # gone, or no schedstat (CONFIG_SCHED_INFO)
        # sched_info off (e.g. delayacct off and no schedstats): always zeros,
        # which says nothing about whether the process ran
        return None if now.startswith(b"0 0 ") else now

    def pending(self, pid: int) -> bool:
        """``signal_pending(pid)``, parsed only if the process ran since the
        last check that found nothing."""
        now = self._schedstat(pid)
        if now is not None and self.clean.get(pid) == now:
            return False
        if signal_pending(pid, self.proc):
            self.clean.pop(pid, None)
            return True
        if now is not None:
            self.clean[pid] = now
        return False

    def keep_only(self, pids) -> None:
        """Forget (and close the files of) the processes not in ``pids``."""
        for pid in [p for p in self.held if p not in pids]:
            os.close(self.held.pop(pid))
        for pid in [p for p in self.clean if p not in pids]:
            del self.clean[pid]
