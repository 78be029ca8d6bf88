"""The scheduler's task table (sched.py): pid allocation beside the real
machine's processes."""

from fakefs.kernel.sched import RESERVED_PIDS, Scheduler


def test_pids_skip_the_ones_in_use_here_and_there():
    s = Scheduler(1)
    host = {5, 6}
    s.pid_in_use = host.__contains__
    s.next_pid = 4
    assert [s.spawn("t").pid for _ in range(3)] == [4, 7, 8]


def test_past_the_reserved_pids_they_start_above_the_real_machines_pid_max():
    s = Scheduler(1)
    s.pid_floor = 32768
    s.next_pid = RESERVED_PIDS - 2
    got = [s.spawn("t").pid for _ in range(4)]
    assert got == [RESERVED_PIDS - 2, RESERVED_PIDS - 1, 32768, 32769]
    s.spawn("t", pid=40000)                    # a real process's task
    s.next_pid = 39999
    assert [s.spawn("t").pid for _ in range(2)] == [39999, 40001]


def test_a_bound_task_is_woken_onto_its_cpu_only():
    sched = Scheduler(4)
    free = sched.spawn("t", cpu=2)
    bound = sched.spawn("kworker/3:0", cpu=3, kthread=True)
    bound.bound = True
    for t in (free, bound):
        t.state = "S"
    busy = sched.spawn("busy", cpu=3)
    sched.enqueue(busy, 3)
    sched.schedule(3, 1000)                  # CPU 3 runs a task, the others idle
    assert sched.curr[3] is busy
    assert sched.select_task_rq(bound) == 3  # not an idle CPU: its own
    sched.try_to_wake_up(bound, 0, 2000)
    assert bound.cpu == 3 and bound in sched.rq[3]
    free.cpu = 3
    assert sched.select_task_rq(free) != 3   # any idle one


def test_halted_time_is_kept_per_cpu():
    """When a CPU halted, woke, or was not simulated (halts), and what
    that adds up to: halted_spans, cpu_time, awake_share, awake_seconds."""
    s = Scheduler(2)
    s.idle_enter(0, 100)
    s.idle_exit(0, 300)
    s.idle_enter(0, 700)
    s.unseen(1000)                      # the machine stops (a skip)
    s.idle_enter(0, 2000)               # simulated again, halted as it was
    s.idle_enter(1, 2000)               # (the machine halts every CPU at its start)
    s.idle_exit(0, 2500)
    assert s.halted_spans(0, 0, 3000) == [(100, 300), (700, 1000), (2000, 2500)]
    assert s.halted_spans(0, 200, 800) == [(200, 300), (700, 800)]
    assert s.halted_spans(1, 0, 3000) == [(2000, 3000)]
    # after the last change: the one state it is in (a live segment's)
    assert s.halted_spans(1, 2500, 3000) == [(2500, 3000)]
    assert s.halted_spans(0, 2600, 3000) == [] == s.halted_spans(1, 3000, 3000)
    assert s.cpu_time(0, 3000) == (200 + 300 + 500, 1000)
    assert s.cpu_time(1, 3000) == (1000, 1000)    # (both stopped)
    assert s.cpu_time(0, 800) == (300, 0)
    assert s.awake_share(0, 3000) == 0.5
    secs = s.awake_seconds(s.cpu_times(0), s.cpu_times(3000))
    # CPU 0: awake 1000 of the 2000 simulated, and half of the 1000 not
    seen_share = (2000 - 1000) / 2000
    assert secs[0] == (3000 - 1000 - 1000 + 1000 * seen_share) / 1e9
    assert secs[1] == (3000 - 1000 - 1000 + 1000 * 0.5) / 1e9
    s.forget_before(2100)               # the state then is kept
    assert s.halted_spans(0, 2100, 3000) == [(2100, 2500)]
    assert s.cpu_time(0, 3000) == (1000, 1000)
