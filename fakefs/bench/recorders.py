"""Recorders on a mount (issue 33, DM2): what ``trace-cmd record`` keeps.

``fakefs sandbox -- trace-cmd record --nosplice -p function sleep 5``: the
entries in the report against those plus the ``events lost`` trace-cmd
prints, and the wall time against ``fakefs sandbox -- sleep 5`` of the same
run (the command's time plus the sandbox's boot: the baseline).  The entries
kept per 100 ms of the trace, median over its first and its last second
(the first one's requests, trace-cmd setting up, once made the clock stand
still: now both are the steady state).  Then ``-e all sleep 5``:
what it lost.  Needs trace-cmd (the Makefile installs it).
``python -m fakefs.bench recorders``.
"""

from __future__ import annotations

import collections
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from .barefs import _child_env

COMMAND_S = 5
BIN_NS = 100_000_000
_LOST = re.compile(r"CPU \d+: (\d+) events lost")
_STAMP = re.compile(rb"\s(\d+)\.(\d{6}): ")


def _sandbox(args: list[str], cwd: str) -> tuple[float, str]:
    """(wall seconds, output) of ``fakefs sandbox -- ARGS``."""
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "fakefs", "sandbox", "--"] + args, cwd=cwd,
                       env=_child_env(), capture_output=True, text=True, timeout=600)
    return time.monotonic() - t0, p.stdout + p.stderr


def _kept(dat: str) -> tuple[int, list[int]]:
    """``count_entries()`` of the report of ``dat``."""
    with subprocess.Popen(["trace-cmd", "report", "-q", dat], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as p:
        return count_entries(p.stdout)


def count_entries(lines) -> tuple[int, list[int]]:
    """(entries in a report's ``lines``, entries per BIN_NS of the trace,
    from its first to its last, empty ones included)."""
    bins: collections.Counter = collections.Counter()
    n = 0
    for line in lines:
        m = _STAMP.search(line)
        if m:
            n += 1
            bins[(int(m.group(1)) * 1_000_000_000 + int(m.group(2)) * 1000) // BIN_NS] += 1
    return n, [bins[b] for b in range(min(bins), max(bins) + 1)] if bins else []


def events_lost(output: str) -> int:
    """The ``CPU N: X events lost`` trace-cmd record prints, summed."""
    return sum(int(x) for x in _LOST.findall(output))


def _record(tmp: str, tracer_args: list[str]) -> tuple[float, int, int, list[int]]:
    """(wall s, entries kept, events lost, kept per bin) of a 5 s record."""
    dat = os.path.join(tmp, "trace.dat")
    wall, out = _sandbox(["trace-cmd", "record", "--nosplice", "-o", dat] + tracer_args
                         + ["sleep", str(COMMAND_S)], tmp)
    lost = events_lost(out)
    kept, bins = _kept(dat)
    return wall, kept, lost, bins


def bench_recorders() -> list[tuple[str, float, str]]:
    if subprocess.run(["sh", "-c", "command -v trace-cmd"], capture_output=True).returncode:
        return [("trace-cmd is not installed: nothing measured", 0.0, "")]
    with tempfile.TemporaryDirectory(prefix="fakefs-bench-rec-") as tmp:
        base, _ = _sandbox(["sleep", str(COMMAND_S)], tmp)
        wall, kept, lost, bins = _record(tmp, ["-p", "function"])
        # whole bins only: the first and last may be cut by the start and the end
        inner = bins[1:-1]
        first, last = inner[:10], inner[-10:]
        rows = [("baseline: fakefs sandbox -- sleep 5", base, "s"),
                ("record -p function sleep 5: wall", wall, "s"),
                ("  ratio to the baseline (DM2: <= 2)", wall / base, "x"),
                ("  entries kept", kept, "entries"),
                ("  events lost (trace-cmd's count)", lost, "events"),
                ("  kept of written (DM2: >= 90 %)", 100.0 * kept / max(1, kept + lost), "%"),
                ("  kept per 100 ms, first second of the trace (median)",
                 statistics.median(first) if first else 0, "entries"),
                ("  kept per 100 ms, last second of the trace (median)",
                 statistics.median(last) if last else 0, "entries")]
        wall, kept, lost, _ = _record(tmp, ["-e", "all"])
        rows += [("record -e all sleep 5: wall", wall, "s"),
                 ("  entries kept", kept, "entries"),
                 ("  events lost (DM2: 0)", lost, "events")]
    return rows
