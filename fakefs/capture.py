"""Capture a long trace of the simulated machine in-process and check it.

    python -m fakefs.capture SECONDS [--seed N] [--cpus N] [--events GLOB]
                             [--stacktrace] [--out FILE]

Boots the default persona with a manual clock (no mount, no wall clock:
nothing is lost to a slow reader), enables the events (all by default),
runs SECONDS of simulated time, reading and clearing ``trace`` once a
simulated second (the buffer is made large enough for one), then runs the
timeline checker (``fakefs.timeline``) over the whole and prints its
figures and how often each event fired.  Exit status 1 if any violation.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

from . import sim
from .sim.files import read_file, write_file
from .sim.clock import ManualClock
from .timeline import check

T = "sys/kernel/tracing/"
STEP = 20_000_000


def _write(k, path, data, flags=os.O_WRONLY | os.O_TRUNC):
    write_file(k, path, data.encode(), flags)


def _read(k, path):
    return read_file(k, path, 1 << 31).decode()


def event_name(line: str) -> str:
    """``sched_switch``, ``sys_read`` ...: what follows the line's context."""
    after = line.split("] ", 1)
    if len(after) < 2 or ": " not in after[1]:
        return ""
    body = after[1].split(": ", 1)[1]
    return body.split("(")[0].split(" ")[0].rstrip(":")


def capture(seconds: int, seed: int = 1, cpus: int = 2, events: str = "",
            stacktrace: bool = False, out=None):
    """Returns (checker report, Counter of event names, lines, CPU seconds)."""
    k = sim.boot(seed=seed, nr_cpus=cpus, clock=ManualClock(), host_kallsyms=False)
    _write(k, T + "buffer_size_kb", "65536")
    if events:
        for ev in events.split(","):
            _write(k, T + "set_event", ev, os.O_WRONLY | os.O_APPEND)
    else:
        _write(k, T + "events/enable", "1")
    if stacktrace:
        _write(k, T + "options/stacktrace", "1")
    t0 = time.process_time()
    lines = []
    for _ in range(seconds):
        for _ in range(1_000_000_000 // STEP):
            k.clock.advance(STEP)
            k.timekeeper.run_until_now()
        text = _read(k, T + "trace")
        chunk = [ln for ln in text.splitlines() if not ln.startswith("#")]
        if out is not None:
            out.write("\n".join(chunk) + "\n")
        lines.extend(chunk)
        _write(k, T + "trace", "")
    cpu = time.process_time() - t0
    counts = collections.Counter(event_name(ln) for ln in lines if not ln.startswith(" =>"))
    counts.pop("", None)
    return check(lines), counts, len(lines), cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fakefs.capture")
    ap.add_argument("seconds", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--events", default="", help="set_event lines, comma separated "
                    "(default: every event)")
    ap.add_argument("--stacktrace", action="store_true")
    ap.add_argument("--out", help="write the trace there")
    a = ap.parse_args(argv)
    out = open(a.out, "w") if a.out else None
    try:
        rep, counts, n, cpu = capture(a.seconds, a.seed, a.cpus, a.events, a.stacktrace, out)
    finally:
        if out is not None:
            out.close()
    print("%d s simulated in %.1f s CPU: %d lines, %d events in %d kinds" % (
        a.seconds, cpu, n, sum(counts.values()), len(counts)))
    print("timeline: %s" % rep.text())
    for name, c in sorted(counts.items(), key=lambda x: (-x[1], x[0])):
        print("%10d %s" % (c, name))
    return 1 if rep.total else 0


if __name__ == "__main__":
    sys.exit(main())
