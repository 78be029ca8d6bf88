"""Page reclaim of Linux 2.6.30 (mm/vmscan.c, mm/page-writeback.c).

What is reclaimable, and who reclaims it:

* page cache on per-zone LRU lists, oldest first: clean pages are freed at
  once; dirty pages must first be written back (``pageout``), which needs a
  ``GFP_NOIO`` allocation for the bio *in the reclaimer's context* - for
  kswapd and direct reclaimers that is a PF_MEMALLOC allocation, the source
  of the allocator's no-watermark successes;
* reclaimable slab (dentries, inodes), shrunk when the LRU gives too little;
* anonymous memory is not reclaimable: the board has no swap.

``kswapd`` is woken by the allocator when a zone drops below ``pages_low``
and reclaims in the background, a bounded number of pages per jiffy, until
every zone is back above ``pages_high``.  ``try_to_free_pages`` is direct
reclaim: at most ``SWAP_CLUSTER_MAX`` pages for the caller, telling it
whether it is worth waiting for writeback in flight.  The block device
writes a fixed number of pages per jiffy; pdflush starts background
writeback above ``dirty_background_ratio`` and for data older than
``dirty_expire``.
"""

from __future__ import annotations

from collections import deque

from .page_alloc_2630 import (GFP_NOIO, MmTask, PF_KSWAPD, PF_KTHREAD, PF_MEMALLOC,
                              PENDING, PageAllocator, Zone, _GFP_FS, _GFP_IO,
                              zone_watermark_ok)

SWAP_CLUSTER_MAX = 32
PAGES_PER_BIO_PAGE = 16          # pages written per page of bio/buffer_head slab


class WritebackBatch:
    __slots__ = ("pages", "done", "slab_pfn", "reclaim", "owner_cpu")

    def __init__(self, pages, slab_pfn, reclaim, cpu):
        self.pages = pages
        self.done = 0
        self.slab_pfn = slab_pfn
        self.reclaim = reclaim
        self.owner_cpu = cpu


class Vmscan:
    def __init__(self, pa: PageAllocator, kswapd: MmTask, pdflush: MmTask,
                 kswapd_pages_per_jiffy: int = 48, disk_pages_per_jiffy: int = 10,
                 queue_pages: int = 1024, hz: int = 250):
        self.pa = pa
        pa.vmscan = self
        self.hz = hz
        self.kswapd = kswapd
        kswapd.flags |= PF_MEMALLOC | PF_KSWAPD | PF_KTHREAD
        self.pdflush = pdflush
        pdflush.flags |= PF_KTHREAD
        self.kswapd_rate = kswapd_pages_per_jiffy
        self.disk_rate = disk_pages_per_jiffy
        self.queue_limit = queue_pages
        self.kswapd_awake = False
        self.kswapd_max_order = 0
        self.kswapd_wakeups = 0
        self.queue: deque[WritebackBatch] = deque()
        self.bio_wait: list[tuple[list[int], list[int]]] = []   # (pages, bio pages so far)
        self.nr_queued = 0
        self.nr_dirty = 0
        self.nr_writeback = 0
        self.nr_file = 0
        self.nr_anon = 0
        self.nr_slab_reclaimable = 0
        self.dirty_background_ratio = 10
        self.dirty_ratio = 20
        self.dirty_expire = 30 * hz
        self.writeback_interval = 5 * hz
        self.pgsteal = 0
        self.pgscan_direct = 0
        self.pgscan_kswapd = 0
        self.pageoutrun = 0
        self.allocstall = 0

    # ----------------------------------------------------------- LRU adds
    def add_file_page(self, pfn: int, dirty: bool = False) -> None:
        zone = self.pa.zone_of(pfn)
        if dirty:
            zone.lru_dirty[pfn] = self.pa.jiffies
            self.nr_dirty += 1
        else:
            zone.lru_clean[pfn] = None
        self.nr_file += 1

    def add_slab_reclaimable(self, pfn: int) -> None:
        self.pa.zone_of(pfn).slab_reclaimable[pfn] = None
        self.nr_slab_reclaimable += 1

    def reclaimable_pages(self, zone: Zone) -> int:
        return len(zone.lru_clean) + len(zone.lru_dirty) + zone.nr_writeback \
            + len(zone.slab_reclaimable)

    # -------------------------------------------------------- dirty limits
    def dirtyable_memory(self) -> int:
        return self.pa.nr_free_pages() + self.nr_file + self.nr_anon + 1

    def dirty_limits(self) -> tuple[int, int]:
        avail = self.dirtyable_memory()
        return avail * self.dirty_background_ratio // 100, avail * self.dirty_ratio // 100

    def congested(self) -> bool:
        return self.nr_queued >= self.queue_limit

    # ------------------------------------------------------------ writeback
    def start_writeback(self, pages: list[int], task: MmTask, reclaim: bool):
        """Queue ``pages`` (already off the dirty lists) for the disk.

        The bio needs memory: allocated with GFP_NOIO in ``task``'s context.
        Returns True if queued, False if the allocation failed (the pages are
        redirtied), PENDING if ``task`` sleeps first (queued on wake-up)."""
        if not pages:
            return True
        need = (len(pages) + PAGES_PER_BIO_PAGE - 1) // PAGES_PER_BIO_PAGE
        slab: list[int] = []
        waiting = (pages, slab)
        self.bio_wait.append(waiting)
        self._in_flight(pages)

        def done_waiting():
            for i, w in enumerate(self.bio_wait):
                if w is waiting:
                    del self.bio_wait[i]
                    return

        def submit(pfn):
            while True:
                if pfn is None:
                    done_waiting()
                    for p in slab:
                        self.pa.free_pages(p, 0, task.cpu)
                    self._redirty(pages)
                    return False
                slab.append(pfn)
                if len(slab) >= need:
                    done_waiting()
                    self._queue(pages, slab, reclaim, task.cpu)
                    return True
                pfn = self.pa.alloc_pages(GFP_NOIO, 0, task, submit)
                if pfn is PENDING:
                    return PENDING

        res = self.pa.alloc_pages(GFP_NOIO, 0, task, submit)
        if res is PENDING:
            return PENDING
        return submit(res)

    def owned_pages(self):
        """(pfn, order) of every page reclaim knows about."""
        for z in self.pa.managed_zones:
            for pfn in z.lru_clean:
                yield pfn, 0
            for pfn in z.lru_dirty:
                yield pfn, 0
            for pfn in z.slab_reclaimable:
                yield pfn, 0
        for b in self.queue:
            for pfn in b.pages[b.done:]:
                yield pfn, 0
            yield b.slab_pfn, 0
        for pages, slab in self.bio_wait:
            for pfn in pages:
                yield pfn, 0
            for pfn in slab:
                yield pfn, 0

    def _in_flight(self, pages: list[int]) -> None:
        # taken off the dirty list: counted as writeback while the bio is built
        for pfn in pages:
            self.pa.zone_of(pfn).nr_writeback += 1
        self.nr_writeback += len(pages)

    def _redirty(self, pages: list[int]) -> None:
        now = self.pa.jiffies
        for pfn in pages:
            zone = self.pa.zone_of(pfn)
            zone.nr_writeback -= 1
            zone.lru_dirty[pfn] = now
        self.nr_writeback -= len(pages)
        self.nr_dirty += len(pages)

    def _queue(self, pages, slab, reclaim, cpu) -> None:
        # one batch per bio page
        for i, spfn in enumerate(slab):
            chunk = pages[i * PAGES_PER_BIO_PAGE:(i + 1) * PAGES_PER_BIO_PAGE]
            self.queue.append(WritebackBatch(chunk, spfn, reclaim, cpu))
            self.nr_queued += len(chunk)

    def take_dirty(self, zone: Zone, n: int, older_than: int | None = None) -> list[int]:
        out = []
        lst = zone.lru_dirty
        while lst and len(out) < n:
            pfn, when = lst.popitem(last=False)
            if older_than is not None and when > older_than:
                lst[pfn] = when
                lst.move_to_end(pfn, last=False)
                break
            out.append(pfn)
        self.nr_dirty -= len(out)
        return out

    def disk_tick(self) -> None:
        """The block device completes ``disk_rate`` pages this jiffy."""
        budget = self.disk_rate
        pa = self.pa
        while budget and self.queue:
            b = self.queue[0]
            n = min(budget, len(b.pages) - b.done)
            for pfn in b.pages[b.done:b.done + n]:
                zone = pa.zone_of(pfn)
                zone.nr_writeback -= 1
                zone.lru_clean[pfn] = None
                if b.reclaim:    # PG_reclaim: rotate to the tail for reclaim
                    zone.lru_clean.move_to_end(pfn, last=False)
            self.nr_writeback -= n
            self.nr_queued -= n
            b.done += n
            budget -= n
            if b.done == len(b.pages):
                self.queue.popleft()
                pa.free_pages(b.slab_pfn, 0, b.owner_cpu)

    # --------------------------------------------------------- shrink_zone
    def shrink_zone(self, zone: Zone, nr_to_reclaim: int, task: MmTask, may_write: bool) -> int:
        pa = self.pa
        freed = 0
        clean = zone.lru_clean
        cpu = task.cpu
        while clean and freed < nr_to_reclaim:
            pfn, _ = clean.popitem(last=False)
            pa.free_pages(pfn, 0, cpu, cold=True)
            freed += 1
        self.nr_file -= freed
        if freed < nr_to_reclaim and zone.slab_reclaimable:
            # shrink_slab: a slice of the caches, not all of them at once
            want = min(nr_to_reclaim - freed, max(1, len(zone.slab_reclaimable) // 16))
            slab = zone.slab_reclaimable
            n = 0
            while slab and n < want:
                pfn, _ = slab.popitem(last=False)
                pa.free_pages(pfn, 0, cpu, cold=True)
                n += 1
            self.nr_slab_reclaimable -= n
            freed += n
        if freed < nr_to_reclaim and may_write and zone.lru_dirty and not self.congested():
            pages = self.take_dirty(zone, nr_to_reclaim - freed)
            self.start_writeback(pages, task, reclaim=True)
        self.pgsteal += freed
        if freed:
            zone.all_unreclaimable = False
            zone.pages_scanned = 0
        else:
            zone.pages_scanned += nr_to_reclaim
        return freed

    # ------------------------------------------------------- direct reclaim
    def try_to_free_pages(self, zonelist: list[Zone], order: int, gfp: int,
                          task: MmTask) -> tuple[int, bool]:
        """Free up to SWAP_CLUSTER_MAX pages for a sleeping allocator.

        Returns ``(nr_reclaimed, worth_waiting)``: the second is True when
        nothing could be freed now but writeback in flight (or startable)
        will make pages reclaimable soon."""
        self.allocstall += 1
        may_write = bool(gfp & _GFP_FS and gfp & _GFP_IO)
        nr = 0
        for zone in zonelist:
            if nr >= SWAP_CLUSTER_MAX:
                break
            nr += self.shrink_zone(zone, SWAP_CLUSTER_MAX - nr, task, may_write)
        self.pgscan_direct += SWAP_CLUSTER_MAX
        if nr:
            return nr, False
        pending = any(z.nr_writeback or z.lru_dirty for z in zonelist)
        if not pending:
            for z in zonelist:
                z.all_unreclaimable = True
        return 0, pending

    # --------------------------------------------------------------- kswapd
    def wake_kswapd(self, order: int) -> None:
        if order > self.kswapd_max_order:
            self.kswapd_max_order = order
        if not self.kswapd_awake:
            self.kswapd_awake = True
            self.kswapd_wakeups += 1

    def kswapd_tick(self) -> None:
        """One jiffy of ``balance_pgdat``: reclaim the zones below high."""
        if not self.kswapd_awake:
            return
        self.pageoutrun += 1
        order = self.kswapd_max_order
        budget = self.kswapd_rate
        reclaimed = 0
        unbalanced = 0
        stuck = 0
        for zone in self.pa.managed_zones:
            if zone_watermark_ok(zone, order, zone.pages_high, 0, 0):
                continue
            unbalanced += 1
            if budget <= 0:
                continue
            got = self.shrink_zone(zone, budget, self.kswapd, may_write=True)
            self.pgscan_kswapd += budget
            budget -= got
            reclaimed += got
            if not got and not zone.nr_writeback and not zone.lru_dirty:
                zone.all_unreclaimable = True
                stuck += 1
        if not unbalanced or stuck == unbalanced:
            self.kswapd_awake = False
            self.kswapd_max_order = 0
        elif order and reclaimed < SWAP_CLUSTER_MAX:
            self.kswapd_max_order = 0      # give up on the high order

    # -------------------------------------------------------------- pdflush
    def pdflush_tick(self) -> None:
        if self.pdflush.blocked or self.congested():
            return
        bg, _ = self.dirty_limits()
        pa = self.pa
        older = None
        n = 0
        if self.nr_dirty > bg:
            n = self.disk_rate * 2
        elif pa.jiffies % self.writeback_interval == 0 and self.nr_dirty:
            n = 1 << 30
            older = pa.jiffies - self.dirty_expire
        if not n:
            return
        for zone in pa.managed_zones:
            if n <= 0 or self.congested():
                break
            pages = self.take_dirty(zone, min(n, self.queue_limit - self.nr_queued), older)
            if not pages:
                continue
            n -= len(pages)
            if self.start_writeback(pages, self.pdflush, reclaim=False) is PENDING:
                break

    def tick(self) -> None:
        self.disk_tick()
        self.kswapd_tick()
        self.pdflush_tick()

