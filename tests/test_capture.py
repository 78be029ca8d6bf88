"""The in-process capture: a consistent timeline, every driven family present."""

from __future__ import annotations

from fakefs.capture import capture, event_name, main


def test_event_names():
    assert event_name("  cc1-2888 [000] ..... 1.0: sys_read -> 0x340") == "sys_read"
    assert event_name("  cc1-2888 [000] ..... 1.0: sys_read(fd: 3, buf: 7f, count: 10)") == "sys_read"
    assert event_name("  <idle>-0 [001] d..2. 1.0: sched_switch: prev_comm=x") == "sched_switch"
    assert event_name(" => __schedule") == ""


def test_two_seconds_of_every_event_break_no_rule():
    rep, counts, n, _cpu = capture(2, seed=3)
    assert rep.total == 0 and rep.lost == 0 and n > 50_000
    for name in ("sched_switch", "sched_stat_runtime", "sched_process_free", "task_rename",
                 "irq_handler_entry", "softirq_entry", "timer_start", "hrtimer_start",
                 "workqueue_execute_start", "sys_enter", "sys_read", "kmalloc",
                 "mm_page_alloc", "kmem_cache_free", "signal_deliver", "cpu_idle",
                 "ipi_send_cpu"):
        assert counts[name] > 0, name


def test_main_reports_and_exits_zero(capsys, tmp_path):
    out = tmp_path / "t.txt"
    assert main(["1", "--events", "sched:*", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "violations 0" in text and "sched_switch" in text
    assert "sched_switch:" in out.read_text()


def test_allocations_are_made_by_tasks(tmp_path):
    """The allocators' callers are tasks: a new object is never allocated
    by an idle CPU's swapper, nor in a hard interrupt."""
    out = tmp_path / "t.txt"
    with open(out, "w") as fh:
        rep, counts, _n, _cpu = capture(2, seed=2, events="kmem:kmalloc,kmem:kmem_cache_alloc,"
                                        "kmem:mm_page_alloc", out=fh)
    assert rep.total == 0 and counts["kmem_cache_alloc"] > 1000 and counts["kmalloc"] > 100
    for line in out.read_text().splitlines():
        comm_pid, _cpu_, flags = line.split()[:3]
        assert not comm_pid.startswith("<idle>-0") and flags[2] != "h", line
