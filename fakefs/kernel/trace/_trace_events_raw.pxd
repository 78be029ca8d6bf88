# An event's record in its sub-buffer's bytes, written and read back
# (_trace_events_raw.pyx), as the compiled writer (_ring_buffer.pyx) and
# the page's decoding (_ring_buffer_bpage.pyx) use it.

cdef class NumberRecord:
    cdef int n                  # its fields
    cdef int size               # the record's bytes (header and fields)
    cdef int *off
    cdef signed char *width     # 1, 2, 4 or 8 bytes
    cdef signed char *signed_
    cdef signed char *boolean   # a ``bool`` field (its value True or False)

    cdef bint pack(self, unsigned char *q, tuple entry) except -1
    cdef tuple unpack(self, const unsigned char *rec)


cdef class NumberRecords:
    cdef dict known             # type id -> NumberRecord, or None: not such an event
    cdef object make            # type id -> the fields' layout (``number_fields()``), or None

    cdef NumberRecord of(self, int typ)
