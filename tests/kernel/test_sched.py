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
