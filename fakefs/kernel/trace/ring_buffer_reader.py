"""The reader's side of a CPU buffer (kernel/trace/ring_buffer.c:
``rb_get_reader_page()``, ``ring_buffer_consume()``,
``ring_buffer_read_page()``'s taking of a whole sub-buffer, the
``buffer_percent`` watermark): what ``trace``, ``trace_pipe`` and
``trace_pipe_raw`` take from ``CpuBuffer``'s sub-buffers, which the writer
(ring_buffer.py) fills.
"""

from __future__ import annotations

from itertools import chain

from ._ring_buffer_page import page_data
from .ring_buffer_bpage import BUF_PAGE_HDR_SIZE


class CpuBufferReader:
    """``CpuBuffer``'s reading (its fields: ring_buffer.py; the ring's
    ways in: ``_ring_buffer.CpuBufferCore``)."""

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
        n = self.npages - 1
        if n > 0 and self.head_read():
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
        if self.npages == 1 and self.head_read():
            return False         # pagebusy: the writer is on the reader's page
        return (self.dirty_pages() + 1) * 100 >= full * self.nr_pages

    def oldest_ts(self) -> int:
        i = self.first_nonempty()
        return self.promote(i).events[0][0] if i >= 0 else 0

    def iter_events(self):
        """An iterator over the entries held now (a snapshot: later writes
        do not change what it gives), a sub-buffer decoded at a time as it
        goes."""
        return chain.from_iterable(self.snapshot().pages())

    def events(self) -> list:
        return list(self.iter_events())

    def consume(self):
        """Remove and return the oldest event, or None (a trace_pipe read)."""
        while self.npages:
            if self.page_len(0):
                p = self.promote(0)
                ev = p.events.popleft()
                p.read += 1
                self.entries -= 1
                self.read += 1
                if not p.events and self.npages > 1:
                    self.pop_head()
                return ev
            if self.npages == 1:
                return None
            self.pop_head()
        return None

    def consume_reader_page(self, n: int) -> None:
        """``consume()`` of ``n`` entries, all of the reader's sub-buffer
        (the oldest with entries), in one go."""
        while self.npages > 1 and not self.page_len(0):
            self.pop_head()
        p = self.promote(0)
        ev = p.events
        assert n <= len(ev)
        for _ in range(n):
            ev.popleft()
        p.read += n
        self.entries -= n
        self.read += n
        if not ev and self.npages > 1:
            self.pop_head()

    def take_raw(self, room: int, encode):
        """The reader's sub-buffer (the oldest with entries) when it is raw
        (a compiled writer's) and its data fit in ``room`` bytes: consumed
        whole, as ``consume()`` of each entry would, and given as they are,
        the records of the entries kept beside it made by ``encode``:
        (time_stamp, data).  None: not so (take them one at a time)."""
        i = self.first_nonempty()
        if i < 0:
            return None
        p = self.promote(i)
        raw = p.raw
        if raw is None or p.used > room:
            return None
        n = p.nraw
        side = p.side
        if side:
            data = page_data(raw, p.used, side, encode)
            if data is None:
                return None
        else:
            data = bytes(raw[BUF_PAGE_HDR_SIZE:BUF_PAGE_HDR_SIZE + p.used])
        stamp = int.from_bytes(raw[:8], "little")
        p.read += n
        self.entries -= n
        self.read += n
        p.drop_raw()                    # emptied: the writer's goes on (as tuples)
        p.events                        # (none: an empty deque)
        for _ in range(i + 1):          # the emptied one goes, and the empty before it
            if self.npages <= 1:
                break
            self.pop_head()
        return stamp, data

    def empty(self) -> bool:
        """No entry held (``ring_buffer_empty_cpu()``), decoding nothing
        (``peek()`` decodes the reader's raw sub-buffer, which a page
        reader then takes one entry at a time)."""
        return self.first_nonempty() < 0

    def peek(self):
        i = self.first_nonempty()
        return self.promote(i).events[0] if i >= 0 else None
