"""The ring buffer's accounts with every sub-buffer a deque of tuples: the
model as it was before its sub-buffers became bytes (``_ring_buffer.pyx``),
kept as the reference the raw ring is held to (``CpuBuffer.write()``'s
rules, ``rb_calculate_event_length()``'s lengths, a time extend before a
delta of 27 bits or more, overwrite or drop when full) and read as a page
reader reads tuples (``ring_buffer_page.read_page``: a whole sub-buffer's
entries that fit, taken one at a time)."""

from __future__ import annotations

from collections import deque

TS_LIMIT = 1 << 27
LEN_EXTEND = 8


class TuplePage:
    """One sub-buffer: its entries, the bytes they use (with their time
    extends), the entries a reader took."""

    __slots__ = ("events", "used", "read")

    def __init__(self):
        self.events = deque()
        self.used = self.read = 0

    def __len__(self):
        return len(self.events)

    def newest_ts(self) -> int:
        return self.events[-1][0]


class TupleRing:
    """A CPU buffer of ``nr_pages`` sub-buffers of tuples."""

    def __init__(self, cpu: int, nr_pages: int, subbuf_size: int = 4080):
        self.cpu = cpu
        self.nr_pages = max(2, nr_pages)
        self.subbuf_size = subbuf_size
        self.pages: deque[TuplePage] = deque()
        self.written = self.bytes_written = self.entries = self.overrun = 0
        self.dropped = self.last_ts = self.read = self.last_overrun = 0

    def write(self, entry: tuple, length: int, overwrite: bool) -> bool:
        ts = entry[0]
        self.written += 1
        self.bytes_written += length
        tail = self.pages[-1] if self.pages else None
        need = length
        if tail is not None and tail.events and ts - self.last_ts >= TS_LIMIT:
            need += LEN_EXTEND
        if tail is None or tail.used + need > self.subbuf_size:
            if len(self.pages) >= self.nr_pages:
                if not overwrite:
                    self.dropped += 1
                    return False
                lost = len(self.pages.popleft())
                self.entries -= lost
                self.overrun += lost
            tail = TuplePage()
            self.pages.append(tail)
            need = length
        tail.events.append(entry)
        tail.used += need
        self.entries += 1
        self.last_ts = ts
        return True

    def resize(self, nr_pages: int) -> None:
        """The oldest sub-buffers that no longer fit are overwritten."""
        self.nr_pages = max(2, nr_pages)
        while len(self.pages) > self.nr_pages:
            lost = len(self.pages.popleft())
            self.entries -= lost
            self.overrun += lost

    def events(self) -> list:
        return [e for p in self.pages for e in p.events]

    def iter_events(self):
        return iter(self.events())

    def bytes(self) -> int:
        return sum(p.used for p in self.pages)

    def lost_events(self) -> int:
        lost = self.overrun - self.last_overrun
        self.last_overrun = self.overrun
        return max(0, lost)

    # a page reader's ways in (read_page)
    def take_raw(self, room, encode):
        return None

    def first_nonempty(self) -> int:
        return next((i for i, p in enumerate(self.pages) if len(p)), -1)

    def promote(self, i: int) -> TuplePage:
        return self.pages[i]

    def consume(self):
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
        pages = self.pages
        while len(pages) > 1 and not len(pages[0]):
            pages.popleft()
        p = pages[0]
        for _ in range(n):
            p.events.popleft()
        p.read += n
        self.entries -= n
        self.read += n
        if not p.events and len(pages) > 1:
            pages.popleft()
