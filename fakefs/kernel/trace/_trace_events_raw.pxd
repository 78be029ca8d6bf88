# An event's record in its sub-buffer's bytes, written and read back
# (_trace_events_raw.pyx), as the compiled writer (_ring_buffer.pyx) and
# the page's decoding (_ring_buffer_bpage.pyx) use it.

cdef enum:
    # a field's kind: a number, a ``bool``, a char array, an array of numbers
    # (a code: a value the model keeps, held as its number: ``filter_codes``)
    # (a dynamic text: a ``__data_loc char[]`` string, or None for a fetch that faulted)
    UNSIGNED, SIGNED, BOOL, TEXT, ARRAY_UNSIGNED, ARRAY_SIGNED, CODE_UNSIGNED, CODE_SIGNED,
    DYNAMIC_TEXT


cdef class FixedRecord:
    cdef int n                  # its fields
    cdef int size               # the record's bytes (header and fields) without dynamic data
    cdef int dyn_start          # where the dynamic data goes (after the last field)
    cdef bint dynamic           # it has a dynamic text
    cdef int *off
    cdef int *width             # bytes: 1, 2, 4 or 8 for a number (an array's each)
    cdef int *count             # an array's numbers (1 for any other)
    cdef signed char *kind
    cdef list codes             # a code's table (value -> number) and its inverse, else None

    cdef Py_ssize_t length(self, tuple entry) except -2
    cdef bint pack(self, unsigned char *q, tuple entry, Py_ssize_t total) except -1
    cdef tuple unpack(self, const unsigned char *rec)


cdef class FixedRecords:
    cdef dict known             # type id -> FixedRecord, or None: not such an event
    cdef object make            # type id -> the fields' layout (``fixed_fields()``), or None

    cdef FixedRecord of(self, int typ)
