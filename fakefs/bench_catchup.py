"""``make bench``: what the first request after an idle stretch costs.

With the function tracer, ``stacktrace``, ``stackmap`` and every event on
(2 CPUs, default buffer), nobody looks for 1, 10, 60 or 600 s, then the first
128 KB of ``trace`` are read:

* in-process with a manual clock (no FUSE, any length of idle): the time to
  catch the kernel up plus the read, median of ROUNDS; the baseline, in the
  same run, is the same 1 and 10 s simulated in full (observed every tick of
  20 ms: nothing can be skipped);
* through a real mount for 1 and 10 s of real idle: the time of
  open+read(128 KB)+close of ``trace``.

    python -m fakefs.bench_catchup
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = 3
GAPS_S = (1, 10, 60, 600)
READ = 128 * 1024
T = "sys/kernel/tracing/"
EVERYTHING = (("current_tracer", "function"), ("events/enable", "1"),
              ("options/stacktrace", "1"), ("options/stackmap", "1"))


def _booted():
    from . import sim
    from .kernel.fs.pseudo import kernel_write
    from .kernel.time import ManualClock
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    for path, value in EVERYTHING:
        kernel_write(k.tree, T + path, value.encode())
    k.clock.advance(100_000_000)
    k.run_until_now()
    return k


def _first_read(k) -> None:
    from .kernel.fs.pseudo import kernel_read
    kernel_read(k.tree, T + "trace", READ)


def _in_process(gap_s: float, observed_every_ns: int | None = None) -> float:
    k = _booted()
    t0 = time.perf_counter()
    if observed_every_ns is None:
        k.clock.advance(int(gap_s * 1e9))
        k.run_until_now()
    else:
        for _ in range(int(gap_s * 1e9) // observed_every_ns):
            k.clock.advance(observed_every_ns)
            k.run_until_now()
    _first_read(k)
    return time.perf_counter() - t0


def _through_mount(gaps) -> dict:
    mnt = tempfile.mkdtemp(prefix="fakefs-bench-")
    subprocess.run([sys.executable, "-m", "fakefs", "mount", mnt], check=True)
    out = {}
    try:
        for path, value in EVERYTHING:
            with open(os.path.join(mnt, T + path), "w") as fh:
                fh.write(value)
        trace = os.path.join(mnt, T + "trace")
        for gap in gaps:
            per = []
            for _ in range(ROUNDS):
                with open(trace, "rb") as fh:    # the kernel is up to date now
                    fh.read(READ)
                time.sleep(gap)
                t0 = time.perf_counter()
                with open(trace, "rb") as fh:
                    fh.read(READ)
                per.append(time.perf_counter() - t0)
            out[gap] = per
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
        try:
            os.rmdir(mnt)
        except OSError:
            pass
    return out


def bench_catchup(mount: bool = True) -> list[tuple[str, float, str]]:
    rows = []
    for gap in GAPS_S:
        per = [_in_process(gap) for _ in range(ROUNDS)]
        rows.append(("in-process: first 128 KB of trace after %d s idle" % gap,
                     statistics.median(per) * 1e3, "ms (max %.0f)" % (max(per) * 1e3)))
    for gap in (1, 10):
        full = _in_process(gap, observed_every_ns=20_000_000)
        rows.append(("  baseline: the same %d s simulated in full" % gap, full * 1e3, "ms"))
    if mount:
        for gap, per in _through_mount((1, 10)).items():
            rows.append(("through the mount: first 128 KB of trace after %d s idle" % gap,
                         statistics.median(per) * 1e3, "ms (max %.0f)" % (max(per) * 1e3)))
    return rows


def main() -> int:
    for name, value, unit in bench_catchup(mount="--no-mount" not in sys.argv[1:]):
        print("  %-62s %12.0f %s" % (name, value, unit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
