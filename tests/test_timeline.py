"""The timeline checker finds what a real machine cannot produce."""

from __future__ import annotations

from fakefs import sim
from fakefs.timeline import check

HEAD = "# tracer: nop\n#\n"


def sw(cpu, ts, prev, prev_state, nxt, flags="d..2.", pid=None):
    pid = prev if pid is None else pid
    return ("t-%d [%03d] %s %s: sched_switch: prev_comm=t prev_pid=%d prev_prio=120 "
            "prev_state=%s ==> next_comm=t next_pid=%d next_prio=120"
            % (pid, cpu, flags, ts, prev, prev_state, nxt))


def wake(cpu, ts, pid, target, ev="sched_waking", flags="d..3."):
    return "t-%d [%03d] %s %s: %s: comm=t pid=%d prio=120 target_cpu=%03d" % (
        pid, cpu, flags, ts, ev, target, cpu)


def ev(cpu, ts, pid, flags="....."):
    return "t-%d [%03d] %s %s: kfree: call_site=x ptr=0" % (pid, cpu, flags, ts)


GOOD = [sw(0, "1.000001", 0, "R", 10), sw(1, "1.000002", 0, "R", 11),
        ev(0, "1.000003", 10), wake(0, "1.000004", 10, 12), wake(0, "1.000004", 10, 12,
                                                                 "sched_wakeup", "d..4."),
        sw(0, "1.000005", 10, "S", 12), sw(1, "1.000006", 11, "R+", 0),
        wake(1, "1.000007", 0, 10, flags="d.h3."),
        wake(1, "1.000007", 0, 10, "sched_wakeup", "dNh4."), sw(1, "1.000008", 0, "R", 10)]


def rules(lines):
    return dict(check(lines).violations)


def test_a_good_trace_passes():
    assert rules(GOOD) == {}


def test_each_rule_fires():
    assert "ts" in rules(GOOD[:3] + [ev(0, "0.900000", 10)])
    assert "switch-prev" in rules(GOOD[:3] + [sw(0, "1.000009", 99, "S", 10, pid=99)])
    assert "pid" in rules(GOOD[:3] + [ev(0, "1.000009", 77)])
    assert "two-cpus" in rules(GOOD[:2] + [sw(1, "1.000003", 11, "S", 10)])
    assert "wake-running" in rules(GOOD[:3] + [wake(0, "1.000009", 10, 11)])
    assert "flags" in rules(GOOD[:2] + [sw(0, "1.000003", 10, "S", 12, flags="d.h1.")])
    # asleep and switched in again without a wakeup
    assert "prev-state" in rules(GOOD[:6] + [sw(0, "1.000009", 12, "S", 10)])


def test_the_idle_tasks_lines_show_its_preempt_depth():
    # the idle task runs with preemption disabled; an interrupt's count is
    # not in the depth shown: d.h1. on it, d.h.. on a task
    assert rules(GOOD + [ev(1, "1.000009", 10, "d.h..")]) == {}
    idle_irq = GOOD[:2] + [sw(0, "1.000003", 10, "S", 0), ev(0, "1.000004", 0, "d.h1."),
                           ev(0, "1.000005", 0, "..s1.")]
    assert rules(idle_irq) == {}
    assert rules(idle_irq + [ev(0, "1.000006", 0, "d.h..")]) == {"idle-depth": 1}
    assert rules(idle_irq + [ev(0, "1.000006", 0, "..s..")]) == {"idle-depth": 1}


def named_sw(cpu, ts, prev, nxt, comm):
    return sw(cpu, ts, prev, "S" if prev else "R", nxt).replace(
        "next_comm=t next_pid=%d " % nxt, "next_comm=%s next_pid=%d " % (comm, nxt))


def test_a_per_cpu_kthread_runs_on_its_cpu_only():
    base = GOOD[:2]
    for comm in ("kworker/1:0", "kworker/1:2H", "ksoftirqd/1", "migration/1", "cpuhp/1",
                 "idle_inject/1", "rcuc/1"):
        on_1 = base + [sw(1, "1.000003", 11, "S", 0), named_sw(1, "1.000004", 0, 40, comm)]
        assert rules(on_1) == {}, comm
        on_0 = base + [named_sw(0, "1.000004", 10, 40, comm)]
        assert rules(on_0) == {"per-cpu": 1}, comm
    # its own lines, and a wakeup sending it elsewhere
    line = "kworker/1:0-40 [000] ..... 1.000004: kfree: call_site=x ptr=0"
    assert "per-cpu" in rules(base + [named_sw(0, "1.000003", 10, 40, "t"), line])
    woken = wake(0, "1.000003", 10, 40).replace("comm=t ", "comm=ksoftirqd/1 ")
    assert rules(base + [woken]) == {"per-cpu": 1}
    assert rules(base + [woken.replace("target_cpu=000", "target_cpu=001")]) == {}
    # not per-CPU: unbound workers, rescuers, kthreadd
    for comm in ("kworker/u8:1", "kworker/R-rcu_gp", "kthreadd", "rcu_preempt"):
        assert rules(base + [named_sw(0, "1.000004", 10, 40, comm)]) == {}, comm


def mark(cpu, ts, pid, text, flags="....."):
    return "t-%d [%03d] %s %s: tracing_mark_write: %s" % (pid, cpu, flags, ts, text)


def test_markers_are_stamped_in_their_writers_system_call():
    good = GOOD[:3] + [mark(0, "1.000103", 10, "a"), mark(0, "1.000251", 10, "b"),
                       mark(0, "1.001007", 10, "c", ".N...")]
    assert rules(good) == {}
    # in an interrupt, with irqs off or a lock held: not a write(2)'s context
    for flags in ("d.h..", "..s..", "d....", "...1."):
        assert rules(GOOD[:3] + [mark(0, "1.000103", 10, "a", flags)]) == {"marker": 1}, flags
    # stamped by a clock that was never read: whole milliseconds
    whole = GOOD[:3] + [mark(0, "1.001000", 10, "a"), mark(0, "1.001000", 10, "b"),
                        mark(0, "1.002000", 10, "c")]
    assert rules(whole) == {"marker": 1}
    assert rules(whole[:-1]) == {}            # two may be, by chance
    assert rules(whole[:-1] + [mark(0, "1.002001", 10, "c")]) == {}


def test_cpus_start_when_the_last_one_does():
    # CPU 1's older entries were overwritten: CPU 0's earlier lines are not judged
    lines = [ev(0, "0.500000", 5), sw(0, "0.600000", 7, "S", 8), sw(1, "1.000000", 0, "R", 9),
             ev(0, "1.000001", 8)]
    assert rules(lines) == {}


def test_a_lost_events_line_restarts_that_cpus_timeline():
    gap = GOOD[:3] + ["CPU:0 [LOST 1234 EVENTS]", sw(0, "1.000009", 77, "S", 10, pid=77)]
    rep = check(gap)
    assert rep.total == 0 and rep.lost == 1234
    assert "switch-prev" in rules(GOOD[:3] + [sw(0, "1.000009", 77, "S", 10, pid=77)])


def test_a_filtered_trace_is_checked_line_by_line():
    # prev_pid == 0: the switches between them are filtered out
    lines = [sw(0, "1.000001", 0, "R", 10), sw(0, "1.000005", 0, "R", 11),
             wake(0, "1.000006", 10, 12)]
    assert "switch-prev" in rules(lines)
    assert dict(check(lines, whole=False).violations) == {}
    # what each line must keep still holds, and their order
    assert dict(check(lines + [ev(0, "1.000007", 0, "d.h..")], whole=False).violations) == \
        {"idle-depth": 1}
    assert set(check(lines + [ev(0, "1.000004", 11)], whole=False).violations) == {"ts"}


# --------------------------------------------------------------- function_graph
GRAPH = """\
# tracer: function_graph
#
#     TIME        CPU  TASK/PID         DURATION                  FUNCTION CALLS
#      |          |     |    |           |   |                     |   |   |   |
    1.000000 |   0)    bash-10     |               |  vfs_read() {
    1.000001 |   0)    bash-10     |               |    seq_read() {
    1.000002 |   0)    bash-10     |   0.500 us    |      mutex_lock();
    1.000004 |   0)    bash-10     |   3.000 us    |    } /* seq_read */
    1.000005 |   1)   <idle>-0     |               |  do_idle() {
    1.000005 |   0)    bash-10     |   5.000 us    |  } /* vfs_read */
    1.000006 |   1)   <idle>-0     |   1.000 us    |  } /* do_idle */
    1.000007 |   0)    bash-10     |   0.300 us    |  } /* schedule */
"""


def test_a_good_graph_trace_passes():
    from fakefs.timeline import check_graph
    rep = check_graph(GRAPH.splitlines())
    assert rep.total == 0, rep.text()
    assert rep.events["funcgraph_exit"] == 4       # the last one entered before the trace


def test_each_graph_rule_fires():
    from fakefs.timeline import check_graph
    cases = {
        "graph-exit": GRAPH.replace("} /* seq_read */", "} /* vfs_write */"),
        "graph-nest": GRAPH.replace("   3.000 us    |    } /* seq_read */",
                                    "   0.400 us    |    } /* seq_read */"),
        "graph-duration": GRAPH.replace("   5.000 us    |  } /* vfs_read */",
                                        "   9.000 us    |  } /* vfs_read */"),
        "ts": GRAPH.replace("    1.000006 |   1)", "    1.000001 |   1)"),
    }
    for rule, text in cases.items():
        rep = check_graph(text.splitlines())
        assert rep.violations[rule] >= 1, (rule, rep.text())


def test_a_simulated_graph_trace_keeps_them(tmp_path):
    """The function graph tracer of the simulated kernel, every function,
    100 ms: no violation (issue 36's DM3 asks 1 s: `python -m
    fakefs.timeline` on a mount's trace, in NOTES)."""
    import sys
    sys.path.insert(0, "tests/kernel/trace")
    from fakefs.sim.clock import ManualClock
    from fakefs.timeline import check_graph, main
    from kfiles import rd, wr
    clock = ManualClock()
    k = sim.boot(seed=5, nr_cpus=2, clock=clock, host_kallsyms=False)
    for o in ("funcgraph-abstime", "funcgraph-proc", "funcgraph-tail"):
        wr(k, "options/" + o, "1\n")
    wr(k, "current_tracer", "function_graph\n")
    for _ in range(10):
        clock.advance(10_000_000)
        k.timekeeper.run_until_now()
    text = rd(k, "trace")
    rep = check_graph(text.splitlines())
    assert rep.total == 0, rep.text()
    assert rep.events["funcgraph_exit"] > 10_000
    path = tmp_path / "trace"
    path.write_text(text)
    assert main([str(path)]) == 0
    wr(k, "options/funcgraph-proc", "0\n")
    path.write_text(rd(k, "trace"))
    assert main([str(path)]) == 2                   # says which options it needs
