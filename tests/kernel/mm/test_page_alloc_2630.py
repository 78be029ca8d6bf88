"""The 2.6.30 zoned buddy allocator: zones, buddy lists, watermarks, levels."""

from __future__ import annotations

import math

import pytest

from fakefs.kernel.mm import page_alloc_2630 as pa_mod
from fakefs.kernel.mm.page_alloc_2630 import (
    ALLOC_HARDER, ALLOC_HIGH, GFP_ATOMIC, GFP_HIGHUSER_MOVABLE, GFP_KERNEL, GFP_NOIO,
    LVL_FAIL, LVL_LOW, LVL_MIN, LVL_NO_WMARK, LVL_OOM_HIGH, LVL_RECLAIM, MAX_ORDER, PENDING,
    PF_MEMALLOC, ZONE_DMA, ZONE_DMA32, MmTask, PageAllocator, Zone, _GFP_COMP, _GFP_DMA,
    _GFP_NOMEMALLOC, _GFP_NOWARN, gfp_zone, zone_batchsize, zone_watermark_ok)

MB = 1 << 20


def make(mem=128 * MB, cpus=2, **kw):
    return PageAllocator(mem, nr_cpus=cpus, reserved=[(4096, 4096 + 2304)], **kw)


def free_state(pa):
    pa.drain_all_pages()
    return [[z.nr_free(o) for o in range(MAX_ORDER)] for z in pa.managed_zones]


def fill_to(pa, task, zone_free, gfp=GFP_HIGHUSER_MOVABLE):
    """Empty the DMA zone, and DMA32 down to ``zone_free`` free pages."""
    pa.drain_all_pages()
    got = []
    dma = pa.zones[ZONE_DMA]
    while True:
        pfn = dma.rmqueue_smallest(0)
        if pfn is None:
            break
        dma.free_pages -= 1
        got.append(pfn)
    z = pa.zones[ZONE_DMA32]
    while z.free_pages > zone_free:
        pfn = z.rmqueue_smallest(0)
        z.free_pages -= 1
        got.append(pfn)
    return got


# ------------------------------------------------------------------ zones
def test_zone_layout_128m():
    pa = make()
    dma, dma32, normal = pa.zones
    assert (dma.name, dma32.name, normal.name) == ("DMA", "DMA32", "Normal")
    assert dma.spanned_pages == 4096 and dma32.spanned_pages == 32768 - 4096
    assert normal.present_pages == 0 and not normal.populated
    # holes (page 0, 0x9f-0xff) and the memmap are not present
    assert dma.present_pages == 4096 - 98 - 56
    assert dma32.present_pages == 28672 - 392
    # reserved kernel pages are present but never free
    assert dma32.free_pages == dma32.present_pages - 2304


def test_min_free_kbytes_and_watermarks():
    pa = make()
    lowmem_kb = sum(z.present_pages for z in pa.zones) * 4
    assert pa.min_free_kbytes == math.isqrt(lowmem_kb * 16)
    pages_min = pa.min_free_kbytes >> 2
    lowmem = sum(z.present_pages for z in pa.zones)
    for z in pa.managed_zones:
        tmp = pages_min * z.present_pages // lowmem
        assert z.pages_min == tmp
        assert z.pages_low == tmp + (tmp >> 2)
        assert z.pages_high == tmp + (tmp >> 1)


def test_min_free_kbytes_clamped():
    assert make(mem=32 * MB).min_free_kbytes >= 128
    pa = make()
    pa.set_min_free_kbytes(4096)
    assert sum(z.pages_min for z in pa.zones) in range(1024 - 2, 1025)


def test_lowmem_reserve():
    pa = make()
    dma, dma32, _ = pa.zones
    assert dma.lowmem_reserve[ZONE_DMA] == 0
    assert dma.lowmem_reserve[ZONE_DMA32] == dma32.present_pages // 256
    assert dma32.lowmem_reserve[ZONE_DMA32] == 0
    pa.lowmem_reserve_ratio[0] = 32
    pa.setup_per_zone_lowmem_reserve()
    assert dma.lowmem_reserve[ZONE_DMA32] == dma32.present_pages // 32


@pytest.mark.parametrize("present,batch", [(3942, 0), (28280, 7), (12120, 1), (1000, 0),
                                           (262144, 31)])
def test_zone_batchsize(present, batch):
    assert zone_batchsize(present) == batch


def test_gfp_zone_and_zonelists():
    pa = make()
    assert gfp_zone(GFP_KERNEL) == 2 and gfp_zone(_GFP_DMA) == ZONE_DMA
    assert [z.name for z in pa.zonelist(GFP_KERNEL)] == ["DMA32", "DMA"]
    assert [z.name for z in pa.zonelist(GFP_HIGHUSER_MOVABLE)] == ["DMA32", "DMA"]
    assert [z.name for z in pa.zonelist(GFP_KERNEL | _GFP_DMA)] == ["DMA"]


# -------------------------------------------------------------- watermark
def _zone(free, counts=(), reserve=0):
    z = Zone(ZONE_DMA32, 0, 1 << 16, 1)
    z.free_pages = free
    for o, n in enumerate(counts):
        for i in range(n):
            z.free_area[o][(o + 1) << 20 | i << o] = None
    z.lowmem_reserve = [0, reserve, 0, 0]
    return z


def test_watermark_order0_boundary():
    z = _zone(101)
    assert zone_watermark_ok(z, 0, 100, ZONE_DMA32, 0)
    z.free_pages = 100
    assert not zone_watermark_ok(z, 0, 100, ZONE_DMA32, 0)      # needs more than the mark


def test_watermark_reserve_of_class_zone():
    z = _zone(150, reserve=60)
    assert not zone_watermark_ok(z, 0, 100, ZONE_DMA32, 0)
    assert zone_watermark_ok(z, 0, 100, ZONE_DMA, 0)            # own class: no reserve


def test_watermark_high_and_harder():
    z = _zone(51)
    assert not zone_watermark_ok(z, 0, 100, 1, 0)
    assert zone_watermark_ok(z, 0, 100, 1, ALLOC_HIGH)            # min/2
    z.free_pages = 39
    assert not zone_watermark_ok(z, 0, 100, 1, ALLOC_HIGH)
    assert zone_watermark_ok(z, 0, 100, 1, ALLOC_HIGH | ALLOC_HARDER)   # 37.5 %
    z.free_pages = 38
    assert not zone_watermark_ok(z, 0, 100, 1, ALLOC_HIGH | ALLOC_HARDER)
    z.free_pages = 76
    assert zone_watermark_ok(z, 0, 100, 1, ALLOC_HARDER) and not zone_watermark_ok(z, 0, 100, 1, 0)


def test_watermark_high_order_needs_big_blocks():
    # 400 free pages, all single pages: plenty for order 0, none for order 1
    z = _zone(400, counts=(400,))
    assert zone_watermark_ok(z, 0, 100, 1, 0)
    assert not zone_watermark_ok(z, 1, 100, 1, 0)
    # 200 order-0 + 100 order-1 blocks: order 1 passes (free-1-200 > 50)
    z = _zone(400, counts=(200, 100))
    assert zone_watermark_ok(z, 1, 100, 1, 0)
    assert not zone_watermark_ok(z, 2, 100, 1, 0)


# ------------------------------------------------------------------ buddy
def test_buddy_split_and_coalesce_roundtrip():
    pa = make(cpus=1)
    t = MmTask(1, "t")
    before = free_state(pa)
    blocks = []
    for order in (0, 1, 3, 5, 10, 2, 0, 4):
        pfn = pa.alloc_pages(GFP_KERNEL, order, t)
        assert pfn % (1 << order) == 0            # naturally aligned
        blocks.append((pfn, order))
    for pfn, order in reversed(blocks):
        pa.free_pages(pfn, order)
    assert free_state(pa) == before


def test_buddy_lifo_and_halves():
    z = Zone(ZONE_DMA32, 0, 1024, 1)
    z.free_area[10][0] = None
    z.free_order[0] = 10
    assert z.rmqueue_smallest(0) == 0
    # the upper halves are left on the lists, one per order
    assert [z.nr_free(o) for o in range(10)] == [1] * 10
    assert z.free_order[512] == 9 and z.free_order[1] == 0
    z.free_one_page(0, 0)
    assert z.nr_free(10) == 1 and z.free_order == {0: 10}


def test_free_page_list_same_as_one_by_one():
    a, b = make(cpus=1), make(cpus=1)
    t = MmTask(1, "t")
    pages_a = [a.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, t) for _ in range(3000)]
    pages_b = [b.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, t) for _ in range(3000)]
    assert pages_a == pages_b
    keep = set(pages_a[::7])
    for p in pages_a:
        if p not in keep:
            a.free_pages(p, 0)
    b.free_page_list([p for p in pages_b if p not in keep])
    assert free_state(a) == free_state(b)
    assert a.nr_free_pages() == b.nr_free_pages()


def test_pcp_lists_hold_pages_out_of_nr_free():
    pa = make(cpus=1)
    z = pa.zones[ZONE_DMA32]
    t = MmTask(1, "t")
    before = z.free_pages
    pfn = pa.alloc_pages(GFP_KERNEL, 0, t)
    assert z.free_pages == before - z.pcp[0].batch           # a batch moved to the pcp list
    assert z.pcp[0].count == z.pcp[0].batch - 1
    pa.free_pages(pfn, 0)
    assert z.pcp[0].count == z.pcp[0].batch
    pa.drain_all_pages()
    assert z.free_pages == before and z.pcp[0].count == 0


# ------------------------------------------------------------------ levels
def test_plenty_of_memory_is_level1():
    pa = make()
    t = MmTask(1, "t")
    for _ in range(500):
        assert pa.alloc_pages(GFP_KERNEL, 0, t) is not None
    assert pa.heap_alloc_count == [500, 0, 0, 0, 0, 0]


class _Kswapd:
    def __init__(self):
        self.woken = []
        self.kswapd_awake = False
        self.kswapd_max_order = 0

    def wake_kswapd(self, order):
        self.woken.append(order)

    def try_to_free_pages(self, zonelist, order, gfp, task):
        return 0, False


def test_below_low_wakes_kswapd_and_uses_min():
    pa = make()
    pa.vmscan = ks = _Kswapd()
    z = pa.zones[ZONE_DMA32]
    t = MmTask(1, "t")
    fill_to(pa, t, z.pages_low - 5)
    assert pa.alloc_pages(GFP_KERNEL, 0, t) is not None
    assert pa.heap_alloc_count[LVL_MIN] == 1 and ks.woken and set(ks.woken) == {0}


def test_atomic_goes_to_37_percent_of_min_then_fails():
    pa = make()
    pa.vmscan = _Kswapd()
    z = pa.zones[ZONE_DMA32]
    irq = MmTask(0, "swapper", in_interrupt=True)
    fill_to(pa, irq, z.pages_min)
    n = 0
    while pa.alloc_pages(GFP_ATOMIC, 0, irq) is not None:
        n += 1
    floor = z.pages_min - z.pages_min // 2
    floor -= floor // 4
    assert abs(z.free_pages - floor) <= z.pcp[0].batch + 1
    assert pa.heap_alloc_count[LVL_FAIL] == 1
    assert pa.heap_alloc_count[LVL_MIN] == n


def test_memalloc_task_ignores_watermarks():
    pa = make()
    pa.vmscan = _Kswapd()
    z = pa.zones[ZONE_DMA32]
    reclaimer = MmTask(2, "kswapd0", flags=PF_MEMALLOC)
    fill_to(pa, reclaimer, z.pages_min // 4)
    assert pa.alloc_pages(GFP_NOIO, 0, reclaimer) is not None
    assert pa.heap_alloc_count[LVL_NO_WMARK] == 1
    # __GFP_NOMEMALLOC: no reserves, and PF_MEMALLOC never reclaims: failure
    assert pa.alloc_pages(GFP_NOIO | _GFP_NOMEMALLOC, 0, reclaimer) is None
    assert pa.heap_alloc_count[LVL_FAIL] == 1


def test_failure_message_and_ratelimit():
    log = []
    pa = make(printk=lambda text, level=6: log.append(text))
    pa.vmscan = _Kswapd()
    irq = MmTask(0, "swapper", in_interrupt=True)
    fill_to(pa, irq, 0)
    pa.drain_all_pages()
    for z in pa.managed_zones:
        while z.rmqueue_smallest(0) is not None:
            z.free_pages -= 1
    for _ in range(30):
        assert pa.alloc_pages(GFP_ATOMIC | _GFP_COMP, 2, irq) is None
    assert pa.heap_alloc_count[LVL_FAIL] == 30
    assert log[0] == "swapper: page allocation failure. order:2, mode:0x4020"
    assert len(log) == 10                        # printk_ratelimit: 10 per 5 s
    assert pa.alloc_pages(GFP_ATOMIC | _GFP_NOWARN, 0, irq) is None
    assert len(log) == 10


class _Oom:
    def __init__(self, pa):
        self.pa = pa
        self.calls = 0

    def out_of_memory(self, zonelist, gfp, order, current):
        self.calls += 1


def _exhaust(pa):
    pa.drain_all_pages()
    taken = []
    for z in pa.managed_zones:
        while True:
            pfn = z.rmqueue_smallest(0)
            if pfn is None:
                break
            z.free_pages -= 1
            taken.append(pfn)
    return taken


def test_no_progress_invokes_oom_killer_and_sleeps():
    pa = make()
    pa.vmscan = _Kswapd()
    pa.oom = oom = _Oom(pa)
    t = MmTask(5, "memhog")
    taken = _exhaust(pa)
    got = []
    assert pa.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, t, got.append) is PENDING
    assert oom.calls == 1 and t.blocked and pa.nr_parked == 1
    assert not any(z.oom_locked for z in pa.zones)          # lock dropped after the kill
    # the victim's memory comes back; the sleeper restarts at the top
    pa.free_page_list(taken[:5000])
    pa.tick()
    assert len(got) == 1 and got[0] is not None and not t.blocked
    assert pa.heap_alloc_count[LVL_LOW] == 1


def test_oom_lock_holder_elsewhere_means_sleep():
    pa = make()
    pa.vmscan = _Kswapd()
    pa.oom = oom = _Oom(pa)
    _exhaust(pa)
    pa.zones[ZONE_DMA32].oom_locked = True
    t = MmTask(5, "sh")
    assert pa.alloc_pages(GFP_KERNEL, 0, t, lambda p: None) is PENDING
    assert oom.calls == 0


def test_costly_order_fails_instead_of_oom():
    pa = make()
    pa.vmscan = _Kswapd()
    pa.oom = oom = _Oom(pa)
    _exhaust(pa)
    t = MmTask(5, "sh")
    assert pa.alloc_pages(GFP_KERNEL, 4, t) is None
    assert oom.calls == 0 and pa.heap_alloc_count[LVL_FAIL] == 1


class _AlwaysPreempt:
    def random(self):
        return 0.0


def test_parallel_oom_kill_caught_at_high_watermark():
    """Preempted between a fruitless reclaim and the OOM lock, the task
    finds memory another task's death has freed: level 5."""
    pa = make(rng=_AlwaysPreempt())
    pa.vmscan = _Kswapd()
    pa.oom = oom = _Oom(pa)
    taken = _exhaust(pa)
    t = MmTask(5, "sh")
    got = []
    assert pa.alloc_pages(GFP_KERNEL, 0, t, got.append) is PENDING
    assert oom.calls == 0
    pa.free_page_list(taken[:3000])                        # the victim exits meanwhile
    pa.tick()
    assert got and got[0] is not None
    assert pa.heap_alloc_count[LVL_OOM_HIGH] == 1 and oom.calls == 0


def test_reclaim_progress_is_level4():
    pa = make()
    taken = _exhaust(pa)

    class Reclaim(_Kswapd):
        def try_to_free_pages(self, zonelist, order, gfp, task):
            pa.free_page_list(taken[:600])
            del taken[:600]
            return 600, False
    pa.vmscan = Reclaim()
    t = MmTask(5, "sh")
    assert pa.alloc_pages(GFP_KERNEL, 0, t) is not None
    assert pa.heap_alloc_count[LVL_RECLAIM] == 1


def test_counters_one_per_request():
    pa = make()
    pa.vmscan = _Kswapd()
    pa.oom = _Oom(pa)
    t = MmTask(1, "t")
    irq = MmTask(0, "swapper", in_interrupt=True)
    for _ in range(100):
        pa.alloc_pages(GFP_KERNEL, 0, t)
    _exhaust(pa)
    for _ in range(7):
        pa.alloc_pages(GFP_ATOMIC, 0, irq)
    assert sum(pa.heap_alloc_count) == 107


def test_module_constants_match_2630():
    assert pa_mod.GFP_KERNEL == 0xd0 and pa_mod.GFP_ATOMIC == 0x20
    assert pa_mod.GFP_HIGHUSER_MOVABLE == 0x1200d2 and pa_mod.GFP_NOFS == 0x50
