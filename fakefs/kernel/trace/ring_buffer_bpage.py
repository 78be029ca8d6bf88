"""A sub-buffer of the ring buffer as the model holds it (kernel/trace/
ring_buffer.c's ``struct buffer_page``): its entries and byte counts, the
entries packed as they age so that the daemon's memory follows the
buffer's size.
"""

from __future__ import annotations

import marshal
import zlib
from collections import deque

from ._ring_buffer import decode_page, new_page

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


class BufferPage:
    """One sub-buffer's entries and byte counts.

    A sub-buffer the compiled writers started (``raw``: see
    ``_ring_buffer.pyx``) holds its entries in the kernel's binary layout,
    ``npacked`` of them, the newest at ``packed_last``, and beside it the
    entries whose records are made when read (``side``: record offset ->
    entry; packed and compressed with the others as it ages: the function
    tracer's records are compact already); ``events`` decodes it into
    tuples for good, ``snapshot()`` decodes a copy.

    The entries are tuples while the sub-buffer is among its CPU's newest
    ``LOOSE_PAGES``; past them packing while idle (``pack_idle``) packs it
    (``pack()``: marshal, a sixth of the tuples' memory), and past the
    newest ``UNZIPPED_PAGES`` the writer packs and compresses it
    (``squeeze()``: zlib at level 1, about half the bytes the entries take
    in the kernel's format), so that memory follows the buffer's size.
    ``events`` unpacks (for a consuming reader at the head); ``snapshot()``
    gives a reader the page as it is without unpacking it in place.  An
    entry marshal cannot hold leaves its page as tuples.

    A page whose entries were moved later in time (``move``: a gap's window
    made ahead, ``trace_shift``) keeps them as they were with the move to
    make, until something takes them: the move costs nothing at the
    request that makes it, and a reader moves only what it reads."""

    __slots__ = ("_events", "raw", "side", "packed", "zipped", "npacked", "packed_last", "used",
                 "nbytes", "read", "moved")

    def __init__(self, raw_size: int = 0):
        """An empty sub-buffer: of tuples, or raw of ``raw_size`` data bytes."""
        self._events: deque | None = None if raw_size else deque()
        self.raw: bytearray | None = new_page(raw_size) if raw_size else None
        self.side: dict | None = None       # a raw one's entries kept beside it
        self.packed: bytes | None = None    # the entries while packed (a raw one's side)
        self.zipped = False                 # and compressed
        self.npacked = 0                    # how many it holds
        self.packed_last = 0                # the time of the newest
        self.used = 0       # bytes of the data area consumed (events + extends)
        self.nbytes = 0     # bytes of events alone
        self.read = 0       # events a consuming reader took from it (bpage->read)
        self.moved: Move | None = None      # a move its entries are still to make

    def __len__(self) -> int:
        ev = self._events
        return len(ev) if ev is not None else self.npacked

    @property
    def events(self) -> deque:
        ev = self._events
        move = self.moved
        if ev is None:
            if self.raw is not None:
                ev = decode_page(self.raw, self.used, self.side_entries())
                self.raw = None
                self.side = None
            else:
                ev = unpack(self.packed, self.zipped)
            ev = self._events = deque(ev if move is None else move.apply(ev))
            self.packed = None
            self.zipped = False
            self.npacked = 0
        elif move is not None:
            ev = self._events = deque(move.apply(ev))
        self.moved = None
        return ev

    def move(self, move: Move) -> None:
        """Its entries at or after ``move.since`` are ``move.du`` later (made
        when they are taken)."""
        if self.moved is not None:
            self.events                     # the earlier move first
        self.moved = move

    def side_entries(self) -> dict | None:
        """A raw sub-buffer's entries kept beside it (record offset ->
        entry), unpacked where packed (for good: they are read)."""
        if self.packed is not None and self.raw is not None:
            self.side = self._side()
            self.packed = None
            self.zipped = False
        return self.side

    def _side(self) -> dict | None:
        """``side_entries()`` leaving the page as it is."""
        return side_of(self.side, (self.packed, self.zipped) if self.raw is not None else None)

    def pack(self) -> bool:
        """Packed now (False: empty, packed already, or not packable)."""
        if self.raw is not None:
            return self._pack_side()
        if self.moved is not None:
            self.events
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

    def _pack_side(self) -> bool:
        side = self.side
        if not side:
            return False
        try:
            self.packed = marshal.dumps(list(side.items()))
        except ValueError:
            return False
        self.side = None
        return True

    def squeeze(self) -> None:
        if self.packed is not None and not self.zipped:
            self.packed = zlib.compress(self.packed, 1)
            self.zipped = True

    def newest_ts(self) -> int:
        """The time of its newest entry (it holds one at least)."""
        ev = self._events
        t = ev[-1][0] if ev is not None else self.packed_last
        move = self.moved
        return t if move is None or t < move.since else t + move.du

    def snapshot(self):
        """The entries now: a list of them, (packed bytes, compressed),
        (the entries as they were, the move to make), or a raw sub-buffer's
        (``RawSnap``, decoded when taken): while a move is to make, nothing
        changes the entries it holds (taking them makes new ones), so a
        reader shares them."""
        ev = self._events
        move = self.moved
        if ev is None and self.raw is not None:
            return RawSnap(self, move)
        if move is not None:
            return ((self.packed, self.zipped) if ev is None else ev), move
        return (self.packed, self.zipped) if ev is None else list(ev)


class RawSnap:
    """A raw sub-buffer's entries as a snapshot found them, decoded when a
    reader comes to them (``cat trace`` of a big buffer holds one
    sub-buffer's tuples at a time): its bytes up to what was written then
    (a writer only appends past ``used``; nothing rewrites a sub-buffer's
    bytes, a reader taking them drops them), the entries kept beside it
    (packed or not; unpacking replaces, never changes, them), the move to
    make."""

    __slots__ = ("raw", "used", "side", "packed", "move")

    def __init__(self, page: BufferPage, move):
        self.raw = page.raw
        self.used = page.used
        self.side = page.side
        self.packed = (page.packed, page.zipped)
        self.move = move

    def entries(self) -> list:
        ev = decode_page(self.raw, self.used, side_of(self.side, self.packed))
        return ev if self.move is None else self.move.apply(ev)


def side_of(side: dict | None, packed) -> dict | None:
    """A raw sub-buffer's entries kept beside it: ``side``, or unpacked
    from ``packed`` ((bytes, compressed), bytes None: not packed)."""
    if packed is not None and packed[0] is not None:
        return dict(unpack(*packed))
    return side


class Move:
    """Entries at or after ``since`` are ``du`` later (the array's clock);
    ``args``: type -> how the fields of the events that hold a time move
    (``trace_shift``)."""

    __slots__ = ("since", "du", "args")

    def __init__(self, since: int, du: int, args: dict):
        self.since = since
        self.du = du
        self.args = args

    def apply(self, entries) -> list:
        since, du, args = self.since, self.du, self.args
        moved = [(t + du, ty, pid, fl, pc, a, b) if t >= since else (t, ty, pid, fl, pc, a, b)
                 for t, ty, pid, fl, pc, a, b in entries]
        if args:
            for i, e in enumerate(moved):
                fn = args.get(e[1])
                if fn is not None and e[0] >= since + du and type(e[5]) is tuple:
                    moved[i] = e[:5] + (fn(e[5]),) + e[6:]
        return moved


def unpack(blob: bytes, zipped: bool) -> list:
    return marshal.loads(zlib.decompress(blob) if zipped else blob)


def snapshot_entries(snaps):
    """The entries of ``BufferPage.snapshot()``s, in order."""
    for snap in snaps:
        if type(snap) is list:
            yield from snap
        elif type(snap) is RawSnap:
            yield from snap.entries()
        elif type(snap[1]) is Move:
            raw, move = snap
            yield from move.apply(unpack(*raw) if type(raw) is tuple else raw)
        else:
            yield from unpack(*snap)
