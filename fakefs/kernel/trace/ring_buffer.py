"""Per-CPU ring buffers with the kernel's size accounting (kernel/trace/ring_buffer.c).

Sizes follow the kernel's layout: each sub-buffer is 2^order pages of 4096
bytes (``buffer_subbuf_size_kb``, order 0 by default) whose first 16 bytes
are the page header, events are a 4-byte header plus payload rounded up to
4 bytes, payloads over 112 bytes carry their length in an extra 4-byte
word, and a time delta that does not fit in 27 bits costs an 8-byte
time-extend event first.  An event never straddles sub-buffers.

In overwrite mode a full buffer drops its oldest sub-buffer (``overrun``
counts the events lost); otherwise new events are dropped (``dropped
events``).

Changing the sub-buffer order (``ring_buffer_subbuf_order_set()``) swaps
every CPU's sub-buffers for new empty ones covering at least the same
bytes.  The events go with the old sub-buffers but 6.12 resets no counter:
``entries`` and ``bytes`` go on counting them (``freed_entries``,
``freed_bytes`` here) until the buffer is reset.  The largest event stays
the one of the order the buffer was allocated with (``max_data_size`` is
set once, at allocation).
"""

from __future__ import annotations

import errno

from ..lib.kstrtox import ULONG_MAX
from ._ring_buffer import write_many
from ._ring_buffer_read import CpuBufferRead
from .ring_buffer_bpage import BUF_PAGE_HDR_SIZE
from .ring_buffer_reader import CpuBufferReader

PAGE_SIZE = 4096
RB_WRITE_MASK = 0xfffff         # a sub-buffer's write counter: 1 MB at most
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


def subbuf_capacity(order: int) -> int:
    """``rb_subbuf_capacity()``: data bytes of a sub-buffer of ``order``."""
    return (PAGE_SIZE << order) - BUF_PAGE_HDR_SIZE


class CpuBuffer(CpuBufferRead, CpuBufferReader):
    """One CPU's ring: ``nr_pages`` sub-buffers of ``subbuf_size`` data bytes.
    Its fields, the ring, ``write()`` and ``_next_page()`` are compiled
    (``_ring_buffer.CpuBufferCore``: the fields in _ring_buffer.pxd, every
    count zero to begin with), and so are the readers' ways in
    (``_ring_buffer_read.CpuBufferRead``); the rest is here."""

    __slots__ = ()

    def __init__(self, cpu: int, nr_pages: int, subbuf_size: int = PAGE_SIZE - BUF_PAGE_HDR_SIZE):
        self.cpu = cpu
        self.subbuf_size = subbuf_size
        self.nr_pages = max(2, nr_pages)

    def reset(self) -> None:
        self.clear_pages()              # (their memory goes with the arena)
        self.freed_entries = 0
        self.freed_bytes = 0
        self.entries = 0
        self.overrun = 0
        self.commit_overrun = 0
        self.dropped = 0
        self.read = 0
        self.last_ts = 0
        self.last_overrun = 0
        self.written = 0
        self.bytes_written = 0

    @property
    def size_bytes(self) -> int:
        return self.nr_pages * self.subbuf_size

    def resize(self, nr_pages: int) -> None:
        """``nr_pages`` sub-buffers (two at least): the oldest that no
        longer fit are overwritten, those kept stay where they are."""
        nr_pages = max(2, nr_pages)
        if nr_pages == self.nr_pages:
            return
        if self.npages > nr_pages:
            self.overwrite_oldest(self.npages - nr_pages)
        if self.npages:
            self.rering(nr_pages)
        else:
            self.clear_pages()
        self.nr_pages = nr_pages

    def write_many(self, entries: list, length, overwrite: bool) -> int:
        """``write()`` of each of ``entries`` (in time order, ``length``
        bytes each, or ``length[i]`` the i-th); returns how many it took."""
        return write_many(self, entries, length, overwrite)

    def bytes(self) -> int:
        return self.held_bytes

    def counted_entries(self) -> int:
        """``ring_buffer_entries_cpu()``: entries held, plus those an order
        change freed (the counters still count them)."""
        return self.entries + self.freed_entries

    def counted_bytes(self) -> int:
        """``ring_buffer_bytes_cpu()`` (the ``bytes:`` of per_cpu stats)."""
        return self.bytes() + self.freed_bytes

    def replace_pages(self, nr_pages: int, subbuf_size: int) -> None:
        """New empty sub-buffers (an order change): the events go, the
        counters stay."""
        self.freed_entries += self.entries
        self.freed_bytes += self.bytes()
        self.entries = 0
        self.clear_pages()
        self.subbuf_size = subbuf_size
        self.nr_pages = nr_pages

    def unrecorded(self, n: int, nbytes: int, before_ts: int, overwrite: bool) -> None:
        """``n`` entries (``nbytes`` bytes) were written before ``before_ts``
        and not kept as entries (time nobody could see, see trace_backlog):
        in overwrite mode they filled the sub-buffers still free, pushed
        out the oldest pages older than ``before_ts`` that the rest of
        ``nbytes`` covers, and then were overwritten themselves; otherwise
        the buffer was full and they were dropped.  (What the buffer had
        room for stays: a gap's sparse entries, say a followed process's
        fork in a filtered trace, are not pushed out by counted ones.)"""
        self.written += n
        self.bytes_written += nbytes
        if not overwrite:
            self.dropped += n
            return
        self.overrun += n
        nbytes -= (self.nr_pages - self.npages) * self.subbuf_size
        while self.npages and nbytes > 0:
            if self.page_len(0) and self.page_newest(0) >= before_ts:
                # the page went on being written after the skip: what it
                # held from before was overwritten as well
                page = self.promote(0)
                evs = page.events
                k = 0
                while evs and evs[0][0] < before_ts:
                    evs.popleft()
                    k += 1
                if k:
                    gone = page.used * k // (k + len(evs))
                    page.used -= gone
                    self.held_bytes -= gone
                    self.entries -= k
                    self.overrun += k
                break
            nbytes -= self.page_used(0)
            self.overwrite_oldest()


class RingBuffer:
    """All CPUs of one trace array's buffer."""

    def __init__(self, nr_cpus: int, size_bytes: int, order: int = 0, records=None):
        self.subbuf_order = order
        self.subbuf_size = subbuf_capacity(order)
        # the largest event payload: set at allocation, kept by order changes
        self.max_data_size = self.subbuf_size - 8
        nr_pages = self.pages_for(size_bytes)
        self.cpus = [CpuBuffer(c, nr_pages, self.subbuf_size) for c in range(nr_cpus)]
        for cb in self.cpus:            # (events in their records' bytes: _trace_events_raw)
            cb.records = records
        # per CPU, the size trace.c noted at allocation and after each
        # resize (trace_array_cpu.entries): what buffer_size_kb shows.  An
        # order change does not update it; a swap with the snapshot buffer
        # does not move it.
        self.noted = [cb.size_bytes for cb in self.cpus]
        self.record_off = False      # tracing_on = 0 (RB_BUFFER_OFF)
        self.record_disabled = 0     # nested disables, e.g. a paused reader
        # array_buffer.time_start: the clock at the last reset of every CPU
        # (the latency format counts from it); 0 until then
        self.time_start = 0

    def pages_for(self, size_bytes: int) -> int:
        """``DIV_ROUND_UP(size, rb_subbuf_capacity())``, at least 2: the sum
        is an unsigned long, so a size within a sub-buffer of 2^64 wraps to
        0 pages (buffer_size_kb 2^64-1 gets the minimum)."""
        return max(2, ((size_bytes + self.subbuf_size - 1) & ULONG_MAX) // self.subbuf_size)

    def max_event_size(self) -> int:
        """``ring_buffer_max_event_size()`` (timestamps are deltas here)."""
        return self.max_data_size

    def resize(self, size_bytes: int, cpu: int | None = None, mem=None) -> int:
        """``ring_buffer_resize()``: 0; -EBUSY while a non-consuming reader
        is open; -ENOMEM (and nothing changed) when ``mem`` (a
        ``PageAccount``: where pages come from) has fewer pages available
        than a CPU's buffer must grow by, CPU after CPU.  The noted size
        (buffer_size_kb) becomes the buffer's size."""
        nr = self.pages_for(size_bytes)
        idx = range(len(self.cpus)) if cpu is None else (cpu,)
        cpus = [self.cpus[c] for c in idx]
        if cpu is None or nr != cpus[0].nr_pages:
            if any(cb.resize_disabled for cb in cpus):
                return -errno.EBUSY
        per = 1 << self.subbuf_order          # 4 KB pages per sub-buffer
        if mem is not None:
            avail = mem.available_pages(sum(max(0, (nr - cb.nr_pages) * per) for cb in cpus))
            for cb in cpus:
                grow = (nr - cb.nr_pages) * per
                if grow > 0:
                    if avail < grow:
                        return -errno.ENOMEM
                    avail -= grow
        for c, cb in zip(idx, cpus):
            grow = (nr - cb.nr_pages) * per
            cb.resize(nr)
            self.noted[c] = cb.size_bytes
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

    def set_subbuf_order(self, order: int, mem=None) -> int:
        """``ring_buffer_subbuf_order_set()``: 0, -EINVAL (order out of
        range), -EBUSY (a non-consuming reader is open) or -ENOMEM (the new
        sub-buffers of every CPU, all allocated before the old ones are
        freed, do not fit in ``mem``).  Each CPU gets enough sub-buffers of
        the new size for the bytes it had (two at least), empty."""
        if order < 0 or (PAGE_SIZE << order) > RB_WRITE_MASK + 1:
            return -errno.EINVAL
        if order == self.subbuf_order:
            return 0
        if any(cb.resize_disabled for cb in self.cpus):
            return -errno.EBUSY
        old_cap, new_cap = self.subbuf_size, subbuf_capacity(order)
        nrs = [max(2, -(-(old_cap * cb.nr_pages) // new_cap)) for cb in self.cpus]
        new_pages = [nr << order for nr in nrs]
        if mem is not None and mem.available_pages(sum(new_pages)) < sum(new_pages):
            return -errno.ENOMEM
        self.subbuf_order = order
        self.subbuf_size = new_cap
        for cb, nr, pages in zip(self.cpus, nrs, new_pages):
            cb.replace_pages(nr, new_cap)
            if mem is not None:
                mem.uncharge(cb.charged)
                mem.charge(pages)
                cb.charged = pages
        return 0

    def allocate(self, size_bytes: int, mem) -> int:
        """A new buffer's pages (an instance's), all from ``mem`` (None:
        nobody counts them): 0 or -ENOMEM (one CPU after the other)."""
        nr = self.pages_for(size_bytes)
        pages = nr << self.subbuf_order
        if mem is not None:
            if mem.available_pages(pages * len(self.cpus)) < pages * len(self.cpus):
                return -errno.ENOMEM
            mem.charge(pages * len(self.cpus))
        for c, cb in enumerate(self.cpus):
            cb.resize(nr)
            self.noted[c] = cb.size_bytes
            cb.charged = pages if mem is not None else 0
        return 0

    def release(self, mem) -> None:
        """The buffer is freed: its pages go back to ``mem``."""
        for cb in self.cpus:
            mem.uncharge(cb.charged)
            cb.charged = 0

    def reset(self) -> None:
        for cb in self.cpus:
            cb.reset()

    def write_many(self, cpu: int, entries: list, length, overwrite: bool = True) -> int:
        if self.record_off or self.record_disabled:
            return 0
        return self.cpus[cpu].write_many(entries, length, overwrite)

    def entries(self) -> int:
        return sum(cb.entries for cb in self.cpus)

    def total_written(self) -> int:
        """entries + overrun: the 'entries-written' of the trace header."""
        return sum(cb.counted_entries() + cb.overrun for cb in self.cpus)

    def bytes(self) -> int:
        return sum(cb.bytes() for cb in self.cpus)
