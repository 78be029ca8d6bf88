"""The kernel log buffer (kernel/printk): what ``dmesg`` shows.

Records carry a sequence number that keeps growing when old ones are
overwritten.  ``/dev/kmsg`` (``devkmsg_*``): each open file has its own
position; a read returns one record (``level,seq,usec,flags;text``, the
facility in the level's upper bits, unprintable bytes escaped), EINVAL if
the buffer is too small (the record is gone for that reader), EPIPE once
if records were overwritten under it, and blocks (EAGAIN non-blocking)
past the last one.  A write logs one record, ``<N>`` prefix for level and
facility (LOG_USER by default), ratelimited per open file to 10 in 5 s as
``printk.devkmsg=ratelimit`` (the default) does, with the number of
suppressed lines logged on close.

``/dev/kmsg`` follows ``kernel.dmesg_restrict`` (kernel/printk/sysctl.c, since
2.6.37): when set, opening it for reading needs CAP_SYSLOG (the opener's
uid 0 here), as ``devkmsg_open()`` → ``check_syslog_permissions()`` does;
write-only opens are not checked.  The default is
``CONFIG_SECURITY_DMESG_RESTRICT`` (y in Debian's kernels).

``kernel.kptr_restrict`` (the same sysctl table, since 2.6.38; 0 to 2,
default 0) is kept here and read by ``kallsyms_show_value()``
(kallsyms.py): who sees the addresses of ``/proc/kallsyms`` and
``kprobes/list``.
"""

from __future__ import annotations

import errno
import os
from collections import deque

from .fs.proc.base import CtlTable, parse_dointvec_minmax, register_sysctl
from .fs.pseudo import POLLIN, POLLRDNORM, FileOperations, KernelError, WouldBlock
from .owed import Settle

KERN_EMERG, KERN_ALERT, KERN_CRIT, KERN_ERR, KERN_WARNING, KERN_NOTICE, KERN_INFO, KERN_DEBUG = range(8)


LOG_USER = 1
PRINTKRB_RECORD_MAX = 1024
DEVKMSG_RATELIMIT_NS = 5_000_000_000      # DEFAULT_RATELIMIT_INTERVAL
DEVKMSG_RATELIMIT_BURST = 10              # DEFAULT_RATELIMIT_BURST
POLLERR, POLLPRI = 0x008, 0x002


class LogRecord:
    __slots__ = ("seq", "ts", "level", "facility", "text")

    def __init__(self, seq, ts, level, facility, text):
        self.seq = seq
        self.ts = ts
        self.level = level
        self.facility = facility
        self.text = text


# Debian's CONFIG_CONSOLE_LOGLEVEL_DEFAULT, _QUIET, MESSAGE_LOGLEVEL_DEFAULT;
# CONSOLE_LOGLEVEL_MIN and _DEBUG of include/linux/printk.h
CONSOLE_LOGLEVEL_DEFAULT, CONSOLE_LOGLEVEL_QUIET, MESSAGE_LOGLEVEL_DEFAULT = 7, 4, 4
CONSOLE_LOGLEVEL_MIN, CONSOLE_LOGLEVEL_DEBUG = 1, 10


class LogBuffer:
    def __init__(self, source, capacity: int = 4096):
        # what gives a record its instant: ``source.now`` (the kernel's,
        # given by its caller)
        self.source = source
        self.records: deque[LogRecord] = deque(maxlen=capacity)
        self.next_seq = 0
        self.dmesg_restrict = 0
        self.kptr_restrict = 0
        # console_printk[]: console_loglevel, default_message_loglevel,
        # minimum_console_loglevel, default_console_loglevel
        # (/proc/sys/kernel/printk; ``quiet``, ``debug``, ``loglevel=``)
        self.console_printk = [CONSOLE_LOGLEVEL_DEFAULT, MESSAGE_LOGLEVEL_DEFAULT,
                               CONSOLE_LOGLEVEL_MIN, CONSOLE_LOGLEVEL_DEFAULT]
        # what must run before the log is read: the machine's owed work
        # that may print (the allocation workload's warnings)
        self.settle = Settle()

    def syslog_read_allowed(self, uid: int) -> bool:
        """check_syslog_permissions(SYSLOG_ACTION_READ_ALL, SYSLOG_FROM_READER)"""
        return not self.dmesg_restrict or uid == 0

    def printk(self, text: str, level: int = KERN_INFO, facility: int = 0, ts: int | None = None) -> None:
        """Log ``text``; ``ts``: the instant it was printed, when the
        machine's catch-up prints it (default: the kernel's now)."""
        if ts is None:
            ts = self.source.now
        self.records.append(LogRecord(self.next_seq, ts, level, facility, text))
        self.next_seq += 1

    def pr_warn(self, text: str) -> None:
        self.printk(text, KERN_WARNING)

    def pr_notice(self, text: str) -> None:
        self.printk(text, KERN_NOTICE)

    @property
    def first_seq(self) -> int:
        return self.records[0].seq if self.records else self.next_seq

    def record(self, seq: int) -> LogRecord | None:
        """The record ``seq`` (the first one kept if it is older), or None."""
        self.settle()
        first = self.first_seq
        if seq >= self.next_seq:
            return None
        return self.records[max(0, seq - first)]

    def dmesg(self) -> str:
        self.settle()
        return "".join("[%5d.%06d] %s\n" % (r.ts // 1_000_000_000, r.ts % 1_000_000_000 // 1000, r.text)
                       for r in self.records)


def kmsg_record(r: LogRecord) -> bytes:
    """One record as /dev/kmsg shows it (info_print_ext_header + msg_add_ext_text)."""
    body = "".join("\\x%02x" % ord(c) if c < " " or c >= "\x7f" or c == "\\" else c
                   for c in r.text)
    return ("%d,%d,%d,-;%s\n" % ((r.facility << 3) | r.level, r.seq, r.ts // 1000, body)).encode(
        "latin-1", "backslashreplace")


class KmsgUser:
    """``struct devkmsg_user``: a reader's position and a writer's ratelimit."""

    __slots__ = ("seq", "begin", "printed", "missed")

    def __init__(self, seq: int):
        self.seq = seq
        self.begin = None
        self.printed = 0
        self.missed = 0

    def ratelimit(self, now: int) -> bool:
        """``___ratelimit()``: True to go on."""
        if self.begin is None or now >= self.begin + DEVKMSG_RATELIMIT_NS:
            self.begin = now
            self.printed = 0
        if self.printed < DEVKMSG_RATELIMIT_BURST:
            self.printed += 1
            return True
        self.missed += 1
        return False


def devkmsg_write_text(data: bytes) -> tuple[int, int, str]:
    """(level, facility, text) of a write: ``<N>`` sets both, one trailing
    newline ends the record."""
    level, facility = KERN_WARNING, LOG_USER          # default_message_loglevel
    text = data.decode("latin-1")
    if text.startswith("<"):
        i = 1
        while i < len(text) and text[i].isdigit():
            i += 1
        if i < len(text) and text[i] == ">":
            u = int(text[1:i] or "0") & 0xFFFFFFFF
            level = u & 7
            if u >> 3:
                facility = u >> 3
            text = text[i + 1:]
    if text.endswith("\n"):
        text = text[:-1]
    return level, facility, text


def register_params(kernel) -> None:
    """``quiet``, ``debug`` and ``loglevel=`` (init/main.c): the console's
    level, which /proc/sys/kernel/printk shows."""
    def quiet(_val):
        kernel.setup["console_loglevel"] = CONSOLE_LOGLEVEL_QUIET

    def debug(_val):
        kernel.setup["console_loglevel"] = CONSOLE_LOGLEVEL_DEBUG

    def loglevel(val):
        try:                                   # get_option(): an int, else nothing changes
            kernel.setup["console_loglevel"] = int(val or "", 0)
        except ValueError:
            kernel.printk("Malformed early option 'loglevel'", KERN_WARNING)

    kernel.early_param("quiet", quiet)
    kernel.early_param("debug", debug)
    kernel.early_param("loglevel", loglevel)


def store_intvec(text: str, vec: list) -> None:
    """``proc_dointvec`` into ``vec``: the ints written replace its first
    entries; a bad one is EINVAL, after the good ones before it are kept."""
    for i, tok in enumerate(text.split()[:len(vec)]):
        try:
            v = int(tok, 10)
        except ValueError:
            raise KernelError(errno.EINVAL) from None
        if not -0x80000000 <= v <= 0x7FFFFFFF:
            raise KernelError(errno.EINVAL)
        vec[i] = v


def devkmsg_init(kernel) -> None:
    """``/dev/kmsg`` and the log's sysctls."""
    log = kernel.log
    if "console_loglevel" in kernel.setup:
        log.console_printk[0] = kernel.setup["console_loglevel"]
    register_sysctl(kernel, "kernel", [
        CtlTable("printk", 0o644, lambda: "\t".join("%d" % v for v in log.console_printk) + "\n",
                 lambda text: store_intvec(text, log.console_printk))])

    class DevKmsgOps(FileOperations):
        nonseekable = True
        writes_data = True

        def open(self, f):
            if (f.flags & os.O_ACCMODE) != os.O_WRONLY and \
                    not f.data.syslog_read_allowed(f.uid):
                raise KernelError(errno.EPERM)
            f.private = KmsgUser(f.data.first_seq)

        def read(self, f, off, size):
            user = f.private
            r = f.data.record(user.seq)
            if r is None:
                raise WouldBlock()
            if r.seq != user.seq:             # overwritten under the reader
                user.seq = r.seq
                raise KernelError(errno.EPIPE)
            user.seq = r.seq + 1
            out = kmsg_record(r)
            if len(out) > size:
                raise KernelError(errno.EINVAL)
            return out

        def owed(self, f, off):
            return f.data.settle            # (each record read settles: the workload may warn)

        def poll(self, f):
            user = f.private
            r = f.data.record(user.seq)
            if r is None:
                return 0
            return POLLIN | POLLRDNORM | (POLLERR | POLLPRI if r.seq != user.seq else 0)

        def write(self, f, data):
            if len(data) > PRINTKRB_RECORD_MAX:
                raise KernelError(errno.EINVAL)
            if f.private.ratelimit(kernel.now):
                level, facility, text = devkmsg_write_text(data)
                f.data.printk(text, level, facility)
            return len(data)

        def release(self, f):
            user = f.private
            if user.missed:
                comm = (kernel.host_comm(f.pid) if kernel.host_comm is not None else None) or "?"
                f.data.pr_warn("%s: %d output lines suppressed due to ratelimiting" % (comm, user.missed))
                user.missed = 0

    d = kernel.tree.root.children.get("dev") or kernel.tree.create_dir("dev", kernel.tree.root)
    kernel.tree.create_file("kmsg", 0o644, d, log, DevKmsgOps())
    if kernel.config.version < (2, 6, 37):
        return
    restrict = kernel.config.options.get("CONFIG_SECURITY_DMESG_RESTRICT", True)
    log.dmesg_restrict = 1 if restrict else 0

    def store(text: str) -> None:
        # proc_dointvec_minmax_sysadmin, extra1 = 0, extra2 = 1
        log.dmesg_restrict = parse_dointvec_minmax(text.encode("latin-1"), 0, 1)[0]

    register_sysctl(kernel, "kernel", [
        CtlTable("dmesg_restrict", 0o644, lambda: "%d\n" % log.dmesg_restrict, store)])
    if kernel.config.version < (2, 6, 38):
        return

    def store_kptr(text: str) -> None:
        # proc_dointvec_minmax_sysadmin, extra1 = 0, extra2 = 2
        log.kptr_restrict = parse_dointvec_minmax(text.encode("latin-1"), 0, 2)[0]

    register_sysctl(kernel, "kernel", [
        CtlTable("kptr_restrict", 0o644, lambda: "%d\n" % log.kptr_restrict, store_kptr)])
