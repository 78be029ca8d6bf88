"""Dynamic ftrace per trace array (ftrace.py): filter and notrace function
sets, cached :mod: commands, pid lists, and what the function tracer records
with them."""

import errno
import re

import ftrace_helpers
from ftrace_helpers import APPEND, MS, boot, entries, functions
from kfiles import errno_of, node, rd, wr


booted, k = ftrace_helpers.booted, ftrace_helpers.k      # the shared kernel


err = errno_of


# --------------------------------------------------------------- the filters
def test_mod_commands(k):
    wr(k, "set_ftrace_filter", "non_exist_func:mod:non_exist_module\n")
    wr(k, "set_ftrace_filter", "*:mod:other_mod\n", APPEND)
    # a cached module command is a filter: nothing is traced, no "all" line
    assert rd(k, "set_ftrace_filter") == ("*:mod:other_mod\n"
                                          "non_exist_func:mod:non_exist_module\n")
    wr(k, "set_ftrace_filter", "!*:mod:other_mod\n", APPEND)
    assert rd(k, "set_ftrace_filter") == "non_exist_func:mod:non_exist_module\n"
    assert err(wr, k, "set_ftrace_filter", "!x:mod:never_cached\n", APPEND) == errno.EINVAL
    wr(k, "set_ftrace_filter", "\n")
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"
    wr(k, "set_ftrace_notrace", "x:mod:nomod\n")
    assert rd(k, "set_ftrace_notrace") == "#### no functions disabled ####\nx:mod:nomod\n"


# --------------------------------------------------------------- tracing with filters
def test_filter_sees_every_call_of_the_function(k, booted):
    clock = booted[1]
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "current_tracer", "function\n")
    clock.advance(500 * MS)
    lines = entries(k)
    funcs = functions(lines)
    assert set(funcs) == {"schedule"}
    # a busy machine's schedule() rate, on both CPUs, from many tasks
    assert 300 < funcs["schedule"] < 2000
    assert {"[000]", "[001]"} <= {ln.split()[1] for ln in lines}
    assert len({ln.split()[0] for ln in lines}) > 5
    # notrace wins over the filter
    wr(k, "set_ftrace_filter", "*sched*\n")
    wr(k, "set_ftrace_notrace", "schedule\n")
    wr(k, "trace", "")
    clock.advance(200 * MS)
    funcs = functions(entries(k))
    assert funcs and "schedule" not in funcs and all("sched" in f for f in funcs)
    # without a filter: the sampled stream of every function again
    wr(k, "set_ftrace_filter", "\n")
    wr(k, "set_ftrace_notrace", "\n")
    wr(k, "trace", "")
    clock.advance(100 * MS)
    assert len(functions(entries(k))) > 50


def test_instances_are_independent(k, booted):
    clock = booted[1]
    tracing = k.tracing
    tracing.instance_mkdir("ft")
    try:
        assert node(k, "instances/ft/set_ftrace_filter") and node(k, "instances/ft/set_ftrace_notrace")
        assert k.tree.root.walk("sys/kernel/tracing/instances/ft/available_filter_functions") is None
        wr(k, "instances/ft/set_ftrace_filter", "kernel_clone\n")
        wr(k, "instances/ft/set_ftrace_filter", "schedule:enable_event:sched:sched_switch\n",
           APPEND)
        assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"
        assert rd(k, "events/sched/sched_switch/enable") == "0\n"
        wr(k, "set_ftrace_filter", "schedule\n")
        wr(k, "current_tracer", "function\n")
        wr(k, "instances/ft/current_tracer", "function\n")
        clock.advance(1000 * MS)
        assert set(functions(entries(k))) == {"schedule"}
        inst = functions(entries(k, "instances/ft/trace"))
        # its own filter, and the event its probe turned on
        assert set(inst) == {"kernel_clone", "sched_switch:"}
        assert rd(k, "instances/ft/events/sched/sched_switch/enable") == "1*\n"
        tr = tracing.instances["ft"]
        ev = next(e for e in tracing.events if e.name == "sched_switch")
    finally:
        tracing.instance_rmdir("ft")
    # the probes went with the instance
    assert not tr.soft_mode and tr.ftrace_ops is None and ev not in tr.soft_disabled


# --------------------------------------------------------------- pids
def test_pid_filters():
    k, clock = boot(host_tasks=True)
    pids = [t.pid for t in k.workload.tasks() if t.comm == "cc1"]
    wr(k, "set_ftrace_pid", "%d\n" % pids[0])
    wr(k, "set_ftrace_pid", "%d 0x%x\n" % (pids[1], pids[1]), APPEND)
    assert rd(k, "set_ftrace_pid") == "%d\n%d\n" % (pids[0], pids[1])
    assert err(wr, k, "set_ftrace_pid", "12 abc\n", APPEND) == errno.EINVAL
    assert rd(k, "set_ftrace_pid") == "%d\n%d\n" % (pids[0], pids[1])     # all or nothing
    wr(k, "current_tracer", "function\n")
    clock.advance(200 * MS)
    seen = {int(re.match(r"\s*\S+-(\d+)", ln).group(1)) for ln in entries(k)}
    assert seen and seen <= set(pids)
    # notrace pid beats the pid list
    wr(k, "set_ftrace_notrace_pid", "%d\n" % pids[0])
    wr(k, "trace", "")
    clock.advance(500 * MS)
    seen = {int(re.match(r"\s*\S+-(\d+)", ln).group(1)) for ln in entries(k)}
    assert seen <= {pids[1]}
    wr(k, "set_ftrace_pid", "\n")
    assert rd(k, "set_ftrace_pid") == "no pid\n"
    wr(k, "trace", "")
    clock.advance(400 * MS)
    seen = {int(re.match(r"\s*\S+-(\d+)", ln).group(1)) for ln in entries(k)}
    assert pids[0] not in seen and len(seen) > 3
    wr(k, "set_ftrace_notrace_pid", "\n")
    assert k.tracing.global_trace.ftrace_ops is None


def test_function_trace_option_is_the_latency_tracers_alone(k, booted):
    """options/function-trace only switches the irqsoff/wakeup tracers'
    function calls: the function tracer goes on with it off."""
    clock = booted[1]
    wr(k, "current_tracer", "function")
    wr(k, "options/function-trace", "0")
    wr(k, "trace", "")
    clock.advance(5 * MS)
    assert entries(k)
    wr(k, "options/function-trace", "1")
    wr(k, "current_tracer", "nop")


def test_a_filter_on_a_caller_and_its_callee_sees_the_caller_first():
    """Every ``vfs_read <-ksys_read`` comes after a ``ksys_read`` of the same
    task on that CPU (the task entered it on its way), never on its own."""
    k, clock = boot()
    wr(k, "set_ftrace_filter", "vfs_read ksys_read\n")
    wr(k, "current_tracer", "function\n")
    for _ in range(20):
        clock.advance(20 * MS)
        k.timekeeper.run_until_now()
    wr(k, "tracing_on", "0\n")
    inside = {}          # pid -> in a ksys_read that has not called vfs_read yet
    callees = 0
    for ln in entries(k):
        m = re.match(r"\s*(\S+)-(\d+)\s+\[(\d+)\].*?: (\S+) <-(\S+)", ln)
        assert m, ln
        pid, fn, parent = m.group(2), m.group(4), m.group(5)
        if fn == "ksys_read":
            inside[pid] = True
        elif parent == "ksys_read":
            callees += 1
            # a task may have been in ksys_read already when tracing began
            assert inside.get(pid, pid not in inside), ln
            inside[pid] = False
    assert callees > 5


def test_one_change_of_the_filter_is_one_generation(k):
    """A write of one word to set_ftrace_filter (a batch) is one change:
    the ops' generation (what the ops list and the profiler compare) moves
    on by one, and the word is in the filter."""
    from fakefs.kernel.trace.ftrace import ops_of
    ops = ops_of(k.tracing.global_trace)
    before = ops.generation
    wr(k, "set_ftrace_filter", "schedule\n", APPEND)
    assert ops.generation == before + 1
    assert rd(k, "set_ftrace_filter") == "schedule\n"
