"""The timer wheel (kernel/time/timer.c): ``timer_list`` timers in jiffies.

A timer armed with ``mod_timer()`` goes into a bucket of the wheel: the
level is chosen by how far away it expires, and its expiry is rounded up
to the level's granularity (``calc_wheel_index()``: level 0 holds the next
63 jiffies one by one, each further level covers 8 times as much, 8 times
coarser).  The TIMER softirq of the tick at that jiffy runs it: the timer
is detached (``timer_cancel``), its function called between
``timer_expire_entry`` and ``timer_expire_exit``.

Context as a stock kernel records it: ``timer_start`` with the base lock
held (``d..1.`` from a task, ``d.s1.`` from a softirq), ``timer_cancel``
under it in the softirq (``d.s1.``), the expiry ``..s..`` — or ``d.s1.``
for an ``TIMER_IRQSAFE`` timer, whose function runs with irqs off and the
lock held.  ``timer_init`` (``timer_setup()``, or ``schedule_timeout()``'s
timer on the stack) in plain task context.

Time is in jiffies: ``INITIAL_JIFFIES`` at boot (five minutes before the
32-bit wrap), one per tick.
"""

from __future__ import annotations

from .sched import IRQS_OFF, SOFTIRQ

HZ = 250                                      # CONFIG_HZ of Debian's amd64 kernels
JIFFY_NS = 1_000_000_000 // HZ
INITIAL_JIFFIES = (1 << 32) - 300 * HZ        # (unsigned int)(-300 * HZ)
LVL_CLK_SHIFT = 3
LVL_BITS = 6
LVL_SIZE = 1 << LVL_BITS
LVL_MASK = LVL_SIZE - 1
LVL_DEPTH = 9                                 # HZ > 100
TIMER_ARRAYSHIFT = 22
TIMER_ARRAYMASK = 0xFFC00000                  # the wheel index in flags
TIMER_CPUMASK = 0x0003FFFF
TIMER_MIGRATING = 0x00040000
TIMER_DEFERRABLE = 0x00080000
TIMER_PINNED = 0x00100000
TIMER_IRQSAFE = 0x00200000
TIMER_FLAG_LETTERS = ((TIMER_MIGRATING, "M"), (TIMER_DEFERRABLE, "D"), (TIMER_PINNED, "P"),
                      (TIMER_IRQSAFE, "I"))


def lvl_start(n: int) -> int:
    return (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT)


WHEEL_TIMEOUT_CUTOFF = lvl_start(LVL_DEPTH)
WHEEL_TIMEOUT_MAX = WHEEL_TIMEOUT_CUTOFF - (1 << ((LVL_DEPTH - 1) * LVL_CLK_SHIFT))


def calc_index(expires: int, lvl: int) -> tuple[int, int]:
    """(bucket index, bucket expiry) of a timer expiring at ``expires`` in level ``lvl``."""
    shift = lvl * LVL_CLK_SHIFT
    expires = (expires >> shift) + 1
    return lvl * LVL_SIZE + (expires & LVL_MASK), expires << shift


def calc_wheel_index(expires: int, clk: int) -> tuple[int, int]:
    delta = expires - clk
    if delta < 0:
        return clk & LVL_MASK, clk
    for lvl in range(LVL_DEPTH - 1):
        if delta < lvl_start(lvl + 1):
            return calc_index(expires, lvl)
    if delta >= WHEEL_TIMEOUT_CUTOFF:
        expires = clk + WHEEL_TIMEOUT_MAX
    return calc_index(expires, LVL_DEPTH - 1)


def timer_flags_text(flags: int) -> str:
    return "|".join(name for bit, name in TIMER_FLAG_LETTERS if flags & bit)


class TimerList:
    """A ``struct timer_list``: where it is, the function it calls, its flags."""

    __slots__ = ("addr", "function", "flags", "expires", "bucket_expiry")

    def __init__(self, addr: int, function: int, flags: int = 0):
        self.addr = addr
        self.function = function
        self.flags = flags
        self.expires = 0
        self.bucket_expiry = 0


class TimerWheel:
    """The per-CPU timer bases: arming and running timers."""

    def __init__(self, sched, tracepoints, tick_ns: int):
        self.sched = sched
        self.tick_ns = tick_ns
        tp = tracepoints.get
        self.tp_init = tp("timer_init")
        self.tp_start = tp("timer_start")
        self.tp_cancel = tp("timer_cancel")
        self.tp_expire_entry = tp("timer_expire_entry")
        self.tp_expire_exit = tp("timer_expire_exit")

    def jiffies(self, t: int) -> int:
        return INITIAL_JIFFIES + t // self.tick_ns

    def time_of(self, jiffies: int) -> int:
        """The instant the tick of ``jiffies`` happens."""
        return (jiffies - INITIAL_JIFFIES) * self.tick_ns

    def init(self, cpu: int, t: int, timer: TimerList) -> None:
        self.sched.fire(self.tp_init, cpu, t, 0, 0, (timer.addr,))

    def start(self, cpu: int, t: int, timer: TimerList, timeout: int, softirq: bool = False) -> int:
        """``mod_timer(timer, jiffies + timeout)`` on ``cpu``: returns the
        instant the timer's bucket expires."""
        now = self.jiffies(t)
        timer.expires = now + timeout
        idx, timer.bucket_expiry = calc_wheel_index(timer.expires, now)
        flags = timer.flags | cpu | idx << TIMER_ARRAYSHIFT
        self.sched.fire(self.tp_start, cpu, t, IRQS_OFF | (SOFTIRQ if softirq else 0), 1,
                   (timer.addr, timer.function, timer.expires, timer.bucket_expiry, now, flags))
        return self.time_of(timer.bucket_expiry)

    def expire_begin(self, cpu: int, t: int, timer: TimerList) -> None:
        """``expire_timers()`` up to calling the timer's function."""
        self.sched.fire(self.tp_cancel, cpu, t, IRQS_OFF | SOFTIRQ, 1, (timer.addr,))
        now = self.jiffies(t)
        if timer.flags & TIMER_IRQSAFE:
            self.sched.fire(self.tp_expire_entry, cpu, t, IRQS_OFF | SOFTIRQ, 1,
                       (timer.addr, now, timer.function, now))
        else:
            self.sched.fire(self.tp_expire_entry, cpu, t, SOFTIRQ, 0,
                       (timer.addr, now, timer.function, now))

    def expire_end(self, cpu: int, t: int, timer: TimerList) -> None:
        if timer.flags & TIMER_IRQSAFE:
            self.sched.fire(self.tp_expire_exit, cpu, t, IRQS_OFF | SOFTIRQ, 1, (timer.addr,))
        else:
            self.sched.fire(self.tp_expire_exit, cpu, t, SOFTIRQ, 0, (timer.addr,))
