"""The trace-events sample module (samples_trace_events.py): its events'
formats and lines, their coming and going with the module, its threads'
loops, tracepoint probes on them, gaps."""

import os

import pytest

from fakefs.kernel.samples_trace_events import layout
from fakefs.sim.clock import ManualClock
from fakefs.sim import boot
from kfiles import rd, wr

CTL = ".fakefs/modules"
APPEND = os.O_WRONLY | os.O_APPEND


@pytest.fixture
def k():
    clock = ManualClock()
    kern = boot(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False)
    clock.advance(10_000_000)
    kern.test_clock = clock
    return kern


def ctl(k, cmd):
    wr(k, CTL, cmd + "\n", os.O_WRONLY, base="")


def lines(k):
    return [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]


def run(k, seconds, step_ms=100):
    for _ in range(int(seconds * 1000 // step_ms)):
        k.test_clock.advance(step_ms * 1_000_000)
        rd(k, "per_cpu/cpu0/stats")


def test_layout_aligns_as_the_struct():
    fields, size = layout((("char[10]", "foo", 10, 1, 0, 10), ("int", "bar", 4, 4, 1, 0),
                           ("__data_loc int[]", "list", 4, 4, 1, 0)))
    assert [(f.offset, f.size) for f in fields] == [(8, 10), (20, 4), (24, 4)]
    assert size == 28


def test_formats(k):
    before = rd(k, "available_events")
    ctl(k, "load trace-events-sample")
    events = rd(k, "available_events")
    new = [ln for ln in events.splitlines() if ln.startswith("sample-trace:")]
    assert len(new) == 8 and set(events.splitlines()) - set(new) == set(before.splitlines())
    fmt = rd(k, "events/sample-trace/foo_bar/format")
    assert "\tfield:char foo[10];\toffset:8;\tsize:10;\tsigned:0;\n" in fmt
    assert "\tfield:__data_loc cpumask_t cpum;\toffset:36;\tsize:4;\tsigned:0;\n" in fmt
    assert "\tfield:__data_loc char[] lstr;\toffset:44;\tsize:4;\tsigned:0;\n" in fmt
    assert '__print_symbolic(REC->bar, { 0, "zero" }, { 2, "TWO" }, { 4, "FOUR" }' in fmt
    rel = rd(k, "events/sample-trace/foo_rel_loc/format")
    assert "\tfield:__rel_loc char foo[];\toffset:8;\tsize:4;\tsigned:0;\n" in rel
    ids = [int(rd(k, "events/sample-trace/%s/id" % n)) for n in ("foo_bar", "foo_rel_loc")]
    assert ids[1] == ids[0] + 7
    ctl(k, "delete trace-events-sample")
    assert rd(k, "available_events") == before
    assert "sample-trace:" not in rd(k, "set_event")


def test_the_loop_fires_each_second(k):
    wr(k, "events/sched/sched_switch/enable", "1")      # hits of known events before
    run(k, 0.2)
    wr(k, "events/sched/sched_switch/enable", "0")
    wr(k, "trace", "")
    ctl(k, "load trace-events-sample")
    wr(k, "events/sample-trace/enable", "1")
    run(k, 3.2)
    out = lines(k)
    bar = [ln for ln in out if " foo_bar: " in ln]
    assert len(bar) == 3
    assert bar[0].endswith("foo_bar: foo hello 0 zero  {} {} Mother Goose  "
                           "(00000000,00000003) (00000000,00000003) iter=0 [8] 0-1")
    assert bar[2].endswith("foo_bar: foo hello 2 TWO BIT2 {0x1,0x2} {0x1,0x2} Gandalf h "
                           "(00000000,00000003) (00000000,00000003) iter=2 [8] 0-1")
    stamps = [float(ln.split(": ")[0].split()[-1]) for ln in bar]
    assert all(1.0 <= b - a <= 1.1 for a, b in zip(stamps, stamps[1:]))
    assert all(ln.split()[0].startswith("event-sample-") for ln in out)
    cond = [ln for ln in out if "foo_bar_with_cond:" in ln]
    assert len(cond) == 1 and cond[0].endswith("foo Some times print 0")        # bar % 10
    assert any(ln.endswith("foo_rel_loc: foo_rel_loc Hello __rel_loc, 1, 00000000,deadbeef, "
                           "00000000,00000003") for ln in out)
    assert any(ln.endswith("foo_with_template_print: bar I have to be different 1") for ln in out)
    fn = [ln for ln in out if "foo_bar_with_fn:" in ln]          # its thread, while enabled
    assert fn and all(ln.split()[0].startswith("event-sample-fn-") for ln in fn)
    ctl(k, "delete trace-events-sample")
    wr(k, "trace", "")
    run(k, 1.5)
    assert lines(k) == []


def test_the_conditions_and_the_strings_of_a_loop(k):
    ctl(k, "load trace-events-sample")
    sample = next(w for w in k.gap_watchers if type(w).__name__ == "TraceEventsSample")
    hits = []
    sample._hit = lambda th, name, t, args: hits.append((name, args)) or t + 1
    for cnt in range(41):
        sample.thread.cnt = cnt
        sample._loop(sample.thread, 0)
    by = {}
    for name, args in hits:
        by.setdefault(name, []).append(args)
    assert [a[1] for a in by["foo_bar_with_cond"]] == [0, 10, 20, 30, 40]
    assert [a[1] for a in by["foo_with_template_cond"]] == [0, 8, 16, 24, 32, 40]
    assert len(by["foo_bar"]) == len(by["foo_rel_loc"]) == 41
    foo, bar, lst, s, cpus, cpum, vstr, lstr = by["foo_bar"][13]
    assert (foo, bar, lst, s, vstr, lstr) == ("hello", 13, bytes([1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]),
                                             "Frodo", "iter=13", "hello")
    assert by["foo_bar"][7][7] == "hel"                 # bar / 2 characters of "hello"


def test_a_tracepoint_probe_waits_for_the_module_and_survives_a_gap(k):
    wr(k, "dynamic_events", "t:myevent1 foo_bar\n", APPEND)
    wr(k, "dynamic_events", "t:myevent2 foo_bar_with_cond\n", APPEND)
    wr(k, "events/tracepoints/enable", "1")
    ctl(k, "load trace-events-sample")
    k.test_clock.advance(2_500_000_000)                 # nobody looks: a gap
    out = lines(k)
    assert [ln.split(": ")[1] for ln in out] == ["myevent1", "myevent2", "myevent1"]
    assert "(__probestub_foo_bar+0x4/0x30 [trace_events_sample])" in out[0]
    ctl(k, "delete trace-events-sample")
