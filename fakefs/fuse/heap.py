"""The daemon gives the memory of freed ring-buffer pages back to the system.

The model frees a shrunk or removed buffer's entries at once, but glibc's
allocator keeps the freed chunks for reuse unless they sit at the top of its
heap, so the daemon's RSS would stay where the largest buffer took it.
After a request that gave buffer pages back to the simulated machine (the
account's ``given_back`` moved), ``malloc_trim(0)`` returns the free pages
of the heap.  Without glibc there is nothing to call and the memory stays
with the process.
"""

from __future__ import annotations

import ctypes
import ctypes.util


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


class HeapTrim:
    """Trims the heap when the kernel's ring buffers gave pages back."""

    __slots__ = ("kernel", "seen", "trims", "_trim")

    def __init__(self, kernel):
        self.kernel = kernel
        self.seen = 0            # given_back when last looked
        self.trims = 0
        self._trim = _malloc_trim()

    def after_request(self) -> None:
        tracing = self.kernel.tracing
        acct = tracing.buffer_memory() if tracing is not None else None
        if acct is None or acct.given_back == self.seen:
            return
        self.seen = acct.given_back
        if self._trim is not None:
            self._trim(0)
            self.trims += 1
