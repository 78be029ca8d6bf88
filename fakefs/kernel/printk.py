"""The kernel log buffer (kernel/printk): what ``dmesg`` shows.

``/dev/kmsg`` follows ``kernel.dmesg_restrict`` (kernel/printk/sysctl.c, since
2.6.37): when set, opening it for reading needs CAP_SYSLOG (the opener's
uid 0 here), as ``devkmsg_open()`` → ``check_syslog_permissions()`` does;
write-only opens are not checked.  The default is
``CONFIG_SECURITY_DMESG_RESTRICT`` (y in Debian's kernels).
"""

from __future__ import annotations

import errno
import os

from .fs.proc.base import CtlTable, register_sysctl
from .fs.pseudo import FileOperations, KernelError

KERN_EMERG, KERN_ALERT, KERN_CRIT, KERN_ERR, KERN_WARNING, KERN_NOTICE, KERN_INFO, KERN_DEBUG = range(8)


class LogBuffer:
    def __init__(self, clock, capacity: int = 4096):
        self.clock = clock
        self.capacity = capacity
        self.records: list[tuple[int, int, str]] = []  # (ts_ns, level, text)
        self.dmesg_restrict = 0

    def syslog_read_allowed(self, uid: int) -> bool:
        """check_syslog_permissions(SYSLOG_ACTION_READ_ALL, SYSLOG_FROM_READER)"""
        return not self.dmesg_restrict or uid == 0

    def printk(self, text: str, level: int = KERN_INFO) -> None:
        self.records.append((self.clock.now_ns(), level, text))
        if len(self.records) > self.capacity:
            del self.records[: len(self.records) - self.capacity]

    def pr_warn(self, text: str) -> None:
        self.printk(text, KERN_WARNING)

    def pr_notice(self, text: str) -> None:
        self.printk(text, KERN_NOTICE)

    def dmesg(self) -> str:
        out = []
        for ts, _lvl, text in self.records:
            out.append("[%5d.%06d] %s\n" % (ts // 1_000_000_000, ts % 1_000_000_000 // 1000, text))
        return "".join(out)


def kmsg_records(log: LogBuffer) -> str:
    """Records in the /dev/kmsg format: ``prefix,seq,usec,flags;message``."""
    out = []
    for seq, (ts, lvl, text) in enumerate(log.records):
        out.append("%d,%d,%d,-;%s\n" % (lvl, seq, ts // 1000, text))
    return "".join(out)


def devkmsg_init(kernel) -> None:
    """``/dev/kmsg`` as a plain file: every record in the kmsg format."""
    log = kernel.log

    class DevKmsgOps(FileOperations):
        def open(self, f):
            if (f.flags & os.O_ACCMODE) != os.O_WRONLY and \
                    not f.data.syslog_read_allowed(f.uid):
                raise KernelError(errno.EPERM)

        def show(self, f):
            return kmsg_records(f.data)

    d = kernel.tree.root.children.get("dev") or kernel.tree.create_dir("dev", kernel.tree.root)
    kernel.tree.create_file("kmsg", 0o644, d, log, DevKmsgOps())
    if kernel.config.version < (2, 6, 37):
        return
    restrict = kernel.config.options.get("CONFIG_SECURITY_DMESG_RESTRICT", True)
    log.dmesg_restrict = 1 if restrict else 0

    def store(text: str) -> None:
        # proc_dointvec_minmax_sysadmin, extra1 = 0, extra2 = 1
        try:
            val = int(text.strip(), 0)
        except ValueError:
            raise KernelError(errno.EINVAL) from None
        if val not in (0, 1):
            raise KernelError(errno.EINVAL)
        log.dmesg_restrict = val

    register_sysctl(kernel, "kernel", [
        CtlTable("dmesg_restrict", 0o644, lambda: "%d\n" % log.dmesg_restrict, store)])
