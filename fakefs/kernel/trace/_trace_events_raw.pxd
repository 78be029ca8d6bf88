# An event's record in its sub-buffer's bytes, written and read back
# (_trace_events_raw.pyx), as the compiled writer (_ring_buffer.pyx) and
# the page's decoding (_ring_buffer_bpage.pyx) use it; and the header every
# record starts with (struct trace_entry), which they all write.

from cpython.long cimport PyLong_AsLongLongAndOverflow
from libc.stdint cimport int32_t, uint8_t, uint16_t
from libc.string cimport memcpy


cdef inline long long small_int(v, long long lo, long long hi) noexcept:
    """``v`` if it is an int in [lo, hi) (lo >= 0), else -1 (no object made)."""
    cdef int overflow
    cdef long long x
    if type(v) is not int:
        return -1
    x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow or not lo <= x < hi:
        return -1
    return x


cdef inline bint entry_header_fits(pid, flags, pc) noexcept:
    """An entry's pid, flags and preempt count go into ``struct
    trace_entry`` as they are (an s32, a byte, a byte)."""
    cdef int overflow
    cdef long long p
    if small_int(flags, 0, 256) < 0 or small_int(pc, 0, 256) < 0 or type(pid) is not int:
        return False
    p = PyLong_AsLongLongAndOverflow(pid, &overflow)
    return overflow == 0 and -(1LL << 31) <= p < (1LL << 31)


cdef inline void put_entry_header(unsigned char *q, uint16_t typ, int pid, int flags,
                                  int pc) noexcept:
    """``struct trace_entry`` at ``q``: type, flags, preempt count, pid."""
    cdef int32_t pid32 = pid
    memcpy(q, &typ, 2)
    q[2] = <uint8_t> flags
    q[3] = <uint8_t> pc
    memcpy(q + 4, &pid32, 4)


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
    cdef list by_id             # type id below BY_ID -> FixedRecord, None: not such an
                                # event, False: not asked yet
    cdef dict known             # the same for the ids above
    cdef object make            # type id -> the fields' layout (``fixed_fields()``), or None

    cdef FixedRecord of(self, int typ)
