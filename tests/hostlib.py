"""A booted machine (manual clock, sim.attach) whose real processes are its
host tasks (``sim.host``): the helpers of the tests of what they do."""

from __future__ import annotations

from fakefs import sim
from fakefs.sim.files import read_file, write_file
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock

T = "sys/kernel/tracing/"
STEP = 20_000_000
MS = 1_000_000


def boot(always_seen: bool = True):
    """(kernel, machine); ``always_seen``: the machine itself is under test,
    simulated whether or not anything traces."""
    k = Kernel(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.host_tasks = True
    sim.boot_kernel(k)
    if always_seen:
        k.add_machine_watcher(lambda: True)
    return k, sim.attach(k)


def run(k, seconds: float) -> None:
    for _ in range(int(seconds * 1e9 // STEP)):
        k.clock.advance(STEP)
        k.timekeeper.run_until_now()


def write(k, path: str, data: str) -> None:
    write_file(k, T + path, data.encode())


def lines(k) -> list[str]:
    return [ln for ln in read_file(k, T + "trace").decode().splitlines()
            if not ln.startswith("#")]


def fork_exec_exit(k, m, parent=5000, child=5001, t=None, comm="ftracetest", lives=2 * MS):
    """The followed ``parent`` (named ``comm``) forks ``child`` a millisecond
    after now (or at ``t``), which execs sleep 2 ms later and exits
    ``lives`` after that."""
    m.host.caller(parent, comm)
    t = k.sim_time + MS if t is None else t
    m.host.event("fork", t, child, ppid=parent, tgid=child)
    m.host.event("exec", t + 2 * MS, child, filename="/usr/bin/sleep")
    m.host.event("exit", t + 2 * MS + lives, child)
