"""The tracing subsystem of a booted simulated kernel, through its file operations."""

import errno
import os
import re

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, node, rd, wr


def boot(cmdline="", nr_cpus=2, **kw):
    clock = ManualClock()
    k = sim.boot(cmdline=cmdline, seed=7, nr_cpus=nr_cpus, clock=clock, **kw)
    return k, clock


def test_defaults_and_header():
    k, _ = boot()
    assert rd(k, "tracing_on") == "1\n"
    assert rd(k, "current_tracer") == "nop\n"
    assert rd(k, "available_tracers") == ("function_graph wakeup_dl wakeup_rt wakeup preemptirqsoff "
                                          "preemptoff irqsoff function nop\n")
    assert rd(k, "buffer_size_kb") == "7 (expanded: 1408)\n"
    assert rd(k, "buffer_total_size_kb") == "14 (expanded: 2816)\n"
    t = rd(k, "trace")
    assert t.startswith("# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:2\n#\n")
    assert "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n" in t
    opts = rd(k, "trace_options").split()
    assert opts.index("nostacktrace") + 1 == opts.index("nostackmap")
    assert rd(k, "options/stackmap") == "0\n"


def test_boot_options_and_bits():
    k, _ = boot("trace_options=stackmap,stacktrace ftrace_stackmap.bits=12 bogus=1")
    assert rd(k, "options/stackmap") == "1\n" and rd(k, "options/stacktrace") == "1\n"
    assert rd(k, "stack_map_stat").startswith("entries: 0 / 4096\ntable_size: 8192\n")
    assert 'Unknown kernel command line parameters "bogus=1"' in k.log.dmesg()
    k2, _ = boot("ftrace_stackmap.bits=40")
    assert "/ 262144\n" in rd(k2, "stack_map_stat")
    k3, _ = boot("ftrace_stackmap.bits=junk")
    assert "/ 16384\n" in rd(k3, "stack_map_stat")


def test_function_tracer_with_stackmap_end_to_end():
    # (at a rate whose second of calls the buffer holds: every lookup shows)
    k, clock = boot("fakefs.fn_rate=4000")
    wr(k, "options/stackmap", "1\n")
    wr(k, "options/stacktrace", "1\n")
    wr(k, "current_tracer", "function\n")
    clock.advance(1_000_000_000)
    wr(k, "tracing_on", "0\n")
    trace = rd(k, "trace")
    ids = [int(m) for m in re.findall(r"<stack_id (\d+)>", trace)]
    calls = re.findall(r"^\s+\S+-\d+\s+\[\d{3}\] \S{5}\s+\d+\.\d{6}: \S+ <-\S+$", trace, re.M)
    assert len(ids) > 1000 and len(ids) == len(calls)
    stat = rd(k, "stack_map_stat")
    fields = dict(l.split(": ", 1) for l in stat.splitlines())
    assert int(fields["successes"]) == len(ids) and fields["drops"] == "0"
    smap = rd(k, "stack_map")
    listed = set(int(m) for m in re.findall(r"^stack_id (\d+) \[ref \d+, depth \d+\]$", smap, re.M))
    assert set(ids) <= listed
    assert int(fields["entries"].split(" / ")[0]) == len(listed)
    assert re.search(r"^    \[0\] \S+\+0x[0-9a-f]+/0x[0-9a-f]+$", smap, re.M)
    # reset refused while tracing, accepted when stopped
    wr(k, "tracing_on", "1\n")
    assert errno_of(wr, k, "stack_map", "0\n") == errno.EBUSY
    wr(k, "tracing_on", "0\n")
    assert errno_of(wr, k, "stack_map", "2\n") == errno.EINVAL
    wr(k, "stack_map", "reset\n")
    assert rd(k, "stack_map_stat").startswith("entries: 0 / 16384\n")


def test_stacktrace_without_stackmap_records_full_stacks():
    k, clock = boot("trace_options=stacktrace ftrace=function")
    clock.advance(100_000_000)
    trace = rd(k, "trace")
    assert "<stack trace>\n => " in trace and "<stack_id" not in trace


def test_tracer_change_resets_buffer_and_o_trunc_clears():
    k, clock = boot("ftrace=function")
    clock.advance(50_000_000)
    k.timekeeper.run_until_now()
    assert k.tracing.global_trace.buffer.entries() > 0
    wr(k, "current_tracer", "nop\n")
    assert k.tracing.global_trace.buffer.entries() == 0
    wr(k, "current_tracer", "function\n")
    clock.advance(50_000_000)
    k.timekeeper.run_until_now()
    assert k.tracing.global_trace.buffer.entries() > 0
    wr(k, "trace", "", os.O_WRONLY | os.O_APPEND)
    assert k.tracing.global_trace.buffer.entries() > 0
    wr(k, "trace", "")
    assert k.tracing.global_trace.buffer.entries() == 0


def test_control_file_errnos():
    k, _ = boot()
    assert errno_of(wr, k, "current_tracer", "blah\n") == errno.EINVAL
    assert errno_of(wr, k, "options/stackmap", "2\n") == errno.EINVAL
    assert errno_of(wr, k, "options/stackmap", "x\n") == errno.EINVAL
    assert errno_of(wr, k, "trace_options", "nosuchopt\n") == errno.EINVAL
    assert errno_of(wr, k, "buffer_size_kb", "0\n") == errno.EINVAL
    assert errno_of(wr, k, "stack_map_stat", "0\n") == errno.EINVAL
    wr(k, "trace_options", "stackmap\n")
    assert rd(k, "options/stackmap") == "1\n"
    wr(k, "trace_options", "nostackmap")
    assert rd(k, "options/stackmap") == "0\n"
    wr(k, "buffer_size_kb", "1000\n")
    assert rd(k, "buffer_size_kb") == "1000\n" and rd(k, "per_cpu/cpu1/buffer_size_kb") == "1000\n"


def test_stackmap_is_top_level_only():
    k, _ = boot()
    top = k.tree.root.walk("sys/kernel/tracing")
    top.children["instances"].dops.mkdir(top.children["instances"], "foo")
    inst = top.walk("instances/foo")
    assert inst.walk("options/stacktrace") is not None
    assert inst.walk("options/stackmap") is None
    for name in ("stack_map", "stack_map_stat", "stack_map_bin", "README"):
        assert inst.walk(name) is None
    assert rd(k, "instances/foo/current_tracer") == "nop\n"


def test_no_stackmap_files_without_config():
    k, _ = boot(config_overrides={"FTRACE_STACKMAP": False})
    top = k.tree.root.walk("sys/kernel/tracing")
    assert top.walk("stack_map") is None and top.walk("options/stackmap") is None
    assert "stackmap" not in rd(k, "trace_options")


def test_trace_pipe_consumes():
    k, clock = boot()
    wr(k, "trace_marker", "one\n")
    n = node(k, "trace_pipe")
    f = File(n, os.O_RDONLY | os.O_NONBLOCK)
    n.fops.open(f)
    out = n.fops.read(f, 0, 4096).decode()
    assert out.endswith("tracing_mark_write: one\n")
    from fakefs.kernel.fs.pseudo import WouldBlock
    with pytest.raises(WouldBlock):
        n.fops.read(f, 0, 4096)
    wr(k, "tracing_on", "0\n")
    assert n.fops.read(f, 0, 4096) == b""      # EOF: read something, tracing off


def test_idle_kernel_does_no_work():
    k, clock = boot()                   # nop tracer
    clock.advance(10 * 1_000_000_000)
    k.timekeeper.run_until_now()
    assert k.tracing.global_trace.buffer.entries() == 0


def test_events_with_stacktrace_go_through_the_stackmap():
    k, clock = boot("trace_options=stackmap,stacktrace")
    wr(k, "events/kmem/kmem_cache_alloc/enable", "1\n")
    wr(k, "set_event", "sched:sched_switch\n", os.O_WRONLY | os.O_APPEND)
    assert rd(k, "set_event") == "sched:sched_switch\nkmem:kmem_cache_alloc\n"
    assert rd(k, "events/sched/enable") == "X\n" and rd(k, "events/enable") == "X\n"
    clock.advance(1_000_000_000)
    wr(k, "tracing_on", "0\n")
    trace = rd(k, "trace")
    allocs = re.findall(r"kmem_cache_alloc: call_site=\S+\+0x[0-9a-f]+/0x[0-9a-f]+ ptr=[0-9a-f]{16} "
                        r"bytes_req=\d+ bytes_alloc=\d+ gfp_flags=\S+ node=-?\d+ accounted=(?:true|false)$",
                        trace, re.M)
    switches = re.findall(r"sched_switch: prev_comm=.* prev_pid=\d+ prev_prio=\d+ prev_state=\S+ "
                          r"==> next_comm=.* next_pid=\d+ next_prio=\d+$", trace, re.M)
    ids = re.findall(r"<stack_id (\d+)>", trace)
    assert allocs and switches
    assert len(ids) == len(allocs) + len(switches)
    fields = dict(l.split(": ", 1) for l in rd(k, "stack_map_stat").splitlines())
    assert int(fields["successes"]) == len(ids)
    # O_TRUNC on set_event disables everything
    wr(k, "set_event", "")
    assert rd(k, "set_event") == "" and rd(k, "events/enable") == "0\n"
    assert errno_of(wr, k, "set_event", "nosuch:event\n") == errno.EINVAL
    wr(k, "set_event", "kmem\n")
    assert rd(k, "events/kmem/enable") == "1\n"
    assert "kmem:kfree\n" in rd(k, "available_events")
    fmt = rd(k, "events/sched/sched_switch/format")
    assert fmt.startswith("name: sched_switch\nID: %s\nformat:\n" % rd(k, "events/sched/sched_switch/id").strip())


def test_pause_on_trace_stops_recording_while_trace_is_open():
    k, clock = boot("ftrace=function")
    wr(k, "options/pause-on-trace", "1\n")
    n = node(k, "trace")
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    before = k.tracing.global_trace.buffer.total_written()
    clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    assert k.tracing.global_trace.buffer.total_written() == before
    assert rd(k, "tracing_on") == "1\n"               # paused is not "off"
    n.fops.release(f)
    clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    assert k.tracing.global_trace.buffer.total_written() > before


def test_trace_read_in_pieces_is_one_snapshot():
    k, clock = boot("ftrace=function")
    clock.advance(20_000_000)               # ~1.7 MB of text: ~440 pieces
    n = node(k, "trace")
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    parts, off = [], 0
    while True:
        b = n.fops.read(f, off, 4000)
        if not b:
            break
        parts.append(b)
        off += len(b)
        clock.advance(1_000_000)            # the kernel keeps tracing meanwhile
        k.timekeeper.run_until_now()
    text = b"".join(parts).decode()
    entries = int(re.search(r"entries-in-buffer/entries-written: (\d+)/", text).group(1))
    assert entries == sum(1 for l in text.splitlines() if l and not l.startswith("#"))
    assert n.fops.read(f, off, 1000) == b""


def test_a_long_gaps_skipped_time_counts_as_overrun():
    k, clock = boot("ftrace=function")
    clock.advance(1_000_000_000)
    k.timekeeper.run_until_now()
    buf = k.tracing.global_trace.buffer
    first = buf.total_written()
    clock.advance(40_000_000_000)         # nobody looks for 40 s
    k.timekeeper.run_until_now()
    skipped = sum(cb.overrun for cb in buf.cpus)
    assert buf.total_written() > first + 10 * 4000 * 2  # the skipped time is counted
    assert skipped >= first                              # the old entries were overwritten
    # what the buffer holds is the end of the stretch (its window)
    assert all(e[0] >= clock.t - 10_000_000_000 for e in merged(buf))


def merged(buf):
    return [e for cb in buf.cpus for e in cb.events()]


def test_unrecorded_switches_and_wakeup_events_without_a_machine():
    """Regression: the unrecorded-switch stream once shared its occurrence id
    with the machine's hits, and catch-up raised for ever after."""
    from fakefs.sim.clock import ManualClock
    from fakefs.kernel.fs.pseudo import File
    import os as _os
    k = sim.boot(host_kallsyms=False, clock=ManualClock(), nr_cpus=2)
    node = k.tree.root.walk("sys/kernel/tracing/events/sched/sched_waking/enable")
    f = File(node, _os.O_WRONLY)
    node.fops.open(f)
    node.fops.write(f, b"1")
    k.clock.advance(200_000_000)
    k.timekeeper.run_until_now()
    assert k.sim_time == 200_000_000


def test_trace_pipe_tells_what_was_lost():
    """After the writer overwrote what a consuming reader had not read, the
    next line says so (print_trace_line: ``CPU:N [LOST M EVENTS]``)."""
    import os as _os
    from fakefs.kernel.fs.pseudo import File, WouldBlock
    from fakefs.sim.clock import ManualClock
    # (a rate at which 8 KB hold the first 5 ms)
    k = sim.boot(host_kallsyms=False, clock=ManualClock(), nr_cpus=1, cmdline="fakefs.fn_rate=4000")
    T = "sys/kernel/tracing/"

    def wr(path, data):
        n = k.tree.root.walk(T + path)
        f = File(n, _os.O_WRONLY | _os.O_TRUNC)
        n.fops.open(f)
        n.fops.write(f, data)

    wr("buffer_size_kb", b"8")
    wr("current_tracer", b"function")
    n = k.tree.root.walk(T + "trace_pipe")
    f = File(n, _os.O_RDONLY)
    n.fops.open(f)
    k.clock.advance(5_000_000)
    k.timekeeper.run_until_now()                        # (the caller brings the machine to its instant)
    first = n.fops.read(f, 0, 4096).decode()
    assert "LOST" not in first.splitlines()[0]
    k.clock.advance(2_000_000_000)           # far more than 8 KB of calls
    k.timekeeper.run_until_now()
    text = b""
    try:
        while len(text) < 65536:
            text += n.fops.read(f, 0, 4096)
    except WouldBlock:
        pass
    lines = text.decode().splitlines()
    lost = [ln for ln in lines if ln.startswith("CPU:0 [LOST ")]
    assert lost and int(lost[0].split()[2]) > 0
    cb = k.tracing.global_trace.buffer.cpus[0]
    assert cb.overrun >= int(lost[0].split()[2])


def test_a_tracepoint_is_probed_while_any_array_records_it():
    k, _ = boot()
    tp = k.tracepoints.get("sched_waking")
    assert not tp.probes
    wr(k, "events/sched/sched_waking/enable", "1\n")
    k.tracing.instance_mkdir("one")
    wr(k, "instances/one/events/sched/sched_waking/enable", "1\n")
    assert len(tp.probes) == 1                      # one probe, two users
    wr(k, "events/sched/sched_waking/enable", "0\n")
    assert tp.probes
    k.tracing.instance_rmdir("one")                 # its events go with it
    assert not tp.probes and k.tracing.tracepoint_users == {}
    # the syscall events share two tracepoints
    wr(k, "events/syscalls/sys_enter_read/enable", "1\n")
    wr(k, "events/raw_syscalls/sys_enter/enable", "1\n")
    wr(k, "events/syscalls/sys_enter_read/enable", "0\n")
    assert k.tracepoints.get("sys_enter").probes
    wr(k, "events/raw_syscalls/sys_enter/enable", "0\n")
    assert not k.tracepoints.get("sys_enter").probes
    assert k.tracepoints.get("sched_switch").probes  # followed always


def test_nop_refuses_test_nop_refuse_either_way():
    """nop_set_flag() refuses the option whenever trace_options asks it;
    options/test_nop_refuse asks only for a change."""
    k, _ = boot()
    for text in ("test_nop_refuse", "notest_nop_refuse"):
        assert errno_of(wr, k, "trace_options", text) == errno.EINVAL
    assert wr(k, "options/test_nop_refuse", "0") == 1
    assert errno_of(wr, k, "options/test_nop_refuse", "1") == errno.EINVAL
    wr(k, "trace_options", "test_nop_accept")
    assert "test_nop_accept\nnotest_nop_refuse\n" in rd(k, "trace_options")
    said = [(r.level, r.text) for r in k.log.records if "nop_test" in r.text]
    assert said[-2:] == [
        (7, "nop_test_refuse flag set to 1: we refuse. Now cat trace_options to see the result"),
        (7, "nop_test_accept flag set to 1: we accept. Now cat trace_options to see the result")]


def test_set_event_takes_one_word_per_write():
    """Measured on a stock kernel: 19 bytes of the 37 are taken."""
    k, _ = boot()
    assert wr(k, "set_event", "sched:sched_switch sched:sched_wakeup") == 19
    assert rd(k, "set_event") == "sched:sched_switch\n"


@pytest.mark.parametrize("text,err,after", [
    ("1,2", errno.EOVERFLOW, "3\n"), ("4", errno.EOVERFLOW, "3\n"), ("x", errno.EINVAL, "3\n"),
    ("\n", 0, "0\n"), ("2", 0, "2\n")])
def test_tracing_cpumask_is_a_bitmap_of_existing_cpus(text, err, after):
    """What a stock 2-CPU kernel answers (a refused write changes nothing)."""
    k, _ = boot()
    if err:
        assert errno_of(wr, k, "tracing_cpumask", text) == err
    else:
        wr(k, "tracing_cpumask", text)
    assert rd(k, "tracing_cpumask") == after


def test_buffer_size_kb_answers_as_6_12_does():
    """The same writes as sent to this machine's stock tracefs (an instance):
    errno and what buffer_size_kb reads back after each."""
    k, _ = boot()
    table = [("100000000", errno.ENOMEM, "7"),          # more than the machine has: nothing changes
             (str(2**54), None, "7"),                  # KB << 10 wraps to 0: the 2-page minimum
             (str(2**53), errno.ENOMEM, "7"),
             (str(2**64), errno.ERANGE, "7"),
             ("0", errno.EINVAL, "7"), ("-1", errno.EINVAL, "7"), (" 12", errno.EINVAL, "7"),
             ("12abc", errno.EINVAL, "7"), ("0x10", errno.EINVAL, "7"),
             ("12\n", None, "15"), ("4194304", None, "4194307"), ("10000000", errno.ENOMEM, "4194307"),
             ("2000", None, "2000"),
             (str(2**64 - 1), None, "7"),               # << 10, + 4079 wraps: DIV_ROUND_UP gives 0 pages
             ("2000", None, "2000"), (str(2**54 - 3), None, "7"),
             ("2000", None, "2000"), (str(2**54 - 4), errno.ENOMEM, "2000")]
    for value, err, after in table:
        if err is None:
            wr(k, "buffer_size_kb", value)
        else:
            assert errno_of(wr, k, "buffer_size_kb", value) == err, value
        assert rd(k, "buffer_size_kb") == after + "\n", value


def test_buffer_pages_come_from_the_machine_memory():
    k, _ = boot()
    pa = k.page_alloc
    site = "kernel/trace/ring_buffer.c:2207 func:__rb_allocate_pages"

    def charged():
        line = [ln for ln in rd(k, "allocinfo", base="proc/").splitlines() if ln.endswith(site + " ")]
        return int(line[0].split()[0])

    base, avail = charged(), pa.si_mem_available()
    wr(k, "buffer_size_kb", "4080")      # 1024 pages per CPU: 1022 more than the boot's 2
    assert charged() == base + 2 * 1022 * 4096
    assert pa.si_mem_available() == avail - 2 * 1022
    wr(k, "per_cpu/cpu1/buffer_size_kb", "40")            # 11 pages: 1013 back
    assert pa.si_mem_available() == avail - 1022 - 9
    # an instance takes its default buffer, and gives it back when removed
    free = pa.si_mem_available()
    k.tracing.instance_mkdir("a")
    assert pa.si_mem_available() == free - 2 * 354
    k.tracing.instance_rmdir("a")
    assert pa.si_mem_available() == free
    wr(k, "free_buffer", "1")                              # back to 2 pages per CPU
    assert pa.si_mem_available() == avail and charged() == base
    # nor can an instance be made when its buffer does not fit
    pages = (pa.si_mem_available() - 300) // 2 + 2         # leaves 300 pages
    wr(k, "buffer_size_kb", str(pages * 4080 // 1024))
    assert 0 < pa.si_mem_available() < 2 * 354
    with pytest.raises(KernelError) as e:
        k.tracing.instance_mkdir("b")
    assert e.value.errno == errno.ENOMEM and "b" not in k.tracing.instances


def test_tracing_on_depends_on_the_machine_only_with_probes():
    k, _ = boot()
    fops = node(k, "tracing_on").fops
    assert not fops.observes
    wr(k, "set_ftrace_filter", "kernel_clone:traceoff")
    assert fops.observes
    wr(k, "set_ftrace_filter", "!kernel_clone:traceoff", os.O_WRONLY | os.O_APPEND)
    assert not fops.observes


def test_rmdir_of_an_instance_with_a_file_open_is_ebusy():
    """Measured on the stock kernel: every file of an instance pins it while
    open, except options/* and an event's format, id and trigger."""
    k, _ = boot()
    pinning = ["available_tracers", "buffer_size_kb", "buffer_total_size_kb", "current_tracer",
               "error_log", "free_buffer", "per_cpu/cpu0/stats", "per_cpu/cpu0/trace",
               "per_cpu/cpu0/buffer_size_kb", "set_event", "set_ftrace_filter",
               "timestamp_mode", "trace", "trace_clock", "trace_marker", "trace_options",
               "trace_pipe", "tracing_cpumask", "tracing_on", "events/enable", "events/sched/enable",
               "events/sched/filter", "events/sched/sched_switch/enable",
               "events/sched/sched_switch/filter"]
    free = ["options/overwrite", "events/sched/sched_switch/format",
            "events/sched/sched_switch/id"]
    for path in pinning + free:
        k.tracing.instance_mkdir("pin")
        n = node(k, "instances/pin/" + path)
        f = File(n, os.O_RDONLY | os.O_NONBLOCK)
        n.fops.open(f)
        if path in pinning:
            with pytest.raises(KernelError) as e:
                k.tracing.instance_rmdir("pin")
            assert e.value.errno == errno.EBUSY, path
            n.fops.release(f)
            k.tracing.instance_rmdir("pin")
        else:
            k.tracing.instance_rmdir("pin")
            n.fops.release(f)
        assert "pin" not in k.tracing.instances, path


def test_buffer_pages_of_boot_are_not_counted_twice():
    """A buffer expanded during boot (ftrace=function) has its pages in the
    allocator's boot replay: shrinking it later gives back none of the pages
    an instance holds."""
    k, _ = boot("ftrace=function")
    assert k.tracing.global_trace.expanded
    pa = k.page_alloc
    avail = pa.si_mem_available()
    k.tracing.instance_mkdir("a")
    wr(k, "buffer_size_kb", "7")
    assert pa.si_mem_available() == avail - 2 * 354
    k.tracing.instance_rmdir("a")
    assert pa.si_mem_available() == avail


def test_trace_printk_dest_belongs_to_one_array():
    k, _ = boot()
    inst = k.tree.root.walk("sys/kernel/tracing/instances")
    inst.dops.mkdir(inst, "pd")
    assert rd(k, "options/trace_printk_dest") == "1\n"
    assert rd(k, "instances/pd/options/trace_printk_dest") == "0\n"
    assert errno_of(wr, k, "options/trace_printk_dest", "0") == errno.EINVAL
    wr(k, "instances/pd/options/trace_printk_dest", "1")
    assert rd(k, "options/trace_printk_dest") == "0\n"        # taken from the top level
    wr(k, "options/trace_printk_dest", "0")                    # already 0: fine
    wr(k, "instances/pd/options/trace_printk_dest", "0")       # given back
    assert rd(k, "options/trace_printk_dest") == "1\n"
    wr(k, "instances/pd/options/trace_printk_dest", "1")
    inst.dops.rmdir(inst, "pd")                                 # and on removal
    assert rd(k, "options/trace_printk_dest") == "1\n"
    assert k.tracing.printk_trace is k.tracing.global_trace


def test_instance_mkdir_and_rmdir_catch_up_only_where_the_machine_is_recorded():
    """A new instance records nothing of the past: made without catching
    up.  Removing one waits for the machine only if the instance records
    what it does (a tracer, events, triggers)."""
    k, _ = boot()
    inst = k.tracing.root.children["instances"]
    assert not inst.dops.observes(inst, "a")            # mkdir
    inst.dops.mkdir(inst, "a")
    assert not inst.dops.observes(inst, "a")            # markers only
    wr(k, "instances/a/events/sched/sched_switch/enable", "1")
    assert inst.dops.observes(inst, "a")
    wr(k, "instances/a/events/sched/sched_switch/enable", "0")
    assert not inst.dops.observes(inst, "a")
    wr(k, "instances/a/current_tracer", "function")
    assert inst.dops.observes(inst, "a")
    wr(k, "instances/a/current_tracer", "nop")
    wr(k, "instances/a/events/sched/sched_switch/trigger", "traceoff")
    assert inst.dops.observes(inst, "a")
