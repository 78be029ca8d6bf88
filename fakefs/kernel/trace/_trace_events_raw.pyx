# cython: language_level=3, boundscheck=False, wraparound=False
"""An event's record written into its sub-buffer's bytes when it is
committed, and its entry read back from them, compiled (the data plane:
docs/data-plane.md; ``trace_events_raw.py`` is the encoder every record
agrees with).

For the events whose fields are of fixed size (a tracepoint's ``u64``,
``int``, ``bool``, ``char comm[16]``, ``unsigned long args[6]``, a value
the model keeps as a letter: ``filter_codes``), with ``__data_loc char[]``
strings after them (nearly all the machine fires), the compiled writer
puts the record itself where the ring buffer reserved it
(``PageWriter.other``) instead of keeping the entry's tuple beside the
page, and the page's decoding makes the same tuple again from the bytes:
``(ts, type, pid, flags, preempt_count, args, None)``, each field's value
as the model held it (a ``bool``'s True or False, a char array's str, an
array's tuple, a code's value, a string's str or None).  Only an entry
that comes back exactly is written so: its args a tuple of its fields'
values, each number in its field's range (none masked), each string of
one-byte characters with no NUL that fits, each array a tuple of as many,
each code in its table, flags and preempt count a byte each, nothing
extra, the record as long as its place (``FixedRecord.pack`` says False
for any other, which keeps its tuple).
"""

from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.unicode cimport (Py_UCS1, PyUnicode_1BYTE_DATA, PyUnicode_1BYTE_KIND,
                              PyUnicode_DecodeLatin1, PyUnicode_GET_LENGTH, PyUnicode_KIND)
from libc.stdint cimport int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memchr, memcpy, memset

_U64_END = 1 << 64

# a field's kind by name (``trace_events_raw.fixed_fields`` gives them)
FIXED_KINDS = {"unsigned": UNSIGNED, "signed": SIGNED, "bool": BOOL, "text": TEXT,
               "array unsigned": ARRAY_UNSIGNED, "array signed": ARRAY_SIGNED,
               "code unsigned": CODE_UNSIGNED, "code signed": CODE_SIGNED,
               "dynamic text": DYNAMIC_TEXT}

cdef enum:
    BY_ID = 4096            # ``FixedRecords`` keeps the ids below this in a list too
cdef enum:
    ENTRY_HDR = 8           # struct trace_entry: type u16, flags u8, preempt_count u8, pid s32


cdef inline bint _number(v, int w, bint signed, unsigned char *at) except -1:
    """``v`` an int in the range of a ``w``-byte field (``signed`` or not),
    written at ``at`` (little endian); False (nothing written) if not."""
    cdef int overflow
    cdef long long x
    cdef unsigned long long u
    if type(v) is not int:
        return False
    x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow == 0:
        if signed:
            if w < 8 and not (-(1LL << (8 * w - 1)) <= x < (1LL << (8 * w - 1))):
                return False
        elif x < 0 or (w < 8 and x >= (1LL << (8 * w))):
            return False
        u = <unsigned long long> x
    elif overflow > 0 and not signed and w == 8 and v < _U64_END:
        u = <unsigned long long> v                  # (past 2**63: a u64's top half)
    else:
        return False
    # (the low bytes; a constant size each, so no call of memcpy)
    if w == 8:
        memcpy(at, &u, 8)
    elif w == 4:
        memcpy(at, &u, 4)
    elif w == 2:
        memcpy(at, &u, 2)
    else:
        memcpy(at, &u, 1)
    return True


cdef inline object _read(const unsigned char *at, int w, bint signed):
    """The ``w``-byte number at ``at`` (``_number``'s, read back)."""
    cdef uint64_t u = 0
    memcpy(&u, at, w)
    if not signed:
        return u
    if w < 8 and u >> (8 * w - 1):                 # negative: its sign extended
        return <int64_t> u - (1LL << (8 * w))
    return <int64_t> u


cdef class FixedRecord:
    """The record of one event whose fields are of fixed size: per field
    its offset, width and kind (fields: _trace_events_raw.pxd)."""

    def __cinit__(self, list fields, int size, int dyn_start):
        """``fields``: (offset, width, kind, count, codes) each, in the order
        of the event's args (an array: ``count`` numbers of ``width`` bytes;
        a char array: ``width`` bytes; a code: ``codes``, value -> number;
        a dynamic text: its 4-byte location word); ``size``: the record's
        bytes without dynamic data, which goes at ``dyn_start``."""
        cdef int i
        self.n = len(fields)
        self.size = size
        self.dyn_start = dyn_start
        self.dynamic = False
        if not ENTRY_HDR <= dyn_start <= size:
            raise ValueError("dynamic data at %d of %d" % (dyn_start, size))
        self.off = <int *> malloc(max(self.n, 1) * sizeof(int))
        self.width = <int *> malloc(max(self.n, 1) * sizeof(int))
        self.count = <int *> malloc(max(self.n, 1) * sizeof(int))
        self.kind = <signed char *> malloc(max(self.n, 1))
        if not (self.off and self.width and self.count and self.kind):
            raise MemoryError()
        self.codes = []
        for i in range(self.n):
            off, width, kind, count, codes = fields[i]
            self.dynamic |= kind == DYNAMIC_TEXT
            if kind == DYNAMIC_TEXT and (width != 4 or off + 4 > dyn_start):
                raise ValueError("a dynamic field's word of %d bytes at %d" % (width, off))
            if CODE_UNSIGNED <= kind <= CODE_SIGNED:
                inverse = {number: value for value, number in codes.items()}
                if len(inverse) != len(codes):
                    raise ValueError("a code read back two ways: %r" % (codes,))
                self.codes.append((codes, inverse))
            else:
                self.codes.append(None)
            if (kind != TEXT and width not in (1, 2, 4, 8) or width < 1 or count < 1
                    or off < ENTRY_HDR or off + width * (count if kind >= ARRAY_UNSIGNED else 1) > size):
                raise ValueError("a field of %d x %d bytes at %d" % (count, width, off))
            self.off[i], self.width[i], self.kind[i], self.count[i] = off, width, kind, count

    def __dealloc__(self):
        free(self.off)
        free(self.width)
        free(self.count)
        free(self.kind)

    cdef Py_ssize_t length(self, tuple entry) except -2:
        """The bytes the record of ``entry`` takes (``size`` and its dynamic
        texts, each with its NUL, as ``record_size()`` counts them), or -1
        where a dynamic text is not one ``pack`` could write."""
        cdef Py_ssize_t total = self.size, n
        cdef int i
        if not self.dynamic:
            return total
        args = entry[5]
        if type(args) is not tuple or len(<tuple> args) != self.n:
            return -1
        for i in range(self.n):
            if self.kind[i] == DYNAMIC_TEXT:
                v = (<tuple> args)[i]
                if v is None:
                    continue
                if type(v) is not str or PyUnicode_KIND(v) != PyUnicode_1BYTE_KIND:
                    return -1
                n = PyUnicode_GET_LENGTH(v)
                if memchr(PyUnicode_1BYTE_DATA(v), 0, n) != NULL:
                    return -1
                total += n + 1
        return total

    cdef bint pack(self, unsigned char *q, tuple entry, Py_ssize_t total) except -1:
        """The record of ``entry`` at ``q`` (``total`` bytes: ``length()``'s;
        the header, the fields, the dynamic data after them, the rest
        zero); False (``q`` to be written otherwise) when the entry would
        not come back from it as it is."""
        cdef Py_ssize_t at = self.dyn_start
        cdef uint32_t word
        cdef long long t
        cdef object args = entry[5]
        cdef int i, j, w, k
        cdef Py_ssize_t n
        cdef const Py_UCS1 *text
        if entry[6] is not None or type(args) is not tuple or len(<tuple> args) != self.n:
            return False
        t = small_int(entry[1], 0, 65536)
        if t < 0 or not entry_header_fits(entry[2], entry[3], entry[4]):
            return False
        if total < self.size or total - self.size + self.dyn_start >= 65536:
            return False
        memset(q, 0, total)
        put_entry_header(q, <uint16_t> t, entry[2], entry[3], entry[4])
        for i in range(self.n):
            v = (<tuple> args)[i]
            w = self.width[i]
            k = self.kind[i]
            if k == TEXT:
                if type(v) is not str or PyUnicode_KIND(v) != PyUnicode_1BYTE_KIND:
                    return False
                n = PyUnicode_GET_LENGTH(v)
                text = PyUnicode_1BYTE_DATA(v)
                if n > w or memchr(text, 0, n) != NULL:
                    return False
                memcpy(q + self.off[i], text, n)
                continue
            if k == DYNAMIC_TEXT:                    # (checked by ``length()``)
                n = 0 if v is None else PyUnicode_GET_LENGTH(v) + 1
                word = <uint32_t> ((n << 16) | at)
                memcpy(q + self.off[i], &word, 4)
                if n:
                    memcpy(q + at, PyUnicode_1BYTE_DATA(v), n - 1)     # (its NUL: zero)
                    at += n
                continue
            if k == BOOL:
                if type(v) is not bool:
                    return False
                q[self.off[i]] = 1 if v is True else 0
            elif CODE_UNSIGNED <= k <= CODE_SIGNED:  # a value of its table
                if type(v) is not str:
                    return False
                number = (<dict> (<tuple> self.codes[i])[0]).get(v)
                if number is None or not _number(number, w, k == CODE_SIGNED, q + self.off[i]):
                    return False
            elif ARRAY_UNSIGNED <= k <= ARRAY_SIGNED:    # a tuple of as many numbers
                if type(v) is not tuple or len(<tuple> v) != self.count[i]:
                    return False
                for j in range(self.count[i]):
                    if not _number((<tuple> v)[j], w, k == ARRAY_SIGNED, q + self.off[i] + j * w):
                        return False
            elif not _number(v, w, k == SIGNED, q + self.off[i]):
                return False
        return True

    cdef tuple unpack(self, const unsigned char *rec):
        """The args of the record at ``rec`` (``pack``'s, read back)."""
        cdef list vals = []
        cdef int i, j, w, k
        cdef uint32_t word
        cdef const unsigned char *p
        cdef const unsigned char *end
        for i in range(self.n):
            w = self.width[i]
            k = self.kind[i]
            if k == DYNAMIC_TEXT:
                memcpy(&word, rec + self.off[i], 4)
                if word >> 16 == 0:
                    vals.append(None)
                else:
                    vals.append(PyUnicode_DecodeLatin1(<char *> rec + (word & 0xffff),
                                                       (word >> 16) - 1, NULL))
                continue
            if k == TEXT:
                p = rec + self.off[i]
                end = <const unsigned char *> memchr(p, 0, w)
                vals.append(PyUnicode_DecodeLatin1(<char *> p, (end - p) if end != NULL else w, NULL))
                continue
            if k == BOOL:
                vals.append(rec[self.off[i]] != 0)
            elif CODE_UNSIGNED <= k <= CODE_SIGNED:
                vals.append((<dict> (<tuple> self.codes[i])[1])[_read(rec + self.off[i], w,
                                                                      k == CODE_SIGNED)])
            elif ARRAY_UNSIGNED <= k <= ARRAY_SIGNED:
                vals.append(tuple([_read(rec + self.off[i] + j * w, w, k == ARRAY_SIGNED)
                                   for j in range(self.count[i])]))
            else:
                vals.append(_read(rec + self.off[i], w, k == SIGNED))
        return tuple(vals)


cdef class FixedRecords:
    """The ``FixedRecord``s of one kernel's events by type id, made when
    first asked for (``make(type id)``: the layout, or None for an event
    that is not such, or no event)."""

    def __cinit__(self, make):
        self.known = {}
        self.by_id = [False] * BY_ID
        self.make = make

    cdef FixedRecord of(self, int typ):
        cdef bint listed = 0 <= typ < BY_ID     # (no int object made: the common ids)
        got = self.by_id[typ] if listed else self.known.get(typ, False)
        if got is False:
            layout = self.make(typ)
            got = FixedRecord(*layout) if layout is not None else None
            if listed:
                self.by_id[typ] = got
            else:
                self.known[typ] = got
        return <FixedRecord> got

    def pack_for_test(self, tuple entry):
        """The record ``pack`` makes of ``entry``, or None (the tests')."""
        cdef FixedRecord r = self.of(entry[1])
        if r is None:
            return None
        total = r.length(entry)
        if total < 0:
            return None
        buf = bytearray(total)
        if not r.pack(<unsigned char *> <char *> buf, entry, total):
            return None
        return bytes(buf)

    def unpack_for_test(self, int typ, bytes record):
        cdef FixedRecord r = self.of(typ)
        return r.unpack(<const unsigned char *> <const char *> record)
