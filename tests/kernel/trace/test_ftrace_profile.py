"""The function profiler (ftrace_profile.py) and its files: function_profile_enabled
and trace_stat/functionN (ftrace_files.py, trace_stat.py)."""

import errno
import os
import random
import re
import statistics

import pytest

import ftrace_helpers
from fakefs import sim
from fakefs.kernel.fs.pseudo import File, FileNode, KernelError
from fakefs.sim.clock import ManualClock
from fakefs.sim.call_rates import FN_RATE_DEFAULT as R_CALLS
from fakefs.kernel.trace.trace_stat import StatFileOps
from kfiles import errno_of, node, rd, wr

booted = ftrace_helpers.booted
S = 1_000_000_000
# with the function graph tracer (the persona's), each function is timed
HEADER = ("  Function                               Hit    Time            Avg             s^2\n"
          "  --------                               ---    ----            ---             ---\n")
DUR = r"(\d+(?:\.\d+)? us +)"
LINE = re.compile(r"^  (.{30})  ([ \d]{10})    %s    %s    %s$" % (DUR, DUR, DUR))
PLAIN_HEADER = ("  Function                               Hit\n"
                "  --------                               ---\n")


@pytest.fixture
def k(booted):
    k, _clock = booted
    yield k
    wr(k, "function_profile_enabled", "0\n")
    ftrace_helpers.undo_ftrace(k)


@pytest.fixture
def clock(booted):
    return booted[1]


def table(text):
    """{function: hits} of a stat file, checking every line's format."""
    assert text.startswith(HEADER)
    out = {}
    for ln in text[len(HEADER):].splitlines():
        m = LINE.match(ln)
        assert m, ln
        name = m.group(1).rstrip()
        assert name not in out
        out[name] = int(m.group(2))
    return out


def awake(k, before=None):
    """The CPUs' times now, and the seconds each was awake since ``before``
    (a halted CPU calls nothing): ``Scheduler.awake_seconds``."""
    now = k.sched.cpu_times(k.sim_time)
    return now, None if before is None else k.sched.awake_seconds(before, now)


def hits(text):
    return [int(LINE.match(ln).group(2)) for ln in text[len(HEADER):].splitlines()]


def us(col: str) -> float:
    return float(col.split()[0])


def times(text):
    """{function: (time, avg, s^2)} in microseconds."""
    return {m.group(1).rstrip(): (us(m.group(3)), us(m.group(4)), us(m.group(5)))
            for m in map(LINE.match, text[len(HEADER):].splitlines())}


# --------------------------------------------------------------- the files
def test_files_modes_and_first_read(k):
    assert rd(k, "function_profile_enabled") == "0\n"
    assert node(k, "function_profile_enabled").mode & 0o7777 == 0o640
    d = node(k, "trace_stat")
    assert d.is_dir and d.mode & 0o7777 == 0o750
    assert sorted(d.children) == ["function%d" % c for c in range(k.nr_cpus)]
    for c in range(k.nr_cpus):
        assert node(k, "trace_stat/function%d" % c).mode & 0o7777 == 0o640
    # never enabled: the headers alone
    assert rd(k, "trace_stat/function0") == HEADER
    # top level only
    k.tracing.instance_mkdir("prof")
    try:
        assert k.tree.root.walk("sys/kernel/tracing/instances/prof/function_profile_enabled") is None
        assert k.tree.root.walk("sys/kernel/tracing/instances/prof/trace_stat") is None
    finally:
        k.tracing.instance_rmdir("prof")


def test_times_follow_the_graph_options(k, clock):
    """Time, Avg and s^2 (us) as function_stat_show() makes them from the
    summed times: Avg = Time / Hit; graph-time off counts a function's own
    time (its callees' taken out); tracing_thresh hides the functions whose
    average is below it."""
    wr(k, "function_profile_enabled", "1\n")
    clock.advance(S // 2)
    full = times(rd(k, "trace_stat/function0"))
    t = table(rd(k, "trace_stat/function0"))
    for f, (time, avg, _s2) in full.items():
        assert abs(time / t[f] - avg) <= 0.01 * avg + 0.002, f
    wr(k, "options/graph-time", "0\n")
    wr(k, "function_profile_enabled", "0\n")
    wr(k, "function_profile_enabled", "1\n")
    clock.advance(S // 2)
    own = times(rd(k, "trace_stat/function0"))
    # a caller's own time is well under its time with its callees
    for f in ("ext4_writepages", "process_one_work", "do_writepages"):
        if f in full and f in own:
            assert own[f][1] < 0.8 * full[f][1], f
    wr(k, "options/graph-time", "1\n")
    wr(k, "tracing_thresh", "100\n")
    try:
        kept = times(rd(k, "trace_stat/function0"))
        assert kept and all(avg >= 100 for _t, avg, _s in kept.values())
        assert len(kept) < len(own)
    finally:
        wr(k, "tracing_thresh", "0\n")


def test_plain_without_the_graph_tracer():
    clock = ManualClock()
    k = sim.boot(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False,
                 config_overrides={"FUNCTION_GRAPH_TRACER": False})
    wr(k, "function_profile_enabled", "1\n")
    clock.advance(S // 2)
    text = rd(k, "trace_stat/function0")
    assert text.startswith(PLAIN_HEADER)
    h = [int(ln.split()[-1]) for ln in text[len(PLAIN_HEADER):].splitlines()]
    assert h and h == sorted(h, reverse=True)          # by hits
    assert all(re.match(r"^  .{30}  [ \d]{10}$", ln) for ln in text.splitlines()[2:])


def test_not_built_without_the_option():
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                 config_overrides={"FUNCTION_PROFILER": False})
    assert k.tree.root.walk("sys/kernel/tracing/function_profile_enabled") is None
    assert k.tree.root.walk("sys/kernel/tracing/trace_stat") is None


def test_bad_writes(k):
    err = errno_of
    assert err(wr, k, "function_profile_enabled", "x\n") == errno.EINVAL
    assert err(wr, k, "function_profile_enabled", "-1\n") == errno.EINVAL
    assert err(wr, k, "function_profile_enabled", "0x1\n") == errno.EINVAL     # base 10
    assert err(wr, k, "function_profile_enabled", " 1\n") == errno.EINVAL
    assert err(wr, k, "function_profile_enabled", "1 \n") == errno.EINVAL
    assert err(wr, k, "function_profile_enabled", "1\n\n") == errno.EINVAL
    assert err(wr, k, "function_profile_enabled", "") == errno.EINVAL
    assert err(wr, k, "function_profile_enabled", "18446744073709551616") == errno.ERANGE
    assert err(wr, k, "function_profile_enabled", "99999999999999999999x") == errno.ERANGE
    assert rd(k, "function_profile_enabled") == "0\n"
    # what kstrtoul takes: a '+', any value (!!val), what a NUL ends
    assert wr(k, "function_profile_enabled", "+1\n") == 3
    assert rd(k, "function_profile_enabled") == "1\n"
    assert wr(k, "function_profile_enabled", "0\0junk") == 6
    assert rd(k, "function_profile_enabled") == "0\n"
    assert wr(k, "function_profile_enabled", "18446744073709551615") == 20
    assert rd(k, "function_profile_enabled") == "1\n"
    # only the first 66 bytes are parsed; the whole write is taken
    assert wr(k, "function_profile_enabled", "0" * 66 + "junk") == 70
    assert rd(k, "function_profile_enabled") == "0\n"
    # the stat files have no write handler
    assert err(wr, k, "trace_stat/function0", "1\n") == errno.EINVAL


# --------------------------------------------------------------- counting
def test_counts_grow_while_enabled_and_freeze_when_disabled(k, clock):
    wr(k, "function_profile_enabled", "1\n")
    clock.advance(S // 2)
    a = rd(k, "trace_stat/function0")
    clock.advance(S // 2)
    b = rd(k, "trace_stat/function0")
    assert a != b
    ta, tb = table(a), table(b)
    assert all(tb[f] >= n for f, n in ta.items())
    assert sum(tb.values()) > sum(ta.values()) + R_CALLS // 4
    wr(k, "function_profile_enabled", "0\n")
    c = rd(k, "trace_stat/function0")
    clock.advance(S)
    assert rd(k, "trace_stat/function0") == c
    clock.advance(5 * S)              # a gap: skipped, nothing counted either
    assert rd(k, "trace_stat/function0") == c
    # writing 0 again changes nothing; 1 after 0 empties the tables
    wr(k, "function_profile_enabled", "0\n")
    assert rd(k, "trace_stat/function0") == c
    wr(k, "function_profile_enabled", "1\n")
    assert rd(k, "trace_stat/function0") == HEADER
    clock.advance(S // 10)
    d = table(rd(k, "trace_stat/function0"))
    assert 0 < sum(d.values()) < sum(table(c).values())
    # writing 1 while on does not empty them
    wr(k, "function_profile_enabled", "1\n")
    assert sum(table(rd(k, "trace_stat/function0")).values()) >= sum(d.values())


def test_the_rate_and_the_table(k, clock):
    """Every CPU makes R_CALLS calls a second while it is awake (plus the
    prior of the functions the call profile never saw), spread over the
    functions the way the walk calls them, sorted by hits."""
    wr(k, "function_profile_enabled", "1\n")
    before, _ = awake(k)
    clock.advance(2 * S)
    wr(k, "function_profile_enabled", "0\n")
    _, secs = awake(k, before)
    tables = [rd(k, "trace_stat/function%d" % c) for c in range(k.nr_cpus)]
    assert tables[0] != tables[1]
    for text, sec in zip(tables, secs):
        tm = [v[0] for v in times(text).values()]
        assert tm == sorted(tm, reverse=True)          # by time (function_stat_cmp())
        t = table(text)
        assert 0.5 < sec < 1.8                         # halted part of the time
        assert 0.98 * sec * R_CALLS < sum(t.values()) < 1.08 * sec * R_CALLS
        assert len(t) > 1000                 # a long tail
        top = sorted(t, key=t.get, reverse=True)[:50]     # (the mix varies by seed)
        assert "update_curr" in top[:10] and "try_to_wake_up" in top
        assert 400 < t["schedule"] < 20000        # hundreds a second
        assert t["schedule"] > t.get("do_sys_openat2", 0)


def test_long_names_are_cut_at_30(k, clock):
    wr(k, "function_profile_enabled", "1\n")
    clock.advance(S)
    wr(k, "function_profile_enabled", "0\n")
    prof = node(k, "function_profile_enabled").data
    names = {k.kallsyms.lookup(ip)[0] for ip in prof.stats[0].ips}
    long = [n for n in names if len(n) > 30]
    assert long
    t = table(rd(k, "trace_stat/function0"))
    assert all(n[:30] in t for n in long)


def test_gaps_count_by_rate(k, clock):
    wr(k, "function_profile_enabled", "1\n")
    before, _ = awake(k)
    clock.advance(60 * S)             # unobserved: mostly skipped
    t = table(rd(k, "trace_stat/function1"))
    _, secs = awake(k, before)
    assert 15 < secs[1] < 50          # (skipped time at the share simulated)
    assert 0.98 * secs[1] * R_CALLS < sum(t.values()) < 1.08 * secs[1] * R_CALLS


# --------------------------------------------------------------- the global filter
def test_the_global_filter_counts_from_its_change(k, clock):
    wr(k, "function_profile_enabled", "1\n")
    before, _ = awake(k)
    clock.advance(S)
    # nobody looked: the second before the change is counted under no filter
    wr(k, "set_ftrace_filter", "schedule\n")
    changed, secs = awake(k, before)
    clock.advance(10 * S)             # a gap: skipped time counts under the filter
    t = table(rd(k, "trace_stat/function0"))
    others = sum(n for f, n in t.items() if f != "schedule")
    assert 0.98 * secs[0] * R_CALLS < others < 1.08 * secs[0] * R_CALLS
    before = dict(t)
    looked, _ = awake(k)
    clock.advance(S)
    t = table(rd(k, "trace_stat/function0"))
    assert {f: n for f, n in t.items() if f != "schedule"} == \
        {f: n for f, n in before.items() if f != "schedule"}
    # schedule() at one rate a second of CPU 0 awake, before and after the
    # look (how long it is awake in a second moves with the machine's state)
    _, last = awake(k, looked)
    _, all_ = awake(k, changed)
    late = (t["schedule"] - before["schedule"]) / last[0]
    assert 0.6 * late < t["schedule"] / (all_[0] + secs[0]) < 1.6 * late
    # notrace wins, and an instance's filter is not the global one
    wr(k, "set_ftrace_notrace", "schedule\n")
    k.tracing.instance_mkdir("prof")
    try:
        wr(k, "instances/prof/set_ftrace_filter", "*\n")
        clock.advance(S)
        assert table(rd(k, "trace_stat/function0")) == t
    finally:
        k.tracing.instance_rmdir("prof")


def test_independent_of_the_tracer_and_tracing_on(k, clock):
    wr(k, "tracing_on", "0\n")
    try:
        wr(k, "function_profile_enabled", "1\n")
        before, _ = awake(k)
        clock.advance(S // 2)
        off = sum(table(rd(k, "trace_stat/function0")).values())
        before, secs = awake(k, before)
        off /= secs[0]                  # (calls a second awake)
        wr(k, "function_profile_enabled", "0\n")
        wr(k, "function_profile_enabled", "1\n")
        wr(k, "current_tracer", "function\n")
        clock.advance(S // 2)
        on = sum(table(rd(k, "trace_stat/function0")).values())
        on /= awake(k, before)[1][0]
        assert 0.9 < on / off < 1.1
    finally:
        wr(k, "tracing_on", "1\n")


def test_determinism_for_a_seed():
    def run(seed):
        clock = ManualClock()
        k = sim.boot(seed=seed, nr_cpus=2, clock=clock, host_kallsyms=False)
        wr(k, "function_profile_enabled", "1\n")
        clock.advance(S // 3)
        a = rd(k, "trace_stat/function0")
        clock.advance(S // 3)
        return a + rd(k, "trace_stat/function1")

    first = run(7)
    assert run(7) == first
    assert run(8) != first


# --------------------------------------------------------------- trace_stat
class _Stats:
    """A stat tracer with fixed records: (name, hits)."""

    def __init__(self, recs):
        self.recs = recs

    def settle(self):
        pass

    def stat_start(self, key):
        return list(range(len(self.recs)))

    def stat_cmp_key(self, key, r):
        return self.recs[r][1]

    def stat_headers(self):
        return "H\n"

    def stat_show(self, key, r):
        name, n = self.recs[r]
        if not n:
            raise KernelError(errno.EBUSY)
        return "%s %d\n" % (name, n)


def _open(ts):
    n = FileNode("f", 0o640, None, ts, StatFileOps(0))
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    return n.fops, f


def test_stat_order_is_taken_at_open_ties_latest_first():
    ts = _Stats([("a", 5), ("b", 9), ("c", 5), ("d", 1), ("e", 5)])
    fops, f = _open(ts)
    assert fops.read(f, 0, 4096) == b"H\nb 9\ne 5\nc 5\na 5\nd 1\n"
    # the order stays until the next open; the values are read at show time
    ts.recs[3] = ("d", 100)
    assert fops.read(f, 0, 4096) == b"H\nb 9\ne 5\nc 5\na 5\nd 100\n"
    fops, f = _open(ts)               # a new open sorts again
    assert fops.read(f, 0, 4096).startswith(b"H\nd 100\n")


def test_stat_show_error_ends_the_text():
    ts = _Stats([("a", 3), ("b", 2), ("c", 1)])
    fops, f = _open(ts)
    ts.recs[1] = ("b", 0)             # emptied since the open
    text = fops.read(f, 0, 4096)
    assert text == b"H\na 3\n"
    with pytest.raises(KernelError) as e:
        fops.read(f, len(text), 4096)
    assert e.value.errno == errno.EBUSY


def test_reenabled_while_open(k, clock):
    wr(k, "function_profile_enabled", "1\n")
    clock.advance(S // 10)
    k.timekeeper.run_until_now()
    n = node(k, "trace_stat/function0")
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    wr(k, "function_profile_enabled", "0\n")
    wr(k, "function_profile_enabled", "1\n")
    text = n.fops.read(f, 0, 1 << 20)
    assert text == HEADER.encode()
    assert errno_of(n.fops.read, f, len(text), 4096) == errno.EBUSY


def test_every_counted_function_took_time(k, clock):
    """A function counted but never seen returning in the duration profile
    (counted at CALL_PRIOR, or too rare for the sample) is timed like a
    typical function of its kind, and one measured once takes its kind's
    spread: no row shows a Time of 0 (997 of 1,465 rows did, seed 7, 1 s),
    and a row of several hits averaging 1 us or more shows s^2 0 only for a
    function whose measured calls (two or more) lasted alike (below, a
    spread under 0.0005 us^2 prints as 0)."""
    from fakefs.sim.function_calls import measured_or_like
    wr(k, "function_profile_enabled", "1\n")
    clock.advance(S // 2)
    wl = k.workload
    prof = wl.duration_profile(R_CALLS)
    for cpu in (0, 1):
        got = times(rd(k, "trace_stat/function%d" % cpu))
        assert len(got) > 500
        assert not [f for f, (time, _avg, _s2) in got.items() if time == 0]
        n = table(rd(k, "trace_stat/function%d" % cpu))
        for f, (_time, avg, s2) in got.items():
            # (two hits' squares are a chi-squared draw of one degree of
            # freedom, below 1e-4 of its mean with chance sqrt(2e-4 / pi),
            # 0.8 %: a short run has hundreds of such rows)
            if s2 == 0 and n[f] > 2 and avg >= 1:
                sums = measured_or_like(prof, [wl.wg.ids[f]], wl.wg.base_table)[cpu][0]
                assert sums[0][0] > 1, f          # (that CPU's calls, or the others')
    # the rule itself: a measured function keeps its sums; an unmeasured one
    # is its kind's median; one measured once keeps its mean
    leaf_table = [None, ([0], [1.0], 1.0), None]         # 1 calls 0; 0 and 2 are leaves
    one = [[1, 50.0, 2500.0]] * 4
    profiles = [{0: [[2, 20.0, 250.0]] * 4, 1: [[4, 400.0, 50000.0]] * 4, 2: one}]
    row = measured_or_like(profiles, [0, 1, 2, 3], leaf_table)[0]
    assert row[0] == [[2, 20.0, 250.0]] * 4 and row[1] == [[4, 400.0, 50000.0]] * 4
    assert row[2][0][:2] == [1, 50.0] and row[2][0][2] > 2500.0     # leaf 0's spread: 0.25
    assert abs(row[2][0][2] - 2500.0 * 1.25) < 1e-6
    assert row[3][0][1] == statistics.median([10.0, 50.0])           # the leaves' median mean
