"""vmalloc and kvmalloc as allocation profiling sees them (mm/vmalloc.c,
``__kvmalloc_node_noprof`` of mm/util.c).

A vmalloc area is built from pieces charged to different tags:

* the ``vmap_area`` (its own cache, charged inside mm/vmalloc.c to
  ``alloc_vmap_area``) and the ``vm_struct`` (``kzalloc_node`` in
  ``__get_vm_area_node``): the inner hooks win;
* the array of page pointers and every backing page: allocated through
  ``_noprof`` calls, so they are charged to the caller's tag, one call per
  page.

A 16 KiB thread stack therefore costs its caller 4 page calls plus the
32-byte page array: 16416 bytes in 5 calls.

kvmalloc tries kmalloc first (large sizes go to the page allocator, high
orders may fail once memory is fragmented) and falls back to vmalloc.
"""

from __future__ import annotations

from .page_alloc import GFP_KERNEL, PAGE_SHIFT, PAGE_SIZE, get_order
from .slub import KMALLOC_MAX_SIZE

VMAP_AREA_SIZE = 64
VM_STRUCT_SIZE = 64
PAGE_ALLOC_COSTLY_ORDER = 3


class VmArea:
    """A vmalloc allocation: ``vm_struct`` + ``vmap_area`` + pages."""

    __slots__ = ("va", "vm", "array", "pages", "nr_pages", "ref")

    def __init__(self):
        self.va = None
        self.vm = None
        self.array = None
        self.pages: list = []
        self.nr_pages = 0
        self.ref = None


class Vmalloc:
    """``kernel.vmalloc``."""

    def __init__(self, kernel, at, page_alloc, slab):
        self.kernel = kernel
        self.at = at
        self.pa = page_alloc
        self.slab = slab
        self.vmap_area_cachep = slab.kmem_cache_create("vmap_area", VMAP_AREA_SIZE)
        self.tag_vmap_area = None
        self.tag_vm_struct = None
        self.nr_areas = 0
        self.nr_vmalloc_pages = 0
        # chance that a high-order kmalloc attempt of kvmalloc fails (fragmentation)
        self.fragmentation = 0.0
        self.rng = kernel.subsystem_rng("vmalloc")

    def set_tags(self) -> None:
        try:
            self.tag_vmap_area = self.at.find("mm/vmalloc.c", "alloc_vmap_area")
            self.tag_vm_struct = self.at.find("mm/vmalloc.c", "__get_vm_area_node")
        except KeyError:
            pass

    def vmalloc_noprof(self, size: int, gfp: int = GFP_KERNEL) -> VmArea:
        """``__vmalloc_node_range_noprof``: charged to the current tag except
        for the bookkeeping structures."""
        at = self.at
        slab = self.slab
        area = VmArea()
        nr_pages = max(1, (size + PAGE_SIZE - 1) >> PAGE_SHIFT)
        old = at.current
        at.current = self.tag_vmap_area
        try:
            area.va = slab.kmem_cache_alloc_noprof(self.vmap_area_cachep, gfp)
            at.current = self.tag_vm_struct
            area.vm = slab.kmalloc_noprof(VM_STRUCT_SIZE, gfp)
        finally:
            at.current = old
        array_size = nr_pages * 8
        if array_size > PAGE_SIZE:
            area.array = self.vmalloc_noprof(array_size, gfp)
        else:
            area.array = slab.kmalloc_noprof(array_size, gfp)
        area.pages = [self.pa.alloc_pages_bulk_noprof(nr_pages, gfp)]
        area.nr_pages = nr_pages
        self.nr_areas += 1
        self.nr_vmalloc_pages += nr_pages
        return area

    def vmalloc(self, tag, size: int, gfp: int = GFP_KERNEL) -> VmArea:
        at = self.at
        old = at.current
        at.current = tag
        try:
            return self.vmalloc_noprof(size, gfp)
        finally:
            at.current = old

    def vfree(self, area: VmArea) -> None:
        free = self.pa.free_pages
        for p in area.pages:
            free(p)
        self.nr_vmalloc_pages -= area.nr_pages
        area.pages = []
        a = area.array
        if isinstance(a, VmArea):
            self.vfree(a)
        else:
            self.slab.kfree(a)
        self.slab.kfree(area.vm)
        self.slab.kmem_cache_free(self.vmap_area_cachep, area.va)
        self.nr_areas -= 1

    # --- kvmalloc (mm/util.c) -------------------------------------------------
    def kvmalloc_noprof(self, size: int, gfp: int = GFP_KERNEL):
        if size <= PAGE_SIZE:
            return self.slab.kmalloc_noprof(size, gfp)
        if size <= KMALLOC_MAX_SIZE:
            order = get_order(size)
            if order <= PAGE_ALLOC_COSTLY_ORDER or self.rng.random() >= self.fragmentation:
                return self.slab.kmalloc_noprof(size, gfp)
        return self.vmalloc_noprof(size, gfp)

    def kvmalloc(self, tag, size: int, gfp: int = GFP_KERNEL):
        at = self.at
        old = at.current
        at.current = tag
        try:
            return self.kvmalloc_noprof(size, gfp)
        finally:
            at.current = old

    def kvfree(self, obj) -> None:
        if isinstance(obj, VmArea):
            self.vfree(obj)
        else:
            self.slab.kfree(obj)


def is_vmalloc(obj) -> bool:
    return isinstance(obj, VmArea)

