"""The ftrace-direct sample modules (samples_ftrace_direct.py) and the
direct calls they register (trace/ftrace_direct.py, enabled_functions in
trace/ftrace_ops_list.py)."""

import os
import re

import pytest

from fakefs import sim
from fakefs.sim.clock import ManualClock
from kfiles import rd, wr

CTL = ".fakefs/modules"


@pytest.fixture
def k():
    clock = ManualClock()
    kern = sim.boot(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False)
    clock.advance(10_000_000)
    kern.test_clock = clock
    return kern


def ctl(k, cmd):
    wr(k, CTL, cmd + "\n", os.O_WRONLY, base="")


def test_functions_formats_and_enabled_functions(k):
    ctl(k, "load ftrace-direct")
    avail = rd(k, "available_filter_functions").splitlines()
    assert "my_direct_func [ftrace_direct]" in avail
    assert not any(n.startswith(("my_tramp", "ftrace_direct_")) for n in avail)  # asm, __exit, init
    assert '"waking up %s-%d\\n"' in rd(k, "printk_formats")
    tramp = next(ln for ln in rd(k, "kallsyms", base="proc/").splitlines()
                 if ln.endswith(" my_tramp\t[ftrace_direct]"))
    assert tramp.split()[1] == "T"
    assert rd(k, "enabled_functions") == (
        "wake_up_process (1) R   D   M \ttramp: ftrace_regs_caller+0x0/0x61 "
        "(call_direct_funcs+0x0/0x20)\n\tdirect-->my_tramp+0x0/0x20 [ftrace_direct]\n")
    wr(k, "current_tracer", "function")
    lines = rd(k, "enabled_functions").splitlines()
    i = lines.index("wake_up_process (2) R   D   M  ->arch_ftrace_ops_list_func+0x0/0x1d0")
    assert lines[i + 1] == "\tdirect-->my_tramp+0x0/0x20 [ftrace_direct]"
    wr(k, "current_tracer", "nop")
    ctl(k, "delete ftrace-direct")
    assert rd(k, "enabled_functions") == ""
    touched = [ln for ln in rd(k, "touched_functions").splitlines() if ln.startswith("wake_up_process ")]
    assert touched == ["wake_up_process (0)         M  ->ftrace_stub+0x0/0x10"]   # M stays


def test_each_call_prints_while_loaded(k):
    ctl(k, "load ftrace-direct")
    ctl(k, "load ftrace-direct-too")
    k.test_clock.advance(100_000_000)
    lines = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    wake = [ln for ln in lines if "my_direct_func: waking up " in ln]
    fault = [ln for ln in lines if "my_direct_func: handle mm fault " in ln]
    assert len(wake) > 20 and len(fault) > 5
    comms = {t.comm + "-%d" % t.pid for t in k.sched.tasks.values() if t.kthread}
    assert all(ln.split("waking up ")[1] in comms for ln in wake)
    assert all(re.search(r"vma=[0-9a-f]{16} address=[0-9a-f]+ flags=1?25[45] regs=[0-9a-f]{16}$", ln)
               for ln in fault)
    stamps = [float(ln.split(": ")[0].split()[-1]) for ln in wake]
    assert stamps[-1] - stamps[0] > 0.05            # spread over the time, not at the load
    ctl(k, "delete ftrace-direct")
    ctl(k, "delete ftrace-direct-too")
    wr(k, "trace", "")
    k.test_clock.advance(100_000_000)
    assert "my_direct_func" not in rd(k, "trace")


def test_every_tracer_around_a_direct_call(k):
    for t in rd(k, "available_tracers").split():
        if t == "nop":
            continue
        wr(k, "current_tracer", t)
        ctl(k, "load ftrace-direct")
        wr(k, "current_tracer", "nop")
        ctl(k, "delete ftrace-direct")
        ctl(k, "load ftrace-direct")
        wr(k, "current_tracer", t)
        ctl(k, "delete ftrace-direct")
        wr(k, "current_tracer", "nop")
    assert rd(k, "enabled_functions") == ""
