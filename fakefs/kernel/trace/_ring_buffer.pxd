# The compiled ring buffer's writer, as the compiled tracers use it
# (_ring_buffer.pyx).

from libc.stdint cimport uint16_t, uint32_t, uint64_t


cdef class PageWriter:
    cdef object cb, page, append
    cdef dict side              # the raw page's entries kept beside it
    cdef bint overwrite
    cdef int length, cap, used, nbytes, n
    cdef long long last_ts, page_last, written, entries, dropped, nbytes_written
    cdef unsigned char *raw
    cdef unsigned char *q       # the record area reserve() gave

    cdef void _begin(self, cb, bint overwrite, int length) except *
    cdef void _load(self, page) except *
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
    cdef bint other(self, long long ts, tuple entry, int length) except -1
    cdef void _untuple(self) except *
