"""How much simulation one step of a request's catch-up does.

The adapter catches the kernel up in steps and lets other requests in
between them (``FakeFS.observe``).  A step of the kernel's STEP_NS costs
from a few ms (nothing traced) to some 200 ms of the main loop (the function
tracer, stacktrace, stackmap and every event), and a request that does not
wait for the catch-up (a setting) waits for a step at each of its turns of
the loop (a ``cat`` is several requests, each a few turns).  So the step is
sized to take about STEP_WALL_S: shortened by what the last one cost, grown
back towards STEP_NS when steps are cheap.  Not on a manual clock (``--clock
virtual``): there the same commands give the same files, and how a catch-up
is cut into steps is part of what the simulation does.  Measured through the mount,
everything on, 10 s idle, ``cat tracing_on`` while the first read of
``trace`` catches up: 20 ms steps, a turn every 20 ms: median 600-900 ms;
paced 10 ms: ~300 ms; paced 2 ms: ~42 ms (p99 150-240 ms: steps that fill
cold caches take longer whatever their size).
"""

from __future__ import annotations

import time

from ..kernel.init import STEP_NS
from ..kernel.time import ManualClock

STEP_WALL_S = 0.002
MIN_STEP_NS = 1_000_000          # a tick


class Pacer:
    """The step size of the catch-ups, adapted to what steps cost."""

    __slots__ = ("step_ns", "paced")

    def __init__(self, clock):
        self.step_ns = STEP_NS
        self.paced = not isinstance(clock, ManualClock)

    def step(self, kernel, until: int) -> bool:
        """One step of the kernel towards ``until`` (``Kernel.catch_up``):
        True while more remains."""
        if not self.paced:
            return kernel.catch_up(1, until)
        t0 = time.perf_counter()
        more = kernel.catch_up(1, until, self.step_ns)
        spent = time.perf_counter() - t0
        if spent > STEP_WALL_S / 2:
            ratio = STEP_WALL_S / spent
            self.step_ns = max(MIN_STEP_NS, min(STEP_NS, int(self.step_ns * min(2.0, ratio))))
        elif self.step_ns < STEP_NS:
            self.step_ns = min(STEP_NS, self.step_ns * 2)
        return more
