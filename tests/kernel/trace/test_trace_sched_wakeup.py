"""The wakeup latency tracers (trace_sched_wakeup.py) on the simulated
machine's wakeups and switches: which task they follow (6.12's rules for
wakeup, wakeup_rt, wakeup_dl), the max trace and its header, the
threshold, the busy flag, and the scheduler putting a real-time wakee first."""

import errno
import re

import pytest

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.sim import host
from kfiles import errno_of, rd, wr


def boot():
    clock = ManualClock()
    k = sim.boot(seed=4, nr_cpus=2, clock=clock, host_kallsyms=False)
    clock.advance(50_000_000)
    rd(k, "trace")
    return k, clock


def make_rt(k, comm="kworker/0:0", rt_priority=5):
    """The task as ``chrt -f 5`` leaves it."""
    t = next(t for t in k.sched.tasks.values() if t.comm == comm)
    t.policy, t.rt_priority, t.prio = 1, rt_priority, 99 - rt_priority
    return t


@pytest.fixture
def kc():
    return boot()


def body(text):
    return [ln for ln in text.splitlines() if not ln.startswith(("#", " =>"))]


def test_wakeup_rt_follows_a_real_time_task_from_its_wakeup_to_its_switch(kc):
    k, clock = kc
    t = make_rt(k)
    wr(k, "current_tracer", "wakeup_rt")
    clock.advance(1_000_000_000)
    text = rd(k, "trace")
    assert text.startswith("# tracer: wakeup_rt\n#\n# wakeup_rt latency trace v1.1.5 on 6.12.0-stackmap\n")
    m = re.search(r"# latency: (\d+) us, #(\d+)/(\d+), CPU#(\d) \|", text)
    assert int(m.group(1)) == int(rd(k, "tracing_max_latency"))
    assert 0 < int(m.group(1)) < 100                     # it preempts: a real-time task runs first
    assert "#    | task: kworker/0:0-%d (uid:0 nice:0 policy:1 rt_prio:5)\n" % t.pid in text
    lines = body(text)
    wake = re.compile(r"^ *\S+-\d+ +\d\S{5} +0us : +\d+:\d+:R   \+ \[(\d{3})\] +%d: 94:R kworker/0:0$" % t.pid)
    assert wake.match(lines[0]), lines[0]
    assert lines[1].endswith("<stack trace>") and "ttwu_do_activate <-" in lines[2]
    assert re.search(r":R ==> \[\d{3}\] +%d: 94:R kworker/0:0$" % t.pid, lines[-2])
    assert lines[-1].endswith(": <stack trace>") and "__schedule <-" in lines[-3]
    assert int(m.group(2)) == len(lines)
    # the same in the raw output
    wr(k, "trace_options", "raw")
    raw = rd(k, "trace").splitlines()
    assert any(re.match(r"\d+ \d+ \d+ \d+ 120 \+ \d+ %d 94 R$" % t.pid, ln) for ln in raw)
    assert any(re.match(r"\d+ \d+ \d+ \d+ 120 [RSDI] \d+ %d 94 R$" % t.pid, ln) for ln in raw)


def test_without_a_real_time_task_wakeup_rt_records_nothing(kc):
    k, clock = kc
    wr(k, "current_tracer", "wakeup_rt")
    clock.advance(300_000_000)
    assert rd(k, "trace") == "# tracer: wakeup_rt\n#\n"
    assert rd(k, "tracing_max_latency") == "0\n"
    wr(k, "current_tracer", "wakeup_dl")             # no deadline task on this machine
    make_rt(k)
    clock.advance(300_000_000)
    assert rd(k, "tracing_max_latency") == "0\n"


def test_wakeup_takes_a_task_above_its_waker_and_a_threshold_filters(kc):
    k, clock = kc
    make_rt(k)
    wr(k, "current_tracer", "wakeup")
    clock.advance(500_000_000)
    assert "policy:1 rt_prio:5" in rd(k, "trace")
    wr(k, "current_tracer", "nop")
    wr(k, "tracing_thresh", "1000000")               # 1 s: nothing reaches it
    wr(k, "current_tracer", "wakeup")
    clock.advance(500_000_000)
    assert rd(k, "tracing_max_latency") == "0\n"


class Waker:
    def __init__(self, pid, prio, comm="w"):
        self.pid, self.prio, self.comm = pid, prio, comm


def test_the_rules_of_which_wakeup_is_followed(kc):
    k, _clock = kc
    tr = k.tracing.global_trace
    wr(k, "current_tracer", "wakeup")
    w = tr.current
    w.probe_wakeup(0, 10, Waker(5, 120), 0, 0, ("a", 70001, 120, 0), ())
    assert w.wakeup_task is None                    # not above its waker
    w.probe_wakeup(0, 11, Waker(5, 120), 0, 0, ("b", 70002, 110, 1), ())
    assert w.wakeup_task.pid == 70002 and w.wakeup_cpu == 1
    w.probe_wakeup(0, 12, Waker(0, 120), 0, 0, ("c", 70003, 115, 0), ())
    assert w.wakeup_task.pid == 70002               # not above the one followed
    w.probe_wakeup(0, 13, Waker(0, 120), 0, 0, ("d", 70004, 50, 0), ())
    assert w.wakeup_task.pid == 70004
    w.probe_migrate(0, 14, None, 0, 0, ("d", 70004, 50, 0, 1), ())
    assert w.wakeup_current_cpu == 1 and w.wakeup_cpu == 0
    w.probe_wakeup(0, 15, Waker(0, 120), 0, 0, ("dl", 70005, -1, 0), ())
    assert w.wakeup_task.pid == 70005 and w.tracing_dl
    w.probe_wakeup(0, 16, Waker(0, 120), 0, 0, ("e", 70006, 1, 0), ())
    assert w.wakeup_task.pid == 70005               # a deadline task keeps it
    wr(k, "current_tracer", "wakeup_rt")
    w = tr.current
    w.probe_wakeup(0, 20, Waker(5, 120), 0, 0, ("b", 70002, 110, 1), ())
    assert w.wakeup_task is None                    # not a real-time task
    w.probe_wakeup(0, 21, Waker(5, 120), 0, 0, ("r", 70007, 98, 1), ())
    assert w.wakeup_task.pid == 70007
    wr(k, "current_tracer", "wakeup_dl")
    w = tr.current
    w.probe_wakeup(0, 30, Waker(5, 120), 0, 0, ("r", 70007, 0, 1), ())
    assert w.wakeup_task is None
    w.probe_wakeup(0, 31, Waker(5, 120), 0, 0, ("dl", 70005, -1, 1), ())
    assert w.wakeup_task.pid == 70005


def test_one_array_at_a_time_and_the_options_it_keeps(kc):
    k, _clock = kc
    wr(k, "current_tracer", "wakeup")
    k.tracing.instance_mkdir("foo")
    assert errno_of(wr, k, "instances/foo/current_tracer", "wakeup_rt") == errno.EBUSY
    wr(k, "instances/foo/current_tracer", "irqsoff")          # the other family's flag
    assert errno_of(wr, k, "options/overwrite", "0") == errno.EINVAL
    assert errno_of(wr, k, "snapshot", "1") == errno.EBUSY
    wr(k, "current_tracer", "nop")
    assert "nolatency-format" in rd(k, "trace_options").split()
    wr(k, "instances/foo/current_tracer", "nop")
    wr(k, "instances/foo/current_tracer", "wakeup_rt")


def test_a_real_process_run_with_chrt_is_a_real_time_task(monkeypatch):
    monkeypatch.setattr(host.os, "sched_getscheduler", lambda pid: host.os.SCHED_FIFO)
    monkeypatch.setattr(host.os, "sched_getparam", lambda pid: host.os.sched_param(5))
    assert host.host_rt_policy(1) == (host.os.SCHED_FIFO, 5)
    monkeypatch.setattr(host.os, "sched_getscheduler", lambda pid: host.os.SCHED_OTHER)
    assert host.host_rt_policy(1) is None


def test_chosen_at_boot_it_probes_the_machine():
    clock = ManualClock()
    k = sim.boot(seed=4, nr_cpus=2, clock=clock, host_kallsyms=False, cmdline="ftrace=wakeup_rt")
    assert rd(k, "current_tracer") == "wakeup_rt\n"
    make_rt(k)
    clock.advance(500_000_000)
    assert "policy:1 rt_prio:5" in rd(k, "trace")


def _calls(lines):
    """The function entries of a latency trace's body but the tracer's own
    (``ttwu_do_activate`` right after the wakeup, ``__schedule`` before the switch)."""
    fn = [ln for ln in lines if re.search(r" : \S+ <-\S+$", ln)]
    return fn[1:-1]


def test_function_trace_records_the_calls_on_the_woken_task_s_cpu(kc):
    k, clock = kc
    make_rt(k)
    wr(k, "current_tracer", "wakeup_rt")
    clock.advance(1_000_000_000)
    lines = body(rd(k, "trace"))
    calls = _calls(lines)
    assert calls, lines
    cpu = re.match(r"^ *\S+-\d+ +(\d)", lines[0]).group(1)       # the wakeup's CPU
    assert {re.match(r"^ *\S+-\d+ +(\d)", ln).group(1) for ln in calls} == {cpu}
    us = [int(re.search(r" (\d+)us : ", ln).group(1)) for ln in lines if "us : " in ln]
    assert us == sorted(us)
    # without the option only the tracer's own entries
    k2, clock2 = boot()
    make_rt(k2)
    wr(k2, "options/function-trace", "0")
    wr(k2, "current_tracer", "wakeup_rt")
    clock2.advance(1_000_000_000)
    assert not _calls(body(rd(k2, "trace")))
    # the array's filters apply
    assert any(" : enqueue_task <-" in ln for ln in calls)
    k3, clock3 = boot()
    make_rt(k3)
    wr(k3, "set_ftrace_notrace", "enqueue_task")
    wr(k3, "current_tracer", "wakeup_rt")
    clock3.advance(1_000_000_000)
    got = _calls(body(rd(k3, "trace")))
    assert got and not any(" : enqueue_task <-" in ln for ln in got), got


def test_calls_count_on_the_woken_task_s_cpu_only_while_it_waits(kc):
    k, _clock = kc
    wr(k, "current_tracer", "wakeup")
    t = k.tracing.global_trace.current
    assert t.takes_calls(k.tracing.global_trace)
    assert not t.calls_on(0) and not t.calls_on(1)          # nothing followed
    t.wakeup_task, t.wakeup_current_cpu = object(), 1
    assert t.calls_on(1) and not t.calls_on(0)
    wr(k, "options/function-trace", "0")
    assert not t.takes_calls(k.tracing.global_trace)
