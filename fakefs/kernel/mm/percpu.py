"""Per-CPU allocations as allocation profiling sees them (mm/percpu.c).

``alloc_percpu()`` charges its caller the full footprint of the object:
one copy per possible CPU, plus the obj_cgroup pointers kept per 4-byte
unit when memory cgroups account kernel memory (``pcpu_obj_full_size``).
Chunks carry the tag references when profiling is supported.
"""

from __future__ import annotations

PCPU_MIN_ALLOC_SIZE = 4


class PcpuObj:
    __slots__ = ("size", "ref")

    def __init__(self, size: int):
        self.size = size
        self.ref = None


class Percpu:
    """``kernel.percpu``."""

    def __init__(self, kernel, at):
        self.kernel = kernel
        self.at = at
        self.nr_possible = kernel.nr_cpus
        self.memcg = kernel.config.enabled("MEMCG")
        self.allocated = 0

    def obj_full_size(self, size: int) -> int:
        extra = size // PCPU_MIN_ALLOC_SIZE * 8 if self.memcg else 0
        return size * self.nr_possible + extra

    def alloc_noprof(self, size: int) -> PcpuObj:
        obj = PcpuObj(size)
        self.allocated += size
        at = self.at
        if at.enabled and at.support:
            at.add(obj, at.current, self.obj_full_size(size))
        return obj

    def alloc(self, tag, size: int) -> PcpuObj:
        at = self.at
        old = at.current
        at.current = tag
        try:
            return self.alloc_noprof(size)
        finally:
            at.current = old

    def free(self, obj: PcpuObj) -> None:
        self.allocated -= obj.size
        at = self.at
        if at.enabled and at.support:
            at.sub(obj, self.obj_full_size(obj.size))
