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

When the machine does not keep up (it gets less CPU than it needs: a busy
host, a configuration slower than real time), nothing is skipped and
nothing dropped: the runner steps it on in full, a gap's threshold at a
time (``Pacer.target``: no gap begins while something records), without
pausing between catch-ups, and a command (a burst of one thread's
requests: ``pacing.Bursts``) waits at most REQUEST_WAIT_S on it in all
(none if it is running late: ``Pacer.running_late``), then is
served at the instant the machine reached (``Pacer.served_at``),
as a guest kernel starved of its CPU runs late.  Once nothing records it
still catches up with the host (``Pacer.behind``), requests served where it
got meanwhile: the stretch left is one nobody saw, a gap if long.  Nothing
records (or ``--clock virtual``): it waits for the next request, the only
thing that can change that.
"""

from __future__ import annotations

import logging
import time

import trio

from ..sim.timekeeper import GAP_NS
from .steps import GRACE_MAX_S, GRACE_SHARE, let_others_in

log = logging.getLogger(__name__)

# how often the machine is caught up with the host while it records, and the
# most one catch-up of the runner takes before it lets the pollers know
TICK_S = 0.01
RUN_WAIT_S = 0.05


class Runner:
    """Steps the kernel of ``fs`` (``FakeFS``) to the host's time (``run``)."""

    __slots__ = ("fs", "ticks", "worked", "given", "resumed")

    def __init__(self, fs):
        self.fs = fs
        self.ticks = 0            # catch-ups it made
        # what its steps took, and what its pauses for others took (less a
        # first credit): the pauses take at most GRACE_SHARE of the steps
        self.worked = 0.0
        self.given = -GRACE_MAX_S
        self.resumed = 0.0        # time.monotonic() when it last went on

    async def pause(self) -> None:
        """Between its steps: the requests that came go first, and a
        command's under way go on (its next request comes a moment after
        the answer to its last: ``steps.let_others_in``), within the share.
        (With a bare ``trio.sleep(0)``, 3-4 steps of ~2 ms ran between a
        command's requests while the machine ran late: ``echo 0 >
        tracing_on`` is four.)"""
        self.worked += time.monotonic() - self.resumed
        self.given += await let_others_in(self.fs, GRACE_SHARE * self.worked - self.given)
        self.resumed = time.monotonic()

    def due(self) -> bool:
        """Whether the machine is to be kept up now: the clock is the host's
        and something records (a gap would be shorter than GAP_NS), or it
        fell behind while something did (``Pacer.behind``: it catches up,
        a gap under way included, while requests are served where it got)."""
        fs = self.fs
        k = fs.kernel
        if not fs.pacer.paced or k.driver is None:
            return False
        if fs.pacer.behind:
            return True
        return k.timekeeper.gap is None and k.timekeeper.gap_threshold() < GAP_NS

    async def run(self) -> None:
        heap = self.fs.heap
        while True:
            if not self.due():
                await heap.next_request().wait()
                continue
            k = self.fs.kernel
            try:
                self.resumed = time.monotonic()
                await self.fs.observe(wait_s=RUN_WAIT_S, pause=self.pause)
            except Exception:       # never the daemon's end: requests catch up
                log.exception("keeping the machine up failed")
                await heap.next_request().wait()
                continue
            self.ticks += 1
            if self.fs.poll_waiters:
                self.fs.wake_pollers()      # what it wrote may fill a poller's watermark
            if k.clock.now_ns() - k.sim_time > TICK_S * 1e9:
                await self.pause()          # behind: on at once, requests let in
            else:
                await trio.sleep(TICK_S)
