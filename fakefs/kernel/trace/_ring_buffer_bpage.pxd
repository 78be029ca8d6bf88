# A sub-buffer of the ring buffer (_ring_buffer_bpage.pyx), as the compiled
# writers use it (_ring_buffer.pyx); the layout's constants and the event
# header's reading, shared by the page's decoding and the page reader.

from libc.stdint cimport uint32_t
from libc.string cimport memcpy

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
    # the bytes of a CPU buffer's raw sub-buffers: ``nslots`` slots of
    # ``size`` bytes in one anonymous mapping (a page of it costs memory
    # once written), the slots never handed out from ``fresh`` on, those
    # given back in ``free`` (``nfree`` of them: the last given back goes
    # first, its memory is the one touched); ``retired``: the buffer's
    # sub-buffers to come take another arena, a slot given back gives its
    # memory back
    cdef unsigned char *base
    cdef Py_ssize_t size, nslots, fresh, nfree
    cdef Py_ssize_t inuse           # slots handed out and not given back
    cdef Py_ssize_t *free
    cdef readonly bint retired


cdef class BufferPage:
    # (no cycle can pass through a sub-buffer: no collector header, 16
    # bytes of each of a 64 MB buffer's 16k sub-buffers)
    cdef public object _events      # the entries as tuples (a deque), or None
    cdef public object side         # a raw one's entries kept beside it (offset -> entry)
    # the event records written in its bytes (_trace_events_raw.FixedRecords), when any
    cdef public object records
    cdef public object packed       # the entries while packed (a raw one's side)
    cdef readonly PageArena arena   # whose slot ``data`` is (None: its own memory)
    # the binary layout (PAGE_HDR + ``rawsize`` bytes) while raw, else NULL;
    # ``kept``: the bytes of a sub-buffer no longer raw while a reader still
    # holds them (``pins``: snapshots and buffer exports), let go at the last
    cdef unsigned char *data
    cdef unsigned char *kept
    cdef public long long packed_last   # the time of the newest of them
    cdef public int npacked         # how many it holds (raw or packed)
    cdef public int used            # bytes of the data area consumed (events + extends)
    cdef public int nbytes          # bytes of events alone
    cdef public int read            # events a consuming reader took from it (bpage->read)
    cdef int rawsize
    cdef int pins
    cdef public bint zipped         # and compressed


cdef BufferPage raw_page(PageArena arena, int size)


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
