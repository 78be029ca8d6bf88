"""The calls a request of a real process runs, as the function tracers see
them: a write to a proc file goes through proc_reg_write() (-EIO)."""

import errno
import os

from fakefs import sim
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace import trace_entries as te
from fakefs.kernel.trace.ftrace_requests import request_path
from kfiles import errno_of, rd, wr

PROC_WRITE = ("proc/kallsyms", "\n", os.O_WRONLY, "")


def boot():
    k = Kernel(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.host_tasks = True                  # the pid files are there
    sim.boot_kernel(k)
    sim.attach(k)
    k.clock.advance(1_000_000)
    return k


def fn_entries(k):
    return [e for cb in k.tracing.global_trace.buffer.cpus for e in cb.iter_events()
            if e[1] == te.TRACE_FN]


def names(k, entries):
    return [k.kallsyms.sprint_symbol_no_offset(e[5]) for e in entries]


def test_a_proc_write_is_traced_where_the_filters_take_it():
    k = boot()
    wr(k, "set_ftrace_filter", "proc_reg_write vfs_write ksys_write")
    wr(k, "current_tracer", "function")
    wr(k, "trace", "")
    assert errno_of(wr, k, *PROC_WRITE) == errno.EIO
    got = [e for e in fn_entries(k) if e[2] == 0]
    assert names(k, got) == ["ksys_write", "vfs_write", "proc_reg_write"]
    assert "proc_reg_write <-vfs_write" in rd(k, "trace")
    # another pid only: nothing of the request
    wr(k, "set_ftrace_pid", "4242")
    wr(k, "trace", "")
    assert errno_of(wr, k, *PROC_WRITE) == errno.EIO
    assert not [e for e in fn_entries(k) if e[2] == 0]


def test_nothing_is_made_without_a_function_tracer():
    k = boot()
    k.timekeeper.run_until_now()
    before = k.sim_time
    assert errno_of(wr, k, *PROC_WRITE) == errno.EIO
    assert k.sim_time == before


def test_the_path_leaves_out_what_ftrace_cannot_see():
    k = boot()
    wr(k, "current_tracer", "function")
    calls = request_path(k, ("entry_SYSCALL_64_after_hwframe", "do_syscall_64", "ksys_write",
                             "vfs_write"), 7, 1000)
    assert [c.name for c in calls] == ["ksys_write", "vfs_write"]     # noinstr entry code
    assert all(c.retval == 7 for c in calls)
    assert calls[0].calltime < calls[1].calltime < calls[1].rettime < calls[0].rettime
    assert k.kallsyms.lookup(calls[1].parent_ip)[0] == "ksys_write"
