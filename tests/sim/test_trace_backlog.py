"""A gap in observation: simulated in full where it can be seen, counted
elsewhere (trace_backlog.py, Timekeeper.catch_up).  The equivalence: the same
gap simulated in full (observed every 20 ms) and caught up at once give the
same counters within sampling error."""


import re

from fakefs import sim
from fakefs.sim.timekeeper import GAP_WINDOW_NS
from fakefs.sim.clock import ManualClock
from kfiles import rd, wr

STEP = 20_000_000


def boot(*settings, kb=256):
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "buffer_size_kb", str(kb))
    for path, value in settings:
        wr(k, path, value)
    k.clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    simulated = []
    k.add_timer_hook(lambda t0, t1: simulated.append(t1 - t0))
    return k, simulated


def observed_every_step(k, seconds):
    for _ in range(int(seconds * 1e9) // STEP):
        k.clock.advance(STEP)
        k.timekeeper.run_until_now()


def counters(k):
    tr = k.tracing.global_trace
    cpus = tr.buffer.cpus
    out = {"written": [cb.entries + cb.overrun for cb in cpus],
           "entries": [cb.entries for cb in cpus],
           "dropped": [cb.dropped for cb in cpus]}
    if tr.stackmap is not None:
        out["successes"] = list(tr.stackmap.successes)
    return out


def close(a, b, rel):
    return abs(a - b) <= rel * max(a, b)


EVERYTHING = (("events/sched/enable", "1"), ("options/stacktrace", "1"), ("options/stackmap", "1"))


def test_gap_counts_equal_full_simulation():
    full, _ = boot(*EVERYTHING)
    observed_every_step(full, 10)
    gap, simulated = boot(*EVERYTHING)
    gap.clock.advance(10_000_000_000)
    gap.timekeeper.run_until_now()
    a, b = counters(full), counters(gap)
    for key in ("written", "entries", "successes"):
        for x, y in zip(a[key], b[key]):
            assert close(x, y, 0.05), (key, a, b)
    assert sum(simulated) < 4_000_000_000          # most of the gap was not simulated
    smap = gap.tracing.global_trace.stackmap
    assert sum(e.ref_count for _, e in smap.populated()) == sum(smap.successes)
    assert smap.next_elt <= smap.max_elts
    stat = rd(gap, "stack_map_stat")
    assert "successes: %d\n" % sum(smap.successes) in stat
    # what the buffer holds is the end of the gap, and it is full
    oldest = min(cb.oldest_ts() for cb in gap.tracing.global_trace.buffer.cpus)
    assert oldest >= gap.clock.now_ns() - sum(simulated)
    header = rd(gap, "trace").split("\n")[2]
    assert header.startswith("# entries-in-buffer/entries-written: %d/%d "
                             % (sum(b["entries"]), sum(b["written"])))


def boot_fast(kb=256):
    """The function tracer at twice a busy machine's rate (a CPU is awake
    about half the time): a 256 KB buffer fills in about 20 ms, much less
    than the last GAP_WINDOW_NS the machine needs."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                 cmdline="fakefs.fn_rate=800000")
    wr(k, "buffer_size_kb", str(kb))
    wr(k, "current_tracer", "function")
    k.clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    traced = []
    act = k.trace_activity
    k.add_timer_hook(lambda t0, t1: traced.append(0 if act.backlog.window_from is not None
                                                  and t1 <= act.backlog.window_from else t1 - t0))
    return k, traced


def test_a_quiet_stretch_counts_like_a_skip():
    """Of a gap's last GAP_WINDOW_NS, what comes before the buffers' window
    is simulated quiet (the machine runs, nothing is recorded) and counted
    as skipped time is: the same counters as the gap observed every step,
    a full buffer, and far fewer calls made."""
    full, _ = boot_fast()
    observed_every_step(full, 1)
    gap, traced = boot_fast()
    gap.clock.advance(1_000_000_000)
    gap.timekeeper.run_until_now()
    a, b = counters(full), counters(gap)
    # a CPU calls functions while it is awake, and over 600 ms its share of
    # awake time moves 0.44-0.62 (seed 1); the skip is counted at its share
    # so far, the quiet steps as they were: gap/full per CPU, seeds 1-6,
    # 0.89 0.85, 1.18 1.31, 1.04 1.13, 0.94 1.04, 0.75 1.04, 0.90 0.88 (in all
    # 0.86-1.25; counted by time, not awake time: per CPU 0.58-1.52, in all 0.85-1.46)
    for x, y in zip(a["written"], b["written"]):
        assert close(x, y, 0.2), (a, b)
    for x, y in zip(a["entries"], b["entries"]):    # full, both (within two of its 64 pages)
        assert close(x, y, 0.03), (a, b)
    assert sum(traced) < GAP_WINDOW_NS * 3 // 4, sum(traced)     # (MARGIN: two buffer-fulls)


def test_without_overwrite_the_first_buffer_full_is_kept():
    settings = (("events/sched/enable", "1"), ("options/overwrite", "0"))
    full, _ = boot(*settings, kb=64)
    observed_every_step(full, 10)
    gap, simulated = boot(*settings, kb=64)
    gap.clock.advance(10_000_000_000)
    gap.timekeeper.run_until_now()
    a, b = counters(full), counters(gap)
    assert a["entries"] == b["entries"]
    # the gap's rate is measured over the ~0.4 s of its first buffer-full of a
    # bursty machine: full/gap in total, seeds 1-6, 1.11 0.92 0.93 1.04 1.12
    # 1.02 (session 24; the code before it: 0.99 0.98 1.04 0.95 1.11 1.00),
    # per CPU 0.81-1.21; the full runs' own totals agree within 1%
    assert close(sum(a["dropped"]), sum(b["dropped"]), 0.15), (a, b)
    assert all(close(x, y, 0.25) for x, y in zip(a["dropped"], b["dropped"])), (a, b)
    assert sum(simulated) < 4_000_000_000


def test_nothing_traced_simulates_the_last_window():
    k, simulated = boot()
    k.clock.advance(600_000_000_000)
    k.timekeeper.run_until_now()
    assert sum(simulated) == GAP_WINDOW_NS


def test_a_probe_that_can_still_act_is_simulated_in_full_until_it_did():
    # the buffer holds what came before the first kernel_clone(): the gap
    # must reach that call in full, and give the very same trace as a
    # kernel observed all along
    settings = (("events/sched/enable", "1"), ("set_ftrace_filter", "kernel_clone:traceoff"))
    full, _ = boot(*settings)
    observed_every_step(full, 5)
    gap, simulated = boot(*settings)
    gap.clock.advance(5_000_000_000)
    gap.timekeeper.run_until_now()
    assert rd(full, "tracing_on") == rd(gap, "tracing_on") == "0\n"
    assert rd(full, "trace") == rd(gap, "trace")
    assert sum(simulated) < 4_000_000_000          # once off for good, the rest is skipped


def test_probes_and_triggers_that_can_change_nothing_do_not_hold_a_gap():
    # the gap is caught up as without them
    enabled = ("events/sched/sched_switch/enable", "1")
    for acting in (("set_ftrace_filter", "schedule:traceon"),                        # on already
                   ("events/sched/sched_switch/trigger", "traceoff:0"),              # used up
                   ("events/sched/sched_waking/trigger", "enable_event:sched:sched_switch")):
        spent = []
        for settings in ((enabled,), (enabled, acting)):
            k, simulated = boot(*settings, kb=16)
            k.clock.advance(5_000_000_000)
            k.timekeeper.run_until_now()
            spent.append(sum(simulated))
        assert spent[0] < 2_000_000_000
        assert spent[1] == spent[0], (acting, spent)


def test_triggers_that_can_act_hold_the_whole_gap():
    for settings in ((("events/sched/sched_switch/trigger", "hist:keys=prev_pid"),),
                     (("events/sched/sched_switch/trigger", "snapshot"),),
                     (("events/sched/sched_switch/trigger", "enable_event:sched:sched_wakeup"),
                      ("events/sched/sched_waking/trigger", "disable_event:sched:sched_wakeup"))):
        k, simulated = boot(*settings)
        k.clock.advance(3_000_000_000)
        k.timekeeper.run_until_now()
        assert sum(simulated) == 3_000_000_000, settings


def test_counted_stacktraces_lose_the_skipped_hits():
    settings = (("events/sched/sched_switch/enable", "1"),
                ("events/sched/sched_switch/trigger", "stacktrace:1000000"),
                ("set_ftrace_filter", "schedule:stacktrace:1000000"))
    full, _ = boot(*settings)
    observed_every_step(full, 10)
    gap, simulated = boot(*settings)
    gap.clock.advance(10_000_000_000)
    gap.timekeeper.run_until_now()
    assert sum(simulated) < 4_000_000_000

    def left(k):
        trig = rd(k, "events/sched/sched_switch/trigger")
        probe = rd(k, "set_ftrace_filter")
        return (1_000_000 - int(trig.split("count=")[1].split()[0]),
                1_000_000 - int(probe.split("count=")[1].split()[0]))

    a, b = left(full), left(gap)
    assert a[0] > 10_000 and a[1] > 10_000, a
    # full/gap, seeds 1 and 3: triggers 0.98 0.97, probes 1.07 1.02 (before
    # session 24: 1.01 1.00, 0.97 1.04)
    assert close(a[0], b[0], 0.05) and close(a[1], b[1], 0.1), (a, b)


def test_short_waits_are_simulated_in_full():
    k, simulated = boot()
    k.clock.advance(1_500_000_000)                 # nothing traced: shorter than GAP_NS
    k.timekeeper.run_until_now()
    assert sum(simulated) == 1_500_000_000
    k, simulated = boot(*EVERYTHING)
    k.clock.advance(250_000_000)                   # traced: shorter than TRACED_GAP_NS
    k.timekeeper.run_until_now()
    assert sum(simulated) == 250_000_000


def test_while_tracing_a_second_is_a_gap():
    k, simulated = boot(*EVERYTHING, kb=64)      # a buffer refilled in well under a second
    k.clock.advance(1_900_000_000)
    k.timekeeper.run_until_now()
    assert sum(simulated) < 1_000_000_000


def test_a_minute_unobserved_costs_what_ten_seconds_do():
    """Nothing caps what a gap simulates but what can be seen: a minute
    unobserved is measured, skipped and refilled like ten seconds (the
    probe at its start and the window at its end; it once replayed the
    last 30 s in full)."""
    spent = {}
    for gap_s in (10, 60):
        k, simulated = boot(*EVERYTHING, kb=64)
        k.clock.advance(gap_s * 1_000_000_000)
        k.timekeeper.run_until_now()
        spent[gap_s] = sum(simulated)
        cpus = k.tracing.global_trace.buffer.cpus
        assert sum(cb.overrun for cb in cpus) > 0             # the skipped time is counted
    assert spent[60] < 1_000_000_000, spent
    assert close(spent[10], spent[60], 0.5), spent


def test_a_default_buffer_is_full_after_a_gap_at_the_function_tracers_rate():
    """What a kernel shows after 10 s of the function tracer (500,000 calls
    a second per CPU while it is awake, about half the time here): every
    CPU's default buffer full (the gap's budget covers the probe and the
    window's margin)."""
    k, _ = boot(("current_tracer", "function"), kb=1408)
    k.clock.advance(10_000_000_000)
    k.timekeeper.run_until_now()
    for cb in k.tracing.global_trace.buffer.cpus:
        assert len(cb.pages) == cb.nr_pages
        assert cb.bytes() > 0.97 * cb.size_bytes, (cb.bytes(), cb.size_bytes)
        assert cb.overrun > 1_500_000


def test_a_big_buffer_is_full_after_a_gap():
    """A gap has no entries' budget: a buffer that holds seconds of the
    function tracer is full after ten seconds nobody saw, as on a kernel
    (it once kept the probe's entries, a hole, then the last 110,000 a
    CPU), and only what no reader can see is skipped."""
    k, simulated = boot(("current_tracer", "function"), kb=16384)
    k.clock.advance(10_000_000_000)
    k.timekeeper.run_until_now()
    cpus = k.tracing.global_trace.buffer.cpus
    for cb in cpus:
        assert cb.bytes() > 0.97 * cb.size_bytes, (cb.bytes(), cb.size_bytes)
        assert cb.overrun > 0
        assert cb.entries > 500_000, cb.entries
        ts = [e[0] for e in cb.events()]
        hole = max(b - a for a, b in zip(ts, ts[1:]))
        assert hole < 1_000_000_000, hole               # what it holds is one stretch
    assert sum(simulated) < 8_000_000_000       # (the rest no reader can see)


def test_the_counts_a_skip_uses_are_those_of_commands_counting_every_hit():
    from fakefs.kernel.trace.trace_events_trigger import hit_counted_triggers
    k, _ = boot(("events/sched/sched_switch/trigger", "stacktrace:1000000"),
                ("events/sched/sched_switch/trigger", "traceoff:1000000"),
                ("events/sched/sched_waking/trigger", "enable_event:sched:sched_switch:1000000"),
                ("events/sched/sched_wakeup/trigger", "snapshot:1000000"))
    assert sorted(d.cmd.name for d in hit_counted_triggers(k.tracing.global_trace)) == \
        ["snapshot", "stacktrace"]


def _shifted_back(text, d_ns):
    """The trace's lines with every absolute time ``d_ns`` earlier: the
    timestamp, an hrtimer's expiry and clock (ns), a timer's expiry and
    clock (jiffies).  A timer's wheel bucket (``bucket_expiry``, ``idx``)
    depends on where its expiry falls on the wheel's coarser levels, not
    only on its distance: left out."""
    from fakefs.kernel.timer import HZ
    jiffy = 10**9 // HZ
    ts = re.compile(r"(\d+)\.(\d{6}):")
    field = re.compile(r"\b(expires|softexpires|now|baseclk)=(\d+)")
    out = []
    for ln in text.splitlines():
        if ln.startswith("#"):
            continue
        m = ts.search(ln)
        us = int(m.group(1)) * 10**6 + int(m.group(2)) - d_ns // 1000
        ln = ln[:m.start()] + "%d.%06d:" % divmod(us, 10**6) + ln[m.end():]
        unit = jiffy if " timer_" in ln else 1
        ln = field.sub(lambda f: "%s=%d" % (f.group(1), int(f.group(2)) - d_ns // unit), ln)
        out.append(re.sub(r" (bucket_expiry|idx)=\d+", "", ln))
    return out


def test_a_gaps_window_is_the_same_whatever_the_gaps_length_shifted():
    """What a gap shows (its window, at the end) does not depend on how
    long the skipped part was: a gap longer by a whole number of jiffies
    gives the same entries, every absolute time in them later by as much.
    Only the counts of what the skipped part wrote differ: what a reader
    sees of a gap depends on where it ends, not on when nobody looked
    from."""
    settings = (("current_tracer", "function"), ("events/sched/enable", "1"),
                ("events/timer/enable", "1"), ("options/stacktrace", "1"),
                ("options/stackmap", "1"))
    from fakefs.kernel.timer import HZ
    d = 37 * 10**9 // HZ
    a, _ = boot(*settings)
    b, _ = boot(*settings)
    a.clock.advance(3_000_000_000)
    b.clock.advance(3_000_000_000 + d)
    ta, tb = rd(a, "trace"), rd(b, "trace")
    la, lb = _shifted_back(ta, 0), _shifted_back(tb, d)
    assert len(la) > 5000 and any(" hrtimer_start:" in ln for ln in la) \
        and any(" timer_start:" in ln for ln in la)
    assert la == lb
    # the same stacks under the same ids; their counts take the skipped
    # part's uses too
    no_refs = re.compile(r"\[ref \d+,")
    assert no_refs.sub("[", rd(a, "stack_map")) == no_refs.sub("[", rd(b, "stack_map"))
    assert counters(a)["written"] != counters(b)["written"]
