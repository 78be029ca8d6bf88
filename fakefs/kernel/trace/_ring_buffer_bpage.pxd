# A sub-buffer of the ring buffer (_ring_buffer_bpage.pyx), as the compiled
# writers use it (_ring_buffer.pyx); the layout's constants and the event
# header's reading, shared by the page's decoding and the page reader.

from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

from fakefs.kernel.trace._trace_events_raw cimport FixedRecords

cdef enum:
    PAGE_HDR = 16               # BUF_PAGE_HDR_SIZE
    TYPE_EXTEND = 30            # RINGBUF_TYPE_TIME_EXTEND
    TS_SHIFT = 27
    LEN_EXTEND = 8              # RB_LEN_TIME_EXTEND
    TRACE_FN = 1                # trace_entries.TRACE_FN
    TRACE_STACK = 4             # trace_entries.TRACE_STACK
    TRACE_STACK_ID = 20         # trace_entries.TRACE_STACK_ID (the stackmap series)
    TRACE_GRAPH_RET = 10        # trace_entries.TRACE_GRAPH_RET
    TRACE_GRAPH_ENT = 11        # trace_entries.TRACE_GRAPH_ENT
    GRAPH_RET_RETVAL_DATA = 64  # a funcgraph_exit record with its retval field (the bytes)
    SMALL_DATA = 112            # RB_MAX_SMALL_DATA


cdef class PageArena:
    # the bytes of one CPU buffer's sub-buffers: a ring of ``nring`` places,
    # place i's bytes in slot ``order[i]`` (``size`` bytes: PAGE_HDR + a
    # sub-buffer's capacity) of one mapping reserved for ``cap`` slots, of
    # which ``top`` are usable; the sub-buffer of sequence number s is at
    # place s % nring; slots out of the ring (``free``: ``nfree`` of them)
    # hold no memory; a slot costs memory once written
    cdef unsigned char *base
    cdef readonly Py_ssize_t size, nring, cap, top, nfree
    cdef uint32_t *order
    cdef uint32_t *free
    # a usable slot's entries as the writer left them (``struct buffer_page``'s
    # ``entries``; read for a sub-buffer that is no ``BufferPage``)
    cdef uint32_t *nent

    cdef int _grant(self, Py_ssize_t n) noexcept
    cdef void _give_back(self, Py_ssize_t first, Py_ssize_t last) noexcept
    cdef int rering(self, Py_ssize_t nring, long long head, Py_ssize_t npages) except -1


cdef class BufferPage:
    # a sub-buffer something looks at (a reader, the writer's tail): the
    # ring's others are their bytes alone (CpuBufferCore.promote)
    # (no cycle can pass through a sub-buffer: no collector header)
    cdef public object _events      # the entries as tuples (a deque), or None: raw
    cdef public object side         # a raw one's entries kept beside it (offset -> entry)
    # the event records written in its bytes (_trace_events_raw.FixedRecords), when any
    cdef public object records
    cdef readonly PageArena arena   # whose slot ``data`` is (kept mapped while it lives)
    # the binary layout (PAGE_HDR + ``rawsize`` bytes) while raw, else NULL
    cdef unsigned char *data
    cdef public long long raw_last  # the time of the newest of its raw entries
    cdef public int nraw            # how many raw entries it holds
    cdef public int used            # bytes of the data area consumed (events + extends)
    cdef public int read            # events a consuming reader took from it (bpage->read)
    cdef int rawsize


cdef inline unsigned char *slot_of(PageArena a, long long seq) noexcept:
    """The bytes of the ring's sub-buffer of sequence number ``seq``."""
    return a.base + (<Py_ssize_t> a.order[seq % a.nring]) * a.size


cdef inline uint32_t *nent_of(PageArena a, long long seq) noexcept:
    """Where the entries of the ring's sub-buffer of sequence number ``seq``
    are counted."""
    return a.nent + a.order[seq % a.nring]


cdef inline int commit_of(const unsigned char *p) noexcept:
    """A sub-buffer's ``commit``: the data bytes written."""
    cdef uint64_t commit
    memcpy(&commit, p + 8, 8)
    return <int> commit


cdef BufferPage slot_page(PageArena arena, long long seq, int size, records)
cdef list decode_raw(const unsigned char *p, int used, dict side, FixedRecords records)
cdef void page_counts(const unsigned char *p, int used, int *n, long long *last) noexcept


cdef inline uint32_t record_at(const unsigned char *p, int off, int *rec, int *nxt) noexcept:
    """The event whose header is at ``off``: its type_len (a time extend's
    30: ``*nxt`` is then past it), where its record starts (``*rec``) and
    where the next event's header is (``*nxt``)."""
    cdef uint32_t hdr, ext, tl
    memcpy(&hdr, p + off, 4)
    tl = hdr & 31
    if tl == <uint32_t> TYPE_EXTEND:
        nxt[0] = off + LEN_EXTEND
    elif tl == 0:                           # a length word, then the record
        memcpy(&ext, p + off + 4, 4)
        rec[0] = off + 8
        nxt[0] = off + 4 + ext
    else:
        rec[0] = off + 4
        nxt[0] = off + 4 + tl * 4
    return tl


cdef inline uint64_t time_after(const unsigned char *p, int off, uint32_t tl,
                                uint64_t ts) noexcept:
    """The time after the event whose header is at ``off`` (type ``tl``):
    ``ts`` plus its delta, a time extend's whole delta."""
    cdef uint32_t hdr, ext
    memcpy(&hdr, p + off, 4)
    if tl == <uint32_t> TYPE_EXTEND:
        memcpy(&ext, p + off + 4, 4)
        return ts + ((<uint64_t> ext) << TS_SHIFT) + (hdr >> 5)
    return ts + (hdr >> 5)


cdef inline int record_room(int length) noexcept:
    """The record bytes an event of ``length`` bytes holds (after its
    header, and its length word when it has one)."""
    return length - 4 if length - 4 <= SMALL_DATA else length - 8


cdef inline int rb_event_length(int payload) noexcept:
    """``ring_buffer.event_length()``: bytes an event of ``payload`` bytes uses."""
    cdef int length = payload if payload else 1
    if length > SMALL_DATA:
        length += 4
    length = (length + 4 + 3) & ~3
    if length == LEN_EXTEND + 4:
        length += 4
    return length
