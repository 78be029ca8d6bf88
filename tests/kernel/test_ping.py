"""ping.py: the control file of fakefs's ping (selftest/ping.py)."""

import errno
import os
import re

import pytest

from fakefs import sim
from fakefs.fuse.cnproc import host_pid_max
from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from fakefs.sim.files import finish
from kfiles import rd, wr

MS = 1_000_000


def boot():
    """A kernel with its machine, which sees the real processes' calls (its
    own tasks' pids above the host's, as the daemon has them: this test's
    process, a real one, is the caller)."""
    clock = ManualClock()
    k = Kernel(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False)
    k.host_tasks = True
    k.sched.pid_floor = host_pid_max()
    sim.boot_kernel(k)
    k.add_machine_watcher(lambda: True)
    sim.attach(k)
    return k, clock


def echo(k, pid, data=b"echo\n"):
    k.timekeeper.run_until_now()                 # (the caller brings the machine to its instant)
    n = k.tree.root.walk(".fakefs/ping")
    f = File(n, os.O_WRONLY, pid=pid)
    n.fops.open(f)
    try:
        return finish(k, n.fops.write(f, data))
    finally:
        n.fops.release(f)


def test_each_echo_wakes_and_runs_the_caller():
    k, clock = boot()
    comm = "ping"
    k.driver.host.caller(os.getpid(), comm)
    wr(k, "events/sched/sched_waking/enable", "1\n")
    wr(k, "events/sched/sched_switch/enable", "1\n")
    for _ in range(3):
        clock.advance(100 * MS)
        assert echo(k, os.getpid()) == 5
    clock.advance(10 * MS)
    text = rd(k, "trace")
    wakings = re.findall(r"sched_waking: comm=%s pid=(\d+) " % re.escape(comm), text)
    switches = re.findall(r"==> next_comm=%s next_pid=(\d+) " % re.escape(comm), text)
    assert len(wakings) == 3 and len(switches) >= 3
    assert set(wakings) == set(switches)


def test_anything_else_is_refused():
    k, _clock = boot()
    with pytest.raises(KernelError) as e:
        echo(k, os.getpid(), b"hello\n")
    assert e.value.errno == errno.EINVAL
