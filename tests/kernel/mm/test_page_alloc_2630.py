"""The 2.6.30 allocator's slow path: the EQware levels, sleeping, reclaim,
the OOM lock and killer (fakefs/kernel/mm/page_alloc_2630.py)."""

from __future__ import annotations

from fakefs.kernel.mm.gfp_2630 import (GFP_ATOMIC, GFP_HIGHUSER_MOVABLE, GFP_KERNEL, GFP_NOIO,
                                       _GFP_COMP, _GFP_NOMEMALLOC, _GFP_NOWARN)
from fakefs.kernel.mm.mmzone_2630 import ZONE_DMA, ZONE_DMA32
from fakefs.kernel.mm.page_alloc_2630 import (LVL_FAIL, LVL_LOW, LVL_MIN, LVL_NO_WMARK,
                                              LVL_OOM_HIGH, LVL_RECLAIM, PENDING, PF_MEMALLOC,
                                              MmTask, PageAllocator)

MB = 1 << 20


def make(mem=128 * MB, cpus=2, **kw):
    return PageAllocator(mem, nr_cpus=cpus, reserved=[(4096, 4096 + 2304)], **kw)


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
