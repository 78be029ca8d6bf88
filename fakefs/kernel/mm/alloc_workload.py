"""What the simulated machine allocates: the memory workload behind
/proc/allocinfo.

The machine is a small KVM guest with a few services; boot leaves the
long-lived state a running system has (:mod:`.alloc_workload_boot`: page
extensions, hash tables, driver pools, a footprint at most call sites,
processes, netlink, the distribution's modules).

Then, driven by the kernel's timer hooks, it keeps allocating and freeing:
processes fork and exit (task structs, vmalloc'ed stacks, mm, VMAs, page
tables, anonymous pages), the page cache fills through readahead and
``__filemap_get_folio`` and is reclaimed, network buffers come and go,
netlink sockets bind and close (their rhashtable grows and shrinks, charged
to the tag saved at its init), dentries and inodes are created in bursts,
and other call sites churn (:mod:`.alloc_workload_sites`): of those boot
picks, the ones some task of the machine gets to (``keep_runtime_sites``).
Each allocation happens where a task that makes it runs
(:mod:`.alloc_moments`).  Every live object expires at a time drawn when it is allocated; all choices
come from the kernel's per-subsystem RNGs, so a given seed replays the same
history.

Public entry points: :func:`start` (called from ``alloc_workload_init``),
``load_module`` / ``unload_module`` (:mod:`.alloc_tag_module`), and
``kernel.alloc_workload.run_for(ns)`` for tests and benchmarks.
"""

from __future__ import annotations

import heapq
import itertools
import math

from .alloc_moments import Moments
from .alloc_tag import AllocTag
from .alloc_workload_boot import DEFAULT_RAM, boot
from .alloc_workload_sites import CACHES, SITES, SiteProfile, lognormal
from .alloc_workload_tasks import Process, TaskMemory
from .mem_profiling import do_sysctl_args
from .page_alloc import GFP_ATOMIC, GFP_KERNEL, PAGE_SHIFT, Page, PageAllocator, get_order
from .percpu import Percpu, PcpuObj
from .slub import BulkObj, Obj, SlabAllocator
from .vmalloc import VmArea, Vmalloc

NS = 1_000_000_000
# short-lived churn of a busy machine, per second: packets in flight and
# their buffers, path lookups (getname() -> names_cache, freed at once)
SKB_RATE = 1500.0
GETNAME_RATE = 2500.0
# The workload runs when what it does can be seen: at once while a kmem
# tracepoint is in use (its events take their place in the trace), else
# owed until something looks at the allocators (``AllocTagging.settle``:
# /proc/allocinfo, the mem_profiling sysctl, a module load, a request for
# pages near the memory limit) or reads the kernel log (it may warn).  Of a longer unseen stretch only the last OWED_MAX_NS is
# simulated: the rest is time the machine's allocators did nothing, as in
# a gap the kernel skips.
OWED_MAX_NS = 2 * NS
OWED_STEP_NS = 20_000_000


class AllocWorkload:
    """``kernel.alloc_workload``."""

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
        self.sched = kernel.sched
        self.now = 0
        self._seq = 0
        self.heap: list = []                 # (expiry_ns, seq, free_fn, obj)
        self.sites: dict[str, AllocTag] = {}
        self.found: dict[tuple, AllocTag | None] = {}     # find_tag's lookups
        self.caches = {name: self.slab.kmem_cache_create(name, size, flags)
                       for name, (size, flags) in CACHES.items()}
        self.generic_caches: dict[int, object] = {}
        self.profiles: list[SiteProfile] = []
        self.hot: list[tuple] = []           # (profile, rate, mean lifetime s): set_hot()
        self.hot_cum: list[float] = []       # their cumulative rates
        self.tasks = TaskMemory(self, kernel.subsystem_rng("alloc_workload-host"))
        self.modules: dict[str, list] = {}   # loaded module -> objects it holds
        self.netlink_tables: list = []
        self.nl_route = None
        self.nl_socks: list = []
        self.missing_annotation_obj = None
        # what boot leaves in place (alloc_workload_boot)
        self.page_ext: list = []
        self.sys_hash: list = []
        self.blk: list = []
        self.ct: list = []
        self.kernfs: list = []
        self.kernfs_dyn: list = []
        self.background: list = []
        self.next_ctagmod_tick = 10 * NS
        self.next_burst = 45 * NS
        self.steps = 0
        self.ops = 0
        # when and where the next operation happens: the workload's clock
        # (``op_time``), and the kernel's time and CPU the allocators' trace
        # events get (:mod:`.alloc_moments`)
        self.op_time = 0
        self.trace = self.pa.trace
        self.moments = Moments(kernel, self.trace)
        self.owed = 0                        # kernel time stepped but not yet simulated
        kernel.alloc_tag.settle.hooks.append(self.settle)
        kernel.log.settle.hooks.append(self.settle)

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

    def _expire(self, lifetime_s: float, fn, obj) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (self.op_time + int(lifetime_s * NS), self._seq, fn, obj))

    def _moment(self, w: int | None = None, tag: AllocTag | None = None) -> None:
        """The next operation happens at workload time ``w`` (an expiry:
        on any CPU), or, when None, at an instant of the step where a task
        that can allocate at ``tag`` runs (:class:`.alloc_moments.Moments`)."""
        t = self.moments.draw(w, self.trace.call_site(tag) if w is None else 0)
        if t is not None:
            self.op_time = t

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

    def _cache_alloc(self, key: str, cache: str, node=None):
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

    def keep_runtime_sites(self) -> None:
        """Of the call sites boot left churning (``hot``), keep those the
        machine gets to (``Workload.site_reachable``): a site only boot code
        calls (an ``__init`` function, a driver's probe) stops allocating
        once the machine runs, and so does one whose function cannot be
        placed (``KmemTrace.call_site`` is 0).  A site only an interrupt
        gets to (a softirq's packet receive) allocates with GFP_ATOMIC,
        or stops if its allocator may sleep (vmalloc)."""
        wl = self.kernel.workload
        if wl is None:
            return
        call_site = self.trace.call_site
        hot = []
        for h in self.hot:
            p = h[0]
            site = call_site(p.tag)
            if not site:
                continue
            if not wl.site_reachable(site, task_only=True):
                if p.kind in ("vmalloc", "kvmalloc") or not wl.site_reachable(site):
                    continue
                p.gfp = GFP_ATOMIC
            hot.append(h)
        self.set_hot(hot)

    def set_hot(self, hot: list[tuple]) -> None:
        """The call sites that churn: (profile, rate, mean lifetime s)."""
        self.hot = hot
        self.hot_cum = list(itertools.accumulate(rate for _p, rate, _life in hot))

    def _pages(self, key: str, n: int) -> Page:
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

    # ------------------------------------------------------------------ steady state
    def prepopulate(self) -> None:
        """Fill the dynamic pools to their steady state (remaining lifetimes
        are exponential, so the state is the one a long run would reach)."""
        rng = self.rng
        # page cache
        for _ in range(int(3600 / 12)):
            self._readahead(rng)
        for _ in range(1500):
            self._filemap(rng)
        for _ in range(int(12000 / 16)):
            self._dentries(rng, 16, life=lognormal(rng, 600, 1.0, 5, 7200))
        for p, rate, life in self.hot:
            n = int(rate * life)
            if n <= 8 or p.kind not in ("kmalloc", "cache", "page") or p.order:
                for _ in range(min(n, 200)):
                    self._expire(rng.expovariate(1.0 / life), self.free, self.alloc_profile(p))
                continue
            # older objects in a few groups, each freed at once
            for part in _split(n, 8, rng):
                self._expire(rng.expovariate(1.0 / life), self.free, self.alloc_profile(p, part))
        for _ in range(4):
            self._short_process(rng)
        for _ in range(60):
            self._expire(rng.expovariate(1 / 30.0), self.nl_close, self.nl_sock())
        for _ in range(100):
            self._expire(rng.expovariate(1 / 5.0), self.slab.kfree, self._cache_alloc("filp", "filp"))

    def _readahead(self, rng) -> None:
        n = rng.choice((4, 8, 16, 32))
        pages = self._pages("readahead", n)
        life = rng.expovariate(1 / 90.0)
        self._expire(life, self.pa.free_pages, pages)
        if rng.random() < n / 64:
            self._expire(life, self.slab.kfree, self._cache_alloc("xas", "radix_tree_node"))

    def _filemap(self, rng) -> None:
        page = self.pa.alloc_pages(self.site("filemap"), 0)
        life = rng.expovariate(1 / 60.0)
        self._expire(life, self.pa.free_pages, page)
        if rng.random() < 0.25:
            self._expire(life, self.slab.kfree, self._cache_alloc("bh", "buffer_head"))

    def _dentries(self, rng, n: int, life: float) -> None:
        b1 = self.bulk(self.site("dentry"), "dentry", n)
        b2 = self.bulk(self.site("inode"), "ext4_inode_cache", n)
        self._expire(life, self.slab.kfree, b1)
        self._expire(life * 0.9, self.slab.kfree, b2)
        if rng.random() < 0.3:
            self._expire(life, self.slab.kfree, self.slab.kmalloc(self.site("dname"), 48))
        if rng.random() < 0.5:
            self._expire(life, self.slab.kfree, self.bulk(self.site("es"), "ext4_extent_status",
                                                          max(1, n // 4)))

    def _short_process(self, rng) -> None:
        # the command it runs: nothing shows it, but it stays drawn so that
        # a seed keeps the history it has (the lessons print it)
        rng.choice(("sh", "sleep", "cat", "grep", "awk", "systemctl", "ps", "date", "sed"))
        rss = int(lognormal(rng, 60, 0.8, 8, 4000))
        proc = self.tasks.new_process(rss=rss, nvma=int(lognormal(rng, 28, 0.3, 10, 90)))
        self._expire(rng.expovariate(1 / 2.0), self.tasks.exit_process, proc)

    # ------------------------------------------------------------------ run time
    def step(self, t0: int, t1: int) -> None:
        """The kernel's time went on over [t0, t1) (its timer hook): with a
        kmem tracepoint in use, simulate it now, else owe it."""
        if t1 <= t0:
            return
        if self.trace.traced():
            self.settle()
            self._run(t0, t1 - t0)
        else:
            self.owed += t1 - t0

    def settle(self) -> None:
        """Simulate the time owed (its last OWED_MAX_NS), untraced."""
        owed = min(self.owed, OWED_MAX_NS)
        self.owed = 0
        while owed > 0:
            span = min(owed, OWED_STEP_NS)
            self._run(None, span)
            owed -= span

    def _run(self, t0: int | None, span: int) -> None:
        """Simulate ``span`` ns from kernel time ``t0`` (None: owed time,
        nothing traced): new allocations by rate, then expirations.  The
        workload keeps its own clock (``now``), advanced by ``span``: time
        the kernel skips (an idle mount looked at after a long while) is
        time the machine did nothing, so nothing due in it is freed
        either."""
        dt = span / NS
        self.moments.begin(self.now, t0, span)
        t1 = self.now + span
        rng = self.rng
        self.steps += 1
        # generic call sites
        if self.hot:
            n = _poisson(rng, self.hot_cum[-1] * dt)
            if n:
                hot = self.hot
                picks = rng.choices(range(len(hot)), cum_weights=self.hot_cum, k=n)
                expire = self._expire
                free = self.free
                alloc = self.alloc_profile
                moment = self._moment
                for i in picks:
                    p, _rate, life = hot[i]
                    # (an atomic one comes from an interrupt: on whatever runs)
                    moment(None, p.tag if p.gfp == GFP_KERNEL else None)
                    expire(rng.expovariate(1.0 / life), free, alloc(p))
        moment = self._moment
        # processes
        site = self.site
        for _ in range(_poisson(rng, 2.0 * dt)):
            moment(None, site("task"))
            self._short_process(rng)
        # page cache
        for _ in range(_poisson(rng, 3.3 * dt)):
            moment(None, site("readahead"))
            self._readahead(rng)
        for _ in range(_poisson(rng, 25.0 * dt)):
            moment(None, site("filemap"))
            self._filemap(rng)
        for _ in range(_poisson(rng, 0.6 * dt)):
            moment(None, site("dentry"))
            self._dentries(rng, 16, life=lognormal(rng, 600, 1.0, 5, 7200))
        # network: packets in flight and their buffers
        for _ in range(_poisson(rng, SKB_RATE * dt)):
            moment(None, site("skb"))
            self._skb(rng)
        for _ in range(_poisson(rng, 2.0 * dt)):
            moment(None, site("sk"))
            self._expire(rng.expovariate(1 / 30.0), self.nl_close, self.nl_sock())
        # path lookups, open files
        for _ in range(_poisson(rng, GETNAME_RATE * dt)):
            moment(None, site("getname"))
            self._expire(rng.expovariate(1 / 0.02), self.slab.kfree, self._cache_alloc("getname", "names_cache"))
        for _ in range(_poisson(rng, 20.0 * dt)):
            moment(None, site("filp"))
            self._expire(rng.expovariate(1 / 5.0), self.slab.kfree, self._cache_alloc("filp", "filp"))
        # events
        if t1 >= self.next_burst:
            moment(None, site("dentry"))
            self._burst(rng)
        if "ctagmod" in self.modules and t1 >= self.next_ctagmod_tick:
            moment()
            self._ctagmod_tick()
        self.now = t1
        heap = self.heap
        pop = heapq.heappop
        while heap and heap[0][0] < t1:
            _t, _s, fn, obj = pop(heap)
            moment(_t)
            fn(obj)
        self.moments.end()
        self.op_time = t1

    def _skb(self, rng) -> None:
        s = self.slab
        skb = s.kmem_cache_alloc(self.site("skb"), self.caches["skbuff_head_cache"], node=0)
        if rng.random() < 0.4:
            data = s.kmem_cache_alloc(self.site("skb_small"), self.caches["skbuff_small_head"], node=0)
        else:
            data = s.kmalloc(self.site("skb_data"), rng.choice((1024, 2048, 2048, 4096)), node=0)
        life = rng.expovariate(1 / 0.03)
        self._expire(life, s.kfree, skb)
        self._expire(life, s.kfree, data)

    def _burst(self, rng) -> None:
        """Something walks a tree (updatedb, a build, a backup)."""
        self.next_burst = self.now + int(lognormal(rng, 90, 0.6, 20, 600) * NS)
        life = lognormal(rng, 400, 0.8, 30, 3600)
        for _ in range(int(lognormal(rng, 40, 0.8, 4, 250))):
            self._dentries(rng, 16, life=life * rng.random())
        for _ in range(int(lognormal(rng, 30, 0.8, 2, 200))):
            self._readahead(rng)

    def _ctagmod_tick(self) -> None:
        """ctagmod's timer allocates without an alloc_hooks() annotation."""
        self.next_ctagmod_tick = self.now + 10 * NS
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

    def run_for(self, ns: int, step_ns: int = 20_000_000) -> None:
        """Drive the workload directly (tests, benchmarks)."""
        self.settle()
        while ns > 0:
            self._run(None, min(ns, step_ns))
            ns -= step_ns

    def live_bytes(self) -> int:
        return sum(t.bytes for t in self.at.iter_tags())


def _split(n: int, parts: int, rng) -> list:
    cuts = sorted(rng.randrange(1, n) for _ in range(parts - 1))
    out = []
    prev = 0
    for c in cuts + [n]:
        if c > prev:
            out.append(c - prev)
        prev = c
    return out


def _poisson(rng, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, int(rng.gauss(lam, math.sqrt(lam)) + 0.5))
    limit = math.exp(-lam)
    k = 0
    p = rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


# ---------------------------------------------------------------------- start
def alloc_workload_init(kernel) -> None:
    """After alloc_tag_init: the simulated allocators replay boot and start
    their workload; then the sysctl values from the command line apply."""
    at = kernel.alloc_tag
    if at is None:
        return                  # built without CONFIG_MEM_ALLOC_PROFILING
    start(kernel)
    do_sysctl_args(at)


def start(kernel) -> AllocWorkload:
    """Create the allocators, replay boot and hook the workload to time."""
    at = kernel.alloc_tag
    ram_pages = DEFAULT_RAM >> PAGE_SHIFT
    kernel.page_alloc = PageAllocator(kernel, at, ram_pages)
    kernel.slab = SlabAllocator(kernel, at, kernel.page_alloc)
    kernel.vmalloc = Vmalloc(kernel, at, kernel.page_alloc, kernel.slab)
    kernel.percpu = Percpu(kernel, at)
    wl = AllocWorkload(kernel)
    kernel.alloc_workload = wl
    boot(wl)
    wl.keep_runtime_sites()
    kernel.add_timer_hook(wl.step)
    return wl

