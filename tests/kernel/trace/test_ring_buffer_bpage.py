"""A CPU buffer's sub-buffers as bytes (``_ring_buffer_bpage.pyx``): what
a sub-buffer nobody looks at has is found in its bytes (``page_counts``,
``slot_page``), equal to what the writer kept while it was the tail and
to the tuples' reference; it costs nothing but its bytes."""

import random
import tracemalloc

from fakefs.kernel.trace import trace_entries as te
from fakefs.kernel.trace.ring_buffer import CpuBuffer

from ring_reference import TupleRing


def _mixed_entries(n, rng):
    """Entries of every shape the model writes: numbers of any size,
    strings, bytes, None, nested tuples, booleans."""
    out, ts = [], 0
    for i in range(n):
        ts += rng.randrange(1, 5000) if rng.random() > 0.01 else 1 << 28
        kind = i % 4
        if kind == 0:
            out.append((ts, te.TRACE_FN, 7, 1, 0, 0xffffffff81000000 + i, 0xffffffff82000000))
        elif kind == 1:
            out.append((ts, te.TRACE_STACK, 7, 0, 1, tuple(range(i % 9)), None))
        elif kind == 2:
            out.append((ts, te.TRACE_PRINT, 8, 0, 0, 0, "line %d\n" % i))
        else:
            out.append((ts, 300, 9, 2, 0, ("comm", -1, True, b"\x00\x01", (1, (2, 3))), None))
    return out


def _pages(cb):
    return [(len(p), p.used, p.newest_ts() if len(p) else None) for p in cb.pages]


def test_a_sub_buffer_s_counts_are_found_in_its_bytes():
    """Each sub-buffer the writer left, made a page again from its bytes
    alone, has the entries, bytes and newest time the tuples' reference
    has; asked without making it a page (``page_len``, ``page_used``,
    ``page_newest``), the same."""
    entries = _mixed_entries(6000, random.Random(2))
    cb, ref = CpuBuffer(0, 40), TupleRing(0, 40)
    for i, e in enumerate(entries):
        length = (28, 48, 96, 140)[i % 4]
        assert cb.write(e, length, True) == ref.write(e, length, True)
    assert len(cb.objs) == 1
    quick = [(cb.page_len(i), cb.page_used(i), cb.page_newest(i)) for i in range(cb.npages)]
    assert len(cb.objs) == 1
    assert _pages(cb) == _pages(ref)
    assert quick == _pages(ref)
    assert cb.held_bytes == cb.walked_bytes() == ref.bytes()


def test_entries_of_every_shape_read_back_unchanged():
    """Every reader sees what the tuples' reference gives: the snapshot
    (with a consuming reader meanwhile), the head (peek, consume), the
    counters, overwrite, entries counted but not recorded."""
    entries = _mixed_entries(6000, random.Random(3))
    cb, ref = CpuBuffer(0, 40), TupleRing(0, 40)
    for i, e in enumerate(entries):
        cb.write(e, (28, 48, 96, 140)[i % 4], True)
        ref.write(e, (28, 48, 96, 140)[i % 4], True)
    assert cb.events() == ref.events()
    assert (cb.entries, cb.overrun, cb.bytes()) == (ref.entries, ref.overrun, ref.bytes())
    snap = cb.iter_events()
    first = next(snap)
    for _ in range(500):                       # a consuming reader meanwhile
        assert cb.consume() == ref.consume()
    assert cb.peek() == ref.events()[0] and cb.oldest_ts() == ref.events()[0][0]
    assert [first] + list(snap) == entries[-len(ref.events()) - 500:]
    cb.unrecorded(300, 300 * 28, entries[-1][0] + 1, True)
    assert cb.events() == ref.events()[len(ref.events()) - cb.entries:]
    assert cb.held_bytes == cb.walked_bytes()


def test_a_sub_buffer_nobody_looks_at_costs_nothing_but_its_bytes():
    """Filling a ring of 600 sub-buffers over and over leaves no Python
    object per sub-buffer: the heap ends where it began (the bytes are
    the arena's mapping, which tracemalloc does not see)."""
    cb = CpuBuffer(0, 600)

    def write(lo, hi):
        for i in range(lo, hi):
            ts = i * 997
            cb.write((ts, te.TRACE_FN, 1234, 1, 0, 0xffffffff81000000 + (i * 7919) % 40000,
                          0xffffffff81000000 + (i * 104729) % 40000), 28, True)

    write(0, 1000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        write(1000, 200_000)
        grew = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cb.overrun and cb.npages == 600 and len(cb.objs) == 1
    assert grew < 600 * 8, grew


def test_a_ring_under_every_kind_of_use_is_the_tuples_reference():
    """Random uses of a small ring against the tuples' reference: writes of
    every shape (one at a time, in bulk, by the compiled writer), entries
    consumed one at a time and as pages (trace_pipe_raw), snapshots read
    part way with the writer wrapping meanwhile, resizes: the same entries,
    counters and pages at every turn, each snapshot what the ring held when
    it was taken."""
    from fakefs.kernel.trace._ring_buffer import PageWriter
    from fakefs.kernel.trace.ring_buffer import event_length
    from fakefs.kernel.trace.ring_buffer_page import read_page
    from fakefs.kernel.trace.trace_events_raw import RecordEncoder
    from test_ring_buffer_raw import mixed       # (entries trace_pipe_raw can encode)
    enc = RecordEncoder(None)
    rng = random.Random(48)
    entries, lengths = zip(*mixed(48, 60_000))
    fn = event_length(te.FN_PAYLOAD)
    cb, ref = CpuBuffer(0, 6), TupleRing(0, 6)
    snaps = []                              # (iterator, the entries it must give)
    seen = {"pages": 0, "snaps": 0, "resizes": 0}
    i = 0
    while i < len(entries):
        op = rng.random()
        if op < 0.5:                        # a run written
            n = rng.randrange(1, 300)
            part = list(zip(entries[i:i + n], lengths[i:i + n]))
            i += n
            how = rng.random()
            if how < 0.3:
                for e, ln in part:
                    cb.write(e, ln, True)
            elif how < 0.6:
                cb.write_many([e for e, _ in part], [ln for _, ln in part], True)
            else:
                w = PageWriter(cb, True, fn)
                for e, ln in part:
                    if e[1] == te.TRACE_FN and ln == fn:
                        w.put_fn(e[0], *e[2:])
                    else:
                        w.put_other(e, ln)
                w.finish()
            for e, ln in part:
                ref.write(e, ln, True)
        elif op < 0.65:
            for _ in range(rng.randrange(1, 200)):
                assert cb.consume() == ref.consume()
        elif op < 0.75:
            page = read_page(cb, enc.encode, 4096, cb.subbuf_size)
            assert page == read_page(ref, enc.encode, 4096, ref.subbuf_size)
            seen["pages"] += page is not None
        elif op < 0.85:
            it = cb.iter_events()
            want = ref.events()
            got = [next(it) for _ in range(min(len(want), rng.randrange(0, 50)))]
            snaps.append((it, want[len(got):]))
            assert got == want[:len(got)]
        elif op < 0.9 and snaps:
            it, want = snaps.pop(rng.randrange(len(snaps)))
            assert list(it) == want
            seen["snaps"] += 1
        elif op < 0.95:
            nr = rng.choice((2, 3, 6, 9))
            cb.resize(nr)
            ref.resize(nr)
            seen["resizes"] += 1
        assert cb.events() == ref.events()
        assert [getattr(cb, a) for a in ("entries", "overrun", "read", "written")] == \
            [getattr(ref, a) for a in ("entries", "overrun", "read", "written")]
        assert cb.held_bytes == cb.walked_bytes() == ref.bytes()
    for it, want in snaps:
        assert list(it) == want
    assert cb.overrun > 10_000 and min(seen.values()) > 20, seen
