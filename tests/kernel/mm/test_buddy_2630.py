"""The zones of node 0 and the free lists of the 2.6.30 allocator: boot
layout, watermarks, zonelists, buddy split/coalesce, per-cpu lists
(fakefs/kernel/mm/buddy_2630.py)."""

from __future__ import annotations

import math

from fakefs.kernel.mm.gfp_2630 import GFP_HIGHUSER_MOVABLE, GFP_KERNEL, _GFP_DMA, gfp_zone
from fakefs.kernel.mm.mmzone_2630 import MAX_ORDER, ZONE_DMA, ZONE_DMA32
from fakefs.kernel.mm.page_alloc_2630 import MmTask, PageAllocator

MB = 1 << 20


def make(mem=128 * MB, cpus=2, **kw):
    return PageAllocator(mem, nr_cpus=cpus, reserved=[(4096, 4096 + 2304)], **kw)


def free_state(pa):
    pa.drain_all_pages()
    return [[z.nr_free(o) for o in range(MAX_ORDER)] for z in pa.managed_zones]


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


def test_gfp_zone_and_zonelists():
    pa = make()
    assert gfp_zone(GFP_KERNEL) == 2 and gfp_zone(_GFP_DMA) == ZONE_DMA
    assert [z.name for z in pa.zonelist(GFP_KERNEL)] == ["DMA32", "DMA"]
    assert [z.name for z in pa.zonelist(GFP_HIGHUSER_MOVABLE)] == ["DMA32", "DMA"]
    assert [z.name for z in pa.zonelist(GFP_KERNEL | _GFP_DMA)] == ["DMA"]


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
