"""``echo 0 > tracing_on`` after tracing (issue 33, DM4), through a real mount.

A mount, a configuration written (the engine bench's: the function tracer;
every event; both with ``stacktrace`` and ``stackmap``; ``sched_switch``
alone; function_graph), ``TRACED_S`` seconds
of the wall clock while it traces, then the time of ``sh -c 'echo 0 >
tracing_on'`` (a command of its own, the shell's start included): what a
user stopping a trace waits, which is the machine
catching up with the instant of the write.  A machine slower than real time
with that configuration falls behind while nobody asks, and the write waits
for it (DM4 wants 50 ms at most).  Each figure is the median and the worst
of ``MOUNTS`` fresh mounts.  While it traces, a reader reads
``per_cpu/cpu0/stats`` every POLL_S (a read that waits for the machine to
reach its instant, as a tool polling the buffer's counts does): the
longest of its requests (the open, the read) is the other row (DM4: no
request waits more than 100 ms on the simulation).

And a configuration slower than real time on purpose (everything traced at
ten times the default call rate, ``fakefs.fn_rate=5000000``): the machine
lags the host's time, is stepped on in full all the same (nothing skipped
or dropped), and a request waits at most ``pacing.REQUEST_WAIT_S`` on it,
served at the instant the machine reached (``fuse/runner.py``); the row
under it says how fast simulated time went (``now ts`` of the stats reads
against the wall clock).  ``python -m fakefs.bench tracing_off``.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import time
from typing import NamedTuple

from .barefs import fakefs_mounted
from .engine import CONFIGS

TRACING = "sys/kernel/tracing/"
MOUNTS = 3
TRACED_S = (1, 5)
POLL_S = 0.02
SLOW = ("everything at 10x the call rate (slower than real time)",
        next(c for label, c in CONFIGS if "every event" in label and "stackmap" in label),
        ("--cmdline", "fakefs.fn_rate=5000000"))


def _write(mnt: str, path: str, value: str) -> None:
    with open(os.path.join(mnt, TRACING + path), "w") as fh:
        fh.write(value)


class Stop(NamedTuple):
    """One mount's figures (``stop_ms``)."""
    stop_ms: float          # echo 0 > tracing_on
    longest_ms: float       # the longest request of the stats reads meanwhile
    pace: float             # simulated seconds per wall second meanwhile


def stop_ms(settings, traced_s: float, args: tuple = ()) -> Stop:
    """``echo 0 > tracing_on`` on a fresh mount (``args``: of ``fakefs
    mount``) after ``settings`` were written and ``traced_s`` seconds went
    by, with a read of ``per_cpu/cpu0/stats`` every POLL_S meanwhile: its
    longest request (open, read), and the simulated seconds per wall second
    between the first read and the last (their ``now ts``)."""
    with fakefs_mounted(args=args) as (mnt, _log):
        for path, value in settings:
            _write(mnt, path, value)
        stats = os.path.join(mnt, TRACING + "per_cpu/cpu0/stats")
        worst = 0.0
        seen = []                   # (wall, now ts)
        end = time.monotonic() + traced_s
        while time.monotonic() < end:
            t0 = time.monotonic()
            fd = os.open(stats, os.O_RDONLY)          # each request timed
            try:
                t1 = time.monotonic()
                text = os.read(fd, 1 << 16).decode()
                t2 = time.monotonic()
            finally:
                os.close(fd)
            worst = max(worst, t1 - t0, t2 - t1)
            m = re.search(r"^now ts:\s+([0-9.]+)", text, re.M)
            if m:
                seen.append((t0, float(m.group(1))))
            time.sleep(POLL_S)
        t0 = time.monotonic()
        subprocess.run(["sh", "-c", "echo 0 > " + os.path.join(mnt, TRACING + "tracing_on")],
                       check=True)
        stop = (time.monotonic() - t0) * 1000
        pace = (seen[-1][1] - seen[0][1]) / (seen[-1][0] - seen[0][0]) if len(seen) > 1 else 0.0
        return Stop(stop, worst * 1000, pace)


def bench_tracing_off() -> list[tuple[str, float, str]]:
    rows = []
    for traced_s in TRACED_S:
        for label, settings, args in [(lb, c, ()) for lb, c in CONFIGS] + [SLOW]:
            got = [stop_ms(settings, traced_s, args) for _ in range(MOUNTS)]
            stops, polls = [g.stop_ms for g in got], [g.longest_ms for g in got]
            rows.append(("%s, after %d s: echo 0 > tracing_on" % (label, traced_s),
                         statistics.median(stops), "ms median (worst %.0f; DM4: <= 50)" % max(stops)))
            rows.append(("  a stats read every %d ms meanwhile: its longest request" % (POLL_S * 1000),
                         statistics.median(polls), "ms median (worst %.0f; DM4: <= 100)" % max(polls)))
            if args:
                rows.append(("  simulated seconds per wall second meanwhile",
                             statistics.median(g.pace for g in got), "x (1.0: kept up)"))
    return rows
