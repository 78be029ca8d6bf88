"""A task's user memory known by its regions (mm/maccess.c's
``copy_from_user_nofault()`` and ``strncpy_from_user_nofault()``, as a probe
reads it): the bytes placed at their addresses — the strings a call passes,
its program's path — and a fault anywhere else, as the model knows nothing
there.  A simulated task's calls (``sim.syscalls.TaskCalls``) and a probe
hit's own user data (``trace_kprobe_regs``) are such memories; a real
process's is its own (``fuse.procfd.HostMemory``)."""

from __future__ import annotations

STRING_MAX = 4096 - 1          # MAX_STRING_SIZE (PATH_MAX) less the NUL


class UserRegions:
    """User memory: ``regions`` maps an address to the bytes there."""

    __slots__ = ("regions",)

    def __init__(self, regions=None):
        self.regions: dict[int, bytes] = dict(regions or {})

    def _byte(self, addr: int):
        for base, data in self.regions.items():
            if base <= addr < base + len(data):
                return data[addr - base]
        return None

    def read(self, addr: int, size: int) -> int | None:
        """``size`` bytes at ``addr`` as a little-endian int, None on a fault."""
        val = 0
        for i in range(size):
            b = self._byte(addr + i)
            if b is None:
                return None
            val |= b << (8 * i)
        return val

    def read_string(self, addr: int, limit: int = STRING_MAX) -> bytes | None:
        """The string at ``addr`` (up to its NUL, at most ``limit`` bytes),
        None on a fault before its end."""
        out = bytearray()
        for i in range(limit):
            b = self._byte(addr + i)
            if b is None:
                return None
            if b == 0:
                break
            out.append(b)
        return bytes(out)
