"""The stackmap series' experiment on a mount (issue 33, DM3): ``sched_switch``
+ ``kmem_cache_alloc`` with ``stacktrace``, default buffer, a 5 s capture,
without and with the stackmap, on the virtual clock (``fakefs clock MNT +5s``),
on the wall clock of an idle host (``sleep 5``) and with two busy loops on the
host meanwhile.  What is kept should not depend on the clock or the host's
load (``fuse.runner``); the stackmap should keep about twice as many entries.
Then bytes per entry of each event alone (the per-CPU ``stats``: an event and
its stack entry are two entries, as the series measured them) beside the
series' figures.  ``python -m fakefs.bench seed004``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import subprocess
import sys
import time

from .barefs import _child_env, fakefs_mounted

CAPTURE_S = 5.0
EVENTS = ("sched/sched_switch", "kmem/kmem_cache_alloc")
# the series' cover letter (seed 004, RFC v2/v3): ARM64, 8 cores, 5 s, default buffer
SERIES_B = {"sched_switch": "102 -> 48 B", "kmem_cache_alloc": "111 -> 44 B"}
SERIES_KEPT = "43,950 -> 1,710,044 sched_switch kept"


def _w(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _stats(t: str) -> tuple[int, int]:
    """(entries, bytes) of every CPU's ``stats``."""
    entries = nbytes = 0
    for cpu in os.listdir(t + "/per_cpu"):
        with open("%s/per_cpu/%s/stats" % (t, cpu)) as f:
            d = dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line)
        entries += int(d["entries"])
        nbytes += int(d["bytes"])
    return entries, nbytes


def _busy(stop) -> None:
    while not stop.is_set():
        pass


@contextlib.contextmanager
def busy_loops(n: int = 2):
    """``n`` processes spinning on the host's CPUs meanwhile."""
    stop = multiprocessing.Event()
    procs = [multiprocessing.Process(target=_busy, args=(stop,), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        stop.set()
        for p in procs:
            p.join(5)


def capture(clock: str, stackmap: bool, events=EVENTS, seconds: float = CAPTURE_S) -> dict:
    """One capture on a fresh mount: entries kept, bytes, sched_switch lines."""
    with fakefs_mounted(args=("--seed", "4", "--clock", clock)) as (mnt, _log):
        t = mnt + "/sys/kernel/tracing" if os.path.isdir(mnt + "/sys/kernel/tracing") else mnt
        for ev in events:
            _w("%s/events/%s/enable" % (t, ev), "1")
        if stackmap:
            _w(t + "/options/stackmap", "1")
        _w(t + "/options/stacktrace", "1")
        _w(t + "/trace", "")
        if clock == "virtual":
            subprocess.run([sys.executable, "-m", "fakefs", "clock", mnt, "+%gs" % seconds],
                           check=True, env=_child_env(), stdout=subprocess.DEVNULL)
        else:
            time.sleep(seconds)
        t0 = time.perf_counter()
        _w(t + "/tracing_on", "0")
        off_ms = (time.perf_counter() - t0) * 1e3
        entries, nbytes = _stats(t)
        with open(t + "/trace") as f:
            switches = sum(1 for line in f if " sched_switch: " in line)
    return {"entries": entries, "bytes": nbytes, "switches": switches, "off_ms": off_ms}


def bench_seed004() -> list[tuple[str, object, str]]:
    out = []
    kept = {}
    for where, clock, load in (("virtual clock", "virtual", None), ("wall clock, idle host", "wall", None),
                               ("wall clock, two busy loops", "wall", busy_loops)):
        for smap in (False, True):
            with load() if load else contextlib.nullcontext():
                r = capture(clock, smap)
            label = "%s, %s" % (where, "stackmap" if smap else "full stacks")
            kept[(where, smap)] = r["entries"]
            out.append(("%s: entries kept" % label, r["entries"],
                        "(sched_switch %d; tracing_on 0 took %.0f ms)" % (r["switches"], r["off_ms"])))
        out.append(("  %s: kept with / without stackmap" % where,
                    kept[(where, True)] / max(kept[(where, False)], 1), "x (%s)" % SERIES_KEPT))
    base = kept[("virtual clock", True)], kept[("virtual clock", False)]
    for where in ("wall clock, idle host", "wall clock, two busy loops"):
        out.append(("  %s vs virtual: kept, full / stackmap" % where,
                    kept[(where, False)] / max(base[1], 1),
                    "and %.3f x" % (kept[(where, True)] / max(base[0], 1))))
    for ev in EVENTS:
        name = ev.split("/")[1]
        per = []
        for smap in (False, True):
            r = capture("virtual", smap, events=(ev,), seconds=1.0)
            per.append(r["bytes"] / max(r["entries"], 1))
        out.append(("%s alone: bytes per entry, full stacks -> stackmap" % name, per[0],
                    "-> %.1f B (series: %s)" % (per[1], SERIES_B[name])))
    return out
