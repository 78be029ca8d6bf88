"""Lookups of names longer than NAME_MAX, per filesystem (namei.py)."""

import errno

import pytest

from fakefs import sim
from fakefs.kernel.fs.namei import NAME_MAX, filesystem_of, lookup_name, lookup_name_too_long
from fakefs.kernel.fs.pseudo import KernelError
from fakefs.sim.clock import ManualClock

LONG = b"a" * (NAME_MAX + 1)


def test_simple_lookup_filesystems_refuse_ext4_too_procfs_sysfs_eventfs_do_not():
    """As the host's tracefs, procfs, sysfs, devtmpfs and ext4 answer a
    stat of a 256-byte name (tracefs mounted in a private namespace)."""
    too_long = ["/", "/boot", "/dev", "/sys/kernel/tracing", "/sys/kernel/tracing/per_cpu/cpu0",
                "/sys/kernel/tracing/options", "/sys/kernel/tracing/instances",
                "/sys/kernel/tracing/instances/foo", "/sys/kernel/tracing/instances/events",
                "/sys/kernel/debug", "/sys/kernel/debug/kprobes"]
    not_found = ["/proc", "/proc/sys/kernel", "/sys", "/sys/kernel", "/sys/devices/system",
                 "/sys/kernel/tracing/events", "/sys/kernel/tracing/events/sched",
                 "/sys/kernel/tracing/instances/foo/events/sched/sched_switch"]
    for d in too_long:
        assert lookup_name_too_long(d, LONG), d
        assert not lookup_name_too_long(d, LONG[:-1]), d
    for d in not_found:
        assert not lookup_name_too_long(d, LONG), d
    assert filesystem_of("/sys/kernel/tracing/instances/x") == ("tracefs", ["instances", "x"])


def test_tracefs_lookup_is_enametoolong_eventfs_searches():
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    inst = k.tracing.root.children["instances"]
    for name in (b"b" * 256, b"b" * 1500, "\u00e9".encode() * 128):   # bytes, as the VFS counts
        with pytest.raises(KernelError) as e:
            lookup_name(inst, name)
        assert e.value.errno == errno.ENAMETOOLONG
    lookup_name(inst, b"b" * 255)
    lookup_name(k.tracing.root.children["events"], b"b" * 1500)    # eventfs: searched, not refused
