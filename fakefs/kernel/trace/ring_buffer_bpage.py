"""A sub-buffer of the ring buffer (kernel/trace/ring_buffer.c's ``struct
buffer_page``): ``BufferPage`` itself is compiled (_ring_buffer_bpage.pyx:
its fields are C fields the compiled writers use); here are how many of a
CPU's newest sub-buffers stay as they are, and the reading of pages' snapshots.
"""

from __future__ import annotations

from ._ring_buffer_bpage import RawSnap, unpack

BUF_PAGE_HDR_SIZE = 16          # a sub-buffer's header (time_stamp, commit)

# the newest sub-buffers of a CPU whose entries stay tuples when packing
# while idle (``pack_idle``): a writer adds to the newest, a reader that
# keeps up consumes them before they pack
LOOSE_PAGES = 16
# the newest sub-buffers of a CPU the writer leaves as they are; older ones
# it packs and compresses.  More than a default buffer (1408 KB, 354
# sub-buffers), whose writers then pay nothing; the tuples it may leave
# (about 17 MB a CPU) are what the memory bound must allow for.
UNZIPPED_PAGES = 384


def snapshot_entries(snaps):
    """The entries of ``BufferPage.snapshot()``s, in order."""
    for snap in snaps:
        if type(snap) is list:
            yield from snap
        elif type(snap) is RawSnap:
            yield from snap.entries()
        else:
            yield from unpack(*snap)
