"""Kprobes (kprobes.py): where probes can go, ftrace-based and optimized
probes, the optimization sysctl and debugfs' kprobes/list."""

import errno
import os
import re

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.kernel.kprobes import ENDBR_LEN, OPTIMIZE_DELAY_NS, FuncLayout, Kprobe
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, rd, wr


@pytest.fixture(scope="module")
def booted():
    clock = ManualClock()
    return sim.boot(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False), clock


def test_layouts_are_instruction_sequences():
    lay = FuncLayout("kernel_clone", 0x3e0, True, True)
    assert lay.starts[:2] == [0, ENDBR_LEN] and lay.fentry == ENDBR_LEN
    assert lay.starts[2] == ENDBR_LEN + 5
    gaps = [b - a for a, b in zip(lay.starts, lay.starts[1:])]
    assert all(1 <= g <= 11 for g in gaps) and len(set(gaps)) > 4
    assert lay.starts == FuncLayout("kernel_clone", 0x3e0, True, True).starts   # deterministic
    assert lay.starts != FuncLayout("do_exit", 0x3e0, True, True).starts
    plain = FuncLayout("local_fn", 0x40, False, True)
    assert plain.fentry == 0 and plain.boundary(5)
    pfx = FuncLayout("__pfx_kernel_clone", 16, False, False)
    assert all(pfx.boundary(i) for i in range(16)) and pfx.fentry is None


def test_register_where(booted):
    k, _clock = booted
    kps = k.kprobes
    kp = Kprobe(None, "kernel_clone", 0, False)
    kps.register(kp)
    try:
        assert kp.ftrace and kp.func_offset == ENDBR_LEN and kp.addr == kp.func + ENDBR_LEN
    finally:
        kps.unregister(kp)
    for off in (1, 2, 3, 5, 8):
        with pytest.raises(KernelError) as e:
            kps.register(Kprobe(None, "kernel_clone", off, False))
        assert e.value.errno == errno.EILSEQ
    with pytest.raises(KernelError) as e:
        kps.register(Kprobe(None, "no_such_function", 0, False))
    assert e.value.errno == errno.ENOENT
    assert kps.on_func_entry("vfs_read", 4) == 0
    assert kps.on_func_entry("vfs_read", 10) == -errno.EINVAL
    assert not kps.probes


def later(k, clock, ns: int) -> None:
    """``ns`` later: the kernel's caller gives it its instant (a request
    would, the adapter or ``sim.files``; these tests call the kernel)."""
    clock.advance(ns)
    k.now = clock.now_ns()


def test_optimization_and_list(booted):
    """optimize_kprobe() marks a probe OPTIMIZED when it queues it for the
    optimizer; disarming a queued one unmarks it at once, an optimized one
    only when the optimizer's work has taken the jump out again."""
    k, clock = booted
    kps = k.kprobes
    lay = kps.layout(k.kallsyms.addr_of("kernel_clone"))
    off = next(o for o in lay.starts if lay.optimizable(o))
    kp = Kprobe(None, "kernel_clone", off, False)
    kps.register(kp)

    def shown():
        return rd(k, "kprobes/list", "sys/kernel/debug/")

    try:
        head = "%016x  k  kernel_clone+0x%x    " % (kp.addr, off)
        assert shown() == head + "[DISABLED]\n"
        kps.enable(kp)
        assert shown() == head + "[OPTIMIZED]\n"
        kps.disable(kp)                              # still queued: unmarked at once
        assert shown() == head + "[DISABLED]\n"
        kps.enable(kp)
        later(k, clock, OPTIMIZE_DELAY_NS)
        kps.disable(kp)                              # optimized: waits for the work
        assert shown() == head + "[DISABLED][OPTIMIZED]\n"
        later(k, clock, OPTIMIZE_DELAY_NS)
        assert shown() == head + "[DISABLED]\n"
        kps.enable(kp)
        wr(k, "kprobes-optimization", "0\n", base="proc/sys/debug/")
        assert rd(k, "kprobes-optimization", "proc/sys/debug/") == "0\n"
        assert shown() == head + "\n"
        wr(k, "kprobes-optimization", "1\n", base="proc/sys/debug/")
        assert shown() == head + "[OPTIMIZED]\n"
        assert errno_of(wr, k, "proc/sys/debug/kprobes-optimization", "2\n", os.O_WRONLY, "") \
            == errno.EINVAL
        kps.disable(kp)
    finally:
        kps.unregister(kp)
    assert shown() == ""


def test_list_orders_by_hash_bucket(booted):
    k, _clock = booted
    kps = k.kprobes
    probes = [Kprobe(None, name, 0, name == "do_exit") for name in ("kernel_clone", "vfs_read", "do_exit")]
    for kp in probes:
        kps.register(kp)
    try:
        lines = rd(k, "kprobes/list", "sys/kernel/debug/").splitlines()
        assert len(lines) == 3
        assert all(re.fullmatch(r"[0-9a-f]{16}  [kr]  \w+\+0x4    \[DISABLED\]\[FTRACE\]", ln)
                   for ln in lines)
        buckets = [(int(ln[:16], 16) * 0x61C8864680B583EB) % (1 << 64) >> 58 for ln in lines]
        assert buckets == sorted(buckets)
        assert any(" r  do_exit+0x4" in ln for ln in lines)
        # a reader without CAP_SYSLOG (if the mode let one open it) sees zeros
        n = k.tree.root.walk("sys/kernel/debug/kprobes/list")
        f = File(n, os.O_RDONLY, uid=1000)
        n.fops.open(f)
        others = n.fops.read(f, 0, 1 << 20).decode().splitlines()
        assert others == ["0" * 16 + ln[16:] for ln in lines]
    finally:
        for kp in probes:
            kps.unregister(kp)


def test_optimizer_work_is_shared(booted):
    """The optimizer's delayed work runs OPTIMIZE_DELAY after the first
    kick; a probe optimized meanwhile is taken by the same work."""
    k, clock = booted
    kps = k.kprobes
    lay = kps.layout(k.kallsyms.addr_of("kernel_clone"))
    offs = [o for o in lay.starts if lay.optimizable(o)][:2]
    a, b = (Kprobe(None, "kernel_clone", o, False) for o in offs)
    for kp in (a, b):
        kps.register(kp)
    try:
        kps.enable(a)
        later(k, clock, OPTIMIZE_DELAY_NS // 2)
        kps.enable(b)
        assert a.opt_at == b.opt_at
        later(k, clock, OPTIMIZE_DELAY_NS)
        kps.disable(b)                         # optimized: queued for unoptimizing
        kps.enable(b)                          # dequeued: the jump stays
        assert b.opt_at == a.opt_at and kps.optimized(b)
        kps.disable(a)
        later(k, clock, OPTIMIZE_DELAY_NS)
        assert not kps.optimized(a)
        kps.enable(a)                          # the work ran: the next kick is new
        assert a.opt_at > b.opt_at
    finally:
        for kp in (a, b):
            kps.unregister(kp)


def test_no_optimization_over_another_probe(booted):
    """arch_check_optimized_kprobe(): the jump would cover another probe."""
    k, _clock = booted
    kps = k.kprobes
    lay = kps.layout(k.kallsyms.addr_of("kernel_clone"))
    off, inside = next((o, i) for o in lay.starts if lay.optimizable(o)
                       for i in lay.starts if o < i < o + 5)
    a, b = Kprobe(None, "kernel_clone", off, False), Kprobe(None, "kernel_clone", inside, False)
    for kp in (a, b):
        kps.register(kp)
    try:
        kps.enable(a)
        assert not kps.optimized(a)
        kps.unregister(b)
        kps.disable(a)
        kps.enable(a)
        assert kps.optimized(a)
    finally:
        for kp in (a, b):
            kps.unregister(kp)
