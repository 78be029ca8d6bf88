"""The owner of a kernel's simulated time (issue 33: time has one owner).

The kernel model keeps what it is (``Kernel.sim_time``: the instant its
machine has reached; ``Kernel.now``: the instant it is at, which its
caller gives: a step's while the step runs, the request's while one is
served) and what depends on time (the subsystems' hooks:
``timer_hooks``, ``observers``, ``skip_hooks``, ``gap_watchers``,
``machine_seen()``); it never moves itself.  The :class:`Timekeeper` moves
it, for whoever serves the kernel: the FUSE adapter at a request and the
runner between them (``fuse/pacing.py``, ``fuse/runner.py``), ``sim.files``
and the tests outside a mount.

It follows the kernel's clock lazily: nothing runs while nobody looks;
``catch_up`` simulates up to an instant in steps (the machine, then the
timer hooks, then the observers: tracing records what the others did).
While nothing can see the machine it stands still (frozen): only the timer
hooks see time pass.  A long unobserved stretch (a *gap*) is simulated in
full only where it can still be seen, as the gap watchers say
(``trace_backlog``), and skipped otherwise (docs/time.md).
"""

from __future__ import annotations

# Simulated time handed to the timer hooks in one step
STEP_NS = 20_000_000
# An unobserved stretch longer than this is a gap: the kernel simulates of it
# what its watchers need, and at least the last GAP_WINDOW_NS (allocations,
# profile ticks and the scheduler's state come from that part)
GAP_NS = 2_000_000_000
GAP_WINDOW_NS = 200_000_000
# Simulated time advances in whole milliseconds: requests arriving within
# the same millisecond find the kernel up to date and cost no simulation.
TICK_NS = 1_000_000
# A skip stops at what the machine must show (``driver.shown_before``: a
# followed real process's fork, exec or exit): from the tick it falls in,
# this much is simulated in full (its system call and what it starts), then
# the skip goes on
SHOWN_NS = 2 * TICK_NS


class Gap:
    """An unobserved stretch being caught up (see ``Timekeeper.catch_up``)."""

    __slots__ = ("start", "end", "full", "skipped", "skip_end", "resume", "shown_to")

    def __init__(self, start: int, end: int):
        self.start = start
        self.end = end
        self.full = 0           # ns simulated in full so far
        self.skipped = 0        # ns skipped so far
        self.skip_end = start   # where the last skip ended
        self.resume = 0         # a skip stopped at what must be shown goes on to here
        self.shown_to = 0       # after the stretch in full up to here


class Timekeeper:
    """Moves ``kernel`` through simulated time, following its clock."""

    __slots__ = ("kernel", "gap", "debts")

    def __init__(self, kernel):
        self.kernel = kernel
        self.gap: Gap | None = None        # the gap being caught up
        # fn() -> bool: did a slice of work the machine owes before its next
        # step (the allocations owed once they are traced), for the writer
        # of a setting to pay, others let in (``pay_debt``); else the step
        # does it all at once
        self.debts: list = []
        kernel.timekeeper = self
        # the machine runs from the instant the kernel booted
        kernel.sim_time = kernel.now = kernel.clock.now_ns()

    def catch_up(self, max_steps: int = 8, until: int | None = None,
                 step_ns: int = STEP_NS) -> bool:
        """Simulate up to ``max_steps`` steps towards ``until`` (default: now).

        Returns True while more remains, so a caller on an event loop can
        yield between calls; a caller passes the instant its request came
        as ``until``, so that a machine simulated slower than real time is
        not chased for ever, and may take steps shorter than STEP_NS
        (``step_ns``) so that each call takes a short while.  Of a gap (more than GAP_NS since the kernel
        was last observed), only what can still be seen is simulated in
        full: what the gap watchers need and the last GAP_WINDOW_NS, however
        long that takes; the rest is skipped, the skip hooks and watchers
        accounting for it.  A gap, once begun, ends where it was meant to,
        as it began.
        """
        now = self.kernel.clock.now_ns() if until is None else until
        now -= now % TICK_NS
        # what can see the machine changes only with settings, which a
        # catch-up does not change unless something sees it
        seen = self.kernel.machine_seen() if self.kernel.driver is not None else None
        # (unseen, nothing records: no gap watcher asks for less than GAP_NS)
        for _ in range(max_steps):
            gap = self.gap
            if gap is None:
                if self.kernel.sim_time >= now:
                    break
                if now - self.kernel.sim_time <= (GAP_NS if seen is False else self.gap_threshold()):
                    self._step(min(now, self.kernel.sim_time + step_ns), seen)
                    continue
                gap = self.gap = Gap(self.kernel.sim_time, now)
                for w in self.kernel.gap_watchers:
                    w.gap_begins(gap)
            h = self._full_from(gap)
            if h > self.kernel.sim_time:
                gap.skipped += h - self.kernel.sim_time
                gap.skip_end = h
                self._skip(h)
            else:
                t1 = min(gap.end, self.kernel.sim_time + step_ns)
                if gap.resume:
                    t1 = min(t1, gap.shown_to)
                gap.full += t1 - self.kernel.sim_time
                self._step(t1, seen)
            if self.kernel.sim_time >= gap.end:
                self._end_gap(gap)
        return self.gap is not None or self.kernel.sim_time < now

    def pay_debt(self) -> bool:
        """A slice of what the machine owes before its next step, if any:
        whether there was one."""
        for fn in self.debts:
            if fn():
                return True
        return False

    def _end_gap(self, gap: Gap) -> None:
        self.gap = None
        for w in self.kernel.gap_watchers:
            w.gap_ends(gap)

    def next_boundary(self) -> int | None:
        """Where, in the gap under way, what a step costs changes (the
        window a gap watcher keeps begins: before it the machine runs and
        nothing is recorded), or None."""
        if self.gap is None:
            return None
        t = self.kernel.sim_time
        ends = [b for b in (w.boundary() for w in self.kernel.gap_watchers) if b is not None and b > t]
        return min(ends) if ends else None

    def gap_threshold(self) -> int:
        """How long an unobserved stretch must be to be caught up as a gap:
        GAP_NS, or less if a watcher asks (costly tracing)."""
        return min([GAP_NS] + [w.gap_threshold() for w in self.kernel.gap_watchers])

    def _full_from(self, gap: Gap) -> int:
        """Where the full simulation of the gap must go on from: what the
        watchers need, stopped at what the machine must show
        (``_shown_first``)."""
        t = self.kernel.sim_time
        h = self._wanted_from(gap)
        if gap.resume:                       # a skip stopped for what must be shown
            if t < gap.shown_to:
                return t
            h, gap.resume = max(h, gap.resume), 0
        return self._shown_first(gap, h)

    def _shown_first(self, gap: Gap, h: int) -> int:
        """A skip to ``h`` stops at the tick of the first thing the machine
        must show before it (``driver.shown_before``: what a followed real
        process did can be traced, and nothing would count it): SHOWN_NS
        from there are simulated in full, then the skip goes on to ``h``."""
        t = self.kernel.sim_time
        if h <= t or self.kernel.driver is None:
            return h
        w = self.kernel.driver.shown_before(h)
        if w is None:
            return h
        stop = max(t, w - w % TICK_NS)
        if stop + SHOWN_NS < h:
            gap.resume, gap.shown_to = h, stop + SHOWN_NS
        return stop

    def _wanted_from(self, gap: Gap) -> int:
        """Where the watchers want the full simulation to go on from."""
        t, end = self.kernel.sim_time, gap.end
        h = min([end - GAP_WINDOW_NS] + [w.full_from(t, gap) for w in self.kernel.gap_watchers])
        return max(t, h - h % TICK_NS)

    def _skip(self, t1: int) -> None:
        """Nobody can see [sim_time, t1): the machine starts again at ``t1``."""
        k = self.kernel
        t0, now = k.sim_time, k.now
        k.now = t0
        if k.driver is not None and not k.driver.frozen:
            k.driver.skip(t0, t1)
        for fn in k.skip_hooks:
            fn(t0, t1)
        k.sim_time = t1
        k.now = max(now, t1)         # (a request's instant, if it is one's)

    def _step(self, t1: int, seen: bool | None = None) -> None:
        """Simulate [sim_time, t1): the machine, then the timer hooks
        (``seen``: ``machine_seen()``, when the caller knows it).  The
        kernel is at the step's start while it runs (what it prints then
        is stamped so), and at the request's instant again after."""
        now = self.kernel.now
        self.kernel.now = self.kernel.sim_time
        self.kernel.sched.forget_before(self.kernel.sim_time)
        driver = self.kernel.driver
        if driver is not None:
            if self.kernel.machine_seen() if seen is None else seen:
                if driver.frozen:
                    driver.thaw(self.kernel.sim_time)
                driver.run(self.kernel.sim_time, t1)
            elif not driver.frozen:
                driver.freeze(self.kernel.sim_time)
        for fn in self.kernel.timer_hooks:
            fn(self.kernel.sim_time, t1)
        if driver is None or not driver.frozen:
            for fn in self.kernel.observers:
                fn(self.kernel.sim_time, t1)
        self.kernel.sim_time = t1
        self.kernel.now = max(now, t1)

    def advance_to(self, t: int) -> None:
        """Simulate up to the instant ``t`` (not rounded to a tick): what a
        system call made now must come after, in every CPU's timeline."""
        while self.kernel.sim_time < t:
            self._step(min(t, self.kernel.sim_time + STEP_NS))

    def run_until_now(self) -> None:
        """Catch up with the instant of the call, which is the kernel's
        ``now`` from here on (its caller's)."""
        until = self.kernel.now = self.kernel.clock.now_ns()
        while self.catch_up(1 << 30, until):
            pass
