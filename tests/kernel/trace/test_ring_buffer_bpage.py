from fakefs.kernel.trace.ring_buffer import CpuBuffer
from fakefs.kernel.trace import trace_entries as te


def _mixed_entries(n, rng):
    """Entries of every shape the model writes: numbers of any size,
    strings, bytes, None, nested tuples, booleans."""
    out, ts = [], 0
    for i in range(n):
        ts += rng.randrange(1, 5000)
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


def test_older_sub_buffers_are_packed_and_read_back_unchanged():
    """Past a CPU's newest loose_pages sub-buffers the entries are packed;
    every reader sees what it sees in a buffer that packs nothing: the
    snapshot, the head (peek, consume), the counters, overwrite."""
    import random
    entries = _mixed_entries(6000, random.Random(2))
    packs, keeps = CpuBuffer(0, 40), CpuBuffer(0, 40)
    packs.loose_pages, packs.unzipped_pages = 2, 20
    keeps.loose_pages = 10 ** 6
    for cb in (packs, keeps):
        for i, e in enumerate(entries):
            cb.write(e[0], e, (28, 48, 96, 140)[i % 4], True)
    assert sum(p.packed is not None for p in packs.pages) == sum(p.zipped for p in packs.pages)
    assert 15 <= sum(p.zipped for p in packs.pages) <= 20     # the writer's, past the newest 20
    assert packs.pack_idle(5) == 5
    assert packs.pack_idle(1000) >= 10                         # the rest but the newest 2
    assert packs.pack_idle(1000) == 0
    assert sum(p.packed is not None for p in packs.pages) >= 35
    assert all(p.packed is None for p in keeps.pages)
    assert not any(p.packed is not None for p in list(packs.pages)[-2:])
    assert packs.events() == keeps.events()
    assert (packs.entries, packs.overrun, packs.bytes()) == (keeps.entries, keeps.overrun,
                                                             keeps.bytes())
    snap = packs.iter_events()
    first = next(snap)
    for _ in range(500):                       # a consuming reader meanwhile
        assert packs.consume() == keeps.consume()
    assert packs.peek() == keeps.peek() and packs.oldest_ts() == keeps.oldest_ts()
    assert [first] + list(snap) == entries[-len(keeps.events()) - 500:]
    packs.unrecorded(300, 300 * 28, entries[-1][0] + 1, True)
    keeps.unrecorded(300, 300 * 28, entries[-1][0] + 1, True)
    assert packs.events() == keeps.events() and packs.overrun == keeps.overrun


def test_packed_sub_buffers_take_less_than_the_buffer():
    """A full buffer of function entries holds, packed, less memory than
    the kernel's pages of it (the daemon's memory follows buffer_size_kb)."""
    cb = CpuBuffer(0, 600)
    cb.loose_pages, cb.unzipped_pages = 4, 8
    for i in range(200_000):
        ts = i * 997
        cb.write(ts, (ts, te.TRACE_FN, 1234, 1, 0, 0xffffffff81000000 + (i * 7919) % 40000,
                      0xffffffff81000000 + (i * 104729) % 40000), 28, True)
    assert cb.overrun
    packed = sum(len(p.packed) for p in cb.pages if p.packed is not None)
    assert packed and packed < cb.size_bytes * 0.6


def _busy_reads(monkeypatch, loose, unzipped=20):
    from fakefs import sim
    from fakefs.sim.files import read_file, write_file
    from fakefs.sim.clock import ManualClock
    from fakefs.kernel.trace import ring_buffer
    monkeypatch.setattr(ring_buffer, "LOOSE_PAGES", loose)
    monkeypatch.setattr(ring_buffer, "UNZIPPED_PAGES", unzipped)
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                 cmdline="trace_options=stackmap,stacktrace")
    T = "sys/kernel/tracing/"
    for path, value in (("current_tracer", "function"), ("events/enable", "1")):
        write_file(k, T + path, value.encode())
    k.clock.advance(1_500_000_000)
    k.timekeeper.run_until_now()
    k.tracing.global_trace.buffer.pack_idle(1 << 20)       # what the daemon does while idle
    write_file(k, T + "tracing_on", b"0")
    out = [read_file(k, T + "trace")]
    out += [read_file(k, T + "per_cpu/cpu%d/stats" % c) for c in (0, 1)]
    out.append(read_file(k, T + "per_cpu/cpu1/trace_pipe_raw", 4096))
    out.append(read_file(k, T + "per_cpu/cpu0/trace_pipe", 1 << 16))
    out.append(read_file(k, T + "trace"))
    monkeypatch.undo()
    return out, [(sum(p.packed is not None for p in cb.pages), sum(p.zipped for p in cb.pages))
                 for cb in k.tracing.global_trace.buffer.cpus]


def test_a_kernel_reads_the_same_with_its_sub_buffers_packed(monkeypatch):
    """Everything traced, then read by every kind of reader: byte for byte
    the same whether the older sub-buffers are packed or not."""
    packed, npacked = _busy_reads(monkeypatch, 2)
    loose, nloose = _busy_reads(monkeypatch, 10 ** 6, 10 ** 6)
    # (packed: the pages with entries kept beside them, those whose records
    # are not in the bytes: _trace_events_raw)
    assert min(n for n, _ in npacked) > 15 and min(z for _, z in npacked) > 10
    assert all(n > z for n, z in npacked)                 # some packed, not compressed
    assert nloose == [(0, 0), (0, 0)]
    assert len(packed[0]) > 1_000_000
    assert packed == loose
