# cython: language_level=3, boundscheck=False, wraparound=False
"""Sub-buffers in the kernel's binary layout, compiled (the data plane:
docs/data-plane.md).

A *raw* sub-buffer (``BufferPage.raw``) is a ``struct buffer_data_page``
as ``events/header_page`` describes it: a u64 ``time_stamp`` (its first
event's time), a u64 ``commit`` (the data bytes), then the events as
``events/header_event`` lays them out (``ring_buffer_page.py`` says how):
a 32-bit header of ``type_len:5`` and ``time_delta:27``, a time extend
(type 30) before an event whose delta does not fit.  The compiled writers
fill it where the events fire; ``decode_page()`` gives its entries as the
tuples the rest of the model reads, when something reads them.

``PageWriter`` is ``CpuBuffer.write()`` for a stretch of entries of one
fixed-size record type, with the same accounting: a tail sub-buffer that
holds tuples is filled with tuples (as ``write()`` would), every new one
is raw.  Only TRACE_FN records are written raw so far (``function_trace_call()``).
"""

from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from cpython.bytearray cimport PyByteArray_AS_STRING

cdef int PAGE_HDR = 16              # BUF_PAGE_HDR_SIZE
cdef int TYPE_EXTEND = 30           # RINGBUF_TYPE_TIME_EXTEND
cdef int TS_SHIFT = 27
cdef long long TS_LIMIT = 1LL << 27
cdef int LEN_EXTEND = 8             # RB_LEN_TIME_EXTEND
cdef int TRACE_FN = 1               # trace_entries.TRACE_FN
cdef int FN_RECORD = 24             # struct ftrace_entry: trace_entry, ip, parent_ip


def new_page(int subbuf_size):
    """An empty raw sub-buffer of ``subbuf_size`` data bytes."""
    return bytearray(PAGE_HDR + subbuf_size)


def decode_page(bytearray raw, int used):
    """The entries of the raw sub-buffer ``raw`` (``used`` data bytes), in
    order: (ts, type, pid, flags, preempt_count, ip, parent_ip) each."""
    cdef unsigned char *p = <unsigned char *> PyByteArray_AS_STRING(raw)
    cdef uint64_t ts, ip, parent
    cdef uint32_t hdr, ext, tl
    cdef uint16_t typ
    cdef int32_t pid
    cdef int off = PAGE_HDR, end = PAGE_HDR + used
    cdef list out = []
    memcpy(&ts, p, 8)
    while off < end:
        memcpy(&hdr, p + off, 4)
        tl = hdr & 31
        if tl == <uint32_t> TYPE_EXTEND:
            memcpy(&ext, p + off + 4, 4)
            ts += ((<uint64_t> ext) << TS_SHIFT) + (hdr >> 5)
            off += LEN_EXTEND
            continue
        if tl == 0 or tl > 28:
            raise ValueError("raw sub-buffer: event type %d at %d" % (tl, off))
        ts += hdr >> 5
        memcpy(&typ, p + off + 4, 2)
        if typ != TRACE_FN:
            raise ValueError("raw sub-buffer: record type %d at %d" % (typ, off))
        memcpy(&pid, p + off + 8, 4)
        memcpy(&ip, p + off + 12, 8)
        memcpy(&parent, p + off + 20, 8)
        out.append((<long long> ts, typ, pid, p[off + 6], p[off + 7], ip, parent))
        off += 4 + tl * 4
    return out


cdef class PageWriter:
    """Writing entries of one record size into one CPU's buffer (a
    ``CpuBuffer``), as ``write()`` of each would (see the module's doc)."""

    def __cinit__(self, cb, bint overwrite, int length):
        self.cb = cb
        self.overwrite = overwrite
        self.length = length
        self.cap = cb.subbuf_size
        self.last_ts = cb.last_ts
        self.written = self.entries = self.dropped = 0
        self.page = None
        pages = cb.pages
        if pages:
            self._load(pages[len(pages) - 1])    # (no wraparound here)

    cdef void _load(self, page) except *:
        self.page = page
        self.used = page.used
        self.nbytes = page.nbytes
        raw = page.raw
        if raw is not None:
            self.raw = <unsigned char *> PyByteArray_AS_STRING(raw)
            self.n = page.npacked
            self.page_last = page.packed_last
            self.append = None
        else:
            self.raw = NULL
            self.n = len(page)
            self.append = page.events.append

    cdef void _store(self) except *:
        """The sub-buffer's and the CPU buffer's counts as written so far."""
        cdef uint64_t commit
        page = self.page
        if page is not None:
            page.used = self.used
            page.nbytes = self.nbytes
            if self.raw != NULL:
                page.npacked = self.n
                page.packed_last = self.page_last
                commit = self.used
                memcpy(self.raw + 8, &commit, 8)
        cb = self.cb
        cb.written += self.written
        cb.bytes_written += self.written * self.length
        cb.entries += self.entries
        cb.dropped += self.dropped
        cb.last_ts = self.last_ts
        self.written = self.entries = self.dropped = 0

    cdef bint _next(self) except -1:
        """A new raw sub-buffer at the tail (False: none, the entry is dropped)."""
        self._store()
        page = self.cb._next_page(self.overwrite, True)
        if page is None:
            self.page = None
            return False
        self._load(page)
        return True

    cdef bint fn(self, long long ts, int pid, int flags, int pc, uint64_t ip,
                 uint64_t parent) except -1:
        """``write()`` of a TRACE_FN entry; False: dropped."""
        cdef int need = self.length, hdr_len
        cdef uint32_t hdr, ext
        cdef uint16_t typ = TRACE_FN
        cdef int32_t pid32 = pid
        cdef uint64_t delta, t
        cdef unsigned char *q
        self.written += 1
        if self.page is not None and self.n and ts - self.last_ts >= TS_LIMIT:
            need += LEN_EXTEND
        if self.page is None or self.used + need > self.cap:
            if not self._next():
                self.dropped += 1
                return False
            need = self.length
        if self.raw != NULL and self.n and ts < self.page_last:
            # earlier than the page's last (never from the function
            # tracer's sorted calls): the sub-buffer goes on as tuples
            self._untuple()
        if self.raw == NULL:
            self.append((ts, TRACE_FN, pid, flags, pc, ip, parent))
        else:
            q = self.raw + PAGE_HDR + self.used
            if self.n == 0:
                t = <uint64_t> ts
                memcpy(self.raw, &t, 8)             # the page's time_stamp
                delta = 0
            else:
                delta = <uint64_t> (ts - self.page_last)
            if need > self.length:                  # a time extend first
                hdr = TYPE_EXTEND | <uint32_t> ((delta & (TS_LIMIT - 1)) << 5)
                ext = <uint32_t> (delta >> TS_SHIFT)
                memcpy(q, &hdr, 4)
                memcpy(q + 4, &ext, 4)
                q += LEN_EXTEND
                delta = 0
            hdr = <uint32_t> (FN_RECORD // 4) | <uint32_t> (delta << 5)
            memcpy(q, &hdr, 4)
            memcpy(q + 4, &typ, 2)
            q[6] = <uint8_t> flags
            q[7] = <uint8_t> pc
            memcpy(q + 8, &pid32, 4)
            memcpy(q + 12, &ip, 8)
            memcpy(q + 20, &parent, 8)
            self.page_last = ts
        self.used += need
        self.nbytes += self.length
        self.n += 1
        self.entries += 1
        self.last_ts = ts
        return True

    cdef void _untuple(self) except *:
        page = self.page
        page.npacked = self.n
        page.packed_last = self.page_last
        page.used = self.used
        self.raw = NULL
        self.append = page.events.append      # (decodes it)

    def finish(self):
        """Store what was written (the writer is done)."""
        self._store()

    def put_fn(self, long long ts, int pid, int flags, int pc, uint64_t ip, uint64_t parent):
        """``fn()`` from Python (the tests')."""
        return self.fn(ts, pid, flags, pc, ip, parent)


def write_fn(cb, tuple entry, int length, bint overwrite):
    """``CpuBuffer.write()`` of the TRACE_FN ``entry`` on a raw tail: it goes
    on in the binary layout.  None where it cannot (fields out of the
    record's ranges): the caller writes it as a tuple."""
    if len(entry) != 7:
        return None
    ts, typ, pid, flags, pc, ip, parent = entry
    if not (type(typ) is int and typ == TRACE_FN and type(ip) is int and type(parent) is int
            and 0 <= flags < 256 and 0 <= pc < 256
            and -2 ** 31 <= pid < 2 ** 31 and 0 <= ip < 2 ** 64 and 0 <= parent < 2 ** 64):
        return None
    cdef PageWriter w = PageWriter(cb, overwrite, length)
    try:
        return w.fn(ts, pid, flags, pc, ip, parent)
    finally:
        w._store()
