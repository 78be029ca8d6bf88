"""What a kprobe's registers hold at a hit of the simulated kernel's calls."""

from __future__ import annotations

import os

from fakefs import sim
from fakefs.sim.files import read_file, write_file
from fakefs.sim.clock import ManualClock

T = "sys/kernel/tracing/"


def test_an_open_passes_at_fdcwd_as_its_dfd():
    """openat(AT_FDCWD, path, ...), as glibc's open() makes it: do_sys_openat2's
    dfd (x64 by default) is -100 as the register holds it, now and then a
    directory's fd; the path is a user address (on the stack, or in the
    heap of a task whose calls pass their own strings: sim/syscalls.py),
    ``how`` on the kernel stack."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    write_file(k, T + "kprobe_events",
                 b"p:myopen do_sys_openat2 dfd=%di path=%si how=%dx\n")
    write_file(k, T + "events/kprobes/myopen/enable", b"1")
    for _ in range(50):
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
    lines = [ln for ln in read_file(k, T + "trace").decode().splitlines()
             if "myopen:" in ln]
    assert len(lines) >= 20
    dfds = [int(ln.split("dfd=")[1].split()[0], 16) for ln in lines]
    assert sum(d == 0xffffff9c for d in dfds) >= 0.8 * len(dfds)
    assert all(d == 0xffffff9c or 3 <= d < 32 for d in dfds)
    for ln in lines:
        assert ln.split("path=")[1].split()[0].startswith(("0x7ffc", "0x55"))
        assert ln.split("how=")[1].split()[0].startswith("0xffffc9")


def _hits(k, defs, events, seconds=1.0):
    for d in defs:
        write_file(k, T + "kprobe_events", (d + "\n").encode(), os.O_WRONLY | os.O_APPEND)
    for ev in events:
        write_file(k, T + "events/kprobes/%s/enable" % ev, b"1")
    for _ in range(int(seconds * 50)):
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
    return read_file(k, T + "trace").decode().splitlines()


def test_arguments_and_return_values_are_of_the_prototypes_types():
    """At a function's entry the argument registers hold what its BTF
    prototype says (pointers into the direct map or NULL, small counts);
    a return value is of the function's return type."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    lines = _hits(k, ["p:fr kfree %di", "p:rd vfs_read %di %dx",
                      "r:al kmem_cache_alloc_noprof %ax"], ["fr", "rd", "al"])
    frees = [int(ln.split("arg1=")[1], 16) for ln in lines if " fr: " in ln]
    reads = [ln.split("arg1=")[1].split() for ln in lines if " rd: " in ln]
    allocs = [int(ln.split("arg1=")[1], 16) for ln in lines if " al: " in ln]
    assert frees and reads and allocs
    for p in frees + [int(r[0], 16) for r in reads] + allocs:
        assert p == 0 or p >> 39 == 0xffff888000000000 >> 39 or p > (1 << 64) - 4096, hex(p)
    assert sum(p != 0 for p in frees + allocs) > 0.8 * len(frees + allocs)
    assert all(int(r[1].split("=")[1], 16) < 0x10000 for r in reads)       # count
