# cython: language_level=3, boundscheck=False, wraparound=False
"""A page reader's records, compiled (the data plane: docs/data-plane.md):
what ``trace_pipe_raw`` hands out of a CPU buffer (``ring_buffer_page.py``,
``ring_buffer_reader.py``): a raw sub-buffer's data with the records of
the entries kept beside it made in their places (``page_data``), or a
page filled from entries (``fill_page``, tested equal to
``ring_buffer_page.PageBuilder``).
"""

from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy
from cpython.bytearray cimport PyByteArray_AS_STRING

from fakefs.kernel.trace._ring_buffer_bpage cimport (
    LEN_EXTEND, PAGE_HDR, SMALL_DATA, TS_SHIFT, TYPE_EXTEND, rb_event_length, record_at)

cdef long long TS_LIMIT = 1LL << 27


def page_data(const unsigned char[::1] raw, int used, dict side, encode):
    """The data bytes of the raw sub-buffer ``raw`` (``used`` of them) as a
    page reader gets them: each ``side`` entry's record made by ``encode``
    in the place written for it.  None when a record is not of the length
    its place was written for (the model's accounting of the event and its
    record disagree: the caller takes the entries one at a time, as from
    tuples, which gives the same page wherever they agree)."""
    cdef const unsigned char *p = &raw[0]
    cdef unsigned char *q
    cdef int off = PAGE_HDR, end = PAGE_HDR + used, rec = 0, nxt = 0, n
    if end > raw.shape[0]:
        raise ValueError("%d data bytes in a sub-buffer of %d" % (used, raw.shape[0]))
    cdef bytearray out = bytearray(p[PAGE_HDR:end])
    q = <unsigned char *> PyByteArray_AS_STRING(out) - PAGE_HDR
    while off < end:
        if record_at(p, off, &rec, &nxt) == <uint32_t> TYPE_EXTEND:
            off = nxt
            continue
        entry = side.get(rec)
        if entry is not None:
            record = encode(entry)
            if type(record) is not bytes:
                record = bytes(record)
            n = len(record)
            if rb_event_length(n) != nxt - off:
                return None
            memcpy(q + rec, <const char *> record, n)
        off = nxt
    return bytes(out)


def fill_page(list entries, encode, int room):
    """``ring_buffer_page.PageBuilder`` (the reference, tested equal) over
    ``entries`` in order: the records ``encode`` makes of those that fit in
    ``room`` data bytes, each with its header and time delta (a time extend
    before a delta that does not fit; an earlier time than the last counts
    as none passed): (the page's time_stamp, the data, how many)."""
    cdef bytearray out = bytearray(room)
    cdef unsigned char *q = <unsigned char *> PyByteArray_AS_STRING(out)
    cdef int used = 0, n = 0, total, area, need, rlen
    cdef long long ts, last = 0, stamp = 0
    cdef uint64_t delta
    cdef uint32_t hdr, word
    cdef const unsigned char *r
    for e in entries:
        ts = e[0]
        record = encode(e)
        if type(record) is not bytes:
            record = bytes(record)
        rlen = len(record)
        r = <const unsigned char *> (<bytes> record)
        total = rb_event_length(rlen)
        area = total - 4
        delta = 0
        if n:
            delta = <uint64_t> (ts - last) if ts > last else 0
        need = total + (LEN_EXTEND if delta >= <uint64_t> TS_LIMIT else 0)
        if used + need > room:
            break
        if delta >= <uint64_t> TS_LIMIT:
            hdr = TYPE_EXTEND | <uint32_t> ((delta & (TS_LIMIT - 1)) << 5)
            word = <uint32_t> (delta >> TS_SHIFT)
            memcpy(q + used, &hdr, 4)
            memcpy(q + used + 4, &word, 4)
            used += LEN_EXTEND
            delta = 0
        if area > SMALL_DATA:
            hdr = <uint32_t> (delta << 5)
            word = <uint32_t> area
            memcpy(q + used, &hdr, 4)
            memcpy(q + used + 4, &word, 4)
            memcpy(q + used + 8, r, rlen)
        else:
            hdr = <uint32_t> (area // 4) | <uint32_t> (delta << 5)
            memcpy(q + used, &hdr, 4)
            memcpy(q + used + 4, r, rlen)
        used += total
        if not n:
            stamp = ts
        if ts > last or not n:
            last = ts
        n += 1
    return stamp, bytes(out[:used]), n
