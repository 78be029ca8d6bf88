"""The page allocator as allocation profiling sees it (mm/page_alloc.c, 6.x).

No buddy lists are modelled: a :class:`Page` is a block of ``2**order``
pages handed out by ``alloc_pages_noprof()``.  What is modelled is the tag
bookkeeping of ``post_alloc_hook``/``free_pages_prepare``: the head page
remembers the tag that was current at allocation (``pgalloc_tag_add``) and
gives the bytes back on free (``pgalloc_tag_sub``).  Splitting a block into
order-0 pages (``split_page``, ``alloc_pages_exact``) gives every page its
own reference, each counting one call (``pgalloc_tag_split``).

Each block has a page frame number: frames are handed out from the bottom
of RAM up and a freed block's frames are reused first (last in, first out,
like the per-CPU page lists); the allocations fire ``mm_page_alloc`` and
``mm_page_free`` through :class:`~fakefs.kernel.mm.kmem_trace.KmemTrace`.

Page references need somewhere to live: the page extension, allocated when
profiling is supported, or spare page-flag bits in compressed mode.  Without
support nothing is ever charged.
"""

from __future__ import annotations

from .alloc_tag import CODETAG_EMPTY
from .kmem_trace import KmemTrace

PAGE_SHIFT = 12
PAGE_SIZE = 1 << PAGE_SHIFT
MAX_PAGE_ORDER = 10

# gfp bits the model looks at (values are the model's own)
GFP_KERNEL = 0x1
GFP_ATOMIC = 0x2
GFP_NOWAIT = 0x4
GFP_ZERO = 0x100
GFP_NORETRY = 0x200
GFP_NOWARN = 0x400
GFP_ACCOUNT = 0x800
GFP_NO_OBJ_EXT = 0x1000


def get_order(size: int) -> int:
    """Smallest order whose block holds ``size`` bytes."""
    if size <= PAGE_SIZE:
        return 0
    return ((size - 1) >> PAGE_SHIFT).bit_length()


class Page:
    """The head ``struct page`` of an allocated block.

    ``nr`` is 1 for a block allocated as one unit, or the number of order-0
    pages it was split into (each with its own reference to the same tag).
    """

    __slots__ = ("order", "ref", "nr", "pfn")

    def __init__(self, order: int, pfn: int = 0):
        self.order = order
        self.ref = None
        self.nr = 1
        self.pfn = pfn

    @property
    def nbytes(self) -> int:
        return (self.nr << PAGE_SHIFT) if self.nr > 1 else (PAGE_SIZE << self.order)

    def __repr__(self):
        return "<Page order=%d nr=%d ref=%r>" % (self.order, self.nr, self.ref)


class PageAllocator:
    """``kernel.page_alloc``: hands out :class:`Page` blocks and keeps totals."""

    def __init__(self, kernel, at, totalram_pages: int):
        self.kernel = kernel
        self.at = at
        self.totalram_pages = totalram_pages
        self.nr_used = 0          # pages currently allocated through this model
        self.nr_allocs = 0        # blocks ever allocated
        self.nr_frees = 0
        wl = kernel.workload
        self.trace = KmemTrace(kernel.tracepoints, kernel.kallsyms,
                               wl.inlined_into if wl is not None else None)
        self.first_pfn = 0x100000             # above the first 4 GiB hole
        self.next_pfn = self.first_pfn
        self.free_pfns: dict[int, list] = {}   # block size in pages -> freed frames

    def _frames(self, npages: int) -> int:
        """The first frame of a block of ``npages`` frames."""
        free = self.free_pfns.get(npages)
        if free:
            return free.pop()
        pfn = self.next_pfn
        self.next_pfn += npages
        if self.next_pfn >= self.first_pfn + self.totalram_pages:
            self.next_pfn = self.first_pfn         # wrap (frames long freed by then)
        return pfn

    def _give_back(self, pfn: int, npages: int) -> None:
        free = self.free_pfns.setdefault(npages, [])
        if len(free) < 4096:
            free.append(pfn)

    # --- allocation -----------------------------------------------------------
    def alloc_pages_noprof(self, order: int = 0, gfp: int = GFP_KERNEL) -> Page:
        page = Page(order, self._frames(1 << order))
        self.trace.page_alloc(page.pfn, order, gfp)
        self.nr_used += 1 << order
        self.nr_allocs += 1
        at = self.at
        if at.enabled and at.page_refs:
            at.add(page, at.current, PAGE_SIZE << order)
        return page

    def alloc_pages(self, tag, order: int = 0, gfp: int = GFP_KERNEL) -> Page:
        """``alloc_hooks(alloc_pages_noprof(gfp, order))`` at the site ``tag``."""
        at = self.at
        old = at.current
        at.current = tag
        try:
            return self.alloc_pages_noprof(order, gfp)
        finally:
            at.current = old

    def alloc_pages_bulk_noprof(self, nr: int, gfp: int = GFP_KERNEL) -> Page:
        """``alloc_pages_bulk``: ``nr`` order-0 pages, one reference (and one
        call) each; kept together as one :class:`Page` with ``nr`` set."""
        page = Page(0, self._frames(nr))
        page.nr = nr
        self.trace.page_alloc(page.pfn, 0, gfp, nr)
        self.nr_used += nr
        self.nr_allocs += nr
        at = self.at
        if at.enabled and at.page_refs:
            at.add(page, at.current, nr << PAGE_SHIFT, nr)
        return page

    def free_pages(self, page: Page) -> None:
        """``__free_pages`` of a block (every split part at once if split)."""
        npages = page.nr if page.nr > 1 else (1 << page.order)
        if page.nr > 1:
            self.trace.page_free(page.pfn, 0, page.nr)
        else:
            self.trace.page_free(page.pfn, page.order)
        self._give_back(page.pfn, npages)
        self.nr_used -= npages
        self.nr_frees += 1
        at = self.at
        if at.enabled and at.page_refs:
            at.sub(page, page.nbytes, page.nr)

    # --- splitting ------------------------------------------------------------
    def split_page(self, page: Page) -> Page:
        """``split_page``: the block becomes ``2**order`` order-0 pages, each
        referencing the tag (one more call per extra page)."""
        if page.order == 0 or page.nr > 1:
            return page
        extra = (1 << page.order) - 1
        at = self.at
        if at.enabled and page.ref is not None and page.ref is not CODETAG_EMPTY:
            at.ref_split(page, page.ref, extra)
        page.nr = 1 << page.order
        page.order = 0
        return page

    def free_tail(self, page: Page, keep: int) -> None:
        """Free the order-0 pages of a split block past the first ``keep``."""
        drop = page.nr - keep
        if drop <= 0:
            return
        self.nr_used -= drop
        at = self.at
        if at.enabled and at.page_refs and page.ref is not None:
            tag = page.ref
            if tag is not CODETAG_EMPTY:
                tag.bytes -= drop << PAGE_SHIFT
                tag.calls -= drop
        page.nr = keep

    def alloc_pages_exact_noprof(self, size: int, gfp: int = GFP_KERNEL) -> Page:
        """``alloc_pages_exact``: a power-of-two block trimmed to ``size``."""
        order = get_order(size)
        page = self.alloc_pages_noprof(order, gfp)
        if order:
            self.split_page(page)
            self.free_tail(page, (size + PAGE_SIZE - 1) >> PAGE_SHIFT)
        return page

    def free_pages_exact(self, page: Page) -> None:
        self.free_pages(page)


    # --- what is left ---------------------------------------------------------
    def si_mem_available(self) -> int:
        """``si_mem_available()`` in pages: what the machine could still hand out."""
        return max(0, self.totalram_pages - self.nr_used)


# within this of running out, a request for pages waits for the owed
# allocation work (2 s of it moves far less)
SETTLE_MARGIN_PAGES = (1 << 30) >> 12


class PageAccount:
    """Order-0 pages one call site allocates one by one and keeps, such as
    the ring buffer's (``__rb_allocate_pages``): counted, not each a
    :class:`Page`.  Each page is one call of the site's tag (charged while
    profiling is on, given back as long as it was charged).  Without a page
    allocator (no allocation profiling in the kernel), the machine has
    ``ram_pages`` of memory."""

    def __init__(self, pa: "PageAllocator | None", tag=None, ram_pages: int = 0):
        self.pa = pa
        self.tag = tag
        self.ram_pages = ram_pages
        self.pages = 0            # held now
        self.tagged = 0           # of them, charged to the tag
        self.given_back = 0       # pages freed, in all

    def available_pages(self, want: int = 0) -> int:
        """What the machine could still hand out, for a request of ``want``
        pages.  Near the limit the allocators' owed work is done first (it
        could tip the answer); charging and giving back pages only adds to
        counters, in any order."""
        if self.pa is None:
            return max(0, self.ram_pages - self.pages)
        avail = self.pa.si_mem_available()
        if avail - want < SETTLE_MARGIN_PAGES:
            self.pa.at.settle()
            avail = self.pa.si_mem_available()
        return avail

    def charge(self, n: int) -> None:
        self.pages += n
        pa = self.pa
        if pa is None:
            return
        pa.nr_used += n
        pa.nr_allocs += n
        at = pa.at
        if self.tag is not None and at.enabled and at.page_refs:
            self.tag.bytes += n << PAGE_SHIFT
            self.tag.calls += n
            self.tagged += n

    def uncharge(self, n: int) -> None:
        n = min(n, self.pages)
        self.pages -= n
        self.given_back += n
        pa = self.pa
        if pa is None:
            return
        pa.nr_used -= n
        pa.nr_frees += n
        k = min(n, self.tagged)
        if k and self.tag is not None:
            self.tag.bytes -= k << PAGE_SHIFT
            self.tag.calls -= k
            self.tagged -= k
