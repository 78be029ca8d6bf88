"""A zone of Linux 2.6.30 (include/linux/mmzone.h, the zone half of mm/page_alloc.c).

One ``struct zone`` with real buddy free lists: ``free_area[order]`` keyed
by the head pfn of each free block, split on allocation and coalesced with
``pfn ^ (1 << order)`` on free, LIFO like the kernel's
``list_add``/``list_entry(->next)``; its per-CPU order-0 page lists
(``pcp``: ``high``/``batch`` as ``zone_batchsize()`` computes them; pages
there are not in ``NR_FREE_PAGES``); its watermarks and ``lowmem_reserve[]``
and the order-aware ``zone_watermark_ok()`` with the ALLOC_HIGH/ALLOC_HARDER
reductions.  The allocator that owns the zones is in buddy_2630.py and
page_alloc_2630.py.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque

PAGE_SHIFT = 12
PAGE_SIZE = 1 << PAGE_SHIFT
MAX_ORDER = 11
PAGE_ALLOC_COSTLY_ORDER = 3
SIZEOF_STRUCT_PAGE = 56          # x86_64, 2.6.30

# --- zones (x86_64 numbering) ----------------------------------------------
ZONE_DMA, ZONE_DMA32, ZONE_NORMAL, ZONE_MOVABLE = range(4)
ZONE_NAMES = ("DMA", "DMA32", "Normal", "Movable")
# sysctl_lowmem_reserve_ratio for DMA, DMA32, Normal
LOWMEM_RESERVE_RATIO = [256, 256, 32]

# --- alloc_flags (local to page_alloc.c; the watermark checks read them) ---
ALLOC_NO_WATERMARKS = 0x01
ALLOC_WMARK_MIN = 0x02
ALLOC_WMARK_LOW = 0x04
ALLOC_WMARK_HIGH = 0x08
ALLOC_HARDER = 0x10
ALLOC_HIGH = 0x20
ALLOC_CPUSET = 0x40


class PerCpuPages:
    __slots__ = ("count", "high", "batch", "list")

    def __init__(self, high: int, batch: int):
        self.high = high
        self.batch = batch
        self.list: deque[int] = deque()   # left = hot end (list head)
        self.count = 0


def int_sqrt(x: int) -> int:
    return math.isqrt(x)


def rounddown_pow_of_two(n: int) -> int:
    return 1 << (n.bit_length() - 1)


class Zone:
    """One ``struct zone``: buddy lists, counters, watermarks, LRU lists."""

    def __init__(self, idx: int, start_pfn: int, spanned: int, nr_cpus: int):
        self.idx = idx
        self.name = ZONE_NAMES[idx]
        self.start_pfn = start_pfn
        self.end_pfn = start_pfn + spanned
        self.spanned_pages = spanned
        self.present_pages = 0
        self.free_area: list[dict[int, None]] = [dict() for _ in range(MAX_ORDER)]
        self.free_order: dict[int, int] = {}     # PageBuddy head pfn -> order
        self.free_pages = 0                      # NR_FREE_PAGES (not pcp)
        self.pages_min = self.pages_low = self.pages_high = 0
        self.lowmem_reserve = [0] * 4
        self.nr_cpus = nr_cpus
        self.pcp: list[PerCpuPages] = []
        self.batch = 0
        self.oom_locked = False                  # ZONE_OOM_LOCKED
        self.all_unreclaimable = False
        self.pages_scanned = 0
        # LRU (mm/vmscan.c keeps these on the zone too); ordered oldest first
        self.lru_clean: OrderedDict[int, None] = OrderedDict()
        self.lru_dirty: OrderedDict[int, int] = OrderedDict()   # pfn -> jiffy dirtied
        self.slab_reclaimable: OrderedDict[int, None] = OrderedDict()
        self.nr_writeback = 0

    # -- helpers ---------------------------------------------------------
    def contains(self, pfn: int) -> bool:
        return self.start_pfn <= pfn < self.end_pfn

    @property
    def populated(self) -> bool:
        return self.present_pages > 0

    def nr_free(self, order: int) -> int:
        return len(self.free_area[order])

    def pcp_count(self) -> int:
        return sum(p.count for p in self.pcp)

    def watermark(self, alloc_flags: int) -> int:
        if alloc_flags & ALLOC_WMARK_MIN:
            return self.pages_min
        if alloc_flags & ALLOC_WMARK_LOW:
            return self.pages_low
        return self.pages_high

    def setup_pagesets(self) -> None:
        self.batch = batch = zone_batchsize(self.present_pages)
        self.pcp = [PerCpuPages(6 * batch, max(1, batch)) for _ in range(self.nr_cpus)]

    # -- buddy -------------------------------------------------------------
    def rmqueue_smallest(self, order: int) -> int | None:
        """Take the first block of at least ``order`` and split it down."""
        area = self.free_area
        for cur in range(order, MAX_ORDER):
            lst = area[cur]
            if lst:
                pfn, _ = lst.popitem()           # list head: most recent add
                del self.free_order[pfn]
                while cur > order:               # give back the upper halves
                    cur -= 1
                    half = pfn + (1 << cur)
                    area[cur][half] = None
                    self.free_order[half] = cur
                return pfn
        return None

    def free_one_page(self, pfn: int, order: int) -> None:
        """Merge with free buddies of the same order and put on the list."""
        free_order = self.free_order
        area = self.free_area
        while order < MAX_ORDER - 1:
            buddy = pfn ^ (1 << order)
            if free_order.get(buddy) != order:
                break
            del area[order][buddy]
            del free_order[buddy]
            pfn &= ~(1 << order)
            order += 1
        area[order][pfn] = None
        free_order[pfn] = order

    def __repr__(self):
        return f"Zone({self.name}, free={self.free_pages})"


def zone_batchsize(present_pages: int) -> int:
    """Per-cpu list batch: about a quarter of 1/1000 of the zone, capped
    at half a megabyte, then rounded to ``2^n - 1``."""
    batch = present_pages // 1024
    if batch * PAGE_SIZE > 512 * 1024:
        batch = (512 * 1024) // PAGE_SIZE
    batch //= 4
    if batch < 1:
        batch = 1
    return rounddown_pow_of_two(batch + batch // 2) - 1


def zone_watermark_ok(z: Zone, order: int, mark: int, classzone_idx: int,
                      alloc_flags: int) -> bool:
    """Is there ``mark`` (reduced by HIGH/HARDER) left above the reserve
    after taking ``1 << order`` pages, also counting only blocks of each
    order and above (each step halving the requirement)?"""
    need = mark
    free = z.free_pages - (1 << order) + 1
    if alloc_flags & ALLOC_HIGH:
        need -= need // 2
    if alloc_flags & ALLOC_HARDER:
        need -= need // 4
    if free <= need + z.lowmem_reserve[classzone_idx]:
        return False
    for o in range(order):
        free -= len(z.free_area[o]) << o
        need >>= 1
        if free <= need:
            return False
    return True
