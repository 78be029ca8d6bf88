"""A 2.6.30 zone: buddy lists, per-cpu batch size, watermark checks
(fakefs/kernel/mm/mmzone_2630.py)."""

from __future__ import annotations

import pytest

from fakefs.kernel.mm.mmzone_2630 import (ALLOC_HARDER, ALLOC_HIGH, ZONE_DMA, ZONE_DMA32, Zone,
                                          zone_batchsize, zone_watermark_ok)


@pytest.mark.parametrize("present,batch", [(3942, 0), (28280, 7), (12120, 1), (1000, 0),
                                           (262144, 31)])
def test_zone_batchsize(present, batch):
    assert zone_batchsize(present) == batch


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
