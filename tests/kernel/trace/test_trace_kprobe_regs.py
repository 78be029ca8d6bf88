"""What a kprobe's registers hold at a hit of the simulated kernel's calls."""

from __future__ import annotations

from fakefs import sim
from fakefs.kernel.fs.pseudo import kernel_read, kernel_write
from fakefs.kernel.time import ManualClock

T = "sys/kernel/tracing/"


def test_an_open_passes_at_fdcwd_as_its_dfd():
    """openat(AT_FDCWD, path, ...), as glibc's open() makes it: do_sys_openat2's
    dfd (x64 by default) is -100 as the register holds it, now and then a
    directory's fd; the path is a user address, ``how`` on the kernel stack."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    kernel_write(k.tree, T + "kprobe_events",
                 b"p:myopen do_sys_openat2 dfd=%di path=%si how=%dx\n")
    kernel_write(k.tree, T + "events/kprobes/myopen/enable", b"1")
    for _ in range(50):
        k.clock.advance(20_000_000)
        k.run_until_now()
    lines = [ln for ln in kernel_read(k.tree, T + "trace").decode().splitlines()
             if "myopen:" in ln]
    assert len(lines) >= 20
    dfds = [int(ln.split("dfd=")[1].split()[0], 16) for ln in lines]
    assert sum(d == 0xffffff9c for d in dfds) >= 0.8 * len(dfds)
    assert all(d == 0xffffff9c or 3 <= d < 32 for d in dfds)
    for ln in lines:
        assert ln.split("path=")[1].split()[0].startswith("0x7ffc")
        assert ln.split("how=")[1].split()[0].startswith("0xffffc9")
