# cython: language_level=3, boundscheck=False, wraparound=False
"""An event's record written into its sub-buffer's bytes when it is
committed, and its entry read back from them, compiled (the data plane:
docs/data-plane.md; ``trace_events_raw.py`` is the encoder every record
agrees with).

For the events whose fields are numbers alone (a tracepoint's ``u64``,
``int``, ``bool`` ...: about two thirds of what the machine fires), the
compiled writer puts the record itself where the ring buffer reserved it
(``PageWriter.other``) instead of keeping the entry's tuple beside the
page, and the page's decoding makes the same tuple again from the bytes:
``(ts, type, pid, flags, preempt_count, args, None)``, each field's value
as the model held it (a ``bool`` field's True or False).  Only an entry
that comes back exactly is written so: its args a tuple of its fields'
numbers in their ranges (no value masked), flags and preempt count a
byte each, nothing extra, the record as long as its place
(``NumberRecord.pack`` says False for any other, which keeps its tuple).
"""

from cpython.long cimport PyLong_AsLongLongAndOverflow
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

_U64_END = 1 << 64

cdef enum:
    ENTRY_HDR = 8           # struct trace_entry: type u16, flags u8, preempt_count u8, pid s32


cdef class NumberRecord:
    """The record of one event whose fields are numbers: per field its
    offset, width, signedness and whether it is a ``bool`` (fields:
    _trace_events_raw.pxd)."""

    def __cinit__(self, list fields, int size):
        """``fields``: (offset, size, signed, bool) each, in the order of
        the event's args; ``size``: the record's bytes."""
        cdef int i
        self.n = len(fields)
        self.size = size
        self.off = <int *> malloc(max(self.n, 1) * sizeof(int))
        self.width = <signed char *> malloc(max(self.n, 1))
        self.signed_ = <signed char *> malloc(max(self.n, 1))
        self.boolean = <signed char *> malloc(max(self.n, 1))
        if not (self.off and self.width and self.signed_ and self.boolean):
            raise MemoryError()
        for i in range(self.n):
            off, width, signed, boolean = fields[i]
            if width not in (1, 2, 4, 8) or off < ENTRY_HDR or off + width > size:
                raise ValueError("a number field of %d bytes at %d" % (width, off))
            self.off[i], self.width[i] = off, width
            self.signed_[i], self.boolean[i] = bool(signed), bool(boolean)

    def __dealloc__(self):
        free(self.off)
        free(self.width)
        free(self.signed_)
        free(self.boolean)

    cdef bint pack(self, unsigned char *q, tuple entry) except -1:
        """The record of ``entry`` at ``q`` (``size`` bytes, the header and
        the fields, the rest zero); False (``q`` to be written otherwise)
        when the entry would not come back from it as it is."""
        cdef object args = entry[5]
        cdef int i, w, overflow
        cdef long long x
        cdef unsigned long long u
        cdef uint16_t typ
        cdef int32_t pid32
        if entry[6] is not None or type(args) is not tuple or len(<tuple> args) != self.n:
            return False
        t, pid, flags, pc = entry[1], entry[2], entry[3], entry[4]
        if not (type(t) is int and type(pid) is int and type(flags) is int and type(pc) is int
                and 0 <= t < 65536 and -2 ** 31 <= pid < 2 ** 31
                and 0 <= flags < 256 and 0 <= pc < 256):
            return False
        memset(q, 0, self.size)
        typ = <uint16_t> <long> t
        pid32 = <int32_t> <long> pid
        memcpy(q, &typ, 2)
        q[2] = <uint8_t> <long> flags
        q[3] = <uint8_t> <long> pc
        memcpy(q + 4, &pid32, 4)
        for i in range(self.n):
            v = (<tuple> args)[i]
            w = self.width[i]
            if self.boolean[i]:
                if type(v) is not bool:
                    return False
                u = 1 if v is True else 0
            else:
                if type(v) is not int:
                    return False
                x = PyLong_AsLongLongAndOverflow(v, &overflow)
                if overflow == 0:
                    if self.signed_[i]:
                        if w < 8 and not (-(1LL << (8 * w - 1)) <= x < (1LL << (8 * w - 1))):
                            return False
                    elif x < 0 or (w < 8 and x >= (1LL << (8 * w))):
                        return False
                    u = <unsigned long long> x
                elif overflow > 0 and not self.signed_[i] and w == 8 and v < _U64_END:
                    u = <unsigned long long> v          # (past 2**63: a u64's top half)
                else:
                    return False
            memcpy(q + self.off[i], &u, w)         # (little endian: the low bytes)
        return True

    cdef tuple unpack(self, const unsigned char *rec):
        """The args of the record at ``rec`` (``pack``'s, read back)."""
        cdef list vals = []
        cdef int i, w
        cdef uint64_t u
        for i in range(self.n):
            w = self.width[i]
            u = 0
            memcpy(&u, rec + self.off[i], w)        # (little endian: the low bytes)
            if self.boolean[i]:
                vals.append(u != 0)
            elif not self.signed_[i]:
                vals.append(u)
            elif w < 8 and u >> (8 * w - 1):        # negative: its sign extended
                vals.append(<int64_t> u - (1LL << (8 * w)))
            else:
                vals.append(<int64_t> u)
        return tuple(vals)


cdef class NumberRecords:
    """The ``NumberRecord``s of one kernel's events by type id, made when
    first asked for (``make(type id)``: the layout, or None for an event
    that is not such, or no event)."""

    def __cinit__(self, make):
        self.known = {}
        self.make = make

    cdef NumberRecord of(self, int typ):
        got = self.known.get(typ, False)
        if got is False:
            layout = self.make(typ)
            got = self.known[typ] = NumberRecord(*layout) if layout is not None else None
        return <NumberRecord> got

    def pack_for_test(self, tuple entry):
        """The record ``pack`` makes of ``entry``, or None (the tests')."""
        cdef NumberRecord r = self.of(entry[1])
        if r is None:
            return None
        buf = bytearray(r.size)
        if not r.pack(<unsigned char *> <char *> buf, entry):
            return None
        return bytes(buf)

    def unpack_for_test(self, int typ, bytes record):
        cdef NumberRecord r = self.of(typ)
        return r.unpack(<const unsigned char *> <const char *> record)
