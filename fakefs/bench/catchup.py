"""``make bench``: what the first request after an idle stretch costs.

With the function tracer, ``stacktrace``, ``stackmap`` and every event on
(2 CPUs, default buffer), nobody looks for 1, 10, 60 or 600 s, then the first
128 KB of ``trace`` are read:

* in-process with a manual clock (no FUSE, any length of idle): the time to
  catch the kernel up plus the read, median of ROUNDS (what can be seen of
  the gap is simulated in full, the rest skipped: ``trace_backlog``; a big
  buffer's window is seconds long, and costs what it costs: nothing bounds
  it, and a mount never makes such a gap while it records, ``runner.py``);
  the baselines, in the same run: the same 1 and 10 s simulated in full
  (observed every 20 ms: nothing can be skipped);
* through a real mount for 1, 10 and 60 s of real idle: the time of
  open+read(128 KB)+close of ``trace``, and how long ``cat tracing_on``
  (a setting: it does not wait for the catch-up) takes meanwhile, read
  every 5 ms, against the same reads while idle.

And ``cat trace`` of a full default buffer (2 CPUs): lines per second
through the mount, and on this machine's own tracefs in the same run
(mounted in a private mount namespace, every event on for a second; its
settings are put back as they were).

And the rates: ``echo function > current_tracer; sleep 1; echo 0 >
tracing_on`` (in-process) at the default rate, a busy machine's 500,000
calls a second per CPU, and at the 4000 of the earlier default
(``fakefs.fn_rate=4000``) as the baseline: entries + overrun per CPU, how
full the buffer is, what the last write cost; with stackmap + stacktrace,
the stackmap's counters.

    python -m fakefs.bench.catchup [--no-mount | --rates | --mount-gaps 1,10,60,600 [--rounds N]]
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import threading
import time

from .barefs import fakefs_mounted

ROUNDS = 3
GAPS_S = (1, 10, 60, 600)
BIG_BUFFERS_KB = (8192, 65536)
MOUNT_GAPS_S = (1, 10, 60)       # real idle: 600 s on request (--mount-gaps 600)
READ = 128 * 1024
T = "sys/kernel/tracing/"
EVERYTHING = (("current_tracer", "function"), ("events/enable", "1"),
              ("options/stacktrace", "1"), ("options/stackmap", "1"))


def _booted(buffer_kb: int | None = None):
    from .. import sim
    from ..sim.files import write_file
    from ..sim.clock import ManualClock
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    if buffer_kb is not None:
        write_file(k, T + "buffer_size_kb", str(buffer_kb).encode())
    for path, value in EVERYTHING:
        write_file(k, T + path, value.encode())
    k.clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    return k


def _first_read(k) -> None:
    from ..sim.files import read_file
    read_file(k, T + "trace", READ)


def _in_process(gap_s: float, observed_every_ns: int | None = None,
                buffer_kb: int | None = None) -> float:
    """The first read after ``gap_s`` idle: caught up at the read, or in
    full, observed every ``observed_every_ns`` (``buffer_kb`` a CPU: a
    gap's window fills it MARGIN times over)."""
    k = _booted(buffer_kb)
    gc.collect()        # (the earlier rounds' kernels: the daemon collects while idle)
    t0 = time.perf_counter()
    if observed_every_ns is None:
        k.clock.advance(int(gap_s * 1e9))
        k.timekeeper.run_until_now()
    else:
        for _ in range(int(gap_s * 1e9) // observed_every_ns):
            k.clock.advance(observed_every_ns)
            k.timekeeper.run_until_now()
    _first_read(k)
    return time.perf_counter() - t0


def _setting_reads(path: str, stop, out: list) -> None:
    """Open+read+close of a setting every 5 ms until ``stop`` is set: the
    latency of each, into ``out``."""
    while not stop.is_set():
        t0 = time.perf_counter()
        with open(path, "rb") as fh:
            fh.read()
        out.append(time.perf_counter() - t0)
        time.sleep(0.005)


def _through_mount(gaps, rounds: int = ROUNDS) -> tuple[dict, dict]:
    """The first read after each gap (``rounds`` of each), and the latencies
    of ``tracing_on`` reads made meanwhile (and, as the baseline, while idle)."""
    out, during = {}, {"idle": []}
    with fakefs_mounted() as (mnt, _log):
        for path, value in EVERYTHING:
            with open(os.path.join(mnt, T + path), "w") as fh:
                fh.write(value)
        trace = os.path.join(mnt, T + "trace")
        setting = os.path.join(mnt, T + "tracing_on")
        for gap in gaps:
            per, during[gap] = [], []
            for _ in range(rounds):
                with open(trace, "rb") as fh:    # the kernel is up to date now
                    fh.read(READ)
                stop = threading.Event()
                threading.Timer(0.25, stop.set).start()
                _setting_reads(setting, stop, during["idle"])
                time.sleep(gap)
                stop = threading.Event()
                reader = threading.Thread(target=_setting_reads, args=(setting, stop, during[gap]))
                t0 = time.perf_counter()
                reader.start()
                with open(trace, "rb") as fh:
                    fh.read(READ)
                per.append(time.perf_counter() - t0)
                stop.set()
                reader.join()
            out[gap] = per
    return out, during


def _p99(values: list) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * 0.99))]


def _lines_per_s(trace: str) -> list[float]:
    out = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        with open(trace, "rb") as fh:
            n = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 17), b""))
        out.append(n / (time.perf_counter() - t0))
    return out


def _fakefs_trace_read() -> list[float]:
    with fakefs_mounted() as (mnt, _log):
        for path, value in EVERYTHING:
            with open(os.path.join(mnt, T + path), "w") as fh:
                fh.write(value)
        time.sleep(3)                                  # the buffers fill
        with open(os.path.join(mnt, T + "tracing_on"), "w") as fh:
            fh.write("0")
        return _lines_per_s(os.path.join(mnt, T + "trace"))


REAL = "/sys/kernel/tracing/"


def _real_trace_read() -> None:
    """In a private mount namespace with tracefs at REAL: fill the buffer with
    every event for a second, print lines/s of ``cat trace``, put back."""
    def rd(p):
        with open(REAL + p) as fh:
            return fh.read()

    def wr(p, v):
        with open(REAL + p, "w") as fh:
            fh.write(v)
    saved = {p: rd(p) for p in ("tracing_on", "buffer_size_kb", "set_event")}
    try:
        wr("trace", "")
        wr("tracing_on", "1")
        wr("events/enable", "1")
        time.sleep(1)
        wr("tracing_on", "0")
        print(" ".join("%.0f" % v for v in _lines_per_s(REAL + "trace")))
    finally:
        wr("events/enable", "0")
        for ev in saved["set_event"].split():
            with open(REAL + "set_event", "a") as fh:
                fh.write(ev)
        wr("trace", "")
        wr("tracing_on", saved["tracing_on"].strip())
        # the size it had (events expand a boot-time buffer for good: its
        # pages are given back, "(expanded: …)" does not come back)
        wr("buffer_size_kb", saved["buffer_size_kb"].split()[0])


def bench_trace_read() -> list[tuple[str, float, str]]:
    fake = _fakefs_trace_read()
    rows = [("cat trace of a full buffer, fakefs through the mount", statistics.median(fake), "lines/s")]
    if os.geteuid() == 0:
        # (tracefs is one instance: where the host has it mounted already,
        # the private namespace sees that mount)
        cmd = ["unshare", "-m", "sh", "-c", "{ mountpoint -q %s || mount -t tracefs nodev %s; } && "
               "exec %s -m fakefs.bench.catchup --real" % (REAL.rstrip("/"), REAL.rstrip("/"), sys.executable)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        vals = [float(v) for v in out.stdout.split()] if out.returncode == 0 else []
        if vals:
            med = statistics.median(vals)
            rows += [("  this machine's tracefs, every event for 1 s (same run)", med, "lines/s"),
                     ("  ratio fakefs/real", statistics.median(fake) / med, "x")]
    return rows


def bench_catchup(mount: bool = True, mount_gaps=MOUNT_GAPS_S) -> list[tuple[str, float, str]]:
    rows = []
    for gap in GAPS_S:
        per = [_in_process(gap) for _ in range(ROUNDS)]
        rows.append(("in-process: first 128 KB of trace after %d s idle" % gap,
                     statistics.median(per) * 1e3, "ms (max %.0f)" % (max(per) * 1e3)))
    for kb in BIG_BUFFERS_KB:
        per = [_in_process(10, buffer_kb=kb) for _ in range(ROUNDS)]
        rows.append(("  the same after 10 s, buffer_size_kb %d" % kb,
                     statistics.median(per) * 1e3, "ms (max %.0f)" % (max(per) * 1e3)))
    for gap in (1, 10):
        full = _in_process(gap, observed_every_ns=20_000_000)
        rows.append(("  baseline: the same %d s simulated in full" % gap, full * 1e3, "ms"))
    if mount:
        reads, during = _through_mount(mount_gaps)
        for gap, per in reads.items():
            rows.append(("through the mount: first 128 KB of trace after %d s idle" % gap,
                         statistics.median(per) * 1e3, "ms (max %.0f)" % (max(per) * 1e3)))
            lat = during[gap]
            rows.append(("  cat tracing_on meanwhile (%d reads), median" % len(lat),
                         statistics.median(lat) * 1e3, "ms (p99 %.0f)" % (_p99(lat) * 1e3)))
        idle = during["idle"]
        rows.append(("  baseline: cat tracing_on while idle (%d reads), median" % len(idle),
                     statistics.median(idle) * 1e3, "ms (p99 %.1f)" % (_p99(idle) * 1e3)))
    return rows


def _rates_once(cmdline: str, stackmap: bool) -> dict:
    """``echo function > current_tracer; sleep 1; echo 0 > tracing_on``
    in-process (manual clock): per-CPU counters, and what the last write cost."""
    from .. import sim
    from ..sim.files import write_file
    from ..sim.clock import ManualClock
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), cmdline=cmdline, host_kallsyms=False)
    if stackmap:
        for o in ("stackmap", "stacktrace"):
            write_file(k, T + "options/" + o, b"1")
    write_file(k, T + "current_tracer", b"function")
    k.clock.advance(1_000_000_000)
    t0 = time.perf_counter()
    write_file(k, T + "tracing_on", b"0")
    cost = time.perf_counter() - t0
    cpus = k.tracing.global_trace.buffer.cpus
    out = {"cost": cost, "written": [cb.entries + cb.overrun for cb in cpus],
           "entries": [cb.entries for cb in cpus],
           "room": [cb.size_bytes for cb in cpus], "bytes": [cb.bytes() for cb in cpus]}
    smap = k.tracing.global_trace.stackmap
    if stackmap and smap is not None:
        out["refs"] = sum(e.ref_count for _, e in smap.populated())
        out["successes"] = sum(smap.successes)
        out["pool"] = (smap.next_elt, smap.max_elts)
    return out


def bench_rates() -> list[tuple[str, float, str]]:
    """Issue 8's rates: the function tracer for a second at the default
    rate (a busy machine's 500,000 calls a second), and at the earlier
    default's 4000 as the baseline."""
    rows = []
    for label, cmdline in (("default fn_rate", ""), ("baseline: fn_rate=4000", "fakefs.fn_rate=4000")):
        runs = [_rates_once(cmdline, False) for _ in range(ROUNDS)]
        r = runs[0]
        rows += [("%s: entries + overrun, CPU 0 / CPU 1" % label, r["written"][0], "/ %d" % r["written"][1]),
                 ("%s: entries kept, CPU 0 / CPU 1" % label, r["entries"][0], "/ %d" % r["entries"][1]),
                 ("%s: buffer bytes used, CPU 0" % label, r["bytes"][0], "of %d" % r["room"][0]),
                 ("%s: cost of 'echo 0 > tracing_on' after 1 s" % label,
                  statistics.median(x["cost"] for x in runs) * 1e3, "ms")]
    r = _rates_once("", True)
    rows += [("default fn_rate, stackmap + stacktrace: entries + overrun, CPU 0", r["written"][0],
              "/ %d" % r["written"][1]),
             ("  stackmap: sum of ref counts / successes", r["refs"], "/ %d" % r["successes"]),
             ("  stackmap: entries / pool", r["pool"][0], "/ %d" % r["pool"][1]),
             ("  cost of 'echo 0 > tracing_on' after 1 s", r["cost"] * 1e3, "ms")]
    return rows


def main() -> int:
    if sys.argv[1:] == ["--real"]:
        _real_trace_read()
        return 0
    args = sys.argv[1:]
    if args == ["--rates"]:
        rows = bench_rates()
    elif args[:1] == ["--mount-gaps"]:
        gaps = tuple(int(g) for g in args[1].split(","))
        rounds = int(args[3]) if args[2:3] == ["--rounds"] else ROUNDS
        reads, during = _through_mount(gaps, rounds)
        rows = [("through the mount: first 128 KB of trace after %d s idle, %d rounds" % (gap, len(per)),
                 statistics.median(per) * 1e3, "ms (p99 %.0f, max %.0f; cat tracing_on meanwhile p99 %.0f ms)"
                 % (_p99(per) * 1e3, max(per) * 1e3, _p99(during[gap]) * 1e3))
                for gap, per in reads.items()]
        idle = during["idle"]
        rows.append(("  baseline: cat tracing_on while idle (%d reads), median" % len(idle),
                     statistics.median(idle) * 1e3, "ms (p99 %.1f)" % (_p99(idle) * 1e3)))
    else:
        rows = bench_trace_read() + bench_catchup(mount="--no-mount" not in args)
    for name, value, unit in rows:
        print("  %-62s %12.*f %s" % (name, 3 if value < 100 else 0, value, unit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
