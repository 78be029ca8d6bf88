"""Tasks and CPUs (kernel/sched): who runs where.

Each simulated CPU has a runqueue of tasks and a current task; the workload
switches tasks as simulated time passes.  Pids and comms are what the trace
output prints (``bash-1234``, ``<idle>-0``).
"""

from __future__ import annotations

import os


class Task:
    __slots__ = ("pid", "tgid", "comm", "prio", "cpu", "kthread")

    def __init__(self, pid: int, comm: str, cpu: int = 0, tgid: int | None = None,
                 prio: int = 120, kthread: bool = False):
        self.pid = pid
        self.tgid = pid if tgid is None else tgid
        self.comm = comm[:15]
        self.prio = prio
        self.cpu = cpu
        self.kthread = kthread

    def __repr__(self):
        return f"Task({self.comm}-{self.pid})"


def host_cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Scheduler:
    """The task list and per-CPU current task."""

    def __init__(self, nr_cpus: int):
        self.nr_cpus = nr_cpus
        self.tasks: dict[int, Task] = {}
        self.idle = [Task(0, "swapper/%d" % c, cpu=c, prio=120, kthread=True) for c in range(nr_cpus)]
        self.curr = list(self.idle)
        self.next_pid = 1

    def spawn(self, comm: str, cpu: int = 0, kthread: bool = False, pid: int | None = None,
              tgid: int | None = None, prio: int = 120) -> Task:
        if pid is None:
            pid = self.next_pid
        self.next_pid = max(self.next_pid, pid + 1)
        t = Task(pid, comm, cpu=cpu, kthread=kthread, tgid=tgid, prio=prio)
        self.tasks[pid] = t
        return t

    def find(self, pid: int) -> Task | None:
        if pid == 0:
            return self.idle[0]
        return self.tasks.get(pid)
