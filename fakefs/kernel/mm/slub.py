"""The slab allocator as allocation profiling sees it (mm/slub.c,
mm/slab_common.c).

Caches hand out objects from slabs; a slab is one page block from the page
allocator, taken with the slab's own allocation tag made current
(``alloc_slab_page`` in mm/slub.c), so slab memory is charged there and not
to whoever happened to call ``kmalloc()`` when the cache grew: the inner
``alloc_hooks()`` wins.  Objects are charged to the caller's tag with the
cache's object size (``s->size``), through the slab's *object extension
vector*, which is allocated on first use while profiling is on and itself
charged to ``alloc_slab_obj_exts`` (except for the vectors of normal kmalloc
caches, which are allocated untagged to avoid recursion).  Sizes above
``KMALLOC_MAX_CACHE_SIZE`` go straight to the page allocator and are charged
to the caller as pages.

Slabs are kept on a per-cache partial list; a slab that becomes empty is
released once the cache already holds ``min_partial`` empty slabs.

An object has an address: its slab's page frame and its index in the slab
(a freed index is reused first).  Single allocations and frees fire the
kmem tracepoints (``kmalloc`` / ``kmem_cache_alloc`` with the charged tag's
function as call site, ``kfree`` for kmalloc objects, ``kmem_cache_free``
for the others); the bulk API fires none, as in the kernel.
"""

from __future__ import annotations

from .alloc_tag import V_FORMAT_2
from .kmem_trace import page_address
from .page_alloc import (GFP_KERNEL, MAX_PAGE_ORDER, PAGE_SIZE, Page, GFP_NO_OBJ_EXT,
                         GFP_ACCOUNT, get_order)

KMALLOC_SIZES = (8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192)
KMALLOC_MAX_CACHE_SIZE = 8192
KMALLOC_MAX_SIZE = PAGE_SIZE << MAX_PAGE_ORDER
SLUB_MAX_ORDER = 3           # PAGE_ALLOC_COSTLY_ORDER
MAX_OBJS_PER_PAGE = 32767

SLAB_NO_OBJ_EXT = 0x1
SLAB_KMALLOC = 0x2
SLAB_HWCACHE_ALIGN = 0x4
SLAB_RECLAIM_ACCOUNT = 0x8

# struct slabobj_ext: objcg pointer (with memcg) + codetag_ref
SLABOBJ_EXT_SIZE_MEMCG = 16
SLABOBJ_EXT_SIZE = 8

_SIZE_INDEX = [0] * 24       # (size - 1) // 8 -> KMALLOC_SIZES index, for size <= 192
for _sz in range(1, 193):
    _SIZE_INDEX[(_sz - 1) // 8] = next(i for i, k in enumerate(KMALLOC_SIZES) if k >= _sz)


def kmalloc_index(size: int) -> int:
    if size <= 192:
        return _SIZE_INDEX[(size - 1) // 8] if size > 0 else 0
    return (size - 1).bit_length() - 8 + KMALLOC_SIZES.index(256)


def calculate_order(size: int, nr_cpus: int) -> int:
    """SLUB's choice of slab order for an object size (``calculate_order``)."""
    def order_objects(order):
        return (PAGE_SIZE << order) // size

    min_objects = 4 * (nr_cpus.bit_length() + 1)
    max_objects = order_objects(SLUB_MAX_ORDER)
    min_objects = min(min_objects, max_objects)
    min_order = get_order(min_objects * size)
    if order_objects(min_order) > MAX_OBJS_PER_PAGE:
        return get_order(size * MAX_OBJS_PER_PAGE) - 1
    fraction = 16
    while fraction > 1:
        for order in range(min_order, SLUB_MAX_ORDER + 1):
            slab_size = PAGE_SIZE << order
            if slab_size % size <= slab_size // fraction:
                return order
        fraction //= 2
    return min(get_order(size), MAX_PAGE_ORDER)


class KmemCache:
    """``struct kmem_cache``."""

    __slots__ = ("name", "object_size", "size", "order", "objects", "flags", "min_partial",
                 "partial", "nr_slabs", "nr_empty", "inuse", "kmalloc_normal", "no_obj_ext")

    def __init__(self, name: str, object_size: int, flags: int, nr_cpus: int):
        self.name = name
        self.object_size = object_size
        align = 64 if flags & SLAB_HWCACHE_ALIGN and object_size > 32 else 8
        self.size = (object_size + align - 1) // align * align
        self.order = calculate_order(self.size, nr_cpus)
        self.objects = (PAGE_SIZE << self.order) // self.size
        self.flags = flags
        self.min_partial = min(10, max(5, (self.size.bit_length() - 1) // 2))
        self.partial: dict = {}      # slabs with free objects (insertion order)
        self.nr_slabs = 0
        self.nr_empty = 0
        self.inuse = 0
        self.kmalloc_normal = bool(flags & SLAB_KMALLOC)
        self.no_obj_ext = bool(flags & SLAB_NO_OBJ_EXT)

    def __repr__(self):
        return "<KmemCache %s size=%d order=%d objs=%d>" % (self.name, self.size, self.order,
                                                           self.objects)


class Slab:
    __slots__ = ("cache", "page", "inuse", "exts", "free", "next")

    def __init__(self, cache: KmemCache, page: Page):
        self.cache = cache
        self.page = page
        self.inuse = 0
        self.exts = None            # the object extension vector (an Obj)
        self.free: list = []        # indices of freed objects, reused first
        self.next = 0               # the next index never handed out


class Obj:
    """A slab object (its ``slabobj_ext.ref`` is ``ref``)."""

    __slots__ = ("slab", "ref", "idx")

    def __init__(self, slab: Slab, idx: int = 0):
        self.slab = slab
        self.ref = None
        self.idx = idx

    @property
    def ptr(self) -> int:
        s = self.slab.cache
        return page_address(self.slab.page.pfn) + (self.idx % s.objects) * s.size


class BulkObj:
    """``n`` objects of one cache allocated together at one site and freed
    together (boot-time tables and other long-lived sets)."""

    __slots__ = ("cache", "parts", "ref", "n")

    def __init__(self, cache: KmemCache):
        self.cache = cache
        self.parts: list = []       # [(slab, count)]
        self.ref = None
        self.n = 0


class SlabAllocator:
    """``kernel.slab``: the kmalloc caches and named caches of the model."""

    def __init__(self, kernel, at, page_alloc):
        self.kernel = kernel
        self.at = at
        self.pa = page_alloc
        self.nr_cpus = kernel.nr_cpus
        self.objext_size = SLABOBJ_EXT_SIZE_MEMCG if kernel.config.enabled("MEMCG") else SLABOBJ_EXT_SIZE
        self.caches: dict[str, KmemCache] = {}
        self.kmalloc_caches = [self.kmem_cache_create("kmalloc-%s" % _kname(sz), sz, SLAB_KMALLOC)
                               for sz in KMALLOC_SIZES]
        self.tag_slab_page = None       # mm/slub.c alloc_slab_page (alloc_pages)
        self.tag_slab_page_node = None  # mm/slub.c alloc_slab_page (__alloc_pages_node)
        self.tag_obj_exts = None        # mm/slub.c alloc_slab_obj_exts
        self.objext_fail = 0            # fail this many obj_exts vector allocations
        self.trace = page_alloc.trace   # the kmem tracepoints (one "where and when")

    def set_tags(self) -> None:
        at = self.at
        try:
            pages = sorted(at.find_all("mm/slub.c", "alloc_slab_page"), key=lambda t: t.lineno)
            self.tag_slab_page = pages[0] if pages else None
            self.tag_slab_page_node = pages[-1] if pages else None
            self.tag_obj_exts = at.find("mm/slub.c", "alloc_slab_obj_exts")
        except KeyError:
            pass

    # --- caches ---------------------------------------------------------------
    def kmem_cache_create(self, name: str, object_size: int, flags: int = 0) -> KmemCache:
        s = self.caches.get(name)
        if s is None:
            s = KmemCache(name, object_size, flags, self.nr_cpus)
            self.caches[name] = s
        return s

    def kmalloc_cache(self, size: int) -> KmemCache:
        return self.kmalloc_caches[kmalloc_index(size)]

    # --- slabs ----------------------------------------------------------------
    def _new_slab(self, s: KmemCache, node) -> Slab:
        at = self.at
        old = at.current
        at.current = self.tag_slab_page_node if node is not None else self.tag_slab_page
        try:
            page = self.pa.alloc_pages_noprof(s.order)
        finally:
            at.current = old
        slab = Slab(s, page)
        s.nr_slabs += 1
        s.nr_empty += 1
        s.partial[slab] = None
        return slab

    def _discard_slab(self, slab: Slab) -> None:
        s = slab.cache
        del s.partial[slab]
        s.nr_slabs -= 1
        s.nr_empty -= 1
        vec = slab.exts
        if vec is not None:                 # free_slab_obj_exts (+ mark_objexts_empty)
            slab.exts = None
            if vec.ref is None:
                self.at.set_empty(vec)
            self.kfree(vec)
        self.pa.free_pages(slab.page)

    def _alloc_obj_exts(self, slab: Slab, gfp: int) -> bool:
        """``alloc_slab_obj_exts``: the slab's vector of tag references."""
        at = self.at
        s = slab.cache
        if self.objext_fail > 0:
            self.objext_fail -= 1
            if at.version >= V_FORMAT_2:
                at.set_inaccurate(at.current)
            else:
                at._warn_splat(("mm/slub.c", 2085), "slab_post_alloc_hook+0x1d7/0x260",
                               "prepare_slab_obj_exts_hook, %s: Failed to create slab extension vector!\n"
                               % s.name, once=False)
            return False
        size = s.objects * self.objext_size
        old = at.current
        at.current = self.tag_obj_exts
        try:
            vec = self.kmalloc_noprof(size, gfp | (GFP_NO_OBJ_EXT if s.kmalloc_normal else 0))
        finally:
            at.current = old
        slab.exts = vec
        return True

    # --- objects --------------------------------------------------------------
    def kmem_cache_alloc_noprof(self, s: KmemCache, gfp: int = GFP_KERNEL, node=None) -> Obj:
        obj = self._slab_alloc(s, gfp, node)
        trace = self.trace
        if trace.when is not None:    # (a tracepoint's arguments: only where it may fire)
            trace.kmem_cache_alloc(self.at.current, obj.ptr, s.object_size, s.size, gfp, node,
                                   bool(gfp & GFP_ACCOUNT))
        return obj

    def _slab_alloc(self, s: KmemCache, gfp: int, node) -> Obj:
        partial = s.partial
        if partial:
            slab = next(reversed(partial))
        else:
            slab = self._new_slab(s, node)
        inuse = slab.inuse
        if inuse == 0:
            s.nr_empty -= 1
        inuse += 1
        slab.inuse = inuse
        if inuse == s.objects:
            del partial[slab]
        s.inuse += 1
        if slab.free:
            obj = Obj(slab, slab.free.pop())
        else:
            obj = Obj(slab, slab.next)
            slab.next += 1
        at = self.at
        if at.enabled and not s.no_obj_ext and not gfp & GFP_NO_OBJ_EXT:
            if slab.exts is not None or self._alloc_obj_exts(slab, gfp):
                at.add(obj, at.current, s.size)
        return obj

    def kmem_cache_alloc(self, tag, s: KmemCache, gfp: int = GFP_KERNEL, node=None) -> Obj:
        at = self.at
        old = at.current
        at.current = tag
        try:
            return self.kmem_cache_alloc_noprof(s, gfp, node)
        finally:
            at.current = old

    def kmem_cache_free(self, s: KmemCache, obj: Obj) -> None:
        trace = self.trace
        if trace.when is not None:
            trace.kmem_cache_free(obj.ptr, s.name)
        self._slab_free(s, obj)

    def _slab_free(self, s: KmemCache, obj: Obj) -> None:
        slab = obj.slab
        slab.free.append(obj.idx)
        at = self.at
        if at.enabled and not s.no_obj_ext and slab.exts is not None:
            at.sub(obj, s.size)
        inuse = slab.inuse - 1
        slab.inuse = inuse
        s.inuse -= 1
        if inuse == s.objects - 1:
            s.partial[slab] = None
        if inuse == 0:
            s.nr_empty += 1
            if s.nr_empty > s.min_partial:
                self._discard_slab(slab)

    def kmalloc_noprof(self, size: int, gfp: int = GFP_KERNEL, node=None):
        """``kmalloc_noprof``: an object of the size's kmalloc cache, or pages."""
        if size > KMALLOC_MAX_CACHE_SIZE:           # kmalloc_large
            page = self.pa.alloc_pages_noprof(get_order(size), gfp)
            self.trace.kmalloc(self.at.current, page_address(page.pfn), size,
                               PAGE_SIZE << page.order, gfp, node)
            return page
        s = self.kmalloc_caches[kmalloc_index(size)]
        obj = self._slab_alloc(s, gfp, node)
        trace = self.trace
        if trace.when is not None:
            trace.kmalloc(self.at.current, obj.ptr, size, s.size, gfp, node)
        return obj

    def kmalloc(self, tag, size: int, gfp: int = GFP_KERNEL, node=None):
        """``alloc_hooks(kmalloc_noprof(size, gfp))`` at the site ``tag``."""
        at = self.at
        old = at.current
        at.current = tag
        try:
            return self.kmalloc_noprof(size, gfp, node)
        finally:
            at.current = old

    def kfree(self, obj) -> None:
        if obj is None:
            return
        if isinstance(obj, Page):
            self.trace.kfree(page_address(obj.pfn))
            self.pa.free_pages(obj)
        elif isinstance(obj, BulkObj):
            self.kmem_cache_free_bulk(obj)
        else:
            o = obj                         # (an Obj: slub.pxd types it)
            s = o.slab.cache
            if s.kmalloc_normal:
                trace = self.trace
                if trace.when is not None:
                    trace.kfree(o.ptr)
                self._slab_free(s, o)
            else:
                self.kmem_cache_free(s, o)

    # --- bulk -----------------------------------------------------------------
    def kmem_cache_alloc_bulk_noprof(self, s: KmemCache, n: int, gfp: int = GFP_KERNEL) -> BulkObj:
        """``n`` objects at once, charged to the current tag as ``n`` calls."""
        b = BulkObj(s)
        at = self.at
        tagged = at.enabled and not s.no_obj_ext
        left = n
        while left:
            partial = s.partial
            slab = next(reversed(partial)) if partial else self._new_slab(s, None)
            take = min(left, s.objects - slab.inuse)
            if slab.inuse == 0:
                s.nr_empty -= 1
            slab.inuse += take
            if slab.inuse == s.objects:
                del partial[slab]
            if tagged and slab.exts is None and not self._alloc_obj_exts(slab, gfp):
                tagged = False
            b.parts.append((slab, take))
            left -= take
        s.inuse += n
        b.n = n
        if tagged:
            at.add(b, at.current, s.size * n, n)
        return b

    def kmalloc_bulk_noprof(self, size: int, n: int, gfp: int = GFP_KERNEL) -> BulkObj:
        return self.kmem_cache_alloc_bulk_noprof(self.kmalloc_cache(size), n, gfp)

    def kmem_cache_free_bulk(self, b: BulkObj) -> None:
        s = b.cache
        at = self.at
        if at.enabled and not s.no_obj_ext and b.parts and b.parts[0][0].exts is not None:
            at.sub(b, s.size * b.n, b.n)
        for slab, cnt in b.parts:
            was_full = slab.inuse == s.objects
            slab.inuse -= cnt
            if was_full and slab.inuse:
                s.partial[slab] = None
            if slab.inuse == 0:
                if was_full:
                    s.partial[slab] = None
                s.nr_empty += 1
                if s.nr_empty > s.min_partial:
                    self._discard_slab(slab)
        s.inuse -= b.n
        b.parts = []
        b.n = 0

    # --- statistics -----------------------------------------------------------
    def slab_pages(self) -> int:
        return sum(s.nr_slabs << s.order for s in self.caches.values())


def _kname(size: int) -> str:
    return "%dk" % (size // 1024) if size >= 1024 else str(size)
