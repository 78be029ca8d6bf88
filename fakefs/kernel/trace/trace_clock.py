"""The clocks ``trace_clock`` offers (``trace_clocks[]`` of
kernel/trace/trace.c, the clock functions of kernel/trace/trace_clock.c):
each clock's name, in the kernel's order, and whether it counts
nanoseconds (``in_ns``: a hist trigger's ``common_timestamp.usecs``
divides only those)."""

from __future__ import annotations

# (name, in_ns)
TRACE_CLOCK_TABLE = (
    ("local", True), ("global", True), ("counter", False), ("uptime", False),
    ("perf", True), ("mono", True), ("mono_raw", True), ("boot", True), ("tai", True),
    ("x86-tsc", False),
)
TRACE_CLOCKS = [name for name, _ns in TRACE_CLOCK_TABLE]
_IN_NS = dict(TRACE_CLOCK_TABLE)


def clock_in_ns(name: str) -> bool:
    """``trace_clock_in_ns()`` of a clock name."""
    return _IN_NS.get(name, True)


# The simulated CPUs' time stamp counter (x86's tsc_khz), counted from boot.
TSC_KHZ = 2_400_000
USER_HZ = 100                 # the clock_t unit of trace_clock_jiffies()
NSEC_PER_SEC = 1_000_000_000
NS_CLOCKS = frozenset(("local", "global", "perf", "mono", "mono_raw", "boot"))


class TraceClocks:
    """What each clock reads at an instant of the machine (nanoseconds since
    boot), as kernel/trace/trace_clock.c and the timekeeping it calls give
    it: local/global/perf (sched_clock, local_clock), mono/mono_raw/boot
    (CLOCK_MONOTONIC and friends, nothing suspended) all read the same
    nanoseconds here; ``tai`` is CLOCK_REALTIME plus the TAI offset, 0
    until NTP sets it; ``uptime`` counts jiffies since boot in USER_HZ
    ticks (``jiffies_64_to_clock_t()``); ``x86-tsc`` counts TSC cycles;
    ``counter`` is one count shared by every buffer on that clock, one
    step per reading."""

    __slots__ = ("hz", "boot_wall_ns", "counter")

    def __init__(self, hz: int, boot_wall_ns: int):
        self.hz = hz
        self.boot_wall_ns = boot_wall_ns
        self.counter = 0                    # trace_counter

    def reader(self, name: str):
        """A function: nanoseconds -> that clock's reading, or None for the
        clocks that read nanoseconds since boot as they are."""
        if name in NS_CLOCKS:
            return None
        if name == "counter":
            return self._count
        if name == "uptime":
            return self._clock_t
        if name == "tai":
            wall = self.boot_wall_ns
            return lambda ns: wall + ns
        if name == "x86-tsc":
            return lambda ns: ns * TSC_KHZ // 1_000_000
        raise ValueError(name)

    def _count(self, _ns: int) -> int:
        self.counter += 1
        return self.counter

    def _clock_t(self, ns: int) -> int:
        tick = (NSEC_PER_SEC + self.hz // 2) // self.hz       # TICK_NSEC
        jiffies = ns // tick
        unit = NSEC_PER_SEC // USER_HZ
        if tick % unit == 0:
            return jiffies * USER_HZ // self.hz if self.hz < USER_HZ else jiffies // (self.hz // USER_HZ)
        return jiffies * tick // unit
