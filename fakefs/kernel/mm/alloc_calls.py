"""The kernel's call sites as the machine's work reaches them: how each
allocates and frees (``kernel.alloc_calls``).

The machine is a small KVM guest with a few services; boot leaves the
long-lived state a running system has (:mod:`.alloc_boot`: page
extensions, hash tables, driver pools, a footprint at most call sites,
processes, netlink, the distribution's modules, the dynamic pools at their
steady state).

What the machine does (:mod:`fakefs.sim.alloc_workload`: its rates, when
and on which CPU; :mod:`fakefs.sim.alloc_history`: what each operation
allocates and how long it keeps it) calls the code paths here: a site of
:mod:`.alloc_sites` allocating as its allocator does (``alloc_profile``),
a named cache's objects, pages at a scripted site, a process's memory
(:mod:`.alloc_tasks`), a netlink socket (its rhashtable grows and
shrinks, charged to the tag saved at its init), and ``free`` of whatever
they returned.  The boot replay (:mod:`.alloc_boot`) and the machine
draw from the kernel's per-subsystem RNGs (``rng``: ``alloc_workload``,
which both share), so a given seed replays the same history.
"""

from __future__ import annotations

from .alloc_tag import AllocTag
from .alloc_sites import CACHES, SITES, SiteProfile, lognormal
from .alloc_tasks import Process, TaskMemory
from .page_alloc import Page, PageAllocator, get_order
from .percpu import Percpu, PcpuObj
from .slub import BulkObj, Obj, SlabAllocator
from .vmalloc import VmArea, Vmalloc

GiB = 1 << 30
DEFAULT_RAM = 16 * GiB

NS = 1_000_000_000


class AllocCalls:
    """``kernel.alloc_calls``."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.at = kernel.alloc_tag
        self.pa: PageAllocator = kernel.page_alloc
        self.slab: SlabAllocator = kernel.slab
        self.vm: Vmalloc = kernel.vmalloc
        self.pcpu: Percpu = kernel.percpu
        self.rng = kernel.subsystem_rng("alloc_workload")
        self.ram = DEFAULT_RAM
        self.nr_cpus = kernel.nr_cpus
        self.sites: dict[str, AllocTag] = {}
        self.found: dict[tuple, AllocTag | None] = {}     # find_tag's lookups
        self.caches = {name: self.slab.kmem_cache_create(name, size, flags)
                       for name, (size, flags) in CACHES.items()}
        self.generic_caches: dict[int, object] = {}
        self.profiles: list[SiteProfile] = []
        # the sites boot picked to keep allocating: (profile, rate, mean
        # lifetime s); the machine's workload keeps those it gets to
        self.hot: list[tuple] = []
        self.tasks = TaskMemory(self, kernel.subsystem_rng("alloc_workload-host"))
        self.modules: dict[str, list] = {}   # loaded module -> objects it holds
        self.netlink_tables: list = []
        self.nl_route = None
        self.nl_socks: list = []
        self.missing_annotation_obj = None
        # what boot leaves in place (alloc_boot)
        self.page_ext: list = []
        self.sys_hash: list = []
        self.blk: list = []
        self.ct: list = []
        self.kernfs: list = []
        self.background: list = []
        self.trace = self.pa.trace

    # ------------------------------------------------------------------ helpers
    def site(self, key: str) -> AllocTag | None:
        """The tag of a scripted call site (SITES[key]; ``sites`` holds them)."""
        if key not in self.sites:
            self.sites[key] = self.find_tag(*SITES[key])
        return self.sites[key]

    def find_tag(self, file: str, function: str, line: int | None = None) -> AllocTag | None:
        """The tag of the allocation call in ``function`` of ``file``, or
        None where the persona's table has none (looked up once)."""
        key = (file, function, line)
        if key not in self.found:
            try:
                self.found[key] = self.at.find(file, function, line)
            except KeyError:
                self.found[key] = None
        return self.found[key]

    def _generic_cache(self, size: int):
        cls = max(16, 1 << (size - 1).bit_length()) if size > 256 else (size + 15) // 16 * 16
        c = self.generic_caches.get(cls)
        if c is None:
            c = self.slab.kmem_cache_create("cache-%d" % cls, cls)
            self.generic_caches[cls] = c
        return c

    def alloc_profile(self, p: SiteProfile, n: int = 1):
        """Allocate ``n`` objects the way site ``p`` does; returns a handle."""
        at = self.at
        old = at.current
        at.current = p.tag
        try:
            kind = p.kind
            gfp = p.gfp
            if kind == "kmalloc":
                if p.size > 8192:
                    order = get_order(p.size)
                    if n == 1:
                        return self.pa.alloc_pages_noprof(order, gfp)
                    return [self.pa.alloc_pages_noprof(order, gfp) for _ in range(n)]
                if n == 1:
                    return self.slab.kmalloc_noprof(p.size, gfp)
                return self.slab.kmalloc_bulk_noprof(p.size, n, gfp)
            if kind == "cache":
                c = self._generic_cache(p.size)
                if n == 1:
                    return self.slab.kmem_cache_alloc_noprof(c, gfp)
                return self.slab.kmem_cache_alloc_bulk_noprof(c, n, gfp)
            if kind == "page":
                if p.order == 0 and n > 1:
                    return self.pa.alloc_pages_bulk_noprof(n, gfp)
                if n == 1:
                    return self.pa.alloc_pages_noprof(p.order, gfp)
                return [self.pa.alloc_pages_noprof(p.order, gfp) for _ in range(n)]
            if kind == "vmalloc":
                if n == 1:
                    return self.vm.vmalloc_noprof(p.size)
                return [self.vm.vmalloc_noprof(p.size) for _ in range(n)]
            if kind == "kvmalloc":
                if n == 1:
                    return self.vm.kvmalloc_noprof(p.size)
                return [self.vm.kvmalloc_noprof(p.size) for _ in range(n)]
            if n == 1:
                return self.pcpu.alloc_noprof(p.size)
            return [self.pcpu.alloc_noprof(p.size) for _ in range(n)]
        finally:
            at.current = old

    def free(self, obj) -> None:
        """Free any handle returned by the model's allocators."""
        if obj is None:
            return
        if isinstance(obj, list):
            for o in obj:
                self.free(o)
        elif isinstance(obj, (Obj, BulkObj)):
            self.slab.kfree(obj)
        elif isinstance(obj, Page):
            self.pa.free_pages(obj)
        elif isinstance(obj, VmArea):
            self.vm.vfree(obj)
        elif isinstance(obj, PcpuObj):
            self.pcpu.free(obj)
        elif isinstance(obj, Process):
            self.tasks.exit_process(obj)
        elif callable(obj):
            obj()

    def cache_alloc(self, key: str, cache: str, node=None):
        return self.slab.kmem_cache_alloc(self.site(key), self.caches[cache], node=node)

    def bulk(self, tag, cache: str, n: int):
        """``n`` objects of the named cache at once, charged to ``tag``."""
        at = self.at
        old = at.current
        at.current = tag
        try:
            return self.slab.kmem_cache_alloc_bulk_noprof(self.caches[cache], n)
        finally:
            at.current = old

    def pages(self, key: str, n: int) -> Page:
        at = self.at
        old = at.current
        at.current = self.site(key)
        try:
            return self.pa.alloc_pages_bulk_noprof(n)
        finally:
            at.current = old

    # ------------------------------------------------------------------ netlink
    def nl_sock(self):
        obj = self.slab.kmalloc(self.site("sk"), 1000)
        if self.nl_route is not None:
            self.nl_route.insert()
        return obj

    def nl_close(self, obj) -> None:
        self.slab.kfree(obj)
        if self.nl_route is not None:
            self.nl_route.remove()

    def ctagmod_work(self) -> None:
        """ctagmod's work function (its timer queues it every 10 s):
        allocates without an alloc_hooks() annotation."""
        at = self.at
        saved = at.warn_task, at.warn_trace
        at.warn_task = ("kworker/0:2", 188, 0)
        at.warn_trace = ("ctagmod_work_fn+0x1c/0x40 [ctagmod]", "process_one_work+0x17b/0x330",
                         "worker_thread+0x2e2/0x410", "kthread+0xcf/0x100",
                         "ret_from_fork+0x31/0x50", "ret_from_fork_asm+0x1a/0x30")
        obj = self.missing_annotation_obj
        if obj is not None:
            self.slab.kfree(obj)
        old = at.current
        at.current = None
        try:
            self.missing_annotation_obj = self.slab.kmalloc_noprof(64)
        finally:
            at.current = old
            at.warn_task, at.warn_trace = saved
