"""``echo 0 > tracing_on`` after tracing (issue 33, DM4), through a real mount.

A mount, a configuration written (the engine bench's: the function tracer;
every event; both with ``stacktrace`` and ``stackmap``; ``sched_switch``
alone; function_graph), ``TRACED_S`` seconds
of the wall clock while it traces, then the time of one write of ``0`` to
``tracing_on``: what a user stopping a trace waits, which is the machine
catching up with the instant of the write.  A machine slower than real time
with that configuration falls behind while nobody asks, and the write waits
for it (DM4 wants 50 ms at most).  Each figure is the median and the worst
of ``MOUNTS`` fresh mounts.  While it traces, a reader reads
``per_cpu/cpu0/stats`` every POLL_S (a read that waits for the machine to
reach its instant, as a tool polling the buffer's counts does): its worst
wait is the other row (DM4: no request waits more than 100 ms on the
simulation).  ``python -m fakefs.bench tracing_off``.
"""

from __future__ import annotations

import os
import statistics
import time

from .barefs import fakefs_mounted
from .engine import CONFIGS

TRACING = "sys/kernel/tracing/"
MOUNTS = 3
TRACED_S = (1, 5)
POLL_S = 0.02


def _write(mnt: str, path: str, value: str) -> None:
    with open(os.path.join(mnt, TRACING + path), "w") as fh:
        fh.write(value)


def stop_ms(settings, traced_s: float) -> tuple[float, float]:
    """Milliseconds of ``echo 0 > tracing_on`` on a fresh mount after
    ``settings`` were written and ``traced_s`` seconds went by, and the
    longest read of ``per_cpu/cpu0/stats`` meanwhile (one every POLL_S)."""
    with fakefs_mounted() as (mnt, _log):
        for path, value in settings:
            _write(mnt, path, value)
        stats = os.path.join(mnt, TRACING + "per_cpu/cpu0/stats")
        worst = 0.0
        end = time.monotonic() + traced_s
        while time.monotonic() < end:
            t0 = time.monotonic()
            with open(stats) as fh:
                fh.read()
            worst = max(worst, time.monotonic() - t0)
            time.sleep(POLL_S)
        t0 = time.monotonic()
        _write(mnt, "tracing_on", "0")
        return (time.monotonic() - t0) * 1000, worst * 1000


def bench_tracing_off() -> list[tuple[str, float, str]]:
    rows = []
    for traced_s in TRACED_S:
        for label, settings in CONFIGS:
            got = [stop_ms(settings, traced_s) for _ in range(MOUNTS)]
            stops, polls = [g[0] for g in got], [g[1] for g in got]
            rows.append(("%s, after %d s: echo 0 > tracing_on" % (label, traced_s),
                         statistics.median(stops), "ms median (worst %.0f; DM4: <= 50)" % max(stops)))
            rows.append(("  a stats read every %d ms meanwhile: the longest" % (POLL_S * 1000),
                         statistics.median(polls), "ms median (worst %.0f; DM4: <= 100)" % max(polls)))
    return rows
