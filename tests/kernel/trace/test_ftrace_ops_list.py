"""The registered ftrace_ops and the records they patch (ftrace_ops_list.py):
enabled_functions and touched_functions, as 6.12's t_show() prints them
(FTRACE_ITER_ENABLED / FTRACE_ITER_TOUCHED) on x86-64."""

import gc
import re
import time

import pytest

import ftrace_helpers
from ftrace_helpers import APPEND, boot
from kfiles import node, rd, wr
from fakefs import sim


COLUMNS = " " * 11           # "(n)" then the R, I, D, O and M columns, all blank
TRAMP = re.compile(r"^(\S+) \((\d+)\)( R|  )         \ttramp: 0x([0-9a-f]+) \((\S+)\) ->(\S+)$")
MODULES_VADDR = 0xffffffffc0000000

booted = ftrace_helpers.booted      # the shared kernel, for what leaves no trace


@pytest.fixture
def fresh():
    """A kernel of its own: what was touched stays touched."""
    k, _clock = boot()
    return k


def sym(k, name):
    """%pS of a function of the symbol table."""
    return k.kallsyms.sprint_symbol(k.kallsyms.addr_of(name))


def lines(k, path="enabled_functions"):
    return rd(k, path).splitlines()


def tramp_line(k, line):
    m = TRAMP.match(line)
    assert m, line
    name, count, regs, addr, func, called = m.groups()
    addr = int(addr, 16)
    # an execmem page in the module area, not a symbol of it
    assert MODULES_VADDR <= addr < MODULES_VADDR + (1 << 30) and addr % 4096 == 0
    assert k.kallsyms.lookup(addr) is None
    assert func == called
    return name, int(count), regs.strip(), addr, func


def test_files_at_the_top_level_only(fresh):
    k = fresh
    for name in ("enabled_functions", "touched_functions", "dyn_ftrace_total_info"):
        assert node(k, name).mode & 0o7777 == 0o440
    k.tracing.instance_mkdir("i")
    for name in ("enabled_functions", "touched_functions", "dyn_ftrace_total_info"):
        assert k.tree.root.walk("sys/kernel/tracing/instances/i/" + name) is None
    assert rd(k, "enabled_functions") == "" and rd(k, "touched_functions") == ""


def test_filter_and_function_tracer(fresh):
    k = fresh
    wr(k, "set_ftrace_filter", "schedule\n")
    assert rd(k, "enabled_functions") == ""          # a filter alone attaches nothing
    wr(k, "current_tracer", "function\n")
    (line,) = lines(k)
    name, count, regs, addr, func = tramp_line(k, line)
    assert (name, count, regs, func) == ("schedule", 1, "", sym(k, "function_trace_call"))
    assert line.startswith("schedule (1)" + COLUMNS + "\ttramp: ")
    # the tracer's options pick its callback; global_ops keeps its trampoline
    wr(k, "options/func_stack_trace", "1\n")
    assert tramp_line(k, lines(k)[0])[3:] == (addr, sym(k, "function_stack_trace_call"))
    wr(k, "options/func_stack_trace", "0\n")
    # a notrace function is left out; without a filter every other function is in
    wr(k, "set_ftrace_filter", "\n")
    wr(k, "set_ftrace_notrace", "schedule\n")
    got = lines(k)
    avail = rd(k, "available_filter_functions").splitlines()
    assert len(got) == len(avail) - 1
    assert [ln.split(" (")[0] for ln in got] == [a for a in avail if a != "schedule"]
    wr(k, "current_tracer", "nop\n")
    wr(k, "set_ftrace_notrace", "\n")
    assert rd(k, "enabled_functions") == ""
    wr(k, "set_ftrace_filter", "kernel_clone\n")
    wr(k, "current_tracer", "function\n")
    assert tramp_line(k, lines(k)[0])[3] == addr       # static ops: the same trampoline


def test_probes_have_ops_of_their_own(fresh):
    k = fresh
    wr(k, "set_ftrace_filter", "kernel_clone:traceoff\n")
    wr(k, "set_ftrace_filter", "schedule:stacktrace:3\n", APPEND)
    got = [tramp_line(k, ln) for ln in lines(k)]
    assert sorted(g[0] for g in got) == ["kernel_clone", "schedule"]
    assert {g[4] for g in got} == {sym(k, "function_trace_probe_call")}
    assert got[0][3] != got[1][3]                  # one trampoline per probe type
    # the function tracer on one of them too: two ops, the list function
    wr(k, "set_ftrace_filter", "schedule\n")         # (O_TRUNC: the probes stay)
    wr(k, "current_tracer", "function\n")
    assert "schedule (2)%s ->%s" % (COLUMNS, sym(k, "ftrace_ops_list_func")) in lines(k)
    assert any(ln.startswith("kernel_clone (1)") for ln in lines(k))
    wr(k, "current_tracer", "nop\n")
    wr(k, "set_ftrace_filter", "!schedule:stacktrace:3\n", APPEND)
    wr(k, "set_ftrace_filter", "!kernel_clone:traceoff\n", APPEND)
    assert rd(k, "enabled_functions") == ""


@pytest.mark.parametrize("graph", [True, False])
def test_profiler_follows_the_global_filter(graph):
    """With the function graph tracer the profiler is a subops of graph_ops
    (ftrace_graph_func), which a function_graph tracer shares; without it,
    an ops of its own."""
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                 config_overrides={"CONFIG_FUNCTION_GRAPH_TRACER": graph})
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "function_profile_enabled", "1\n")
    (line,) = lines(k)
    name, count, regs, _addr, func = tramp_line(k, line)
    assert (name, count, regs) == ("schedule", 1, "")
    assert func.startswith("ftrace_graph_func+0x0/0x60" if graph else "function_profile_call+0x0/0x")
    if graph:
        wr(k, "current_tracer", "function_graph\n")
        (line,) = lines(k)                     # one ops for both, on the same filter
        assert tramp_line(k, line)[:3] == ("schedule", 1, "")
        wr(k, "function_profile_enabled", "0\n")
        assert tramp_line(k, lines(k)[0])[4].startswith("ftrace_graph_func")
        wr(k, "current_tracer", "nop\n")
    else:
        wr(k, "function_profile_enabled", "0\n")
    assert rd(k, "enabled_functions") == ""


def test_stack_tracer_ops_on_its_own_filter(fresh):
    k = fresh
    wr(k, "set_ftrace_filter", "vfs_read\n")         # the tracers' filter: not this ops'
    wr(k, "stack_trace_filter", "schedule\n")
    assert rd(k, "enabled_functions") == ""          # not registered yet
    wr(k, "stack_tracer_enabled", "1\n", base="proc/sys/kernel/")
    (line,) = lines(k)
    name, count, regs, _addr, func = tramp_line(k, line)
    assert (name, count, regs) == ("schedule", 1, "")
    assert func == "stack_trace_call+0x0/0x330"      # Debian 6.12.117's size
    wr(k, "stack_trace_filter", "kernel_clone\n", APPEND)
    assert {tramp_line(k, ln)[0] for ln in lines(k)} == {"schedule", "kernel_clone"}
    wr(k, "stack_tracer_enabled", "0\n", base="proc/sys/kernel/")
    assert rd(k, "enabled_functions") == ""
    assert {ln.split()[0] for ln in lines(k, "touched_functions")} == {"schedule", "kernel_clone"}


def test_kprobe_on_function_entry(fresh):
    k = fresh
    wr(k, "kprobe_events", "p:entry vfs_read\n")
    wr(k, "kprobe_events", "p:inside vfs_read+9\n", APPEND)    # not on the fentry site
    wr(k, "kprobe_events", "p:other kernel_clone\n", APPEND)
    assert rd(k, "enabled_functions") == ""          # registered disabled: not armed
    wr(k, "events/kprobes/inside/enable", "1\n")
    assert rd(k, "enabled_functions") == ""
    wr(k, "events/kprobes/entry/enable", "1\n")
    wr(k, "events/kprobes/other/enable", "1\n")
    got = [tramp_line(k, ln) for ln in lines(k)]
    assert sorted(g[:3] for g in got) == [("kernel_clone", 1, "R"), ("vfs_read", 1, "R")]
    assert got[0][3] == got[1][3]                  # one kprobe_ftrace_ops for all
    assert got[0][4].startswith("kprobe_ftrace_handler+0x0/0x")
    assert lines(k)[0].split("\t")[0].endswith(" R" + " " * 9)
    # with the function tracer on vfs_read as well: REGS stays, no trampoline
    wr(k, "set_ftrace_filter", "vfs_read\n")
    wr(k, "current_tracer", "function\n")
    assert "vfs_read (2) R%s ->%s" % (" " * 9, sym(k, "ftrace_ops_list_func")) in lines(k)
    wr(k, "current_tracer", "nop\n")
    wr(k, "events/kprobes/enable", "0\n")
    assert rd(k, "enabled_functions") == ""
    wr(k, "kprobe_events", "\n")


def test_touched_keeps_functions_after_the_ops_go(fresh):
    k = fresh
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "current_tracer", "function\n")
    wr(k, "current_tracer", "nop\n")                # never read while on
    wr(k, "set_ftrace_filter", "do_exit:traceon\n", APPEND)
    wr(k, "set_ftrace_filter", "!do_exit:traceon\n", APPEND)
    wr(k, "kprobe_events", "p:kp vfs_write\n")
    wr(k, "events/kprobes/kp/enable", "1\n")
    wr(k, "events/kprobes/kp/enable", "0\n")
    wr(k, "kprobe_events", "\n")
    assert rd(k, "enabled_functions") == ""
    stub = sym(k, "ftrace_stub")
    assert lines(k, "touched_functions") == [
        "%s (0)%s ->%s" % (name, COLUMNS, stub)
        for name in sorted(("schedule", "do_exit", "vfs_write"),
                           key=lambda n: k.kallsyms.addr_of(n))]
    # a touched function enabled again shows as in enabled_functions
    wr(k, "set_ftrace_filter", "vfs_write\n")
    wr(k, "current_tracer", "function\n")
    touched = lines(k, "touched_functions")
    assert lines(k) == [ln for ln in touched if ln.startswith("vfs_write ")]
    # the others show where ftrace_caller calls now: the one static ops' func
    assert "schedule (0)%s ->%s" % (COLUMNS, sym(k, "function_trace_call")) in touched
    wr(k, "current_tracer", "nop\n")


def test_ftrace_enabled_off_patches_nothing(fresh):
    k = fresh
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "current_tracer", "function\n")
    on = lines(k)
    wr(k, "sys/kernel/ftrace_enabled", "0\n", base="proc/")
    assert rd(k, "enabled_functions") == ""
    # the count and the ops stay; the call site is not re-patched
    assert lines(k, "touched_functions") == [
        "schedule (1)%s ->%s" % (COLUMNS, sym(k, "function_trace_call"))]
    wr(k, "set_ftrace_filter", "kernel_clone\n")
    assert "kernel_clone" not in rd(k, "touched_functions")     # never patched
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "sys/kernel/ftrace_enabled", "1\n", base="proc/")
    assert lines(k) == on
    wr(k, "current_tracer", "nop\n")


def test_instance_ops_are_dynamic(fresh):
    k = fresh
    k.tracing.instance_mkdir("i")
    wr(k, "instances/i/set_ftrace_filter", "schedule\n")
    wr(k, "instances/i/current_tracer", "function\n")
    name, _n, _r, addr, func = tramp_line(k, lines(k)[0])
    assert (name, func) == ("schedule", sym(k, "function_trace_call"))
    wr(k, "instances/i/current_tracer", "nop\n")
    wr(k, "set_ftrace_filter", "kernel_clone\n")
    wr(k, "current_tracer", "function\n")
    # the instance's trampoline was freed: the top level's takes its place
    assert tramp_line(k, lines(k)[0])[3] == addr
    wr(k, "instances/i/current_tracer", "function\n")
    # two ops registered: ftrace_caller calls the list function
    touched = lines(k, "touched_functions")
    assert len(touched) == 2
    assert all(tramp_line(k, ln)[1] == 1 for ln in touched)
    wr(k, "current_tracer", "nop\n")
    # one DYNAMIC ops left: ftrace_caller still goes through the list
    assert "kernel_clone (0)%s ->%s" % (COLUMNS, sym(k, "ftrace_ops_list_func")) in \
        lines(k, "touched_functions")


def test_pid_filter_calls_ftrace_pid_func():
    k, _clock = boot(host_tasks=True)
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "current_tracer", "function\n")
    wr(k, "set_ftrace_pid", "1\n")
    assert tramp_line(k, lines(k)[0])[4] == sym(k, "ftrace_pid_func")
    wr(k, "set_ftrace_pid", "\n")
    assert tramp_line(k, lines(k)[0])[4] == sym(k, "function_trace_call")


def test_all_functions_listing_is_quick(booted):
    k, _clock = booted
    wr(k, "current_tracer", "function\n")
    # (CPU time: a loaded host does not make it fail; without the cycle
    # collector, whose full pass over what earlier tests of the worker left
    # took it past 2 s once in CI: the listing takes 0.25 s)
    gc.collect()
    gc.disable()
    try:
        t = time.process_time()
        n = len(lines(k))
        spent = time.process_time() - t
    finally:
        gc.enable()
    assert spent < 2.0
    assert n == len(rd(k, "available_filter_functions").splitlines())
    ftrace_helpers.undo_ftrace(k)
