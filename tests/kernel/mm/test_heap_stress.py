"""EQware's /proc/allocinfo on the 2.6.30 persona, and its companions."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.kernel.init import Kernel
from fakefs.kernel.mm.heap_stress import memparse
from fakefs.sim.clock import ManualClock
from fakefs import sim

PERSONA = "2.6.30-eqware"
INITCALLS = [("fakefs.kernel.fs.proc.base", "proc_root_init"),
             ("fakefs.kernel.mm.heap_stress", "heap_stress_init")]
SEC = 1_000_000_000


def boot(cmdline="", persona=PERSONA, initcalls=INITCALLS, seed=1):
    clock = ManualClock()
    k = Kernel(persona=persona, cmdline=cmdline, seed=seed, nr_cpus=2, clock=clock,
               host_kallsyms=False)
    sim.boot_kernel(k, initcalls)
    return k, clock


def node(k, path):
    return k.tree.root.walk(path)


def opened(k, path, flags=os.O_RDONLY):
    n = node(k, path)
    f = File(n, flags)
    n.fops.open(f)
    return f


def cat(k, path) -> str:
    f = opened(k, path)
    out = b""
    while True:
        chunk = f.node.fops.read(f, len(out), 4096)
        if not chunk:
            break
        out += chunk
    return out.decode()


def write(k, path, data: bytes):
    f = opened(k, path, os.O_WRONLY)
    return f.node.fops.write(f, data)


def counters(k):
    line = cat(k, "proc/allocinfo")
    assert line.endswith("\n") and line.count("\n") == 1
    vals = line.split()
    assert len(vals) == 6 and all(v.isdigit() for v in vals)
    assert line == " ".join(vals) + "\n"            # single spaces, nothing else
    return [int(v) for v in vals]


def advance(k, clock, seconds):
    for _ in range(int(seconds * 10)):
        clock.advance(SEC // 10)
        k.timekeeper.run_until_now()


@pytest.fixture(scope="module")
def k():
    return boot()


def test_allocinfo_mode_and_boot_counts(k):
    kern, clock = k
    n = node(kern, "proc/allocinfo")
    assert stat.S_IMODE(n.mode) == 0o444 and n.uid == 0
    first = counters(kern)
    assert first[0] > 5000 and first[1:] == [0] * 5     # the boot's allocations


def test_read_clears(k):
    kern, clock = k
    counters(kern)
    assert counters(kern) == [0] * 6
    advance(kern, clock, 2)
    c = counters(kern)
    assert c[0] > 0 and c[1:] == [0] * 5                # idle: level 1 only
    assert counters(kern) == [0] * 6


def test_one_snapshot_per_read_from_zero(k):
    kern, clock = k
    counters(kern)
    advance(kern, clock, 1)
    f = opened(kern, "proc/allocinfo")
    head = f.node.fops.read(f, 0, 3)
    advance(kern, clock, 1)
    rest = f.node.fops.read(f, 3, 100)
    whole = (head + rest).decode()
    assert int(whole.split()[0]) > 0
    # the rest came from the same snapshot: and the counters were zeroed once
    assert len(whole.split()) == 6
    assert counters(kern)[0] > 0                        # the second second only


def test_allocinfo_write_is_eio(k):
    kern, _ = k
    with pytest.raises(KernelError) as e:
        write(kern, "proc/allocinfo", b"0\n")
    assert e.value.errno == errno.EIO


def test_knob(k):
    kern, _ = k
    assert cat(kern, "proc/heap_stress") == "[idle] pagecache writer memhog netstorm stress\n"
    assert stat.S_IMODE(node(kern, "proc/heap_stress").mode) == 0o644
    with pytest.raises(KernelError) as e:
        write(kern, "proc/heap_stress", b"forkbomb\n")
    assert e.value.errno == errno.EINVAL
    assert write(kern, "proc/heap_stress", b"memhog\n") == 7
    assert cat(kern, "proc/heap_stress") == "idle pagecache writer [memhog] netstorm stress\n"
    write(kern, "proc/heap_stress", b"idle")


def test_buddyinfo_format(k):
    kern, _ = k
    text = cat(kern, "proc/buddyinfo")
    lines = text.splitlines()
    assert [ln[:22] for ln in lines] == ["Node 0, zone      DMA ", "Node 0, zone    DMA32 "]
    for ln in lines:
        cols = ln[22:]
        assert len(cols) == 11 * 7 and all(cols[i * 7 + 6] == " " for i in range(11))
        assert all(c.strip().isdigit() for c in cols.split())


def test_sysctls(k):
    kern, _ = k
    pa = kern.heap_stress.ms.pa
    mfk = int(cat(kern, "proc/sys/vm/min_free_kbytes"))
    assert mfk == pa.min_free_kbytes
    write(kern, "proc/sys/vm/min_free_kbytes", b"%d\n" % (mfk * 2))
    assert pa.zones[1].pages_min > 0 and int(cat(kern, "proc/sys/vm/min_free_kbytes")) == mfk * 2
    write(kern, "proc/sys/vm/min_free_kbytes", b"%d\n" % mfk)
    assert cat(kern, "proc/sys/vm/lowmem_reserve_ratio") == "256\t256\t32\n"
    with pytest.raises(KernelError):
        write(kern, "proc/sys/vm/min_free_kbytes", b"-5\n")
    cached = kern.heap_stress.ms.vm.nr_file
    assert cached > 1000
    write(kern, "proc/sys/vm/drop_caches", b"1\n")
    vm = kern.heap_stress.ms.vm
    assert vm.nr_file == vm.nr_dirty + vm.nr_writeback < 10     # only clean pages go
    assert cat(kern, "proc/sys/vm/drop_caches") == "1\n"


def test_stress_through_the_knob():
    kern, clock = boot(seed=2)
    counters(kern)
    write(kern, "proc/heap_stress", b"stress\n")
    total = [0] * 6
    for _ in range(30):
        advance(kern, clock, 1)
        for i, v in enumerate(counters(kern)):
            total[i] += v
    assert total[0] > total[1] > 0
    assert total[2] > 0 and total[3] > 0 and total[5] > 0
    log = kern.log.dmesg()
    assert "page allocation failure. order:" in log
    # (the "invoked oom-killer" line shares printk_ratelimit with the failures)
    assert "Out of memory: kill process " in log and "Killed process" in log


def test_boot_parameters():
    kern, clock = boot("mem=64M heap_stress=pagecache")
    ms = kern.heap_stress.ms
    assert ms.scenario == "pagecache"
    assert ms.pa.zones[1].spanned_pages == (64 << 20 >> 12) - 4096
    assert "Memory: " in kern.log.dmesg() and "k/65536k available" in kern.log.dmesg()
    assert "DMA zone: 3942 pages, LIFO batch:0" in kern.log.dmesg()
    assert memparse("1G") == 1 << 30 and memparse("512k") == 512 << 10 and memparse("x") == 0


def test_absent_from_other_personas():
    kern, _ = boot(persona="6.12-stackmap")
    proc = node(kern, "proc")
    assert "heap_stress" not in proc.children and "buddyinfo" not in proc.children
    assert "allocinfo" not in proc.children     # (the 6.10+ one comes from alloc_tag_init)
    assert getattr(kern, "heap_stress", None) is None


def test_full_boot_has_one_allocinfo_each():
    """With every initcall: the 2.6.30 persona has EQware's file and no
    allocation profiling; 6.12 has the modern one."""
    old, _ = boot(initcalls=None)
    assert "mem_profiling" not in node(old, "proc/sys/vm").children
    line = cat(old, "proc/allocinfo")
    assert len(line.split()) == 6 and line.count("\n") == 1
    new, _ = boot(persona="6.12-stackmap", initcalls=None)
    assert "heap_stress" not in node(new, "proc").children
    allocinfo = node(new, "proc/allocinfo")
    if allocinfo is not None:
        assert stat.S_IMODE(allocinfo.mode) == 0o400
        assert cat(new, "proc/allocinfo").startswith("allocinfo - version: 1.0\n")
