"""The kmem tracepoints of the allocators (include/trace/events/kmem.h).

The slab and page allocators fire ``kmalloc``, ``kmem_cache_alloc``,
``kfree``, ``kmem_cache_free``, ``mm_page_alloc`` and ``mm_page_free`` for
the objects they hand out and take back — the same objects
``/proc/allocinfo`` counts: the ``call_site`` of an allocation is the
function of the tag it is charged to, its ``ptr`` the object's address in
the direct map (its slab's page frame and its index in the slab), a page's
``pfn`` the frame it got.

Allocations are made by the machine's users (``fakefs.sim.alloc_workload``
through ``alloc_calls``), which say
where and when each happens (:meth:`KmemTrace.at`): a CPU and an instant.
Who was running there then, and in what context, is known to whoever
records the hit (the trace replay), so the hits carry no pid or flags.
Nothing is fired while no probe is registered, or at boot.
"""

from __future__ import annotations

PAGE_OFFSET = 0xffff888000000000          # the direct map (no KASLR of it here)
VMEMMAP = 0xffffea0000000000              # struct page array
STRUCT_PAGE_SIZE = 64
NUMA_NO_NODE = -1
MIGRATE_UNMOVABLE = 0
MIGRATE_MOVABLE = 1

# the model's gfp bits -> the kernel's (include/linux/gfp_types.h, 6.12)
_GFP = ((0x1, 0xcc0), (0x2, 0x820), (0x4, 0x2800), (0x100, 0x100), (0x200, 0x10000),
        (0x400, 0x2000), (0x800, 0x400000))
GFP_COMP_BIT = 0x40000
_GFP_SEEN: dict = {}      # model flags -> the kernel's, as found (a few dozen combinations)


def kernel_gfp(model: int) -> int:
    out = _GFP_SEEN.get(model)
    if out is None:
        out = 0
        for bit, val in _GFP:
            if model & bit:
                out |= val
        _GFP_SEEN[model] = out
    return out


def page_address(pfn: int) -> int:
    return PAGE_OFFSET + (pfn << 12)


class KmemTrace:
    """Where and when the allocators' next operation happens, and the
    tracepoints it fires."""

    __slots__ = ("when", "free_site", "tp_kmalloc", "tp_cache_alloc", "tp_kfree", "tp_cache_free",
                 "tp_page_alloc", "tp_page_free", "kallsyms", "inlined_into", "_sites")

    def __init__(self, tracepoints, kallsyms=None, inlined_into=None):
        self.when = None                       # (cpu, ts) of the operation being made
        # where the frees being made are called from, when the code making
        # them is known (a FreeSite: alloc_tasks); None: unknown
        self.free_site = None
        tp = tracepoints.get
        self.tp_kmalloc = tp("kmalloc")
        self.tp_cache_alloc = tp("kmem_cache_alloc")
        self.tp_kfree = tp("kfree")
        self.tp_cache_free = tp("kmem_cache_free")
        self.tp_page_alloc = tp("mm_page_alloc")
        self.tp_page_free = tp("mm_page_free")
        for t in (self.tp_kmalloc, self.tp_cache_alloc, self.tp_kfree, self.tp_cache_free,
                  self.tp_page_alloc, self.tp_page_free):
            t.driven = True                    # these code paths fire them
        self.kallsyms = kallsyms
        # name -> the function it is inlined into (the call graph's), for a
        # tag whose function the symbol table does not have
        self.inlined_into = inlined_into
        self._sites: dict = {}

    def traced(self) -> bool:
        """Whether any of the allocators' tracepoints is in use."""
        return bool(self.tp_kmalloc.probes or self.tp_cache_alloc.probes or self.tp_kfree.probes
                    or self.tp_cache_free.probes or self.tp_page_alloc.probes
                    or self.tp_page_free.probes)

    def at(self, cpu: int, ts: int) -> None:
        """The next operations happen on ``cpu`` at ``ts`` (None: untraced)."""
        self.when = (cpu, ts)

    def call_site(self, tag) -> int:
        """The return address in the tag's function: where it called the
        allocator (the same place for every call of the tag).  A tag in an
        inlined function calls from the function it is inlined into, one
        the compiler cloned from its clone (``name.isra.0``); 0 when
        that is not known either (the recorder takes the stack's caller)."""
        if tag is None:
            return 0
        site = self._sites.get(tag)
        if site is None:
            site = 0
            ks = self.kallsyms
            # the function itself, or a compiler clone of it (.isra.0 ...)
            name = ks.resolve(tag.function) if ks is not None else None
            addr = ks.addr_of(name) if name else 0
            if not addr and ks is not None and self.inlined_into is not None:
                outer = self.inlined_into(tag.function)
                addr = ks.addr_of(outer) if outer else 0
            if addr:
                hit = ks.lookup(addr)
                size = hit[2] if hit else 64
                site = addr + 5 + (tag.lineno * 37) % max(1, size - 10)
            self._sites[tag] = site
        return site

    def _fire(self, tp, args) -> None:
        cpu, ts = self.when
        tp.fire(cpu, ts, None, None, None, args)

    # --- slab -------------------------------------------------------------
    def kmalloc(self, tag, ptr: int, req: int, alloc: int, gfp: int, node) -> None:
        if self.when is not None and self.tp_kmalloc.probes:
            self._fire(self.tp_kmalloc, (self.call_site(tag), ptr, req, alloc, kernel_gfp(gfp),
                                         NUMA_NO_NODE if node is None else node))

    def kmem_cache_alloc(self, tag, ptr: int, req: int, alloc: int, gfp: int, node,
                         accounted: bool) -> None:
        if self.when is not None and self.tp_cache_alloc.probes:
            self._fire(self.tp_cache_alloc, (self.call_site(tag), ptr, req, alloc,
                                             kernel_gfp(gfp),
                                             NUMA_NO_NODE if node is None else node, accounted))

    # a free's call site is where the caller frees, which the allocator does
    # not know: the code freeing says (free_site), or it is 0 here and the
    # recorder fills in the caller of the stack it draws
    def kfree(self, ptr: int) -> None:
        if self.when is not None and self.tp_kfree.probes:
            self._fire(self.tp_kfree, (self.call_site(self.free_site), ptr))

    def kmem_cache_free(self, ptr: int, name: str) -> None:
        if self.when is not None and self.tp_cache_free.probes:
            self._fire(self.tp_cache_free, (self.call_site(self.free_site), ptr, name))

    # --- pages ------------------------------------------------------------
    def page_alloc(self, pfn: int, order: int, gfp: int, nr: int = 1) -> None:
        if self.when is not None and self.tp_page_alloc.probes:
            flags = kernel_gfp(gfp) | (GFP_COMP_BIT if order else 0)
            for i in range(nr):
                self._fire(self.tp_page_alloc, (pfn + (i << order), order, flags,
                                                MIGRATE_UNMOVABLE))

    def page_free(self, pfn: int, order: int, nr: int = 1) -> None:
        if self.when is not None and self.tp_page_free.probes:
            for i in range(nr):
                self._fire(self.tp_page_free, (pfn + (i << order), order))
