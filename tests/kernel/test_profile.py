"""kernel/profile.c: profile= parsing, /proc/profile bytes, ticks, writes."""

from __future__ import annotations

import errno
import os
import stat
import struct

import pytest

from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.kernel.init import Kernel
from fakefs.kernel.profile import (CPU_PROFILING, KVM_PROFILING, SCHED_PROFILING, get_option,
                                   simple_strtoull)
from fakefs.sim.clock import ManualClock
from fakefs import sim

SEC = 1_000_000_000
BASE = [("fakefs.kernel.kallsyms", "kallsyms_init"),
        ("fakefs.sim.workload", "workload_init"),
        ("fakefs.kernel.fs.proc.base", "proc_root_init")]
PROFILE = [("fakefs.kernel.profile", "profile_init"),
           ("fakefs.kernel.fs.proc.profile", "proc_profile_init")]
INITCALLS = BASE + PROFILE
NO_WORKLOAD = [BASE[0], BASE[2]] + PROFILE


def boot(cmdline, persona="6.12-stackmap", initcalls=NO_WORKLOAD, seed=1, nr_cpus=2):
    clock = ManualClock()
    k = Kernel(persona=persona, cmdline=cmdline, seed=seed, nr_cpus=nr_cpus, clock=clock,
               host_kallsyms=False)
    sim.boot_kernel(k, initcalls)
    return k, clock


def read_all(k, path="proc/profile", chunk=1 << 20) -> bytes:
    n = k.tree.root.walk(path)
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    out = bytearray()
    while True:
        b = n.fops.read(f, len(out), chunk)
        if not b:
            return bytes(out)
        out += b


def write(k, data: bytes, path="proc/profile"):
    n = k.tree.root.walk(path)
    f = File(n, os.O_WRONLY)
    n.fops.open(f)
    return n.fops.write(f, data)


def counters(data: bytes):
    return struct.unpack("<%dI" % (len(data) // 4 - 1), data[4:])


# ------------------------------------------------------------- lib/cmdline
@pytest.mark.parametrize("text,ret,val,rest", [
    ("2", 1, 2, ""), ("10,x", 2, 10, "x"), ("0x10", 1, 16, ""), ("010", 1, 8, ""),
    ("-3", 1, -3, ""), ("5-7", 3, 5, "-7"), ("abc", 0, 0, "abc"), ("", 0, None, ""),
    ("0xg", 1, 0, "xg"), ("4294967297", 1, 1, ""), ("2\n", 1, 2, "\n"),
])
def test_get_option(text, ret, val, rest):
    assert get_option(text) == (ret, val, rest)


def test_simple_strtoull():
    assert simple_strtoull("123abc") == (123, 3)
    assert simple_strtoull("0x1fz") == (31, 4)
    assert simple_strtoull("z") == (0, 0)


# ------------------------------------------------------------ profile_setup
@pytest.mark.parametrize("arg,on,shift,msg", [
    ("2", CPU_PROFILING, 2, "kernel profiling enabled (shift: 2)"),
    ("0", CPU_PROFILING, 0, "kernel profiling enabled (shift: 0)"),
    ("-4", CPU_PROFILING, 0, "kernel profiling enabled (shift: 0)"),
    ("schedule", SCHED_PROFILING, 0, "kernel schedule profiling enabled (shift: 0)"),
    ("schedule,3", SCHED_PROFILING, 3, "kernel schedule profiling enabled (shift: 3)"),
    ("kvm,5", KVM_PROFILING, 5, "kernel kvm profiling enabled (shift: 5)"),
    ("scheduler,4", SCHED_PROFILING, 0, "kernel schedule profiling enabled (shift: 0)"),
])
def test_setup_612(arg, on, shift, msg):
    k, _ = boot("profile=" + arg)
    p = k.profile
    assert (p.prof_on, p.prof_shift) == (on, shift)
    assert msg in k.log.dmesg()
    assert k.tree.root.walk("proc/profile") is not None


@pytest.mark.parametrize("arg", ["sleep", "sleep,2", "abc", ""])
def test_setup_612_no_profiling(arg):
    k, _ = boot("profile=" + arg)
    assert k.profile.prof_on == 0
    assert k.tree.root.walk("proc/profile") is None
    assert "profiling enabled" not in k.log.dmesg()


def test_no_profile_parameter_no_file():
    k, _ = boot("quiet")
    assert k.tree.root.walk("proc/profile") is None


def test_shift_too_large_612():
    k, _ = boot("profile=99")
    assert "kernel profiling enabled (shift: 63)" in k.log.dmesg()
    assert "profiling shift: 63 too large" in k.log.dmesg()
    assert k.profile.prof_on == 0 and k.tree.root.walk("proc/profile") is None


def test_setup_2630():
    k, _ = boot("profile=kvm", persona="2.6.30-eqware")
    assert "kernel KVM profiling enabled (shift: 0)" in k.log.dmesg()
    k, _ = boot("profile=sleep,2", persona="2.6.30-eqware")
    assert "kernel sleep profiling requires CONFIG_SCHEDSTATS" in k.log.dmesg()
    assert k.tree.root.walk("proc/profile") is None
    # no clamping then: the shift prints as given, the file has no counter
    k, _ = boot("profile=-1", persona="2.6.30-eqware")
    assert "kernel profiling enabled (shift: -1)" in k.log.dmesg()
    assert read_all(k) == struct.pack("<I", 1 << 63 & 0xFFFFFFFF)


# --------------------------------------------------------------- the file
@pytest.fixture(scope="module")
def prof():
    k, clock = boot("profile=2", initcalls=INITCALLS)
    for _ in range(30):
        clock.advance(SEC // 10)
        k.timekeeper.run_until_now()
    return k, clock


def test_file_mode_and_size(prof):
    k, _ = prof
    n = k.tree.root.walk("proc/profile")
    assert stat.S_IMODE(n.mode) == 0o644 and n.uid == 0
    p = k.profile
    assert p.prof_len == (p.etext - p.stext) >> 2
    assert n.fops.size(n) == (1 + p.prof_len) * 4
    assert len(read_all(k)) == n.fops.size(n)


def test_layout_step_then_counters(prof):
    k, _ = prof
    data = read_all(k)
    assert data[:4] == b"\x04\x00\x00\x00"        # native (little-endian) step 1 << 2
    c = counters(data)
    assert len(c) == k.profile.prof_len
    hz = 250
    assert 0 < sum(c) <= 3 * hz * 2 + 50            # at most one hit per tick and CPU


def test_partial_reads_at_any_offset(prof):
    k, _ = prof
    n = k.tree.root.walk("proc/profile")
    f = File(n, os.O_RDONLY)
    whole = read_all(k)
    size = len(whole)
    for off, ln in ((0, 1), (1, 3), (2, 7), (3, 4096), (4, 4), (5, 9), (size - 3, 10), (size, 4),
                    (size + 100, 4)):
        assert n.fops.read(f, off, ln) == whole[off:off + ln]


def test_idle_loop_dominates_and_hot_functions_show(prof):
    k, _ = prof
    p = k.profile
    c = counters(read_all(k))
    ks = k.kallsyms
    per = {}
    for i, v in enumerate(c):
        if v:
            name = ks.lookup(p.stext + (i << p.shift))[0]
            per[name] = per.get(name, 0) + v
    top = max(per, key=per.get)
    assert top == "pv_native_safe_halt"
    assert len(per) > 20                            # the busy CPUs' functions too


def test_write_resets_but_four_bytes_is_einval():
    k, clock = boot("profile=2", initcalls=INITCALLS)
    clock.advance(SEC)
    k.timekeeper.run_until_now()
    assert sum(counters(read_all(k))) > 0
    with pytest.raises(KernelError) as e:
        write(k, struct.pack("<I", 20))               # readprofile -M 20
    assert e.value.errno == errno.EINVAL
    assert sum(counters(read_all(k))) > 0             # nothing reset
    assert write(k, b"\0") == 1                       # readprofile -r
    assert sum(counters(read_all(k))) == 0
    clock.advance(SEC)
    k.timekeeper.run_until_now()
    assert sum(counters(read_all(k))) > 0
    assert write(k, b"0\n") == 2
    assert sum(counters(read_all(k))) == 0
    assert write(k, b"") == 0


def test_hits_outside_text(prof):
    k, _ = prof
    p = k.profile
    last = p.buffer[p.prof_len - 1]
    p.hits(CPU_PROFILING, p.etext + 4096)
    p.hits(CPU_PROFILING, p.stext - 4)
    assert p.buffer[p.prof_len - 1] == last           # 6.12 drops them
    old, _ = boot("profile=4", persona="2.6.30-eqware")
    q = old.profile
    q.hits(CPU_PROFILING, q.etext + 4096)
    q.hits(CPU_PROFILING, q.stext - 4)
    assert q.buffer[q.prof_len - 1] == 2              # 2.6.30 folds them into the last


def test_other_kind_of_hit_is_ignored(prof):
    k, _ = prof
    p = k.profile
    before = sum(p.buffer)
    p.hits(SCHED_PROFILING, p.stext + 64)
    assert sum(p.buffer) == before


def test_deterministic():
    a, ca = boot("profile=3", initcalls=INITCALLS, seed=5)
    b, cb = boot("profile=3", initcalls=INITCALLS, seed=5)
    for k, c in ((a, ca), (b, cb)):
        c.advance(2 * SEC)
        k.timekeeper.run_until_now()
    assert read_all(a) == read_all(b)


def test_schedule_profiling_counts_switches():
    k, clock = boot("profile=schedule,2", initcalls=INITCALLS)
    for _ in range(20):
        clock.advance(SEC // 2)
        k.timekeeper.run_until_now()
    c = counters(read_all(k))
    assert read_all(k)[:4] == b"\x04\x00\x00\x00"
    assert sum(c) > 0
    callers = {k.kallsyms.lookup(k.profile.stext + 4 * i)[0] for i, v in enumerate(c) if v}
    assert callers & {"schedule", "schedule_idle", "preempt_schedule_irq", "__schedule_loop",
                      "preempt_schedule_common", "schedule_preempt_disabled"}


def test_kvm_profiling_stays_zero():
    k, clock = boot("profile=kvm", initcalls=INITCALLS)
    clock.advance(2 * SEC)
    k.timekeeper.run_until_now()
    assert sum(counters(read_all(k))) == 0


def test_sysfs_profiling_enables_at_runtime():
    k, clock = boot("", initcalls=INITCALLS)
    assert read_all(k, "sys/kernel/profiling") == b"0\n"
    assert k.tree.root.walk("proc/profile") is None
    assert write(k, b"garbage\n", "sys/kernel/profiling") == 8     # accepted, no effect
    assert k.tree.root.walk("proc/profile") is None
    assert write(k, b"3\n", "sys/kernel/profiling") == 2
    assert read_all(k, "sys/kernel/profiling") == b"1\n"
    assert read_all(k)[:4] == b"\x08\x00\x00\x00"
    with pytest.raises(KernelError) as e:
        write(k, b"2\n", "sys/kernel/profiling")
    assert e.value.errno == errno.EEXIST
    clock.advance(SEC)
    k.timekeeper.run_until_now()
    assert sum(counters(read_all(k))) > 0


def test_no_sysfs_profiling_on_2630():
    k, _ = boot("", persona="2.6.30-eqware")
    assert k.tree.root.walk("sys/kernel/profiling") is None
