"""What the simulated machine allocates: the memory workload behind
/proc/allocinfo.

The machine is a small KVM guest (default 16 GiB, ``kernel.nr_cpus`` CPUs,
two virtio disks, ext4 root) with a few services.  Boot leaves the long-lived
state a running system has:

* page extensions for every memory section (``alloc_page_ext``), the big
  boot hash tables (``alloc_large_system_hash``), block-mq request pools,
  the conntrack hash, sysfs/kernfs nodes, kernel threads and user processes;
* a small footprint at a large part of the kernel's other call sites, chosen
  per site from the site's allocator (kmalloc, named caches, pages, vmalloc,
  kvmalloc, percpu) with a heavy-tailed count;
* the modules loaded by the distribution (and the ``ctagmod`` test module of
  the allocation-profiling documentation, 1010 pages at its init).

Then, driven by the kernel's timer hooks, it keeps allocating and freeing:
processes fork and exit (task structs, vmalloc'ed stacks, mm, VMAs, page
tables, anonymous pages), the page cache fills through readahead and
``__filemap_get_folio`` and is reclaimed, network buffers come and go,
netlink sockets bind and close (their rhashtable grows and shrinks, charged
to the tag saved at its init), dentries and inodes are created in bursts,
and a few hundred other call sites churn.  Every live object expires at a
time drawn when it is allocated; all choices come from the kernel's
per-subsystem RNGs, so a given seed replays the same history.

Modules named in ``modules-load=`` on the command line are loaded after the
boot set, as systemd-modules-load would.

Public entry points: :func:`start` (called from ``alloc_tag_init``),
:func:`load_module` / :func:`unload_module`, and
``kernel.alloc_workload.run_for(ns)`` for tests and benchmarks.
"""

from __future__ import annotations

import heapq
import math

from ..lib.rhashtable import rhashtable_init
from .alloc_tag import AllocTag, _add_taint, do_sysctl_args, load_tag_table, module_load, module_unload
from .page_alloc import PAGE_SHIFT, PAGE_SIZE, Page, PageAllocator, get_order
from .percpu import Percpu, PcpuObj
from .slub import SLAB_HWCACHE_ALIGN, SLAB_RECLAIM_ACCOUNT, BulkObj, Obj, SlabAllocator
from .vmalloc import VmArea, Vmalloc

GiB = 1 << 30
DEFAULT_RAM = 16 * GiB
SECTION_SIZE = 128 << 20            # x86-64 SECTION_SIZE_BITS = 27
PAGE_EXT_SIZE = 16                  # struct page_ext flags + codetag_ref

NS = 1_000_000_000

# the most one ordinary call site holds in the background footprint
BACKGROUND_MAX_BYTES = 1536 << 10

# modules a distribution loads on this guest at boot (in load order)
BOOT_MODULES = ("kvm", "kvm_intel", "overlay", "bridge", "veth", "tun", "xfs", "ctagmod")

CTAGMOD_TAG = ("drivers/staging/ctagmod/ctagmod.c", 20, "ctagmod_start", "alloc_pages")
CTAGMOD_PAGES = 1010

# named caches the workload uses: name -> (object size, flags)
CACHES = {
    "task_struct": (9664, SLAB_HWCACHE_ALIGN),
    "mm_struct": (1344, SLAB_HWCACHE_ALIGN),
    "vm_area_struct": (176, 0),
    "vma_lock": (40, 0),
    "anon_vma": (104, 0),
    "anon_vma_chain": (64, 0),
    "sighand_cache": (2112, SLAB_HWCACHE_ALIGN),
    "signal_cache": (1152, SLAB_HWCACHE_ALIGN),
    "files_cache": (704, SLAB_HWCACHE_ALIGN),
    "fs_cache": (56, SLAB_HWCACHE_ALIGN),
    "cred_jar": (184, SLAB_HWCACHE_ALIGN),
    "pid": (136, SLAB_HWCACHE_ALIGN),
    "dentry": (192, SLAB_RECLAIM_ACCOUNT),
    "ext4_inode_cache": (1184, SLAB_RECLAIM_ACCOUNT),
    "kernfs_node_cache": (128, 0),
    "radix_tree_node": (576, SLAB_RECLAIM_ACCOUNT),
    "skbuff_head_cache": (232, SLAB_HWCACHE_ALIGN),
    "skbuff_small_head": (704, 0),
    "filp": (232, SLAB_HWCACHE_ALIGN),
    "names_cache": (4096, SLAB_HWCACHE_ALIGN),
    "buffer_head": (104, SLAB_RECLAIM_ACCOUNT),
    "ext4_extent_status": (40, SLAB_RECLAIM_ACCOUNT),
}

# (file, function[, line]) of the sites the scripted activities use
SITES = {
    "page_ext": ("mm/page_ext.c", "alloc_page_ext", 271),
    "sys_hash": ("mm/mm_init.c", "alloc_large_system_hash", 2439),
    "blk_rqs": ("block/blk-mq.c", "blk_mq_alloc_rqs"),
    "blk_rq_map": ("block/blk-mq.c", "blk_mq_alloc_rq_map", 3493),
    "blk_rq_map2": ("block/blk-mq.c", "blk_mq_alloc_rq_map", 3499),
    "ct_hash": ("net/netfilter/nf_conntrack_core.c", "nf_ct_alloc_hashtable"),
    "kernfs": ("fs/kernfs/dir.c", "__kernfs_new_node"),
    "task": ("kernel/fork.c", "alloc_task_struct_node"),
    "stack": ("kernel/fork.c", "alloc_thread_stack_node"),
    "dup_mm": ("kernel/fork.c", "dup_mm"),
    "mm_cid": ("kernel/fork.c", "mm_init"),
    "vma_dup": ("kernel/fork.c", "vm_area_dup"),
    "vma_lock": ("kernel/fork.c", "vma_lock_alloc"),
    "sighand": ("kernel/fork.c", "copy_sighand"),
    "signal": ("kernel/fork.c", "copy_signal"),
    "pid": ("kernel/pid.c", "alloc_pid"),
    "cred": ("kernel/cred.c", "prepare_creds"),
    "files": ("fs/file.c", "dup_fd"),
    "fs": ("fs/fs_struct.c", "copy_fs_struct"),
    "anon_vma": ("mm/rmap.c", "anon_vma_alloc"),
    "avc": ("mm/rmap.c", "anon_vma_chain_alloc"),
    "pgd": ("arch/x86/mm/pgtable.c", "_pgd_alloc"),
    "pte": ("arch/x86/mm/pgtable.c", "pte_alloc_one"),
    "anon": ("mm/memory.c", "alloc_anon_folio"),
    "filemap": ("mm/filemap.c", "__filemap_get_folio"),
    "readahead": ("mm/readahead.c", "page_cache_ra_unbounded"),
    "xas": ("lib/xarray.c", "xas_alloc"),
    "dentry": ("fs/dcache.c", "__d_alloc", 1650),
    "dname": ("fs/dcache.c", "__d_alloc", 1667),
    "inode": ("fs/ext4/super.c", "ext4_alloc_inode"),
    "es": ("fs/ext4/extents_status.c", "__es_alloc_extent", 485),
    "bh": ("fs/buffer.c", "alloc_buffer_head"),
    "filp": ("fs/file_table.c", "alloc_empty_file"),
    "getname": ("fs/namei.c", "getname_flags", 144),
    "skb": ("net/core/skbuff.c", "__alloc_skb"),
    "skb_data": ("net/core/skbuff.c", "kmalloc_reserve", 620),
    "skb_small": ("net/core/skbuff.c", "kmalloc_reserve", 598),
    "frag": ("net/core/sock.c", "skb_page_frag_refill", 3075),
    "sk": ("net/core/sock.c", "sk_prot_alloc", 2179),
    "nl_init": ("net/netlink/af_netlink.c", "netlink_proto_init", 2940),
    "ipc_ids": ("ipc/util.c", "ipc_init_ids"),
    "kthread": ("kernel/kthread.c", "set_kthread_struct"),
    "worker": ("kernel/workqueue.c", "alloc_worker"),
}


_KINDS: dict[str, str] = {}


def _callee_kind(callee: str) -> str:
    k = _KINDS.get(callee)
    if k is None:
        k = _KINDS[callee] = _kind(callee)
    return k


def _kind(c: str) -> str:
    if "percpu" in c or c.endswith("pcpu_stats"):
        return "percpu"
    if c.startswith("kv"):
        return "kvmalloc"
    if any(x in c for x in ("vmalloc", "vzalloc", "vcalloc", "vrealloc")):
        return "vmalloc"
    if any(x in c for x in ("page", "folio", "pte_alloc", "pmd_alloc", "pud_alloc", "pagetable")):
        return "page"
    if "kmem_cache" in c or c in ("alloc_inode_sb", "__getname", "mempool_alloc"):
        return "cache"
    return "kmalloc"


def _lognormal(rng, median: float, sigma: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, median * math.exp(rng.gauss(0.0, sigma))))


class SiteProfile:
    """How the workload uses one call site: allocator kind and object size."""

    __slots__ = ("tag", "kind", "size", "order")

    def __init__(self, tag: AllocTag, rng):
        self.tag = tag
        kind = _callee_kind(tag.callee)
        self.kind = kind
        self.order = 0
        if kind == "kmalloc":
            self.size = int(_lognormal(rng, 96, 1.1, 8, 8192))
            if rng.random() < 0.02:
                self.size = int(_lognormal(rng, 16384, 0.8, 8193, 131072))
        elif kind == "cache":
            self.size = int(_lognormal(rng, 160, 0.9, 16, 4096))
        elif kind == "kvmalloc":
            self.size = int(_lognormal(rng, 2048, 1.6, 64, 1 << 21))
        elif kind == "vmalloc":
            self.size = int(_lognormal(rng, 32768, 1.2, 4096, 4 << 20))
        elif kind == "percpu":
            self.size = int(_lognormal(rng, 24, 1.0, 4, 2048))
        else:
            if tag.callee in ("alloc_page", "get_zeroed_page", "__get_free_page", "__dev_alloc_page"):
                self.order = 0
            else:
                self.order = rng.choice((0, 0, 0, 0, 0, 1, 2, 3))
            self.size = PAGE_SIZE << self.order


class Process:
    """The memory of one task (and its mm, if it has one)."""

    __slots__ = ("pid", "comm", "objs", "stack", "threads", "kthread")

    def __init__(self, pid: int, comm: str, kthread: bool):
        self.pid = pid
        self.comm = comm
        self.objs: list = []
        self.stack = None
        self.threads: list = []
        self.kthread = kthread


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
        self.now = 0
        self._seq = 0
        self.heap: list = []                 # (expiry_ns, seq, free_fn, obj)
        self.sites: dict[str, AllocTag] = {}
        self.caches = {name: self.slab.kmem_cache_create(name, size, flags)
                       for name, (size, flags) in CACHES.items()}
        self.generic_caches: dict[int, object] = {}
        self.profiles: list[SiteProfile] = []
        self.hot: list[tuple] = []           # (profile, rate, mean lifetime s)
        self.hot_cum: list[float] = []
        self.hot_rate = 0.0
        self.processes: dict[int, Process] = {}
        self.next_pid = 300
        self.cached_stacks: list = []
        self.modules: dict[str, list] = {}   # loaded module -> objects it holds
        self.netlink_tables: list = []
        self.nl_route = None
        self.nl_socks: list = []
        self.missing_annotation_obj = None
        self.next_ctagmod_tick = 10 * NS
        self.next_burst = 45 * NS
        self.steps = 0
        self.ops = 0

    # ------------------------------------------------------------------ helpers
    def site(self, key: str) -> AllocTag | None:
        t = self.sites.get(key)
        if t is None and key not in self.sites:
            spec = SITES[key]
            try:
                t = self.at.find(spec[0], spec[1], spec[2] if len(spec) > 2 else None)
            except KeyError:
                t = None
            self.sites[key] = t
        return t

    def _expire(self, lifetime_s: float, fn, obj) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (self.now + int(lifetime_s * NS), self._seq, fn, obj))

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
            if kind == "kmalloc":
                if p.size > 8192:
                    if n == 1:
                        return self.pa.alloc_pages_noprof(get_order(p.size))
                    return [self.pa.alloc_pages_noprof(get_order(p.size)) for _ in range(n)]
                if n == 1:
                    return self.slab.kmalloc_noprof(p.size)
                return self.slab.kmalloc_bulk_noprof(p.size, n)
            if kind == "cache":
                c = self._generic_cache(p.size)
                if n == 1:
                    return self.slab.kmem_cache_alloc_noprof(c)
                return self.slab.kmem_cache_alloc_bulk_noprof(c, n)
            if kind == "page":
                if p.order == 0:
                    return self.pa.alloc_pages_bulk_noprof(n) if n > 1 else self.pa.alloc_pages_noprof(0)
                if n == 1:
                    return self.pa.alloc_pages_noprof(p.order)
                return [self.pa.alloc_pages_noprof(p.order) for _ in range(n)]
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
            self.exit_process(obj)
        elif callable(obj):
            obj()

    def _cache_alloc(self, key: str, cache: str, node=None):
        return self.slab.kmem_cache_alloc(self.site(key), self.caches[cache], node=node)

    # ------------------------------------------------------------------ boot
    def boot(self) -> None:
        self.slab.set_tags()
        self.vm.set_tags()
        for key in SITES:
            self.site(key)
        self.boot_mm()
        self.boot_static()
        self.boot_background()
        self.boot_tasks()
        self.boot_netlink()
        for name in BOOT_MODULES + self.modules_load_param():
            if name not in self.modules:
                load_module(self.kernel, name)
        # the running system as it is when somebody first looks at it
        self.prepopulate()
        self.vm.fragmentation = 0.3
        self.at.warn_task = ("kworker/u%d:1" % (2 * self.nr_cpus), 57, 0)

    def modules_load_param(self) -> tuple:
        """``modules-load=a,b`` / ``rd.modules-load=``: the kernel passes them
        to user space, where systemd-modules-load loads the modules."""
        known = load_tag_table(self.at.version)[1]
        names = []
        for key, val in self.kernel.cmdline.args:
            if key in ("modules-load", "rd.modules-load") and val:
                for name in val.replace(" ", ",").split(","):
                    name = name.strip().replace("-", "_")
                    if (name in known or name == "ctagmod") and name not in names:
                        names.append(name)
        return tuple(names)

    def boot_mm(self) -> None:
        """Page extensions, hash tables: before the buddy allocator is busy."""
        at = self.at
        tag = self.site("page_ext")
        self.page_ext = []
        if at.support and not at.compressed and tag is not None:
            table = PAGE_EXT_SIZE * (SECTION_SIZE // PAGE_SIZE)
            old = at.current
            at.current = tag
            try:
                for _ in range(self.ram // SECTION_SIZE):
                    self.page_ext.append(self.pa.alloc_pages_exact_noprof(table))
            finally:
                at.current = old
        # dentry, inode, mount, mountpoint, TCP, UDP ... hash tables (hashdist: vmalloc)
        tag = self.site("sys_hash")
        scale = max(1, self.ram // GiB)
        self.sys_hash = []
        for entries_per_gib, esize in ((65536, 8), (32768, 8), (2048, 16), (2048, 16),
                                       (8192, 8), (8192, 16), (4096, 16), (4096, 16), (1024, 16)):
            n = 1 << (entries_per_gib * scale - 1).bit_length()
            self.sys_hash.append(self.vm.vmalloc(tag, n * esize))

    def boot_static(self) -> None:
        """Long-lived tables of drivers and subsystems."""
        slab = self.slab
        pa = self.pa
        # block-mq: two virtio disks, one hardware queue per CPU, plus the
        # scheduler tags of mq-deadline; request pools of up to order-4 pages
        rqs, rq_map, rq_map2 = self.site("blk_rqs"), self.site("blk_rq_map"), self.site("blk_rq_map2")
        self.blk = []
        for _disk in range(2):
            for _q in range(self.nr_cpus):
                for depth in (256, 512):
                    self.blk.append(slab.kmalloc(rq_map, depth * 8, node=0))
                    self.blk.append(slab.kmalloc(rq_map2, depth * 8, node=0))
                    left = depth * 448
                    order = 4
                    while left > 0:
                        while order and left < (PAGE_SIZE << (order - 1)):
                            order -= 1
                        self.blk.append(pa.alloc_pages(rqs, order))
                        left -= PAGE_SIZE << order
        # conntrack hash (kvcalloc, large kmalloc at boot)
        ct = self.site("ct_hash")
        buckets = max(16384, min(262144, self.ram // 16384))
        self.ct = [self.vm.kvmalloc(ct, buckets * 8), self.vm.kvmalloc(ct, 1024 * 8)]
        # sysfs and friends
        kn = self.site("kernfs")
        self.kernfs = []
        n = 15000 + 1500 * self.nr_cpus
        for _ in range(8):
            self.kernfs.append(self._bulk(kn, "kernfs_node_cache", n // 8))
        self.kernfs_dyn: list = []

    def _bulk(self, tag, cache: str, n: int):
        at = self.at
        old = at.current
        at.current = tag
        try:
            return self.slab.kmem_cache_alloc_bulk_noprof(self.caches[cache], n)
        finally:
            at.current = old

    def boot_background(self) -> None:
        """A footprint at a good part of the kernel's call sites, and the
        subset of them that keeps allocating at run time."""
        at = self.at
        rng = self.kernel.subsystem_rng("alloc_workload:sites")
        special = {id(t) for t in self.sites.values() if t is not None}
        # tags the allocators charge by themselves
        for t in (self.slab.tag_slab_page, self.slab.tag_slab_page_node, self.slab.tag_obj_exts,
                  self.vm.tag_vmap_area, self.vm.tag_vm_struct):
            if t is not None:
                special.add(id(t))
        for key in ("page_ext", "sys_hash"):
            spec = SITES[key]
            special.update(id(t) for t in self.at.find_all(spec[0], spec[1]))
        self.background = []
        hot = []
        for tag in list(at.iter_tags()) if at.cttype is not None else \
                [t for ts in at._index.values() for t in ts]:
            if tag.modname or id(tag) in special:
                continue
            p = SiteProfile(tag, rng)
            self.profiles.append(p)
            if rng.random() < 0.55:
                n = int(_lognormal(rng, 2.0, 1.5, 1, 4000))
                if p.kind in ("vmalloc", "kvmalloc"):
                    n = min(n, 4)
                n = max(1, min(n, BACKGROUND_MAX_BYTES // p.size))
                self.background.append(self.alloc_profile(p, n))
            if rng.random() < 0.06:
                rate = _lognormal(rng, 1.5, 1.3, 0.05, 60.0)
                life = _lognormal(rng, 8.0, 1.5, 0.05, 600.0)
                if p.kind in ("vmalloc", "kvmalloc", "page"):
                    rate = min(rate, 2.0)
                life = min(life, 2000.0 / rate,          # at most ~2000 live objects
                           BACKGROUND_MAX_BYTES / p.size / rate)
                hot.append((p, rate, life))
        self.hot = hot
        total = 0.0
        self.hot_cum = []
        for _p, rate, _life in hot:
            total += rate
            self.hot_cum.append(total)
        self.hot_rate = total

    # ------------------------------------------------------------------ tasks
    def new_process(self, comm: str, kthread: bool = False, rss: int = 0, nvma: int = 0,
                    threads: int = 1) -> Process:
        """``copy_process`` + ``dup_mm`` (+ the first page faults)."""
        s = self.slab
        pid = self.next_pid
        self.next_pid += 1 + threads
        proc = Process(pid, comm, kthread)
        objs = proc.objs
        for _t in range(threads):
            objs.append(self._cache_alloc("task", "task_struct", node=0))
            objs.append(self._stack())
            objs.append(self._cache_alloc("pid", "pid"))
            objs.append(self._cache_alloc("cred", "cred_jar"))
        if kthread:
            objs.append(s.kmalloc(self.site("kthread"), 96))
            self.processes[pid] = proc
            return proc
        objs.append(self._cache_alloc("files", "files_cache"))
        objs.append(self._cache_alloc("fs", "fs_cache"))
        objs.append(self._cache_alloc("sighand", "sighand_cache"))
        objs.append(self._cache_alloc("signal", "signal_cache"))
        objs.append(self._cache_alloc("dup_mm", "mm_struct"))
        objs.append(self.pcpu.alloc(self.site("mm_cid"), 16))
        objs.append(self.pa.alloc_pages(self.site("pgd"), 1))
        vma = self.caches["vm_area_struct"]
        lock = self.caches["vma_lock"]
        t_vma, t_lock = self.site("vma_dup"), self.site("vma_lock")
        for _ in range(nvma):
            objs.append(s.kmem_cache_alloc(t_vma, vma))
            objs.append(s.kmem_cache_alloc(t_lock, lock))
        for _ in range(max(1, nvma // 3)):
            objs.append(self._cache_alloc("anon_vma", "anon_vma"))
            objs.append(self._cache_alloc("avc", "anon_vma_chain"))
        ptes = 4 + rss // 512 + nvma // 8
        objs.append(self._pages("pte", ptes))
        if rss:
            objs.append(self._pages("anon", rss))
        self.processes[pid] = proc
        return proc

    def _pages(self, key: str, n: int) -> Page:
        at = self.at
        old = at.current
        at.current = self.site(key)
        try:
            return self.pa.alloc_pages_bulk_noprof(n)
        finally:
            at.current = old

    def _stack(self):
        if self.cached_stacks:
            return self.cached_stacks.pop()
        return self.vm.vmalloc(self.site("stack"), 16384)

    def exit_process(self, proc: Process) -> None:
        """``do_exit`` + ``free_task``: stacks go back to the per-CPU cache."""
        self.processes.pop(proc.pid, None)
        cache_max = 2 * self.nr_cpus
        for o in proc.objs:
            if isinstance(o, VmArea) and len(self.cached_stacks) < cache_max and o.nr_pages == 4:
                self.cached_stacks.append(o)
            else:
                self.free(o)
        proc.objs = []

    def boot_tasks(self) -> None:
        rng = self.rng
        for c in range(self.nr_cpus):
            for comm in ("cpuhp/%d", "migration/%d", "ksoftirqd/%d", "kworker/%d:0",
                         "kworker/%d:0H", "idle_inject/%d", "kworker/%d:1"):
                self.new_process(comm % c, kthread=True)
        for i in range(72):
            self.new_process("kworker/u%d:%d" % (2 * self.nr_cpus, i), kthread=True)
        services = (("systemd", 420, 110, 1), ("systemd-journal", 380, 60, 1),
                    ("systemd-udevd", 220, 50, 1), ("systemd-network", 110, 50, 1),
                    ("systemd-resolve", 150, 55, 1), ("systemd-logind", 100, 50, 1),
                    ("dbus-daemon", 90, 45, 1), ("cron", 40, 40, 1), ("sshd", 120, 60, 1),
                    ("agetty", 30, 30, 1), ("rsyslogd", 160, 70, 4), ("chronyd", 50, 40, 1),
                    ("containerd", 900, 240, 12), ("bash", 90, 45, 1), ("tmux: server", 140, 50, 1))
        for comm, rss, nvma, threads in services:
            rss = int(_lognormal(rng, rss, 0.3, 16, 200000))
            self.new_process(comm, rss=rss, nvma=nvma, threads=threads)

    # ------------------------------------------------------------------ netlink
    def boot_netlink(self) -> None:
        tag = self.site("nl_init")
        if tag is None:
            return
        for _proto in range(32):                 # MAX_LINKS
            self.netlink_tables.append(rhashtable_init(self.kernel, tag, automatic_shrinking=True))
        self.nl_route = self.netlink_tables[0]
        ipc = self.site("ipc_ids")
        if ipc is not None:
            for _ in range(3):                   # sem, msg, shm ids of init_ipc_ns
                self.netlink_tables.append(rhashtable_init(self.kernel, ipc, automatic_shrinking=True))
        for _ in range(40):                      # daemons' long-lived sockets
            self.nl_socks.append(self._nl_sock())

    def _nl_sock(self):
        obj = self.slab.kmalloc(self.site("sk"), 1000)
        if self.nl_route is not None:
            self.nl_route.insert()
        return obj

    def _nl_close(self, obj) -> None:
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
            self._dentries(rng, 16, life=_lognormal(rng, 600, 1.0, 5, 7200))
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
            self._expire(rng.expovariate(1 / 30.0), self._nl_close, self._nl_sock())
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
        b1 = self._bulk(self.site("dentry"), "dentry", n)
        b2 = self._bulk(self.site("inode"), "ext4_inode_cache", n)
        self._expire(life, self.slab.kfree, b1)
        self._expire(life * 0.9, self.slab.kfree, b2)
        if rng.random() < 0.3:
            self._expire(life, self.slab.kfree, self.slab.kmalloc(self.site("dname"), 48))
        if rng.random() < 0.5:
            self._expire(life, self.slab.kfree, self._bulk(self.site("es"), "ext4_extent_status",
                                                          max(1, n // 4)))

    def _short_process(self, rng) -> None:
        comm = rng.choice(("sh", "sleep", "cat", "grep", "awk", "systemctl", "ps", "date", "sed"))
        rss = int(_lognormal(rng, 60, 0.8, 8, 4000))
        proc = self.new_process(comm, rss=rss, nvma=int(_lognormal(rng, 28, 0.3, 10, 90)))
        self._expire(rng.expovariate(1 / 2.0), self.exit_process, proc)

    # ------------------------------------------------------------------ run time
    def step(self, t0: int, t1: int) -> None:
        """Simulate the interval [t0, t1): new allocations by rate, then
        expirations.  The workload keeps its own clock (``now``), advanced
        by the length of each interval: time the kernel skips (an idle
        mount looked at after a long while) is time the machine did
        nothing, so nothing due in it is freed either."""
        if t1 <= t0:
            return
        dt = (t1 - t0) / NS
        t1 = self.now + (t1 - t0)
        rng = self.rng
        self.steps += 1
        # generic call sites
        if self.hot:
            n = _poisson(rng, self.hot_rate * dt)
            if n:
                hot = self.hot
                picks = rng.choices(range(len(hot)), cum_weights=self.hot_cum, k=n)
                expire = self._expire
                free = self.free
                alloc = self.alloc_profile
                for i in picks:
                    p, _rate, life = hot[i]
                    expire(rng.expovariate(1.0 / life), free, alloc(p))
        # processes
        for _ in range(_poisson(rng, 2.0 * dt)):
            self._short_process(rng)
        # page cache
        for _ in range(_poisson(rng, 3.3 * dt)):
            self._readahead(rng)
        for _ in range(_poisson(rng, 25.0 * dt)):
            self._filemap(rng)
        for _ in range(_poisson(rng, 0.6 * dt)):
            self._dentries(rng, 16, life=_lognormal(rng, 600, 1.0, 5, 7200))
        # network: packets in flight and their buffers
        for _ in range(_poisson(rng, 300.0 * dt)):
            self._skb(rng)
        for _ in range(_poisson(rng, 2.0 * dt)):
            self._expire(rng.expovariate(1 / 30.0), self._nl_close, self._nl_sock())
        # path lookups, open files
        for _ in range(_poisson(rng, 40.0 * dt)):
            self._expire(rng.expovariate(1 / 0.02), self.slab.kfree, self._cache_alloc("getname", "names_cache"))
        for _ in range(_poisson(rng, 20.0 * dt)):
            self._expire(rng.expovariate(1 / 5.0), self.slab.kfree, self._cache_alloc("filp", "filp"))
        # events
        if t1 >= self.next_burst:
            self._burst(rng)
        if "ctagmod" in self.modules and t1 >= self.next_ctagmod_tick:
            self._ctagmod_tick()
        self.now = t1
        heap = self.heap
        pop = heapq.heappop
        while heap and heap[0][0] < t1:
            _t, _s, fn, obj = pop(heap)
            fn(obj)

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
        self.next_burst = self.now + int(_lognormal(rng, 90, 0.6, 20, 600) * NS)
        life = _lognormal(rng, 400, 0.8, 30, 3600)
        for _ in range(int(_lognormal(rng, 40, 0.8, 4, 250))):
            self._dentries(rng, 16, life=life * rng.random())
        for _ in range(int(_lognormal(rng, 30, 0.8, 2, 200))):
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
        while ns > 0:
            self.step(0, min(ns, step_ns))
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


# ---------------------------------------------------------------------- modules
def _module_footprint(wl: AllocWorkload, name: str, tags: list) -> list:
    rng = wl.kernel.subsystem_rng("alloc_workload:module:" + name)
    objs = []
    if name == "ctagmod":
        at = wl.at
        old = at.current
        at.current = tags[0]
        try:
            objs.append(wl.pa.alloc_pages_bulk_noprof(CTAGMOD_PAGES))
        finally:
            at.current = old
        return objs
    for t in tags:
        p = SiteProfile(t, rng)
        if rng.random() < 0.4:
            n = int(_lognormal(rng, 2.0, 1.2, 1, 500))
            if p.kind in ("vmalloc", "kvmalloc", "page") and p.order:
                n = min(n, 4)
            objs.append(wl.alloc_profile(p, n))
    return objs


def load_module(kernel, name: str) -> list:
    """Load a module: its tags appear in /proc/allocinfo (``[name]``) and its
    init allocates at them.  Returns the module's tags."""
    at = kernel.alloc_tag
    wl: AllocWorkload = kernel.alloc_workload
    if name == "ctagmod":
        f, line, func, callee = CTAGMOD_TAG
        tags = module_load(at, name, [AllocTag(f, line, func, name, callee)])
    else:
        tags = module_load(at, name)
    wl.modules[name] = _module_footprint(wl, name, tags)
    if name == "ctagmod":
        _taint(kernel, "C")
    return tags


def unload_module(kernel, name: str, leak: bool = False) -> bool:
    """Unload a module; its exit frees what its init allocated unless
    ``leak``.  Returns False when allocations were still charged to it."""
    wl: AllocWorkload = kernel.alloc_workload
    objs = wl.modules.pop(name, [])
    if name == "ctagmod" and wl.missing_annotation_obj is not None:
        wl.slab.kfree(wl.missing_annotation_obj)
        wl.missing_annotation_obj = None
    if not leak:
        for o in objs:
            wl.free(o)
    return module_unload(kernel.alloc_tag, name)


def _taint(kernel, flag: str) -> None:
    _add_taint(kernel, flag)


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
    wl.boot()
    kernel.add_timer_hook(wl.step)
    return wl

