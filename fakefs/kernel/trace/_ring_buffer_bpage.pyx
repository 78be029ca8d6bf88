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

cimport cython
from libc.stdint cimport int32_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport qsort
from libc.string cimport memcpy, memset
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES, PyBUF_WRITABLE
from cpython.mem cimport PyMem_Calloc, PyMem_Free, PyMem_Malloc
from posix.mman cimport (
    MADV_DONTNEED, MAP_ANONYMOUS, MAP_FAILED, MAP_NORESERVE, MAP_PRIVATE, PROT_READ, PROT_WRITE,
    madvise, mmap, munmap)

from fakefs.kernel.trace._trace_events_raw cimport FixedRecord, FixedRecords


cdef class PageArena:
    """The bytes of one CPU buffer's raw sub-buffers (fields:
    _ring_buffer_bpage.pxd): ``nslots`` of ``size`` bytes each in one
    anonymous mapping, where the kernel allocates a buffer's pages.  A
    sub-buffer was a bytearray of its own, 72 bytes more than its 4 KB
    (the object and the allocator's header) and a chunk among the heap's
    others; here the mapping's pages cost memory once written, and the
    slot of an overwritten sub-buffer is the next one's.  A buffer holds
    more sub-buffers than slots only while a reader keeps an overwritten
    one: the new one then has memory of its own (``raw_page()``).  A
    resize, a reset or an order change retires it (``retire()``): the
    sub-buffers kept stay where they are (nothing is copied in the
    request), and each slot's memory goes back as its sub-buffer goes,
    the mapping with the last."""

    def __cinit__(self, Py_ssize_t nslots, Py_ssize_t size):
        cdef void *got
        if nslots <= 0 or size <= 0:
            raise ValueError("an arena of %d slots of %d bytes" % (nslots, size))
        self.free = <Py_ssize_t *> PyMem_Malloc(nslots * sizeof(Py_ssize_t))
        if self.free == NULL:
            raise MemoryError()
        got = mmap(NULL, nslots * size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        if got == MAP_FAILED:
            raise MemoryError()
        self.base = <unsigned char *> got
        self.size = size
        self.nslots = nslots

    def __dealloc__(self):
        if self.base != NULL:
            munmap(self.base, self.nslots * self.size)
        PyMem_Free(self.free)

    @property
    def slots(self):
        """(slots, of them in use: handed out and not given back)."""
        return self.nslots, self.inuse

    def retire(self):
        """No slot is handed out again: the free ones give their memory
        back now, the others as their sub-buffers go (``let_go``)."""
        self.retired = True
        self.flush()

    def flush(self):
        """A retired arena's free slots give their memory back (a run of
        adjacent slots a call: a buffer's sub-buffers go oldest first, their
        slots mostly in a row)."""
        cdef Py_ssize_t i, lo, hi
        if not self.retired:
            return
        qsort(self.free, self.nfree, sizeof(Py_ssize_t), _by_index)
        i = 0
        while i < self.nfree:
            lo = hi = self.free[i]
            i += 1
            while i < self.nfree and self.free[i] == hi + 1:
                hi += 1
                i += 1
            madvise(self.base + lo * self.size, (hi - lo + 1) * self.size, MADV_DONTNEED)
        self.nfree = 0


cdef int _by_index(const void *a, const void *b) noexcept nogil:
    cdef Py_ssize_t x = (<const Py_ssize_t *> a)[0], y = (<const Py_ssize_t *> b)[0]
    return (x > y) - (x < y)


cdef char *_FORMAT = b"B"
cdef Py_ssize_t RETIRED_BATCH = 64     # (256 KB of 4 KB sub-buffers)


cdef unsigned char *arena_take(PageArena a) noexcept:
    """A slot's bytes, all zero (NULL: every slot is in use)."""
    cdef unsigned char *mem
    if a.nfree:
        a.nfree -= 1
        a.inuse += 1
        mem = a.base + a.free[a.nfree] * a.size
        memset(mem, 0, a.size)
        return mem
    if a.fresh < a.nslots:
        a.fresh += 1
        a.inuse += 1
        return a.base + (a.fresh - 1) * a.size      # (never written: zero)
    return NULL


cdef void let_go(BufferPage page, unsigned char *mem) noexcept:
    """``mem`` (the page's bytes) back to its arena, or freed.  A retired
    arena hands no slot out again: its free slots' memory goes back to the
    system RETIRED_BATCH slots at a time, or at ``flush()`` (the slots are
    whole pages: ``PAGE_HDR`` + a sub-buffer's capacity)."""
    cdef PageArena a = page.arena
    if a is None:
        PyMem_Free(mem)
        return
    a.inuse -= 1
    a.free[a.nfree] = (mem - a.base) // a.size
    a.nfree += 1
    if a.retired and a.nfree >= RETIRED_BATCH:
        a.flush()


cdef BufferPage raw_page(PageArena arena, int size):
    """A new raw sub-buffer of ``size`` data bytes: its bytes a slot of
    ``arena`` (None, or no slot free: memory of its own)."""
    cdef BufferPage page = BufferPage.__new__(BufferPage)
    cdef unsigned char *mem = NULL
    if arena is not None and arena.size == PAGE_HDR + size:
        mem = arena_take(arena)
    if mem != NULL:
        page.arena = arena
    else:
        mem = <unsigned char *> PyMem_Calloc(PAGE_HDR + size, 1)
        if mem == NULL:
            raise MemoryError()
    page.data = mem
    page.rawsize = size
    return page


cdef inline const unsigned char *page_bytes(BufferPage page) noexcept:
    """Its bytes as a snapshot reads them: raw, or kept for a reader."""
    return page.data if page.data != NULL else page.kept


@cython.no_gc
@cython.auto_pickle(False)
cdef class BufferPage:
    """One sub-buffer's entries and byte counts (its fields:
    _ring_buffer_bpage.pxd).

    A sub-buffer the compiled writers started (``raw``) holds its entries
    in the kernel's binary layout (its bytes a slot of its CPU buffer's
    ``PageArena``), ``npacked`` of them, the newest at
    ``packed_last``, and beside it the entries whose records are made when
    read (``side``: record offset -> entry; packed and compressed with the
    others as it ages: the function tracer's records are compact already);
    ``events`` decodes it into tuples for good, ``snapshot()`` decodes a
    copy.  ``raw`` is a read-only view of its bytes (None: not raw); while
    a view or a snapshot holds them (``pins``), the bytes stay, even past
    ``drop_raw()``.

    The entries are tuples while the sub-buffer is among its CPU's newest
    ``LOOSE_PAGES``; past them packing while idle (``pack_idle``) packs it
    (``pack()``: marshal, a sixth of the tuples' memory), and past the
    newest ``UNZIPPED_PAGES`` the writer packs and compresses it
    (``squeeze()``: zlib at level 1, about half the bytes the entries take
    in the kernel's format), so that memory follows the buffer's size.
    ``events`` unpacks (for a consuming reader at the head); ``snapshot()``
    gives a reader the page as it is without unpacking it in place.  An
    entry marshal cannot hold leaves its page as tuples."""

    def __init__(self):
        """An empty sub-buffer of tuples (a raw one: ``raw_page()``)."""
        self._events = deque()

    def __dealloc__(self):
        if self.data != NULL:
            let_go(self, self.data)
        if self.kept != NULL:
            let_go(self, self.kept)

    def __getbuffer__(self, Py_buffer *view, int flags):
        if self.data == NULL:
            raise BufferError("not a raw sub-buffer")
        if flags & PyBUF_WRITABLE:      # (only the writers write it, in C)
            raise BufferError("a sub-buffer's bytes are read-only")
        view.buf = self.data
        view.obj = self
        view.len = PAGE_HDR + self.rawsize
        view.readonly = 1
        view.itemsize = 1
        view.format = NULL
        if flags & PyBUF_FORMAT:
            view.format = _FORMAT
        view.ndim = 1
        view.shape = &view.len if flags & PyBUF_ND == PyBUF_ND else NULL
        view.strides = &view.itemsize if flags & PyBUF_STRIDES == PyBUF_STRIDES else NULL
        view.suboffsets = NULL
        view.internal = NULL
        self.pins += 1

    def __releasebuffer__(self, Py_buffer *view):
        unpin(self)

    @property
    def raw(self):
        """Its bytes while raw (a read-only memoryview: PAGE_HDR and the
        data area), else None."""
        return memoryview(self) if self.data != NULL else None

    def drop_raw(self):
        """No longer raw (its entries taken, or decoded for good): the
        bytes go, or stay for the readers still holding them."""
        if self.data == NULL:
            return
        if self.pins:
            self.kept = self.data
        else:
            let_go(self, self.data)
        self.data = NULL

    def __len__(self):
        ev = self._events
        return len(ev) if ev is not None else self.npacked

    @property
    def events(self):
        ev = self._events
        if ev is None:
            if self.data != NULL:
                ev = _decode(self.data, self.used, self.side_entries(), self.records)
                self.drop_raw()
                self.side = self.records = None
            else:
                ev = unpack(self.packed, self.zipped)
            ev = self._events = deque(ev)
            self.packed = None
            self.zipped = False
            self.npacked = 0
        return ev

    def side_entries(self):
        """A raw sub-buffer's entries kept beside it (record offset ->
        entry), unpacked where packed (for good: they are read)."""
        if self.packed is not None and self.data != NULL:
            self.side = self._side()
            self.packed = None
            self.zipped = False
        return self.side

    def _side(self):
        """``side_entries()`` leaving the page as it is."""
        return side_of(self.side, (self.packed, self.zipped) if self.data != NULL else None)

    def pack(self):
        """Packed now (False: empty, packed already, or not packable)."""
        if self.data != NULL:
            return self._pack_side()
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
        return ev[len(ev) - 1][0] if ev is not None else self.packed_last

    def snapshot(self):
        """The entries now: a list of them, (packed bytes, compressed), or
        a raw sub-buffer's (``RawSnap``, decoded when taken)."""
        ev = self._events
        if ev is None and self.data != NULL:
            return RawSnap(self)
        return (self.packed, self.zipped) if ev is None else list(ev)


cdef void unpin(BufferPage page) noexcept:
    page.pins -= 1
    if page.pins == 0 and page.kept != NULL:
        let_go(page, page.kept)
        page.kept = NULL


@cython.final
@cython.auto_pickle(False)
cdef class RawSnap:
    """A raw sub-buffer's entries as a snapshot found them, decoded when a
    reader comes to them (``cat trace`` of a big buffer holds one
    sub-buffer's tuples at a time): its bytes up to what was written then
    (a writer only appends past ``used``; nothing rewrites a sub-buffer's
    bytes while it is pinned: the snapshot pins it), the entries kept
    beside it (packed or not; unpacking replaces, never changes, them)."""

    cdef BufferPage page
    cdef int used
    cdef object side, packed, records

    def __init__(self, BufferPage page):
        if page.data == NULL:
            raise ValueError("not a raw sub-buffer")
        self.page = page
        page.pins += 1
        self.used = page.used
        self.side = page.side
        self.records = page.records
        self.packed = (page.packed, page.zipped)

    def __dealloc__(self):
        if self.page is not None:
            unpin(self.page)

    def entries(self):
        return _decode(page_bytes(self.page), self.used, side_of(self.side, self.packed),
                       self.records)


def side_of(side, packed):
    """A raw sub-buffer's entries kept beside it: ``side``, or unpacked
    from ``packed`` ((bytes, compressed), bytes None: not packed)."""
    if packed is not None and packed[0] is not None:
        return dict(unpack(*packed))
    return side


def unpack(blob, zipped):
    return marshal.loads(zlib.decompress(blob) if zipped else blob)


def decode_page(const unsigned char[::1] raw, int used, dict side=None,
                FixedRecords records=None):
    """``_decode()`` of the raw sub-buffer ``raw`` (a buffer: its header and
    data area)."""
    if PAGE_HDR + used > raw.shape[0]:
        raise ValueError("%d data bytes in a sub-buffer of %d" % (used, raw.shape[0]))
    return _decode(&raw[0], used, side, records)


cdef Py_ssize_t _decodes = 0


def decodes():
    """How many sub-buffers were decoded so far (the tests')."""
    return _decodes


cdef list _decode(const unsigned char *p, int used, dict side, FixedRecords records):
    """The entries of the raw sub-buffer at ``p`` (``used`` data bytes), in
    order: (ts, type, pid, flags, preempt_count, ip, parent_ip) each (a
    stack's, a stack id's, the function graph's entries and exits as their
    tuples are), the ``side`` entries (record offset -> entry) where they
    were written, an event's whose record is in the bytes as ``records``
    reads it back."""
    global _decodes
    cdef FixedRecord nr
    cdef uint64_t ts, ip, parent, calltime, rettime
    cdef uint32_t hdr, ext, tl
    cdef uint16_t typ
    cdef int32_t pid
    cdef int off = PAGE_HDR, end = PAGE_HDR + used, rec = 0, nxt = 0, i, q
    cdef uint32_t sid
    cdef int32_t size
    cdef list out = [], stack
    _decodes += 1
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
