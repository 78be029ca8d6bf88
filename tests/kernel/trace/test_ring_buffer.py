from fakefs.kernel.trace.ring_buffer import (BUF_PAGE_HDR_SIZE, PAGE_SIZE, RingBuffer, CpuBuffer,
                                             event_length)
from fakefs.kernel.trace import trace_entries as te

from ring_reference import TupleRing


def test_event_lengths_follow_the_kernel_layout():
    assert event_length(te.FN_PAYLOAD) == 28            # 24-byte ftrace_entry + 4-byte header
    assert event_length(te.STACK_ID_PAYLOAD) == 16      # 12 -> 16 (never 12: time-extend size + 4)
    assert event_length(8) == 16
    assert event_length(112) == 116                     # largest "small" event
    assert event_length(113) == 124                     # length word added, aligned
    assert event_length(te.stack_payload(15)) == 16 + 120 + 8
    assert event_length(0) == 8


def test_buffer_size_pages_and_kb():
    rb = RingBuffer(2, 1441792)
    cb = rb.cpus[0]
    assert cb.nr_pages == 354 and cb.size_bytes >> 10 == 1410
    assert RingBuffer(1, 1).cpus[0].size_bytes >> 10 == 7     # unexpanded minimum: 2 pages


def fill(cb, n, length, overwrite=True, dt=1000):
    ok = 0
    for i in range(n):
        ok += cb.write((i * dt, te.TRACE_FN, 1, 0, 0, i, 0), length, overwrite)
    return ok


def test_overwrite_drops_oldest_pages_and_counts_overrun():
    cb = CpuBuffer(0, 2)
    per_page = (PAGE_SIZE - BUF_PAGE_HDR_SIZE) // 28
    fill(cb, per_page * 5, 28)
    assert cb.entries == per_page * 2
    assert cb.overrun == per_page * 3
    assert cb.events()[0][5] == per_page * 3       # oldest kept event
    assert cb.entries + cb.overrun == per_page * 5


def test_no_overwrite_drops_new_events():
    cb = CpuBuffer(0, 2)
    per_page = (PAGE_SIZE - BUF_PAGE_HDR_SIZE) // 28
    ok = fill(cb, per_page * 3, 28, overwrite=False)
    assert ok == per_page * 2 and cb.dropped == per_page and cb.overrun == 0
    assert cb.events()[0][5] == 0


def test_time_extend_costs_eight_bytes():
    cb = CpuBuffer(0, 4)
    cb.write((0,), 28, True)
    cb.write((1 << 28,), 28, True)           # delta does not fit in 27 bits
    assert cb.bytes() == 28 + 8 + 28


def test_consume_and_reset():
    cb = CpuBuffer(0, 4)
    fill(cb, 10, 28)
    assert cb.consume()[5] == 0 and cb.read == 1 and cb.entries == 9
    cb.reset()
    assert cb.entries == 0 and cb.overrun == 0 and cb.consume() is None


def test_unrecorded_entries_push_out_what_they_cover():
    cb = CpuBuffer(0, 4)
    per_page = (PAGE_SIZE - BUF_PAGE_HDR_SIZE) // 28
    fill(cb, per_page * 4, 28)                     # 4 full pages, ts 0 .. 4*per_page-1 us
    before = cb.written
    # entries worth two pages, written before the third page's first entry
    cb.unrecorded(1000, 2 * (PAGE_SIZE - BUF_PAGE_HDR_SIZE), per_page * 2 * 1000, True)
    assert cb.written == before + 1000
    assert cb.entries == per_page * 2 and cb.events()[0][5] == per_page * 2
    assert cb.overrun == 1000 + per_page * 2
    # the two sub-buffers that freed have room: what fits there pushes nothing out
    room = 2 * (PAGE_SIZE - BUF_PAGE_HDR_SIZE)
    cb.unrecorded(10, room, 1 << 60, True)
    assert cb.entries == per_page * 2
    # older than the limit is not enough: the bytes beyond the room must cover the page too
    cb.unrecorded(10, room + 100, 1 << 60, True)
    assert cb.entries == per_page


def test_unrecorded_entries_are_dropped_without_overwrite():
    cb = CpuBuffer(0, 2)
    fill(cb, 10, 28, overwrite=False)
    cb.unrecorded(500, 500 * 28, 1 << 60, False)
    assert cb.dropped == 500 and cb.entries == 10 and cb.overrun == 0


class Memory:
    """A PageAccount stand-in with ``avail`` pages."""

    def __init__(self, avail):
        self.avail = avail
        self.pages = 0

    def available_pages(self, want=0):
        return self.avail - self.pages

    def charge(self, n):
        self.pages += n

    def uncharge(self, n):
        self.pages -= n


def test_resize_takes_pages_from_memory_cpu_after_cpu():
    import errno
    rb = RingBuffer(2, 1)
    mem = Memory(100)
    assert rb.resize(60 * 4080, None, mem) == -errno.ENOMEM     # 58 more each: the second CPU fails
    assert [cb.nr_pages for cb in rb.cpus] == [2, 2] and mem.pages == 0
    assert rb.resize(40 * 4080, None, mem) == 0
    assert mem.pages == 76 and [cb.charged for cb in rb.cpus] == [38, 38]
    assert rb.resize(10 * 4080, 1, mem) == 0                     # one CPU shrinks: pages back
    assert mem.pages == 38 + 8
    rb.release(mem)
    assert mem.pages == 0


def test_subbuf_order_keeps_the_bytes_and_the_counters_not_the_events():
    """ring_buffer_subbuf_order_set(): nr_pages = DIV_ROUND_UP(old capacity
    * nr_pages, new capacity), at least 2; the events go, the counters stay."""
    import errno
    from fakefs.kernel.trace.ring_buffer import subbuf_capacity
    rb = RingBuffer(2, 1441792)
    assert rb.cpus[0].nr_pages == 354 and rb.max_event_size() == 4072
    fill(rb.cpus[0], 500, 28)
    cb = rb.cpus[0]
    entries, nbytes, overrun = cb.entries, cb.bytes(), cb.overrun
    assert rb.set_subbuf_order(1) == 0
    assert subbuf_capacity(1) == 8176 and rb.subbuf_size == 8176
    assert [c.nr_pages for c in rb.cpus] == [177, 177]          # ceil(354 * 4080 / 8176)
    assert cb.events() == [] and cb.peek() is None and cb.entries == 0
    assert cb.counted_entries() == entries and cb.counted_bytes() == nbytes
    assert cb.overrun == overrun
    assert rb.total_written() == entries + overrun
    assert rb.noted == [354 * 4080] * 2                        # buffer_size_kb keeps its value
    assert rb.max_event_size() == 4072                         # set at allocation only
    # the new sub-buffers hold 8176 bytes of events each
    fill(cb, 8176 // 28 + 1, 28)
    assert len(cb.pages) == 2 and cb.pages[0].used == 8176 // 28 * 28
    assert rb.set_subbuf_order(0) == 0
    assert cb.nr_pages == 355                                  # ceil(177 * 8176 / 4080)
    assert cb.counted_entries() == entries + 8176 // 28 + 1
    cb.reset()
    assert cb.counted_entries() == 0 and cb.counted_bytes() == 0
    assert rb.set_subbuf_order(9) == -errno.EINVAL             # over 1 MB: the write counter's limit
    assert rb.set_subbuf_order(-1) == -errno.EINVAL
    assert RingBuffer(1, 1).set_subbuf_order(7) == 0


def test_subbuf_order_minimum_two_and_memory():
    import errno
    rb = RingBuffer(2, 1)                        # 2 pages each
    mem = Memory(192)
    assert rb.set_subbuf_order(3, mem) == 0      # 2 sub-buffers of 8 pages each: 32 pages
    assert [c.nr_pages for c in rb.cpus] == [2, 2] and mem.pages == 32
    assert rb.resize(10 * 32752, 0, mem) == 0    # 8 more sub-buffers of order 3 on CPU 0
    assert mem.pages == 32 + 64 and rb.cpus[0].charged == 80
    # ceil(10 * 32752 / 4080) = 81 and 17 pages, allocated before the 96
    # old ones are freed: 2 pages short, then enough
    assert rb.set_subbuf_order(0, mem) == -errno.ENOMEM and rb.subbuf_order == 3
    mem.avail += 2
    assert rb.set_subbuf_order(0, mem) == 0
    assert [c.nr_pages for c in rb.cpus] == [81, 17] and mem.pages == 98
    assert rb.set_subbuf_order(6, Memory(100)) == -errno.ENOMEM
    assert rb.subbuf_order == 0 and [c.nr_pages for c in rb.cpus] == [81, 17]


def test_open_readers_make_resizing_busy():
    import errno
    rb = RingBuffer(2, 1441792)
    rb.cpus[1].resize_disabled += 1
    assert rb.set_subbuf_order(1) == -errno.EBUSY
    assert rb.resize(100 << 10) == -errno.EBUSY
    assert rb.resize(100 << 10, 0) == 0                        # another CPU
    assert rb.resize(rb.cpus[1].size_bytes, 1) == 0            # no change: not refused
    assert rb.resize(100 << 10, 1) == -errno.EBUSY
    rb.cpus[1].resize_disabled -= 1
    assert rb.set_subbuf_order(1) == 0 and rb.resize(100 << 10) == 0


def test_watermark_counts_dirty_sub_buffers():
    cb = CpuBuffer(0, 10)
    per_page = (PAGE_SIZE - BUF_PAGE_HDR_SIZE) // 28
    assert not cb.watermark_hit(0) and not cb.watermark_hit(50)
    fill(cb, 1, 28)
    assert cb.watermark_hit(0) and not cb.watermark_hit(50) and cb.watermark_hit(10)
    fill(cb, per_page * 4, 28)                   # 4 pages full, writer on the 5th
    assert cb.dirty_pages() == 4
    assert cb.watermark_hit(50) and not cb.watermark_hit(51)  # (4 + 1) * 100 >= 50 * 10
    cb.consume()                                 # the reader takes the first page
    assert cb.dirty_pages() == 3 and not cb.watermark_hit(50)
    fill(cb, per_page * 20, 28)                  # wrapped: every page but the writer's
    assert cb.dirty_pages() == 9 and cb.watermark_hit(100)


def test_watermark_not_while_the_writer_is_on_the_readers_page():
    cb = CpuBuffer(0, 2)
    fill(cb, 3, 28)
    cb.consume()
    assert cb.peek() is not None and cb.watermark_hit(0)
    assert not cb.watermark_hit(1)               # pagebusy


def _state(cb):
    return ([(len(p), p.used) for p in cb.pages], cb.events(), cb.bytes(),
            cb.entries, cb.overrun, cb.dropped, cb.written, cb.bytes_written, cb.last_ts)


def test_write_many_is_write_of_each():
    """The bulk write (function entries, and their stacks) leaves the buffer
    as one write() per entry does, and as the tuples' reference does:
    pages, counters, overwrite and drop alike, of one length or each its
    own, also across a time extend."""
    import random
    rng = random.Random(4)
    for overwrite in (True, False):
        for gaps in ((1000,), (1000, 1 << 27)):
            a, b, ref = CpuBuffer(0, 6), CpuBuffer(0, 6), TupleRing(0, 6)
            ts = 0
            for batch in range(40):
                entries = []
                for _ in range(rng.randrange(0, 900)):
                    ts += rng.choice(gaps) if rng.random() < 0.01 else rng.randrange(1, 2000)
                    entries.append((ts, te.TRACE_FN, 1, 0, 0, 0, 0))
                lengths = 24 if batch % 2 else [rng.choice((24, 16, 132)) for _ in entries]
                took = sum(a.write(e, lengths if batch % 2 else lengths[i], overwrite)
                           for i, e in enumerate(entries))
                assert sum(ref.write(e, lengths if batch % 2 else lengths[i], overwrite)
                           for i, e in enumerate(entries)) == took
                assert b.write_many(entries, lengths, overwrite) == took
                assert _state(a) == _state(b) == _state(ref), (overwrite, gaps, batch)
            assert a.overrun if overwrite else a.dropped
            assert a.held_bytes == a.walked_bytes()


def test_an_entry_longer_than_a_sub_buffer_is_refused():
    """``ring_buffer_lock_reserve()`` fails for an event longer than a
    sub-buffer holds: nothing is written or counted."""
    cb = CpuBuffer(0, 4)
    e = (5, te.TRACE_FN, 1, 0, 0, 0, 0)
    assert cb.write(e, 28, True)
    before = _state(cb)
    assert not cb.write((6,) + e[1:], cb.subbuf_size + 4, True)
    assert not cb.write_many([(7,) + e[1:]], cb.subbuf_size + 4, True)
    assert _state(cb) == before
