"""set_event_pid, set_event_notrace_pid and event-fork (trace_events_pid.py)."""

from __future__ import annotations

import errno
import os

from fakefs import sim
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.trace_events_pid import EventPids
from kfiles import errno_of, rd, wr

APPEND = os.O_WRONLY | os.O_APPEND
MS = 1_000_000


def boot(host_tasks=True):
    k = Kernel(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.host_tasks = host_tasks
    sim.boot_kernel(k)
    return k, sim.attach(k)


def run(k, ms):
    for _ in range(ms // 20):
        k.clock.advance(20 * MS)
        k.timekeeper.run_until_now()


def entries(k):
    return [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]


def test_files_only_where_the_kernel_knows_the_callers():
    k, _m = boot(host_tasks=False)
    assert "set_event_pid" not in k.tracing.root.children
    k, _m = boot()
    assert "set_event_pid" in k.tracing.root.children
    assert "set_event_notrace_pid" in k.tracing.root.children
    k.tracing.instance_mkdir("foo")
    assert "set_event_pid" in k.tracing.instances["foo"].dir.children


def test_write_appends_truncate_clears_and_bad_words_change_nothing():
    k, _m = boot()
    assert rd(k, "set_event_pid") == ""
    wr(k, "set_event_pid", "12 7\n")
    wr(k, "set_event_pid", "0x10", APPEND)
    assert rd(k, "set_event_pid") == "7\n12\n16\n"
    assert errno_of(wr, k, "set_event_pid", "3 abc", APPEND) == errno.EINVAL
    assert errno_of(wr, k, "set_event_pid", "1073741824", APPEND) == errno.EPERM    # MAX_PID, 2^30
    assert rd(k, "set_event_pid") == "7\n12\n16\n"
    wr(k, "set_event_pid", "4194305 1073741823", APPEND)        # above PID_MAX_LIMIT: taken, as 6.12 does
    assert rd(k, "set_event_pid") == "7\n12\n16\n4194305\n1073741823\n"
    wr(k, "set_event_pid", "7 12 16")
    wr(k, "set_event_pid", "\n")
    assert rd(k, "set_event_pid") == ""
    wr(k, "set_event_notrace_pid", "5")
    assert rd(k, "set_event_notrace_pid") == "5\n" and rd(k, "set_event_pid") == ""


def test_ignore_follows_the_kernels_switch_and_wakeup_rules():
    p = EventPids()
    sw = (0, 1, 10, 0, 0, ("a", 10, 120, 1, "b", 20, 120), None)
    wake = (0, 1, 30, 0, 0, ("c", 10, 120, 0), None)     # task 30 wakes task 10
    other = (0, 1, 30, 0, 0, (), None)
    assert not p.ignore("sched_switch", sw) and not p.ignore("x", other)
    p.write("10", False)
    assert not p.ignore("sched_switch", sw)              # prev is listed
    assert not p.ignore("sched_waking", wake)            # the woken task is listed
    assert p.ignore("x", other)
    assert p.ignore("sched_switch", (0, 1, 30, 0, 0, ("a", 30, 120, 1, "b", 40, 120), None))
    p.clear(False)
    p.write("10 20", True)
    assert p.ignore("sched_switch", sw)                  # both are on the no-list
    assert not p.ignore("x", other)


def test_only_listed_tasks_and_their_switches_are_recorded():
    k, m = boot()
    m.host.caller(5000, "sh")
    wr(k, "set_event_pid", "5000")
    wr(k, "events/sched/enable", "1")
    run(k, 40)
    for i in range(3):
        m.host.event("fork", k.sim_time + MS, 5001 + i, ppid=5000)
        m.host.event("exit", k.sim_time + 3 * MS, 5001 + i)
        run(k, 20)
    got = entries(k)
    assert any("sched_switch" in ln for ln in got)
    for ln in got:
        if "sched_switch" in ln:
            assert "prev_pid=5000 " in ln or "next_pid=5000 " in ln, ln
        elif "sched_waking" in ln or "sched_wakeup" in ln:
            assert "-5000 " in ln or "pid=5000 " in ln, ln
        else:
            assert "-5000 " in ln, ln


def test_event_fork_lists_children_until_they_are_freed():
    k, m = boot()
    m.host.caller(5000, "sh")
    wr(k, "set_event_pid", "5000")
    wr(k, "options/event-fork", "1")
    wr(k, "events/sched/sched_switch/enable", "1")
    run(k, 20)
    m.host.event("fork", k.sim_time + MS, 5001, ppid=5000)
    run(k, 20)
    assert rd(k, "set_event_pid") == "5000\n5001\n"
    assert any("5001" in ln for ln in entries(k))
    m.host.event("exit", k.sim_time + MS, 5001)
    run(k, 100)                                   # reaped, freed a grace period later
    assert rd(k, "set_event_pid") == "5000\n"
    wr(k, "options/event-fork", "0")
    m.host.event("fork", k.sim_time + MS, 5002, ppid=5000)
    run(k, 20)
    assert rd(k, "set_event_pid") == "5000\n"


def test_function_fork_follows_set_ftrace_pid():
    k, m = boot()
    m.host.caller(5000, "sh")
    wr(k, "set_ftrace_pid", "5000")
    wr(k, "options/function-fork", "1")
    run(k, 20)
    m.host.event("fork", k.sim_time + MS, 5001, ppid=5000)
    run(k, 20)
    assert rd(k, "set_ftrace_pid") == "5000\n5001\n"
