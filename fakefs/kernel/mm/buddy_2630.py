"""The zones of node 0 and the fast path of the 2.6.30 page allocator.

:class:`BuddyAllocator` builds the zones at boot (``free_all_bootmem()``
into the buddy lists, the PC holes, the memmap and the reserved ranges left
out), computes ``pages_min``/``pages_low``/``pages_high`` from
``min_free_kbytes`` and ``lowmem_reserve[]`` from
``sysctl_lowmem_reserve_ratio``, and takes pages from and gives them back
to the free lists: ``get_page_from_freelist()`` through the per-CPU lists
for order 0, ``__free_pages()``, draining.  The slow path that sleeps,
reclaims and kills (``__alloc_pages_internal()``) is
:class:`~.page_alloc_2630.PageAllocator`, built on this.
"""

from __future__ import annotations

from .gfp_2630 import _GFP_COLD, gfp_zone
from .mmzone_2630 import (ALLOC_HARDER, ALLOC_HIGH, ALLOC_NO_WATERMARKS, LOWMEM_RESERVE_RATIO,
                          MAX_ORDER, PAGE_SHIFT, PAGE_SIZE, SIZEOF_STRUCT_PAGE, ZONE_DMA,
                          ZONE_DMA32, ZONE_NORMAL, PerCpuPages, Zone, int_sqrt,
                          zone_watermark_ok)


class BuddyAllocator:
    """All zones of node 0: boot-time layout, watermarks, free lists.

    ``layout`` is the usable memory: ``mem_bytes`` of RAM starting at 0
    with the PC holes, and ``reserved`` pfn ranges taken by the kernel
    image and early allocations (never handed to the buddy lists).
    """

    def __init__(self, mem_bytes: int = 128 << 20, nr_cpus: int = 1,
                 reserved: list[tuple[int, int]] | None = None):
        self.nr_cpus = max(1, nr_cpus)
        self._zonelists: dict[int, list[Zone]] = {}
        self.totalram_pages = 0
        self.totalreserve_pages = 0
        self.min_free_kbytes = 0
        self.lowmem_reserve_ratio = list(LOWMEM_RESERVE_RATIO)
        self.nr_free_calls = 0
        self._build_zones(mem_bytes, reserved or [])
        self.init_per_zone_pages_min()

    # ------------------------------------------------------------------ setup
    def _build_zones(self, mem_bytes: int, reserved: list[tuple[int, int]]) -> None:
        max_pfn = mem_bytes >> PAGE_SHIFT
        dma_end = min(max_pfn, (16 << 20) >> PAGE_SHIFT)
        dma32_end = min(max_pfn, (4 << 30) >> PAGE_SHIFT)
        bounds = [(ZONE_DMA, 0, dma_end), (ZONE_DMA32, dma_end, dma32_end),
                  (ZONE_NORMAL, dma32_end, max_pfn)]
        # e820 holes: page 0 (BIOS data) and the legacy VGA/ROM window
        holes = [(0, 1), (0x9f, 0x100)]
        unusable = holes + list(reserved)
        self.zones: list[Zone] = []
        self.zone_boot_info: list[tuple[Zone, int, int]] = []
        for idx, start, end in bounds:
            z = Zone(idx, start, max(0, end - start), self.nr_cpus)
            self.zones.append(z)
            if end <= start:
                continue
            absent = sum(max(0, min(e, end) - max(s, start)) for s, e in holes)
            memmap = (z.spanned_pages * SIZEOF_STRUCT_PAGE + PAGE_SIZE - 1) // PAGE_SIZE
            dma_reserve = 0
            if idx == ZONE_DMA:
                dma_reserve = sum(max(0, min(e, end) - max(s, start)) for s, e in reserved)
            z.present_pages = z.spanned_pages - absent - memmap - dma_reserve
            self.zone_boot_info.append((z, memmap, dma_reserve))
            # memmap sits at the end of the zone's memory
            mm_start = end - memmap
            zone_unusable = [(max(s, start), min(e, end)) for s, e in unusable
                             if min(e, end) > max(s, start)]
            zone_unusable.append((mm_start, end))
            self._free_range_to_buddy(z, start, end, zone_unusable)
            z.setup_pagesets()
        self.totalram_pages = sum(z.free_pages for z in self.zones)
        self.managed_zones = [z for z in self.zones if z.populated]
        nblocks = (max_pfn + (1 << (MAX_ORDER - 1)) - 1) >> (MAX_ORDER - 1)
        self._zone_table = [None] * nblocks
        for z in self.managed_zones:
            for b in range(z.start_pfn >> (MAX_ORDER - 1),
                           (z.end_pfn + (1 << (MAX_ORDER - 1)) - 1) >> (MAX_ORDER - 1)):
                self._zone_table[b] = z

    def _free_range_to_buddy(self, z: Zone, start: int, end: int, unusable) -> None:
        """free_all_bootmem(): hand every usable page to the buddy lists, in
        the largest naturally aligned blocks (what coalescing would give)."""
        unusable = sorted(unusable)
        cur = start
        spans = []
        for s, e in unusable:
            if s > cur:
                spans.append((cur, s))
            cur = max(cur, e)
        if cur < end:
            spans.append((cur, end))
        for s, e in spans:
            pfn = s
            while pfn < e:
                order = MAX_ORDER - 1
                while order and (pfn & ((1 << order) - 1) or pfn + (1 << order) > e):
                    order -= 1
                z.free_area[order][pfn] = None
                z.free_order[pfn] = order
                z.free_pages += 1 << order
                pfn += 1 << order

    def init_per_zone_pages_min(self) -> None:
        """min_free_kbytes = sqrt(lowmem_kbytes * 16), 128 kB .. 64 MB."""
        lowmem_kbytes = sum(z.present_pages for z in self.zones) * (PAGE_SIZE >> 10)
        mfk = int_sqrt(lowmem_kbytes * 16)
        self.min_free_kbytes = max(128, min(65536, mfk))
        self.setup_per_zone_pages_min()
        self.setup_per_zone_lowmem_reserve()

    def setup_per_zone_pages_min(self) -> None:
        pages_min = self.min_free_kbytes >> (PAGE_SHIFT - 10)
        lowmem_pages = sum(z.present_pages for z in self.zones) or 1
        for z in self.zones:
            tmp = pages_min * z.present_pages // lowmem_pages
            z.pages_min = tmp
            z.pages_low = tmp + (tmp >> 2)
            z.pages_high = tmp + (tmp >> 1)
        self._calculate_totalreserve_pages()

    def setup_per_zone_lowmem_reserve(self) -> None:
        """A lower zone keeps back 1/ratio of the pages of the zones above it
        (up to the allocation's class zone) from allocations that could
        have used those higher zones."""
        zones = self.zones
        for j in range(len(zones)):
            above = zones[j].present_pages
            zones[j].lowmem_reserve[j] = 0
            for idx in range(j - 1, -1, -1):
                ratio = max(1, self.lowmem_reserve_ratio[idx])
                zones[idx].lowmem_reserve[j] = above // ratio
                above += zones[idx].present_pages
        self._calculate_totalreserve_pages()

    def _calculate_totalreserve_pages(self) -> None:
        total = 0
        for z in self.zones:
            mx = max(z.lowmem_reserve) if z.lowmem_reserve else 0
            r = mx + z.pages_high
            total += min(r, z.present_pages)
        self.totalreserve_pages = total

    def set_min_free_kbytes(self, kb: int) -> None:
        self.min_free_kbytes = kb
        self.setup_per_zone_pages_min()

    # ------------------------------------------------------------ accounting
    def zone_of(self, pfn: int) -> Zone:
        """``page_zone()``: zones start on MAX_ORDER boundaries here, so a
        table per 1024-page block answers it."""
        try:
            return self._zone_table[pfn >> (MAX_ORDER - 1)]
        except IndexError:
            raise ValueError("pfn %#x outside memory" % pfn) from None

    def nr_free_pages(self) -> int:
        return sum(z.free_pages for z in self.zones)

    def zonelist(self, gfp: int) -> list[Zone]:
        """Populated zones usable for this gfp, highest first."""
        zl = self._zonelists.get(gfp)
        if zl is None:
            high = gfp_zone(gfp)
            zl = [z for z in reversed(self.zones) if z.idx <= high and z.populated]
            self._zonelists[gfp] = zl
        return zl

    # ------------------------------------------------------------ freelists
    def rmqueue_bulk(self, zone: Zone, count: int, pcp: PerCpuPages) -> int:
        got = 0
        for _ in range(count):
            pfn = zone.rmqueue_smallest(0)
            if pfn is None:
                break
            pcp.list.append(pfn)             # list_add_tail
            got += 1
        pcp.count += got
        zone.free_pages -= got
        return got

    def buffered_rmqueue(self, zone: Zone, order: int, gfp: int, cpu: int) -> int | None:
        if order == 0:
            pcp = zone.pcp[cpu % len(zone.pcp)]
            if not pcp.count:
                if not self.rmqueue_bulk(zone, pcp.batch, pcp):
                    return None
            pcp.count -= 1
            if gfp & _GFP_COLD:
                return pcp.list.pop()
            return pcp.list.popleft()
        pfn = zone.rmqueue_smallest(order)
        if pfn is not None:
            zone.free_pages -= 1 << order
        return pfn

    def get_page_from_freelist(self, gfp: int, order: int, zonelist: list[Zone],
                               alloc_flags: int, cpu: int) -> int | None:
        classzone_idx = zonelist[0].idx
        for zone in zonelist:
            if not alloc_flags & ALLOC_NO_WATERMARKS:
                mark = zone.watermark(alloc_flags)
                if order or alloc_flags & (ALLOC_HIGH | ALLOC_HARDER):
                    if not zone_watermark_ok(zone, order, mark, classzone_idx, alloc_flags):
                        continue
                elif zone.free_pages <= mark + zone.lowmem_reserve[classzone_idx]:
                    continue        # zone_watermark_ok() for order 0, no reductions
            pfn = self.buffered_rmqueue(zone, order, gfp, cpu)
            if pfn is not None:
                return pfn
        return None

    def free_pages(self, pfn: int, order: int = 0, cpu: int = 0, cold: bool = False) -> None:
        """``__free_pages()``: order 0 through the per-cpu list."""
        self.nr_free_calls += 1
        zone = self.zone_of(pfn)
        if order == 0:
            pcp = zone.pcp[cpu % len(zone.pcp)]
            if cold:
                pcp.list.append(pfn)
            else:
                pcp.list.appendleft(pfn)
            pcp.count += 1
            if pcp.count >= pcp.high:
                self._free_pages_bulk(zone, pcp, pcp.batch)
            return
        zone.free_one_page(pfn, order)
        zone.free_pages += 1 << order

    def free_page_list(self, pfns: list[int], cpu: int = 0) -> None:
        """Free many order-0 pages (``exit_mmap``, truncate).

        Long lists skip the per-cpu lists and go to the buddy lists in
        naturally aligned runs: the coalesced result is the same as freeing
        them one by one, at a fraction of the cost."""
        if len(pfns) < 64:
            for pfn in pfns:
                self.free_pages(pfn, 0, cpu, cold=True)
            return
        pfns = sorted(pfns)
        n = len(pfns)
        i = 0
        zone = None
        while i < n:
            pfn = pfns[i]
            if zone is None or not zone.start_pfn <= pfn < zone.end_pfn:
                zone = self.zone_of(pfn)
            order = 0
            while order < MAX_ORDER - 1:
                size = 2 << order
                if pfn & (size - 1) or i + size > n or pfns[i + size - 1] != pfn + size - 1:
                    break
                order += 1
            zone.free_one_page(pfn, order)
            zone.free_pages += 1 << order
            i += 1 << order
        for z in self.managed_zones:
            z.all_unreclaimable = False
            z.pages_scanned = 0

    def _free_pages_bulk(self, zone: Zone, pcp: PerCpuPages, count: int) -> None:
        count = min(count, pcp.count)
        lst = pcp.list
        for _ in range(count):
            zone.free_one_page(lst.pop(), 0)
        pcp.count -= count
        zone.free_pages += count
        zone.all_unreclaimable = False
        zone.pages_scanned = 0

    def free_blocks(self):
        """(pfn, order) of every free block: buddy lists and per-cpu lists."""
        for z in self.managed_zones:
            for order, area in enumerate(z.free_area):
                for pfn in area:
                    yield pfn, order
            for pcp in z.pcp:
                for pfn in pcp.list:
                    yield pfn, 0

    def drain_all_pages(self) -> None:
        for zone in self.managed_zones:
            for pcp in zone.pcp:
                if pcp.count:
                    self._free_pages_bulk(zone, pcp, pcp.count)
