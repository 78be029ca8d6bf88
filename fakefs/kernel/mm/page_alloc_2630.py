"""The zoned buddy allocator of Linux 2.6.30 (mm/page_alloc.c of that era).

A model of physical memory at page granularity, small enough to run inside
the timer hooks:

* zones (DMA, DMA32; Normal only above 4 GiB) with real buddy free lists:
  ``free_area[order]`` keyed by the head pfn of each free block, split on
  allocation and coalesced with ``pfn ^ (1 << order)`` on free, LIFO like
  the kernel's ``list_add``/``list_entry(->next)``;
* per-CPU order-0 page lists (``pcp``: ``high``/``batch`` as
  ``zone_batchsize()`` computes them); pages there are not in
  ``NR_FREE_PAGES``;
* ``pages_min``/``pages_low``/``pages_high`` from ``min_free_kbytes`` and
  ``lowmem_reserve[]`` from ``sysctl_lowmem_reserve_ratio``, and the
  order-aware ``zone_watermark_ok()`` with the ALLOC_HIGH/ALLOC_HARDER
  reductions;
* ``__alloc_pages_internal()``'s descent as a resumable state machine:
  low watermark, kswapd wake-up and the min watermark, the no-watermark
  reserves of PF_MEMALLOC/TIF_MEMDIE tasks, synchronous direct reclaim,
  the zonelist OOM lock with the high-watermark retry, the OOM killer,
  and ``nopage``.  A caller that would sleep (``congestion_wait``,
  ``schedule_timeout``, waiting on writeback) is parked and resumed by
  :meth:`PageAllocator.tick`; ``alloc_pages`` then returns ``PENDING`` and
  the result is delivered to the caller's ``on_done`` callback.

The EQware instrumentation (``heap_alloc_count[6]``) sits where the 2009
patch put it: one increment at each of the five ``goto got_pg`` sites and
one after ``nopage:``.  Reclaim (``vmscan``) and the OOM killer are
separate objects plugged in as ``allocator.vmscan`` and ``allocator.oom``.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque

PAGE_SHIFT = 12
PAGE_SIZE = 1 << PAGE_SHIFT
MAX_ORDER = 11
PAGE_ALLOC_COSTLY_ORDER = 3
SIZEOF_STRUCT_PAGE = 56          # x86_64, 2.6.30

# --- gfp.h (2.6.30 bit values) -------------------------------------------
_GFP_DMA = 0x01
_GFP_HIGHMEM = 0x02
_GFP_DMA32 = 0x04
_GFP_WAIT = 0x10
_GFP_HIGH = 0x20
_GFP_IO = 0x40
_GFP_FS = 0x80
_GFP_COLD = 0x100
_GFP_NOWARN = 0x200
_GFP_REPEAT = 0x400
_GFP_NOFAIL = 0x800
_GFP_NORETRY = 0x1000
_GFP_COMP = 0x4000
_GFP_ZERO = 0x8000
_GFP_NOMEMALLOC = 0x10000
_GFP_HARDWALL = 0x20000
_GFP_THISNODE = 0x40000
_GFP_RECLAIMABLE = 0x80000
_GFP_MOVABLE = 0x100000

GFP_NOWAIT = 0
GFP_ATOMIC = _GFP_HIGH
GFP_NOIO = _GFP_WAIT
GFP_NOFS = _GFP_WAIT | _GFP_IO
GFP_KERNEL = _GFP_WAIT | _GFP_IO | _GFP_FS
GFP_TEMPORARY = GFP_KERNEL | _GFP_RECLAIMABLE
GFP_USER = GFP_KERNEL | _GFP_HARDWALL
GFP_HIGHUSER = GFP_USER | _GFP_HIGHMEM
GFP_HIGHUSER_MOVABLE = GFP_HIGHUSER | _GFP_MOVABLE

# --- zones (x86_64 numbering) ----------------------------------------------
ZONE_DMA, ZONE_DMA32, ZONE_NORMAL, ZONE_MOVABLE = range(4)
ZONE_NAMES = ("DMA", "DMA32", "Normal", "Movable")
# sysctl_lowmem_reserve_ratio for DMA, DMA32, Normal
LOWMEM_RESERVE_RATIO = [256, 256, 32]

# --- alloc_flags (local to page_alloc.c) -----------------------------------
ALLOC_NO_WATERMARKS = 0x01
ALLOC_WMARK_MIN = 0x02
ALLOC_WMARK_LOW = 0x04
ALLOC_WMARK_HIGH = 0x08
ALLOC_HARDER = 0x10
ALLOC_HIGH = 0x20
ALLOC_CPUSET = 0x40

# --- task flags the allocator looks at --------------------------------------
PF_EXITING = 0x00000004
PF_MEMALLOC = 0x00000800
PF_KSWAPD = 0x00040000
PF_KTHREAD = 0x00200000

# EQware counter indices (the article numbers them 1..6)
LVL_LOW, LVL_MIN, LVL_NO_WMARK, LVL_RECLAIM, LVL_OOM_HIGH, LVL_FAIL = range(6)


class _Pending:
    """Returned by ``alloc_pages`` when the caller has gone to sleep."""

    def __repr__(self):
        return "PENDING"

    def __bool__(self):
        return False


PENDING = _Pending()


class MmTask:
    """The parts of ``task_struct`` (and its mm) the allocator reads."""

    __slots__ = ("pid", "comm", "flags", "memdie", "rt", "in_interrupt", "cpu",
                 "oomkilladj", "uid", "rss", "pgtables", "stack", "start_jiffy",
                 "utime", "blocked", "alive", "exit_at", "parent", "nice", "on_exit",
                 "on_page")

    def __init__(self, pid: int, comm: str, cpu: int = 0, flags: int = 0,
                 in_interrupt: bool = False, rt: bool = False, uid: int = 0):
        self.pid = pid
        self.comm = comm[:15]
        self.flags = flags
        self.memdie = False          # TIF_MEMDIE
        self.rt = rt
        self.in_interrupt = in_interrupt
        self.cpu = cpu
        self.oomkilladj = 0
        self.uid = uid
        self.rss: list[int] = []     # anon pages (order-0 pfns)
        self.pgtables: list[int] = []
        self.stack = None            # (pfn, order) of the kernel stack
        self.start_jiffy = 0
        self.utime = 0               # jiffies of cpu time
        self.blocked = False         # sleeping in the allocator
        self.alive = True
        self.exit_at = None          # jiffy of the pending exit (SIGKILL)
        self.parent = None
        self.nice = 0
        self.on_exit = None
        self.on_page = None

    @property
    def total_vm(self) -> int:
        return len(self.rss) + len(self.pgtables)

    @property
    def has_mm(self) -> bool:
        return not (self.flags & PF_KTHREAD)

    def __repr__(self):
        return f"MmTask({self.comm}-{self.pid})"


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


def gfp_zone(gfp: int) -> int:
    if gfp & _GFP_DMA:
        return ZONE_DMA
    if gfp & _GFP_DMA32:
        return ZONE_DMA32
    if (gfp & (_GFP_MOVABLE | _GFP_HIGHMEM)) == (_GFP_MOVABLE | _GFP_HIGHMEM):
        return ZONE_MOVABLE
    return ZONE_NORMAL        # no CONFIG_HIGHMEM on x86_64


class AllocRequest:
    """A caller asleep somewhere inside ``__alloc_pages_internal``."""

    __slots__ = ("gfp", "order", "task", "on_done", "label", "zonelist",
                 "alloc_flags", "pages_reclaimed", "reclaim_waits")

    def __init__(self, gfp, order, task, on_done, zonelist):
        self.gfp = gfp
        self.order = order
        self.task = task
        self.on_done = on_done
        self.zonelist = zonelist
        self.label = "restart"
        self.alloc_flags = 0
        self.pages_reclaimed = 0
        self.reclaim_waits = 0


# how long the allocator sleeps, in jiffies (filled from HZ)
class _Sleeps:
    def __init__(self, hz: int):
        self.congestion = max(1, hz // 50)     # congestion_wait(WRITE, HZ/50)
        self.reclaim = max(1, hz // 10)        # reclaim's congestion_wait(HZ/10)
        self.timeout1 = 1                      # schedule_timeout_uninterruptible(1)


class PageAllocator:
    """All zones of node 0 plus the allocation entry points.

    ``layout`` is the usable memory: ``mem_bytes`` of RAM starting at 0
    with the PC holes, and ``reserved`` pfn ranges taken by the kernel
    image and early allocations (never handed to the buddy lists).
    """

    MAX_RECLAIM_WAITS = 4      # priority passes that wait for writeback
    P_RESCHED = 0.25           # chance to be preempted between reclaim and OOM

    def __init__(self, mem_bytes: int = 128 << 20, nr_cpus: int = 1, hz: int = 250,
                 reserved: list[tuple[int, int]] | None = None, printk=None,
                 rng=None):
        self.nr_cpus = max(1, nr_cpus)
        self.hz = hz
        self.sleeps = _Sleeps(hz)
        self.jiffies = 0
        self.printk = printk or (lambda text, level=6: None)
        self.rng = rng
        self.heap_alloc_count = [0] * 6
        self.vmscan = None           # set by vmscan_2630.attach()
        self.oom = None              # set by oom_kill_2630.attach()
        self._parked: dict[int, list[AllocRequest]] = {}
        self.nr_parked = 0
        self._zonelists: dict[int, list[Zone]] = {}
        self.nr_failures_warned = 0
        self._ratelimit = (-(10 ** 9), 0)   # printk_ratelimit: (window start, count)
        self.totalram_pages = 0
        self.totalreserve_pages = 0
        self.min_free_kbytes = 0
        self.lowmem_reserve_ratio = list(LOWMEM_RESERVE_RATIO)
        self.nr_alloc = 0
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

    # ------------------------------------------------------------- kswapd
    def wakeup_kswapd(self, zone: Zone, order: int) -> None:
        vm = self.vmscan
        if vm is None or (vm.kswapd_awake and order <= vm.kswapd_max_order):
            return              # already running for this order: nothing to do
        if not zone.populated:
            return
        if zone_watermark_ok(zone, order, zone.pages_low, 0, 0):
            return
        vm.wake_kswapd(order)

    # --------------------------------------------------------- OOM zone lock
    def try_set_zone_oom(self, zonelist: list[Zone]) -> bool:
        if any(z.oom_locked for z in zonelist):
            return False
        for z in zonelist:
            z.oom_locked = True
        return True

    def clear_zonelist_oom(self, zonelist: list[Zone]) -> None:
        for z in zonelist:
            z.oom_locked = False

    # ----------------------------------------------------------- allocation
    def alloc_pages(self, gfp: int, order: int, task: MmTask, on_done=None):
        """``__alloc_pages_internal()``.

        Returns the first pfn of the block, ``None`` for a failure, or
        ``PENDING`` when the caller sleeps; ``on_done(pfn_or_None)`` is
        then called when it wakes up with an answer.
        """
        self.nr_alloc += 1
        if order >= MAX_ORDER:
            return None
        zonelist = self.zonelist(gfp)
        if not zonelist:
            return None
        pfn = self.get_page_from_freelist(gfp | _GFP_HARDWALL, order, zonelist,
                                          ALLOC_WMARK_LOW | ALLOC_CPUSET, task.cpu)
        if pfn is not None:
            self.heap_alloc_count[LVL_LOW] += 1
            return pfn
        req = AllocRequest(gfp, order, task, on_done, zonelist)
        req.label = "after_first"
        return self._run(req)

    def _park(self, req: AllocRequest, delay: int, label: str):
        req.label = label
        req.task.blocked = True
        when = self.jiffies + max(1, delay)
        self._parked.setdefault(when, []).append(req)
        self.nr_parked += 1
        return PENDING

    def _done(self, req: AllocRequest, pfn, level: int):
        self.heap_alloc_count[level] += 1
        if level == LVL_FAIL:
            self._warn_alloc_failure(req)
        return pfn

    def _run(self, req: AllocRequest):
        """Run the slow path from ``req.label`` until an answer or a sleep."""
        gfp, order, task, zl = req.gfp, req.order, req.task, req.zonelist
        wait = gfp & _GFP_WAIT
        label = req.label
        while True:
            if label == "restart":
                pfn = self.get_page_from_freelist(gfp | _GFP_HARDWALL, order, zl,
                                                  ALLOC_WMARK_LOW | ALLOC_CPUSET, task.cpu)
                if pfn is not None:
                    return self._done(req, pfn, LVL_LOW)
                label = "after_first"
            if label == "after_first":
                for zone in zl:
                    self.wakeup_kswapd(zone, order)
                flags = ALLOC_WMARK_MIN
                if (task.rt and not task.in_interrupt) or not wait:
                    flags |= ALLOC_HARDER
                if gfp & _GFP_HIGH:
                    flags |= ALLOC_HIGH
                if wait:
                    flags |= ALLOC_CPUSET
                req.alloc_flags = flags
                pfn = self.get_page_from_freelist(gfp, order, zl, flags, task.cpu)
                if pfn is not None:
                    return self._done(req, pfn, LVL_MIN)
                label = "rebalance"
            if label == "rebalance":
                if (task.flags & PF_MEMALLOC or task.memdie) and not task.in_interrupt:
                    if not gfp & _GFP_NOMEMALLOC:
                        pfn = self.get_page_from_freelist(gfp, order, zl, ALLOC_NO_WATERMARKS,
                                                          task.cpu)
                        if pfn is not None:
                            return self._done(req, pfn, LVL_NO_WMARK)
                        if gfp & _GFP_NOFAIL:
                            return self._park(req, self.sleeps.congestion, "rebalance")
                    return self._done(req, None, LVL_FAIL)
                if not wait:
                    return self._done(req, None, LVL_FAIL)
                label = "reclaim"
            if label == "reclaim":
                progress, must_wait = self._direct_reclaim(req)
                if not progress and must_wait and req.reclaim_waits < self.MAX_RECLAIM_WAITS:
                    req.reclaim_waits += 1
                    return self._park(req, self.sleeps.reclaim, "reclaim")
                req.reclaim_waits = 0
                if order:
                    self.drain_all_pages()
                if progress:
                    pfn = self.get_page_from_freelist(gfp, order, zl, req.alloc_flags, task.cpu)
                    if pfn is not None:
                        return self._done(req, pfn, LVL_RECLAIM)
                elif gfp & _GFP_FS and not gfp & _GFP_NORETRY:
                    # cond_resched() after reclaim: on a busy board the task
                    # may lose the CPU here for a while
                    if self.rng is not None and self.rng.random() < self.P_RESCHED:
                        return self._park(req, 1, "oom")
                    label = "oom"
                    continue
                req.pages_reclaimed += progress
                retry = False
                if not gfp & _GFP_NORETRY:
                    if order <= PAGE_ALLOC_COSTLY_ORDER:
                        retry = True
                    elif gfp & _GFP_REPEAT and req.pages_reclaimed < (1 << order):
                        retry = True
                    if gfp & _GFP_NOFAIL:
                        retry = True
                if retry:
                    return self._park(req, self.sleeps.congestion, "rebalance")
                return self._done(req, None, LVL_FAIL)
            if label == "oom":
                if not self.try_set_zone_oom(zl):
                    return self._park(req, self.sleeps.timeout1, "restart")
                # only to catch a parallel OOM kill: the high watermark
                pfn = self.get_page_from_freelist(gfp | _GFP_HARDWALL, order, zl,
                                                  ALLOC_WMARK_HIGH | ALLOC_CPUSET, task.cpu)
                if pfn is not None:
                    self.clear_zonelist_oom(zl)
                    return self._done(req, pfn, LVL_OOM_HIGH)
                if order > PAGE_ALLOC_COSTLY_ORDER:
                    self.clear_zonelist_oom(zl)
                    return self._done(req, None, LVL_FAIL)
                if self.oom is not None:
                    self.oom.out_of_memory(zl, gfp, order, task)
                self.clear_zonelist_oom(zl)
                if not task.memdie:
                    return self._park(req, self.sleeps.timeout1, "restart")
                label = "restart"

    def _direct_reclaim(self, req: AllocRequest) -> tuple[int, bool]:
        if self.vmscan is None:
            return 0, False
        task = req.task
        saved = task.flags
        task.flags |= PF_MEMALLOC
        try:
            return self.vmscan.try_to_free_pages(req.zonelist, req.order, req.gfp, task)
        finally:
            task.flags = saved

    def _warn_alloc_failure(self, req: AllocRequest) -> None:
        if req.gfp & _GFP_NOWARN:
            return
        if not self.printk_ratelimit():
            return
        self.nr_failures_warned += 1
        self.printk("%s: page allocation failure. order:%d, mode:0x%x"
                    % (req.task.comm, req.order, req.gfp), 4)

    def printk_ratelimit(self) -> bool:
        """10 messages per 5 s window (printk_ratelimit_state of 2.6.30)."""
        start, n = self._ratelimit
        if self.jiffies - start >= 5 * self.hz:
            start, n = self.jiffies, 0
        if n >= 10:
            self._ratelimit = (start, n)
            return False
        self._ratelimit = (start, n + 1)
        return True

    # ---------------------------------------------------------------- time
    def tick(self) -> None:
        """Advance one jiffy and wake the sleepers that are due."""
        self.jiffies += 1
        due = self._parked.pop(self.jiffies, None)
        if not due:
            return
        for req in due:
            self.nr_parked -= 1
            req.task.blocked = False
            if not req.task.alive:
                continue
            res = self._run(req)
            if res is not PENDING and req.on_done is not None:
                req.on_done(res)

    def parked(self) -> list[AllocRequest]:
        return [r for lst in self._parked.values() for r in lst]
