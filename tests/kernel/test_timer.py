"""The timer wheel's bucket arithmetic and its events."""

from __future__ import annotations

from fakefs.kernel.sched import Scheduler
from fakefs.kernel.timer import (HZ, INITIAL_JIFFIES, TIMER_DEFERRABLE, TIMER_IRQSAFE,
                                 TIMER_PINNED, TimerList, TimerWheel, calc_wheel_index,
                                 timer_flags_text)
from fakefs.kernel.tracepoint import Tracepoints


def test_bucket_index_and_expiry_as_a_stock_kernel_prints_them():
    # timer_start lines of a 6.18 kernel (HZ=250):
    #   expires=4297531266 [timeout=25] bucket_expiry=4297531267 idx=3
    #   expires=4297531497 [timeout=249] bucket_expiry=4297531504 idx=78
    assert calc_wheel_index(4297531266, 4297531266 - 25) == (3, 4297531267)
    assert calc_wheel_index(4297531497, 4297531497 - 249) == (78, 4297531504)


def test_levels_round_up_by_their_granularity():
    clk = 1_000_000
    for timeout, lvl in ((1, 0), (62, 0), (63, 1), (503, 1), (504, 2), (4031, 2), (4032, 3),
                         (10 ** 6, 5)):
        idx, bucket = calc_wheel_index(clk + timeout, clk)
        assert idx // 64 == lvl
        assert bucket > clk + timeout and bucket % (8 ** lvl) == 0
        assert bucket - (clk + timeout) <= 8 ** lvl
    # expired already: the current bucket
    assert calc_wheel_index(clk - 5, clk) == (clk & 63, clk)


def test_flags_letters():
    assert timer_flags_text(TIMER_DEFERRABLE | TIMER_PINNED | TIMER_IRQSAFE | 1) == "D|P|I"
    assert timer_flags_text(3) == ""


def test_jiffies_start_five_minutes_before_the_wrap():
    tps = Tracepoints()
    w = TimerWheel(Scheduler(2, tps), tps, 1_000_000_000 // HZ)
    assert INITIAL_JIFFIES == 4294892296
    assert w.jiffies(0) == INITIAL_JIFFIES
    assert w.jiffies(4_000_000) == INITIAL_JIFFIES + 1
    assert w.time_of(w.jiffies(8_000_000)) == 8_000_000


def test_start_and_expire_fire_with_the_kernels_context():
    tps = Tracepoints()
    sched = Scheduler(2, tps)
    w = TimerWheel(sched, tps, 4_000_000)
    hits = []
    for name in ("timer_start", "timer_cancel", "timer_expire_entry", "timer_expire_exit"):
        tps.get(name).register(lambda cpu, ts, pid, flags, pc, args, n=name:
                               hits.append((n, flags, pc, args)))
    t = TimerList(0xffff888000001000, 0xffffffff81000000, TIMER_IRQSAFE)
    due = w.start(1, 40_000_000, t, 30)
    name, flags, pc, args = hits[0]
    # CPU 1 runs its idle task, whose own depth is 1 (init_idle_preempt_count):
    # the base lock's level comes on top of it
    assert name == "timer_start" and (flags, pc) == (0x01, 2)
    assert args[2] == w.jiffies(40_000_000) + 30 and args[3] == t.bucket_expiry
    assert args[5] & 0x3FFFF == 1 and args[5] & TIMER_IRQSAFE
    assert due == w.time_of(t.bucket_expiry) and due >= 40_000_000 + 30 * 4_000_000
    w.expire_begin(1, due, t)
    w.expire_end(1, due + 1000, t)
    assert [(h[0], h[1], h[2]) for h in hits[1:]] == [
        ("timer_cancel", 0x11, 2), ("timer_expire_entry", 0x11, 2), ("timer_expire_exit", 0x11, 2)]
