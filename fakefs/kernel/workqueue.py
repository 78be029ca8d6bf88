"""Workqueues (kernel/workqueue.c): work items and the kworkers that run them.

A work item is queued on a workqueue (``workqueue_queue_work``, then
``workqueue_activate_work`` as it goes onto the pool's worklist, both under
the pool lock with irqs off: ``d.s2.`` from a softirq, ``d..2.`` from a
task), which wakes an idle kworker of the pool; the kworker runs the work's
function between ``workqueue_execute_start`` and ``workqueue_execute_end``
(plain task context).  A delayed work is queued by its timer's function,
``delayed_work_timer_fn``, in the TIMER softirq (``kernel/timer.py``).

Which works exist and which pool runs them is data (``data/works.toml``).
"""

from __future__ import annotations

import os
import tomllib

from .sched import IRQS_OFF, SOFTIRQ
from .timer import TIMER_DEFERRABLE, TIMER_IRQSAFE, TIMER_PINNED, TimerList

DATA_PATH = os.path.join(os.path.dirname(__file__), "data", "works.toml")
WORK_CPU_UNBOUND = 8192              # NR_CPUS of Debian's amd64 kernels
POOLS = ("percpu", "unbound", "highpri")
_TIMER_LETTERS = {"D": TIMER_DEFERRABLE, "P": TIMER_PINNED, "I": TIMER_IRQSAFE}
# where the kernel's static work_structs and delayed works are (per-CPU
# ones in each CPU's area)
WORK_BASE = 0xffff88807dc2a0c0
WORK_STRIDE = 0x60
CPU_AREA = 0x40000


def load_works(path: str = DATA_PATH) -> list:
    with open(path, "rb") as fh:
        return tomllib.load(fh)["work"]


class Work:
    """A ``work_struct`` (with its timer when it is a delayed work)."""

    __slots__ = ("addr", "function", "name", "workqueue", "pool", "timer", "cpu")

    def __init__(self, addr: int, function: int, name: str, workqueue: str, pool: str,
                 timer: TimerList | None, cpu: int):
        self.addr = addr
        self.function = function
        self.name = name
        self.workqueue = workqueue
        self.pool = pool
        self.timer = timer
        self.cpu = cpu                   # the CPU it is queued on; -1: unbound


class Workqueues:
    """The work items of one kernel, by pool, and the events of their life."""

    def __init__(self, sched, tracepoints, nr_cpus: int, specs=None):
        self.sched = sched
        self.nr_cpus = nr_cpus
        tp = tracepoints.get
        self.tp_queue = tp("workqueue_queue_work")
        self.tp_activate = tp("workqueue_activate_work")
        self.tp_start = tp("workqueue_execute_start")
        self.tp_end = tp("workqueue_execute_end")
        self.specs = list(specs if specs is not None else load_works())
        for spec in self.specs:
            if spec["pool"] not in POOLS:
                raise ValueError("work %s: unknown pool %r" % (spec["function"], spec["pool"]))
        # pool -> per CPU (-1 for unbound) -> (works, cumulative weights)
        self.works: dict[tuple, tuple] = {}

    def set_symbols(self, kallsyms) -> None:
        """Make the work items of this boot (their functions' addresses)."""
        self.works.clear()
        timer_fn = kallsyms.addr_of("delayed_work_timer_fn") or 0
        n = 0
        for spec in self.specs:
            pool = spec["pool"]
            fn = kallsyms.addr_of(spec["function"])
            if not fn:
                continue                      # not in this kernel's symbols
            cpus = range(self.nr_cpus) if pool != "unbound" else (-1,)
            for cpu in cpus:
                addr = WORK_BASE + n * WORK_STRIDE + max(cpu, 0) * CPU_AREA
                timer = None
                if "timer" in spec:
                    flags = 0
                    for ch in spec["timer"]:
                        flags |= _TIMER_LETTERS[ch]
                    timer = TimerList(addr + 0x20, timer_fn, flags)
                work = Work(addr, fn, spec["function"], spec["workqueue"], pool, timer, cpu)
                works, cum = self.works.setdefault((pool, cpu), ([], []))
                works.append(work)
                cum.append((cum[-1] if cum else 0.0) + float(spec["weight"]))
            n += 1

    def pick(self, pool: str, cpu: int, x: float) -> Work | None:
        """The work a kworker of ``pool`` (on ``cpu``) is woken for; ``x`` in [0, 1)."""
        got = self.works.get((pool, cpu if pool != "unbound" else -1))
        if not got:
            return None
        works, cum = got
        x *= cum[-1]
        for w, c in zip(works, cum):
            if x < c:
                return w
        return works[-1]

    def queue_work(self, cpu: int, t: int, work: Work, softirq: bool) -> None:
        """``__queue_work()`` on ``cpu``: onto the pool's worklist."""
        base = IRQS_OFF | (SOFTIRQ if softirq else 0)
        req = work.cpu if work.cpu >= 0 else WORK_CPU_UNBOUND
        pool_cpu = work.cpu if work.cpu >= 0 else -1
        self.sched.fire(self.tp_queue, cpu, t, base, 2,
                   (work.addr, work.function, work.workqueue, req, pool_cpu))
        self.sched.fire(self.tp_activate, cpu, t, base, 2, (work.addr, work.function))

    def execute_start(self, cpu: int, t: int, work: Work) -> None:
        self.sched.fire(self.tp_start, cpu, t, 0, 0, (work.addr, work.function))

    def execute_end(self, cpu: int, t: int, work: Work) -> None:
        self.sched.fire(self.tp_end, cpu, t, 0, 0, (work.addr, work.function))
