"""What the host kernel knows about our callers and our mount, read from /proc.

pyfuse3's ``read()`` gets neither the caller nor the file's current flags
(the kernel sends ``fuse_read_in.flags``, libfuse puts it in ``fi->flags``,
pyfuse3 drops it).  ``fcntl(F_SETFL, O_NONBLOCK)`` after open is visible in
``/proc/<pid>/fdinfo/<fd>`` of the processes holding the file, so a read
that would block looks there (only then: the fast path costs nothing).
"""

from __future__ import annotations

import os
import re


def mount_dev(mountpoint: str, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """``major:minor`` of the last FUSE mount on ``mountpoint`` (no request
    to the filesystem: safe from the daemon itself)."""
    dev = None
    try:
        with open(mountinfo) as fh:
            for line in fh:
                f = line.split()
                if len(f) > 4 and unescape_mount_path(f[4]) == mountpoint:
                    fstype = line.split(" - ", 1)[1].split()[0] if " - " in line else ""
                    if fstype.startswith("fuse"):
                        dev = f[2]
    except OSError:
        return None
    return dev


def dev_attached(dev: str, mountinfo: str = "/proc/self/mountinfo") -> bool:
    """Is a filesystem with this ``major:minor`` still mounted somewhere?"""
    try:
        with open(mountinfo) as fh:
            for line in fh:
                f = line.split(maxsplit=3)
                if len(f) > 2 and f[2] == dev:
                    return True
    except OSError:
        return True          # cannot tell: assume it is
    return False


def unescape_mount_path(field: str) -> str:
    """Mount paths escape space, tab, newline and backslash as ``\\ooo``."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def fd_flags(pid: int, ino: int, dev: str | None, proc: str = "/proc") -> list[int] | None:
    """``f_flags`` of every descriptor of ``pid`` open on inode ``ino`` of the
    filesystem ``dev``; None when the process cannot be inspected."""
    try:
        mnt_ids = set()
        if dev is not None:
            with open(f"{proc}/{pid}/mountinfo") as fh:
                for line in fh:
                    f = line.split(maxsplit=3)
                    if len(f) > 2 and f[2] == dev:
                        mnt_ids.add(int(f[0]))
        names = os.listdir(f"{proc}/{pid}/fdinfo")
    except OSError:
        return None
    out = []
    want = str(ino)
    for name in names:
        try:
            with open(f"{proc}/{pid}/fdinfo/{name}") as fh:
                text = fh.read()
        except OSError:
            continue
        flags = mnt_id = None
        match = False
        for line in text.splitlines():
            key, _, val = line.partition(":")
            if key == "flags":
                flags = int(val.strip(), 8)
            elif key == "mnt_id":
                mnt_id = int(val.strip())
            elif key == "ino":
                match = val.strip() == want
        if match and flags is not None and (dev is None or mnt_id in mnt_ids):
            out.append(flags)
    return out


def current_nonblock(pid: int, ino: int, dev: str | None, open_flags: int) -> bool:
    """The O_NONBLOCK an open file has now: taken from the opener's
    descriptors on the file when they agree, else the flags seen at open."""
    flags = fd_flags(pid, ino, dev) if pid else None
    if flags:
        values = {bool(fl & os.O_NONBLOCK) for fl in flags}
        if len(values) == 1:
            return values.pop()
    return bool(open_flags & os.O_NONBLOCK)
