"""saved_cmdlines: the kernel's table of comms, its size and its slots."""

from __future__ import annotations

import errno

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.trace_sched_switch import SavedCmdlines, cmdline_slots, resized
from kfiles import errno_of, rd, wr


def test_sizes_round_up_to_the_allocation():
    """Measured on a stock kernel: 128 -> 6552, 10000 -> 19659."""
    assert cmdline_slots(128) == 6552
    assert cmdline_slots(1) == 6552
    assert cmdline_slots(10000) == 19659
    assert SavedCmdlines().cmdline_num == 6552


def test_slots_are_handed_out_round_robin():
    s = SavedCmdlines()
    s.cmdline_num = 2                    # a tiny table shows the reuse
    s.map_cmdline_to_pid = [None, None]
    s.comms = ["", ""]
    s.save(10, "a")
    s.save(11, "b")
    assert (s.find(10), s.find(11), s.find(0)) == ("a", "b", "<idle>")
    assert s.text() == "11 b\n10 a\n"       # slot 1 first, slot 0 next
    s.save(12, "c")                          # takes 10's slot
    assert s.find(10) == "<...>" and s.find(12) == "c"
    s.save(11, "b2")                         # a saved pid keeps its slot
    assert s.find(11) == "b2"


def test_resize_refuses_zero_and_more_than_pid_max():
    assert errno_of(resized, 0) == errno.EINVAL
    assert errno_of(resized, 32769) == errno.EINVAL
    assert resized(32768).cmdline_num >= 32768


def test_the_files_show_the_table():
    k = sim.boot(host_kallsyms=False, clock=ManualClock(), nr_cpus=1, seed=3)
    assert rd(k, "saved_cmdlines_size") == "6552\n"
    assert rd(k, "saved_cmdlines") == ""             # nothing traced yet
    wr(k, "events/sched/enable", "1")
    k.clock.advance(300_000_000)
    k.timekeeper.run_until_now()
    saved = rd(k, "saved_cmdlines").splitlines()
    assert saved and all(" " in ln for ln in saved)
    pids = {int(ln.split()[0]) for ln in saved}
    trace = rd(k, "trace")
    assert "<...>-" not in trace
    assert any("-%d " % p in trace for p in pids)
    wr(k, "saved_cmdlines_size", "10000")
    assert rd(k, "saved_cmdlines_size") == "19659\n" and rd(k, "saved_cmdlines") == ""
    assert "<...>-" in rd(k, "trace")                # the old entries lost their comms


def test_a_resize_saves_the_next_committer_even_if_it_committed_last():
    k = sim.boot(host_kallsyms=False, clock=ManualClock(), nr_cpus=1, seed=3)
    tr = k.tracing.global_trace
    task = next(iter(k.sched.tasks.values()))
    entry = (1, 0, task.pid, 0, 0, "x", None)
    assert tr.write_entry(0, entry, 8)
    assert k.tracing.savedcmd.lookup(task.pid) == task.comm
    wr(k, "saved_cmdlines_size", "128")
    assert k.tracing.savedcmd.lookup(task.pid) is None
    assert tr.write_entry(0, entry, 8)
    assert k.tracing.savedcmd.lookup(task.pid) == task.comm


def test_saved_tgids_map():
    from fakefs.kernel.trace.trace_sched_switch import TGID_MAP_MAX, SavedTgids
    t = SavedTgids(2)
    t.save(0, 10, 10)                       # no map before record-tgid was set
    assert t.find(10) == 0 and t.text() == ""
    t.alloc()
    for pid, tgid in ((300, 299), (10, 10), (0, 5), (TGID_MAP_MAX + 1, 7)):
        t.save(1, pid, tgid)
    assert t.text() == "10 10\n300 299\n"   # by pid; the idle task and pids past the map are not kept
    assert (t.find(300), t.find(0), t.find(11)) == (299, 0, 0)


def test_tgid_references_are_counted_as_the_kernel_counts_them():
    """trace_event_enable_tgid_record() counts every enabled file of every
    array, with the flag or not: references can outlive their events."""
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock())
    tg = k.tracing.tgids
    k.tracing.instance_mkdir("foo")
    wr(k, "events/sched/sched_switch/enable", "1")           # top: no record-tgid
    assert tg.ref == 0
    wr(k, "instances/foo/options/record-tgid", "1")         # counts the top's file too
    assert tg.ref == 1
    wr(k, "events/sched/sched_switch/enable", "0")
    assert tg.ref == 0
    wr(k, "options/record-tgid", "1")
    wr(k, "events/sched/sched_wakeup/enable", "1")           # enabled under the flag: 1
    wr(k, "instances/foo/options/record-tgid", "0")         # not set there... but counts down
    assert tg.ref == 0
    wr(k, "events/sched/sched_wakeup/enable", "0")           # it had lost its reference
    assert tg.ref == 0
    wr(k, "events/sched/sched_wakeup/enable", "1")
    assert tg.ref == 1
    wr(k, "instances/foo/options/record-tgid", "1")         # a second one for the same file
    assert tg.ref == 2
    wr(k, "events/sched/sched_wakeup/enable", "0")
    assert tg.ref == 1                                       # one left, with no event enabled
    wr(k, "instances/foo/events/sched/sched_switch/enable", "1")
    assert tg.ref == 2
    k.tracing.instance_rmdir("foo")                          # its events are disabled
    assert tg.ref == 1
