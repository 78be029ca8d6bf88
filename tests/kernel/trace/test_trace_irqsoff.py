"""The irqs-off / preempt-off latency tracers (trace_irqsoff.py) measuring
the sections of the preemptirq_delay_test sample module (samples.py): the
max trace, its header, the options they keep, tracing_thresh, and the
module's parameters."""

import errno
import os
import re

import pytest

from fakefs import sim
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, rd, wr

CTL = ".fakefs/modules"
MOD = "preemptirq_delay_test"


def boot(**overrides):
    clock = ManualClock()
    k = sim.boot(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False,
                 config_overrides=overrides or None)
    clock.advance(10_000_000)
    return k


@pytest.fixture
def k():
    return boot()


def load(k, params="", keep=False):
    """modprobe MOD params; rmmod MOD (unless ``keep``)."""
    wr(k, CTL, ("load %s %s\n" % (MOD, params)), os.O_WRONLY, base="")
    if not keep:
        wr(k, CTL, "delete %s\n" % MOD, os.O_WRONLY, base="")


def header(text):
    return re.search(r"# latency: (\d+) us, #(\d+)/(\d+), CPU#(\d+) \| "
                     r"\(M:desktop VP:0, KP:0, SP:0 HP:0 #P:2\)\n", text)


def test_the_tracers_and_their_kconfig_switches(k):
    assert rd(k, "available_tracers") == \
        "function_graph wakeup_dl wakeup_rt wakeup preemptirqsoff preemptoff irqsoff function nop\n"
    assert MOD in rd(k, CTL, base="").split()
    assert boot(IRQSOFF_TRACER=False).tracing.global_trace.tracers.keys() == \
        {"preemptoff", "wakeup", "wakeup_rt", "wakeup_dl", "function_graph", "function", "nop"}
    none = boot(IRQSOFF_TRACER=False, PREEMPT_TRACER=False, SCHED_TRACER=False)
    assert rd(none, "available_tracers") == "function_graph function nop\n"
    assert MOD not in rd(none, CTL, base="").split()
    # the tracers select the snapshot: it cannot be switched off under them
    assert boot(TRACER_SNAPSHOT=False).config.enabled("TRACER_SNAPSHOT")


def test_a_preempt_off_section_is_the_max_trace(k):
    wr(k, "current_tracer", "preemptoff")
    assert "latency-format" in rd(k, "trace_options").split()
    load(k, "test_mode=preempt delay=500", keep=True)
    text = rd(k, "trace")
    assert text.startswith("# tracer: preemptoff\n#\n# preemptoff latency trace v1.1.5 on 6.12.0-stackmap\n")
    m = header(text)
    lat = int(m.group(1))
    assert 500 <= lat < 505
    assert int(rd(k, "tracing_max_latency")) == lat
    assert re.search(r"#    \| task: preempt_test-\d+ \(uid:0 nice:0 policy:0 rt_prio:0\)\n", text)
    assert "#  => started at: preemptirq_delay_run\n#  => ended at:   preemptirq_delay_run\n" in text
    body = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert re.match(r"preempt_-\d+ +\d\.\.\.1\.    0us : preemptirqtest_0 <-preemptirq_delay_run$", body[0])
    calls = [ln for ln in body if "kthread_should_stop <-preemptirqtest_0" in ln]
    assert len(calls) > 3000                      # every turn of the busy loop (function-trace)
    assert re.match(r"preempt_-\d+ +\d\.\.\.1\. +5\d\dus : <stack trace>$", body[-6])
    assert [ln.strip() for ln in body[-5:]] == ["=> preemptirqtest_0", "=> preemptirq_delay_run",
                                               "=> kthread", "=> ret_from_fork", "=> ret_from_fork_asm"]
    assert int(m.group(2)) == len(body) - 5        # the stack is one entry
    # unloaded, the module's text has no names (ftrace's map of them goes too)
    wr(k, CTL, "delete %s\n" % MOD, os.O_WRONLY, base="")
    assert re.search(r" => 0xffffffffc[0-9a-f]{7}\n => kthread\n", rd(k, "trace"))


def test_a_long_section_keeps_only_what_the_buffer_holds(k):
    wr(k, "current_tracer", "irqsoff")
    load(k, "test_mode=irq delay=500000")
    text = rd(k, "trace")
    m = header(text)
    assert 500000 <= int(m.group(1)) < 500010
    entries, total = int(m.group(2)), int(m.group(3))
    assert total > 3_000_000 and entries < 60_000     # overwritten: the start went too
    last = [ln for ln in text.splitlines() if not ln.startswith(("#", " =>"))][-1]
    assert re.search(r"\dd\.\.\.\. 5\d{5}us : <stack trace>$", last)


def test_each_tracer_measures_its_own_kind(k):
    wr(k, "current_tracer", "irqsoff")
    load(k, "test_mode=preempt delay=300")
    assert rd(k, "tracing_max_latency") == "0\n"
    assert "latency: 0 us" not in rd(k, "trace")          # an empty max trace: no header at all
    wr(k, "current_tracer", "preemptirqsoff")
    load(k, "test_mode=alternate delay=200 burst_size=3", keep=True)
    text = rd(k, "trace")
    assert "ended at:   preemptirq_delay_run" in text
    assert "| task: alternate_test-" in text
    assert 200 <= int(rd(k, "tracing_max_latency")) < 205
    # each of the three sections ran its own test function
    assert re.search(r"\n alternat-\d+ +\d[d.]\.\.[1.]\. +0us : preemptirqtest_[012] <-", text) \
        or re.search(r"\nalternat-\d+ +\d[d.]\.\.[1.]\. +\d+us : preemptirqtest_[012] <-", text)


def test_function_trace_off_leaves_the_ends_and_the_stack(k):
    wr(k, "current_tracer", "preemptoff")
    wr(k, "trace_options", "nofunction-trace")
    load(k, "test_mode=preempt delay=100")
    text = rd(k, "trace")
    assert header(text).group(2, 3) == ("3", "3")
    assert "kthread_should_stop" not in text


def test_only_a_longer_section_replaces_the_max_unless_a_threshold_is_set(k):
    wr(k, "current_tracer", "preemptoff")
    load(k, "test_mode=preempt delay=400")
    load(k, "test_mode=preempt delay=100")
    assert 400 <= int(rd(k, "tracing_max_latency")) < 405
    wr(k, "tracing_thresh", "50")
    load(k, "test_mode=preempt delay=100")
    assert 100 <= int(rd(k, "tracing_max_latency")) < 105     # every section past the threshold
    load(k, "test_mode=preempt delay=20")
    assert 100 <= int(rd(k, "tracing_max_latency")) < 105
    wr(k, "tracing_max_latency", "0")
    wr(k, "tracing_thresh", "0")
    load(k, "test_mode=preempt delay=30")
    assert 30 <= int(rd(k, "tracing_max_latency")) < 35


def test_options_kept_while_current_and_given_back(k):
    wr(k, "trace_options", "nooverwrite")
    wr(k, "current_tracer", "irqsoff")
    opts = rd(k, "trace_options").split()
    assert "overwrite" in opts and "latency-format" in opts
    assert errno_of(wr, k, "trace_options", "nooverwrite") == errno.EINVAL
    assert errno_of(wr, k, "options/overwrite", "0") == errno.EINVAL
    k.tracing.instance_mkdir("foo")
    assert errno_of(wr, k, "instances/foo/current_tracer", "preemptoff") == errno.EBUSY
    wr(k, "current_tracer", "nop")
    opts = rd(k, "trace_options").split()
    assert "nooverwrite" in opts and "nolatency-format" in opts
    wr(k, "instances/foo/current_tracer", "preemptoff")
    assert rd(k, "instances/foo/current_tracer") == "preemptoff\n"


def test_the_module_parameters(k):
    wr(k, "current_tracer", "preemptoff")
    assert errno_of(load, k, "delay=abc") == errno.EINVAL
    assert "preemptirq_delay_test: `abc' invalid for parameter `delay'" in k.log.dmesg()
    assert errno_of(load, k, "test_mode=preemptpreempt") == errno.ENOSPC
    assert rd(k, "modules", base="proc/") == ""
    load(k, "test_mode=nothing delay=100 colour=blue")
    assert "preemptirq_delay_test: unknown parameter 'colour' ignored" in k.log.dmesg()
    assert rd(k, "tracing_max_latency") == "0\n"             # an unknown mode runs no test
    load(k, "test_mode=preempt delay=100 cpu_affinity=1")
    assert header(rd(k, "trace")).group(4) == "1"


def test_truncating_trace_clears_the_max_trace(k):
    wr(k, "current_tracer", "preemptoff")
    load(k, "test_mode=preempt delay=100")
    assert "# latency: " in rd(k, "trace")
    wr(k, "trace", "")                                       # echo > trace
    assert rd(k, "trace") == "# tracer: preemptoff\n#\n"
    assert 100 <= int(rd(k, "tracing_max_latency")) < 105     # the value stays
