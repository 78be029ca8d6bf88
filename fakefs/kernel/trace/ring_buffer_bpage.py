"""A sub-buffer of the ring buffer as the model holds it (kernel/trace/
ring_buffer.c's ``struct buffer_page``): its entries and byte counts, the
entries packed as they age so that the daemon's memory follows the
buffer's size.
"""

from __future__ import annotations

import marshal
import zlib
from collections import deque

# the newest sub-buffers of a CPU whose entries stay tuples when packing
# while idle (``pack_idle``): a writer adds to the newest, a reader that
# keeps up consumes them before they pack
LOOSE_PAGES = 16
# the newest sub-buffers of a CPU the writer leaves as they are; older ones
# it packs and compresses.  More than a default buffer (1408 KB, 354
# sub-buffers), whose writers then pay nothing; the tuples it may leave
# (about 17 MB a CPU) are what the memory bound must allow for.
UNZIPPED_PAGES = 384


class BufferPage:
    """One sub-buffer's entries and byte counts.

    The entries are tuples while the sub-buffer is among its CPU's newest
    ``LOOSE_PAGES``; past them packing while idle (``pack_idle``) packs it
    (``pack()``: marshal, a sixth of the tuples' memory), and past the
    newest ``UNZIPPED_PAGES`` the writer packs and compresses it
    (``squeeze()``: zlib at level 1, about half the bytes the entries take
    in the kernel's format), so that memory follows the buffer's size.
    ``events`` unpacks (for a consuming reader at the head); ``snapshot()``
    gives a reader the page as it is without unpacking it in place.  An
    entry marshal cannot hold leaves its page as tuples."""

    __slots__ = ("_events", "packed", "zipped", "npacked", "packed_last", "used", "nbytes",
                 "read")

    def __init__(self):
        self._events: deque | None = deque()
        self.packed: bytes | None = None    # the entries while packed
        self.zipped = False                 # and compressed
        self.npacked = 0                    # how many it holds
        self.packed_last = 0                # the time of the newest
        self.used = 0       # bytes of the data area consumed (events + extends)
        self.nbytes = 0     # bytes of events alone
        self.read = 0       # events a consuming reader took from it (bpage->read)

    def __len__(self) -> int:
        ev = self._events
        return len(ev) if ev is not None else self.npacked

    @property
    def events(self) -> deque:
        ev = self._events
        if ev is None:
            ev = self._events = deque(unpack(self.packed, self.zipped))
            self.packed = None
            self.zipped = False
            self.npacked = 0
        return ev

    def pack(self) -> bool:
        """Packed now (False: empty, packed already, or not packable)."""
        ev = self._events
        if not ev:
            return False
        try:
            blob = marshal.dumps(list(ev))
        except ValueError:
            return False
        self.packed = blob
        self.npacked = len(ev)
        self.packed_last = ev[-1][0]
        self._events = None
        return True

    def squeeze(self) -> None:
        if self.packed is not None and not self.zipped:
            self.packed = zlib.compress(self.packed, 1)
            self.zipped = True

    def replace(self, events: deque) -> None:
        """Its entries are now ``events``: as many, of the same sizes (the
        same ones, moved in time: ``trace_shift``)."""
        self._events = events
        self.packed = None
        self.zipped = False
        self.npacked = 0

    def newest_ts(self) -> int:
        """The time of its newest entry (it holds one at least)."""
        ev = self._events
        return ev[-1][0] if ev is not None else self.packed_last

    def snapshot(self):
        """The entries now: a list of them, or (packed bytes, compressed)."""
        ev = self._events
        return (self.packed, self.zipped) if ev is None else list(ev)


def unpack(blob: bytes, zipped: bool) -> list:
    return marshal.loads(zlib.decompress(blob) if zipped else blob)


def snapshot_entries(snaps):
    """The entries of ``BufferPage.snapshot()``s, in order."""
    for snap in snaps:
        yield from (unpack(*snap) if type(snap) is tuple else snap)
