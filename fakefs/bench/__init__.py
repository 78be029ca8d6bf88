"""``make bench``: speed and memory figures, each against a baseline from the same run.

1. open+read+close of a small tracefs file through a real mount, vs the same on tmpfs;
   then vs a bare pyfuse3 filesystem (barefs.py) measured in the same run,
   with the FUSE requests one ``cat`` of the file sends to each (libfuse's debug log);
2. stackmap ``get_id`` throughput (stack events/s), vs a plain dict-based deduplication;
3. ring-buffer retention for the same simulated workload with and without the stackmap;
4. the first request after 1-600 s idle with everything traced (catchup.py), vs
   the same stretch simulated in full;
5. the function tracer at its default 500,000 calls/s: a second of it, counters and cost, vs 4000 (the earlier default);
6. the daemon's memory (memory.py): RSS after a minute of everything traced vs at the
   mount, and with big buffers full, against buffers + stackmap pool + 150 MB, then shrunk;
   after 10 minutes at three buffer sizes against buffers + stackmap pool + 100 MB;
7. the simulated kernel's step and table costs (costs.py), each vs a baseline;
8. simulated seconds per CPU second (engine.py): the compiled data plane vs the walk
   in plain Python, for the function tracer, every event, both with stacks, sched_switch;
9. the series' experiment on a mount (seed004.py): entries kept on the virtual clock, an idle
   and a busy host, without and with the stackmap, and bytes per entry beside the series';
10. requests stay short (requests.py): a 10 MB glob list written while ``cat tracing_on``
   runs, the daemon's CPU with 200 readers blocked in trace_pipe, and the writes of
   1,000 kprobes vs 100 (per probe);
11. a hist trigger's cost per hit on sched_switch, single-event and the wakeup-latency
   pair with its synthetic event (hist.py), vs the same events without a trigger;
12. ``trace-cmd stream`` interrupted after 3 s, ten times (recorders.py): the time until it
   exits (DM2: within 1 s, 10 of 10), vs the same with a 7 KB buffer;
13. ``echo 0 > tracing_on`` after 1 s and 5 s of tracing on a mount (tracing_off.py), for
   the engine bench's configurations (DM4: <= 50 ms), and the longest wait of a stats read
   every 20 ms meanwhile (DM4: <= 100 ms).

Medians over repeated rounds are printed; nothing here is asserted.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from . import catchup, costs, engine, hist, memory, recorders, requests, seed004, tracing_off

ROUNDS = 5


def _median_per_op(fn, n: int, rounds: int = ROUNDS) -> float:
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(n)
        per.append((time.perf_counter() - t0) / n)
    return statistics.median(per)


def _orc(path):
    def run(n):
        for _ in range(n):
            fd = os.open(path, os.O_RDONLY)
            while os.read(fd, 4096):
                pass
            os.close(fd)
    return run


def bench_small_file() -> list[tuple[str, float, str]]:
    mnt = tempfile.mkdtemp(prefix="fakefs-bench-")
    env = dict(os.environ)
    subprocess.run([sys.executable, "-m", "fakefs", "mount", mnt], check=True, env=env)
    try:
        target = os.path.join(mnt, "sys/kernel/tracing/tracing_on")
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
        with tempfile.NamedTemporaryFile("w", dir=shm, delete=False) as fh:
            fh.write("1\n")
            tmpfile = fh.name
        _orc(target)(200)    # warm up
        fuse = _median_per_op(_orc(target), 2000)
        tmpfs = _median_per_op(_orc(tmpfile), 2000)
        os.unlink(tmpfile)
        idle = _idle_cpu(mnt, 5.0)
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
        try:
            os.rmdir(mnt)
        except OSError:
            pass
    return [("small file open+read+close, fakefs (tracing_on)", fuse * 1e6, "us"),
            ("small file open+read+close, tmpfs baseline", tmpfs * 1e6, "us"),
            ("  ratio fakefs/tmpfs", fuse / tmpfs, "x"),
            ("idle daemon CPU time over 5 s (nobody looking)", idle, "s")]


def bench_small_file_bare() -> list[tuple[str, object, str]]:
    """fakefs against a bare pyfuse3 filesystem serving the same path (one
    with fakefs's direct_io/size 0/1 s timeouts, one as pyfuse3's hello.py:
    page cache, real size, 300 s timeouts), and the requests of one cat."""
    from . import barefs as bare
    rel = "sys/kernel/tracing/tracing_on"
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    with tempfile.NamedTemporaryFile("w", dir=shm) as tmp, bare.fakefs_mounted() as (fk, _), \
            bare.barefs_mounted(rel) as (bm, *_), bare.barefs_mounted(rel, "naive") as (nm, *_):
        tmp.write("1\n")
        tmp.flush()
        fns = {"tmpfs": _orc(tmp.name), "bare": _orc(os.path.join(bm, rel)),
               "naive": _orc(os.path.join(nm, rel)), "fakefs": _orc(os.path.join(fk, rel))}
        for fn in fns.values():
            fn(200)    # warm up
        t = bare.median_per_op(fns, 2000, ROUNDS)
    with bare.fakefs_mounted(debug=True) as (fk, flog), \
            bare.barefs_mounted(rel, debug=True) as (bm, blog, *_), \
            bare.barefs_mounted(rel, "naive", debug=True) as (nm, nlog, *_):
        reqs = bare.requests_per_cat({"fakefs": (os.path.join(fk, rel), flog),
                                      "bare": (os.path.join(bm, rel), blog),
                                      "naive": (os.path.join(nm, rel), nlog)})
    rows = [("small file open+read+close, tmpfs", t["tmpfs"] * 1e6, "us"),
            ("small file open+read+close, bare pyfuse3 (fakefs's choices)", t["bare"] * 1e6, "us"),
            ("small file open+read+close, bare pyfuse3 (hello.py's choices)",
             t["naive"] * 1e6, "us"),
            ("small file open+read+close, fakefs (tracing_on)", t["fakefs"] * 1e6, "us"),
            ("  ratio fakefs/bare (same choices)", t["fakefs"] / t["bare"], "x"),
            ("  ratio fakefs/bare (hello.py's choices)", t["fakefs"] / t["naive"], "x"),
            ("  ratio bare/tmpfs", t["bare"] / t["tmpfs"], "x")]
    for when in ("warm", "cold"):
        for label in ("fakefs", "bare", "naive"):
            c = reqs[label][when]
            ops = ", ".join("%s %g" % (op, round(n, 2)) for op, n in c.items())
            rows.append(("FUSE requests per cat, %s, %s" % (when, label), sum(c.values()),
                         "req (%s)" % ops))
    return rows


def _idle_cpu(mnt: str, seconds: float) -> float:
    """CPU seconds the daemon serving ``mnt`` uses while nobody touches it."""
    out = subprocess.run(["pgrep", "-f", "fakefs mount %s" % mnt], capture_output=True, text=True)
    pids = out.stdout.split()
    if not pids:
        return float("nan")
    tck = os.sysconf("SC_CLK_TCK")

    def cpu():
        with open("/proc/%s/stat" % pids[0]) as fh:
            f = fh.read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tck
    a = cpu()
    time.sleep(seconds)
    return cpu() - a


def _kernel(cmdline: str = "", nr_cpus: int = 2):
    from .. import sim
    from ..sim.clock import ManualClock
    clock = ManualClock()
    return sim.boot(cmdline=cmdline, seed=1, nr_cpus=nr_cpus, clock=clock), clock


def bench_get_id() -> list[tuple[str, float, str]]:
    from ..kernel.trace.trace_stackmap import FtraceStackMap
    k, _ = _kernel()
    rng = k.subsystem_rng("bench")
    stacks = [k.workload.sample(rng, i % k.nr_cpus)[1] for i in range(100_000)]
    uniq = len(set(stacks))

    def run_cold(n):
        m = FtraceStackMap(14, nr_cpus=1, hash_seed=1)      # empty map, nothing hashed yet
        get = m.get_id
        for s in stacks[:n]:
            get(s)

    warm = FtraceStackMap(14, nr_cpus=1, hash_seed=1)
    for s in stacks:
        warm.get_id(s)

    def run_warm(n):
        get = warm.get_id
        for s in stacks[:n]:
            get(s)

    def run_dict(n):
        d = {}
        for s in stacks[:n]:
            e = d.get(s)
            if e is None:
                d[s] = [len(d), 1]
            else:
                e[1] += 1

    cold = _median_per_op(run_cold, len(stacks))
    hot = _median_per_op(run_warm, len(stacks))
    base = _median_per_op(run_dict, len(stacks))
    return [("get_id, cold map (%d events, %d distinct stacks, bits=14)" % (len(stacks), uniq),
             1 / cold, "events/s"),
            ("get_id, warm map (every stack already stored)", 1 / hot, "events/s"),
            ("dict-based dedup baseline (same events)", 1 / base, "events/s"),
            ("  ratio warm get_id / dict baseline", base / hot, "x")]


def bench_retention(seconds: float = 5.0) -> list[tuple[str, float, str]]:
    out = []
    res = {}
    for label, opts in (("without stackmap", "stacktrace"), ("with stackmap", "stackmap,stacktrace")):
        k, clock = _kernel("trace_options=%s ftrace=function" % opts)
        clock.advance(int(seconds * 1e9))
        t0 = time.perf_counter()
        k.timekeeper.run_until_now()
        sim_cost = time.perf_counter() - t0
        buf = k.tracing.global_trace.buffer
        entries = buf.entries()
        written = buf.total_written()
        nbytes = buf.bytes()
        fn_events = sum(1 for cb in buf.cpus for e in cb.events() if e[1] == 1)
        res[label] = (entries, fn_events, nbytes)
        out += [("retention %s: entries kept / written" % label, entries, "of %d" % written),
                ("retention %s: traced calls kept (with their stacks)" % label, fn_events, "calls"),
                ("retention %s: bytes per traced call" % label, nbytes / max(fn_events, 1), "B"),
                ("retention %s: simulation cost of %.0f s" % (label, seconds), sim_cost, "s")]
    base = res["without stackmap"][1]
    out.append(("  ratio calls kept with/without stackmap", res["with stackmap"][1] / max(base, 1), "x"))
    return out


# the series' v3 cover letter: sched_switch with a stacktrace trigger, 5 s,
# default buffer (kernel 6.12, arm64): 9,625 events, 466 unique stacks, 88 B a
# full stack, 12 B a stack_id entry
SERIES_SCHED = "series v3: 9625 events, 466 stacks; 88 B full vs 12 B stack_id"


def bench_retention_sched(seconds: float = 5.0) -> list[tuple[str, float, str]]:
    """The series' experiment: sched_switch with stacktrace, default buffer."""
    from ..sim.files import write_file
    from ..kernel.trace import trace_entries as te
    out = []
    kept = {}
    from .. import sim
    from ..sim.clock import ManualClock
    for label, opts in (("without stackmap", ("stacktrace",)), ("with stackmap", ("stackmap", "stacktrace"))):
        clock = ManualClock()
        k = sim.boot(seed=1, nr_cpus=2, clock=clock, host_kallsyms=False)     # the machine's own rates
        t = "sys/kernel/tracing/"
        write_file(k, t + "events/sched/sched_switch/enable", b"1")
        for o in opts:
            write_file(k, t + "options/" + o, b"1")
        clock.advance(int(seconds * 1e9))
        k.timekeeper.run_until_now()
        tr = k.tracing.global_trace
        ev = [e for e in k.tracing.events if e.name == "sched_switch"][0]
        events = [e for cb in tr.buffer.cpus for e in cb.events()]
        n = sum(1 for e in events if e[1] == ev.id)
        stacks = sum(1 for e in events if e[1] in (te.TRACE_STACK, te.TRACE_STACK_ID))
        nbytes = tr.buffer.bytes()
        kept[label] = n
        out += [("sched_switch %s: events kept / written" % label, n, "of %d entries written"
                 % tr.buffer.total_written()),
                ("sched_switch %s: bytes per event (with its stack entry)" % label, nbytes / max(n, 1), "B"),
                ("sched_switch %s: stack entries kept" % label, stacks, "")]
        if tr.stackmap is not None and "stackmap" in opts:
            sm = tr.stackmap
            out.append(("sched_switch with stackmap: unique stacks / lookups", sm.next_elt,
                        "of %d (%s)" % (sum(sm.successes) + sum(sm.drops), SERIES_SCHED)))
    out.append(("  ratio events kept with/without stackmap",
                kept["with stackmap"] / max(kept["without stackmap"], 1), "x"))
    return out


def main(argv=None) -> int:
    """``python -m fakefs.bench [NAME...]``: only the sections whose function
    name is one of the NAMEs, ``bench_`` optional (``small_file_bare``, ``get_id``...)."""
    names = sys.argv[1:] if argv is None else list(argv)
    sections = [("simulated seconds per CPU second (in-process, 2 CPUs; median of %d rounds, "
                 "each the compiled and the baseline in turn)" % engine.ROUNDS,
                 engine.bench_engine),
                ("tracefs small-file latency", bench_small_file),
                ("small file: fakefs vs a bare pyfuse3 filesystem (warm: cats back to back; "
                 "cold: 1.2 s apart)", bench_small_file_bare),
                ("stackmap get_id throughput", bench_get_id),
                ("ring-buffer retention (function tracer + stacktrace, 2 CPUs, 1410 KB/CPU; "
                 "deterministic, one run)", bench_retention),
                ("ring-buffer retention, the series' experiment (sched_switch + stacktrace, 2 CPUs, "
                 "1410 KB/CPU, 5 s; one run)", bench_retention_sched),
                ("the series' experiment on a mount (sched_switch + kmem_cache_alloc + stacktrace, "
                 "default buffer, 5 s): virtual clock, idle and busy host; one run", seed004.bench_seed004)]
    sections.append(("first request after idle (function tracer, stacktrace, stackmap, every "
                     "event; 2 CPUs, default buffer)", catchup.bench_catchup))
    sections.append(("cat trace of a full buffer", catchup.bench_trace_read))
    sections.append(("function tracer for 1 s (in-process; entries-written, overrun, full buffer)",
                     catchup.bench_rates))
    sections.append(("trace-cmd record in fakefs sandbox (function tracer; every event; "
                     "one run)", recorders.bench_recorders))
    sections.append(("trace-cmd stream -e sched_switch in fakefs sandbox, Ctrl-C: exit times "
                     "(one run of %d tries each)" % recorders.STREAM_TRIES, recorders.bench_stream_ctrlc))
    sections.append(("echo 0 > tracing_on after tracing, on a mount (median and worst of %d mounts)"
                     % tracing_off.MOUNTS, tracing_off.bench_tracing_off))
    sections.append(("daemon memory (stackmap, stacktrace, function tracer, every event; "
                     "one run)", memory.bench_memory))
    sections.append(("memory of full big buffers (in-process; one run)",
                     memory.in_process))
    sections.append(("daemon memory after 10 minutes of everything traced, at %s KB per CPU "
                     "(a mount each; issue 33's done-means 5; one run)"
                     % ", ".join(map(str, memory.DM5_SIZES_KB)), memory.bench_after_minutes))
    sections += costs.SECTIONS
    sections.append(("requests stay short: a 10 MB glob list to set_ftrace_filter with cats meanwhile; "
                     "200 blocked trace_pipe readers (one run)", requests.bench_requests))
    sections.append(("1,000 kprobes added, enabled, disabled, cleared (in-process; one run)",
                     requests.bench_kprobes))
    sections.append(("hist triggers: CPU per hit on sched_switch and on an fprobe's function hits, vs no trigger "
                     "(hist.py; median of 3 rounds)", hist.bench_hist))
    try:
        from . import alloc_tag
        sections.append(("memory allocation profiling", alloc_tag.bench_alloc_tag))
    except ImportError:
        pass
    if names:
        sections = [(t, fn) for t, fn in sections if fn.__name__ in names
                    or fn.__name__.removeprefix("bench_") in names]
    for title, fn in sections:
        print("== %s" % title + ("" if "one run" in title or "median" in title
                                 else " (median of %d rounds)" % ROUNDS))
        for name, value, unit in fn():
            if isinstance(value, float) and value < 100:
                print("  %-62s %12.3f %s" % (name, value, unit))
            else:
                print("  %-62s %12.0f %s" % (name, value, unit))
    return 0
