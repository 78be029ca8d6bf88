"""The kernel log buffer (kernel/printk): what ``dmesg`` shows."""

from __future__ import annotations

KERN_EMERG, KERN_ALERT, KERN_CRIT, KERN_ERR, KERN_WARNING, KERN_NOTICE, KERN_INFO, KERN_DEBUG = range(8)


class LogBuffer:
    def __init__(self, clock, capacity: int = 4096):
        self.clock = clock
        self.capacity = capacity
        self.records: list[tuple[int, int, str]] = []  # (ts_ns, level, text)

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
    from .fs.pseudo import FileOperations

    class DevKmsgOps(FileOperations):
        def show(self, f):
            return kmsg_records(f.data)

    d = kernel.tree.root.children.get("dev") or kernel.tree.create_dir("dev", kernel.tree.root)
    kernel.tree.create_file("kmsg", 0o644, d, kernel.log, DevKmsgOps())
