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

``python -m fakefs.bench stream_ctrlc``: ``trace-cmd stream -e sched_switch``
interrupted (SIGINT to its parent) after STREAM_WAIT_S, STREAM_TRIES times,
each try's time until the parent exits (hung: still there after
STREAM_LIMIT_S, then killed); the baseline, the same with ``-b 7`` (the
7 KB a CPU of a kernel whose buffer was never expanded): a backlog under a
pipe's worth, which trace-cmd 3.1.6's drain race cannot leave behind
(docs/tracefs-6.12.md, trace_pipe_raw).
"""

from __future__ import annotations

import collections
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from .barefs import _child_env

COMMAND_S = 5
BIN_NS = 100_000_000
STREAM_TRIES = 10
STREAM_WAIT_S = 3.0         # streaming before the Ctrl-C
STREAM_LIMIT_S = 5.0        # DM2 wants the exit within 1 s
STREAM_START_S = 60.0       # the sandbox's boot and trace-cmd's setup
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


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (ppid, comm, state) of the host's processes."""
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        procs[int(d)] = (int(ppid), comm, state)
    return procs


def stream_processes(procs: dict[int, tuple[int, str, str]], root: int) -> tuple[int | None, list[int]]:
    """(the parent, its recorders) of the ``trace-cmd stream`` under ``root``
    in ``procs`` (``_processes()``): the live trace-cmd below ``root`` whose
    parent is no trace-cmd and which has forked its recorders (two or more
    trace-cmd children); (None, []) before that."""
    def below(pid: int) -> bool:
        seen = set()
        while pid in procs and pid not in seen:
            seen.add(pid)
            pid = procs[pid][0]
            if pid == root:
                return True
        return False

    tc = {pid for pid, (_, comm, state) in procs.items()
          if comm == "trace-cmd" and state != "Z" and below(pid)}
    for pid in sorted(tc):
        if procs[pid][0] in tc:
            continue
        kids = sorted(k for k in tc if procs[k][0] == pid)
        if len(kids) >= 2:
            return pid, kids
    return None, []


def _alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stream_ctrlc(extra: list[str], tmp: str) -> float | None:
    """Seconds from the SIGINT to the exit of ``trace-cmd stream EXTRA -e
    sched_switch`` in a sandbox, streaming STREAM_WAIT_S before; None: hung
    (still there after STREAM_LIMIT_S: its processes are killed)."""
    with open(os.path.join(tmp, "stream.out"), "w") as out:
        sb = subprocess.Popen([sys.executable, "-m", "fakefs", "sandbox", "-q", "--",
                               "trace-cmd", "stream"] + extra + ["-e", "sched_switch"],
                              cwd=tmp, env=_child_env(), stdout=out, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + STREAM_START_S
        parent, kids = None, []
        while parent is None and time.monotonic() < deadline and sb.poll() is None:
            time.sleep(0.1)
            parent, kids = stream_processes(_processes(), sb.pid)
        if parent is None:
            raise RuntimeError("trace-cmd stream did not start: %s" % open(out.name).read()[-500:])
        time.sleep(STREAM_WAIT_S)
        t0 = time.monotonic()
        os.kill(parent, signal.SIGINT)
        while _alive(parent) and time.monotonic() - t0 < STREAM_LIMIT_S:
            time.sleep(0.005)
        took = time.monotonic() - t0
        if not _alive(parent):
            return took
        for pid in kids + [parent]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return None
    finally:
        try:
            sb.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(sb.pid, signal.SIGKILL)
            sb.wait()


def _tries(extra: list[str], tmp: str) -> tuple[int, list[float | None]]:
    times = [stream_ctrlc(extra, tmp) for _ in range(STREAM_TRIES)]
    return sum(1 for t in times if t is not None and t <= 1.0), times


def bench_stream_ctrlc() -> list[tuple[str, float, str]]:
    if subprocess.run(["sh", "-c", "command -v trace-cmd"], capture_output=True).returncode:
        return [("trace-cmd is not installed: nothing measured", 0.0, "")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="fakefs-bench-stream-") as tmp:
        for title, extra in (("stream -e sched_switch, Ctrl-C after %g s: exits within 1 s "
                              "(DM2: %d)" % (STREAM_WAIT_S, STREAM_TRIES), []),
                             ("baseline: the same with -b 7 (a backlog under a pipe's worth)",
                              ["-b", "7"])):
            ok, times = _tries(extra, tmp)
            rows.append((title, ok, "of %d" % STREAM_TRIES))
            for i, t in enumerate(times, 1):
                rows.append(("  try %d" % i, STREAM_LIMIT_S if t is None else t,
                             "s (hung: killed)" if t is None else "s"))
    return rows
