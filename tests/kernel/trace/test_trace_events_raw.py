"""The binary records of events (trace_events_raw.py): the one-struct
packing of records made of numbers and fixed strings gives the very bytes
the field-by-field layout gives (the decoding itself is checked against the
trace text in test_ring_buffer_page.py); an event whose fields are numbers
alone is written in its record's bytes (``_trace_events_raw.pyx``) and
read back from them as it was (``fixed_fields``: numbers, char arrays,
arrays of numbers, coded values and ``__data_loc`` strings)."""

import os

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File, WouldBlock
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace import trace_entries as te
from fakefs.kernel.trace.trace_events_raw import (FIXED_KINDS, RecordEncoder, RecordError,
                                                  fixed_fields, packed_layout)
from kfiles import node, rd, wr

KIND_NAMES = {number: name for name, number in FIXED_KINDS.items()}
FTRACE_TYPES = {te.TRACE_FN, te.TRACE_STACK, te.TRACE_USER_STACK, te.TRACE_STACK_ID,
                te.TRACE_PRINT, te.TRACE_FUNC_REPEATS, te.TRACE_RAW_DATA}


def _machine_entries():
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "buffer_size_kb", "4096")
    wr(k, "events/enable", "1")
    wr(k, "events/syscalls/enable", "1")
    for _ in range(25):
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
    wr(k, "tracing_on", "0")
    entries = [e for cb in k.tracing.global_trace.buffer.cpus for e in cb.events()
               if e[1] not in FTRACE_TYPES]
    return k, entries


def test_packed_records_are_the_field_layouts_bytes():
    k, entries = _machine_entries()
    enc = RecordEncoder(k.tracing)
    packed = walked = 0
    kinds = set()
    for e in entries:
        ev = k.tracing.events_by_id[e[1]]
        flags, pc = e[3] & 0xff, e[4] & 0xff
        args = e[5] if isinstance(e[5], tuple) else (e[5],)
        slow = enc._record_by_fields(ev, e, args, flags, pc)
        assert enc.event_record(ev, e, flags, pc) == slow, ev.name
        if enc._fast(ev) is not None:
            packed += 1
            kinds.add(ev.name)
        else:
            walked += 1
    # most of what the machine fires is numbers and fixed strings; the
    # rest (__data_loc strings, arrays of numbers) takes the field walk
    assert packed > 2000 and len(kinds) > 30, (packed, len(kinds))
    assert walked > 0


def test_values_out_of_their_fields_range_are_masked_on_the_direct_path():
    """A record whose args are its fields in order is packed at once; a
    negative or too big value (struct refuses it) is masked as the field
    walk masks it: the same bytes."""
    k, entries = _machine_entries()
    enc = RecordEncoder(k.tracing)
    seen = set()
    for e in entries:
        ev = k.tracing.events_by_id[e[1]]
        if ev.name in seen or not isinstance(e[5], tuple):
            continue
        fast = enc._fast(ev)
        if fast is None or not fast[2]:
            continue
        seen.add(ev.name)
        for v in (-1, -(1 << 40), 1 << 70, True):
            args = tuple(v if type(a) is int else a for a in e[5])
            odd = e[:5] + (args,) + e[6:]
            assert enc.event_record(ev, odd, 1, 2) == enc._record_by_fields(ev, odd, args, 1, 2), \
                (ev.name, v)
    assert len(seen) > 20


def test_a_value_that_is_no_number_is_refused_on_either_path():
    k, entries = _machine_entries()
    enc = RecordEncoder(k.tracing)
    e = next(e for e in entries if k.tracing.events_by_id[e[1]].name == "sched_switch")
    ev = k.tracing.events_by_id[e[1]]
    assert enc._fast(ev) is not None
    args = list(e[5])
    i = next(i for i, a in enumerate(args) if type(a) is int)
    args[i] = "not a number"
    bad = e[:5] + (tuple(args),) + e[6:]
    with pytest.raises(RecordError):
        enc.event_record(ev, bad, 0, 0)


def test_fields_that_overlap_or_need_more_are_not_packed():
    class Slot:
        def __init__(self, kind, offset, size, text=False, elem=0):
            self.kind, self.offset, self.size, self.text, self.elem = kind, offset, size, text, elem
            self.conv = None
    from fakefs.kernel.trace.trace_events_raw import ARRAY, DATA_LOC, INT, STR
    fmt, plan, direct = packed_layout([Slot(INT, 8, 4), Slot(STR, 12, 16), Slot(INT, 32, 8)], 40)
    assert fmt.size == 40 and len(plan) == 3 and not direct    # (a string: not as it is)
    assert packed_layout([Slot(INT, 8, 4), Slot(DATA_LOC, 12, 4)], 16) is None
    assert packed_layout([Slot(ARRAY, 8, 16, elem=8)], 24) is None
    assert packed_layout([Slot(INT, 8, 8), Slot(INT, 12, 4)], 16) is None     # overlap
    assert packed_layout([Slot(INT, 8, 3)], 16) is None                       # odd size


def _field_values(enc, ev, rec):
    """The fields of record ``rec`` of event ``ev``, read back as their
    ``format`` lays them out (numbers by their signedness, char arrays and
    strings as text, a faulted fetch's empty string as None)."""
    from fakefs.kernel.trace.trace_events_raw import ARRAY, DATA_LOC, INT, REL_LOC, STR
    slots, _dyn, _fixed = enc.layout(ev)
    out = []
    for s in slots:
        raw = rec[s.offset:s.offset + s.size]
        if s.kind == INT:
            v = int.from_bytes(raw, "little", signed=bool(s.signed))
        elif s.kind == STR:
            v = raw.split(b"\0", 1)[0].decode("latin-1")
        elif s.kind == ARRAY:
            v = raw if s.text else tuple(
                int.from_bytes(raw[i * s.elem:(i + 1) * s.elem], "little", signed=bool(s.signed))
                for i in range(s.count))
        else:
            word = int.from_bytes(raw[:4], "little")
            off = (word & 0xffff) + (s.offset + s.size if s.kind == REL_LOC else 0)
            data = rec[off:off + (word >> 16)]
            assert s.kind in (DATA_LOC, REL_LOC)
            v = None if not data else data[:-1].decode("latin-1") if s.text else data
        out.append(v)
    return tuple(out)


def test_every_field_the_machine_fires_is_held_whole_by_its_record():
    """What trace_pipe_raw hands out loses nothing the model knows: each
    event's record read back field by field gives the entry's values (as
    the event converts them for its record: ``filter_values``), none
    masked, truncated or dropped; a bool field gives 0 or 1."""
    k, entries = _machine_entries()
    enc = RecordEncoder(k.tracing)
    kinds = set()
    for e in entries:
        ev = k.tracing.events_by_id[e[1]]
        args = e[5] if isinstance(e[5], tuple) else (e[5],)
        slots = enc.layout(ev)[0]
        want = tuple(s.conv(v) if s.conv is not None else v for s, v in zip(slots, args))
        rec = enc.event_record(ev, e, e[3] & 0xff, e[4] & 0xff)
        assert _field_values(enc, ev, rec) == want, ev.name
        kinds.add(ev.name)
    assert len(kinds) > 100 and len(entries) > 20000, (len(kinds), len(entries))


def test_a_fixed_record_is_the_encoders_and_reads_back_as_the_entry():
    """``_trace_events_raw.FixedRecord``: the record ``pack`` writes is the
    encoder's, and ``unpack`` gives the entry's args as they were."""
    k, entries = _machine_entries()
    recs = k.tracing.fixed_records
    enc = RecordEncoder(k.tracing)
    kinds = set()
    for e in entries:
        got = recs.pack_for_test(e)
        if got is None:
            continue
        kinds.add(e[1])
        assert got == enc.encode(e)
        back = recs.unpack_for_test(e[1], got)
        assert repr(back) == repr(e[5])           # (a bool field's True, not 1)
    assert len(kinds) > 40


def test_what_would_not_come_back_whole_is_refused():
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    recs = k.tracing.fixed_records
    ev = next(ev for ev in k.tracing.events if ev.name == "kmem_cache_alloc")
    fields, _size, _dyn = fixed_fields(ev)
    kinds = [KIND_NAMES[f[2]] for f in fields]
    assert kinds.count("bool") == 1                         # accounted
    args = tuple(False if kind == "bool" else 1 for kind in kinds)
    good = (100, ev.id, 7, 1, 2, args, None)
    assert recs.pack_for_test(good) is not None

    def put(i, v):
        return good[:5] + (args[:i] + (v,) + args[i + 1:],) + good[6:]
    b = kinds.index("bool")
    i = next(j for j, f in enumerate(fields) if f[1] == 8 and kinds[j] == "unsigned")
    n = next(j for j, f in enumerate(fields) if f[1] == 4 and kinds[j] == "signed")  # node
    assert recs.unpack_for_test(ev.id, recs.pack_for_test(put(i, (1 << 64) - 1)))[i] == (1 << 64) - 1
    assert recs.unpack_for_test(ev.id, recs.pack_for_test(put(n, -(1 << 31))))[n] == -(1 << 31)
    bad = [
        good[:6] + ("extra",),                                   # something beside it
        good[:5] + (args[:-1],) + good[6:],                      # a field missing
        good[:5] + (list(args),) + good[6:],                     # not a tuple
        good[:3] + (256,) + good[4:],                            # flags past a byte
        good[:4] + (-1,) + good[5:],                             # preempt count
        put(b, 0), put(i, True),                                 # a bool's 0, a number's True
        put(i, 1 << 64), put(i, -1), put(n, 1 << 31),            # masked
        put(i, "1"),                                             # no number
    ]
    for e in bad:
        assert recs.pack_for_test(e) is None, e
    # a char array: a str of one-byte characters that fits, with no NUL
    ev = next(ev for ev in k.tracing.events if ev.name == "sched_wakeup")
    fields, _size, _dyn = fixed_fields(ev)
    t = [KIND_NAMES[f[2]] for f in fields].index("text")
    width = fields[t][1]
    base = [0 if KIND_NAMES[f[2]] != "text" else "" for f in fields]
    for comm in ("", "kworker/0:1", "x" * width, "caf\xe9"):
        e = (5, ev.id, 3, 0, 0, tuple(base[:t] + [comm] + base[t + 1:]), None)
        assert recs.unpack_for_test(ev.id, recs.pack_for_test(e)) == e[5]
    for comm in ("x" * (width + 1), "a\0b", "\u20ac", b"bytes"):
        e = (5, ev.id, 3, 0, 0, tuple(base[:t] + [comm] + base[t + 1:]), None)
        assert recs.pack_for_test(e) is None, comm
    # an array of numbers: a tuple of as many, each in its range
    ev = next(ev for ev in k.tracing.events if ev.name == "sys_enter")
    fields, _size, _dyn = fixed_fields(ev)
    a = [KIND_NAMES[f[2]] for f in fields].index("array unsigned")
    count = fields[a][3]
    base = [0] * len(fields)
    for args in (tuple(range(count)), ((1 << 64) - 1,) * count):
        e = (5, ev.id, 3, 0, 0, tuple(base[:a] + [args] + base[a + 1:]), None)
        assert recs.unpack_for_test(ev.id, recs.pack_for_test(e)) == e[5]
    for args in (list(range(count)), tuple(range(count - 1)), (-1,) * count, (1 << 64,) * count):
        e = (5, ev.id, 3, 0, 0, tuple(base[:a] + [args] + base[a + 1:]), None)
        assert recs.pack_for_test(e) is None, args
    # a code (sched_switch's prev_state: its letters, the numbers the
    # buffer holds): a letter of the table, read back as the letter
    ev = next(ev for ev in k.tracing.events if ev.name == "sched_switch")
    fields, _size, _dyn = fixed_fields(ev)
    kinds = [KIND_NAMES[f[2]] for f in fields]
    c = next(i for i, kind in enumerate(kinds) if kind.startswith("code"))
    base = ["" if kind == "text" else 0 for kind in kinds]
    for letter in ("R", "R+", "S", "D", "Z", "I"):
        e = (5, ev.id, 3, 0, 0, tuple(base[:c] + [letter] + base[c + 1:]), None)
        assert recs.unpack_for_test(ev.id, recs.pack_for_test(e)) == e[5]
    for letter in ("Q", "", 1):
        e = (5, ev.id, 3, 0, 0, tuple(base[:c] + [letter] + base[c + 1:]), None)
        assert recs.pack_for_test(e) is None, letter
    # a __data_loc string: after the fields, with its NUL (None: a faulted
    # fetch, no data); one-byte characters, no NUL
    ev = next(ev for ev in k.tracing.events if ev.name == "irq_handler_entry")
    fields, _size, _dyn = fixed_fields(ev)
    d = [KIND_NAMES[f[2]] for f in fields].index("dynamic text")
    base = [0] * len(fields)
    enc = RecordEncoder(k.tracing)
    for name in ("timer", "", None, "caf\xe9", "x" * 300):
        e = (5, ev.id, 3, 0, 0, tuple(base[:d] + [name] + base[d + 1:]), None)
        got = recs.pack_for_test(e)
        assert got == enc.encode(e) and len(got) == ev.record_size(e[5]), name
        assert recs.unpack_for_test(ev.id, got) == e[5]
    for name in ("a\0b", "\u20ac", b"bytes"):
        e = (5, ev.id, 3, 0, 0, tuple(base[:d] + [name] + base[d + 1:]), None)
        assert recs.pack_for_test(e) is None, name
    # events with dynamic data of another kind are not such records
    for name in ("ipi_send_cpumask", "dma_map_sg"):
        ev = next(ev for ev in k.tracing.events if ev.name == name)
        assert fixed_fields(ev) is None, name


def _pages(k, cpu):
    f = File(node(k, "per_cpu/cpu%d/trace_pipe_raw" % cpu), os.O_RDONLY | os.O_NONBLOCK)
    n = f.node
    n.fops.open(f)
    out = []
    try:
        while True:
            try:
                out.append(n.fops.read(f, 0, 4096))
            except WouldBlock:
                return out
    finally:
        n.fops.release(f)


def _everything(in_bytes):
    """The files with the function tracer and every event on, the events
    written in their records' bytes where they may (``in_bytes``) or all
    kept beside their pages; and how many were kept beside them."""
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    if not in_bytes:
        for tr in k.tracing.arrays():
            for buf in (tr.buffer, tr.max_buffer):
                for cb in buf.cpus if buf is not None else ():
                    cb.records = None
    for path, value in (("buffer_size_kb", "512"), ("current_tracer", "function"),
                        ("events/enable", "1"), ("options/stacktrace", "1"),
                        ("options/stackmap", "1")):
        wr(k, path, value)
    for _ in range(6):
        k.clock.advance(7_000_000)
        k.timekeeper.run_until_now()
    wr(k, "tracing_on", "0")
    side = sum(len(p.side or ()) for cb in k.tracing.global_trace.buffer.cpus
               for p in cb.pages if p.raw is not None)
    files = [rd(k, "trace"), rd(k, "per_cpu/cpu0/stats"), rd(k, "per_cpu/cpu1/stats")]
    return files + [_pages(k, 0), _pages(k, 1)], side


def test_everything_on_gives_the_files_of_every_event_beside_its_page():
    """The trace, the stats and the pages trace_pipe_raw hands out are byte
    for byte the same, most events no longer kept beside their pages."""
    got, side = _everything(True)
    want, side_before = _everything(False)
    assert got == want
    assert got[0].count("\n") > 10000 and len(got[3]) > 50
    assert side < side_before / 2, (side, side_before)
