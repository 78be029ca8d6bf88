"""/dev/kmsg and kernel.dmesg_restrict in the kernel model (devkmsg_open, check_syslog_permissions)."""

import errno
import os

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File, KernelError


def boot(**kw):
    return sim.boot(host_kallsyms=False, **kw)


def kmsg_open(k, uid, flags=os.O_RDONLY):
    node = k.tree.root.walk("dev/kmsg")
    f = File(node, flags, pid=1, uid=uid)
    node.fops.open(f)
    return f


def sysctl(k):
    return k.tree.root.walk("proc/sys/kernel/dmesg_restrict")


def test_restricted_by_default():
    k = boot()
    assert sysctl(k).fops.show(File(sysctl(k), os.O_RDONLY)) == "1\n"
    with pytest.raises(KernelError) as e:
        kmsg_open(k, 1000)
    assert e.value.errno == errno.EPERM
    f = kmsg_open(k, 0)
    assert b"Linux version" in f.node.fops.read(f, 0, 8192)
    kmsg_open(k, 1000, os.O_WRONLY)          # write-only opens are not checked


def test_sysctl_toggles_and_validates():
    k = boot()
    node = sysctl(k)
    w = File(node, os.O_WRONLY)
    node.fops.write(w, b"0\n")
    kmsg_open(k, 1000)
    for bad in (b"2", b"-1", b"x"):
        with pytest.raises(KernelError) as e:
            node.fops.write(w, bad)
        assert e.value.errno == errno.EINVAL
    node.fops.write(w, b"1")
    with pytest.raises(KernelError):
        kmsg_open(k, 1000)


def test_config_and_old_kernels():
    k = boot(config_overrides={"CONFIG_SECURITY_DMESG_RESTRICT": False})
    kmsg_open(k, 1000)
    old = boot(persona="2.6.30-eqware")      # dmesg_restrict appeared in 2.6.37
    assert sysctl(old) is None
    kmsg_open(old, 1000)
