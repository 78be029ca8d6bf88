"""Blocked reads wait without polling.

A read that would block (``WouldBlock``) waits here until it may succeed,
until its opener has a signal pending (EINTR) or the daemon goes away
(ENOTCONN).  What a kernel's waiting reader costs, nothing while nothing
happens, comes from three things:

* one wake-up source per file: a ``WouldBlock`` says what it waits on
  (``waitq``: a ``key`` its readers share and a ``token()`` of the state
  they wait for, e.g. ``trace_iter.PipeWait``).  The readers of one key
  form a group; when its token moves the whole group reads again (those
  that still find nothing wait once more), as the kernel's waiters do;
* one ticker, run by one of the waiting readers at a time (no task of its
  own: whichever reader waits first ticks, and hands over when it leaves):
  while something sees the simulated machine, every TICK_S it catches the
  kernel up once for all of them (what the machine records reaches the
  readers as it did when each caught up alone); while nothing does, a
  catch-up records nothing and it does not tick.  After every other
  request the tokens are compared (``poke``, in that request's task), so a
  ``trace_marker`` write wakes its readers at once.  A read whose ``WouldBlock`` names
  nothing to wait on reads again at each tick;
* every SIGNAL_CHECK_S, signal checks in one batch for the waiting
  readers' openers only (``signals.SignalWatch``: a process that did not
  run since the last check has no new signal), and the mount's presence
  (``FakeFS.check_attached``).  Each wake-up of the trio loop costs some
  0.3 ms of CPU: these are the only ones while readers wait.
"""

from __future__ import annotations

import errno
import time

import pyfuse3
import trio

from .signals import SignalWatch

TICK_S = 0.05
SIGNAL_CHECK_S = 0.2


class Reader:
    """One blocked read: its opener, what it waits on, and how its wait
    ended (``outcome``: 0 read again, an errno, None still waiting)."""

    __slots__ = ("fh", "pid", "waitq", "event", "outcome")

    def __init__(self, fh: int, pid: int, waitq):
        self.fh = fh
        self.pid = pid
        self.waitq = waitq
        self.event = trio.Event()
        self.outcome: int | None = None

    def wake(self, outcome: int = 0) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.event.set()


class Group:
    """The readers waiting on one key, and its token when they began."""

    __slots__ = ("token", "readers")

    def __init__(self, token):
        self.token = token
        self.readers: set[Reader] = set()


class Waiters:
    """The blocked reads of one mount (``FakeFS.waiters``)."""

    __slots__ = ("fs", "groups", "unkeyed", "readers", "ticker", "moving", "signals",
                 "next_signals")

    def __init__(self, fs):
        self.fs = fs                               # the FakeFS adapter
        self.groups: dict = {}                     # waitq.key -> Group
        self.unkeyed: set[Reader] = set()          # read again at each tick
        self.readers: list[Reader] = []            # in the order they came
        self.ticker: Reader | None = None
        self.moving = False                        # the ticker catches up every TICK_S
        self.signals = SignalWatch()
        self.next_signals = 0.0

    def __len__(self) -> int:
        return len(self.readers)

    async def wait(self, fh: int, pid: int, waitq) -> None:
        """Until the read may succeed (return: read again), or raise
        FUSEError(EINTR) for a signal pending to ``pid``, FUSEError(ENOTCONN)
        when the daemon is going away.  ``waitq``'s token is taken before
        anything awaits: the state the read found."""
        if self.fs.terminating:
            raise pyfuse3.FUSEError(errno.ENOTCONN)
        if pid and self.signals.pending(pid):
            raise pyfuse3.FUSEError(errno.EINTR)
        r = Reader(fh, pid, waitq)
        self._add(r)
        try:
            while r.outcome is None:
                if self.ticker is None:
                    self.ticker = r
                    try:
                        await self._tick(r)
                    finally:
                        self.ticker = None
                        self._hand_over(r)
                else:
                    await r.event.wait()
                    if r.outcome is None:          # the ticker handed over
                        r.event = trio.Event()
        finally:
            self._remove(r)
            if self.ticker is None:
                # handed the ticker but woken with an outcome before it ran
                # (a RELEASE, data): the next one ticks, or nobody would
                self._hand_over(r)
        if r.outcome:
            raise pyfuse3.FUSEError(r.outcome)

    def poke(self) -> None:
        """A request was answered: the groups whose token moved read again
        (compared here, in the request's task: the ticker is woken only when
        the machine started or stopped being seen)."""
        self.check_groups()
        if self.ticker is not None and self._machine_moves() != self.moving:
            self.ticker.event.set()

    def wake_file(self, fh: int) -> None:
        """The readers of ``fh`` read again (its FLUSH changed what they wait for)."""
        for r in self.readers:
            if r.fh == fh:
                r.wake()

    def terminate(self) -> None:
        """The daemon is going away: every reader gets ENOTCONN (called
        from the main loop, not from a signal handler)."""
        for r in list(self.readers):
            r.wake(errno.ENOTCONN)

    # --- the groups --------------------------------------------------------
    def _add(self, r: Reader) -> None:
        self.readers.append(r)
        if r.waitq is None:
            self.unkeyed.add(r)
            return
        key = r.waitq.key
        token = r.waitq.token()
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = Group(token)
        elif g.token != token:                     # moved before the ticker saw it
            self._wake_group(g)
            g.token = token
        g.readers.add(r)

    def _remove(self, r: Reader) -> None:
        self.readers.remove(r)
        if r.waitq is None:
            self.unkeyed.discard(r)
            return
        key = r.waitq.key
        g = self.groups.get(key)
        if g is not None:
            g.readers.discard(r)
            if not g.readers:
                del self.groups[key]
        if not self.readers:
            self.signals.keep_only(())

    @staticmethod
    def _wake_group(g: Group) -> None:
        for r in g.readers:
            r.wake()

    def check_groups(self) -> None:
        """Wake the groups whose token moved."""
        for g in list(self.groups.values()):
            if g.readers and g.token != next(iter(g.readers)).waitq.token():
                self._wake_group(g)

    def check_signals(self) -> None:
        """EINTR for the readers whose opener has a signal pending (one
        look per process)."""
        verdict: dict[int, bool] = {}
        for r in self.readers:
            if r.pid and r.outcome is None:
                hit = verdict.get(r.pid)
                if hit is None:
                    hit = verdict[r.pid] = self.signals.pending(r.pid)
                if hit:
                    r.wake(errno.EINTR)
        self.signals.keep_only(verdict)

    # --- the ticker --------------------------------------------------------
    def _hand_over(self, leaving: Reader) -> None:
        for r in self.readers:
            if r is not leaving and r.outcome is None:
                r.event.set()                      # outcome None: it ticks now
                return

    def _machine_moves(self) -> bool:
        """Can a catch-up put anything where the readers look?  Not while
        nothing sees the machine (then only requests change the buffers:
        ``poke``), unless a reader's file names nothing to wait on."""
        kernel = self.fs.kernel
        return bool(self.unkeyed) or kernel.driver is None or kernel.machine_seen()

    async def _tick(self, me: Reader) -> None:
        """Tick for every waiting reader until ``me``'s wait ends (its
        event is also what ``poke`` sets)."""
        fs = self.fs
        next_tick = time.monotonic() + TICK_S
        while me.outcome is None:
            moves = self.moving = self._machine_moves()
            due = min(next_tick, self.next_signals) if moves else self.next_signals
            with trio.move_on_after(max(0.0, due - time.monotonic())):
                await me.event.wait()
            if me.outcome is not None:
                return
            me.event = trio.Event()
            if fs.terminating:
                self.terminate()
                return
            now = time.monotonic()
            if now >= next_tick:
                next_tick = now + TICK_S
                if moves:
                    await fs.observe()             # what the machine recorded meanwhile
                for r in self.unkeyed:
                    r.wake()
            if now >= self.next_signals:
                self.next_signals = now + SIGNAL_CHECK_S
                self.check_signals()
                fs.check_attached()
            self.check_groups()
