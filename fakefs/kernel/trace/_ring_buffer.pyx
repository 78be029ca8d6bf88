# cython: language_level=3, boundscheck=False, wraparound=False
"""A CPU's ring of sub-buffers and writing into it, compiled (the data
plane: docs/data-plane.md).

``CpuBufferCore`` is a CPU buffer's ring and counts (kernel/trace/
ring_buffer.c's ``struct ring_buffer_per_cpu``) as C fields and C code;
``CpuBuffer`` (ring_buffer.py) adds the rest in Python.  Its sub-buffers
are the slots of one ``PageArena`` (_ring_buffer_bpage.pyx: their layout),
in ring order: a sub-buffer nobody looks at is its bytes alone, and
what a reader or the writer looks at is a ``BufferPage`` for as long as
it is in the ring (``promote``); a snapshot of the ring (``RingSnap``,
what ``trace`` shows) copies a sub-buffer's bytes only when the writer
is about to reuse its slot before the snapshot's reader came to it.

``PageWriter`` is ``CpuBuffer.write()`` for a stretch of entries, with
the same accounting (``reserve()``): a tail sub-buffer that holds tuples
(a reader decoded it) is filled with tuples (as ``write()`` would), every
new one is raw.  The function tracer's records are written in their bytes:
TRACE_FN (``function_trace_call()``), TRACE_STACK_ID and TRACE_STACK (its
stack options), and so is an event's whose fields are of fixed size
(numbers, char arrays, arrays of numbers, coded values; ``__data_loc``
strings after them: ``_trace_events_raw.FixedRecord``, where the entry
comes back whole from the bytes).  Any other entry (an event's with other
dynamic data, a marker's) takes its place in the sub-buffer as the
kernel's would (its header, its length, its time delta) and is kept
beside it as the tuple (the sub-buffer's ``side``: record offset ->
entry) until a page reader wants its bytes: ``page_data()`` encodes it
there, in the space it holds.  Formatting an entry's fields is the
control plane's work, done only for what is read.
"""

from libc.stdint cimport int32_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from fakefs.kernel.trace._trace_events_raw cimport (
    FixedRecord, FixedRecords, entry_header_fits, put_entry_header, small_int)
from fakefs.kernel.trace._ring_buffer_bpage cimport (
    LEN_EXTEND, PAGE_HDR, SMALL_DATA, TRACE_FN, TRACE_GRAPH_ENT, TRACE_GRAPH_RET, TRACE_STACK,
    TRACE_STACK_ID, TS_SHIFT, TYPE_EXTEND, BufferPage, PageArena, commit_of, nent_of,
    rb_event_length, record_room, slot_of)

cdef long long TS_LIMIT = 1LL << 27


cdef class CpuBufferCore:
    """One CPU's ring (kernel/trace/ring_buffer.c's ``struct
    ring_buffer_per_cpu``): its sub-buffers, its counts (fields:
    _ring_buffer.pxd), the writer's steps and the readers' ways in;
    ``CpuBuffer`` is the rest."""

    def __cinit__(self, *args, **kwargs):
        self.objs = {}
        self.sides = {}
        self.snaps = []

    cpdef bint write(self, tuple entry, int length, bint overwrite) except -1:
        """``ring_buffer_write()`` of ``entry`` (``length`` bytes, at its
        time, ``entry[0]``); whether it was taken."""
        cdef PageWriter w = _ONE
        w._begin(self, overwrite, length)
        try:
            return _put(w, entry, length)
        finally:
            w._done()

    # ------------------------------------------------------------ the ring
    cpdef BufferPage _next_page(self, bint overwrite):
        """A new raw sub-buffer at the tail; when all are in use, the oldest
        is overwritten (its events counted as overrun), or without
        overwrite there is none (None).  The tail it follows is its bytes
        alone from now on, unless something made it more (tuples, a
        reader's count)."""
        cdef BufferPage page, old
        cdef PageArena a
        cdef long long seq
        if self.npages >= self.nr_pages:
            if not overwrite:
                return None
            self._overwrite(1)
        a = self._arena()
        if self.npages:
            seq = self.head + self.npages - 1
            old = <BufferPage> self.objs[seq]
            if old.data != NULL:                # (raw: no tuples, nothing read from it)
                nent_of(a, seq)[0] = old.nraw
                del self.objs[seq]
                if old.side:
                    self.sides[seq] = old.side
        seq = self.head + self.npages
        if self.snaps:
            self._reuse(seq)
        page = BufferPage.__new__(BufferPage)
        page.data = slot_of(a, seq)
        memset(page.data, 0, a.size)
        page.arena = a
        page.rawsize = <int> self.subbuf_size
        self.objs[seq] = page
        self.npages += 1
        self.tail_obj, self.tail_seq = page, seq
        return page

    cdef PageArena _arena(self):
        """Where the sub-buffers' bytes are: made at the first, and anew
        when their size changed."""
        cdef PageArena a = self.arena
        if a is None or a.nring != self.nr_pages or a.size != PAGE_HDR + self.subbuf_size:
            if self.npages:
                raise RuntimeError("cpu%d: sub-buffers of another size in the ring" % self.cpu)
            a = self.arena = PageArena(self.nr_pages, PAGE_HDR + self.subbuf_size)
        return a

    cdef BufferPage _tail(self):
        cdef long long seq
        if not self.npages:
            return None
        seq = self.head + self.npages - 1
        if self.tail_obj is None or self.tail_seq != seq:
            self.tail_obj = <BufferPage> self.objs[seq]
            self.tail_seq = seq
        return self.tail_obj

    cdef Py_ssize_t _pop_head(self) except -1:
        """The oldest sub-buffer leaves the ring: how many entries it held."""
        cdef long long seq = self.head
        cdef BufferPage page = self.objs.pop(seq, None)
        cdef Py_ssize_t n
        cdef int used
        if seq == self.tail_seq:
            self.tail_obj = None
        if page is not None:
            n = len(page)
            used = page.used
        else:
            used = commit_of(slot_of(self.arena, seq))
            n = nent_of(self.arena, seq)[0]
            if self.sides:
                self.sides.pop(seq, None)
        self.held_bytes -= used
        self.head += 1
        self.npages -= 1
        return n

    cdef void _reuse(self, long long seq) except *:
        """The writer is about to write sequence number ``seq`` in the slot
        of ``seq - nr_pages``: the snapshots still to read that one copy it."""
        cdef list alive = []
        for ref in self.snaps:
            snap = ref()
            if snap is not None:
                alive.append(ref)
                snap.keep(seq - self.arena.nring)
        self.snaps = alive

    def pop_head(self):
        """``_pop_head()`` from Python: the entries the oldest held."""
        if not self.npages:
            raise IndexError("an empty ring")
        return self._pop_head()

    def overwrite_oldest(self, Py_ssize_t n=1):
        """The ``n`` oldest sub-buffers are overwritten: their entries are overrun."""
        if not 0 <= n <= self.npages:
            raise IndexError("%d of %d sub-buffers" % (n, self.npages))
        self._overwrite(n)

    cdef void _overwrite(self, Py_ssize_t n) except *:
        cdef Py_ssize_t lost = 0
        for _ in range(n):
            lost += self._pop_head()
        self.entries -= lost
        self.overrun += lost

    def clear_pages(self):
        """Every sub-buffer goes (their memory with the arena, once no
        ``BufferPage`` points into it); the snapshots keep what they still
        have to read."""
        self._detach_snaps()
        self.objs = {}
        self.tail_obj = None
        self.sides = {}
        self.npages = 0
        self.head = 0
        self.held_bytes = 0
        self.arena = None

    def rering(self, Py_ssize_t nr_pages):
        """A ring of ``nr_pages`` sub-buffers (as many as it holds at
        least), as ``ring_buffer_resize()`` adds pages to the ring or takes
        them out: the sub-buffers held stay in their slots (the arena's
        ``rering``: no bytes move, the time is the ring's length, not its
        bytes); only past the mapping's reservation are they copied into a
        new arena.  Open snapshots keep what they still have to read.
        MemoryError: no memory for it (nothing changed)."""
        if nr_pages < self.npages:
            raise ValueError("%d sub-buffers in a ring of %d" % (self.npages, nr_pages))
        nr_pages = max(2, nr_pages)
        if self.arena is None:
            return
        self._detach_snaps()
        if self.arena.rering(nr_pages, self.head, self.npages):
            self._copy_to(PageArena(nr_pages, PAGE_HDR + self.subbuf_size, 2 * nr_pages))

    cdef void _copy_to(self, PageArena new) except *:
        """The sub-buffers held copied into ``new`` (places 0 ..), in order
        (the ``BufferPage``s made of them pointed there)."""
        cdef PageArena old = self.arena
        cdef Py_ssize_t i
        cdef long long seq
        cdef BufferPage page
        cdef dict objs = {}, sides = {}
        for i in range(self.npages):
            seq = self.head + i
            memcpy(slot_of(new, i), slot_of(old, seq), new.size)
            nent_of(new, i)[0] = nent_of(old, seq)[0]
            page = self.objs.get(seq)
            if page is not None:
                if page.data != NULL:
                    page.data = slot_of(new, i)
                    page.arena = new
                objs[i] = page
            side = self.sides.get(seq)
            if side is not None:
                sides[i] = side
        self.objs, self.sides, self.arena, self.head = objs, sides, new, 0
        self.tail_obj = None

    cdef void _detach_snaps(self) except *:
        for ref in self.snaps:
            snap = ref()
            if snap is not None:
                snap.detach()
        self.snaps = []


cdef class PageWriter:
    """Writing entries into one CPU's buffer (a ``CpuBuffer``), as
    ``write()`` of each would (see the module's doc); ``length`` is a
    function entry's (``ring_buffer.event_length()``, as every length
    given here)."""

    def __cinit__(self, CpuBufferCore cb=None, bint overwrite=False, int length=0):
        if cb is not None:
            self._begin(cb, overwrite, length)

    cdef void _begin(self, CpuBufferCore cb, bint overwrite, int length) except *:
        """Writing into ``cb`` from its tail as it is now."""
        self.cb = cb
        self.overwrite = overwrite
        self.length = length
        self.cap = cb.subbuf_size
        self.last_ts = cb.last_ts
        self.written = self.entries = self.dropped = self.nbytes_written = 0
        self.page = None
        if cb.npages:
            self._load(cb._tail())

    cdef void _load(self, BufferPage page) except *:
        self.page = page
        self.used = self.used0 = page.used
        self.side = None
        if page.data != NULL:
            self.side = page.side
            self.raw = page.data
            self.n = page.nraw
            self.page_last = page.raw_last
            self.append = None
        else:
            self.raw = NULL
            self.n = len(page)
            self.append = page.events.append

    cdef void _store(self) except *:
        """The sub-buffer's and the CPU buffer's counts as written so far."""
        cdef uint64_t commit
        cdef BufferPage page = self.page
        cdef CpuBufferCore cb = self.cb
        if page is not None:
            page.used = self.used
            cb.held_bytes += self.used - self.used0
            self.used0 = self.used
            if self.raw != NULL:
                page.nraw = self.n
                page.raw_last = self.page_last
                commit = self.used
                memcpy(self.raw + 8, &commit, 8)
        if self.written:
            cb.written += self.written
            cb.bytes_written += self.nbytes_written
        if self.entries:
            cb.entries += self.entries
            cb.last_ts = self.last_ts
        if self.dropped:
            cb.dropped += self.dropped
        self.written = self.entries = self.dropped = self.nbytes_written = 0

    cdef bint _next(self) except -1:
        """A new raw sub-buffer at the tail (False: none, the entry is
        dropped; the tail stays, a shorter entry may still fit in it)."""
        cdef BufferPage page
        self._store()
        page = self.cb._next_page(self.overwrite)
        if page is None:
            return False
        self._load(page)
        return True

    cdef int reserve(self, long long ts, int length) except -1:
        """``write()``'s accounts of an entry of ``length`` bytes at ``ts``:
        0 it is dropped (or longer than a sub-buffer: refused, not counted), 1 its record is to be written at ``self.q`` (its
        event header, and a time extend, written), 2 the tail holds tuples:
        append one."""
        cdef int need = length, area
        cdef uint32_t hdr, ext
        cdef uint64_t delta, t
        cdef unsigned char *q
        if length > self.cap:
            return 0                # (ring_buffer_lock_reserve() fails: nothing counted)
        self.written += 1
        self.nbytes_written += length
        if self.page is not None and self.n and ts - self.last_ts >= TS_LIMIT:
            need += LEN_EXTEND
        if self.page is None or self.used + need > self.cap:
            if not self._next():
                self.dropped += 1
                return 0
            need = length
        if self.raw != NULL and self.n and ts < self.page_last:
            # earlier than the page's last (never from the function
            # tracer's sorted calls): the sub-buffer goes on as tuples
            self._untuple()
        self.used += need
        self.n += 1
        self.entries += 1
        self.last_ts = ts
        if self.raw == NULL:
            return 2
        q = self.raw + PAGE_HDR + self.used - need
        if self.n == 1:
            t = <uint64_t> ts
            memcpy(self.raw, &t, 8)                 # the page's time_stamp
            delta = 0
        else:
            delta = <uint64_t> (ts - self.page_last)
        self.page_last = ts
        if need > length:                           # a time extend first
            hdr = TYPE_EXTEND | <uint32_t> ((delta & (TS_LIMIT - 1)) << 5)
            ext = <uint32_t> (delta >> TS_SHIFT)
            memcpy(q, &hdr, 4)
            memcpy(q + 4, &ext, 4)
            q += LEN_EXTEND
            delta = 0
        area = length - 4
        if area > SMALL_DATA:                       # type_len 0: a length word
            hdr = <uint32_t> (delta << 5)
            ext = <uint32_t> area
            memcpy(q, &hdr, 4)
            memcpy(q + 4, &ext, 4)
            self.q = q + 8
        else:
            hdr = <uint32_t> (area // 4) | <uint32_t> (delta << 5)
            memcpy(q, &hdr, 4)
            self.q = q + 4
        return 1

    cdef void _common(self, uint16_t typ, int pid, int flags, int pc) noexcept:
        put_entry_header(self.q, typ, pid, flags, pc)

    cdef bint fn(self, long long ts, int pid, int flags, int pc, uint64_t ip,
                 uint64_t parent) except -1:
        """``write()`` of a TRACE_FN entry; False: dropped."""
        cdef int r = self.reserve(ts, self.length)
        if r == 1:
            self._common(TRACE_FN, pid, flags, pc)
            memcpy(self.q + 8, &ip, 8)
            memcpy(self.q + 16, &parent, 8)
        elif r == 2:
            self.append((ts, TRACE_FN, pid, flags, pc, ip, parent))
        return r != 0

    cdef bint stack_id(self, long long ts, int pid, int flags, int pc, uint32_t sid,
                       int length) except -1:
        """``write()`` of a TRACE_STACK_ID entry (``length`` bytes)."""
        cdef int r = self.reserve(ts, length)
        if r == 1:
            self._common(TRACE_STACK_ID, pid, flags, pc)
            memcpy(self.q + 8, &sid, 4)
        elif r == 2:
            self.append((ts, TRACE_STACK_ID, pid, flags, pc, sid, None))
        return r != 0

    cdef bint stack(self, long long ts, int pid, int flags, int pc, tuple stack,
                    int length) except -1:
        """``write()`` of a TRACE_STACK entry of ``stack`` (its callers;
        ``length`` bytes)."""
        cdef int32_t size = len(stack), i
        cdef uint64_t ip
        cdef int r = self.reserve(ts, length)
        if r == 1:
            self._common(TRACE_STACK, pid, flags, pc)
            memcpy(self.q + 8, &size, 4)
            for i in range(size):
                ip = stack[i]
                memcpy(self.q + 16 + 8 * i, &ip, 8)
        elif r == 2:
            self.append((ts, TRACE_STACK, pid, flags, pc, stack, None))
        return r != 0

    cdef bint stack_ips(self, long long ts, int pid, int flags, int pc,
                        const unsigned long long *ips, int size, int length, frame) except -1:
        """``stack()`` of the ``size`` addresses ``ips``, which are
        ``frame.stack`` (made only for a sub-buffer of tuples)."""
        cdef int32_t n = size
        cdef int r = self.reserve(ts, length)
        if r == 1:
            self._common(TRACE_STACK, pid, flags, pc)
            memcpy(self.q + 8, &n, 4)
            memcpy(self.q + 16, ips, 8 * <size_t> size)
        elif r == 2:
            self.append((ts, TRACE_STACK, pid, flags, pc, frame.stack, None))
        return r != 0

    cdef bint graph_ent(self, long long ts, int pid, int flags, int pc, uint64_t func,
                        int depth, int length) except -1:
        """``write()`` of a TRACE_GRAPH_ENT entry (``funcgraph_entry``:
        the function, its depth; ``length`` bytes)."""
        cdef int32_t d = depth
        cdef int r = self.reserve(ts, length)
        if r == 1:
            self._common(TRACE_GRAPH_ENT, pid, flags, pc)
            memcpy(self.q + 8, &func, 8)
            memcpy(self.q + 16, &d, 4)
        elif r == 2:
            self.append((ts, TRACE_GRAPH_ENT, pid, flags, pc, func, depth))
        return r != 0

    cdef bint graph_ret(self, long long ts, int pid, int flags, int pc, uint64_t func,
                        int depth, long long calltime, uint64_t retval, bint with_retval,
                        int length) except -1:
        """``write()`` of a TRACE_GRAPH_RET entry (``funcgraph_exit``: the
        function, with CONFIG_FUNCTION_GRAPH_RETVAL ``retval``, its depth,
        no overrun, when it was called, ``ts`` it returned; ``length``
        bytes, the last 16 of them zero)."""
        cdef int32_t d = depth
        cdef uint32_t overrun = 0
        cdef uint64_t ct = <uint64_t> calltime, rt = <uint64_t> ts
        cdef unsigned char *q
        cdef int r = self.reserve(ts, length)
        if r == 1:
            q = self.q
            self._common(TRACE_GRAPH_RET, pid, flags, pc)
            memcpy(q + 8, &func, 8)
            if with_retval:
                memcpy(q + 16, &retval, 8)
                q += 8
            memcpy(q + 16, &d, 4)
            memcpy(q + 20, &overrun, 4)
            memcpy(q + 24, &ct, 8)
            memcpy(q + 32, &rt, 8)
            memset(q + 40, 0, 16)
        elif r == 2:
            self.append((ts, TRACE_GRAPH_RET, pid, flags, pc,
                         (func, depth, 0, calltime, ts, retval), None))
        return r != 0

    cdef bint other(self, long long ts, tuple entry, int length) except -1:
        """``write()`` of any other entry (``length`` bytes): in a raw
        sub-buffer its record where an event's fixed fields are the whole of
        it (``_trace_events_raw``: read back as it is), else its place, the
        entry kept beside it (``side``)."""
        cdef int r = self.reserve(ts, length)
        cdef FixedRecord nr
        cdef Py_ssize_t need
        if r == 1:
            recs = self.cb.records
            if recs is not None and type(entry[1]) is int:
                nr = (<FixedRecords> recs).of(entry[1])
                need = nr.length(entry) if nr is not None else -1
                if need >= 0 and rb_event_length(need) == length and nr.pack(self.q, entry, need):
                    if self.page.records is None:
                        self.page.records = recs
                    return True
            if self.side is None:
                self.side = {}
                self.page.side = self.side
            self.side[<long> (self.q - self.raw)] = entry
        elif r == 2:
            self.append(entry)
        return r != 0

    cdef void _untuple(self) except *:
        cdef BufferPage page = self.page
        page.nraw = self.n
        page.raw_last = self.page_last
        page.used = self.used
        self.raw = NULL
        self.append = page.events.append      # (decodes it)

    cdef void _done(self) except *:
        """Store what was written and let go of the buffer (the writer may
        be begun again on another)."""
        self._store()
        self.cb = self.page = self.side = self.append = None

    def finish(self):
        """``_done()`` from Python (the tests')."""
        self._done()

    def put_fn(self, long long ts, int pid, int flags, int pc, uint64_t ip, uint64_t parent):
        """``fn()`` from Python (the tests')."""
        return self.fn(ts, pid, flags, pc, ip, parent)

    def put_stack_id(self, long long ts, int pid, int flags, int pc, uint32_t sid, int length):
        return self.stack_id(ts, pid, flags, pc, sid, length)

    def put_stack(self, long long ts, int pid, int flags, int pc, tuple stack, int length):
        return self.stack(ts, pid, flags, pc, stack, length)

    def put_stack_ips(self, long long ts, int pid, int flags, int pc, frame, int length):
        """``stack_ips()`` of ``frame.stack`` (at most 256 addresses)."""
        cdef unsigned long long ips[256]
        cdef tuple stack = frame.stack
        cdef int i, n = len(stack)
        assert 0 < n <= 256
        for i in range(n):
            ips[i] = stack[i]
        return self.stack_ips(ts, pid, flags, pc, ips, n, length, frame)

    def put_other(self, tuple entry, int length):
        return self.other(entry[0], entry, length)


cdef bint _u64s(tuple stack) noexcept:
    for ip in stack:
        if type(ip) is not int or not 0 <= ip < 2 ** 64:
            return False
    return True


cdef PageWriter _ONE = PageWriter()


cdef bint _put(PageWriter w, tuple entry, int length) except -1:
    """One entry (``length`` bytes) through ``w``: a function tracer's
    record in its bytes (its fields in the record's ranges and the record
    within ``length``), any other entry as ``other()`` writes it."""
    cdef int room = record_room(length)
    cdef long long typ
    ts = entry[0]
    w.length = length
    if len(entry) == 7 and type(ts) is int and entry_header_fits(entry[2], entry[3], entry[4]):
        typ = small_int(entry[1], 0, 65536)     # (-1: not a type id these take)
        a = entry[5]
        b = entry[6]
        if typ == TRACE_FN and room >= 24 and type(a) is int and type(b) is int \
                and 0 <= a < 2 ** 64 and 0 <= b < 2 ** 64:
            return w.fn(ts, entry[2], entry[3], entry[4], a, b)
        if typ == TRACE_STACK_ID and b is None and room >= 12 and type(a) is int \
                and 0 <= a < 2 ** 32:
            return w.stack_id(ts, entry[2], entry[3], entry[4], a, length)
        if typ == TRACE_STACK and b is None and type(a) is tuple \
                and room >= 16 + 8 * len(a) and _u64s(a):
            return w.stack(ts, entry[2], entry[3], entry[4], a, length)
    return w.other(ts, entry, length)


cdef PageWriter _MANY = PageWriter()


def write_many(CpuBufferCore cb, list entries, length, bint overwrite):
    """``CpuBufferCore.write()`` of each of ``entries`` (tuples in time order,
    ``length`` bytes each, or ``length[i]`` the i-th) with one writer;
    how many were taken."""
    cdef PageWriter w = _MANY
    cdef Py_ssize_t i, n = len(entries), took = 0
    cdef bint one = type(length) is int
    cdef int ln = length if one else 0
    if not n:
        return 0
    w._begin(cb, overwrite, ln)
    try:
        for i in range(n):
            took += _put(w, <tuple?> entries[i], ln if one else <int> length[i])
    finally:
        w._done()
    return took
