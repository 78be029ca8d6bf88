"""Per-CPU ring buffers with the kernel's size accounting (kernel/trace/ring_buffer.c).

Sizes follow the kernel's layout: each sub-buffer is a 4096-byte page whose
first 16 bytes are the page header, events are a 4-byte header plus payload
rounded up to 4 bytes, payloads over 112 bytes carry their length in an
extra 4-byte word, and a time delta that does not fit in 27 bits costs an
8-byte time-extend event first.  An event never straddles pages.

In overwrite mode a full buffer drops its oldest page (``overrun`` counts the
events lost); otherwise new events are dropped (``dropped events``).
"""

from __future__ import annotations

import errno
from collections import deque

PAGE_SIZE = 4096
BUF_PAGE_HDR_SIZE = 16
RB_EVNT_HDR_SIZE = 4
RB_ALIGNMENT = 4
RB_MAX_SMALL_DATA = RB_ALIGNMENT * 28
RB_LEN_TIME_EXTEND = 8
TS_DELTA_LIMIT = 1 << 27


def event_length(payload: int) -> int:
    """``rb_calculate_event_length()``: bytes an event of ``payload`` bytes uses."""
    length = payload or 1
    if length > RB_MAX_SMALL_DATA:
        length += 4
    length += RB_EVNT_HDR_SIZE
    length = (length + RB_ALIGNMENT - 1) & ~(RB_ALIGNMENT - 1)
    if length == RB_LEN_TIME_EXTEND + RB_ALIGNMENT:
        length += RB_ALIGNMENT
    return length


class BufferPage:
    __slots__ = ("events", "used", "nbytes")

    def __init__(self):
        self.events: list = []
        self.used = 0       # bytes of the data area consumed (events + extends)
        self.nbytes = 0     # bytes of events alone


class CpuBuffer:
    """One CPU's ring: ``nr_pages`` sub-buffers of ``subbuf_size`` data bytes."""

    def __init__(self, cpu: int, nr_pages: int, subbuf_size: int = PAGE_SIZE - BUF_PAGE_HDR_SIZE):
        self.cpu = cpu
        self.subbuf_size = subbuf_size
        self.nr_pages = max(2, nr_pages)
        self.pages: deque[BufferPage] = deque()
        self.entries = 0
        self.overrun = 0
        self.commit_overrun = 0
        self.dropped = 0
        self.read = 0
        self.last_ts = 0
        self.last_overrun = 0       # overrun when the consuming reader last looked
        # what writers asked for since the last reset, whatever became of it
        # (a reader consuming or the writer overwriting does not lower them)
        self.written = 0
        self.bytes_written = 0
        self.charged = 0            # of its pages, those taken from the machine's memory

    def reset(self) -> None:
        self.pages.clear()
        self.entries = 0
        self.overrun = 0
        self.commit_overrun = 0
        self.dropped = 0
        self.read = 0
        self.last_ts = 0
        self.last_overrun = 0
        self.written = 0
        self.bytes_written = 0

    def lost_events(self) -> int:
        """Entries the writer overwrote since the consuming reader last asked
        (``cpu_buffer->lost_events``, taken when the reader moves on)."""
        lost = self.overrun - self.last_overrun
        self.last_overrun = self.overrun
        return max(0, lost)

    @property
    def size_bytes(self) -> int:
        return self.nr_pages * self.subbuf_size

    def resize(self, nr_pages: int) -> None:
        self.nr_pages = max(2, nr_pages)
        while len(self.pages) > self.nr_pages:
            lost = self.pages.popleft()
            self.entries -= len(lost.events)
            self.overrun += len(lost.events)

    def write(self, ts: int, entry, length: int, overwrite: bool) -> bool:
        self.written += 1
        self.bytes_written += length
        need = length
        pages = self.pages
        tail = pages[-1] if pages else None
        if tail is not None and tail.events and ts - self.last_ts >= TS_DELTA_LIMIT:
            need += RB_LEN_TIME_EXTEND
        if tail is None or tail.used + need > self.subbuf_size:
            if len(pages) >= self.nr_pages:
                if not overwrite:
                    self.dropped += 1
                    return False
                lost = pages.popleft()
                self.entries -= len(lost.events)
                self.overrun += len(lost.events)
            tail = BufferPage()
            pages.append(tail)
            need = length
        tail.events.append(entry)
        tail.used += need
        tail.nbytes += length
        self.entries += 1
        self.last_ts = ts
        return True

    def bytes(self) -> int:
        return sum(p.used for p in self.pages)

    def unrecorded(self, n: int, nbytes: int, before_ts: int, overwrite: bool) -> None:
        """``n`` entries (``nbytes`` bytes) were written before ``before_ts``
        and not kept as entries (time nobody could see, see trace_backlog):
        in overwrite mode they pushed out the oldest pages older than
        ``before_ts`` that ``nbytes`` cover, and then were overwritten
        themselves; otherwise the buffer was full and they were dropped."""
        self.written += n
        self.bytes_written += nbytes
        if not overwrite:
            self.dropped += n
            return
        self.overrun += n
        pages = self.pages
        while pages and nbytes > 0:
            evs = pages[0].events
            if evs and evs[-1][0] >= before_ts:
                break
            lost = pages.popleft()
            nbytes -= lost.used
            self.entries -= len(evs)
            self.overrun += len(evs)

    def oldest_ts(self) -> int:
        for p in self.pages:
            if p.events:
                return p.events[0][0]
        return 0

    def events(self) -> list:
        out = []
        for p in self.pages:
            out.extend(p.events)
        return out

    def consume(self):
        """Remove and return the oldest event, or None (a trace_pipe read)."""
        pages = self.pages
        while pages:
            p = pages[0]
            if p.events:
                ev = p.events.pop(0)  # a page holds at most ~1000 events
                self.entries -= 1
                self.read += 1
                if not p.events and len(pages) > 1:
                    pages.popleft()
                return ev
            if len(pages) == 1:
                return None
            pages.popleft()
        return None

    def peek(self):
        for p in self.pages:
            if p.events:
                return p.events[0]
        return None


class RingBuffer:
    """All CPUs of one trace array's buffer."""

    def __init__(self, nr_cpus: int, size_bytes: int,
                 subbuf_size: int = PAGE_SIZE - BUF_PAGE_HDR_SIZE):
        self.subbuf_size = subbuf_size
        nr_pages = self.pages_for(size_bytes)
        self.cpus = [CpuBuffer(c, nr_pages, subbuf_size) for c in range(nr_cpus)]
        self.record_off = False      # tracing_on = 0 (RB_BUFFER_OFF)
        self.record_disabled = 0     # nested disables, e.g. a paused reader

    def pages_for(self, size_bytes: int) -> int:
        return max(2, -(-size_bytes // self.subbuf_size))

    def resize(self, size_bytes: int, cpu: int | None = None, mem=None) -> int:
        """``ring_buffer_resize()``: 0, or -ENOMEM (and nothing changed) when
        ``mem`` (a ``PageAccount``: where pages come from) has fewer pages
        available than a CPU's buffer must grow by, CPU after CPU."""
        nr = self.pages_for(size_bytes)
        cpus = self.cpus if cpu is None else [self.cpus[cpu]]
        if mem is not None:
            avail = mem.available_pages()
            for cb in cpus:
                grow = nr - cb.nr_pages
                if grow > 0:
                    if avail < grow:
                        return -errno.ENOMEM
                    avail -= grow
        for cb in cpus:
            grow = nr - cb.nr_pages
            cb.resize(nr)
            if mem is None:
                continue
            if grow > 0:
                mem.charge(grow)
                cb.charged += grow
            elif grow < 0:
                give = min(-grow, cb.charged)
                mem.uncharge(give)
                cb.charged -= give
        return 0

    def allocate(self, size_bytes: int, mem) -> int:
        """A new buffer's pages (an instance's), all from ``mem`` (None:
        nobody counts them): 0 or -ENOMEM (one CPU after the other)."""
        nr = self.pages_for(size_bytes)
        if mem is not None:
            if mem.available_pages() < nr * len(self.cpus):
                return -errno.ENOMEM
            mem.charge(nr * len(self.cpus))
        for cb in self.cpus:
            cb.resize(nr)
            cb.charged = nr if mem is not None else 0
        return 0

    def release(self, mem) -> None:
        """The buffer is freed: its pages go back to ``mem``."""
        for cb in self.cpus:
            mem.uncharge(cb.charged)
            cb.charged = 0

    def reset(self) -> None:
        for cb in self.cpus:
            cb.reset()

    def write(self, cpu: int, ts: int, entry, length: int, overwrite: bool = True) -> bool:
        if self.record_off or self.record_disabled:
            return False
        return self.cpus[cpu].write(ts, entry, length, overwrite)

    def entries(self) -> int:
        return sum(cb.entries for cb in self.cpus)

    def total_written(self) -> int:
        """entries + overrun: the 'entries-written' of the trace header."""
        return sum(cb.entries + cb.overrun for cb in self.cpus)

    def bytes(self) -> int:
        return sum(cb.bytes() for cb in self.cpus)
