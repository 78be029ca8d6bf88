"""The text of trace entries (trace_output.py): the latency format and
verbose columns, the raw/hex/bin printers, printk-msg-only, timestamps."""

import re
import struct

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.trace_output import trace_find_mark
from fakefs.sim.files import read_file
from kfiles import TRACING, rd, wr


def boot(cmdline="ftrace=function"):
    k = sim.boot(cmdline=cmdline, seed=7, nr_cpus=2, clock=ManualClock())
    k.clock.advance(20_000_000)
    wr(k, "tracing_on", "0")
    return k


def body_lines(text):
    return [ln for ln in text.splitlines() if not ln.startswith("#")]


def raw_entries(k):
    """(pid, cpu, ts, rest) of every entry, from the raw printer."""
    wr(k, "options/raw", "1")
    out = []
    for ln in body_lines(rd(k, "trace")):
        pid, cpu, ts, rest = ln.split(" ", 3)
        out.append((int(pid), int(cpu), int(ts), rest))
    wr(k, "options/raw", "0")
    return out


LAT = re.compile(r"^(.{8})-(\d+) +(\d+)([.dDbX][.Nnp][.hsHzZ][.0-9a-f][.0-9a-f]) +(\d+)us(.): (.*)$")


def test_latency_format_columns_count_from_the_reset_and_mark_the_delay():
    k = boot()
    raw = raw_entries(k)
    wr(k, "options/latency-format", "1")
    text = rd(k, "trace")
    head = text.split("\n")
    assert head[:4] == ["# tracer: function", "#", "# function latency trace v1.1.5 on %s" % k.config.release,
                        "# " + "-" * 68]
    assert re.match(r"^# latency: 0 us, #%d/%d, CPU#0 \| \(M:desktop VP:0, KP:0, SP:0 HP:0 #P:2\)$" %
                    (len(raw), len(raw)), head[4])
    assert "#  cmd     pid     |||||| time  |   caller     " in head
    lines = body_lines(text)
    assert len(lines) == len(raw)
    for i, (ln, (pid, cpu, ts, _)) in enumerate(zip(lines, raw)):
        m = LAT.match(ln)
        assert m, ln
        assert int(m.group(2)) == pid and int(m.group(3)) == cpu
        assert int(m.group(5)) == (ts + 500) // 1000          # never reset: from 0
        nxt = raw[i + 1][2] if i + 1 < len(raw) else ts
        assert m.group(6) == trace_find_mark(((nxt - ts + 500) // 1000) * 1000)
    # after "echo > trace" the columns count from the reset
    wr(k, "tracing_on", "1")
    wr(k, "trace", "")
    k.clock.advance(5_000_000)
    wr(k, "tracing_on", "0")
    first = LAT.match(body_lines(rd(k, "trace"))[0])
    assert 0 <= int(first.group(5)) <= 5000
    # the format is the one of the open: an empty buffer has no header
    wr(k, "trace", "")
    assert rd(k, "trace") == "# tracer: function\n#\n"


def test_verbose_latency_columns():
    k = boot()
    raw = raw_entries(k)
    wr(k, "options/latency-format", "1")
    wr(k, "options/verbose", "1")
    text = rd(k, "trace")
    assert "#  cmd     pid" not in text               # no column help
    lines = body_lines(text)
    pat = re.compile(r"^ *(\S+) +(\d+) +(\d+) (\d+) ([0-9a-f]{8}) ([0-9a-f]{8}) \[([0-9a-f]{8,})\] "
                     r"(\d+)\.(\d{3})ms \(\+(\d+)\.(\d{3})ms\): ")
    for i, ln in enumerate(lines[:50]):
        m = pat.match(ln)
        assert m, ln
        pid, cpu, ts = raw[i][:3]
        assert int(m.group(2)) == pid and int(m.group(3)) == cpu
        assert int(m.group(6), 16) == i
        assert int(m.group(7), 16) == (ts + 500) // 1000
        us = (ts + 500) // 1000
        assert (int(m.group(8)), int(m.group(9))) == (us // 1000, us % 1000)


def test_raw_hex_and_bin_printers_of_function_entries():
    k = boot()
    normal = body_lines(rd(k, "trace"))[:20]
    raw = raw_entries(k)[:20]
    for ln, (pid, cpu, ts, rest) in zip(normal, raw):
        ip, parent = (int(x, 16) for x in rest.split())
        assert ln.split(": ", 1)[1].split(" <-")[0] == k.kallsyms.sprint_symbol_no_offset(ip)
        assert "-%d " % pid in ln and "[%03d]" % cpu in ln and parent
    wr(k, "options/hex", "1")
    hexed = body_lines(rd(k, "trace"))[:20]
    for ln, (pid, cpu, ts, rest) in zip(hexed, raw):
        ip, parent = (int(x, 16) for x in rest.split())
        assert ln == "%08x %08x %016x %016x %016x " % (pid, cpu, ts, ip, parent)
    wr(k, "options/bin", "1")                         # bin comes before hex
    data = read_file(k, TRACING + "trace")
    body = data.split(b"FUNCTION\n#              | |         |   |||||     |         |\n", 1)[1]
    for i, (pid, cpu, ts, rest) in enumerate(raw):
        ip, parent = (int(x, 16) for x in rest.split())
        assert struct.unpack_from("<iiQQQ", body, 32 * i) == (pid, cpu, ts, ip, parent)


def test_events_without_raw_printers_print_their_type():
    k = boot(cmdline="")
    wr(k, "tracing_on", "1")
    wr(k, "events/sched/sched_switch/enable", "1")
    k.clock.advance(20_000_000)
    wr(k, "tracing_on", "0")
    ev_id = int(rd(k, "events/sched/sched_switch/id"))
    wr(k, "options/raw", "1")
    lines = body_lines(rd(k, "trace"))
    assert lines and all(re.match(r"^\d+ \d \d+ type: %d$" % ev_id, ln) for ln in lines)
    wr(k, "options/raw", "0")
    wr(k, "options/hex", "1")
    text = rd(k, "trace")
    assert re.search(r"\n[0-9a-f]{8} 0000000[01] [0-9a-f]{16} type: %d\n\n" % ev_id, text)


def test_print_entries_msg_only_and_raw():
    k = boot(cmdline="")
    wr(k, "tracing_on", "1")
    wr(k, "trace_marker", "hello")
    wr(k, "trace_marker", "café\n")
    last = body_lines(rd(k, "trace"))
    assert last[-2].endswith(": tracing_mark_write: hello")
    # the bytes written come back as they were (UTF-8 stays UTF-8)
    assert last[-1].endswith(": tracing_mark_write: café")
    wr(k, "options/printk-msg-only", "1")
    assert body_lines(rd(k, "trace"))[-2] == "hello"
    wr(k, "options/trace_printk", "0")               # msg-only needs trace_printk too
    assert body_lines(rd(k, "trace"))[-2].endswith(": tracing_mark_write: hello")
    wr(k, "options/raw", "1")
    ip = k.kallsyms.addr_of("tracing_mark_write")
    assert body_lines(rd(k, "trace"))[-2].endswith(" # %x hello" % ip)
    wr(k, "options/raw", "0")
    wr(k, "options/sym-offset", "1")
    assert re.search(r": tracing_mark_write\+0x[0-9a-f]+/0x[0-9a-f]+: hello$",
                     body_lines(rd(k, "trace"))[-2])


def test_timestamps_round_to_the_nearest_microsecond():
    k = boot()
    raw = raw_entries(k)
    lines = body_lines(rd(k, "trace"))
    up = [i for i, e in enumerate(raw) if e[2] % 1000 >= 500]
    assert up                                        # some would show one less if truncated
    for i in up:
        us = (raw[i][2] + 500) // 1000
        assert " %5d.%06d: " % (us // 1_000_000, us % 1_000_000) in lines[i]


def test_hash_ptr_off_prints_the_addresses():
    k = boot(cmdline="")
    wr(k, "tracing_on", "1")
    wr(k, "events/kmem/kmalloc/enable", "1")
    k.clock.advance(50_000_000)
    wr(k, "tracing_on", "0")
    hashed = re.findall(r" ptr=([0-9a-f]{16}) ", rd(k, "trace"))
    assert hashed and all(p.startswith("00000000") for p in hashed)
    wr(k, "options/hash-ptr", "0")
    real = re.findall(r" ptr=([0-9a-f]{16}) ", rd(k, "trace"))
    assert len(real) == len(hashed) and all(p.startswith("ffff") for p in real)


def test_func_no_repeats_counts_repeated_calls():
    k = boot()
    wr(k, "tracing_on", "1")
    wr(k, "options/func-no-repeats", "1")
    wr(k, "trace", "")
    k.clock.advance(30_000_000)
    wr(k, "tracing_on", "0")
    raw = raw_entries(k)
    fn = [(c, rest) for _p, c, _t, rest in raw if len(rest.split()) == 2]
    for cpu in (0, 1):
        calls = [r for c, r in fn if c == cpu]
        # no call right after the same call on a CPU, unless a count came between
        seq = [(c, r) for _p, c, _t, r in raw if c == cpu]
        for (c1, a), (c2, b) in zip(seq, seq[1:]):
            if len(a.split()) == 2 and len(b.split()) == 2:
                assert a != b
        assert calls
    reps = [ln for ln in body_lines(rd(k, "trace")) if "(repeats: " in ln]
    assert reps
    m = re.search(r": (\S+) <-(\S+) \(repeats: (\d+), last_ts: +(\d+)\.(\d{6})\)$", reps[0])
    assert m and int(m.group(3)) >= 1
    ts = float(reps[0].split(": ", 1)[0].split()[-1])
    assert float(m.group(4) + "." + m.group(5)) <= ts
    rep_raw = [rest for _p, _c, _t, rest in raw if len(rest.split()) == 4]
    assert rep_raw and all(int(x.split()[2]) >= 1 for x in rep_raw)
    assert "field:u16 count;\toffset:24;\tsize:2;\tsigned:0;" in rd(k, "events/ftrace/func_repeats/format")
    wr(k, "options/func-no-repeats", "0")


def test_userstacktrace_follows_events_and_sym_userobj_names_the_object():
    from fakefs.kernel.mm.mmap import LIBC_PATH, libc_text
    k = boot(cmdline="")
    wr(k, "tracing_on", "1")
    wr(k, "events/sched/sched_switch/enable", "1")
    wr(k, "options/userstacktrace", "1")
    k.clock.advance(20_000_000)
    wr(k, "tracing_on", "0")
    text = rd(k, "trace")
    lines = body_lines(text)
    switches = [i for i, ln in enumerate(lines) if "sched_switch:" in ln]
    assert switches
    # each event is followed by its user stack: none for a kernel thread,
    # the libc return address for a user task
    user = kthread = 0
    for i in switches:
        nxt = lines[i + 1]
        assert nxt.endswith(": <user stack trace>"), nxt
        pid = int(re.match(r"^.{16}-(\d+) ", lines[i]).group(1))
        task = k.sched.find(pid)
        frames = []
        j = i + 2
        while j < len(lines) and lines[j].startswith(" => "):
            frames.append(lines[j])
            j += 1
        if task is None or task.kthread or pid == 0:
            kthread += 1
            assert frames == []
        else:
            user += 1
            vma = libc_text(k.seed, task.tgid)
            ip = int(re.match(r"^ =>  <([0-9a-f]{16})>$", frames[0]).group(1), 16)
            assert vma.start <= ip < vma.end and len(frames) == 1
    assert user and kthread
    wr(k, "options/sym-userobj", "1")
    objs = [ln for ln in body_lines(rd(k, "trace")) if ln.startswith(" => ")]
    assert objs and all(re.match(r"^ => %s\[\+0x[0-9a-f]+\]$" % re.escape(LIBC_PATH), ln) for ln in objs)
    wr(k, "options/sym-addr", "1")
    objs = [ln for ln in body_lines(rd(k, "trace")) if ln.startswith(" => ")]
    assert all(re.match(r"^ => \S+\[\+0x[0-9a-f]+\] <[0-9a-f]{16}>$", ln) for ln in objs)
    # the record, as the fields option reads it
    wr(k, "options/fields", "1")
    us = [ln for ln in body_lines(rd(k, "trace")) if ": user_stack: " in ln]
    assert us and all(re.search(r": user_stack: tgid=0x([0-9a-f]+) \((\d+)\) caller=<INVALID-SIZE>$", ln)
                      for ln in us)
    wr(k, "options/fields", "0")
    wr(k, "options/userstacktrace", "0")


def test_a_task_on_a_cpu_shows_each_entry_s_own_context_flags():
    # the context columns are cached per (pid, cpu, flags, preempt count)
    from fakefs.kernel.trace import trace_entries as te
    from fakefs.kernel.trace.trace_output import TraceFormatter
    k = boot()
    line = TraceFormatter(k.tracing.global_trace).printer()
    plain = (1_000_000, te.TRACE_STACK_ID, 1, 0, 0, 7)
    irq = (2_000_000, te.TRACE_STACK_ID, 1, te.TRACE_FLAG_IRQS_OFF | te.TRACE_FLAG_HARDIRQ, 1, 8)
    assert line(plain, 0).split("] ")[1].startswith(".....")
    assert line(irq, 0).split("] ")[1].startswith("d.h1.")
    assert line(plain, 0).split("] ")[1].startswith(".....")
    wr(k, "options/irq-info", "0")
    line = TraceFormatter(k.tracing.global_trace).printer()
    assert line(irq, 0).split("] ")[1] == "     0.002000: <stack_id 8>\n"
