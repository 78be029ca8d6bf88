# cython: language_level=3, boundscheck=False, wraparound=False
"""A sub-buffer of the ring buffer (kernel/trace/ring_buffer.c's ``struct
buffer_page`` and ``struct buffer_data_page``), compiled (the data plane:
docs/data-plane.md).

A CPU buffer's sub-buffers are the slots of its ``PageArena``, one
anonymous mapping, each a ``struct buffer_data_page`` as
``events/header_page`` describes it: a u64 ``time_stamp`` (its first
event's time), a u64 ``commit`` (the data bytes), then the events as
``events/header_event`` lays them out (``ring_buffer_page.py`` says how):
a 32-bit header of ``type_len:5`` and ``time_delta:27``, a time extend
(type 30) before an event whose delta does not fit.  What else a
sub-buffer has is found in its bytes (``page_counts``: its entries, their
bytes, the newest's time), so a sub-buffer nobody looks at costs nothing
but its bytes.

A ``BufferPage`` is a sub-buffer something looks at: the writer's tail,
a reader's (``CpuBufferCore.promote``).  ``decode_page()`` gives a raw
one's entries as the tuples the rest of the model reads, when something
reads them; ``events`` decodes them for good (a consuming reader pops
them one at a time), after which the sub-buffer holds tuples.
"""

from collections import deque

cimport cython
from libc.stdint cimport int32_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from posix.mman cimport (
    MADV_DONTNEED, MAP_ANONYMOUS, MAP_FAILED, MAP_NORESERVE, MAP_PRIVATE, PROT_NONE, PROT_READ,
    PROT_WRITE, madvise, mmap, mprotect, munmap)

from fakefs.kernel.trace._trace_events_raw cimport FixedRecord, FixedRecords


cdef Py_ssize_t RESERVE = 1LL << 33     # bytes of address space an arena holds for its slots
cdef Py_ssize_t HOST_PAGE = 4096        # (mprotect and madvise work in the host's pages)


@cython.final
@cython.auto_pickle(False)
cdef class PageArena:
    """The bytes of one CPU buffer's sub-buffers (fields:
    _ring_buffer_bpage.pxd): a ring of ``nring`` places, each a slot of
    ``size`` bytes in one anonymous mapping, as the kernel links a
    buffer's pages in a ring: the ring's sub-buffer of sequence number s
    is at place s % nring, in slot ``order[s % nring]``, and an
    overwritten sub-buffer's slot is the next one's.  The mapping reserves
    address space for ``cap`` slots (``RESERVE`` bytes, or the ring's size
    if more: nothing but address space until used); the ``top`` first are
    usable (read and write), and cost memory once written (``cap`` given:
    that many, as many as the ring at least).  A resize
    (``rering``) moves no sub-buffer: the held keep their slots, places
    added take slots left free or never used, places gone give theirs back
    (their memory returned to the host at once).  A reset or an order change
    makes a new one, and the old mapping goes with the last ``BufferPage``
    that pointed into it."""

    def __cinit__(self, Py_ssize_t nring, Py_ssize_t size, Py_ssize_t cap=0):
        cdef void *got
        cdef Py_ssize_t i
        if nring <= 0 or size <= 0 or nring > 0xffffffff:
            raise ValueError("an arena of %d slots of %d bytes" % (nring, size))
        cap = max(cap if cap > 0 else RESERVE // size, nring)
        cap = min(cap, 0xffffffff)
        got = mmap(NULL, cap * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        if got == MAP_FAILED:
            raise MemoryError()
        self.base = <unsigned char *> got
        self.size = size
        self.cap = cap
        self.order = <uint32_t *> PyMem_Malloc(nring * sizeof(uint32_t))
        if self.order == NULL or self._grant(nring) < 0:
            raise MemoryError()
        for i in range(nring):
            self.order[i] = <uint32_t> i
        self.nring = nring

    def __dealloc__(self):
        if self.base != NULL:
            munmap(self.base, self.cap * self.size)
        PyMem_Free(self.order)
        PyMem_Free(self.free)
        PyMem_Free(self.nent)

    def slot(self, long long seq):
        """The slot of the ring's sub-buffer of sequence number ``seq``."""
        return self.order[seq % self.nring]

    cdef int _grant(self, Py_ssize_t n) noexcept:
        """The ``n`` slots after ``top`` made usable: 0, or -1 (the host
        refused: nothing changed)."""
        cdef Py_ssize_t start, end
        cdef uint32_t *got
        if n <= 0:
            return 0
        got = <uint32_t *> PyMem_Realloc(self.nent, (self.top + n) * sizeof(uint32_t))
        if got == NULL:
            return -1
        self.nent = got
        memset(got + self.top, 0, n * sizeof(uint32_t))
        start = (self.top * self.size) // HOST_PAGE * HOST_PAGE
        end = (self.top + n) * self.size
        if mprotect(self.base + start, end - start, PROT_READ | PROT_WRITE) != 0:
            return -1
        self.top += n
        return 0

    cdef void _give_back(self, Py_ssize_t first, Py_ssize_t last) noexcept:
        """Slots ``first`` .. ``last`` hold nothing any more: the host pages
        wholly inside them go back to the host (read as zeros after)."""
        cdef Py_ssize_t start = -(-(first * self.size) // HOST_PAGE) * HOST_PAGE
        cdef Py_ssize_t end = ((last + 1) * self.size) // HOST_PAGE * HOST_PAGE
        if start < end:
            madvise(self.base + start, end - start, MADV_DONTNEED)

    cdef int rering(self, Py_ssize_t nring, long long head, Py_ssize_t npages) except -1:
        """The ring becomes ``nring`` places, the ``npages`` sub-buffers held
        (sequence numbers ``head`` ..) keeping their slots at their new
        places; the places after them take the slots of the old places not
        held, then free slots, then slots never used; slots left over go
        free (their memory back to the host).  0, or 1: more slots than the
        mapping holds (nothing changed).  MemoryError: nothing changed."""
        cdef Py_ssize_t old = self.nring, spare = self.nring - npages
        cdef Py_ssize_t fresh = nring - npages - spare - self.nfree
        cdef Py_ssize_t left = max(0, old - nring), i, j = 0, top0 = self.top
        cdef Py_ssize_t run0 = -1, run1 = -1
        cdef uint32_t *order
        cdef uint32_t *got
        cdef uint32_t s
        cdef long long seq
        if npages > nring or nring <= 0 or nring > 0xffffffff:
            raise ValueError("%d sub-buffers held in a ring of %d" % (npages, nring))
        if fresh > 0 and top0 + fresh > self.cap:
            return 1
        order = <uint32_t *> PyMem_Malloc(nring * sizeof(uint32_t))
        if order == NULL:
            raise MemoryError()
        if left:
            got = <uint32_t *> PyMem_Realloc(self.free, (self.nfree + left) * sizeof(uint32_t))
            if got == NULL:
                PyMem_Free(order)
                raise MemoryError()
            self.free = got
        if fresh > 0 and self._grant(fresh) < 0:
            PyMem_Free(order)
            raise MemoryError()
        for i in range(npages):
            seq = head + i
            order[seq % nring] = self.order[seq % old]
        for i in range(nring - npages):
            seq = head + npages + i
            if j < spare:
                order[seq % nring] = self.order[(head + npages + j) % old]
                j += 1
            elif self.nfree:
                self.nfree -= 1
                order[seq % nring] = self.free[self.nfree]
            else:
                order[seq % nring] = <uint32_t> top0
                top0 += 1
        while j < spare:                        # (a shrink: runs of slots given back)
            s = self.order[(head + npages + j) % old]
            self.free[self.nfree] = s
            self.nfree += 1
            j += 1
            if run0 >= 0 and s == run1 + 1:
                run1 = s
                continue
            if run0 >= 0:
                self._give_back(run0, run1)
            run0 = run1 = s
        if run0 >= 0:
            self._give_back(run0, run1)
        PyMem_Free(self.order)
        self.order = order
        self.nring = nring
        return 0


cdef BufferPage slot_page(PageArena arena, long long seq, int size, records):
    """The ring's sub-buffer of sequence number ``seq`` in ``arena`` (``size``
    data bytes) as it is: its counts read from its bytes."""
    cdef BufferPage page = BufferPage.__new__(BufferPage)
    cdef unsigned char *mem = slot_of(arena, seq)
    page.arena = arena
    page.data = mem
    page.rawsize = size
    page.used = commit_of(mem)
    page_counts(mem, page.used, &page.nraw, &page.raw_last)
    page.records = records
    return page


cdef void page_counts(const unsigned char *p, int used, int *n, long long *last) noexcept:
    """How many entries the raw sub-buffer at ``p`` (``used`` data bytes)
    holds, and the newest's time."""
    cdef int off = PAGE_HDR, end = PAGE_HDR + used, rec = 0, nxt = 0, k = 0
    cdef uint64_t ts
    cdef uint32_t tl
    memcpy(&ts, p, 8)
    while off < end:
        tl = record_at(p, off, &rec, &nxt)
        ts = time_after(p, off, tl, ts)
        if tl != <uint32_t> TYPE_EXTEND:
            k += 1
        off = nxt
    n[0] = k
    last[0] = <long long> ts if k else 0


@cython.no_gc
@cython.auto_pickle(False)
cdef class BufferPage:
    """A sub-buffer something looks at (its fields: _ring_buffer_bpage.pxd).

    Raw (``data``, a slot of its CPU buffer's arena): ``nraw`` entries in
    the kernel's binary layout, the newest at ``raw_last``, and beside
    them the entries whose records are made when read (``side``: record
    offset -> entry; the function tracer's and fixed-size events' records
    are their entries).  ``events`` decodes them into tuples for good;
    ``raw`` is a copy of its bytes (None: not raw).  Made by the ring
    (``slot_page``, ``CpuBufferCore._next_page``), never by Python."""

    @property
    def raw(self):
        """A copy of its bytes while raw (a read-only memoryview: PAGE_HDR
        and the data area), else None: the writer may reuse the slot once
        the sub-buffer leaves the ring, a copy stays as it was read."""
        if self.data == NULL:
            return None
        return memoryview(self.data[:PAGE_HDR + self.rawsize])

    def drop_raw(self):
        """No longer raw (its entries taken, or decoded for good)."""
        self.data = NULL

    def __len__(self):
        ev = self._events
        return len(ev) if ev is not None else self.nraw

    @property
    def events(self):
        ev = self._events
        if ev is None:
            ev = decode_raw(self.data, self.used, self.side, self.records) if self.data != NULL else ()
            self.drop_raw()
            self.side = self.records = None
            ev = self._events = deque(ev)
            self.nraw = 0
        return ev

    def newest_ts(self):
        """The time of its newest entry (it holds one at least)."""
        ev = self._events
        return ev[len(ev) - 1][0] if ev is not None else self.raw_last


def decode_page(const unsigned char[::1] raw, int used, dict side=None,
                FixedRecords records=None):
    """``decode_raw()`` of the raw sub-buffer ``raw`` (a buffer: its header and
    data area)."""
    if PAGE_HDR + used > raw.shape[0]:
        raise ValueError("%d data bytes in a sub-buffer of %d" % (used, raw.shape[0]))
    return decode_raw(&raw[0], used, side, records)


cdef Py_ssize_t _decodes = 0


def decodes():
    """How many sub-buffers were decoded so far (the tests')."""
    return _decodes


cdef list decode_raw(const unsigned char *p, int used, dict side, FixedRecords records):
    """The entries of the raw sub-buffer at ``p`` (``used`` data bytes), in
    order: (ts, type, pid, flags, preempt_count, ip, parent_ip) each (a
    stack's, a stack id's, the function graph's entries and exits as their
    tuples are), the ``side`` entries (record offset -> entry) where they
    were written, an event's whose record is in the bytes as ``records``
    reads it back."""
    global _decodes
    cdef FixedRecord nr
    cdef uint64_t ts, ip, parent, calltime, rettime
    cdef uint32_t tl
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
        if tl > 28 and tl != <uint32_t> TYPE_EXTEND:
            raise ValueError("raw sub-buffer: event type %d at %d" % (tl, off))
        ts = time_after(p, off, tl, ts)
        if tl == <uint32_t> TYPE_EXTEND:
            off = nxt
            continue
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
