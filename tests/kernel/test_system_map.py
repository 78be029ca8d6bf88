"""/boot/System.map for the simulated kernel's text."""

from __future__ import annotations

import os
import stat

import pytest

from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from fakefs import sim

INITCALLS = [("fakefs.kernel.kallsyms", "kallsyms_init"),
             ("fakefs.kernel.system_map", "system_map_init")]


@pytest.fixture(scope="module")
def k():
    kern = Kernel(cmdline="", seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    return sim.boot_kernel(kern, INITCALLS)


def read(k, path):
    n = k.tree.root.walk(path)
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    return n.fops.read(f, 0, 1 << 30)


def test_files_and_size(k):
    boot = k.tree.root.walk("boot")
    assert sorted(boot.children) == ["System.map", "System.map-" + k.config.release]
    for n in boot.children.values():
        assert stat.S_IMODE(n.mode) == 0o600 and n.uid == 0     # root's only: no addresses for others
        assert n.fops.size(n) == len(read(k, "boot/" + n.name)) > 0


def test_format_and_order(k):
    lines = read(k, "boot/System.map").decode().splitlines()
    addrs = []
    for ln in lines[:2000] + lines[-2000:]:
        addr, typ, name = ln.split(" ")
        assert len(addr) == 16 and typ in "tTwW" and name
        assert len(ln) < 127                  # readprofile reads lines with fgets(128)
        addrs.append(int(addr, 16))
    assert addrs[:2000] == sorted(addrs[:2000])
    names = [ln.split(" ")[2] for ln in lines]
    stext = names.index("_stext")
    etext = names.index("_etext")
    assert stext < etext
    ks = k.kallsyms
    assert int(lines[stext].split()[0], 16) == ks.addr_of("_stext")
    assert int(lines[etext].split()[0], 16) == ks.addr_of("_etext")


def test_not_writable(k):
    n = k.tree.root.walk("boot/System.map")
    with pytest.raises(KernelError):
        n.fops.write(File(n, os.O_WRONLY), b"x")
