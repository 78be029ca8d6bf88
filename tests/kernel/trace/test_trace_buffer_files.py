"""buffer_subbuf_size_kb, buffer_percent, trace_marker_raw and saved_tgids
(trace_buffer_files.py) through their file operations."""

import errno
import os
import re

from fakefs import sim
from fakefs.kernel.fs.pseudo import POLLIN, File, KernelError
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.trace_buffer_files import raw_data_shown, subbuf_order_for
from kfiles import TRACING, errno_of, node, rd, wr


def boot(cmdline=""):
    return sim.boot(cmdline=cmdline, seed=7, nr_cpus=2, clock=ManualClock())


def opened(k, path, flags=os.O_RDONLY):
    n = node(k, path)
    f = File(n, flags)
    n.fops.open(f)
    return n, f


def write_all(k, path, data: bytes) -> list[int]:
    """Write ``data`` as a shell does: again with the rest after a short write."""
    n, f = opened(k, path, os.O_WRONLY)
    counts = []
    try:
        while data:
            c = n.fops.write(f, data)
            counts.append(c)
            data = data[c:]
    finally:
        n.fops.release(f)
    return counts


def marker_bodies(k, prefix=""):
    return [ln.split("tracing_mark_write: ", 1)[1]
            for ln in rd(k, prefix + "trace").splitlines() if "tracing_mark_write: " in ln]


def test_subbuf_size_rounds_up_to_an_order_of_pages():
    k = boot()
    assert rd(k, "buffer_subbuf_size_kb") == "4\n"
    for val, shown in (("8", 8), ("5", 8), ("3", 4), ("1", 4), ("512", 512), ("17\n", 32),
                       (str((1 << 54) + 4), 4)):      # KB << 10 wraps to one page
        wr(k, "buffer_subbuf_size_kb", val)
        assert rd(k, "buffer_subbuf_size_kb") == "%d\n" % shown, val
    for val, err in (("513", errno.EINVAL), ("0", errno.EINVAL), (str(1 << 54), errno.EINVAL),
                     ("-1", errno.EINVAL), ("8k", errno.EINVAL), ("", errno.EINVAL),
                     (str(1 << 64), errno.ERANGE)):
        assert errno_of(wr, k, "buffer_subbuf_size_kb", val) == err, val
    assert rd(k, "buffer_subbuf_size_kb") == "4\n"
    assert [subbuf_order_for(kb) for kb in (1, 4, 5, 8, 9, 256, 512, 513)] == [0, 0, 1, 1, 2, 6, 7, 8]


def test_header_page_follows_the_sub_buffer_size():
    k = boot()
    k.tracing.instance_mkdir("foo")
    event = rd(k, "events/header_event")
    for kb in (4, 8, 16, 32):
        wr(k, "instances/foo/buffer_subbuf_size_kb", str(kb))
        page = rd(k, "instances/foo/events/header_page")
        assert "\tfield: char data;\toffset:16;\tsize:%d;\tsigned:0;\n" % (kb * 1024 - 16) in page
        assert rd(k, "instances/foo/events/header_event") == event
    assert "size:4080;" in rd(k, "events/header_page")         # the top-level array's own


def test_marker_cut_by_the_max_event_size_of_the_allocation():
    """6.12 sets the largest event once, when the buffer is allocated: a
    marker is cut at 4054 bytes whatever the sub-buffer size (and at 4096
    by trace_marker itself); the pieces make the whole string."""
    k = boot()
    for kb in (4, 8, 32):
        wr(k, "buffer_subbuf_size_kb", str(kb))
        size = kb * 1024 - 16
        text = b"X" * size + b"\n"
        wr(k, "trace", "")
        counts = write_all(k, "trace_marker", text)
        assert counts[0] == 4054 and sum(counts) == len(text)
        bodies = marker_bodies(k)
        assert len(bodies) == len(counts) and len(bodies[0]) == 4054
        assert "".join(bodies) == "X" * size


def test_order_change_drops_events_but_not_counts():
    k = boot()
    k.tracing.instance_mkdir("foo")
    p = "instances/foo/"
    for i in range(5):
        wr(k, p + "trace_marker", "hello %d" % i)
    assert len(marker_bodies(k, p)) == 5
    stats = rd(k, p + "per_cpu/cpu0/stats")
    wr(k, p + "buffer_subbuf_size_kb", "16")
    trace = rd(k, p + "trace")
    assert "tracing_mark_write" not in trace
    assert "# entries-in-buffer/entries-written: 5/5   #P:2\n" in trace
    after = rd(k, p + "per_cpu/cpu0/stats")
    assert after.split("oldest")[0] == stats.split("oldest")[0]      # entries, overrun, bytes
    # buffer_size_kb shows the size noted at the last resize
    assert rd(k, p + "buffer_size_kb") == "1410\n" and rd(k, p + "buffer_total_size_kb") == "2820\n"
    assert [cb.nr_pages for cb in k.tracing.instances["foo"].buffer.cpus] == [89, 89]
    wr(k, p + "buffer_size_kb", "1410")
    assert rd(k, p + "buffer_size_kb") == "1422\n"                   # 89 sub-buffers of 16368
    wr(k, p + "trace", "")
    assert "# entries-in-buffer/entries-written: 0/0   #P:2\n" in rd(k, p + "trace")


def test_unexpanded_buffer_keeps_its_two_sub_buffers():
    k = boot()
    wr(k, "buffer_subbuf_size_kb", "8")
    assert rd(k, "buffer_size_kb") == "7 (expanded: 1408)\n"
    wr(k, "buffer_size_kb", "1408")
    assert rd(k, "buffer_size_kb") == "1413\n"                        # 177 * 8176 bytes


def test_sub_buffer_memory_is_charged_in_pages():
    k = boot()
    k.tracing.instance_mkdir("foo")
    mem = k.tracing.buffer_memory()
    before = mem.available_pages()
    wr(k, "instances/foo/buffer_subbuf_size_kb", "8")      # 2 x 177 sub-buffers of 2 pages
    assert before - mem.available_pages() == 2 * (177 * 2 - 354)
    wr(k, "instances/foo/buffer_subbuf_size_kb", "32")     # ceil(177 * 8176 / 32752) = 45
    assert before - mem.available_pages() == 2 * (45 * 8 - 354)
    k.tracing.instance_rmdir("foo")
    assert mem.available_pages() == before + 2 * 354


def test_an_open_trace_reader_makes_size_changes_busy():
    k = boot()
    n, f = opened(k, "trace")
    try:
        assert errno_of(wr, k, "buffer_subbuf_size_kb", "8") == errno.EBUSY
        assert errno_of(wr, k, "buffer_size_kb", "100") == errno.EBUSY
        wr(k, "buffer_subbuf_size_kb", "4")                  # no change: fine
    finally:
        n.fops.release(f)
    n, f = opened(k, "per_cpu/cpu1/trace")
    try:
        wr(k, "per_cpu/cpu0/buffer_size_kb", "100")
        assert errno_of(wr, k, "per_cpu/cpu1/buffer_size_kb", "100") == errno.EBUSY
        assert errno_of(wr, k, "buffer_subbuf_size_kb", "8") == errno.EBUSY
    finally:
        n.fops.release(f)
    n, f = opened(k, "trace", os.O_WRONLY)                   # a writer is no reader
    try:
        wr(k, "buffer_subbuf_size_kb", "8")
    finally:
        n.fops.release(f)
    assert rd(k, "buffer_subbuf_size_kb") == "8\n"


def test_buffer_percent_read_write():
    k = boot()
    k.tracing.instance_mkdir("foo")
    for p in ("", "instances/foo/"):
        assert rd(k, p + "buffer_percent") == "50\n"
        for v in ("0", "100", "7\n"):
            wr(k, p + "buffer_percent", v)
            assert rd(k, p + "buffer_percent") == "%d\n" % int(v)
        for v, err in (("101", errno.EINVAL), ("-1", errno.EINVAL), ("x", errno.EINVAL),
                       (str(1 << 64), errno.ERANGE)):
            assert errno_of(wr, k, p + "buffer_percent", v) == err
        assert rd(k, p + "buffer_percent") == "7\n"


def test_per_cpu_trace_pipe_polls_at_the_watermark():
    k = boot()
    wr(k, "buffer_size_kb", "40")                         # 11 sub-buffers per CPU
    tr = k.tracing.global_trace
    cb = tr.buffer.cpus[0]
    n_cpu, f_cpu = opened(k, "per_cpu/cpu0/trace_pipe")
    n_all, f_all = opened(k, "trace_pipe")
    try:
        def ready(n, f):
            return bool(n.fops.poll(f) & POLLIN)
        assert not ready(n_cpu, f_cpu) and not ready(n_all, f_all)
        wr(k, "trace_marker", "one")                     # markers go to CPU 0 here
        assert ready(n_all, f_all) and not ready(n_cpu, f_cpu)
        wr(k, "buffer_percent", "0")
        assert ready(n_cpu, f_cpu)
        wr(k, "buffer_percent", "50")
        while (cb.dirty_pages() + 1) * 100 < 50 * cb.nr_pages:
            wr(k, "trace_marker", "x" * 1000)
        assert ready(n_cpu, f_cpu)
        wr(k, "buffer_percent", "100")
        assert not ready(n_cpu, f_cpu)
        wr(k, "options/block", "1")                       # every poll readable
        assert ready(n_cpu, f_cpu)
        wr(k, "options/block", "0")
        wr(k, "trace", "")
        assert not ready(n_all, f_all) and not ready(n_cpu, f_cpu)
        wr(k, "options/block", "1")
        assert ready(n_all, f_all)
    finally:
        n_cpu.fops.release(f_cpu)
        n_all.fops.release(f_all)


def test_trace_marker_raw_entries():
    k = boot()
    assert raw_data_shown(12 + 13) == 16          # 4 bytes written: 16 shown
    assert raw_data_shown(12 + 204) == 204        # 200 bytes: 4 of padding
    assert wr(k, "trace_marker_raw", "\x2a\x01\x00\x00ABCD") == 8
    data = b"\x07\x00\x00\x00" + bytes(range(200))
    assert write_all(k, "trace_marker_raw", data) == [204]
    lines = [ln for ln in rd(k, "trace").splitlines() if "# " in ln and " buf:" in ln]
    assert re.match(r"^ +\S+-\d+ +\[\d{3}\] \S{5} +\d+\.\d{6}: # 12a buf: 41 42 43 44( 00){12}$",
                    lines[0])
    assert lines[1].endswith(": # 7 buf:" + "".join(" %02x" % b for b in range(200)) + " 00" * 4)
    assert "name: raw_data\nID: 18\n" in rd(k, "events/ftrace/raw_data/format")


def test_trace_marker_raw_errors():
    k = boot()
    assert errno_of(wr, k, "trace_marker_raw", "abc") == errno.EINVAL        # no id
    assert write_all(k, "trace_marker_raw", b"\0" * 4060) == [4060]          # 12 + 4060 = 4072
    assert errno_of(write_all, k, "trace_marker_raw", b"\0" * 4061) == errno.EINVAL
    wr(k, "buffer_subbuf_size_kb", "16")                                      # not larger for that
    assert errno_of(write_all, k, "trace_marker_raw", b"\0" * 4061) == errno.EINVAL
    wr(k, "tracing_on", "0")
    assert errno_of(wr, k, "trace_marker_raw", "abcd") == errno.EBADF
    wr(k, "options/markers", "0")
    assert errno_of(wr, k, "trace_marker_raw", "abcd") == errno.EINVAL
    assert oct(node(k, "trace_marker_raw").mode & 0o777) == "0o220"


def test_saved_tgids_are_recorded_only_for_events_enabled_under_record_tgid():
    k = boot()
    assert rd(k, "saved_tgids") == ""
    wr(k, "options/record-tgid", "1")
    wr(k, "current_tracer", "function")
    k.clock.advance(50_000_000)
    trace = rd(k, "trace")
    # the function tracer alone records no tgid (no sched probe)
    assert rd(k, "saved_tgids") == ""
    assert "     TGID   " in trace and "(-------)" in trace
    wr(k, "current_tracer", "nop")
    wr(k, "events/sched/sched_switch/enable", "1")
    k.clock.advance(200_000_000)
    saved = rd(k, "saved_tgids")
    pairs = [tuple(map(int, ln.split())) for ln in saved.splitlines()]
    assert pairs and pairs == sorted(pairs)
    for pid, tgid in pairs:
        assert k.sched.find(pid).tgid == tgid
    body = [ln for ln in rd(k, "trace").splitlines() if "sched_switch:" in ln]
    m = re.match(r"^ *\S+-(\d+) +\( *(\d+|-------)\) \[", body[-1])
    assert m and dict(pairs).get(int(m.group(1))) == (int(m.group(2)) if m.group(2) != "-------" else None)
    # the event off: no more references, nothing more saved
    wr(k, "events/sched/sched_switch/enable", "0")
    assert k.tracing.tgids.ref == 0
    wr(k, "events/sched/sched_switch/enable", "1")         # enabled while record-tgid: counted
    assert k.tracing.tgids.ref == 1
    wr(k, "options/record-tgid", "0")                      # every enabled file drops one
    assert k.tracing.tgids.ref == 0
    assert oct(node(k, "saved_tgids").mode & 0o777) == "0o440"
    k.tracing.instance_mkdir("foo")                         # top level only
    assert k.tree.root.walk(TRACING + "instances/foo/saved_tgids") is None
    assert k.tree.root.walk(TRACING + "instances/foo/trace_marker_raw") is not None


def test_readme_lists_trace_marker_raw():
    k = boot()
    assert ("  trace_marker\t\t- Writes into this file writes into the kernel buffer\n\n"
            "  trace_marker_raw\t\t- Writes into this file writes binary data into the kernel buffer\n"
            "  tracing_cpumask\t- Limit which CPUs to trace\n") in rd(k, "README")


def test_free_buffer_while_trace_is_read_keeps_the_buffer():
    k = boot()
    wr(k, "buffer_size_kb", "100")
    n, f = opened(k, "trace")
    try:
        wr(k, "free_buffer", "1")            # the release's resize is EBUSY, ignored
        assert rd(k, "buffer_size_kb") == "103\n"      # 26 pages of 4080 bytes
    finally:
        n.fops.release(f)
    wr(k, "free_buffer", "1")
    assert rd(k, "buffer_size_kb") == "7\n"


def test_markers_the_buffer_refuses_are_ebadf():
    """tracing_mark_write()/tracing_mark_raw_write(): a failed reserve is
    EBADF (no trigger of ftrace/print runs): a reader paused the buffer
    (pause-on-trace), the writer's CPU is out of tracing_cpumask, the
    buffer is full without overwrite."""
    k = boot()
    wr(k, "trace_marker", "kept")
    wr(k, "options/pause-on-trace", "1")
    n, f = opened(k, "trace")
    try:
        assert errno_of(wr, k, "trace_marker", "paused") == errno.EBADF
        assert errno_of(wr, k, "trace_marker_raw", "abcd") == errno.EBADF
    finally:
        n.fops.release(f)
    wr(k, "events/ftrace/print/trigger", "traceoff")
    wr(k, "tracing_cpumask", "2")                       # markers come on CPU 0 here
    assert errno_of(wr, k, "trace_marker", "left out") == errno.EBADF
    assert errno_of(wr, k, "trace_marker_raw", "abcd") == errno.EBADF
    assert rd(k, "tracing_on") == "1\n"                 # the trigger did not run
    wr(k, "tracing_cpumask", "3")
    wr(k, "events/ftrace/print/trigger", "!traceoff")
    assert marker_bodies(k) == ["kept"]
    wr(k, "buffer_size_kb", "8")                        # 3 pages a CPU
    wr(k, "options/overwrite", "0")
    written = 0
    while written < 100:
        try:
            wr(k, "trace_marker", "x" * 1000)
        except KernelError as e:
            assert e.errno == errno.EBADF
            break
        written += 1
    assert 0 < written < 100
    assert errno_of(write_all, k, "trace_marker_raw", b"abcd" + b"y" * 1000) == errno.EBADF
    assert marker_bodies(k) == ["kept"] + ["x" * 1000] * written
