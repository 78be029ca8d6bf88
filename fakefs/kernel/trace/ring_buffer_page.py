"""Sub-buffer pages in the ring buffer's binary format, as a consuming
reader takes them (kernel/trace/ring_buffer.c: ``struct buffer_data_page``,
``struct ring_buffer_event``, ``ring_buffer_read_page()``).

What ``events/header_page`` and ``events/header_event`` describe:

* a page is a u64 ``time_stamp``, a ``local_t commit`` (8 bytes: the bytes
  of data, with ``RB_MISSED_EVENTS`` (bit 31) when the writer overwrote
  events the reader had not seen since its last page, and
  ``RB_MISSED_STORED`` (bit 30) when their count, an unsigned long, is
  stored right after the data), then ``subbuf_size`` bytes of data, zeroed
  past the commit;
* each event is a 32-bit header of ``type_len:5`` (low bits) and
  ``time_delta:27``: type_len 1..28 is a record of type_len * 4 bytes
  following the header; 0 is a record whose length (plus the 4 bytes of the
  length itself) is in the next 32-bit word; 29 is padding; 30 a time
  extend whose 32-bit word holds the delta's bits above the 27 of its
  header (it precedes the event it dates, which has delta 0).

The page's ``time_stamp`` is the time of its first event, whose delta is 0;
each next event's delta is the time since the previous one.  Event lengths
are those the model accounts (``ring_buffer.event_length()``) for the
record's real size.

:func:`read_page` is ``ring_buffer_read_page()`` for one CPU's buffer of the
model: it takes the events of the reader's sub-buffer (the oldest with
events, which may be the one the writer is filling) that fit in the space
given, consuming them like ``trace_pipe`` does (the two readers share the
buffer), and gives the page.  A sub-buffer whose records the model
under-counts (a dynamic string the accounting leaves out) can need more
than one page: the rest stays for the next read, as with the kernel's
reader that copies events one at a time.
"""

from __future__ import annotations

import struct

from ._ring_buffer_page import fill_page
from .ring_buffer import (BUF_PAGE_HDR_SIZE, RB_MAX_SMALL_DATA,
                          TS_DELTA_LIMIT, event_length)

RINGBUF_TYPE_DATA_TYPE_LEN_MAX = 28
RINGBUF_TYPE_PADDING = 29
RINGBUF_TYPE_TIME_EXTEND = 30
RINGBUF_TYPE_TIME_STAMP = 31
RB_MISSED_EVENTS = 1 << 31
RB_MISSED_STORED = 1 << 30
RB_MISSED_MASK = RB_MISSED_EVENTS | RB_MISSED_STORED
TS_MASK = TS_DELTA_LIMIT - 1

_U32 = struct.Struct("<I")
_PAGE_HDR = struct.Struct("<Qq")


def event_bytes(record: bytes, delta: int) -> bytes:
    """One data event: header (and length word) and the record, padded to
    the event's length."""
    total = event_length(len(record))
    area = total - 4
    if area > RB_MAX_SMALL_DATA:
        return (_U32.pack(delta << 5) + _U32.pack(area)
                + record.ljust(area - 4, b"\0"))
    return _U32.pack((area // 4) | delta << 5) + record.ljust(area, b"\0")


def time_extend(delta: int) -> bytes:
    """A time extend carrying ``delta`` (ns, < 2^59)."""
    return (_U32.pack(RINGBUF_TYPE_TIME_EXTEND | (delta & TS_MASK) << 5)
            + _U32.pack(delta >> 27))


class PageBuilder:
    """The data of one page being filled: events after the page's
    timestamp, a time extend before an event whose delta needs one (the
    reference of ``_ring_buffer.fill_page``, which ``read_page`` uses:
    tests hold them equal)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.data = bytearray()
        self.time_stamp = None
        self.last = 0
        self.count = 0

    def add(self, ts: int, record: bytes) -> bool:
        """Append an event at ``ts``; False (nothing added) if it does not
        fit.  A time earlier than the last is taken as no time passed."""
        if self.time_stamp is None:
            chunk = event_bytes(record, 0)
        else:
            delta = max(0, ts - self.last)
            if delta >= TS_DELTA_LIMIT:
                chunk = time_extend(delta) + event_bytes(record, 0)
            else:
                chunk = event_bytes(record, delta)
        if len(self.data) + len(chunk) > self.capacity:
            return False
        self.data += chunk
        if self.time_stamp is None:
            self.time_stamp = ts
        self.last = max(ts, self.last)
        self.count += 1
        return True

    def page(self, page_capacity: int, missed: int = 0) -> bytes:
        return data_page(self.time_stamp or 0, bytes(self.data), page_capacity, missed)


def data_page(time_stamp: int, data: bytes, page_capacity: int, missed: int = 0) -> bytes:
    """A page: header, ``data`` (the events), the missed-events count if any
    (stored when it fits), zeros up to ``page_capacity`` data bytes."""
    commit = len(data)
    if missed:
        if page_capacity - commit >= 8:
            data = data + missed.to_bytes(8, "little")
            commit |= RB_MISSED_STORED
        commit |= RB_MISSED_EVENTS
    return _PAGE_HDR.pack(time_stamp, commit) + data.ljust(page_capacity, b"\0")


def reader_events(cb):
    """The entries of the reader's sub-buffer of the CPU buffer ``cb``:
    the oldest page with events (empty pages before it are passed, as
    ``CpuBuffer.consume`` does)."""
    i = cb.first_nonempty()
    return cb.promote(i).events if i >= 0 else ()


def read_page(cb, encode, length: int, page_capacity: int):
    """``ring_buffer_read_page()``: a page of the events of the reader's
    sub-buffer that fit in ``length`` bytes (header included, capped at a
    page), consumed; None when nothing can be read (the buffer is empty,
    or its first event does not fit).  ``encode`` makes an entry's record."""
    if length <= BUF_PAGE_HDR_SIZE:
        return None
    raw = cb.take_raw(min(length - BUF_PAGE_HDR_SIZE, page_capacity), encode)
    if raw is not None:                 # a raw sub-buffer: the page as it is
        return data_page(raw[0], raw[1], page_capacity, cb.lost_events())
    events = reader_events(cb)
    if not events:
        return None
    stamp, data, n = fill_page(list(events), encode,
                               min(length - BUF_PAGE_HDR_SIZE, page_capacity))
    if not n:
        return None
    cb.consume_reader_page(n)
    return data_page(stamp, data, page_capacity, cb.lost_events())

