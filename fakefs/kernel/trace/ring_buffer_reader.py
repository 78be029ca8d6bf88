"""The reader's side of a CPU buffer (kernel/trace/ring_buffer.c:
``rb_get_reader_page()``, ``ring_buffer_consume()``,
``ring_buffer_read_page()``'s taking of a whole sub-buffer, the
``buffer_percent`` watermark): what ``trace``, ``trace_pipe`` and
``trace_pipe_raw`` take from ``CpuBuffer``'s sub-buffers, which the writer
(ring_buffer.py) fills.
"""

from __future__ import annotations

from collections import deque

from ._ring_buffer import page_data
from .ring_buffer_bpage import BUF_PAGE_HDR_SIZE, snapshot_entries


class CpuBufferReader:
    """``CpuBuffer``'s reading (its fields: ring_buffer.py)."""

    __slots__ = ()

    def lost_events(self) -> int:
        """Entries the writer overwrote since the consuming reader last asked
        (``cpu_buffer->lost_events``, taken when the reader moves on)."""
        lost = self.overrun - self.last_overrun
        self.last_overrun = self.overrun
        return max(0, lost)

    def dirty_pages(self) -> int:
        """``ring_buffer_nr_dirty_pages()``: sub-buffers the writer filled and
        moved past, that no reader took yet."""
        pages = self.pages
        n = len(pages) - 1
        if n > 0 and pages[0].read:
            n -= 1               # the reader's page
        return max(0, n)

    def watermark_hit(self, full: int) -> bool:
        """``rb_watermark_hit()`` for one CPU: not empty, and with ``full``
        (buffer_percent) at least that percentage of sub-buffers dirty (the
        one written counts), unless the writer is on the reader's page."""
        if self.empty():
            return False
        if not full:
            return True
        pages = self.pages
        if len(pages) == 1 and pages[0].read:
            return False         # pagebusy: the writer is on the reader's page
        return (self.dirty_pages() + 1) * 100 >= full * self.nr_pages

    def oldest_ts(self) -> int:
        for p in self.pages:
            if len(p):
                return p.events[0][0]
        return 0

    def iter_events(self):
        """An iterator over the entries held now (a snapshot: later writes
        do not change what it gives); packed sub-buffers are unpacked one
        at a time as it goes."""
        return snapshot_entries([p.snapshot() for p in self.pages if len(p)])

    def events(self) -> list:
        return list(self.iter_events())

    def consume(self):
        """Remove and return the oldest event, or None (a trace_pipe read)."""
        pages = self.pages
        while pages:
            p = pages[0]
            if len(p):
                ev = p.events.popleft()
                p.read += 1
                self.entries -= 1
                self.read += 1
                if not p.events and len(pages) > 1:
                    pages.popleft()
                return ev
            if len(pages) == 1:
                return None
            pages.popleft()
        return None

    def consume_reader_page(self, n: int) -> None:
        """``consume()`` of ``n`` entries, all of the reader's sub-buffer
        (the oldest with entries), in one go."""
        pages = self.pages
        while len(pages) > 1 and not len(pages[0]):
            pages.popleft()
        p = pages[0]
        ev = p.events
        assert n <= len(ev)
        for _ in range(n):
            ev.popleft()
        p.read += n
        self.entries -= n
        self.read += n
        if not ev and len(pages) > 1:
            pages.popleft()

    def take_raw(self, room: int, encode):
        """The reader's sub-buffer (the oldest with entries) when it is raw
        (a compiled writer's) and its data fit in ``room`` bytes: consumed
        whole, as ``consume()`` of each entry would, and given as they are,
        the records of the entries kept beside it made by ``encode``:
        (time_stamp, data).  None: not so (take them one at a time)."""
        pages = self.pages
        for p in pages:
            if len(p):
                break
        else:
            return None
        raw = p.raw
        if raw is None or p.used > room:
            return None
        n = p.npacked
        side = p.side_entries()
        if side:
            data = page_data(raw, p.used, side, encode)
            if data is None:
                return None
        else:
            data = bytes(raw[BUF_PAGE_HDR_SIZE:BUF_PAGE_HDR_SIZE + p.used])
        stamp = int.from_bytes(raw[:8], "little")
        raw.release()
        p.read += n
        self.entries -= n
        self.read += n
        p.drop_raw()                    # emptied: the writer's goes on (as tuples)
        p.side = None
        p.npacked = 0
        p._events = deque()
        while len(pages) > 1:           # the emptied one goes, and the empty before it
            if pages.popleft() is p:
                break
        return stamp, data

    def empty(self) -> bool:
        """No entry held (``ring_buffer_empty_cpu()``), decoding nothing
        (``peek()`` decodes the reader's raw sub-buffer, which a page
        reader then takes one entry at a time)."""
        for p in self.pages:
            if len(p):
                return False
        return True

    def peek(self):
        for p in self.pages:
            if len(p):
                return p.events[0]
        return None
