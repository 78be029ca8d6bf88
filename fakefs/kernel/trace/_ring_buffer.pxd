# A CPU buffer's counts and the compiled writer, as the compiled tracers
# use them (_ring_buffer.pyx).

from libc.stdint cimport uint16_t, uint32_t, uint64_t

from fakefs.kernel.trace._ring_buffer_bpage cimport BufferPage, PageArena


cdef class CpuBufferCore:
    cdef public int cpu
    cdef public Py_ssize_t subbuf_size, nr_pages
    # non-consuming readers open (a ``trace`` file open for reading):
    # resizing and changing the sub-buffer order are EBUSY meanwhile
    cdef public int resize_disabled
    cdef public object pages             # the sub-buffers, oldest first (a deque)
    # the newest sub-buffers left as tuples by packing while idle, and by
    # the writer (ring_buffer_bpage: LOOSE_PAGES, UNZIPPED_PAGES)
    cdef public Py_ssize_t loose_pages, unzipped_pages
    cdef public long long entries, overrun, commit_overrun, dropped, read, last_ts
    cdef public long long last_overrun  # overrun when the consuming reader last looked
    # what writers asked for since the last reset, whatever became of it
    # (a reader consuming or the writer overwriting does not lower them)
    cdef public long long written, bytes_written
    cdef public long long charged       # of its 4 KB pages, those taken from the machine's memory
    # events and bytes freed with the sub-buffers of an order change,
    # which the counters still count (see ring_buffer.py's doc)
    cdef public long long freed_entries, freed_bytes
    # how its kernel's events are written in their records' bytes
    # (_trace_events_raw.FixedRecords), or None: every event beside its page
    cdef public object records
    # where its new raw sub-buffers' bytes go (_ring_buffer_bpage.PageArena),
    # made at the first (None: none yet, or the last one retired)
    cdef public PageArena arena

    cpdef bint write(self, long long ts, entry, int length, bint overwrite) except -1
    cpdef BufferPage _next_page(self, bint overwrite, bint raw=*)
    cdef PageArena _arena(self)


cdef class PageWriter:
    cdef CpuBufferCore cb
    cdef BufferPage page
    cdef object append
    cdef dict side              # the raw page's entries kept beside it
    cdef bint overwrite
    cdef int length, cap, used, nbytes, n
    cdef long long last_ts, page_last, written, entries, dropped, nbytes_written
    cdef unsigned char *raw
    cdef unsigned char *q       # the record area reserve() gave

    cdef void _begin(self, CpuBufferCore cb, bint overwrite, int length) except *
    cdef void _load(self, BufferPage page) except *
    cdef void _store(self) except *
    cdef void _done(self) except *
    cdef bint _next(self) except -1
    cdef int reserve(self, long long ts, int length) except -1
    cdef void _common(self, uint16_t typ, int pid, int flags, int pc) noexcept
    cdef bint fn(self, long long ts, int pid, int flags, int pc, uint64_t ip,
                 uint64_t parent) except -1
    cdef bint stack_id(self, long long ts, int pid, int flags, int pc, uint32_t sid,
                       int length) except -1
    cdef bint stack(self, long long ts, int pid, int flags, int pc, tuple stack,
                    int length) except -1
    cdef bint stack_ips(self, long long ts, int pid, int flags, int pc,
                        const unsigned long long *ips, int size, int length, frame) except -1
    cdef bint graph_ent(self, long long ts, int pid, int flags, int pc, uint64_t func,
                        int depth, int length) except -1
    cdef bint graph_ret(self, long long ts, int pid, int flags, int pc, uint64_t func,
                        int depth, long long calltime, uint64_t retval, bint with_retval,
                        int length) except -1
    cdef bint other(self, long long ts, tuple entry, int length) except -1
    cdef void _untuple(self) except *
