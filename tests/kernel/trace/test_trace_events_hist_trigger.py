"""Hist triggers through the trigger framework (trace_events_hist_trigger.py):
``hist:`` in an event's ``trigger`` file, its ``hist`` file, O_TRUNC,
enable_hist/disable_hist, trace_marker, instances and the README."""

import errno
import os
import re

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.sim.files import write_file
from fakefs.sim.clock import ManualClock
from ftrace_helpers import APPEND, MS, boot
from kfiles import errno_of, node, rd, reset_triggers, wr, sim_fork

FORK = "events/sched/sched_process_fork/"
SWITCH = "events/sched/sched_switch/"


@pytest.fixture(scope="module")
def booted():
    return boot()[0]


@pytest.fixture
def k(booted):
    k = booted
    yield k
    reset_triggers(k, flags=APPEND)
    for inst in list(k.tracing.instances):
        k.tracing.instance_rmdir(inst)
    wr(k, "events/enable", "0\n")
    wr(k, "tracing_on", "1\n")


def hits(text):
    m = re.search(r"Hits: (\d+)", text)
    return int(m.group(1)) if m else None


def test_hist_files_exist_read_only(k):
    for path in (FORK, "events/ftrace/print/", "events/ftrace/function/"):
        n = node(k, path + "hist")
        assert n.mode & 0o777 == 0o440, path             # TRACE_MODE_READ
        assert rd(k, path + "hist") == ""               # no hist trigger: nothing
    assert rd(k, FORK + "trigger").endswith(
        " disable_event enable_hist disable_hist hist\n")


def test_no_hist_without_the_config():
    k = sim.boot(seed=7, nr_cpus=1, clock=ManualClock(), host_kallsyms=False,
                 config_overrides={"HIST_TRIGGERS": False})
    assert k.tree.root.walk("sys/kernel/tracing/" + FORK + "hist") is None
    assert rd(k, FORK + "trigger").endswith(" enable_event disable_event\n")
    assert errno_of(wr, k, FORK + "trigger", "hist:keys=child_pid\n") == errno.EINVAL
    readme = rd(k, "README")
    assert "hist trigger" not in readme and "enable_hist" not in readme


def test_hist_counts_forks_and_lists_at_the_tail(k):
    t = FORK + "trigger"
    wr(k, t, "hist:keys=child_pid\n")
    wr(k, t, "traceoff:5 if child_pid == 0\n", APPEND)
    assert rd(k, FORK + "enable") == "0*\n"             # soft mode, as any trigger
    # other triggers go at the head, hist at the tail
    assert rd(k, t) == ("traceoff:count=5 if child_pid == 0\n"
                        "hist:keys=child_pid:vals=hitcount:sort=hitcount:size=2048 [active]\n")
    _p1, c1 = sim_fork(k)
    _p2, c2 = sim_fork(k)
    text = rd(k, FORK + "hist")
    assert "# trigger info: hist:keys=child_pid:vals=hitcount:sort=hitcount:size=2048 [active]\n" in text
    for c in (c1, c2):
        assert "{ child_pid: %*d } hitcount:          1\n" % (10, c.pid) in text
    assert hits(text) == 2
    # removing it by its spec leaves the other one
    wr(k, t, "!hist:keys=child_pid\n", APPEND)
    assert rd(k, t) == "traceoff:count=5 if child_pid == 0\n"
    assert rd(k, FORK + "hist") == ""


def test_hist_filter_and_values(k):
    t = FORK + "trigger"
    wr(k, t, "hist:keys=common_pid:vals=child_pid if child_pid == 0\n")
    assert rd(k, t) == ("hist:keys=common_pid:vals=hitcount,child_pid:sort=hitcount:size=2048"
                        " if child_pid == 0 [active]\n")
    sim_fork(k)
    assert hits(rd(k, FORK + "hist")) == 0               # its filter rejects every fork
    wr(k, t, "hist:keys=common_pid:vals=child_pid\n", APPEND)
    _p, c = sim_fork(k)
    assert "child_pid: %*d\n" % (10, c.pid) in rd(k, FORK + "hist")


def test_o_trunc_removes_hist_and_enable_hist_only(k):
    t = FORK + "trigger"
    wr(k, t, "traceoff if child_pid == 0\n")
    wr(k, t, "hist:keys=child_pid\n", APPEND)
    wr(k, t, "disable_hist:sched:sched_switch\n", APPEND)
    assert rd(k, SWITCH + "enable") == "0*\n"
    assert errno_of(wr, k, t, "\n") == errno.EINVAL      # echo > trigger: the open truncates
    assert rd(k, t) == "traceoff:unlimited if child_pid == 0\n"
    assert rd(k, SWITCH + "enable") == "0\n"             # the target left soft mode
    assert rd(k, FORK + "hist") == ""
    # with only hist triggers the event leaves soft mode
    wr(k, t, "!traceoff\n", APPEND)
    wr(k, t, "hist:keys=child_pid\n", APPEND)
    assert rd(k, FORK + "enable") == "0*\n"
    wr(k, t, "hist:keys=parent_pid\n")                   # '>' replaces it
    assert "keys=parent_pid" in rd(k, t) and "keys=child_pid" not in rd(k, t)
    write_file(k, "sys/kernel/tracing/" + t, b"")   # open with O_TRUNC, nothing written
    assert rd(k, FORK + "enable") == "0\n"
    assert k.tracing.global_trace.event_triggers == {}


def test_enable_hist_and_disable_hist(k):
    t = FORK + "trigger"
    wr(k, SWITCH + "trigger", "hist:keys=next_pid:pause\n")
    assert "[paused]" in rd(k, SWITCH + "trigger")
    wr(k, t, "enable_hist:sched:sched_switch:1\n")
    assert rd(k, t) == "enable_hist:sched:sched_switch:count=1\n"
    assert errno_of(wr, k, t, "disable_hist:sched:sched_switch\n", APPEND) == errno.EEXIST
    sim_fork(k)
    assert rd(k, t) == "enable_hist:sched:sched_switch:count=0\n"
    assert "[active]" in rd(k, SWITCH + "trigger")
    k.clock.advance(20 * MS)
    n = hits(rd(k, SWITCH + "hist"))
    assert n and n > 0
    wr(k, t, "!enable_hist:sched:sched_switch\n", APPEND)
    wr(k, t, "disable_hist:sched:sched_switch\n", APPEND)
    sim_fork(k)
    assert "[paused]" in rd(k, SWITCH + "trigger")
    before = hits(rd(k, SWITCH + "hist"))
    k.clock.advance(20 * MS)
    assert hits(rd(k, SWITCH + "hist")) == before       # paused: no more hits
    wr(k, t, "!disable_hist:sched:sched_switch\n", APPEND)
    assert rd(k, SWITCH + "enable") == "0*\n"           # its own hist keeps soft mode


def test_trace_marker_hist_in_an_instance(k):
    k.tracing.instance_mkdir("foo")
    p = "instances/foo/"
    wr(k, p + "events/ftrace/print/trigger", "hist:keys=common_pid\n")
    for _ in range(10):
        wr(k, p + "trace_marker", "hello\n")
    assert re.search(r"hitcount: +10\n", rd(k, p + "events/ftrace/print/hist"))
    assert rd(k, "events/ftrace/print/hist") == ""     # the top array has none
    wr(k, "trace_marker", "top\n")
    assert hits(rd(k, p + "events/ftrace/print/hist")) == 10


def test_named_hist_freed_with_its_instance(k):
    k.tracing.instance_mkdir("foo")
    wr(k, "instances/foo/" + FORK + "trigger", "hist:name=h1:keys=child_pid\n")
    # a named histogram is shared between arrays, and must match
    assert errno_of(wr, k, FORK + "trigger", "hist:name=h1:keys=parent_pid\n") == errno.EINVAL
    wr(k, FORK + "trigger", "hist:name=h1:keys=child_pid\n")
    _p, c = sim_fork(k)
    line = "{ child_pid: %*d } hitcount:          2\n" % (10, c.pid)
    assert line in rd(k, FORK + "hist")                  # both arrays hit the one map
    wr(k, FORK + "trigger", "!hist:name=h1:keys=child_pid\n", APPEND)
    k.tracing.instance_rmdir("foo")                      # no EBUSY: hist does not pin
    wr(k, FORK + "trigger", "hist:name=h1:keys=parent_pid\n")   # the name is free again
    assert "name=h1" in rd(k, FORK + "trigger")


def test_hist_file_pins_its_instance(k):
    """``event_hist_open()`` takes the array (tracing_open_file_tr())."""
    k.tracing.instance_mkdir("foo")
    n = node(k, "instances/foo/" + FORK + "hist")
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    with pytest.raises(KernelError) as e:
        k.tracing.instance_rmdir("foo")
    assert e.value.errno == errno.EBUSY
    n.fops.release(f)
    k.tracing.instance_rmdir("foo")


def test_timestamp_hist_sets_the_clock(k):
    wr(k, FORK + "trigger", "hist:keys=child_pid:ts=common_timestamp:clock=global\n")
    assert "[global]" in rd(k, "trace_clock")
    assert errno_of(wr, k, FORK + "trigger", "hist:keys=parent_pid:t=common_timestamp:clock=nope\n",
                    APPEND) == errno.EINVAL
    assert "Couldn't set trace_clock" in rd(k, "error_log")
    wr(k, "trace_clock", "local\n")


def test_readme_advertises_what_is_taken(k):
    readme = rd(k, "README")
    assert "\t            enable_hist:<system>:<event>\n" in readme
    assert "\t\t    snapshot\n\t\t    hist (see below)\n" in readme
    assert "[:<var1>=<field|var_ref|numeric_literal>[,<var2>=...]]" in readme
    assert "'common_stacktrace'" in readme
    for taken in ("onchange(var)", "onmax(var)", "snapshot()", "trace(<synthetic_event>",
                  "<handler>.<action>", "' >> synthetic_events", "s:[synthetic/]",
                  "long[] stack' >> synthetic_events"):
        assert taken in readme, taken
    assert node(k, "synthetic_events")
