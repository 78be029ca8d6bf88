"""A gap's window made before anybody asks for it.

While costly tracing records (the function tracer at a busy machine's rate,
stack traces, every event), the first request after a pause finds a gap:
its window, what the buffers show of it (see ``trace_backlog``), costs
about half a second to simulate, whatever the pause's length.  Nothing in
that window depends on where it falls (test_trace_backlog), so the daemon
makes it while nobody asks: once the mount has been idle for as long as a
gap takes (``Kernel.gap_threshold``), it catches the kernel up to that
instant with the gap's end held (``Kernel.catch_up(hold=True)``), a step at
a time between requests.  The next request's catch-up moves the window to
its own instant by whole jiffies (the shift hooks, ``Kernel._end_held``):
what is left to simulate is less than a jiffy.

It costs the one window after the last request, not more: the held window
waits for the next request, however long that takes.  A request that comes
while the window is being made finishes it (as it would have caught up
the gap itself) and moves it.
"""

from __future__ import annotations

import logging
import time

import trio

from ..kernel.init import GAP_NS
from .pacing import STEP_WALL_S

log = logging.getLogger(__name__)

# how much longer than the shortest gap the mount waits before it makes one
# (a request due any moment would find a stretch simulated in full instead)
LATER_S = 0.05


class WindowMaker:
    """Makes the next gap's window while the mount is idle (``run``)."""

    __slots__ = ("kernel", "pacer", "heap", "made")

    def __init__(self, kernel, pacer, heap):
        self.kernel = kernel
        self.pacer = pacer
        self.heap = heap          # fuse.heap.HeapKeeper: when requests came
        self.made = 0             # windows made ahead

    def due_in(self) -> float | None:
        """Seconds until a window is worth making, 0 now, or None: nothing
        to make (nothing costly records, or the window is made already, or
        a gap's catch-up was left by its request).  While a request catches
        a gap up, it looks again a step later."""
        k = self.kernel
        if not self.pacer.paced or k.driver is None:
            return None
        gap = k.gap
        if gap is not None:
            if gap.held or self.heap.inflight <= self.heap.blocked():
                return None
            return STEP_WALL_S
        threshold = k.gap_threshold()
        if threshold >= GAP_NS:
            return None
        behind = (k.now_ns() - k.sim_time) / 1e9
        wait = threshold / 1e9 + LATER_S - behind
        if self.heap.inflight > self.heap.blocked():
            wait = max(wait, STEP_WALL_S)
        return max(0.0, wait)

    async def run(self) -> None:
        while True:
            await self.heap.next_request().wait()
            while True:
                wait = self.due_in()
                if wait is None:
                    # nothing to make: while requests stream in, look again
                    # once a LATER_S instead of once a request (a wake-up
                    # per request: ~2.6 % of the daemon's samples in a grep
                    # over events/*/*/trigger, py-spy)
                    looked = time.monotonic()
                    await trio.sleep(LATER_S)
                    if self.heap.last_request >= looked:
                        continue
                    break
                if wait > 0:
                    await trio.sleep(wait)
                    continue
                try:
                    await self._make()
                except Exception:       # never the daemon's end: the next request catches up
                    log.exception("making a gap's window ahead failed")
                    break
                # made (then nothing is due), or a request came, finished it
                # and moved it: the next one after that request

    async def _make(self) -> None:
        k = self.kernel
        until = k.now_ns()
        t0 = time.monotonic()
        while self.pacer.step(k, until, hold=True):
            if time.monotonic() - t0 >= STEP_WALL_S:
                await trio.sleep(0)
                t0 = time.monotonic()
        if k.gap is not None and k.gap.held:
            self.made += 1
        self.heap.written_while_idle()
