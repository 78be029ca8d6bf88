"""/proc/sys/kernel/sched_rt_period_us and sched_rt_runtime_us."""

import errno
import os

from fakefs import sim
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, rd, wr

P = "proc/sys/kernel/"


def test_rt_bandwidth_sysctls_check_like_sched_rt_handler():
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    assert rd(k, "sched_rt_period_us", P) == "1000000\n"
    assert rd(k, "sched_rt_runtime_us", P) == "950000\n"
    wr(k, "sched_rt_runtime_us", "-1\n", base=P)          # what ftracetest's setup writes
    assert rd(k, "sched_rt_runtime_us", P) == "-1\n"
    assert errno_of(wr, k, "sched_rt_runtime_us", "-2", os.O_WRONLY | os.O_TRUNC, P) == errno.EINVAL
    assert errno_of(wr, k, "sched_rt_runtime_us", "1000001", os.O_WRONLY | os.O_TRUNC, P) == errno.EINVAL
    assert errno_of(wr, k, "sched_rt_runtime_us", "abc", os.O_WRONLY | os.O_TRUNC, P) == errno.EINVAL
    wr(k, "sched_rt_runtime_us", "950000", base=P)
    # a period below the runtime: the pair is refused, nothing changes
    assert errno_of(wr, k, "sched_rt_period_us", "900000", os.O_WRONLY | os.O_TRUNC, P) == errno.EINVAL
    assert errno_of(wr, k, "sched_rt_period_us", "0", os.O_WRONLY | os.O_TRUNC, P) == errno.EINVAL
    assert rd(k, "sched_rt_period_us", P) == "1000000\n"
    wr(k, "sched_rt_period_us", "2000000", base=P)
    assert rd(k, "sched_rt_period_us", P) == "2000000\n"
