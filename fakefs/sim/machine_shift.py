"""The machine's part of a held gap's window moved later
(``Kernel.add_shift_hook``): what it has queued from the window's start on
(its CPUs' next events, the wheel timers its tasks sleep on with their
``timer_list`` expiries in jiffies, the RCU callbacks due), when each CPU
and task last ran, and the forks it put off.  The real processes' events
stay at the instants they happened: they are facts, not the machine's.
"""

from __future__ import annotations

import heapq

from ..kernel.timer import JIFFY_NS
from .host import HOST


def shift_machine(m):
    """The shift hook of machine ``m``."""

    def shift(d: int, since: int) -> None:
        if m.frozen:
            return                       # it stood still: it starts where it is seen
        m.heap = [(t + d, seq, kind, a, b) if kind != HOST and t >= since else (t, seq, kind, a, b)
                  for t, seq, kind, a, b in m.heap]
        heapq.heapify(m.heap)
        m.clock = [c + d if c >= since else c for c in m.clock]
        if m.time >= since:
            m.time += d
        for q in m.rcu:
            q[:] = [(e[0] + d,) + e[1:] if e[0] >= since else e for e in q]
        d_j = d // JIFFY_NS
        moved = set()
        for q in m.wheel:
            q[:] = [(due + d, seq, pid) if due >= since else (due, seq, pid) for due, seq, pid in q]
            heapq.heapify(q)
            for _due, _seq, pid in q:
                r = m.runs.get(pid)
                if r is None:
                    continue
                timer = r.work.timer if r.beh.pool is not None and r.work is not None else r.timer
                if timer is not None and id(timer) not in moved:
                    moved.add(id(timer))
                    timer.expires += d_j
                    timer.bucket_expiry += d_j
        for r in m.runs.values():
            if r.since >= since:
                r.since += d
        forking = m.host.forking
        for pid, t in forking.items():
            if t >= since:
                forking[pid] = t + d
    return shift
