"""trace_clock (trace_clock.py): entries are stamped with the chosen
clock's readings, printed in its units."""

import re

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.trace_clock import TSC_KHZ, TraceClocks
from kfiles import rd, wr

MS = 1_000_000


def boot():
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.clock.advance(5_000 * MS)
    wr(k, "events/sched/sched_switch/enable", "1")
    return k


def stamps(k):
    """The raw printer's timestamps, in the order shown."""
    wr(k, "options/raw", "1")
    out = [int(ln.split()[2]) for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    wr(k, "options/raw", "0")
    return out


def capture(k, clock):
    wr(k, "trace_clock", clock)
    assert "[%s]" % clock in rd(k, "trace_clock")
    assert stamps(k) == []                         # a new clock empties the buffer
    t0 = k.clock.now_ns()
    k.clock.advance(20 * MS)
    wr(k, "tracing_on", "0")
    t1 = k.clock.now_ns()
    ts = stamps(k)
    assert ts
    return t0, t1, ts


def test_counter_counts_each_entry():
    k = boot()
    _t0, _t1, ts = capture(k, "counter")
    assert sorted(ts) == ts and len(set(ts)) == len(ts)
    assert ts[-1] - ts[0] == len(ts) - 1                      # one reading per entry, no other reader
    lines = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    assert all(re.search(r"\] [.dDbX][.Nnp][.hsHzZ][.0-9a-f][.0-9a-f] +\d+: sched_switch", ln)
               for ln in lines)
    stats = rd(k, "per_cpu/cpu0/stats")
    assert re.search(r"^oldest event ts: \d+$", stats, re.M) and re.search(r"^now ts: \d+$", stats, re.M)


def test_uptime_x86_tsc_and_tai_readings():
    k = boot()
    t0, t1, ts = capture(k, "uptime")
    # jiffies (HZ 250) in USER_HZ (100) ticks since boot
    assert t0 * 100 // 10**9 - 1 <= ts[0] <= ts[-1] <= t1 * 100 // 10**9
    wr(k, "tracing_on", "1")
    t0, t1, ts = capture(k, "x86-tsc")
    assert t0 * TSC_KHZ // 10**6 <= ts[0] <= ts[-1] <= t1 * TSC_KHZ // 10**6
    wr(k, "tracing_on", "1")
    t0, t1, ts = capture(k, "tai")
    wall = int(k.clock.boot_wall * 1e9)
    assert wall + t0 <= ts[0] <= ts[-1] <= wall + t1
    # tai counts nanoseconds: seconds.microseconds
    last = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")][-1]
    us = (ts[-1] + 500) // 1000
    assert " %d.%06d: " % (us // 10**6, us % 10**6) in last
    wr(k, "trace_clock", "local")
    wr(k, "tracing_on", "1")


def test_jiffies_to_clock_t_for_other_hz():
    assert TraceClocks(100, 0).reader("uptime")(1_234_000_000) == 123
    assert TraceClocks(1000, 0).reader("uptime")(1_234_567_890) == 123
    assert TraceClocks(300, 0).reader("uptime")(10**9) == 99      # 300 jiffies of 3333333 ns
    assert TraceClocks(250, 0).reader("local") is None
