"""Event filters set through the files of a booted kernel (trace_events_filter.py):
event and subsystem filter files, error reports and error_log, instances,
filtered tracing."""

import errno
import os
import re

import event_filter_helpers
from event_filter_helpers import SW, boot, ev_of, node, rd, wr
from fakefs.kernel.trace import trace_events_filter as tef


kc, k = event_filter_helpers.kc, event_filter_helpers.k      # the shared kernel


# --- the files ------------------------------------------------------------------------------

def test_write_limits_and_read_offsets(k):
    assert wr(k, SW, "common_pid == 1" + " " * 4081) == -errno.EINVAL     # 4096 bytes
    assert rd(k, SW) == "none\n"
    assert wr(k, SW, "common_pid == 1" + " " * 4080) == 4095
    assert rd(k, SW) == "common_pid == 1\n"
    assert rd(k, SW, off=1) == ""             # only read at offset 0
    assert wr(k, SW, b"common_pid == 2\0garbage") == 23
    assert rd(k, SW) == "common_pid == 2\n"


def test_filter_files_exist_where_the_kernel_has_them(k):
    ev = node(k, "events")
    for sysname in ("sched", "kmem", "signal"):
        assert "filter" in ev.children[sysname].children
        assert ev.children[sysname].children["filter"].mode & 0o777 == 0o640
    assert node(k, SW).mode & 0o777 == 0o640
    assert "filter" not in ev.children["ftrace"].children
    assert "filter" not in node(k, "events/ftrace/print").children
    assert node(k, "events/sched/sched_switch/trigger").mode & 0o777 == 0o640
    assert node(k, "error_log").mode & 0o777 == 0o640


def test_error_log_format_and_truncation(k):
    wr(k, "error_log", "")
    assert rd(k, "error_log") == ""
    cmd = "((sig >= 10 && sig < 15) || dsig ^== 17) && comm != bash"
    pos = cmd.index("^")
    cmd = cmd.replace("^", "")
    assert wr(k, "events/signal/signal_generate/filter", cmd, os.O_WRONLY | os.O_APPEND) \
        == -errno.EINVAL
    log = rd(k, "error_log")
    assert "event filter parse error: error: Field not found\n" in log
    last = log.split("\n")[-2] + "\n"
    assert len(last) == 13 + pos                       # ftrace_errlog_check
    for i in range(10):
        wr(k, SW, "nope%d == 1" % i)
    log = rd(k, "error_log")
    assert log.count("  Command: ") == 8                # the last 8 are kept
    assert "nope1 ==" not in log and "nope2 ==" in log and "nope9 ==" in log
    assert wr(k, "error_log", "anything", os.O_WRONLY | os.O_APPEND) == 8   # ignored
    assert rd(k, "error_log") == log
    wr(k, "error_log", "\n")                            # echo > error_log
    assert rd(k, "error_log") == ""


def test_error_log_timestamp():
    k, clock = boot()
    clock.advance(12_345_678_901)
    wr(k, SW, "x == 1")
    assert rd(k, "error_log").startswith("[   12.345678] event filter parse error: error: ")


def test_subsystem_filter(k):
    sysf = "events/sched/filter"
    default = rd(k, sysf)
    assert default == tef.DEFAULT_SYS_FILTER_MESSAGE + "\n"
    wr(k, "error_log", "")
    assert wr(k, sysf, "prev_pid > 10\n") == 14          # succeeds even where it cannot
    assert rd(k, sysf) == default
    assert rd(k, SW) == "prev_pid > 10\n"
    bad = ("prev_pid > 10\n^\nparse_error: Couldn't find or set field in one of a "
           "subsystem's events\n\n")
    assert rd(k, "events/sched/sched_waking/filter") == bad
    assert rd(k, "events/sched/sched_wakeup/filter") == bad
    filters = k.tracing.global_trace.event_filters
    assert ev_of(k, "sched_switch") in filters and ev_of(k, "sched_waking") not in filters
    # one entry per event of the system without the field, the last 8 kept
    lacking = [ev for ev in k.tracing.events if ev.system == "sched"
               and not any(" prev_pid;" in line for line in ev.fields)]
    assert rd(k, "error_log").count("Couldn't find or set field") == min(len(lacking), 8)
    assert rd(k, "events/kmem/kfree/filter") == "none\n"
    # a common field: every event of the system gets it
    assert wr(k, sysf, "common_pid != 0") == 15
    for name in ("sched_switch", "sched_waking", "sched_wakeup"):
        assert rd(k, "events/sched/%s/filter" % name) == "common_pid != 0\n"
    # an event's own filter goes with "0" on the system
    wr(k, "events/sched/sched_waking/filter", "pid == 3")
    assert wr(k, sysf, "0") == 1
    for name in ("sched_switch", "sched_waking", "sched_wakeup"):
        assert rd(k, "events/sched/%s/filter" % name) == "none\n"
    assert not any(ev.system == "sched" for ev in filters)


def test_instances_have_their_own_filters_and_error_log(k):
    k.tracing.instance_mkdir("flt")
    try:
        wr(k, "error_log", "")
        assert wr(k, "instances/flt/" + SW, "common_pid == 7") == 15
        assert rd(k, SW) == "none\n"
        assert rd(k, "instances/flt/" + SW) == "common_pid == 7\n"
        assert wr(k, "instances/flt/" + SW, "bogus == 7") == -errno.EINVAL
        assert rd(k, "error_log") == ""
        assert "bogus == 7" in rd(k, "instances/flt/error_log")
        inst = k.tracing.instances["flt"]
        assert not inst.event_filters
        wr(k, "instances/flt/events/sched/filter", "prev_pid == 1")
        assert ev_of(k, "sched_switch") in inst.event_filters
        assert not k.tracing.global_trace.event_filters
    finally:
        k.tracing.instance_rmdir("flt")


def test_filtered_trace():
    k, clock = boot()
    assert wr(k, SW, "common_pid != 0 && prev_state == 1") == 34
    wr(k, "events/sched/sched_switch/enable", "1")
    clock.advance(200_000_000)
    lines = [ln for ln in rd(k, "trace").splitlines() if "sched_switch:" in ln]
    assert len(lines) > 20
    for ln in lines:
        assert "prev_state=S " in ln and not re.match(r"^\s*<idle>-0 ", ln), ln
    # cleared: idle switches and other states come back
    wr(k, "trace", "")
    assert wr(k, SW, "0") == 1
    clock.advance(200_000_000)
    text = rd(k, "trace")
    assert re.search(r"prev_pid=0 ", text) and re.search(r"prev_state=[^S]", text)


def test_filter_applies_from_the_write_on():
    """Events that happened before the write were recorded unfiltered."""
    k, clock = boot()
    wr(k, "events/sched/sched_switch/enable", "1")
    clock.advance(100_000_000)
    wr(k, SW, "prev_pid == 99999")
    clock.advance(100_000_000)
    times = [float(m) for m in re.findall(r" (\d+\.\d+): sched_switch", rd(k, "trace"))]
    assert times and max(times) <= 0.1


def test_signal_generate_event(k):
    fmt = rd(k, "events/signal/signal_generate/format")
    assert "\tfield:char comm[16];\toffset:20;\tsize:16;\tsigned:0;\n" in fmt
    assert fmt.endswith('print fmt: "sig=%d errno=%d code=%d comm=%s pid=%d grp=%d res=%d", '
                        "REC->sig, REC->errno, REC->code, REC->comm, REC->pid, REC->group, "
                        "REC->result\n")
    assert "signal:signal_generate\n" in rd(k, "available_events")
