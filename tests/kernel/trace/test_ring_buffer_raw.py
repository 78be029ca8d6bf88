"""Raw sub-buffers (``_ring_buffer.pyx``): the compiled writer keeps the
accounts of the tuples' reference (``ring_reference.TupleRing``), its
sub-buffers are the kernel's binary layout, and reading them gives the
entries written."""

from __future__ import annotations

import random
import struct

import pytest

from fakefs.kernel.trace import trace_entries as te
from fakefs.kernel.trace._ring_buffer import PageWriter
from fakefs.kernel.trace._ring_buffer_page import fill_page
from fakefs.kernel.trace._ring_buffer_bpage import PageArena, decode_page, decodes
from fakefs.kernel.trace.ring_buffer import CpuBuffer, event_length
from fakefs.kernel.trace.ring_buffer_page import read_page
from fakefs.kernel.trace.trace_events_raw import RecordEncoder

from ring_reference import TupleRing

FN = event_length(te.FN_PAYLOAD)
COUNTS = ("written", "bytes_written", "entries", "overrun", "dropped", "last_ts")


def entries(seed, n, t0=1_000_000):
    """TRACE_FN entries in time order: small gaps, equal times, and gaps a
    27-bit delta cannot hold (a time extend before them)."""
    rng = random.Random(seed)
    t, out = t0, []
    for _ in range(n):
        r = rng.random()
        t += 0 if r < 0.1 else (1 << 27) + rng.randrange(1 << 30) if r < 0.13 else rng.randrange(5000)
        out.append((t, te.TRACE_FN, rng.choice((0, 7, 4242, 2 ** 31 - 1)), rng.choice((0, 1, 0x9, 0x10)),
                    rng.randrange(3), 0xffffffff81000000 + rng.randrange(1 << 24),
                    rng.choice((0, 0xffffffff81000000 + rng.randrange(1 << 24)))))
    return out


def raw_buffer(es, nr_pages):
    """A CPU buffer with the function entries ``es`` put by the compiled writer."""
    cb = CpuBuffer(0, nr_pages)
    w = PageWriter(cb, True, FN)
    for e in es:
        w.put_fn(e[0], *e[2:])
    w.finish()
    return cb


class Decodes:
    """How many sub-buffers were decoded since it was made or cleared."""

    def __init__(self):
        self.since = decodes()

    def clear(self):
        self.since = decodes()

    def __len__(self):
        return decodes() - self.since


def accounts(cb):
    return ([getattr(cb, a) for a in COUNTS],
            [(len(p), p.used) for p in cb.pages], cb.events())


@pytest.mark.parametrize("overwrite", (True, False))
@pytest.mark.parametrize("prefill", (0, 5, 145))
def test_the_writer_keeps_write_s_accounts(overwrite, prefill):
    """Entries put by the compiled writer (after ``prefill`` written and
    the tail decoded for good, so it starts on a tuple tail) leave the CPU
    buffer as the tuples' write() of each does: counters, sub-buffers,
    entries."""
    es = entries(prefill + overwrite, 3000)
    want, got = TupleRing(0, 6), CpuBuffer(0, 6)
    for e in es[:prefill]:
        want.write(e, FN, overwrite)
        got.write(e, FN, overwrite)
    if prefill:
        got.promote(got.npages - 1).events      # (a reader decoded it)
    for e in es[prefill:]:
        want.write(e, FN, overwrite)
    w = PageWriter(got, overwrite, FN)
    took = [w.put_fn(e[0], *e[2:]) for e in es[prefill:]]
    w.finish()
    assert all(took) or not overwrite
    assert any(p.raw is not None for p in got.pages)
    assert accounts(got) == accounts(want)


def test_a_raw_sub_buffer_is_the_kernel_s_page():
    """header_page's time_stamp and commit, then header_event's events:
    type_len 6 (24 bytes), the delta in the upper 27 bits, a time extend
    (type 30) before a delta that does not fit; the records as
    trace_pipe_raw encodes them."""
    cb = CpuBuffer(0, 4)
    es = [(5000, 1, 42, 1, 0, 0xffffffff81000010, 0xffffffff81000020),
          (5100, 1, 42, 1, 0, 0xffffffff81000030, 0),
          (5100 + (3 << 27) + 17, 1, 43, 0x10, 1, 0xffffffff81000040, 0xffffffff81000050)]
    w = PageWriter(cb, True, FN)
    for e in es:
        w.put_fn(e[0], *e[2:])
    w.finish()
    page = cb.pages[-1]
    raw = bytes(page.raw)
    ts, commit = struct.unpack_from("<QQ", raw)
    assert (ts, commit) == (5000, 28 + 28 + 8 + 28) == (5000, page.used)
    enc = RecordEncoder(None)
    assert raw[16:20] == struct.pack("<I", 6) and raw[20:44] == enc.encode(es[0])
    assert raw[44:48] == struct.pack("<I", 6 | 100 << 5)
    delta = (3 << 27) + 17
    assert raw[72:80] == struct.pack("<II", 30 | (delta & ((1 << 27) - 1)) << 5, delta >> 27)
    assert raw[80:84] == struct.pack("<I", 6) and raw[84:108] == enc.encode(es[2])
    assert decode_page(page.raw, page.used) == es
    # a consuming reader of pages gets the same bytes as from tuples
    tuples = TupleRing(0, 4)
    for e in es:
        tuples.write(e, FN, True)
    assert read_page(cb, enc.encode, 4096, cb.subbuf_size) == \
        read_page(tuples, enc.encode, 4096, tuples.subbuf_size)


def test_reading_a_raw_page_keeps_it_and_taking_it_turns_it_into_tuples():
    """A snapshot decodes a copy; consuming decodes the reader's page for good."""
    es = entries(9, 400)
    cb = raw_buffer(es, 8)
    assert list(cb.iter_events()) == es
    assert all(p.raw is not None for p in cb.pages)        # a snapshot decodes a copy
    assert cb.consume() == es[0]
    assert cb.pages[0].raw is None and cb.pages[1].raw is not None
    # entries of other types written after them keep the tail raw
    e = (es[-1][0] + 1, te.TRACE_STACK_ID, 1, 0, 0, 7, None)
    assert cb.write(e, event_length(te.STACK_ID_PAYLOAD), True)
    ctx = (es[-1][0] + 2, te.TRACE_CTX, 1, 0, 0, (1, 120, 1, 2, 120, 0, 0), None)
    assert cb.write(ctx, event_length(te.CTX_PAYLOAD), True)
    assert cb.pages[-1].raw is not None and cb.events() == es[1:] + [e, ctx]


def test_a_page_s_records_of_a_type_it_does_not_write_are_refused():
    cb = CpuBuffer(0, 4)
    w = PageWriter(cb, True, FN)
    w.put_fn(10, 1, 0, 0, 1, 2)
    w.finish()
    raw = bytearray(cb.pages[-1].raw)          # (a copy: the page's own is read-only)
    raw[20] = te.TRACE_PRINT
    with pytest.raises(ValueError):
        decode_page(raw, cb.pages[-1].used)


def test_trace_pipe_raw_hands_out_a_raw_sub_buffer_as_it_is():
    """A consuming page reader gets a raw sub-buffer's bytes without
    decoding it, the same page and the same accounts as from tuples: with
    the writer on the page read, writes in between, lost events, and reads
    too short for the page (taken one entry at a time)."""
    es = entries(3, 4000)
    raw_cb, tup_cb = CpuBuffer(0, 6), TupleRing(0, 6)
    enc = RecordEncoder(None)
    cap = raw_cb.subbuf_size
    decoded = Decodes()
    pages = short = 0
    for lo in range(0, len(es), 500):
        w = PageWriter(raw_cb, True, FN)
        for e in es[lo:lo + 500]:
            w.put_fn(e[0], *e[2:])
            tup_cb.write(e, FN, True)
        w.finish()
        decoded.clear()
        for size in (4096, 4096, 200, 4096):
            got = read_page(raw_cb, enc.encode, size, cap)
            assert got == read_page(tup_cb, enc.encode, size, cap)
            pages += got is not None
        # whole pages were taken as they are; only the short read decoded one
        assert len(decoded) <= 1
        short += len(decoded)
        assert accounts(raw_cb) == accounts(tup_cb)
    assert pages > 20 and short > 2


def test_a_function_entry_written_on_a_raw_tail_keeps_it_raw():
    """write() of a TRACE_FN entry (a call the machine made, between the
    compiled writer's stretches) goes on in a raw tail as write() of tuples
    would; so does an entry of another type."""
    es = entries(4, 1200)
    raw_cb, tup_cb = CpuBuffer(0, 5), TupleRing(0, 5)
    for lo in range(0, len(es), 100):
        w = PageWriter(raw_cb, True, FN)
        for e in es[lo:lo + 90]:
            w.put_fn(e[0], *e[2:])
        w.finish()
        for e in es[lo + 90:lo + 100]:
            assert raw_cb.write(e, FN, True)
        for e in es[lo:lo + 100]:
            tup_cb.write(e, FN, True)
        assert raw_cb.pages[-1].raw is not None
        assert accounts(raw_cb) == accounts(tup_cb)
    other = (es[-1][0] + 5, te.TRACE_CTX, 1, 0, 0, (1, 120, 1, 2, 120, 0, 0), None)
    length = event_length(te.CTX_PAYLOAD)
    raw_cb.write(other, length, True)
    tup_cb.write(other, length, True)
    assert raw_cb.pages[-1].raw is not None
    assert accounts(raw_cb) == accounts(tup_cb)


def with_stacks(seed, n):
    """Function entries, each followed by its stack's: an id in the
    stackmap, or the stack in full (short ones in the small event form,
    long ones with a length word)."""
    rng = random.Random(seed)
    out = []
    for e in entries(seed, n):
        out.append((e, FN))
        if rng.random() < 0.5:
            out.append(((e[0], te.TRACE_STACK_ID) + e[2:5] + (rng.randrange(1 << 20), None),
                        event_length(te.STACK_ID_PAYLOAD)))
        else:
            stack = tuple(0xffffffff81000000 + rng.randrange(1 << 24)
                          for _ in range(rng.choice((1, 2, 11, 12, 13, 30, 62))))
            out.append(((e[0], te.TRACE_STACK) + e[2:5] + (stack, None),
                        event_length(te.stack_payload(len(stack)))))
    return out


def put(w, e, length):
    if e[1] == te.TRACE_FN:
        return w.put_fn(e[0], *e[2:])
    if e[1] == te.TRACE_STACK_ID:
        return w.put_stack_id(e[0], e[2], e[3], e[4], e[5], length)
    return w.put_stack(e[0], e[2], e[3], e[4], e[5], length)


def assert_read_alike(got, want):
    """The same accounts, and trace_pipe_raw's pages read from each alike
    to the end."""
    assert accounts(got) == accounts(want)
    enc = RecordEncoder(None)
    cap = got.subbuf_size
    while True:
        page = read_page(got, enc.encode, 4096, cap)
        assert page == read_page(want, enc.encode, 4096, cap)
        if page is None:
            break


class Held:
    """What a stack written from its frame needs of the frame: its stack
    (made only for a sub-buffer of tuples)."""

    def __init__(self, stack):
        self.stack = stack


@pytest.mark.parametrize("overwrite", (True, False))
def test_a_stack_written_from_its_frame_is_the_tuple_s_record(overwrite):
    """A kernel_stack entry written from a frame's addresses: the same
    accounts and pages as write() of the tuple, raw, and in a sub-buffer
    gone over to tuples (an entry older than its last came)."""
    es = with_stacks(9, 1500)
    want, got = TupleRing(0, 24), CpuBuffer(0, 24)
    w = PageWriter(got, overwrite, FN)
    for i, (e, ln) in enumerate(es):
        if i % 97 == 50:                     # (the sub-buffer goes on as tuples)
            e = (e[0] - 5000,) + e[1:]
        want.write(e, ln, overwrite)
        if e[1] == te.TRACE_STACK:
            assert w.put_stack_ips(e[0], e[2], e[3], e[4], Held(e[5]), ln) is not None
        else:
            put(w, e, ln)
    w.finish()
    assert sum(p.raw is not None for p in got.pages) > 3
    assert sum(p.raw is None for p in got.pages) > 3
    assert_read_alike(got, want)


@pytest.mark.parametrize("overwrite", (True, False))
def test_stack_records_are_written_raw_with_write_s_accounts(overwrite):
    """stack_id and kernel_stack entries of every size: the same accounts,
    sub-buffers and entries as write() of each, and the pages' bytes as
    trace_pipe_raw encodes the entries."""
    es = with_stacks(8, 1500)
    want, got = TupleRing(0, 24), CpuBuffer(0, 24)
    for e, ln in es[:3]:
        want.write(e, ln, overwrite)
        got.write(e, ln, overwrite)
    w = PageWriter(got, overwrite, FN)
    for e, ln in es[3:]:
        want.write(e, ln, overwrite)
        put(w, e, ln)
    w.finish()
    assert sum(p.raw is not None for p in got.pages) > 10
    assert_read_alike(got, want)


def mixed(seed, n):
    """Function entries with the entries of other types between them (their
    records made when read): switches, markers of every length (short
    ones, ones with a length word), and stack ids; (entry, length) each."""
    rng = random.Random(seed)
    enc = RecordEncoder(None)
    out = []
    for e in entries(seed, n):
        out.append((e, FN))
        r = rng.random()
        if r < 0.2:
            out.append(((e[0], te.TRACE_CTX) + e[2:5] + ((e[2], 120, 1, 7, 120, 0, 1), None),
                        event_length(te.CTX_PAYLOAD)))
        elif r < 0.3:
            m = (e[0], te.TRACE_PRINT) + e[2:5] + (e[5], "x" * rng.choice((0, 1, 30, 90, 700)) + "\n")
            out.append((m, event_length(len(enc.encode(m)))))
        elif r < 0.35:
            out.append(((e[0], te.TRACE_STACK_ID) + e[2:5] + (rng.randrange(1 << 20), None),
                        event_length(te.STACK_ID_PAYLOAD)))
    return out


def fill(cb, es, overwrite):
    """``es`` written with write(), every fifth run of 50 by the compiled
    writer."""
    for i in range(0, len(es), 50):
        part = es[i:i + 50]
        if i % 250 == 0:
            w = PageWriter(cb, overwrite, FN)
            for e, ln in part:
                if e[1] == te.TRACE_FN:
                    w.put_fn(e[0], *e[2:])
                else:
                    w.put_other(e, ln)
            w.finish()
        else:
            for e, ln in part:
                cb.write(e, ln, overwrite)


def raw_and_tuples(es, nr_pages, overwrite=True):
    """A CPU buffer given ``es`` (its first entry by the compiled writer),
    and the tuples' reference given them."""
    raw_cb, tup_cb = CpuBuffer(0, nr_pages), TupleRing(0, nr_pages)
    w = PageWriter(raw_cb, overwrite, FN)
    w.put_fn(es[0][0][0], *es[0][0][2:])       # the first sub-buffer raw
    w.finish()
    tup_cb.write(es[0][0], FN, overwrite)
    fill(raw_cb, es[1:], overwrite)
    for e, ln in es[1:]:
        tup_cb.write(e, ln, overwrite)
    return raw_cb, tup_cb


@pytest.mark.parametrize("overwrite", (True, False))
def test_entries_of_every_type_keep_a_raw_sub_buffer_raw(overwrite):
    """Entries of other types between the function entries take their
    places in raw sub-buffers (no sub-buffer turns into tuples), with
    write()'s accounts and entries; a page reader gets the pages the
    tuples give, byte for byte, the other entries' records made in their
    places."""
    raw_cb, tup_cb = raw_and_tuples(mixed(21, 2500), 12, overwrite)
    assert all(p.raw is not None for p in raw_cb.pages)
    assert any(p.side for p in raw_cb.pages)
    assert accounts(raw_cb) == accounts(tup_cb)
    enc = RecordEncoder(None)
    cap = raw_cb.subbuf_size
    n = 0
    while True:
        page = read_page(raw_cb, enc.encode, 4096, cap)
        assert page == read_page(tup_cb, enc.encode, 4096, cap)
        if page is None:
            break
        n += 1
        assert accounts(raw_cb) == accounts(tup_cb)
    assert n >= 10


def test_a_record_longer_than_its_place_is_read_one_entry_at_a_time():
    """An entry whose record is longer than the length it was written with
    (the model's accounting short of the record) cannot be made in its
    place: the page is read as from tuples, the same page."""
    es = entries(5, 30)
    raw_cb, tup_cb = CpuBuffer(0, 4), TupleRing(0, 4)
    w = PageWriter(raw_cb, True, FN)
    for i, e in enumerate(es):
        w.put_fn(e[0], *e[2:])
        tup_cb.write(e, FN, True)
        if i == 10:
            m = (e[0], te.TRACE_PRINT) + e[2:5] + (e[5], "y" * 300 + "\n")
            w.put_other(m, event_length(40))
            tup_cb.write(m, event_length(40), True)
    w.finish()
    assert raw_cb.pages[-1].side
    enc = RecordEncoder(None)
    got = read_page(raw_cb, enc.encode, 4096, raw_cb.subbuf_size)
    assert got is not None and got == read_page(tup_cb, enc.encode, 4096, tup_cb.subbuf_size)
    assert accounts(raw_cb) == accounts(tup_cb)


def test_the_entries_beside_a_sub_buffer_nobody_looks_at_stay_with_the_ring():
    """A sub-buffer the writer left is its bytes alone (no ``BufferPage``),
    the entries kept beside it held by the ring; readers get them as
    written, the sub-buffer made a page again when one looks at it."""
    raw_cb, tup_cb = raw_and_tuples(mixed(33, 3000), 40)
    assert len(raw_cb.objs) == 1 and raw_cb.sides          # the tail alone is a page
    assert list(raw_cb.iter_events()) == list(tup_cb.iter_events())
    assert len(raw_cb.objs) == 1                             # (a snapshot makes none)
    assert [raw_cb.consume() for _ in range(300)] == [tup_cb.consume() for _ in range(300)]
    assert accounts(raw_cb) == accounts(tup_cb)
    assert raw_cb.held_bytes == raw_cb.walked_bytes() == tup_cb.bytes()


def test_a_snapshot_decodes_a_raw_sub_buffer_when_its_reader_comes_to_it():
    """``iter_events()`` decodes one raw sub-buffer at a time, as the
    reader reaches it, and gives the entries as they were when it was
    made: the writer goes on in the tail meanwhile (entries of every type)
    and wraps the ring."""
    es = mixed(44, 9000)
    raw_cb, tup_cb = raw_and_tuples(es[:1000], 30)
    decoded = Decodes()
    want = list(tup_cb.iter_events())
    snap = raw_cb.iter_events()
    assert next(snap) == want[0] and len(decoded) == 1
    fill(raw_cb, es[1000:], True)                  # the writer goes on
    assert raw_cb.head > 30                        # (past every slot the snapshot reads)
    assert [want[0]] + list(snap) == want
    assert 1 < len(decoded) <= 31


def test_asking_whether_a_buffer_holds_entries_decodes_nothing():
    """A poller's watermark and a page reader's "would block" ask whether
    the buffer is empty: the reader's raw sub-buffer stays raw, so the
    page read after them takes it whole (a poll before each read made
    every read take the page one entry at a time: trace-cmd's recorder,
    which selects before each read, kept 40 % of the function tracer's
    entries)."""
    es = entries(2, 900)
    cb = raw_buffer(es, 8)
    decoded = Decodes()
    assert not cb.empty() and cb.watermark_hit(50)
    assert len(decoded) == 0 and cb.pages[0].raw is not None
    enc = RecordEncoder(None)
    assert read_page(cb, enc.encode, 4096, cb.subbuf_size) is not None and len(decoded) == 0
    assert CpuBuffer(0, 4).empty()


@pytest.mark.parametrize("room", (4080, 200, 30, 0))
def test_fill_page_makes_the_page_the_reference_builder_makes(room):
    """``fill_page`` (read_page's, in C) against ``PageBuilder`` (the
    reference): records of every length (small ones, ones with a length
    word), time extends, times earlier than the last, the room running
    out; the same time stamp, bytes and count."""
    from fakefs.kernel.trace.ring_buffer_page import PageBuilder
    rng = random.Random(room)
    for _ in range(30):
        t = rng.randrange(1 << 40)
        es = []
        for _ in range(rng.randrange(1, 200)):
            r = rng.random()
            t += (-rng.randrange(1000) if r < 0.05 else (1 << 27) + rng.randrange(1 << 33)
                  if r < 0.1 else rng.randrange(3000))
            es.append((t, bytes(rng.randrange(256) for _ in range(rng.choice((1, 8, 24, 110,
                                                                             112, 113, 400))))))
        pb = PageBuilder(room)
        for ts, rec in es:
            if not pb.add(ts, rec):
                break
        stamp, data, n = fill_page(es, lambda e: e[1], room)
        assert (stamp, data, n) == (pb.time_stamp or 0, bytes(pb.data), pb.count)


def test_raw_sub_buffers_are_the_slots_of_the_cpu_buffer_s_arena():
    """A CPU buffer's sub-buffers are the slots of one arena, in ring order:
    an overwritten one's slot is the next one's (none of its bytes left
    behind: the new one reads back only its own entries); the writer's
    tail is the only page until a reader looks at one."""
    es = entries(5, 6000)
    cb = raw_buffer(es, 8)
    assert cb.overrun > 0 and cb.npages == 8 and cb.arena.nring == 8
    assert list(cb.objs) == [cb.head + 7]
    assert cb.events() == es[len(es) - cb.entries:]
    pages = cb.pages
    assert all(p.arena is cb.arena for p in pages) and len(cb.objs) == 8
    cb.reset()                          # the arena goes with its sub-buffers
    assert cb.arena is None and not cb.objs
    w = PageWriter(cb, True, FN)
    w.put_fn(es[0][0], *es[0][2:])
    w.finish()
    assert cb.events() == es[:1] and cb.arena.nring == 8


def test_a_snapshot_keeps_the_bytes_of_sub_buffers_taken_or_overwritten_meanwhile():
    """A reader's snapshot reads the sub-buffers where they are: a
    consuming reader decoding them for good and the writer overwriting
    them meanwhile leave it what was there (the writer copies a slot
    for it before reusing it); done, it costs the writer nothing."""
    es = entries(6, 12000)
    cb = raw_buffer(es[:3000], 8)
    want = cb.events()
    snap = cb.iter_events()
    assert next(snap) == want[0]
    assert [cb.consume() for _ in range(700)] == want[:700]     # decoded for good
    w = PageWriter(cb, True, FN)
    for e in es[3000:]:                 # the buffer overwritten a few times
        w.put_fn(e[0], *e[2:])
    w.finish()
    assert len(cb.objs) == 1 and len(cb.snaps) == 1
    assert [want[0]] + list(snap) == want
    del snap
    w = PageWriter(cb, True, FN)
    for e in es[:3000]:
        w.put_fn(e[0] + es[-1][0], *e[2:])
    w.finish()
    assert not cb.snaps


def test_a_sub_buffer_s_bytes_read_stay_as_they_were_read():
    """``page.raw`` is a copy of the bytes: the writer reusing the slot
    meanwhile changes nothing in it."""
    es = entries(7, 3000)
    cb = raw_buffer(es[:900], 4)
    view = cb.pages[0].raw
    before = bytes(view)
    w = PageWriter(cb, True, FN)
    for e in es[900:]:
        w.put_fn(e[0], *e[2:])
    w.finish()
    assert bytes(view) == before and cb.overrun > 0


def slots(cb):
    """Where each held sub-buffer's bytes are, oldest first."""
    return [cb.arena.slot(cb.head + i) for i in range(cb.npages)]


@pytest.mark.parametrize("nr_pages", (4, 12, 3000))
@pytest.mark.parametrize("first", (3000, 3100))
def test_a_resize_moves_no_sub_buffer(nr_pages, first):
    """A resize changes the ring's length, not where its sub-buffers are:
    those kept stay in their slots (the pages made of them too), grown
    places take new slots, and writing goes on in ring order (the held
    ones wrapping the arena's end or not: ``first`` entries written)."""
    es = entries(8, 9000)
    cb = raw_buffer(es[:first], 8)
    cb.promote(1)
    arena, before = cb.arena, slots(cb)
    raws = {seq: bytes(p.raw) for seq, p in cb.objs.items()}
    cb.resize(nr_pages)
    kept = cb.events()
    assert cb.arena is arena and cb.arena.nring == nr_pages
    assert slots(cb) == before[len(before) - cb.npages:]
    assert {seq: bytes(p.raw) for seq, p in cb.objs.items() if seq in raws} == {
        seq: raw for seq, raw in raws.items() if seq >= cb.head}
    assert kept == es[first - cb.entries:first]
    w = PageWriter(cb, True, FN)
    for e in es[first:]:
        w.put_fn(e[0], *e[2:])
    w.finish()
    assert cb.events() == (kept + es[first:])[len(kept) + len(es) - first - cb.entries:]
    assert len(set(slots(cb))) == cb.npages
    assert cb.held_bytes == cb.walked_bytes()


def test_a_resize_past_the_reservation_copies_the_sub_buffers_into_a_new_arena():
    """An arena holds address space for so many slots: a ring grown past
    them is copied into a new arena (the pages made of it pointed there)."""
    es = entries(8, 6000)
    cb = CpuBuffer(0, 8)
    cb.arena = PageArena(8, 4096, 10)
    w = PageWriter(cb, True, FN)
    for e in es[:3000]:
        w.put_fn(e[0], *e[2:])
    w.finish()
    cb.promote(1)
    old = cb.arena
    cb.resize(10)                       # within the reservation: stays
    assert cb.arena is old
    cb.resize(12)
    kept = cb.events()
    assert cb.arena is not old and cb.arena.nring == 12 and cb.head == 0
    assert all(p.arena is cb.arena for p in cb.objs.values())
    assert kept == es[3000 - cb.entries:3000]
    w = PageWriter(cb, True, FN)
    for e in es[3000:]:
        w.put_fn(e[0], *e[2:])
    w.finish()
    assert cb.events() == (kept + es[3000:])[len(kept) + 3000 - cb.entries:]
    assert cb.held_bytes == cb.walked_bytes()


def rss_kb() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


@pytest.mark.parametrize("grown_first", (False, True))
def test_a_shrunk_buffer_gives_its_memory_back_at_once(grown_first):
    """Shrunk from 8 MB to 4 sub-buffers (first grown, or not), the
    buffer's memory follows at once: the slots out of the ring go back to
    the host."""
    es = entries(9, 2048 * 160)
    cb = raw_buffer(es, 2048)
    assert cb.arena.nring == 2048
    full = rss_kb()
    if grown_first:
        cb.resize(4096)
    cb.resize(4)
    assert full - rss_kb() > 6 * 1024
    assert cb.events() == es[len(es) - cb.entries:]


def test_a_sub_buffer_s_bytes_are_read_only_outside_the_writers():
    cb = raw_buffer(entries(10, 100), 4)
    view = cb.pages[0].raw
    assert view.readonly
    with pytest.raises(TypeError):
        view[0] = 1


def test_a_sub_buffer_is_not_pickled():
    """Its bytes are a pointer into an arena: pickling it says so (it
    crashed the interpreter while Cython made a pickler of its fields)."""
    import pickle
    cb = raw_buffer(entries(11, 10), 4)
    for obj in (cb.pages[0], cb.snapshot(), cb.arena):
        with pytest.raises(TypeError):
            pickle.dumps(obj)
