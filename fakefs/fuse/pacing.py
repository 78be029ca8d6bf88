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
is cut into steps is part of what the simulation does.

A step starts small (MIN_STEP_NS: with everything on at 500,000 function
calls a second, 0.1 ms of simulated time is ~1.1 ms of work in-process)
and grows while steps are cheap.  In a gap (``Timekeeper.next_boundary``) the quiet part before
the window is cheap and the window is not: a step ends where the window
begins, and the next one starts small again, as after a skip.  What a gap
simulates does not depend on what its steps cost.  After the catch-up,
``settle_host_events``: the followed real processes' events before the
request are done, not those after it.
"""

from __future__ import annotations

import contextvars
import time

from ..sim.timekeeper import GAP_NS, STEP_NS
from ..sim.clock import ManualClock
from ..sim.host import SETTLE_NS

STEP_WALL_S = 0.002
MIN_STEP_NS = 100_000
# the longest a request waits on the simulation in a paced mount, all its
# catch-ups together (a call's entry, its work, its exit): a machine further
# behind serves it at the instant it reached (``Pacer.served_at``)
REQUEST_WAIT_S = 0.02
# a paced machine further behind the host than this is running late (one
# that keeps up is at most a tick and a step behind: ``runner.py``): waiting
# on it would not bring it to a request's instant, which is served after a
# step at the instant it reached
LATE_NS = 50_000_000
# when the request under way came (``time.monotonic()``; handler.py sets it),
# moved back by what its burst spent before it (``Bursts``)
REQUEST_CAME: contextvars.ContextVar = contextvars.ContextVar("request_came", default=None)
# a thread's request that comes within this of its last one's answer (or
# while one is under way) is of the same burst: one command's (``echo 0 >
# tracing_on``: lookup, open, getattr, write, flush, release, 1-5 ms apart),
# unless the burst was closed (a FLUSH: the close(2) that ends a command;
# a shell's builtins come well within this of each other, and one burst a
# script waited 20 ms in all, then served every request where a lagging
# machine got)
BURST_GAP_S = 0.02
# threads whose burst is kept before the ended ones are forgotten
BURSTS_KEPT = 256


class _Burst:
    """A thread's requests back to back: how long they were in the daemon
    (``spent``), how many are under way, when the last one was answered,
    whether one closed a file (``closed``: the command is done)."""

    __slots__ = ("spent", "under_way", "ended", "closed")

    def __init__(self):
        self.spent = 0.0
        self.under_way = 0
        self.ended = 0.0
        self.closed = False


class Bursts:
    """One wait per command, not per request: a command is a burst of
    requests (``echo 0 > tracing_on`` is six), and each waited its whole
    REQUEST_WAIT_S on a machine lagging a few tens of ms behind the host
    (everything traced on a mount: 55-120 ms for the echo where the machine
    lagged 10-28 ms).  A request's wait counts from when it came less what
    its thread's burst spent in the daemon before it, so a burst's requests
    wait REQUEST_WAIT_S in all.  A burst ends at a pause of BURST_GAP_S or
    once a FLUSH of the thread's is answered (its command closed its file).
    Threads are told apart by the caller's pid (``FakeFS.caller_tid``); 0
    (not known) makes no burst."""

    __slots__ = ("by_tid",)

    def __init__(self):
        self.by_tid: dict[int, _Burst] = {}

    def begins(self, tid: int, now: float) -> float:
        """A request of ``tid`` came at ``now``: the instant its wait
        counts from."""
        if not tid:
            return now
        b = self.by_tid.get(tid)
        if b is None or (not b.under_way and (b.closed or now - b.ended > BURST_GAP_S)):
            if b is None and len(self.by_tid) >= BURSTS_KEPT:
                self._forget()
            b = self.by_tid[tid] = _Burst()
        b.under_way += 1
        return now - b.spent

    def ends(self, tid: int, came: float, now: float, closes: bool = False) -> None:
        """The request of ``tid`` that came at ``came`` is answered at
        ``now``; ``closes``: it closed a file (FLUSH), which ends the burst."""
        b = self.by_tid.get(tid) if tid else None
        if b is None:
            return
        b.under_way -= 1
        b.spent += now - came
        b.ended = now
        b.closed = b.closed or closes

    def _forget(self) -> None:
        """Room for more: the threads with nothing under way are forgotten
        (their next request begins a burst, as after a pause)."""
        for tid in [t for t, b in self.by_tid.items() if not b.under_way]:
            del self.by_tid[tid]


class Pacer:
    """The step size of the catch-ups, adapted to what steps cost, and
    whether the machine is kept up (``kept_up``)."""

    __slots__ = ("step_ns", "paced", "behind")

    def __init__(self, clock):
        self.step_ns = MIN_STEP_NS
        self.paced = not isinstance(clock, ManualClock)     # (the kernel's clock)
        # fell more than LATE_NS behind while something recorded, and has
        # not caught up since (``note_lag``)
        self.behind = False

    @staticmethod
    def _recording(kernel) -> bool:
        """Something records: a gap would be shorter than GAP_NS."""
        return kernel.timekeeper.gap_threshold() < GAP_NS

    def kept_up(self, kernel) -> bool:
        """Whether the runner keeps the machine at the host's time: a paced
        mount, no gap under way, and something records, or the machine fell
        behind while something did and has not caught up yet (``runner.py``).
        Then a stretch behind is the machine's lag (it got less CPU than it
        needed), never one nobody saw."""
        if not self.paced or kernel.timekeeper.gap is not None:
            return False
        return self.behind or self._recording(kernel)

    def note_lag(self, kernel, until: int) -> None:
        """After a catch-up towards ``until`` (the host's instant of a
        request): the machine is ``behind`` while it is more than LATE_NS
        short of it, from a lag taken while something recorded (once
        nothing records the runner still catches it up, and requests are
        served where it got meanwhile: the one that stops the recording does
        not wait for the lag), until it gets within LATE_NS."""
        late = self.paced and until - kernel.sim_time > LATE_NS
        self.behind = late and (self.behind or self._recording(kernel))

    def target(self, kernel, until: int) -> int:
        """Where the catch-up towards ``until`` goes next: while something
        records, at most a gap's threshold on, so that no gap (a skip of
        what is not seen) begins: a lag is stepped in full.  Once nothing
        records, what is behind is a stretch nobody saw: a gap if long."""
        if self.paced and kernel.timekeeper.gap is None and self._recording(kernel):
            return min(until, kernel.sim_time + kernel.timekeeper.gap_threshold())
        return until

    def served_at(self, kernel, until: int) -> int | None:
        """The instant a request that came at ``until`` and has waited long
        enough on the catch-up (REQUEST_WAIT_S) is served at, if it waits no
        longer: while the machine is kept up, the instant it reached, which
        is never before an instant served earlier (the machine was there).
        None: it waits on (a manual clock's requests find the kernel at
        their instant: the same commands, the same files; a gap's counts are
        made at its end; and a stretch nobody saw, behind a machine nobody
        keeps up, is the request's to catch up: no runner would)."""
        if not self.kept_up(kernel):
            return None
        return min(until, kernel.sim_time)

    def running_late(self, kernel, until: int) -> bool:
        """Whether the machine, kept up, is more than LATE_NS behind
        ``until`` (the host's instant of a request)."""
        return until - kernel.sim_time > LATE_NS and self.kept_up(kernel)

    def restart(self) -> None:
        """A setting was written (any file but those that record data):
        what the next step costs, nothing measured so far says.  (Grown to
        STEP_NS while nothing was traced: the first request after ``echo 1 >
        events/enable`` waited 115-180 ms on a slow host.)"""
        self.step_ns = MIN_STEP_NS

    def step(self, kernel, until: int) -> bool:
        """One step of the kernel towards ``until`` (``Timekeeper.catch_up``):
        True while more remains."""
        if not self.paced:
            return kernel.timekeeper.catch_up(1, until)
        step = self.step_ns
        t = kernel.sim_time
        end = kernel.timekeeper.next_boundary()
        if end is not None and end - t < step:
            step = end - t                       # the cheap part ends there
        t0 = time.perf_counter()
        more = kernel.timekeeper.catch_up(1, until, step)
        spent = time.perf_counter() - t0
        if kernel.sim_time - t > step or kernel.sim_time == end:
            # a skip, or the end of a quiet part: what comes next costs
            # what it costs, nothing measured so far says
            self.step_ns = MIN_STEP_NS
        elif spent > STEP_WALL_S / 2:
            ratio = STEP_WALL_S / spent
            self.step_ns = max(MIN_STEP_NS, min(STEP_NS, int(step * min(2.0, ratio))))
        elif self.step_ns < STEP_NS:
            self.step_ns = min(STEP_NS, self.step_ns * 2)
        return more


def settle_host_events(kernel, until: int, settle: int) -> int | None:
    """What the followed real processes did before a request (that came at
    ``until``) is done before it is served, also where the machine fits it
    in only just after the request's instant (a fork at most SETTLE_NS on):
    the kernel goes on to ``settle``, the instant by which the machine will
    have done the events taken so far.  Not further than SETTLE_NS past the
    request (or past where the kernel already is): events after it were
    taken by requests that came later, while this one waited, and are
    theirs to wait for.  Returns that later instant, or None."""
    last = max(until, kernel.sim_time) + SETTLE_NS
    if settle > kernel.sim_time:
        kernel.timekeeper.advance_to(min(settle, last))
    return settle if settle > last else None
