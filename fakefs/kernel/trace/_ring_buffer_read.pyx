# cython: language_level=3, boundscheck=False, wraparound=False
"""The readers' ways into a CPU's ring of sub-buffers, compiled (the data
plane: docs/data-plane.md): ``CpuBufferRead`` adds to the ring
(``_ring_buffer.CpuBufferCore``) what a reader asks of it without making
every sub-buffer a page: a sub-buffer's entries, bytes and newest time
found in its bytes, the oldest holding an entry, one made a
``BufferPage`` (``promote``) when a reader takes from it; and
``RingSnap``, the entries held at an instant, read later a sub-buffer at
a time (``ring_buffer_reader.CpuBufferReader`` reads with them).
"""

import weakref

cimport cython

from fakefs.kernel.trace._trace_events_raw cimport FixedRecords
from fakefs.kernel.trace._ring_buffer cimport CpuBufferCore
from fakefs.kernel.trace._ring_buffer_bpage cimport (
    PAGE_HDR, BufferPage, PageArena, commit_of, decode_raw, nent_of, page_counts, slot_of,
    slot_page)


cdef class CpuBufferRead(CpuBufferCore):
    """A CPU buffer's ring as its readers see it (``CpuBuffer`` is the rest)."""

    def promote(self, Py_ssize_t i):
        """The ``i``-th sub-buffer (0: the oldest) as a ``BufferPage``,
        made once: it stays one while it is in the ring."""
        cdef long long seq
        cdef BufferPage page
        if not 0 <= i < self.npages:
            raise IndexError(i)
        seq = self.head + i
        page = self.objs.get(seq)
        if page is None:
            page = slot_page(self.arena, seq, <int> self.subbuf_size, self.records)
            if self.sides:
                page.side = self.sides.pop(seq, None)
            self.objs[seq] = page
            if seq == self.tail_seq:
                self.tail_obj = None
        return page

    cdef object _look(self, Py_ssize_t i, int *n, long long *last):
        """The ``i``-th sub-buffer's page if it is one, else None and its
        entries and newest time read from its bytes."""
        cdef unsigned char *p
        if not 0 <= i < self.npages:
            raise IndexError(i)
        page = self.objs.get(self.head + i)
        if page is None:
            p = slot_of(self.arena, self.head + i)
            page_counts(p, commit_of(p), n, last)
        return page

    def page_len(self, Py_ssize_t i):
        """How many entries the ``i``-th sub-buffer holds (decoding nothing)."""
        if not 0 <= i < self.npages:
            raise IndexError(i)
        page = self.objs.get(self.head + i)
        return len(page) if page is not None else nent_of(self.arena, self.head + i)[0]

    def page_used(self, Py_ssize_t i):
        """The data bytes the ``i``-th sub-buffer used."""
        if not 0 <= i < self.npages:
            raise IndexError(i)
        page = self.objs.get(self.head + i)
        if page is not None:
            return (<BufferPage> page).used
        return commit_of(slot_of(self.arena, self.head + i))

    def page_newest(self, Py_ssize_t i):
        """The time of the ``i``-th sub-buffer's newest entry (it holds one)."""
        cdef int n = 0
        cdef long long last = 0
        page = self._look(i, &n, &last)
        return page.newest_ts() if page is not None else last

    def first_nonempty(self):
        """The place of the oldest sub-buffer holding an entry, or -1."""
        cdef Py_ssize_t i
        for i in range(self.npages):
            if self.page_len(i):
                return i
        return -1

    def head_read(self):
        """Entries a consuming reader took from the oldest sub-buffer."""
        page = self.objs.get(self.head) if self.npages else None
        return (<BufferPage> page).read if page is not None else 0

    @property
    def pages(self):
        """Every sub-buffer, oldest first, each made a ``BufferPage`` (the
        tests'; readers take what they need: ``promote``)."""
        return [self.promote(i) for i in range(self.npages)]

    def walked_bytes(self):
        """``held_bytes`` summed anew from the sub-buffers (the tests')."""
        return sum(self.page_used(i) for i in range(self.npages))

    def snapshot(self):
        """The entries held now, read later (``RingSnap``)."""
        cdef RingSnap snap = RingSnap(self)
        if self.npages:
            if len(self.snaps) >= 8:        # (the writer forgets those gone as it goes)
                self.snaps = [ref for ref in self.snaps if ref() is not None]
            self.snaps.append(weakref.ref(snap))
        return snap


@cython.final
@cython.auto_pickle(False)
cdef class RingSnap:
    """The entries a CPU buffer held when it was taken, read later a
    sub-buffer at a time (``cat trace`` of a big buffer holds one
    sub-buffer's tuples at a time; later writes do not change what it
    gives).  It keeps the sequence numbers, the tail's ``used`` then (the
    writer only appends past it), the entries kept beside the sub-buffers,
    and the tuples of those that were tuples; the bytes stay in the ring,
    copied here only when the writer is about to reuse a slot this
    snapshot has not read yet (``keep``), or the ring changes (``detach``)."""

    cdef CpuBufferCore cb       # None: detached (everything it needs is here)
    cdef PageArena arena
    cdef long long first, end, next
    cdef int tail_used
    cdef dict lists, sides, copies
    cdef object records
    cdef object __weakref__

    def __init__(self, CpuBufferCore cb):
        cdef long long seq
        cdef BufferPage page
        self.cb = cb
        self.arena = cb.arena
        self.first = self.next = cb.head
        self.end = cb.head + cb.npages
        self.records = cb.records
        self.lists = {}
        self.copies = {}
        self.sides = dict(cb.sides) if cb.sides else {}
        for seq, page in cb.objs.items():
            if page._events is not None:
                self.lists[seq] = list(page._events)
            elif page.side:
                self.sides[seq] = page.side
        tail = cb._tail()
        self.tail_used = (<BufferPage> tail).used if tail is not None else 0

    cdef int _used(self, long long seq) noexcept:
        if seq == self.end - 1:
            return self.tail_used
        return commit_of(slot_of(self.arena, seq))

    def keep(self, long long seq):
        """Copy sequence number ``seq``'s bytes if this snapshot still needs
        them (the writer's, before it reuses the slot)."""
        cdef int used
        if self.cb is None or seq < self.next or seq < self.first or seq >= self.end:
            return
        if seq in self.lists or seq in self.copies:
            return
        used = self._used(seq)
        self.copies[seq] = (<char *> slot_of(self.arena, seq))[:PAGE_HDR + used]

    def detach(self):
        """The ring changes: everything still to read copied now."""
        cdef long long seq
        if self.cb is None:
            return
        for seq in range(max(self.next, self.first), self.end):
            self.keep(seq)
        self.cb = None
        self.arena = None

    def pages(self):
        """The sub-buffers' entries, a list each, oldest first (empty ones left out)."""
        cdef long long seq
        cdef list got
        cdef bytes blob
        for seq in range(self.first, self.end):
            got = self.lists.pop(seq, None)
            if got is None:
                blob = self.copies.pop(seq, None)
                side = self.sides.pop(seq, None)
                if blob is not None:
                    got = decode_raw(<const unsigned char *> blob, len(blob) - PAGE_HDR, side,
                                     <FixedRecords> self.records)
                else:
                    got = decode_raw(slot_of(self.arena, seq), self._used(seq), side,
                                     <FixedRecords> self.records)
            self.next = seq + 1
            if got:
                yield got
        self.cb = None


