"""The kernel's call sites as the machine's work reaches them: how each
allocates and frees, and the objects it holds with the instant each is
freed (``kernel.alloc_calls``).

The machine is a small KVM guest with a few services; boot leaves the
long-lived state a running system has (:mod:`.alloc_boot`: page
extensions, hash tables, driver pools, a footprint at most call sites,
processes, netlink, the distribution's modules, the dynamic pools at their
steady state).

What the machine does at run time (:mod:`fakefs.sim.alloc_workload`: its
rates, when and on which CPU) calls the code paths here: a command's
process forks and exits (:mod:`.alloc_tasks`), readahead and
``__filemap_get_folio`` fill the page cache, a packet's buffers, a netlink
socket (its rhashtable grows and shrinks, charged to the tag saved at its
init), dentries and inodes in bursts, a site of :mod:`.alloc_sites`
allocating as its allocator does.  A new object's lifetime is drawn when
it is allocated (``expire``: from ``op_time``, the instant its caller
gives); the caller frees what is due.  All draws come from the kernel's
per-subsystem RNGs (the boot replay and the run time share
``alloc_workload``), so a given seed replays the same history.
"""

from __future__ import annotations

import heapq

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
        self._seq = 0
        self.heap: list = []                 # (expiry_ns, seq, free_fn, obj)
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
        # when the operation under way happens, on the workload's clock
        # (its caller's: boot's at 0); a lifetime drawn runs from it
        self.op_time = 0
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

    def expire(self, lifetime_s: float, fn, obj) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (self.op_time + int(lifetime_s * NS), self._seq, fn, obj))

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

    # ------------------------------------------------------------------ code paths
    # (what each one allocates varies: it draws from the caller's ``rng``)
    def prepopulate(self) -> None:
        """Fill the dynamic pools to their steady state (remaining lifetimes
        are exponential, so the state is the one a long run would reach)."""
        rng = self.rng
        # page cache
        for _ in range(int(3600 / 12)):
            self.readahead(rng)
        for _ in range(1500):
            self.filemap(rng)
        for _ in range(int(12000 / 16)):
            self.dentries(rng, 16, life=lognormal(rng, 600, 1.0, 5, 7200))
        for p, rate, life in self.hot:
            n = int(rate * life)
            if n <= 8 or p.kind not in ("kmalloc", "cache", "page") or p.order:
                for _ in range(min(n, 200)):
                    self.expire(rng.expovariate(1.0 / life), self.free, self.alloc_profile(p))
                continue
            # older objects in a few groups, each freed at once
            for part in _split(n, 8, rng):
                self.expire(rng.expovariate(1.0 / life), self.free, self.alloc_profile(p, part))
        for _ in range(4):
            self.short_process(rng)
        for _ in range(60):
            self.expire(rng.expovariate(1 / 30.0), self.nl_close, self.nl_sock())
        for _ in range(100):
            self.expire(rng.expovariate(1 / 5.0), self.slab.kfree, self.cache_alloc("filp", "filp"))

    def readahead(self, rng) -> None:
        n = rng.choice((4, 8, 16, 32))
        pages = self.pages("readahead", n)
        life = rng.expovariate(1 / 90.0)
        self.expire(life, self.pa.free_pages, pages)
        if rng.random() < n / 64:
            self.expire(life, self.slab.kfree, self.cache_alloc("xas", "radix_tree_node"))

    def filemap(self, rng) -> None:
        page = self.pa.alloc_pages(self.site("filemap"), 0)
        life = rng.expovariate(1 / 60.0)
        self.expire(life, self.pa.free_pages, page)
        if rng.random() < 0.25:
            self.expire(life, self.slab.kfree, self.cache_alloc("bh", "buffer_head"))

    def dentries(self, rng, n: int, life: float) -> None:
        b1 = self.bulk(self.site("dentry"), "dentry", n)
        b2 = self.bulk(self.site("inode"), "ext4_inode_cache", n)
        self.expire(life, self.slab.kfree, b1)
        self.expire(life * 0.9, self.slab.kfree, b2)
        if rng.random() < 0.3:
            self.expire(life, self.slab.kfree, self.slab.kmalloc(self.site("dname"), 48))
        if rng.random() < 0.5:
            self.expire(life, self.slab.kfree, self.bulk(self.site("es"), "ext4_extent_status",
                                                          max(1, n // 4)))

    def short_process(self, rng) -> None:
        # the command it runs: nothing shows it, but it stays drawn so that
        # a seed keeps the history it has (the lessons print it)
        rng.choice(("sh", "sleep", "cat", "grep", "awk", "systemctl", "ps", "date", "sed"))
        rss = int(lognormal(rng, 60, 0.8, 8, 4000))
        proc = self.tasks.new_process(rss=rss, nvma=int(lognormal(rng, 28, 0.3, 10, 90)))
        self.expire(rng.expovariate(1 / 2.0), self.tasks.exit_process, proc)

    def skb(self, rng) -> None:
        s = self.slab
        skb = s.kmem_cache_alloc(self.site("skb"), self.caches["skbuff_head_cache"], node=0)
        if rng.random() < 0.4:
            data = s.kmem_cache_alloc(self.site("skb_small"), self.caches["skbuff_small_head"], node=0)
        else:
            data = s.kmalloc(self.site("skb_data"), rng.choice((1024, 2048, 2048, 4096)), node=0)
        life = rng.expovariate(1 / 0.03)
        self.expire(life, s.kfree, skb)
        self.expire(life, s.kfree, data)

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


def _split(n: int, parts: int, rng) -> list:
    cuts = sorted(rng.randrange(1, n) for _ in range(parts - 1))
    out = []
    prev = 0
    for c in cuts + [n]:
        if c > prev:
            out.append(c - prev)
        prev = c
    return out
