"""``make bench``: the daemon's memory (issue 8, done-means 3).

One mount with ``trace_options=stackmap,stacktrace``, the function tracer
and every event on; ``cat trace`` every READ_EVERY_S seconds (each read
catches the kernel up).  The daemon's VmRSS is read from /proc:

* at the mount, before anything is traced (the baseline of the same run);
* after SECONDS of tracing at the default buffer size;
* after ``buffer_size_kb`` goes to BIG_KB, then back to the default.

A mount fills big buffers with everything on (its runner keeps the machine
at the host's time: 7 GB a CPU in ten minutes, ``--after-minutes``); the
full buffer is also measured in-process in less time (``in_process``: this
process's VmRSS; the same kernel code, without FUSE): boot, ``buffer_size_kb`` at BIG_KB,
everything on, the clock moved FILL_STEP_S at a time until the buffers are
full (entries held stop growing), against the bound buffers + stackmap
pool + 150 MB (the pool counted as the kernel's elements would take:
``max_elts`` of ``stack_map_stat`` x (64 addresses of 8 bytes + 16)); the
time of ``buffer_size_kb`` writes on the full buffers (doubled, back, the
default) against a copy of their bytes; the RSS at the default, before
and after the heap trim the daemon makes after such a write (fuse/heap.py).

    python -m fakefs.bench.memory [SECONDS]
    python -m fakefs.bench.memory --in-process [BUFFER_SIZE_KB]
    python -m fakefs.bench.memory --after-minutes [BUFFER_SIZE_KB [MINUTES]]
"""

from __future__ import annotations

import os
import re
import sys
import time

from .barefs import fakefs_mounted
from ..fuse.heap import HeapKeeper

T = "sys/kernel/tracing/"
SECONDS = 60
READ_EVERY_S = 2
FILL_STEP_S = 0.2
BIG_KB = 16384
DEFAULT_KB = 1408
POOL_ELT_BYTES = 64 * 8 + 16
EVERYTHING = (("current_tracer", "function"), ("events/enable", "1"))


def _daemon_pid(mnt: str) -> int:
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if mnt.encode() in argv and b"mount" in argv and b"fakefs" in argv:
            return int(name)
    raise RuntimeError("no daemon for %s" % mnt)


def rss_mb(pid: int) -> float:
    with open("/proc/%d/status" % pid) as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _read(mnt: str, path: str) -> str:
    with open(os.path.join(mnt, T + path)) as fh:
        return fh.read()


def _write(mnt: str, path: str, value: str) -> None:
    with open(os.path.join(mnt, T + path), "w") as fh:
        fh.write(value)


def _trace_for(mnt: str, seconds: float) -> None:
    """``cat trace`` every READ_EVERY_S for ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with open(os.path.join(mnt, T + "trace"), "rb") as fh:
            while fh.read(1 << 17):
                pass
        time.sleep(READ_EVERY_S)


def bench_memory(seconds: float = SECONDS) -> list[tuple[str, float, str]]:
    out = []
    with fakefs_mounted(args=("--cmdline", "trace_options=stackmap,stacktrace")) as (mnt, _log):
        pid = _daemon_pid(mnt)
        out.append(("RSS at the mount (baseline)", rss_mb(pid), "MB"))
        for path, value in EVERYTHING:
            _write(mnt, path, value)
        _trace_for(mnt, seconds)
        out.append(("RSS after %d s, everything on, default buffers" % seconds,
                    rss_mb(pid), "MB (target <= 250)"))
        _write(mnt, "buffer_size_kb", str(BIG_KB))
        _trace_for(mnt, 10)
        out.append(("RSS 10 s after buffer_size_kb %d (not full)" % BIG_KB, rss_mb(pid), "MB"))
        _write(mnt, "tracing_on", "0")
        _write(mnt, "buffer_size_kb", str(DEFAULT_KB))
        _trace_for(mnt, 4)
        out.append(("RSS after buffer_size_kb back to %d" % DEFAULT_KB, rss_mb(pid), "MB"))
    return out


def _rb_pages_bytes(allocinfo: str) -> int:
    """The bytes of the ring buffers' pages as the kernel accounts them
    (``__rb_allocate_pages``' lines of /proc/allocinfo): a sub-buffer's page
    is 4096 bytes, its header's 16 included, where ``buffer_total_size_kb``
    counts the 4080 of data (a 2 GB buffer a CPU is 8 MB more pages)."""
    return sum(int(line.split()[0]) for line in allocinfo.splitlines()
               if line.rstrip().endswith("func:__rb_allocate_pages"))


def in_process(big_kb: int = BIG_KB) -> list[tuple[str, float, str]]:
    from .. import sim
    from ..sim.files import read_file, write_file
    from ..sim.clock import ManualClock
    me = os.getpid()
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                 cmdline="trace_options=stackmap,stacktrace")
    out = [("in-process: RSS after boot", rss_mb(me), "MB")]

    def rd(path):
        return read_file(k, T + path, 1 << 16).decode()

    write_file(k, T + "buffer_size_kb", str(big_kb).encode())
    for path, value in EVERYTHING:
        write_file(k, T + path, value.encode())
    held = -1
    while True:
        for _ in range(10):
            k.clock.advance(int(FILL_STEP_S * 1e9))
            k.timekeeper.run_until_now()
        now = int(re.search(r"entries-in-buffer/entries-written: (\d+)/", rd("trace")).group(1))
        if now <= held:
            break
        held = now
    total_kb = int(rd("buffer_total_size_kb").split()[0])
    m = re.search(r"entries: \d+ / (\d+)", rd("stack_map_stat"))
    pool_mb = int(m.group(1)) * POOL_ELT_BYTES / 2 ** 20
    out.append(("in-process: entries held, buffers full at buffer_size_kb %d" % big_kb,
                now, "entries"))
    out.append(("in-process: RSS, buffers full", rss_mb(me), "MB"))
    out.append(("  bound: buffers %d KB + stackmap pool + 150 MB" % total_kb,
                total_kb / 1024 + pool_mb + 150, "MB"))
    pages_mb = _rb_pages_bytes(read_file(k, "proc/allocinfo").decode()) / 2 ** 20
    out.append(("  their pages (allocinfo's __rb_allocate_pages) + pool + 100 MB",
                pages_mb + pool_mb + 100, "MB"))
    write_file(k, T + "tracing_on", b"0")
    out.extend(_resizes(k, big_kb, total_kb))
    out.append(("in-process: RSS after buffer_size_kb back to %d" % DEFAULT_KB, rss_mb(me), "MB"))
    t0 = time.perf_counter()
    keeper = HeapKeeper(k)
    keeper.after_request()               # what the daemon does after that write,
    keeper.trim_if_due()                 # and at its next idle moment
    trim_ms = (time.perf_counter() - t0) * 1e3
    out.append(("in-process: RSS after that and the daemon's heap trim", rss_mb(me), "MB"))
    out.append(("  the trim took (the daemon's main loop waits for it)", trim_ms, "ms"))
    return out


def _resizes(k, big_kb: int, total_kb: int) -> list[tuple[str, float, str]]:
    """The time of ``buffer_size_kb`` writes on full buffers (the request
    waits for them: a resize moves no sub-buffer, a shrink gives memory
    back), doubled, back, then to the default; against copying the
    buffers' bytes once (what a resize that copied the ring cost at least)."""
    from ..sim.files import write_file
    out = []
    for kb, what in ((2 * big_kb, "grown x2"), (big_kb, "shrunk back"),
                     (DEFAULT_KB, "shrunk to the default")):
        t0 = time.perf_counter()
        write_file(k, T + "buffer_size_kb", str(kb).encode())
        out.append(("in-process: buffer_size_kb %d, buffers full: %s" % (kb, what),
                    (time.perf_counter() - t0) * 1e3, "ms"))
    chunk = 64 << 20
    src, dst = bytearray(chunk), bytearray(chunk)
    src[::4096] = b"\1" * len(src[::4096])
    t0 = time.perf_counter()
    for _ in range(max(1, (total_kb << 10) // chunk)):
        dst[:] = src
    out.append(("  baseline: the buffers' %d KB copied once" % total_kb,
                (time.perf_counter() - t0) * 1e3, "ms"))
    return out


def after_minutes(size_kb: int = BIG_KB, minutes: float = 10.0,
                  every_s: float = 30.0) -> list[tuple[str, float, str]]:
    """Issue 33's done-means 5 on a mount: ``buffer_size_kb`` at ``size_kb``,
    stackmap, stacktrace, the function tracer and every event on for
    ``minutes``, ``per_cpu/cpu0/stats`` read every READ_EVERY_S (each read
    catches the kernel up); the daemon's VmRSS every ``every_s`` and at the
    end, against buffers + stackmap pool + 100 MB (the pool as in
    ``in_process``), the buffers counted as ``buffer_total_size_kb`` (their
    data bytes) and as their pages (``_rb_pages_bytes``)."""
    out = []
    with fakefs_mounted(args=("--cmdline", "trace_options=stackmap,stacktrace")) as (mnt, _log):
        pid = _daemon_pid(mnt)
        out.append(("RSS at the mount", rss_mb(pid), "MB"))
        _write(mnt, "buffer_size_kb", str(size_kb))
        for path, value in EVERYTHING:
            _write(mnt, path, value)
        t0 = time.monotonic()
        end = t0 + minutes * 60
        mark = t0 + every_s
        while time.monotonic() < end:
            _read(mnt, "per_cpu/cpu0/stats")
            time.sleep(READ_EVERY_S)
            if time.monotonic() >= mark:
                print("  %6.0f s  RSS %7.1f MB" % (time.monotonic() - t0, rss_mb(pid)),
                      flush=True)
                mark += every_s
        rss = rss_mb(pid)
        total_kb = int(_read(mnt, "buffer_total_size_kb").split()[0])
        held = sum(int(re.search(r"^bytes: (\d+)", _read(mnt, "per_cpu/cpu%d/stats" % cpu),
                                 re.M).group(1))
                   for cpu in range(len(os.listdir(os.path.join(mnt, T, "per_cpu")))))
        m = re.search(r"entries: \d+ / (\d+)", _read(mnt, "stack_map_stat"))
        pool_mb = int(m.group(1)) * POOL_ELT_BYTES / 2 ** 20
        with open(os.path.join(mnt, "proc/allocinfo")) as fh:
            pages_mb = _rb_pages_bytes(fh.read()) / 2 ** 20
        out.append(("RSS after %g min, everything on, buffer_size_kb %d" % (minutes, size_kb),
                    rss, "MB"))
        out.append(("  bound: buffers %d KB + stackmap pool %.1f MB + 100 MB"
                    % (total_kb, pool_mb), total_kb / 1024 + pool_mb + 100, "MB"))
        out.append(("  bound: their pages (allocinfo's __rb_allocate_pages) + pool + 100 MB",
                    pages_mb + pool_mb + 100, "MB"))
        out.append(("  the entries the buffers hold (stats' bytes)", held / 2 ** 20, "MB"))
    return out


DM5_SIZES_KB = (1408, 16384, 65536)


def bench_after_minutes() -> list[tuple[str, float, str]]:
    """Done-means 5 at a few buffer sizes: the default, 16 MB and 64 MB per
    CPU (a mount each, 10 minutes each)."""
    out = []
    for kb in DM5_SIZES_KB:
        out += after_minutes(kb)
    return out


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["--after-minutes"]:
        rows = after_minutes(*(f(a) for f, a in zip((int, float), args[1:])))
    elif args[:1] == ["--in-process"]:
        rows = in_process(int(args[1]) if args[1:] else BIG_KB)
    else:
        rows = bench_memory(float(args[0]) if args else SECONDS)
    for name, value, unit in rows:
        print("  %-62s %12.1f %s" % (name, value, unit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
