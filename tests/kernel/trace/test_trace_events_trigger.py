"""Event triggers (trace_events_trigger.py): the trigger file's commands,
listing, errors and their effects when the event is hit (simulated forks
fire sched_process_fork, trace_marker writes fire ftrace/print)."""

import errno
import os

import pytest

from fakefs import sim
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, rd, reset_triggers, wr, sim_fork

MS = 1_000_000
FORK = "events/sched/sched_process_fork/"
SWITCH = "events/sched/sched_switch/"
HEADER = ("# Available triggers:\n"
          "# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist"
          " disable_hist hist\n")
APPEND = os.O_WRONLY | os.O_APPEND


@pytest.fixture(scope="module")
def booted():
    clock = ManualClock()
    return sim.boot(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False), clock


@pytest.fixture
def k(booted):
    k, _clock = booted
    yield k
    reset_triggers(k)
    for inst in list(k.tracing.instances):
        k.tracing.instance_rmdir(inst)
    wr(k, "events/enable", "0\n")
    wr(k, "tracing_on", "1\n")
    wr(k, "options/stacktrace", "0\n")
    wr(k, "trace", "")
    wr(k, "snapshot", "0\n")


def lines(k, path="trace"):
    return [ln for ln in rd(k, path).splitlines() if not ln.startswith("#")]


# --------------------------------------------------------------- the file
def test_available_triggers_listed_when_none_set(k):
    assert rd(k, FORK + "trigger") == HEADER
    assert rd(k, "events/ftrace/print/trigger") == HEADER


def test_available_triggers_follow_the_config():
    k = sim.boot(seed=7, nr_cpus=1, clock=ManualClock(), host_kallsyms=False,
                 config_overrides={"TRACER_SNAPSHOT": False, "IRQSOFF_TRACER": False,
                                 "PREEMPT_TRACER": False, "SCHED_TRACER": False})
    assert rd(k, FORK + "trigger") == ("# Available triggers:\n"
                                      "# traceon traceoff stacktrace enable_event disable_event"
                                      " enable_hist disable_hist hist\n")
    assert errno_of(wr, k, FORK + "trigger", "snapshot\n") == errno.EINVAL


def test_listing_round_trips(k):
    t = FORK + "trigger"
    wr(k, t, "traceoff:3 if child_pid == 0\n")
    wr(k, t, "stacktrace\n")
    wr(k, t, "enable_event:sched:sched_switch:2\n")
    wr(k, t, "disable_event:sched:sched_waking\n")
    wr(k, t, "snapshot:1\n")
    # newest first, as list_add_rcu() puts them
    assert rd(k, t) == ("snapshot:count=1\n"
                        "disable_event:sched:sched_waking:unlimited\n"
                        "enable_event:sched:sched_switch:count=2\n"
                        "stacktrace:unlimited\n"
                        "traceoff:count=3 if child_pid == 0\n")
    reset_triggers(k)
    assert rd(k, t) == HEADER
    assert rd(k, FORK + "enable") == "0\n"
    assert rd(k, SWITCH + "enable") == "0\n"
    assert k.tracing.global_trace.event_triggers == {}


def test_errors(k):
    t = FORK + "trigger"
    for bad in ("traceoff:badparam", "traceoff+0", "snapshot+1", "stacktrace:foo",
                "disable_event+1", "enable_event:nogroup:noevent", "enable_event",
                "enable_event:sched", "nosuchcmd", "", "# comment",
                "traceon if", "traceon foo"):
        assert errno_of(wr, k, t, bad + "\n") == errno.EINVAL, bad
    assert errno_of(wr, k, t, "traceon:99999999999999999999\n") == errno.ERANGE
    assert errno_of(wr, k, t, "x" * 4096) == errno.EINVAL
    assert rd(k, t) == HEADER
    assert rd(k, FORK + "enable") == "0\n"              # nothing left in soft mode


def test_duplicates_by_trigger_type(k):
    t = FORK + "trigger"
    wr(k, t, "traceon\n")
    assert errno_of(wr, k, t, "traceon\n") == errno.EEXIST
    assert errno_of(wr, k, t, "traceoff\n") == errno.EEXIST     # same type
    wr(k, t, "enable_event:sched:sched_switch\n")
    assert errno_of(wr, k, t, "enable_event:sched:sched_switch\n") == errno.EEXIST
    assert errno_of(wr, k, t, "disable_event:sched:sched_switch\n") == errno.EEXIST
    wr(k, t, "disable_event:sched:sched_waking\n")             # another target
    # '!traceoff' takes off the trigger of its type, whichever it is
    wr(k, t, "!traceoff\n")
    assert "traceon" not in rd(k, t)
    wr(k, t, "!traceoff\n")                                    # none left: fine
    # the failed enable_event left no soft-mode reference behind
    wr(k, t, "!enable_event:sched:sched_switch\n")
    assert rd(k, SWITCH + "enable") == "0\n"


def test_filter_errors_reach_error_log(k):
    wr(k, "error_log", "", os.O_WRONLY | os.O_TRUNC)
    t = FORK + "trigger"
    assert errno_of(wr, k, t, "traceoff if common_pid=0\n") == errno.EINVAL
    assert errno_of(wr, k, t, "traceoff if common_pid == child_pid\n") == errno.EINVAL
    log = rd(k, "error_log")
    assert "event filter parse error: error: Invalid operator\n  Command: common_pid=0\n" in log
    assert log.count("event filter parse error") == 2
    for ok in ("common_pid == 0", "common_pid <= 0", "parent_pid >= 0 && child_pid >= 0",
               "parent_pid >= 0 || child_pid >= 0"):
        wr(k, t, "traceoff if %s\n" % ok)
        assert rd(k, t) == "traceoff:unlimited if %s\n" % ok
        wr(k, t, "!traceoff\n")


def test_o_trunc_removes_nothing(k):
    t = FORK + "trigger"
    wr(k, t, "traceoff\n")
    assert errno_of(wr, k, t, "\n") == errno.EINVAL      # echo > trigger
    assert rd(k, t) == "traceoff:unlimited\n"


# --------------------------------------------------------------- effects
def test_traceoff_and_traceon(k):
    t = FORK + "trigger"
    wr(k, t, "traceoff\n")
    assert rd(k, FORK + "enable") == "0*\n"          # soft mode, soft-disabled
    k.clock.advance(100 * MS)
    assert rd(k, "tracing_on") == "1\n"              # no fork: nothing
    sim_fork(k)
    assert rd(k, "tracing_on") == "0\n"
    reset_triggers(k)
    wr(k, t, "traceon:2\n")
    sim_fork(k)
    assert rd(k, "tracing_on") == "1\n"
    assert rd(k, t) == "traceon:count=1\n"
    sim_fork(k)                                          # already on: no count
    assert rd(k, t) == "traceon:count=1\n"


def test_filtered_trigger_sees_the_record(k):
    t = FORK + "trigger"
    wr(k, t, "traceoff if child_pid == 0\n")
    sim_fork(k)
    assert rd(k, "tracing_on") == "1\n"
    wr(k, t, "!traceoff\n")
    _parent, child = sim_fork(k)
    wr(k, t, "traceoff:1 if child_pid > %d\n" % child.pid)
    sim_fork(k)
    assert rd(k, "tracing_on") == "0\n"
    assert rd(k, t) == "traceoff:count=0 if child_pid > %d\n" % child.pid


def test_soft_disabled_event_records_nothing(k):
    wr(k, FORK + "trigger", "traceon\n")
    sim_fork(k)
    assert not any("sched_process_fork" in ln for ln in lines(k))
    wr(k, FORK + "enable", "1\n")
    assert rd(k, FORK + "enable") == "1*\n"
    parent, child = sim_fork(k)
    assert any("sched_process_fork: comm=%s pid=%d child_comm=%s child_pid=%d"
               % (parent.comm, parent.pid, child.comm, child.pid) in ln for ln in lines(k))
    wr(k, "events/enable", "0\n")                   # a plain disable keeps soft mode
    assert rd(k, FORK + "enable") == "0*\n"


def test_enable_and_disable_event(k):
    t = FORK + "trigger"
    wr(k, SWITCH + "enable", "0\n")
    wr(k, t, "enable_event:sched:sched_switch\n")
    assert rd(k, SWITCH + "enable") == "0*\n"
    k.clock.advance(50 * MS)
    assert not any("sched_switch:" in ln for ln in lines(k))
    sim_fork(k)
    assert rd(k, SWITCH + "enable") == "1*\n"
    k.clock.advance(50 * MS)
    assert any("sched_switch:" in ln for ln in lines(k))
    reset_triggers(k)
    # leaving soft mode keeps the state the trigger gave it (the kernel's too)
    assert rd(k, SWITCH + "enable") == "1\n"
    wr(k, t, "disable_event:sched:sched_switch:1\n")
    sim_fork(k)
    assert rd(k, SWITCH + "enable") == "0*\n"
    assert rd(k, t) == "disable_event:sched:sched_switch:count=0\n"


def test_stacktrace_of_a_soft_disabled_event(k):
    wr(k, "trace", "")
    wr(k, FORK + "trigger", "stacktrace\n")
    sim_fork(k)
    text = rd(k, "trace")
    assert "<stack trace>" in text
    assert "sched_process_fork:" not in text
    wr(k, FORK + "trigger", "!stacktrace\n")
    wr(k, "trace", "")
    wr(k, FORK + "trigger", "stacktrace:1\n")
    sim_fork(k)
    sim_fork(k)
    assert rd(k, "trace").count("<stack trace>") == 1


def test_stacktrace_through_the_stackmap(k):
    wr(k, "options/stackmap", "1\n")
    try:
        wr(k, "trace", "")
        wr(k, SWITCH + "trigger", "stacktrace:3\n")
        k.clock.advance(100 * MS)
        text = rd(k, "trace")
        assert text.count("<stack_id ") == 3
        assert "<stack trace>" not in text and "sched_switch:" not in text
    finally:
        wr(k, "options/stackmap", "0\n")


def test_snapshot_trigger(k):
    wr(k, "snapshot", "0\n")
    wr(k, FORK + "enable", "1\n")
    sim_fork(k)
    wr(k, FORK + "trigger", "snapshot:1\n")
    assert "Snapshot is allocated" in rd(k, "snapshot")
    sim_fork(k)
    assert any("sched_process_fork:" in ln for ln in lines(k, "snapshot"))
    assert rd(k, FORK + "trigger") == "snapshot:count=0\n"
    reset_triggers(k)
    assert k.tracing.global_trace.snapshot_arms == 0
    assert errno_of(wr, k, FORK + "trigger", "snapshot+1\n") == errno.EINVAL
    wr(k, FORK + "trigger", "snapshot\n")
    assert errno_of(wr, k, FORK + "trigger", "snapshot\n") == errno.EEXIST


def test_trace_marker_snapshot_swaps_at_each_write(k):
    """trigger-trace-marker-snapshot.tc: an entry lands in the buffer it
    was reserved in, which the trigger has just swapped out."""
    wr(k, "events/ftrace/print/trigger", "snapshot\n")
    assert "Snapshot is allocated" in rd(k, "snapshot")
    for i in range(1, 11):
        wr(k, "trace_marker", "hello >%d<\n" % i)
    trace = [ln.split(": ", 2)[-1] for ln in lines(k, "trace")]
    snap = [ln.split(": ", 2)[-1] for ln in lines(k, "snapshot")]
    assert trace == ["hello >%d<" % i for i in (1, 3, 5, 7, 9)]
    assert snap == ["hello >%d<" % i for i in (2, 4, 6, 8, 10)]
    wr(k, "events/ftrace/print/trigger", "!snapshot\n")


def test_trace_marker_traceoff_with_a_filter(k):
    t = "events/ftrace/print/trigger"
    wr(k, t, "traceoff:1 if common_pid == %d\n" % os.getpid())
    wr(k, "trace_marker", "first\n")
    assert rd(k, "tracing_on") == "1\n"     # the writer's pid is 0 here
    wr(k, t, "!traceoff\n")
    wr(k, t, "traceoff:1\n")
    wr(k, "trace_marker", "last\n")
    assert rd(k, "tracing_on") == "0\n"
    assert [ln.split(": ", 2)[-1] for ln in lines(k)][-1] == "last"   # committed first


def test_instance_triggers_are_their_own(k):
    k.tracing.instance_mkdir("foo")
    wr(k, "instances/foo/" + FORK + "trigger", "traceoff\n")
    assert rd(k, FORK + "trigger") == HEADER
    sim_fork(k)
    assert rd(k, "instances/foo/tracing_on") == "0\n"
    assert rd(k, "tracing_on") == "1\n"
    reset_triggers(k, "instances/foo/")
    assert rd(k, "instances/foo/" + FORK + "enable") == "0\n"


def test_cpumask_leaves_out_the_record_not_the_trigger(k):
    wr(k, FORK + "enable", "1\n")
    wr(k, FORK + "trigger", "traceoff\n")
    wr(k, "tracing_cpumask", "2\n")
    try:
        sim_fork(k, cpu=0)
        assert rd(k, "tracing_on") == "0\n"
        assert not any("sched_process_fork" in ln for ln in lines(k))
    finally:
        wr(k, "tracing_cpumask", "3\n")


def forks_in_trace(k):
    return sum("sched_process_fork:" in ln for ln in lines(k))


def test_when_triggers_run_against_the_record(k):
    """Without a filter traceon runs before the record is reserved (its hit
    is recorded); with one it runs on the record, reserved while tracing
    was off (not recorded); traceoff runs after the commit (recorded)."""
    t = FORK + "trigger"
    wr(k, FORK + "enable", "1\n")
    wr(k, "tracing_on", "0\n")
    wr(k, t, "traceon\n")
    sim_fork(k)
    assert rd(k, "tracing_on") == "1\n" and forks_in_trace(k) == 1
    wr(k, t, "!traceon\n")
    wr(k, "tracing_on", "0\n")
    wr(k, t, "traceon if child_pid > 0\n")
    sim_fork(k)
    assert rd(k, "tracing_on") == "1\n" and forks_in_trace(k) == 1
    wr(k, t, "!traceon\n")
    wr(k, t, "traceoff\n")
    sim_fork(k)
    assert rd(k, "tracing_on") == "0\n" and forks_in_trace(k) == 2


def test_count_is_a_long(k):
    t = FORK + "trigger"
    wr(k, t, "traceoff:18446744073709551615\n")       # ULONG_MAX is -1: unlimited
    assert rd(k, t) == "traceoff:unlimited\n"
    wr(k, t, "!traceoff\n")
    wr(k, t, "traceoff:0x8000000000000000\n")
    assert rd(k, t) == "traceoff:count=-9223372036854775808\n"


def test_trace_clock_clears_the_snapshot(k):
    wr(k, "trace_marker", "x\n")
    wr(k, "snapshot", "1\n")
    assert lines(k, "snapshot")
    wr(k, "trace_clock", "global\n")
    try:
        assert "Snapshot is allocated" in rd(k, "snapshot")
    finally:
        wr(k, "trace_clock", "local\n")
