"""The machine's clock (a kernel is given it; its callers read it and give
the kernel its instant, ``kernel.now``).

``now_ns()`` is nanoseconds since the simulated boot (``local_clock()``): the
host's CLOCK_MONOTONIC since then.  The simulated kernel does no work on its
own: whoever observes it has its timekeeper (``fakefs.sim.timekeeper``) run
it up to ``now_ns()``.  Tests may drive a :class:`ManualClock` instead.

A request's instant is not the clock's business: its caller gives it to
the kernel (``kernel.now``), so that everything the kernel does for it
happens at the moment it came.  (Until session 46 the clock was ``held`` at
that instant instead, and until session 44 it also stood still while a
request waited for the simulation, falling behind the host's by up to a
second: it hid a machine slower than real time, which none is any more.)
"""

from __future__ import annotations

import time


class Clock:
    def __init__(self, boot_offset_ns: int = 0):
        self._t0 = time.monotonic_ns() - boot_offset_ns
        self.boot_wall = time.time() - boot_offset_ns / 1e9

    def now_ns(self) -> int:
        return time.monotonic_ns() - self._t0

    def from_monotonic(self, ns: int) -> int:
        """The kernel's time of an instant of the host's CLOCK_MONOTONIC."""
        return ns - self._t0


class ManualClock:
    """A clock that moves only when told to (for deterministic tests)."""

    def __init__(self, start_ns: int = 0, boot_wall: float | None = None):
        self.t = start_ns
        # the wall-clock time of boot (the wall trace clocks count from it)
        self.boot_wall = time.time() if boot_wall is None else boot_wall

    def now_ns(self) -> int:
        return self.t

    def advance(self, ns: int) -> None:
        self.t += ns
