"""/proc/sys/kernel/ftrace_enabled (kernel/trace/ftrace.c ftrace_enable_sysctl)."""

import errno
import os

from ftrace_helpers import MS, boot, entries, functions
from kfiles import errno_of, rd, wr

from fakefs import sim
from fakefs.kernel.trace.ftrace_sysctl import ftrace_calls_enabled

P = "proc/sys/kernel/"
TRUNC = os.O_WRONLY | os.O_TRUNC


def test_ftrace_enabled_reads_back_what_proc_dointvec_stored():
    k, _clock = boot()
    assert rd(k, "ftrace_enabled", P) == "1\n"
    assert ftrace_calls_enabled(k)
    wr(k, "ftrace_enabled", "0\n", base=P)
    assert rd(k, "ftrace_enabled", P) == "0\n"
    assert not ftrace_calls_enabled(k)
    wr(k, "ftrace_enabled", "2", base=P)               # any int, read back as written
    assert rd(k, "ftrace_enabled", P) == "2\n"
    assert ftrace_calls_enabled(k)
    for bad in ("abc", "", "1x", "99999999999"):
        assert errno_of(wr, k, "ftrace_enabled", bad, TRUNC, P) == errno.EINVAL
    assert rd(k, "ftrace_enabled", P) == "2\n"
    wr(k, "ftrace_enabled", "-1", base=P)
    assert rd(k, "ftrace_enabled", P) == "-1\n" and ftrace_calls_enabled(k)


def test_boot_parameter_sets_it():
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False,
                 cmdline="sysctl.kernel.ftrace_enabled=0")
    assert rd(k, "ftrace_enabled", P) == "0\n" and not ftrace_calls_enabled(k)


def test_no_function_tracer_no_file():
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False,
                 config_overrides={"CONFIG_FUNCTION_TRACER": False})
    assert "ftrace_enabled" not in k.tree.root.children["proc"].children["sys"] \
        .children["kernel"].children


def test_function_tracing_stops_while_0():
    k, clock = boot()
    wr(k, "current_tracer", "function\n")
    clock.advance(100 * MS)
    assert len(functions(entries(k))) > 20
    wr(k, "ftrace_enabled", "0\n", base=P)
    wr(k, "trace", "")
    clock.advance(100 * MS)
    assert rd(k, "current_tracer") == "function\n"
    assert not functions(entries(k))
    wr(k, "ftrace_enabled", "1\n", base=P)
    clock.advance(100 * MS)
    assert len(functions(entries(k))) > 20


def test_the_profiler_counts_nothing_while_0():
    from fakefs.kernel.trace.ftrace_sysctl import FtraceSysctl

    class K:
        sim_time = 0
        booted = False
    k = K()
    st = FtraceSysctl(k)
    k.sim_time = 100
    st.store("0")
    k.sim_time = 300
    st.store("7")
    k.sim_time = 350
    st.store("1")                      # no change of !!ftrace_enabled
    assert st.changes == [(100, False), (300, True)]
    assert st.enabled_ns(0, 1000) == 800
    assert st.enabled_ns(150, 250) == 0
    assert st.enabled_ns(200, 400) == 100
    assert st.enabled_ns(0, 50) == 50
