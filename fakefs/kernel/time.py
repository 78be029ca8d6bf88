"""The kernel's clock, following the wall clock lazily.

``now_ns()`` is nanoseconds since the simulated boot (``local_clock()``).  The
simulated kernel does no work on its own: whoever observes it calls
``Kernel.catch_up()``, which runs the workload up to ``now_ns()``.  Tests may
drive a :class:`ManualClock` instead.

While a request is being served, its instant is ``held``: everything the
kernel does for it happens at the moment it came (a simulation slower than
real time does not make the request chase the clock).

The simulated machine's time stands still while the simulation is computed
for a request (``stood_still``), as a paused virtual machine's does: the
clock runs behind the host's by that much (its *lag*, at most MAX_LAG_NS),
so the next request of the same command (a ``cat``'s read after its open)
finds the kernel where the previous one left it plus the time the user
took, not plus the time the daemon took.  A stretch nobody observed (a gap,
see ``Kernel.catch_up``) takes the clock back to the host's (``resync``):
the machine was not seen in between.
"""

from __future__ import annotations

import time
from collections import deque

# the most the simulated clock runs behind the host's
MAX_LAG_NS = 1_000_000_000
# how many changes of the lag are kept (the host's events of the last ones
# are dated with the lag of their instant)
LAG_HISTORY = 256


class Clock:
    def __init__(self, boot_offset_ns: int = 0):
        self._t0 = time.monotonic_ns() - boot_offset_ns
        self.boot_wall = time.time() - boot_offset_ns / 1e9
        self.held: int | None = None
        self.lag = 0                      # ns behind the host's clock
        # how the lag changed, oldest first: (host CLOCK_MONOTONIC ns, lag
        # then, until when it grew as fast as the host's clock ran)
        self._lags: deque = deque([(0, 0, 0)], maxlen=LAG_HISTORY)

    def now_ns(self) -> int:
        if self.held is not None:
            return self.held
        return time.monotonic_ns() - self._t0 - self.lag

    def lag_at(self, ns: int) -> int:
        """The lag at the host's CLOCK_MONOTONIC instant ``ns``."""
        for at, lag, grew in reversed(self._lags):
            if at <= ns:
                break
        return lag + max(0, min(ns, grew) - at)

    def from_monotonic(self, ns: int) -> int:
        """The kernel's time of an instant of the host's CLOCK_MONOTONIC
        (never earlier for a later instant: while the machine stood still,
        every instant is the one it stood at)."""
        return ns - self._t0 - self.lag_at(ns)

    def stood_still(self, ns: int) -> None:
        """The machine's time stood still for the last ``ns`` of the host's
        (a request waited for the simulation): the clock falls behind by as
        much, up to MAX_LAG_NS."""
        grown = min(MAX_LAG_NS, self.lag + ns) - self.lag
        if grown > 0:
            now = time.monotonic_ns()
            self._lags.append((now - grown, self.lag, now))
            self.lag += grown

    def resync(self) -> None:
        """Back to the host's time (the stretch since the machine was last
        seen is a gap: nothing saw the clock jump)."""
        if self.lag:
            self.lag = 0
            now = time.monotonic_ns()
            self._lags.append((now, 0, now))


class ManualClock:
    """A clock that moves only when told to (for deterministic tests)."""

    def __init__(self, start_ns: int = 0, boot_wall: float | None = None):
        self.t = start_ns
        # the wall-clock time of boot (the wall trace clocks count from it)
        self.boot_wall = time.time() if boot_wall is None else boot_wall
        self.held: int | None = None

    def now_ns(self) -> int:
        if self.held is not None:
            return self.held
        return self.t

    def advance(self, ns: int) -> None:
        self.t += ns
