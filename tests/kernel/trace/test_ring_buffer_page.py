"""per_cpu/cpuN/trace_pipe_raw (ring_buffer_page.py, trace_events_raw.py,
trace_buffer_files.TracePipeRawOps): pages decoded here by a small decoder
of our own, driven by what the served ``events/header_page``,
``header_event`` and ``format`` files say, and checked against the text
the ``trace`` file shows for the same entries."""

import errno
import os
import re
import struct

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import POLLIN, File, WouldBlock
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace import trace_entries as te
from fakefs.kernel.trace.ring_buffer_page import PageBuilder, RB_MISSED_EVENTS, RB_MISSED_STORED
from kfiles import node, rd, wr

MASK64 = (1 << 64) - 1
FIELD = re.compile(r"\tfield:(.*);\toffset:(\d+);\tsize:(\d+);\tsigned:(\d+);")


def boot(cmdline="", cpus=2):
    return sim.boot(cmdline=cmdline, seed=7, nr_cpus=cpus, clock=ManualClock())


def opened(k, path, flags=os.O_RDONLY):
    n = node(k, path)
    f = File(n, flags)
    n.fops.open(f)
    return n, f


# --- an independent decoder -----------------------------------------------------------

class Formats:
    """Field layouts by event id, read from the served format files."""

    def __init__(self, k, prefix=""):
        self.k = k
        self.prefix = prefix
        self.by_id = {}
        self.convs = {}
        page = rd(k, prefix + "events/header_page")
        self.commit_size = int(re.search(r"commit;\toffset:8;\tsize:(\d+);", page).group(1))
        self.data_size = int(re.search(r"char data;\toffset:16;\tsize:(\d+);", page).group(1))
        hdr = rd(k, prefix + "events/header_event")
        self.padding = int(re.search(r"padding\s*: type == (\d+)", hdr).group(1))
        self.extend = int(re.search(r"time_extend\s*: type == (\d+)", hdr).group(1))
        self.stamp = int(re.search(r"time_stamp\s*: type == (\d+)", hdr).group(1))
        self.max_type = int(re.search(r"data max type_len\s*== (\d+)", hdr).group(1))

    def load(self, path):
        text = rd(self.k, self.prefix + "events/%s/format" % path)
        eid = int(re.search(r"^ID: (\d+)$", text, re.M).group(1))
        fields = []
        for m in FIELD.finditer(text):
            decl, off, size, signed = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
            name = decl.rsplit(" ", 1)[1].split("[")[0]
            fields.append((decl, name, off, size, signed))
        # how the print fmt shows each "name=": the conversion letter
        fmt = text.split("print fmt: ", 1)[1].split('", ', 1)[0]
        self.convs[path] = dict(re.findall(r"(\w+)=%[-0-9.]*(?:ll|l|z|hh|h)?([a-zA-Z])", fmt))
        self.by_id[eid] = (path, fields)
        return eid

    def fields(self, rec):
        """name -> value of a record (common fields included)."""
        eid = struct.unpack_from("<H", rec)[0]
        path, fields = self.by_id[eid]
        out = {"_event": path}
        for decl, name, off, size, signed in fields:
            if decl.startswith("__data_loc"):
                loc = struct.unpack_from("<I", rec, off)[0]
                raw = rec[loc & 0xffff:(loc & 0xffff) + (loc >> 16)]
                out[name] = raw.rstrip(b"\0").decode("latin-1")
            elif "char" in decl and "[" in decl:
                raw = rec[off:off + size] if size else rec[off:]
                out[name] = raw.split(b"\0")[0].decode("latin-1")
            elif "[" in decl:
                n = int(decl.split("[")[1].split("]")[0])
                elem = size // n
                out[name] = [int.from_bytes(rec[off + i * elem:off + (i + 1) * elem], "little")
                             for i in range(n) if off + (i + 1) * elem <= len(rec)]
            else:
                out[name] = int.from_bytes(rec[off:off + size], "little", signed=bool(signed))
        return out

    def page(self, page):
        """(events as (ts, record), missed count or None, flags)."""
        assert len(page) == 16 + self.data_size
        ts = struct.unpack_from("<Q", page)[0]
        commit = int.from_bytes(page[8:8 + self.commit_size], "little")
        flags = commit & (RB_MISSED_EVENTS | RB_MISSED_STORED)
        size = commit & 0x3fffffff
        pos, out = 16, []
        while pos < 16 + size:
            word = struct.unpack_from("<I", page, pos)[0]
            tl, delta = word & 31, word >> 5
            if tl == self.padding:
                break
            if tl == self.extend:
                ts += delta + (struct.unpack_from("<I", page, pos + 4)[0] << 27)
                pos += 8
                continue
            assert tl != self.stamp
            ts += delta
            if tl == 0:
                n = struct.unpack_from("<I", page, pos + 4)[0] - 4
                out.append((ts, page[pos + 8:pos + 8 + n]))
                pos += 8 + n
            else:
                assert tl <= self.max_type
                out.append((ts, page[pos + 4:pos + 4 + 4 * tl]))
                pos += 4 + 4 * tl
        assert pos == 16 + size
        missed = None
        if flags & RB_MISSED_STORED:
            missed = int.from_bytes(page[16 + size:16 + size + 8], "little")
        assert not any(page[16 + size + (8 if missed is not None else 0):])
        return out, missed, flags


def read_pages(k, cpu, prefix="", size=None):
    """Every page trace_pipe_raw of ``cpu`` gives until it would block."""
    n, f = opened(k, prefix + "per_cpu/cpu%d/trace_pipe_raw" % cpu, os.O_RDONLY | os.O_NONBLOCK)
    size = size or 16 + Formats(k, prefix).data_size
    pages = []
    try:
        while True:
            k.timekeeper.run_until_now()
            try:
                data = n.fops.read(f, 0, size)
            except WouldBlock:
                break
            assert data
            pages.append(data)
    finally:
        n.fops.release(f)
    return pages


LINE = re.compile(r"^\s*(.*)-(\d+)\s+\[(\d+)\] (.....) +(\d+)\.(\d+): (.*)$")


def text_entries(k, cpu, prefix=""):
    """(usecs, pid, flags column, body lines) of per_cpu/cpuN/trace."""
    out = []
    for ln in rd(k, prefix + "per_cpu/cpu%d/trace" % cpu).splitlines():
        if ln.startswith("#"):
            continue
        m = LINE.match(ln)
        if m is None:
            out[-1][3].append(ln)      # a stack's " => " lines
            continue
        out.append((int(m.group(5)) * 1_000_000 + int(m.group(6)), int(m.group(2)), m.group(4),
                    [m.group(7)]))
    return out


def formats_for(k, prefix=""):
    fm = Formats(k, prefix)
    for name in ("function", "kernel_stack", "print", "raw_data", "stack_id"):
        fm.load("ftrace/" + name)
    return fm


def load_used(k, fm, prefix=""):
    for ev in k.tracing.events:
        if ev.id not in fm.by_id and any(ev in tr.enabled_events for tr in k.tracing.arrays()):
            fm.load("%s/%s" % (ev.system, ev.name))


def check_against_text(k, fm, cpu, prefix=""):
    """Decode what trace_pipe_raw of ``cpu`` gives and compare each event
    with the line ``trace`` showed for it; the number of events compared."""
    k.timekeeper.run_until_now()
    text = text_entries(k, cpu, prefix)
    events = []
    for page in read_pages(k, cpu, prefix):
        evs, _missed, _flags = fm.page(page)
        events += evs
    assert len(events) == len(text)
    ks = k.kallsyms
    for (ts, rec), (usecs, pid, flags, body) in zip(events, text):
        v = fm.fields(rec)
        assert (ts + 500) // 1000 == usecs       # ns2usecs()
        assert v["common_pid"] == pid
        first = body[0]
        ev = v["_event"]
        if ev == "ftrace/function":
            assert first.startswith(ks.sprint_symbol_no_offset(v["ip"]))
        elif ev == "ftrace/kernel_stack":
            shown = [ln.split("=> ", 1)[1] for ln in body[1:]]
            assert len(shown) == v["size"]
            got = [ks.sprint_symbol_no_offset(ip) for ip in
                   [int.from_bytes(rec[16 + 8 * i:24 + 8 * i], "little") for i in range(v["size"])]]
            assert got == shown
        elif ev == "ftrace/stack_id":
            assert first == "<stack_id %d>" % v["stack_id"]
        elif ev == "ftrace/print":
            assert first == ks.sprint_symbol_no_offset(v["ip"]) + ": " + v["buf"].rstrip("\n")
        elif ev == "ftrace/raw_data":
            assert first.startswith("# %x buf:" % v["id"])
        elif ev.startswith("syscalls/"):
            # sys_read(fd: 3, buf: 7ffd..., count: 340) / sys_read -> 0x154
            if "(" in first:
                for key, val in re.findall(r"(\w+): ([0-9a-f]+)", first):
                    assert v[key] & MASK64 == int(val, 16), (first, key)
            else:
                assert v["ret"] & MASK64 == int(first.split("-> ")[1], 16)
        elif ev == "raw_syscalls/sys_enter":
            nr, args = re.match(r"sys_enter: NR (-?\d+) \((.*)\)$", first).groups()
            assert v["id"] == int(nr)
            assert [a & MASK64 for a in v["args"]] == [int(a, 16) for a in args.split(", ")]
        elif ev == "raw_syscalls/sys_exit":
            assert first == "sys_exit: NR %d = %d" % (v["id"], v["ret"])
        else:
            name = ev.split("/")[1]
            assert first.startswith(name + ": ")
            if name == "sched_switch":
                # the print fmt's letters: a bit each, 0 for R, TASK_REPORT_MAX (0x100) for '+'
                shown = re.search(r"prev_state=(\S+)", first).group(1)
                bits = {"R": 0, "S": 1, "D": 2, "T": 4, "t": 8, "X": 16, "Z": 32, "P": 64, "I": 128}
                assert v["prev_state"] == bits[shown.rstrip("+")] | (0x100 if shown.endswith("+") else 0)
            # every name=%d/%u/%x/%s the line shows is the field's value
            # (not %p: the line shows a hash, the record the pointer)
            convs = fm.convs[ev]
            for key, val in re.findall(r"(\w+)=(\S+)", first):
                conv = convs.get(key)
                if key not in v or conv is None:
                    continue
                got = v[key]
                if conv in "du":
                    assert got == int(val), (first, key)
                elif conv == "x":
                    assert got & MASK64 == int(val, 16), (first, key)
                elif conv == "s" and isinstance(got, str):
                    assert got == val, (first, key)
        # the context flags: irqs-off 'd' and the preempt depth
        assert (flags[0] in "dD") == bool(v["common_flags"] & te.TRACE_FLAG_IRQS_OFF)
        pc = v["common_preempt_count"] & 0xf
        assert flags[3] == ("%x" % pc if pc else ".")
    return len(events)


# --- tests ----------------------------------------------------------------------------

def test_events_decode_to_what_the_trace_shows():
    k = boot()
    wr(k, "events/sched/enable", "1")
    wr(k, "events/kmem/enable", "1")
    wr(k, "events/irq/enable", "1")
    wr(k, "events/timer/enable", "1")
    wr(k, "events/raw_syscalls/enable", "1")
    wr(k, "options/stacktrace", "1")
    k.clock.advance(30_000_000)
    k.timekeeper.run_until_now()
    wr(k, "trace_marker", "hello there")
    wr(k, "trace_marker_raw", "\x01\x00\x00\x00abcdefgh")
    wr(k, "tracing_on", "0")
    fm = formats_for(k)
    load_used(k, fm)
    n = sum(check_against_text(k, fm, cpu) for cpu in (0, 1))
    assert n > 500
    assert rd(k, "trace").count("\n") < 20      # consumed: the header alone is left


def test_every_event_the_machine_fires():
    """The simulated machine's paths: irq, timers, workqueues, a task's
    life, syscalls (their own printers), with __data_loc strings."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "events/enable", "1")
    wr(k, "events/syscalls/enable", "1")
    for _ in range(10):
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
    # a command run by a shell (about one a second): its fork and exec
    exec_id = next(ev.id for ev in k.tracing.events if ev.name == "sched_process_exec")
    for _ in range(150):
        if any(e[1] == exec_id for cb in k.tracing.global_trace.buffer.cpus
               for page in list(cb.pages)[-8:] for e in page.events):
            break
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
    wr(k, "tracing_on", "0")
    fm = formats_for(k)
    load_used(k, fm)
    types = {e[1] for cb in k.tracing.global_trace.buffer.cpus for e in cb.events()}
    assert len(types) > 60
    names = {k.tracing.events_by_id[t].name for t in types}
    assert {"sched_process_exec", "irq_handler_entry", "sys_enter_openat", "sys_exit"} <= names
    assert sum(check_against_text(k, fm, cpu) for cpu in (0, 1)) > 5000


def test_function_tracer_and_stack_ids():
    k = boot("ftrace=function")
    wr(k, "options/stackmap", "1")
    wr(k, "options/func_stack_trace", "1")
    k.clock.advance(5_000_000)
    k.timekeeper.run_until_now()
    wr(k, "tracing_on", "0")
    fm = formats_for(k)
    assert "<stack_id" in rd(k, "trace")
    assert sum(check_against_text(k, fm, cpu) for cpu in (0, 1)) > 40


def test_instance_and_bigger_sub_buffers():
    k = boot()
    k.tracing.instance_mkdir("foo")
    p = "instances/foo/"
    wr(k, p + "buffer_subbuf_size_kb", "8")
    wr(k, p + "events/sched/sched_switch/enable", "1")
    wr(k, p + "events/kmem/kmem_cache_free/enable", "1")
    k.clock.advance(30_000_000)
    k.timekeeper.run_until_now()
    wr(k, p + "tracing_on", "0")
    fm = formats_for(k, p)
    load_used(k, fm, p)
    assert fm.data_size == 8192 - 16
    assert sum(check_against_text(k, fm, cpu, p) for cpu in (0, 1)) > 50


def test_a_read_is_a_sub_buffer_and_consumes_what_trace_pipe_would():
    k = boot()
    wr(k, "events/sched/enable", "1")
    wr(k, "events/kmem/enable", "1")
    k.clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    wr(k, "tracing_on", "0")
    cb = k.tracing.global_trace.buffer.cpus[0]
    pages = len([p for p in cb.pages if p.events])
    first = [len(p.events) for p in cb.pages if p.events][0]
    assert pages >= 3
    n, f = opened(k, "per_cpu/cpu0/trace_pipe_raw")
    page = n.fops.read(f, 0, 4096)
    assert len(page) == 4096
    fm = formats_for(k)
    load_used(k, fm)
    evs, missed, flags = fm.page(page)
    assert len(evs) == first and missed is None and flags == 0
    cb_next_pid = cb.peek()[2]
    # a read of 100 bytes: the next page with as many events as fit in 84
    part = n.fops.read(f, 0, 100)
    assert len(part) == 100
    rest = n.fops.read(f, 0, 8192)
    assert len(rest) == 4096 - 100
    evs2, _m, _f = fm.page(part + rest)
    assert 0 < len(evs2) and sum(len(r) + 4 for _ts, r in evs2) <= 84
    assert fm.fields(evs2[0][1])["common_pid"] == cb_next_pid
    n.fops.release(f)
    # trace_pipe goes on from the next event: nothing read twice, nothing skipped
    left = [ln for ln in rd(k, "per_cpu/cpu0/trace").splitlines() if not ln.startswith("#")]
    assert len(left) == cb.entries
    usecs = int(left[0].split(": ", 1)[0].split()[-1].replace(".", ""))
    assert usecs > evs2[-1][0] // 1000 - 1
    assert int(rd(k, "per_cpu/cpu0/stats").split("read events: ")[1]) == first + len(evs2)


def test_empty_blocks_and_small_reads_get_nothing():
    k = boot()
    n, f = opened(k, "per_cpu/cpu1/trace_pipe_raw")
    with pytest.raises(WouldBlock) as e:
        n.fops.read(f, 0, 4096)
    assert e.value.errno == errno.EAGAIN
    assert n.fops.poll(f) == 0
    wr(k, "options/block", "1")
    assert n.fops.poll(f) & POLLIN
    wr(k, "options/block", "0")
    wr(k, "events/sched/sched_switch/enable", "1")
    wr(k, "buffer_percent", "0")
    k.clock.advance(20_000_000)
    k.timekeeper.run_until_now()
    assert n.fops.poll(f) & POLLIN
    assert n.fops.read(f, 0, 16) == b""        # no room for an event: 0, nothing consumed
    assert n.fops.read(f, 0, 4096)
    n.fops.release(f)


def test_lost_events_are_flagged_and_counted():
    k = boot()
    wr(k, "buffer_size_kb", "8")              # three sub-buffers per CPU
    wr(k, "events/sched/enable", "1")
    wr(k, "events/kmem/enable", "1")
    k.clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    wr(k, "tracing_on", "0")
    cb = k.tracing.global_trace.buffer.cpus[0]
    assert cb.overrun > 0
    fm = formats_for(k)
    load_used(k, fm)
    pages = read_pages(k, 0)
    _evs, missed, flags = fm.page(pages[0])
    used = int.from_bytes(pages[0][8:8 + fm.commit_size], "little") & 0x3fffffff
    assert flags & RB_MISSED_EVENTS
    if fm.data_size - used >= 8:              # room after the data: the count is stored
        assert flags & RB_MISSED_STORED and missed == cb.overrun
    else:
        assert not flags & RB_MISSED_STORED and missed is None
    assert all(fm.page(p)[2] == 0 for p in pages[1:])


def test_the_missed_count_is_stored_where_it_fits():
    """rb_read_page(): events lost before a page flag it; their count, an
    unsigned long, follows the data when 8 bytes are left, and says so."""
    k = boot()
    fm = formats_for(k)
    rec = struct.pack("<HBBiQQ", te.TRACE_FN, 0, 0, 7, 1, 2)        # 28 bytes an event
    short = struct.pack("<HBBiQ", te.TRACE_FN, 0, 0, 7, 1)           # 20
    for n, last, stored in ((3, None, True), (145, None, True), (145, short, False)):
        pb = PageBuilder(4080)
        for i in range(n):
            assert pb.add(1000 + i, rec)
        if last is not None:
            assert pb.add(2000, last)                                 # 0 bytes left
        _evs, missed, flags = fm.page(pb.page(4080, missed=77))
        assert flags & RB_MISSED_EVENTS
        assert (bool(flags & RB_MISSED_STORED), missed) == ((True, 77) if stored else (False, None)), n


def test_time_extends_and_the_page_stamp():
    pb = PageBuilder(4080)
    rec = struct.pack("<HBBiQQ", te.TRACE_FN, 0, 0, 7, 1, 2)
    t0 = 5_000_000_000
    assert pb.add(t0, rec) and pb.add(t0 + 10, rec) and pb.add(t0 + 10 + (3 << 27) + 5, rec)
    k = boot()
    fm = formats_for(k)
    evs, missed, flags = fm.page(pb.page(4080))
    assert [ts for ts, _r in evs] == [t0, t0 + 10, t0 + 10 + (3 << 27) + 5]
    assert struct.unpack_from("<Q", pb.page(4080))[0] == t0
    # 24-byte records: 4 + 24 bytes each, 8 more for the extend
    assert len(pb.data) == 3 * 28 + 8


def test_kprobe_event_records():
    """A probe's fixed fields, its char array and its string (a __data_loc
    after the fixed part) as the format file says."""
    k = boot()
    wr(k, "kprobe_events", "p:testprobe eventfs_create_dir arg1=+0(%di):char "
                           "arg2=+0(%di):char[4] s=+0(%di):string\n")
    wr(k, "events/kprobes/testprobe/enable", "1\n")
    wr(k, "kprobe_events", "p:test kernel_clone\n", os.O_WRONLY | os.O_APPEND)
    wr(k, "events/kprobes/testprobe/enable", "0\n")
    fm = formats_for(k)
    fm.load("kprobes/testprobe")
    recs = [rec for cpu in (0, 1) for page in read_pages(k, cpu) for _ts, rec in fm.page(page)[0]]
    vals = [fm.fields(r) for r in recs]
    assert vals and all(v["_event"] == "kprobes/testprobe" for v in vals)
    v = vals[0]
    assert (v["arg1"], bytes(v["arg2"]), v["s"]) == (ord("t"), b"test", "test")   # u8 arg2[4]
    assert k.kallsyms.sprint_symbol_no_offset(v["__probe_ip"]) == "eventfs_create_dir"


def test_func_repeats_record():
    """The layout events/ftrace/func_repeats/format gives (an entry made
    here: ip, parent_ip, count; the delta since the last repeat)."""
    from fakefs.kernel.trace.trace_events_raw import RecordEncoder
    k = boot()
    fm = formats_for(k)
    eid = fm.load("ftrace/func_repeats")
    delta = (5 << 32) | 123456
    entry = (1000, eid, 42, 1, 2, (0xffffffff81000010, 0xffffffff81000020, 7), delta)
    v = fm.fields(RecordEncoder(k.tracing).encode(entry))
    assert (v["common_pid"], v["common_flags"], v["common_preempt_count"]) == (42, 1, 2)
    assert (v["ip"], v["parent_ip"], v["count"]) == (0xffffffff81000010, 0xffffffff81000020, 7)
    assert (v["top_delta_ts"] << 32 | v["bottom_delta_ts"]) == delta


def test_snapshot_raw_reads_the_swapped_out_buffer():
    k = boot()
    n, f = opened(k, "per_cpu/cpu0/snapshot_raw", os.O_RDONLY | os.O_NONBLOCK)
    with pytest.raises(WouldBlock):
        n.fops.read(f, 0, 4096)                 # an empty snapshot blocks its reader
    wr(k, "events/sched/sched_switch/enable", "1")
    k.clock.advance(20_000_000)
    k.timekeeper.run_until_now()
    wr(k, "snapshot", "1")                      # allocate and swap
    shown = [ln for ln in rd(k, "per_cpu/cpu0/snapshot").splitlines() if not ln.startswith("#")]
    assert shown
    fm = formats_for(k)
    load_used(k, fm)
    events = []
    while True:
        try:
            page = n.fops.read(f, 0, 4096)
        except WouldBlock:
            break
        events += fm.page(page)[0]
    n.fops.release(f)
    assert len(events) == len(shown)
    assert [fm.fields(rec)["common_pid"] for _ts, rec in events] == \
        [int(re.match(r"^\s*.*-(\d+)\s+\[", ln).group(1)) for ln in shown]
    # consumed from the snapshot, not from the live buffer
    assert not [ln for ln in rd(k, "per_cpu/cpu0/snapshot").splitlines() if not ln.startswith("#")]
    assert node(k, "per_cpu/cpu0/snapshot_raw").mode & 0o777 == 0o440
