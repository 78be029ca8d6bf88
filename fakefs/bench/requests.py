"""``make bench`` rows of issue 35 ("requests stay short"), through a real mount:

* a long glob list written to ``set_ftrace_filter`` (the names of
  ``available_filter_functions`` with prefix, suffix, middle and ``?``/``[``
  globs among them, 10 MB by default): how long the write takes, the
  daemon's CPU meanwhile (on a busy machine the wall time is more), and the
  latency of ``cat tracing_on`` (open+read+close) sent every 10 ms meanwhile;
* the daemon's CPU over 5 s while 200 readers are blocked in ``trace_pipe``
  (nothing is traced: they wait);
* 1,000 kprobes (in-process: the kernel model's own cost, each a write that
  holds the mount that long): added in one write to ``kprobe_events``,
  enabled and disabled through ``events/kprobes/enable``, cleared; beside
  100 of them, the baseline (per probe the same figures: no quadratic work).

``python -m fakefs.bench.requests [MB] [READERS]`` prints the rows alone.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time

from .barefs import fakefs_mounted
from .. import sim
from ..fuse.mountpoint import daemon_pids

TRACING = "sys/kernel/tracing"


def glob_list(names: list[str], size: int, seed: int = 1) -> bytes:
    """About ``size`` bytes of words, one a line: 60 % function names, the
    rest ``abc*``, ``*abc``, ``*abc*`` and ``a?c*d`` / ``[ab]bc*`` globs."""
    rng = random.Random(seed)
    out = []
    n = 0
    while n < size:
        nm = rng.choice(names)
        r = rng.random() if len(nm) >= 6 else 0.0
        h = len(nm) // 2                      # (each glob matches nm at least)
        if r < 0.6:
            w = nm
        elif r < 0.72:
            w = nm[:h] + "*"
        elif r < 0.82:
            w = "*" + nm[h:]
        elif r < 0.92:
            w = "*" + nm[len(nm) // 3:2 * len(nm) // 3] + "*"
        elif r < 0.96:
            w = nm[:2] + "?" + nm[3:h] + "*" + nm[h:]
        else:
            w = "[%s%s]%s*" % (nm[0], rng.choice("abcdefgs"), nm[1:h])
        out.append(w)
        n += len(w) + 1
    return ("\n".join(out) + "\n").encode()


def _cat(path: str) -> float:
    t0 = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        while os.read(fd, 4096):
            pass
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def write_while_reading(mnt: str, data: bytes, chunk: int = 1 << 20, every: float = 0.01,
                        path: str = "set_ftrace_filter"):
    """(seconds of the write to ``path``, latencies of the cats sent meanwhile)."""
    base = os.path.join(mnt, TRACING)
    done = threading.Event()
    took = []
    err = []

    def writer():
        t0 = time.perf_counter()
        try:
            fd = os.open(os.path.join(base, path), os.O_WRONLY | os.O_TRUNC)
            try:
                for i in range(0, len(data), chunk):
                    os.write(fd, data[i:i + chunk])
            finally:
                os.close(fd)
        except OSError as e:
            err.append(e)
        took.append(time.perf_counter() - t0)
        done.set()

    lat = []
    th = threading.Thread(target=writer)
    th.start()
    target = os.path.join(base, "tracing_on")
    while not done.is_set():
        lat.append(_cat(target))
        time.sleep(every)
    th.join()
    if err:
        raise err[0]
    return took[0], lat


def cpu_seconds(pid: int) -> float:
    with open("/proc/%d/stat" % pid) as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def blocked_readers_cpu(mnt: str, readers: int = 200, seconds: float = 5.0,
                        settle: float = 2.0) -> tuple[float, int, list]:
    """(daemon CPU seconds over ``seconds`` with ``readers`` cats blocked in
    trace_pipe, how many were still blocked at the end, how they ended on
    SIGINT: their return codes).  The cats take SIGINT's default action
    whatever this process inherited (a shell's background job ignores it)."""
    pid = daemon_pids(os.path.realpath(mnt))[0]
    path = os.path.join(mnt, TRACING, "trace_pipe")
    procs = [subprocess.Popen(["env", "--default-signal=INT", "cat", path],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(readers)]
    try:
        time.sleep(settle)
        a = cpu_seconds(pid)
        time.sleep(seconds)
        used = cpu_seconds(pid) - a
        alive = sum(p.poll() is None for p in procs)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        ended = []
        for p in procs:
            try:
                ended.append(p.wait(10))
            except subprocess.TimeoutExpired:
                ended.append(None)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return used, alive, ended


def bench_requests(mb: float = 10.0, readers: int = 200) -> list[tuple[str, object, str]]:
    rows = []
    with fakefs_mounted() as (mnt, _log):
        with open(os.path.join(mnt, TRACING, "available_filter_functions")) as fh:
            names = [ln.split()[0] for ln in fh if ln.strip()]
        data = glob_list(names, int(mb * 1e6))
        pid = daemon_pids(os.path.realpath(mnt))[0]
        cpu0 = cpu_seconds(pid)
        took, lat = write_while_reading(mnt, data)
        cpu = cpu_seconds(pid) - cpu0
        lat.sort()
        rows += [("%.3g MB glob list to set_ftrace_filter (%d words, %d names)"
                  % (len(data) / 1e6, data.count(b"\n"), len(names)), took, "s"),
                 # (the wall time less this: the daemon waited for a CPU)
                 ("  daemon CPU meanwhile", cpu, "s"),
                 ("  cat tracing_on meanwhile: max (%d cats)" % len(lat), lat[-1] * 1e3, "ms"),
                 ("  cat tracing_on meanwhile: p99", lat[int(len(lat) * 0.99)] * 1e3, "ms"),
                 ("  cat tracing_on meanwhile: median", statistics.median(lat) * 1e3, "ms")]
        probes = kprobe_list(names, 1000).encode()
        took, lat = write_while_reading(mnt, probes, chunk=len(probes), path="kprobe_events")
        lat.sort()
        rows += [("1,000 kprobes written to kprobe_events (one write)", took, "s"),
                 ("  cat tracing_on meanwhile: max (%d cats)" % len(lat), lat[-1] * 1e3, "ms")]
        with open(os.path.join(mnt, TRACING, "kprobe_events"), "w"):
            pass
    with fakefs_mounted() as (mnt, _log):
        used, alive, _ended = blocked_readers_cpu(mnt, readers)
        rows += [("daemon CPU over 5 s, %d trace_pipe readers blocked (%d still)"
                  % (readers, alive), used, "s"),
                 ("  share of a core", used / 5.0 * 100, "%")]
    return rows


def kprobe_list(names: list[str], n: int) -> str:
    """``n`` kprobe commands on functions ``names`` (available_filter_functions)
    holds once (a name held twice needs its module or address)."""
    once = collections.Counter(names)
    unique = sorted(nm for nm, c in once.items() if c == 1 and not nm.startswith("__"))
    return "".join("p:kp%d %s\n" % (i, nm)
                   for i, nm in enumerate(random.Random(1).sample(unique, n)))


def kprobe_writes(n: int) -> dict[str, float]:
    """Seconds of each write with ``n`` kprobes on distinct functions."""
    from ..sim.files import read_file, write_file
    from ..sim.clock import ManualClock
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    names = [ln.split()[0] for ln in
             read_file(k, TRACING + "/available_filter_functions").decode().splitlines()]
    steps = [("add", "kprobe_events", kprobe_list(names, n)),
             ("enable", "events/kprobes/enable", "1"), ("disable", "events/kprobes/enable", "0"),
             ("clear", "kprobe_events", "")]
    took = {}
    for name, path, data in steps:
        t0 = time.perf_counter()
        write_file(k, TRACING + "/" + path, data.encode(), os.O_WRONLY | os.O_TRUNC)
        took[name] = time.perf_counter() - t0
    return took


def bench_kprobes(n: int = 1000, base: int = 100) -> list[tuple[str, object, str]]:
    big, small = kprobe_writes(n), kprobe_writes(base)
    rows = []
    for name in big:
        rows += [("%d kprobes: %s" % (n, name), big[name], "s"),
                 ("  per probe (vs %d: %.1f us)" % (base, small[name] / base * 1e6),
                  big[name] / n * 1e6, "us")]
    return rows


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    mb = float(args[0]) if args else 10.0
    readers = int(args[1]) if len(args) > 1 else 200
    for name, value, unit in bench_requests(mb, readers) + bench_kprobes():
        print("  %-62s %12.3f %s" % (name, value, unit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
