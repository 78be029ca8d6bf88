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
    # the ring: sub-buffers of sequence numbers ``head`` .. ``head + npages - 1``
    # (oldest first), the bytes of sequence number s in slot s % nr_pages
    # of ``arena``; those something looks at as ``BufferPage`` (``objs``:
    # sequence number -> page; the tail always), the entries kept beside
    # the others (``sides``: sequence number -> offset -> entry)
    cdef public long long head
    cdef public Py_ssize_t npages
    cdef public dict objs, sides
    cdef public list snaps               # the live RingSnaps (weak references)
    cdef public long long held_bytes     # the sub-buffers' ``used``, summed
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
    # where its sub-buffers' bytes are (_ring_buffer_bpage.PageArena), made
    # at the first and anew when their number or size changes (None: none yet)
    cdef public PageArena arena
    # ``objs[tail_seq]``, kept (every write begins at the tail): None when
    # not known; whatever changes the tail's place in ``objs`` resets it
    cdef BufferPage tail_obj
    cdef long long tail_seq

    cpdef bint write(self, tuple entry, int length, bint overwrite) except -1
    cpdef BufferPage _next_page(self, bint overwrite)
    cdef PageArena _arena(self)
    cdef BufferPage _tail(self)
    cdef Py_ssize_t _pop_head(self) except -1
    cdef void _overwrite(self, Py_ssize_t n) except *
    cdef void _reuse(self, long long seq) except *
    cdef void _copy_to(self, PageArena new) except *
    cdef void _detach_snaps(self) except *


cdef class PageWriter:
    cdef CpuBufferCore cb
    cdef BufferPage page
    cdef object append
    cdef dict side              # the raw page's entries kept beside it
    cdef bint overwrite
    cdef int length, cap, used, n
    cdef int used0              # the page's ``used`` when loaded (the ring's held bytes)
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
