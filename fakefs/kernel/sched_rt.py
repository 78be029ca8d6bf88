"""Real-time bandwidth: ``/proc/sys/kernel/sched_rt_{period,runtime}_us`` (kernel/sched/rt.c).

Real-time tasks may use ``runtime`` µs of every ``period`` µs of a CPU
(-1: no limit).  The values are checked as ``sched_rt_handler()`` checks
them: each within its row's bounds (``proc_dointvec_minmax``: the period at
least 1, the runtime from -1 up to the period), then the pair (a runtime
over the period is EINVAL and both stay as they were).  The simulated
machine's real-time tasks (the migration threads) run for microseconds at a
time, far below any allowed runtime: the limit is never reached here, as on
an idle real machine.
"""

from __future__ import annotations

import errno

from .fs.pseudo import KernelError
from .fs.proc.base import CtlTable, parse_dointvec_minmax, register_sysctl

INT_MAX = 0x7FFFFFFF
RUNTIME_INF = -1
PERIOD_DEFAULT = 1_000_000
RUNTIME_DEFAULT = 950_000


class RtBandwidth:
    __slots__ = ("period", "runtime")

    def __init__(self):
        self.period = PERIOD_DEFAULT
        self.runtime = RUNTIME_DEFAULT

    def store(self, name: str, text: str) -> None:
        """``sched_rt_handler()`` for a write of ``text`` to ``name``."""
        data = text.encode("latin-1")
        if name == "sched_rt_period_us":
            val, _n = parse_dointvec_minmax(data, 1, INT_MAX)
            period, runtime = val, self.runtime
        else:
            val, _n = parse_dointvec_minmax(data, RUNTIME_INF, self.period)
            period, runtime = self.period, val
        if runtime != RUNTIME_INF and runtime > period:      # sched_rt_global_validate()
            raise KernelError(errno.EINVAL)
        self.period, self.runtime = period, runtime


def sched_rt_sysctl_init(kernel) -> None:
    bw = RtBandwidth()
    register_sysctl(kernel, "kernel", [
        CtlTable("sched_rt_period_us", 0o644, lambda: "%d\n" % bw.period,
                 lambda text: bw.store("sched_rt_period_us", text)),
        CtlTable("sched_rt_runtime_us", 0o644, lambda: "%d\n" % bw.runtime,
                 lambda text: bw.store("sched_rt_runtime_us", text)),
    ])
