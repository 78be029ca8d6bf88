"""Is a signal pending for a process?  (pyfuse3 exposes no FUSE_INTERRUPT.)

A process blocked in a FUSE read sits in the kernel until the filesystem
answers; its pending signals are visible in ``/proc/<pid>/status``.  A
signal that is pending and neither blocked nor ignored (or SIGKILL, which a
fatal signal becomes) means the reader wants out: the blocking read then
returns EINTR.
"""

from __future__ import annotations

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
