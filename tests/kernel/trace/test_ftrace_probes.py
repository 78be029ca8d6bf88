"""Function probes (ftrace_probes.py): traceon/traceoff/stacktrace and
enable_event/disable_event, their listing, errors, counts and effects."""

import errno
import re

import ftrace_helpers
from ftrace_helpers import APPEND, MS, entries, reset_ftrace_filter
from kfiles import errno_of, rd, wr


booted, k = ftrace_helpers.booted, ftrace_helpers.k      # the shared kernel


err = errno_of


# --------------------------------------------------------------- commands
def test_probe_listing_round_trips(k):
    for cmd in ("schedule:traceoff", "schedule:traceon:5", "kernel_clone:stacktrace",
                "sched_tick:stacktrace:2", "schedule:enable_event:sched:sched_switch",
                "schedule:disable_event:sched:sched_waking:3", "non_exist_func:mod:non_exist_mod"):
        wr(k, "set_ftrace_filter", cmd + "\n", APPEND)
    lines = set(rd(k, "set_ftrace_filter").splitlines())
    assert {"schedule:traceoff:unlimited", "schedule:traceon:count=5",
            "kernel_clone:stacktrace:unlimited", "sched_tick:stacktrace:count=2",
            "schedule:enable_event:sched:sched_switch:unlimited",
            "schedule:disable_event:sched:sched_waking:count=3",
            "non_exist_func:mod:non_exist_mod"} == lines
    assert rd(k, "events/sched/sched_switch/enable") == "0*\n"
    assert rd(k, "events/sched/sched_waking/enable") == "0*\n"
    reset_ftrace_filter(k)
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"
    assert k.tracing.global_trace.ftrace_ops is None
    assert rd(k, "events/sched/sched_switch/enable") == "0\n"


def test_probe_errors(k):
    wr(k, "set_ftrace_filter", "schedule:traceoff\n")
    # the same functions again: nothing new
    assert err(wr, k, "set_ftrace_filter", "schedule:traceoff\n") == errno.EINVAL
    # with a count it is another probe
    wr(k, "set_ftrace_filter", "schedule:traceoff:3\n")
    assert err(wr, k, "set_ftrace_filter", "!schedule:traceon\n") == errno.ENODEV
    assert err(wr, k, "set_ftrace_filter", "!kernel_clone:traceoff\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "schedule:traceoff:x\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "nosuchfn_abc:traceoff\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "schedule:dumpall\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "schedule:enable_event:sched:nope\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "schedule:enable_event:sched\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_notrace", "schedule:traceoff\n") == errno.EINVAL
    wr(k, "set_ftrace_filter", "!schedule:traceoff:0\n")        # the count one
    assert rd(k, "set_ftrace_filter").splitlines()[1:] == ["schedule:traceoff:unlimited"]
    wr(k, "set_ftrace_filter", "*lock*:traceoff\n")
    n = len(rd(k, "set_ftrace_filter").splitlines())
    wr(k, "set_ftrace_filter", "!*try*lock:traceoff\n", APPEND)
    left = rd(k, "set_ftrace_filter").splitlines()[1:]
    assert len(left) < n - 1 and not any(re.search("try.*lock$", ln.split(":")[0]) for ln in left)
    wr(k, "set_ftrace_filter", "!*:traceoff\n", APPEND)
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"


# --------------------------------------------------------------- tracing with probes
def test_traceoff_traceon_and_counts(k, booted):
    clock = booted[1]
    wr(k, "events/sched/enable", "1\n")
    clock.advance(5 * MS)
    assert entries(k)
    wr(k, "set_ftrace_filter", "schedule:traceoff\n")
    clock.advance(3 * MS)
    assert rd(k, "tracing_on") == "0\n"
    n = len(entries(k))
    clock.advance(100 * MS)
    assert len(entries(k)) == n
    wr(k, "set_ftrace_filter", "!schedule:traceoff\n", APPEND)
    wr(k, "trace", "")
    wr(k, "set_ftrace_filter", "schedule:traceon\n")
    clock.advance(3 * MS)
    assert rd(k, "tracing_on") == "1\n" and entries(k)
    wr(k, "set_ftrace_filter", "!schedule:traceon\n", APPEND)
    # at most 3 times, counting only when it did something
    wr(k, "set_ftrace_filter", "schedule:traceoff:3\n")
    for left in (2, 1, 0):
        clock.advance(50 * MS)
        assert rd(k, "tracing_on") == "0\n"
        assert rd(k, "set_ftrace_filter").endswith("schedule:traceoff:count=%d\n" % left)
        wr(k, "tracing_on", "1\n")
    clock.advance(50 * MS)
    assert rd(k, "tracing_on") == "1\n"
    wr(k, "set_ftrace_filter", "!schedule:traceoff:0\n")
    assert k.tracing.global_trace.ftrace_ops is None


def test_stacktrace_probe_with_the_nop_tracer(k, booted):
    clock = booted[1]
    wr(k, "trace", "")
    wr(k, "set_ftrace_filter", "kernel_clone:stacktrace\n", APPEND)
    assert "kernel_clone:stacktrace:unlimited\n" in rd(k, "set_ftrace_filter")
    clock.advance(1000 * MS)
    text = rd(k, "trace")
    assert "<stack trace>" in text and "\n => kernel_clone\n" in text
    # a count stops it
    wr(k, "set_ftrace_filter", "!kernel_clone:stacktrace\n")
    wr(k, "set_ftrace_filter", "kernel_clone:stacktrace:1\n")
    wr(k, "trace", "")
    clock.advance(1000 * MS)
    assert rd(k, "trace").count("<stack trace>") == 1
    assert "kernel_clone:stacktrace:count=0\n" in rd(k, "set_ftrace_filter")


def _log_since(k, seq):
    k.timekeeper.run_until_now()                  # as a /dev/kmsg read does
    return [r for r in k.log.records if r.seq >= seq]


LAT_LINE = re.compile(r"^[ -~]{8}-\d+ +\s+(\d+)[dDbX.][Nnp.][ZzHhs.][0-9a-f.][0-9a-f.] +\d+us : \S")


def test_dump_probe_prints_the_buffer_into_the_log_once(k, booted):
    clock = booted[1]
    wr(k, "trace", "")
    wr(k, "events/sched/sched_switch/enable", "1\n")
    clock.advance(20 * MS)
    assert entries(k)
    seq = k.log.next_seq
    # whatever count is written, it dumps once
    wr(k, "set_ftrace_filter", "schedule:dump:5\n", APPEND)
    assert "schedule:dump:count=1\n" in rd(k, "set_ftrace_filter")
    clock.advance(20 * MS)
    assert rd(k, "tracing_on") == "0\n"
    assert "schedule:dump:count=0\n" in rd(k, "set_ftrace_filter")
    assert entries(k) == []                       # consumed
    recs = _log_since(k, seq)
    texts = [r.text for r in recs]
    assert texts[0] == "Dumping ftrace buffer:" and texts[1] == "-" * 33 and texts[-1] == "-" * 33
    body = texts[2:-1]
    assert body and all(LAT_LINE.match(t) for t in body), body[:3]
    assert all("sched_switch: prev_comm=" in t for t in body)
    assert {r.level for r in recs} == {0}          # KERN_TRACE is KERN_EMERG
    # later calls do nothing; removal works as ftracetest's reset does
    wr(k, "tracing_on", "1\n")
    seq = k.log.next_seq
    clock.advance(20 * MS)
    assert _log_since(k, seq) == [] and entries(k)
    wr(k, "set_ftrace_filter", "!schedule:dump:0\n", APPEND)
    assert "dump" not in rd(k, "set_ftrace_filter")
    wr(k, "events/sched/sched_switch/enable", "0\n")


def test_dump_of_an_empty_buffer_and_cpudump_takes_one_cpu(k, booted):
    clock = booted[1]
    wr(k, "trace", "")
    seq = k.log.next_seq
    wr(k, "set_ftrace_filter", "schedule:dump\n", APPEND)
    clock.advance(20 * MS)
    assert [r.text for r in _log_since(k, seq)] == ["Dumping ftrace buffer:", "   (ftrace buffer empty)"]
    wr(k, "set_ftrace_filter", "!schedule:dump\n", APPEND)
    wr(k, "tracing_on", "1\n")
    wr(k, "events/sched/sched_switch/enable", "1\n")
    clock.advance(20 * MS)
    both = {int(ln.split("[", 1)[1][:3]) for ln in entries(k)}
    assert both == {0, 1}
    seq = k.log.next_seq
    wr(k, "set_ftrace_filter", "schedule:cpudump\n", APPEND)
    clock.advance(20 * MS)
    dumped = {int(LAT_LINE.match(r.text).group(1)) for r in _log_since(k, seq)[2:-1]}
    assert len(dumped) == 1
    left = {int(ln.split("[", 1)[1][:3]) for ln in entries(k)}
    assert left == both - dumped
    wr(k, "set_ftrace_filter", "!schedule:cpudump\n", APPEND)
    wr(k, "events/sched/sched_switch/enable", "0\n")
    wr(k, "tracing_on", "1\n")


def test_event_probes_soft_mode(k, booted):
    clock = booted[1]
    ev = "events/sched/sched_switch/enable"
    wr(k, ev, "0\n")
    wr(k, "set_ftrace_filter", "schedule:enable_event:sched:sched_switch\n")
    assert rd(k, ev) == "0*\n"
    clock.advance(20 * MS)
    assert rd(k, ev) == "1*\n"
    wr(k, ev, "0\n")                       # soft mode: only soft-disabled
    assert rd(k, ev) == "0*\n"
    clock.advance(20 * MS)
    assert rd(k, ev) == "1*\n"
    assert "sched_switch:" in rd(k, "trace")
    reset_ftrace_filter(k)
    assert rd(k, ev) == "1\n"              # left as the probe left it
    # disable_event, three times at most
    wr(k, "set_ftrace_filter", "schedule:disable_event:sched:sched_switch:3\n")
    assert rd(k, ev) == "1*\n"
    for _ in range(3):
        clock.advance(20 * MS)
        assert rd(k, ev) == "0*\n"
        wr(k, ev, "1\n")
        assert rd(k, ev) == "1*\n"
    clock.advance(20 * MS)
    assert rd(k, ev) == "1*\n"
    assert "schedule:disable_event:sched:sched_switch:count=0" in rd(k, "set_ftrace_filter")
    reset_ftrace_filter(k)
    assert rd(k, ev) == "1\n"
    wr(k, ev, "0\n")
