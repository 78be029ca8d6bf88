"""The machine's side of the real processes that use the mount (``host.py``
is theirs): their events queued with the machine's own, in the one heap,
and what happens to them when nobody looks (a skip, standing still) or
when a request is served where a lagging machine got.  A part of
``Machine`` (the base of ``PerCpu``; the fields are ``MachineState``'s).
"""

from __future__ import annotations

from .host import HOST
from .machine_state import MachineState


class HostQueue(MachineState):
    """The real processes' events in the machine's queue."""

    def queue_host(self, t: int, action) -> None:
        """A real process's event (see host.py) happens at ``t``."""
        self._push(t, HOST, -1, action)

    def pull_host(self, t: int) -> bool:
        """The real processes' events queued after ``t`` happen at ``t``
        instead, in the order they came: a request served at ``t`` by a
        machine lagging the host (``Pacer.served_at``) happened after them,
        as it does for a guest starved of its CPU.  Whether any moved."""
        return self.heap.retime(HOST, t)

    def host_task(self, pid: int, t: int) -> tuple[int, int, int]:
        """A real process's system call here (a trace_marker write): ``HostProcesses.syscall``."""
        self.looked_at()
        return self.host.syscall(pid, t)

    def skip(self, t0: int, t1: int) -> None:
        """Nobody looked from ``t0`` to ``t1``: start again from ``t1`` (``HostProcesses.skipped``)."""
        self.sched.unseen(t0)
        self.host.skipped(self._take_host_actions(), t1)
        self.start(t1)

    def freeze(self, t: int) -> None:
        """From ``t`` nothing can see the machine: it stands still.  The
        real processes' events queued so far are kept as facts only (the
        host's bookkeeping), and so are the ones that come meanwhile."""
        self.frozen = True
        self.sched.unseen(t)
        for _when, action in self._take_host_actions():
            self.host.note(action)

    def thaw(self, t: int) -> None:
        """Something looks again at ``t``: the machine starts from there."""
        self.frozen = False
        self.start(t)

    def looked_at(self) -> None:
        """Before what the machine does now (a real process's event, a
        marker's writer): if it stands still although something sees it
        (a setting changed since the last step), it starts again now."""
        if self.frozen and self.kernel.machine_seen():
            self.thaw(self.kernel.sim_time)

    def shown_before(self, t: int) -> int | None:
        """The instant of the first real process's event queued before
        ``t``, or None: what a skip stops at (``Timekeeper._shown_first``)."""
        first = None
        for e in self.heap:
            if e[2] == HOST and e[0] < t and (first is None or e[0] < first):
                first = e[0]
        return first

    def _take_host_actions(self) -> list:
        """The real processes' queued events, (when, action) in the order
        they happened (the heap's list is not in time order); the queue
        is emptied."""
        host = sorted((e[0], e[1], e[4]) for e in self.heap if e[2] == HOST)
        self.heap.clear()
        return [(when, action) for when, _seq, action in host]
