# cython: language_level=3, boundscheck=False, wraparound=False
"""A sub-buffer of the ring buffer as the model holds it (kernel/trace/
ring_buffer.c's ``struct buffer_page``), compiled (the data plane:
docs/data-plane.md): its entries and byte counts, the entries packed as
they age so that the daemon's memory follows the buffer's size.  Its
fields are C fields (_ring_buffer_bpage.pxd): the compiled writers
(_ring_buffer.pyx) read and write them without a Python object each.

A *raw* sub-buffer (``raw``) is a ``struct buffer_data_page`` as
``events/header_page`` describes it: a u64 ``time_stamp`` (its first
event's time), a u64 ``commit`` (the data bytes), then the events as
``events/header_event`` lays them out (``ring_buffer_page.py`` says how):
a 32-bit header of ``type_len:5`` and ``time_delta:27``, a time extend
(type 30) before an event whose delta does not fit.  ``decode_page()``
gives its entries as the tuples the rest of the model reads, when
something reads them.
"""

import marshal
import zlib
from collections import deque

from libc.stdint cimport int32_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy
from cpython.bytearray cimport PyByteArray_AS_STRING

from fakefs.kernel.trace._trace_events_raw cimport FixedRecord, FixedRecords


cdef class BufferPage:
    """One sub-buffer's entries and byte counts (its fields:
    _ring_buffer_bpage.pxd).

    A sub-buffer the compiled writers started (``raw``) holds its entries
    in the kernel's binary layout, ``npacked`` of them, the newest at
    ``packed_last``, and beside it the entries whose records are made when
    read (``side``: record offset -> entry; packed and compressed with the
    others as it ages: the function tracer's records are compact already);
    ``events`` decodes it into tuples for good, ``snapshot()`` decodes a
    copy.

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

    def __init__(self, int raw_size=0):
        """An empty sub-buffer: of tuples, or raw of ``raw_size`` data bytes."""
        if raw_size:
            self.raw = bytearray(PAGE_HDR + raw_size)
        else:
            self._events = deque()

    def __len__(self):
        ev = self._events
        return len(ev) if ev is not None else self.npacked

    @property
    def events(self):
        ev = self._events
        move = self.moved
        if ev is None:
            if self.raw is not None:
                ev = decode_page(self.raw, self.used, self.side_entries(), self.records)
                self.raw = None
                self.side = self.records = None
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

    def move(self, move):
        """Its entries at or after ``move.since`` are ``move.du`` later (made
        when they are taken)."""
        if self.moved is not None:
            self.events                     # the earlier move first
        self.moved = move

    def side_entries(self):
        """A raw sub-buffer's entries kept beside it (record offset ->
        entry), unpacked where packed (for good: they are read)."""
        if self.packed is not None and self.raw is not None:
            self.side = self._side()
            self.packed = None
            self.zipped = False
        return self.side

    def _side(self):
        """``side_entries()`` leaving the page as it is."""
        return side_of(self.side, (self.packed, self.zipped) if self.raw is not None else None)

    def pack(self):
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
        self.packed_last = ev[len(ev) - 1][0]
        self._events = None
        return True

    def _pack_side(self):
        side = self.side
        if not side:
            return False
        try:
            self.packed = marshal.dumps(list(side.items()))
        except ValueError:
            return False
        self.side = None
        return True

    def squeeze(self):
        if self.packed is not None and not self.zipped:
            self.packed = zlib.compress(self.packed, 1)
            self.zipped = True

    def newest_ts(self):
        """The time of its newest entry (it holds one at least)."""
        ev = self._events
        t = ev[len(ev) - 1][0] if ev is not None else self.packed_last
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

    __slots__ = ("raw", "used", "side", "packed", "records", "move")

    def __init__(self, BufferPage page, move):
        self.raw = page.raw
        self.used = page.used
        self.side = page.side
        self.records = page.records
        self.packed = (page.packed, page.zipped)
        self.move = move

    def entries(self):
        ev = decode_page(self.raw, self.used, side_of(self.side, self.packed), self.records)
        return ev if self.move is None else self.move.apply(ev)


def side_of(side, packed):
    """A raw sub-buffer's entries kept beside it: ``side``, or unpacked
    from ``packed`` ((bytes, compressed), bytes None: not packed)."""
    if packed is not None and packed[0] is not None:
        return dict(unpack(*packed))
    return side


def unpack(blob, zipped):
    return marshal.loads(zlib.decompress(blob) if zipped else blob)


def decode_page(bytearray raw, int used, dict side=None, FixedRecords records=None):
    """The entries of the raw sub-buffer ``raw`` (``used`` data bytes), in
    order: (ts, type, pid, flags, preempt_count, ip, parent_ip) each (a
    stack's, a stack id's, the function graph's entries and exits as their
    tuples are), the ``side`` entries (record offset -> entry) where they
    were written, an event's whose record is in the bytes as ``records``
    reads it back."""
    cdef FixedRecord nr
    cdef unsigned char *p = <unsigned char *> PyByteArray_AS_STRING(raw)
    cdef uint64_t ts, ip, parent, calltime, rettime
    cdef uint32_t hdr, ext, tl
    cdef uint16_t typ
    cdef int32_t pid
    cdef int off = PAGE_HDR, end = PAGE_HDR + used, rec = 0, nxt = 0, i, q
    cdef uint32_t sid
    cdef int32_t size
    cdef list out = [], stack
    memcpy(&ts, p, 8)
    while off < end:
        tl = record_at(p, off, &rec, &nxt)
        memcpy(&hdr, p + off, 4)
        if tl == <uint32_t> TYPE_EXTEND:
            memcpy(&ext, p + off + 4, 4)
            ts += ((<uint64_t> ext) << TS_SHIFT) + (hdr >> 5)
            off = nxt
            continue
        if tl > 28:
            raise ValueError("raw sub-buffer: event type %d at %d" % (tl, off))
        ts += hdr >> 5
        if side is not None:
            got = side.get(rec)
            if got is not None:
                out.append(got)
                off = nxt
                continue
        memcpy(&typ, p + rec, 2)
        memcpy(&pid, p + rec + 4, 4)
        if typ == TRACE_FN:
            memcpy(&ip, p + rec + 8, 8)
            memcpy(&parent, p + rec + 16, 8)
            out.append((<long long> ts, typ, pid, p[rec + 2], p[rec + 3], ip, parent))
        elif typ == TRACE_STACK_ID:
            memcpy(&sid, p + rec + 8, 4)
            out.append((<long long> ts, typ, pid, p[rec + 2], p[rec + 3], sid, None))
        elif typ == TRACE_STACK:
            memcpy(&size, p + rec + 8, 4)
            stack = []
            for i in range(size):
                memcpy(&ip, p + rec + 16 + 8 * i, 8)
                stack.append(ip)
            out.append((<long long> ts, typ, pid, p[rec + 2], p[rec + 3], tuple(stack), None))
        elif typ == TRACE_GRAPH_ENT:            # func, depth
            memcpy(&ip, p + rec + 8, 8)
            memcpy(&size, p + rec + 16, 4)
            out.append((<long long> ts, typ, pid, p[rec + 2], p[rec + 3], ip, size))
        elif typ == TRACE_GRAPH_RET:            # func, [retval,] depth, overrun, calltime, rettime
            memcpy(&ip, p + rec + 8, 8)
            q = rec
            parent = 0
            if nxt - rec >= GRAPH_RET_RETVAL_DATA:
                memcpy(&parent, p + rec + 16, 8)
                q += 8
            memcpy(&size, p + q + 16, 4)
            memcpy(&sid, p + q + 20, 4)
            memcpy(&calltime, p + q + 24, 8)
            memcpy(&rettime, p + q + 32, 8)
            out.append((<long long> ts, typ, pid, p[rec + 2], p[rec + 3],
                        (ip, size, sid, <long long> calltime, <long long> rettime, parent), None))
        else:
            nr = records.of(typ) if records is not None else None
            if nr is None:
                raise ValueError("raw sub-buffer: record type %d at %d" % (typ, off))
            out.append((<long long> ts, typ, pid, p[rec + 2], p[rec + 3], nr.unpack(p + rec), None))
        off = nxt
    return out
