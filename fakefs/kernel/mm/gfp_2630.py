"""The allocation flags of Linux 2.6.30 (include/linux/gfp.h of that era).

The ``__GFP_*`` modifier bits (spelled ``_GFP_*`` here), the ``GFP_*``
combinations callers pass, and ``gfp_zone()``: the highest zone a request
may be served from.
"""

from __future__ import annotations

from .mmzone_2630 import ZONE_DMA, ZONE_DMA32, ZONE_MOVABLE, ZONE_NORMAL

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


def gfp_zone(gfp: int) -> int:
    if gfp & _GFP_DMA:
        return ZONE_DMA
    if gfp & _GFP_DMA32:
        return ZONE_DMA32
    if (gfp & (_GFP_MOVABLE | _GFP_HIGHMEM)) == (_GFP_MOVABLE | _GFP_HIGHMEM):
        return ZONE_MOVABLE
    return ZONE_NORMAL        # no CONFIG_HIGHMEM on x86_64
