"""What the machine's tasks and devices are like (data/machine.toml).

* :class:`Behaviour`: how the tasks of one workload profile run and sleep
  (mean burst of CPU time, sleep state, mean sleep, what wakes them, a
  shell's commands, a kworker's pool of works);
* :class:`Device`: an interrupt source that wakes sleepers;
* :class:`TaskRun`: the machine's state of one task (what is left of its
  burst, the system call it sleeps in, the timer or work it waits for).
"""

from __future__ import annotations

import os
import tomllib

from ..kernel.workqueue import POOLS

DATA_PATH = os.path.join(os.path.dirname(__file__), "data", "machine.toml")
US = 1000
WAKERS = ("timer", "irq", "task")


def load_behaviour(path: str = DATA_PATH) -> dict:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


class Behaviour:
    """How the tasks of one profile run and sleep."""

    __slots__ = ("burst_ns", "sleep_ns", "state", "waker", "cpu_bound", "fork", "programs",
                 "pool")

    def __init__(self, spec: dict):
        self.burst_ns = int(spec["burst_us"] * US)
        self.sleep_ns = int(spec["sleep_us"] * US)
        self.state = spec["state"]
        self.waker = spec["waker"]
        self.cpu_bound = bool(spec.get("cpu_bound", False))
        self.fork = float(spec.get("fork", 0.0))      # share of bursts ending in fork + wait
        self.programs = list(spec.get("programs", ()))
        self.pool = spec.get("pool")                  # a kworker's works
        if self.state not in ("S", "D", "I") or self.waker not in WAKERS or \
                self.pool not in (None,) + POOLS:
            raise ValueError("bad behaviour %r" % (spec,))


class Device:
    """An interrupt source: its irq line and name, the softirq it raises,
    its interrupt chip and its number there (/proc/interrupts)."""

    __slots__ = ("irq", "name", "softirq", "chip", "hwirq")

    def __init__(self, spec: dict):
        self.irq = int(spec["irq"])
        self.name = spec["name"]
        self.softirq = int(spec["softirq"])
        self.chip = spec["chip"]
        self.hwirq = int(spec["hwirq"])


class TaskRun:
    """Machine-side state of one task: what is left of its burst.  A task
    of the real machine (``host``) is only woken by its own system calls."""

    __slots__ = ("task", "beh", "left", "since", "token", "host", "parent", "program",
                 "sigchld", "calls", "tc", "sys", "sysret", "reap", "timer", "work",
                 "early", "timed_out", "startup")

    def __init__(self, task, beh, host: bool = False, parent: int = 0, program: str = "",
                 calls=None, tc=None):
        self.task = task
        self.beh = beh
        self.left = 0
        self.since = 0
        self.token = 0
        self.host = host
        self.parent = parent          # a forked child: it exits after its burst
        self.program = program        # ... and execs this first
        self.sigchld = False          # a child exited: SIGCHLD to take
        self.calls = calls            # its system calls (ProfileCalls), None for kthreads
        self.tc = tc                  # their values (TaskCalls)
        self.sys = None               # the call it sleeps in (CallSpec) ...
        self.sysret = 0               # ... and what it returns
        self.reap = None              # (comm, pid, prio) of the child its wait4 reaps
        self.timer = None             # the wheel timer it sleeps on (kernel threads)
        self.work = None              # a kworker's work: the one it runs / is woken for
        # a sleep with a timeout (epoll_wait()'s) whose device came first:
        # its hrtimer is still queued; or whose hrtimer came first
        self.early = False
        self.timed_out = False
        self.startup: list = []       # the calls it makes next, in order (its loader's)


