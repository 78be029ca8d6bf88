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
