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


# the open system calls: number -> indexes of dfd (None: AT_FDCWD), the
# filename, flags and mode (None: in the user's struct open_how)
OPEN_SYSCALLS = {2: (None, 0, 1, 2), 257: (0, 1, 2, 3), 437: (0, 1, None, None)}
AT_FDCWD = -100
PATH_MAX = 4096


class OpenArgs:
    """What a caller blocked in an open system call passed it: its number,
    ``dfd`` (AT_FDCWD for open(2)), the user address of the file name, the
    name (None when its memory could not be read), flags and mode (None
    for openat2(), whose are in user memory)."""

    __slots__ = ("nr", "dfd", "filename", "name", "flags", "mode")

    def __init__(self, nr, dfd, filename, name, flags, mode):
        self.nr = nr
        self.dfd = dfd
        self.filename = filename
        self.name = name
        self.flags = flags
        self.mode = mode


def caller_open_args(pid: int, proc: str = "/proc") -> OpenArgs | None:
    """The open system call thread ``pid`` is blocked in (a FUSE request
    of it is being served): from ``/proc/<pid>/syscall`` (number and
    arguments) and ``/proc/<pid>/mem`` (the name).  None when it is in no
    open call or the host does not let us look (ptrace access)."""
    sc = caller_syscall(pid, proc)
    if sc is None or sc.nr not in OPEN_SYSCALLS:
        return None
    nr, args = sc.nr, sc.args
    di, ni, fi, mi = OPEN_SYSCALLS[nr]
    dfd = AT_FDCWD
    if di is not None:                   # an int: the low half, signed
        dfd = args[di] & 0xffffffff
        dfd -= (dfd >> 31) << 32
    addr = args[ni]
    return OpenArgs(nr, dfd, addr, HostMemory(pid, proc).read_string(addr),
                    None if fi is None else args[fi] & 0xffffffff,
                    None if mi is None else args[mi] & 0xffff)


class HostMemory:
    """A real process's memory, read through ``/proc/<pid>/mem`` (ptrace
    access: root has it), as the simulated kernel's probes read a task's
    user memory (``Task.mm``): every read opens the file again, so a
    process that has gone simply faults."""

    __slots__ = ("pid", "proc")

    def __init__(self, pid: int, proc: str = "/proc"):
        self.pid = pid
        self.proc = proc

    def _pread(self, size: int, addr: int) -> bytes | None:
        try:
            fd = os.open("%s/%d/mem" % (self.proc, self.pid), os.O_RDONLY)
        except OSError:
            return None
        try:
            return os.pread(fd, size, addr)
        except (OSError, OverflowError, ValueError):
            return None
        finally:
            os.close(fd)

    def read(self, addr: int, size: int) -> int | None:
        """``size`` bytes at ``addr`` as a little-endian int; None on a fault."""
        data = self._pread(size, addr)
        if data is None or len(data) < size:
            return None
        return int.from_bytes(data, "little")

    def read_string(self, addr: int, limit: int = PATH_MAX) -> bytes | None:
        """The NUL-terminated string at ``addr`` (at most ``limit`` - 1
        bytes: a longer one is cut there), a page at a time (the next page
        may not be mapped); None when its first byte cannot be read."""
        out = b""
        while len(out) < limit - 1:
            chunk = self._pread(4096 - (addr + len(out)) % 4096, addr + len(out))
            if not chunk:
                return out if out else None
            end = chunk.find(b"\0")
            if end >= 0:
                return (out + chunk[:end])[:limit - 1]
            out += chunk
        return out[:limit - 1]


class CallerSyscall:
    """The system call a thread is blocked in: its number and the six
    argument registers, as ``/proc/<tid>/syscall`` shows them."""

    __slots__ = ("nr", "args")

    def __init__(self, nr: int, args: tuple):
        self.nr = nr
        self.args = args

    def __eq__(self, other):
        return isinstance(other, CallerSyscall) and (self.nr, self.args) == (other.nr, other.args)


def caller_syscall(tid: int, proc: str = "/proc") -> CallerSyscall | None:
    """The system call thread ``tid`` is in (while one of its FUSE
    requests is served, the one that sent it); None when it is in none
    (``running``, -1) or the host does not let us look."""
    try:
        with open("%s/%d/syscall" % (proc, tid)) as fh:
            f = fh.read().split()
    except OSError:
        return None
    if len(f) < 7 or not f[0].isdigit():
        return None
    return CallerSyscall(int(f[0]), tuple(int(a, 16) for a in f[1:7]))


def lowest_free_fd(pid: int, proc: str = "/proc") -> int | None:
    """The descriptor an open of ``pid`` gets: ``get_unused_fd_flags()``
    reserved it before the file was looked up (so before any request of
    the open), but it is installed only when the open returns, so it is
    the lowest number not in ``/proc/<pid>/fd`` yet; None if unreadable."""
    try:
        taken = {int(n) for n in os.listdir("%s/%d/fd" % (proc, pid)) if n.isdigit()}
    except OSError:
        return None
    fd = 0
    while fd in taken:
        fd += 1
    return fd
