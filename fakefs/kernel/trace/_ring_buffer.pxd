# The compiled ring buffer's writer, as the compiled tracers use it
# (_ring_buffer.pyx).

from libc.stdint cimport uint64_t


cdef class PageWriter:
    cdef object cb, page, append
    cdef bint overwrite
    cdef int length, cap, used, nbytes, n
    cdef long long last_ts, page_last, written, entries, dropped
    cdef unsigned char *raw

    cdef void _load(self, page) except *
    cdef void _store(self) except *
    cdef bint _next(self) except -1
    cdef bint fn(self, long long ts, int pid, int flags, int pc, uint64_t ip,
                 uint64_t parent) except -1
    cdef void _untuple(self) except *
