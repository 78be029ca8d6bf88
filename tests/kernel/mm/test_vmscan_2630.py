"""2.6.30 reclaim: kswapd, direct reclaim, writeback from reclaim context."""

from __future__ import annotations

from fakefs.kernel.mm.page_alloc_2630 import (GFP_HIGHUSER_MOVABLE, GFP_KERNEL, LVL_NO_WMARK,
                                              PF_KTHREAD, PF_MEMALLOC, MmTask, PageAllocator,
                                              zone_watermark_ok)
from fakefs.kernel.mm.vmscan_2630 import SWAP_CLUSTER_MAX, Vmscan


def setup(mem=64 << 20):
    pa = PageAllocator(mem, nr_cpus=1, reserved=[(4096, 5000)])
    vm = Vmscan(pa, MmTask(2, "kswapd0"), MmTask(3, "pdflush"), kswapd_pages_per_jiffy=48,
                disk_pages_per_jiffy=10)
    return pa, vm


def fill_cache(pa, vm, task, dirty=False, leave=0):
    """Page cache until the zones are down to about ``leave`` free pages."""
    n = 0
    while pa.nr_free_pages() > leave:
        pfn = pa.get_page_from_freelist(GFP_HIGHUSER_MOVABLE, 0, pa.zonelist(GFP_HIGHUSER_MOVABLE),
                                        0x01, 0)
        if pfn is None:
            break
        vm.add_file_page(pfn, dirty)
        n += 1
    return n


def test_kswapd_balances_to_high_then_sleeps():
    pa, vm = setup()
    t = MmTask(10, "cat")
    fill_cache(pa, vm, t, leave=50)
    pa.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, t)
    assert vm.kswapd_awake and vm.kswapd_wakeups == 1
    for _ in range(200):
        vm.tick()
        if not vm.kswapd_awake:
            break
    assert not vm.kswapd_awake
    pa.drain_all_pages()
    for z in pa.managed_zones:
        assert zone_watermark_ok(z, 0, z.pages_high, 0, 0)


def test_kswapd_not_woken_above_low():
    pa, vm = setup()
    t = MmTask(10, "cat")
    for _ in range(100):
        pa.alloc_pages(GFP_KERNEL, 0, t)
    assert not vm.kswapd_awake and vm.kswapd_wakeups == 0


def test_direct_reclaim_frees_a_cluster_of_clean_pages():
    pa, vm = setup()
    t = MmTask(10, "sh")
    fill_cache(pa, vm, t, leave=0)
    before = vm.nr_file
    nr, wait = vm.try_to_free_pages(pa.zonelist(GFP_KERNEL), 0, GFP_KERNEL, t)
    assert nr == SWAP_CLUSTER_MAX and not wait
    assert vm.nr_file == before - SWAP_CLUSTER_MAX


def test_dirty_pages_need_writeback_from_reclaim_context():
    pa, vm = setup()
    t = MmTask(10, "dd")
    fill_cache(pa, vm, t, dirty=True, leave=20)
    t.flags |= PF_MEMALLOC
    pa.heap_alloc_count[:] = [0] * 6
    nr, wait = vm.try_to_free_pages(pa.zonelist(GFP_KERNEL), 0, GFP_KERNEL, t)
    assert nr == 0 and wait                          # worth waiting: I/O started
    # a cluster per zone of the zonelist
    assert vm.nr_writeback == 2 * SWAP_CLUSTER_MAX
    # the bios came from the reserves: PF_MEMALLOC below the min watermark
    assert pa.heap_alloc_count[LVL_NO_WMARK] == vm.nr_writeback // 16
    for _ in range(7):
        vm.disk_tick()
    assert vm.nr_writeback == 0
    nr, wait = vm.try_to_free_pages(pa.zonelist(GFP_KERNEL), 0, GFP_KERNEL, t)
    assert nr == SWAP_CLUSTER_MAX                    # written pages reclaimed first


def test_writeback_fails_without_any_memory():
    pa, vm = setup()
    t = MmTask(10, "dd", flags=PF_MEMALLOC)
    fill_cache(pa, vm, t, dirty=True, leave=0)
    pa.drain_all_pages()
    dirty = vm.nr_dirty
    nr, wait = vm.try_to_free_pages(pa.zonelist(GFP_KERNEL), 0, GFP_KERNEL, t)
    assert nr == 0 and vm.nr_writeback == 0 and vm.nr_dirty == dirty     # redirtied


def test_nofs_reclaim_does_not_write():
    pa, vm = setup()
    t = MmTask(10, "jbd2")
    fill_cache(pa, vm, t, dirty=True, leave=0)
    nr, wait = vm.try_to_free_pages(pa.zonelist(GFP_KERNEL), 0, 0x50, t)   # GFP_NOFS
    assert nr == 0 and vm.nr_writeback == 0 and wait


def test_nothing_reclaimable():
    pa, vm = setup()
    t = MmTask(10, "memhog")
    nr, wait = vm.try_to_free_pages(pa.zonelist(GFP_KERNEL), 0, GFP_KERNEL, t)
    assert (nr, wait) == (0, False)
    assert all(z.all_unreclaimable for z in pa.zonelist(GFP_KERNEL))


def test_pdflush_above_background_ratio():
    pa, vm = setup()
    t = MmTask(10, "dd")
    for _ in range(3000):
        vm.add_file_page(pa.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, t), dirty=True)
    bg, limit = vm.dirty_limits()
    assert vm.nr_dirty > bg and limit == 2 * bg or abs(limit - 2 * bg) <= 1
    assert vm.pdflush.flags & PF_KTHREAD
    vm.pdflush_tick()
    assert vm.nr_writeback == 2 * vm.disk_rate
