"""Inter-event hist triggers (trace_events_hist_actions.py): variables read
by other triggers, onmatch/onmax/onchange with trace/save/snapshot, the
synthetic events they generate, as 6.12's trace_events_hist.c does them."""

import errno
import re

import pytest

import ftrace_helpers
from ftrace_helpers import APPEND, MS
from kfiles import errno_of, rd, reset_triggers, wr

WAKING = "events/sched/sched_waking/"
SWITCH = "events/sched/sched_switch/"
LAT = "events/synthetic/wakeup_latency/"


booted = ftrace_helpers.booted              # the shared kernel


@pytest.fixture
def k(booted):
    k, _clock = booted
    wr(k, "error_log", "\n")
    yield k
    for tr_ev in list(k.tracing.global_trace.event_triggers):
        if tr_ev.system == "synthetic":
            path = "events/synthetic/%s/trigger" % tr_ev.name
            for line in rd(k, path).splitlines():
                wr(k, path, "!" + line.split("[")[0] + "\n", APPEND)
    # action triggers first, as the selftests' reset_trigger_file() does
    for tr_ev in list(k.tracing.global_trace.event_triggers):
        path = "events/%s/%s/trigger" % (tr_ev.system, tr_ev.name)
        for line in rd(k, path).splitlines():
            if ":on" in line:
                wr(k, path, "!" + line.split("[")[0] + "\n", APPEND)
    reset_triggers(k, flags=APPEND)
    wr(k, "events/enable", "0\n")
    wr(k, "synthetic_events", "\n")
    wr(k, "trace", "\n")
    wr(k, "tracing_on", "1\n")


@pytest.fixture
def clock(booted):
    return booted[1]


def last_error(k):
    lines = rd(k, "error_log").splitlines()
    return lines[-3].split(": error: ")[1], lines[-2][len("  Command: "):], len(lines[-1]) - 12


def ts(line):
    return float(re.search(r"(\d+\.\d+): ", line).group(1))


def wakeup_latency(k):
    wr(k, "synthetic_events", "wakeup_latency u64 lat; pid_t pid; char comm[16]\n")
    wr(k, WAKING + "trigger", "hist:keys=pid:ts0=common_timestamp.usecs\n")
    wr(k, SWITCH + "trigger",
       "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
       "onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_comm)\n", APPEND)


def test_wakeup_latency_matches_the_trace(k, clock):
    wakeup_latency(k)
    wr(k, LAT + "trigger", "hist:keys=pid,lat:sort=pid,lat\n")
    for ev in (LAT, WAKING, SWITCH):
        wr(k, ev + "enable", "1\n")
    clock.advance(200 * MS)
    wr(k, "tracing_on", "0\n")
    lines = rd(k, "trace").splitlines()
    checked = 0
    for i, line in enumerate(lines):
        m = re.search(r"wakeup_latency: lat=(\d+) pid=(\d+) comm=(\S+)$", line)
        if m is None:
            continue
        lat, pid = int(m.group(1)), m.group(2)
        # it follows the switch to that task, same instant
        assert "next_pid=%s " % pid in lines[i - 1] and ts(lines[i - 1]) == ts(line)
        assert "next_comm=%s " % m.group(3) in lines[i - 1]
        for j in range(i - 1, -1, -1):
            if re.search(r"sched_waking: comm=\S+ pid=%s " % pid, lines[j]):
                assert abs(round((ts(line) - ts(lines[j])) * 1e6) - lat) <= 1, (lines[j], line)
                checked += 1
                break
    assert checked > 10
    hist = rd(k, LAT + "hist")
    assert "# trigger info: hist:keys=pid,lat:vals=hitcount:sort=pid,lat:size=2048 [active]\n" in hist
    n = len(re.findall(r"wakeup_latency: lat=", "\n".join(lines)))
    assert int(re.search(r"Hits: (\d+)", hist).group(1)) == n


def test_listing_and_removal_order(k):
    wakeup_latency(k)
    assert rd(k, SWITCH + "trigger") == (
        "hist:keys=next_pid:vals=hitcount:wakeup_lat=common_timestamp.usecs-$ts0:sort=hitcount:"
        "size=2048:clock=global:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,"
        "next_comm) [active]\n")
    # ts0 is referenced: its trigger cannot go, nor the synthetic event
    assert errno_of(wr, k, WAKING + "trigger", "!hist:keys=pid:ts0=common_timestamp.usecs\n",
                    APPEND) == errno.EBUSY
    # O_TRUNC leaves them all (then the empty command is refused)
    assert errno_of(wr, k, WAKING + "trigger", "\n") == errno.EINVAL
    assert "ts0=" in rd(k, WAKING + "trigger")
    assert errno_of(wr, k, "synthetic_events", "!wakeup_latency\n", APPEND) == errno.EBUSY
    line = rd(k, SWITCH + "trigger").split("[")[0]
    wr(k, SWITCH + "trigger", "!" + line + "\n", APPEND)
    assert "hist:" not in rd(k, SWITCH + "trigger")
    wr(k, WAKING + "trigger", "!hist:keys=pid:ts0=common_timestamp.usecs\n", APPEND)
    wr(k, "synthetic_events", "!wakeup_latency\n", APPEND)


def test_onmax_save_and_onchange(k, clock):
    wr(k, WAKING + "trigger", "hist:keys=pid:ts0=common_timestamp.usecs\n")
    wr(k, SWITCH + "trigger", "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
                              "onmax($wakeup_lat).save(next_comm,prev_pid)\n", APPEND)
    wr(k, WAKING + "trigger", "hist:keys=comm:newprio=prio:onchange($newprio).save(comm,prio)\n",
       APPEND)
    clock.advance(100 * MS)
    hist = rd(k, SWITCH + "hist")
    rows = re.findall(r"\{ next_pid: +(\d+) \} hitcount: +(\d+)\n\tmax: +(\d+)  next_comm: (.{32})"
                      r"  prev_pid: +(\d+)\n", hist)
    assert rows and all(int(m) > 0 for _p, _h, m, _c, _pp in rows)
    assert ":onmax($wakeup_lat).save(next_comm,prev_pid) [active]" in hist
    assert re.search(r"\tchanged: +\d+  comm: .{32}  prio: +120\n", rd(k, WAKING + "hist"))


def test_onmax_trace_with_a_stack(k, clock):
    wr(k, "dynamic_events", "s:wake_lat pid_t pid; u64 delta; unsigned long[] stack;\n")
    wr(k, SWITCH + "trigger", "hist:keys=next_pid:ts=common_timestamp.usecs,st=common_stacktrace "
                              " if prev_state == 1||prev_state == 2\n", APPEND)
    wr(k, SWITCH + "trigger", "hist:keys=prev_pid:delta=common_timestamp.usecs-$ts,s=$st:"
                              "onmax($delta).trace(wake_lat,prev_pid,$delta,$s)\n", APPEND)
    assert ",s=$st:" in rd(k, SWITCH + "trigger")
    wr(k, "events/synthetic/wake_lat/enable", "1\n")
    clock.advance(300 * MS)
    wr(k, "tracing_on", "0\n")
    text = rd(k, "trace")
    m = re.search(r"wake_lat: pid=\d+ delta=\d+ stack=STACK:\n((=> .*\n)+)", text)
    assert m is not None and "schedule" in m.group(1)


def test_trace_marker_latency(k, clock):
    wr(k, "synthetic_events", "latency u64 lat\n")
    p = "events/ftrace/print/trigger"
    wr(k, p, 'hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"\n')
    wr(k, p, 'hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:'
             'onmatch(ftrace.print).latency($lat) if buf == "end"\n', APPEND)
    wr(k, "events/synthetic/latency/enable", "1\n")
    wr(k, "trace_marker", "start")
    clock.advance(3 * MS)
    wr(k, "trace_marker", "end")
    lines = [x for x in rd(k, "trace").splitlines() if not x.startswith("#")]
    assert lines[-2].endswith("tracing_mark_write: end")
    assert lines[-1].endswith("latency: lat=%d" % round((ts(lines[-2]) - ts(lines[-3])) * 1e6))


@pytest.mark.parametrize("cmd,err,where", [
    ("hist:keys=next_pid:onmatch(sched.sched_waking).nosuch($x)", "Couldn't find synthetic event",
     "nosuch"),
    ("hist:keys=next_pid:onmatch(sched.sched_waking).trace(lat2,next_pid)",
     "Param count doesn't match synthetic event field count", "lat2"),
    ("hist:keys=next_pid:onmatch(sched.sched_waking).trace(lat2,$nosuch,next_pid)",
     "Couldn't find param", "nosuch"),
    ("hist:keys=next_pid:onmatch(sched.sched_waking).trace(lat2,next_comm,next_pid)",
     "Param type doesn't match synthetic event field type", "next_comm"),
    ("hist:keys=next_pid:onmax($nosuch).save(prev_pid)", "Couldn't find onmax or onchange variable",
     "nosuch"),
    ("hist:keys=next_pid:onmax(prev_pid).save(prev_pid)",
     "For onmax(x) or onchange(x), x must be a variable", "prev_pid"),
    # the reference is not found (logged), then neither is such a field
    ("hist:keys=next_pid:x=common_timestamp-$nosuch", "Couldn't find field", "$nosuch"),
    ("hist:keys=next_pid:onmatch(sched.sched_waking).save(prev_pid)",
     "Handler doesn't support action", "save"),
])
def test_action_errors(k, cmd, err, where):
    wr(k, "synthetic_events", "lat2 pid_t pid; u64 lat\n")
    assert errno_of(wr, k, SWITCH + "trigger", cmd + "\n", APPEND) == errno.EINVAL
    got, command, pos = last_error(k)
    assert (got, command) == (err, cmd)
    assert pos == cmd.index(where)
    if "-$nosuch" in cmd:
        assert "error: Couldn't find variable" in rd(k, "error_log")
    assert "hist:" not in rd(k, SWITCH + "trigger")
    wr(k, "synthetic_events", "!lat2\n", APPEND)           # no reference was left behind


def test_a_field_of_the_matching_event_gets_a_trigger_there(k, clock):
    wr(k, "synthetic_events", "wl u64 lat; pid_t pid; int prio\n")
    wr(k, WAKING + "trigger", "hist:keys=pid:ts0=common_timestamp.usecs if prio < 200\n")
    cmd = ("hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:"
           "onmatch(sched.sched_waking).wl($lat,next_pid,sched.sched_waking.prio)")
    wr(k, SWITCH + "trigger", cmd + "\n", APPEND)
    listing = rd(k, WAKING + "trigger")
    assert ("hist:keys=pid:vals=hitcount:synthetic_prio=prio:sort=hitcount:size=2048 "
            "if prio < 200 [active]\n") in listing
    wr(k, "events/synthetic/wl/enable", "1\n")
    clock.advance(100 * MS)
    assert re.search(r"wl: lat=\d+ pid=\d+ prio=120\n", rd(k, "trace"))
    wr(k, SWITCH + "trigger", "!" + cmd + "\n", APPEND)
    assert "synthetic_prio" not in rd(k, WAKING + "trigger")


def test_a_key_cannot_read_a_variable(k):
    wr(k, WAKING + "trigger", "hist:keys=pid:ts0=common_timestamp.usecs\n")
    cmd = "hist:keys=$ts0"
    assert errno_of(wr, k, SWITCH + "trigger", cmd + "\n", APPEND) == errno.EINVAL
    assert last_error(k) == ("Using variable references in keys not supported", cmd,
                             cmd.index("$ts0"))
    # a key naming a variable of its own trigger that is a field is that field
    wr(k, SWITCH + "trigger", "hist:keys=$p:p=next_pid\n", APPEND)
    assert rd(k, SWITCH + "trigger").startswith("hist:keys=next_pid:vals=hitcount:p=next_pid:")


def test_a_stack_variable_in_arithmetic_is_where_it_is_kept(k, clock):
    # the kernel computes with the stack's address: no value error, ever
    wr(k, SWITCH + "trigger", "hist:keys=next_pid:st=common_stacktrace\n", APPEND)
    wr(k, SWITCH + "trigger", "hist:keys=prev_pid:x=common_timestamp-$st:"
                              "onmax($x).save(prev_comm)\n", APPEND)
    wr(k, SWITCH + "trigger", "hist:keys=prev_prio:y=common_stacktrace:onchange($y).snapshot()\n",
       APPEND)
    clock.advance(100 * MS)
    assert re.search(r"\tmax: +\d+  prev_comm: ", rd(k, SWITCH + "hist"))


def test_a_snapshot_action_owns_the_snapshot(k):
    wr(k, WAKING + "trigger", "hist:keys=pid:p=prio:onchange($p).snapshot()\n")
    assert errno_of(wr, k, "snapshot", "0\n") == errno.EBUSY
    # one conditional snapshot per array
    assert errno_of(wr, k, SWITCH + "trigger",
                    "hist:keys=next_pid:q=next_prio:onchange($q).snapshot()\n",
                    APPEND) == errno.EBUSY
    wr(k, WAKING + "trigger", "!hist:keys=pid:p=prio:onchange($p).snapshot()\n", APPEND)
    wr(k, "snapshot", "0\n")
