"""The simulated machine kept at the host's time while tracing records.

Without it the kernel is simulated lazily: a request catches it up to its
instant, and a stretch nobody saw while something records is a *gap*
(``Timekeeper.catch_up``, ``trace_backlog``): a probe, a skip, and a window
sized from the probe.  What a gap keeps then depends on the probe's guess
(and, until session 44, on how fast the host ran the catch-up: the
stackmap's seed-004 experiment kept a tenth of its entries on a busy host).

While anything records, the runner steps the kernel to the host's time
every TICK_S, a step's worth of work (``pacing.STEP_WALL_S``) at a time
between requests, as a running kernel would be.  The machine never falls
a gap behind as long as it runs faster than real time on the CPU it gets
(``python -m fakefs.bench engine``: 2.5x real time with everything traced
on one core, 12x the function tracer), so every instant is
simulated in full: the same counts as on the virtual clock, on an idle host
or one running two busy loops.  A request then finds at most a tick to
simulate.

When the machine does not keep up (GIVE_UP_TICKS catch-ups in a row ran
slower than real time and left it more than GIVE_UP_S behind), the runner
stops and the lazy path takes over: the next request catches the gap up
(with everything traced, 75-90 ms whatever the buffer's size: ``python -m
fakefs.bench.catchup --no-mount``), and the runner starts again after that
request (or RETRY_S).  Nothing records (or
``--clock virtual``): it waits for the next request, the only thing that
can change that.
"""

from __future__ import annotations

import logging
import time

import trio

from ..sim.timekeeper import GAP_NS

log = logging.getLogger(__name__)

# how often the machine is caught up with the host while it records
TICK_S = 0.01
# GIVE_UP_TICKS catch-ups in a row slower than real time, each leaving it
# more than GIVE_UP_S behind: the machine does not keep up; it tries again
# after the next request, or RETRY_S
GIVE_UP_S = 0.05
GIVE_UP_TICKS = 5
RETRY_S = 1.0


class Runner:
    """Steps the kernel of ``fs`` (``FakeFS``) to the host's time (``run``)."""

    __slots__ = ("fs", "ticks", "slow", "wall")

    def __init__(self, fs):
        self.fs = fs
        self.wall = time.monotonic        # what a catch-up's cost is measured with
        self.ticks = 0            # catch-ups it made
        self.slow = 0             # those in a row that did not keep up

    def due(self) -> bool:
        """Whether the machine is to be kept up now: the clock is the host's,
        something records (a gap would be shorter than GAP_NS), and the
        kernel is less than a gap behind (else a request catches it up)."""
        fs = self.fs
        k = fs.kernel
        if not fs.pacer.paced or k.driver is None or k.timekeeper.gap is not None:
            return False
        threshold = k.timekeeper.gap_threshold()
        return threshold < GAP_NS and k.clock.now_ns() - k.sim_time <= threshold

    async def run(self) -> None:
        heap = self.fs.heap
        while True:
            if not self.due():
                await heap.next_request().wait()
                continue
            k = self.fs.kernel
            t0, sim0 = self.wall(), k.sim_time
            try:
                await self.fs.observe()
            except Exception:       # never the daemon's end: requests catch up
                log.exception("keeping the machine up failed")
                await heap.next_request().wait()
                continue
            self.ticks += 1
            if self.fs.poll_waiters:
                self.fs.wake_pollers()      # what it wrote may fill a poller's watermark
            slower = (k.sim_time - sim0) / 1e9 < self.wall() - t0
            if slower and k.clock.now_ns() - k.sim_time > GIVE_UP_S * 1e9:
                self.slow += 1
                if self.slow >= GIVE_UP_TICKS:       # it does not keep up
                    self.slow = 0
                    with trio.move_on_after(RETRY_S):
                        await heap.next_request().wait()
                    continue
            else:
                self.slow = 0
            await trio.sleep(TICK_S)
